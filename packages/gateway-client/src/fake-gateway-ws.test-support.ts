import { createHash, createPublicKey, randomUUID, verify } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { ED25519_SPKI_PREFIX } from './device-identity.js';
import type { GatewayConnection } from './gateway-client.js';

/** Client ids and modes OpenClaw accepts (`dist/client-info-*.mjs`, openclaw@2026.9.6). */
const CLIENT_IDS = new Set([
  'webchat-ui',
  'openclaw-control-ui',
  'openclaw-browser-copilot',
  'openclaw-tui',
  'webchat',
  'cli',
  'gateway-client',
  'openclaw-macos',
  'openclaw-linux',
  'openclaw-ios',
  'openclaw-watchos',
  'openclaw-android',
  'node-host',
  'openclaw-worker',
  'test',
  'fingerprint',
  'openclaw-probe',
]);
const CLIENT_MODES = new Set(['webchat', 'cli', 'ui', 'backend', 'node', 'worker', 'probe', 'test']);
const METHODS = [
  'health',
  'sessions.list',
  'sessions.create',
  'chat.send',
  'chat.history',
  'cron.list',
  'cron.add',
  'cron.remove',
  'cron.get',
  'cron.update',
  'device.pair.list',
  'device.pair.approve',
  'device.pair.reject',
  'device.pair.remove',
  'models.list',
  'channels.status',
  'system-presence',
];
/** The keys `models.list` accepts (OpenClaw `ModelsListParamsSchema`, a closed object). */
const MODELS_LIST_KEYS = [
  'agentId',
  'sessionKey',
  'authProfileId',
  'provider',
  'includeDetails',
  'includeProviderCapabilities',
  'includeDefaultModels',
  'preparedOnly',
  'refresh',
  'view',
];

/** A pending device pairing request as `device.pair.list` returns it (openclaw@2026.9.6 `buildPendingDevicePairingRequest`). */
export interface FakePendingPairingRequest {
  requestId: string;
  deviceId: string;
  publicKey: string;
  displayName?: string;
  platform?: string;
  deviceFamily?: string;
  clientId?: string;
  clientMode?: string;
  role?: string;
  roles?: string[];
  scopes?: string[];
  remoteIp?: string;
  silent?: boolean;
  isRepair?: boolean;
  /** When the request was first made (ms). */
  ts: number;
}

/** A paired device (openclaw@2026.9.6 `buildApprovedPairedDevice`); `tokens` holds the bearer tokens and is redacted when listed. */
export interface FakePairedDevice {
  deviceId: string;
  publicKey: string;
  displayName?: string;
  platform?: string;
  clientId?: string;
  clientMode?: string;
  role?: string;
  roles?: string[];
  scopes?: string[];
  remoteIp?: string;
  tokens: Record<string, { token: string; role: string; scopes: string[]; createdAtMs: number }>;
  approvedVia: string;
  createdAtMs: number;
  approvedAtMs: number;
  lastSeenAtMs?: number;
}

export interface FakeGatewayOptions {
  /** Listen on this port (a restarted gateway keeps its address); a free one by default. */
  port?: number;
  /** The gateway token (`OPENCLAW_GATEWAY_TOKEN`, or what `configFile` resolves). */
  token: string;
  /**
   * The gateway's config file, for `config.get`, `config.apply` (base-hash checked, then written) and `secrets.reload`.
   * Both apply calls resolve the gateway token again (`resolveToken`); when it changed, every open connection is closed
   * right after the answer ("gateway auth changed"), as OpenClaw closes the connections made with the old token.
   */
  configFile?: { read(): string; write(raw: string): void; resolveToken(): string };
  /** Answer this many `connect` requests with retryable `UNAVAILABLE` (`startup-sidecars`) first. */
  unavailableConnects?: number;
  /** `retryAfterMs` of those answers (default 50). */
  retryAfterMs?: number;
  /**
   * When set, pairing is enforced as on a non-loopback connection: a signed device must be paired (one of these ids, or
   * approved with `device.pair.approve`), otherwise its connect creates a pending request and fails with `NOT_PAIRED`.
   */
  pairedDeviceIds?: string[];
  /** The assistant's reply to a `chat.send` message (default `reply to: <message>`). */
  reply?: (message: string) => string;
  /** Chat messages for which the run ends in `state: 'error'`. */
  failChatMessage?: string;
  /**
   * The model the agent runs (`agents.defaults.model.primary` split at its first `/`), as OpenClaw reports it on the
   * transcript's assistant message and the session rows; default `fake/fake-1`.
   */
  model?: { provider: string; model: string };
  /**
   * Every model call fails on the provider key, as openclaw@2026.9.6 reports it: `missing` (no key for `provider`) or
   * `refused` (the provider answered 401). REST: 401 `authentication_error`; WebSocket: the run's `error` event.
   */
  providerKey?: { failure: 'missing' | 'refused'; provider: string };
  /** Chat messages whose run starts but never reaches a final state. */
  stallChatMessage?: string;
  /** Delay before answering a method (ms); `Infinity` = never answer. */
  methodDelayMs?: Record<string, number>;
  /** `gateway.http.endpoints.chatCompletions.enabled` (default true); off → `POST /v1/chat/completions` is 404. */
  chatCompletions?: boolean;
  /** `models.list` entries (OpenClaw `ModelChoiceSchema`); default the `fake/fake-1` model of the research config. */
  models?: { id: string; name: string; provider: string; [k: string]: unknown }[];
  /** Channel accounts `channels.status` reports, by channel id (OpenClaw `ChannelAccountSnapshotSchema`); default none. */
  channels?: Record<string, { accountId: string; configured?: boolean; [k: string]: unknown }[]>;
  /**
   * Also listen on a second port (`remoteUrl`) whose connections count as coming from a non-loopback address (a LAN
   * client, or the backend through Docker's published port), as OpenClaw treats them: a token-only connection is
   * admitted with no scopes (every method then fails `FORBIDDEN` `missing scope: …`), and a signed device must be
   * paired whatever `pairedDeviceIds` says. Connections on `url` keep the loopback behaviour.
   */
  remoteListener?: boolean;
  /**
   * The gateway's agents (OpenClaw `agents.entries` ids; default: `main` and the entries of `configFile`'s
   * `agents.entries`, read at each call, else `['main']`). With more than one the roster is explicit, as OpenClaw
   * requires: a REST turn must name its agent (`openclaw/<id>`), `openclaw`/`openclaw/default` are refused; session keys
   * and cron jobs name theirs (a short key is `main`'s), and an unknown id is refused. A roster read from `configFile`
   * changes with `config.apply` (checked as OpenClaw checks it) and `agents.delete`.
   */
  agents?: string[];
  /**
   * The first this many `config.apply` calls write and apply the config (with `configFile`), then fail (`UNAVAILABLE`),
   * as OpenClaw's does when it wrote the file and its reload was then held and superseded.
   */
  failConfigApplyAfterWrite?: number;
}

/**
 * The operator scope a method needs (OpenClaw's method scope table, reduced to the methods the fake serves): reads need
 * `operator.read`, changes `operator.write`, pairing `operator.pairing`; `operator.admin` covers all of them.
 */
function requiredScope(method: string): string {
  if (method.startsWith('device.pair.')) return 'operator.pairing';
  if (['cron.add', 'cron.update', 'cron.remove', 'chat.send', 'sessions.create'].includes(method)) return 'operator.write';
  if (['config.apply', 'secrets.reload', 'agents.delete'].includes(method)) return 'operator.admin';
  return 'operator.read';
}

/** OpenClaw's user copy of a provider's 401 (`AUTH_INVALID_TOKEN_USER_TEXT`, openclaw@2026.9.6 `user-copy-*.mjs`). */
const AUTH_INVALID_TOKEN_USER_TEXT =
  'Authentication failed (provider returned HTTP 401). Your provider token may have expired — try the request again in a moment. If the failure persists, re-authenticate this provider.';
/** Its route check's words when no credential source exists for the provider (`No route-compatible authentication source …`). */
const noAuthSource = (provider: string) => `No route-compatible authentication source is configured for ${provider}.`;

/** The usage OpenClaw keeps on an assistant transcript message (`chat.history`, the `final` chat event). */
const turnUsage = (prompt: string, reply: string) => {
  // Deterministic stand-ins for the provider's counts: the system prompt's share plus about four characters a token.
  const input = 9 + Math.ceil(prompt.length / 4);
  const output = Math.ceil(reply.length / 4);
  return { input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output };
};

/** One row of the fake's session index (`sessions.list`), as OpenClaw keeps it. */
interface FakeSession {
  key: string;
  sessionId: string;
  createdAt: number;
  updatedAt: number;
  lastActivityAt: number;
  running: boolean;
  inputTokens: number;
  outputTokens: number;
  /** `sessions.create`'s label; unique on the gateway, as OpenClaw keeps it. */
  label?: string;
}

/** The keys `sessions.create` accepts (OpenClaw `SessionsCreateParamsSchema`, a closed object; openclaw@2026.9.6). */
const SESSIONS_CREATE_KEYS = new Set([
  'key',
  'idempotencyKey',
  'agentId',
  'label',
  'displayName',
  'titleSource',
  'category',
  'model',
  'agentRuntime',
  'contextWindow',
  'thinkingLevel',
  'fastMode',
  'permissionMode',
  'toolOverrides',
  'incognito',
  'visibility',
  'catalogId',
  'parentSessionKey',
  'spawnDepth',
  'fork',
  'forkFrom',
  'emitCommandHooks',
  'succeedsParent',
  'timeoutMs',
  'task',
  'message',
  'mentions',
  'attachments',
  'projectId',
  'projectGitUrl',
  'repository',
  'worktree',
  'worktreeSource',
  'worktreeBaseRef',
  'worktreeName',
  'execNode',
  'cwd',
]);

interface Received {
  method: string;
  params: any;
}

interface CronJob {
  id: string;
  [k: string]: unknown;
}

const CRON_ADD_KEYS = new Set([
  'name',
  'description',
  'schedule',
  'sessionTarget',
  'wakeMode',
  'payload',
  'delivery',
  'agentId',
  'sessionKey',
  'enabled',
  'deleteAfterRun',
  'declarationKey',
  'failureAlert',
]);

/**
 * A local stand-in for an OpenClaw gateway speaking protocol v4 over WebSocket on 127.0.0.1: `connect.challenge` on open,
 * the first frame must be `connect`, token check, v3 (or legacy v2) Ed25519 device-signature verification, `hello-ok`,
 * retryable `UNAVAILABLE` while "sidecars start", in-memory `cron.*`, `chat.send` with `chat` events
 * (status → delta → final), `chat.history`, `sessions.list`, `sessions.create`, device pairing (`NOT_PAIRED` + a pending request for an
 * unpaired device when `pairedDeviceIds` is set; `device.pair.list|approve|reject|remove`), `models.list`, `channels.status`
 * (from `options.models` / `options.channels`), and `unknown method` errors.
 * The same port serves OpenClaw's HTTP side: `GET /healthz`, `GET /readyz` and `POST /v1/chat/completions` (Bearer
 * token, OpenAI shapes, `user` → a stable session, usage counts, SSE chunks with `stream: true`).
 */
/**
 * Adds a recurring agent-turn job (every `everyMs`) through `conn`, as the Schedule tab would, and answers when it is
 * next due (epoch ms), as the gateway reports it.
 */
export async function addRecurringJob(conn: GatewayConnection, everyMs: number): Promise<number> {
  const added = await conn.request<{ nextRunAtMs?: number; state?: { nextRunAtMs?: number } }>('cron.add', {
    name: 'report',
    schedule: { kind: 'every', everyMs },
    wakeMode: 'now',
    sessionTarget: 'isolated',
    payload: { kind: 'agentTurn', message: 'write the report' },
  });
  return added.nextRunAtMs ?? added.state?.nextRunAtMs ?? 0;
}

/** A config's roster as OpenClaw reads it: `main` and the ids of `agents.entries`. */
function rosterOfConfig(config: any): string[] {
  const entries = config?.agents?.entries;
  const ids = entries && typeof entries === 'object' ? Object.keys(entries) : [];
  return ['main', ...ids.filter((agentId) => agentId !== 'main')];
}

/** Why OpenClaw refuses a config write that changes the roster: several agents need explicit ownership; none is dropped. */
function rosterWriteProblem(before: any, after: any): string | undefined {
  const next = rosterOfConfig(after);
  if (next.length > 1 && after?.agents?.ownership !== 'explicit') return 'multi-agent rosters require agents.ownership=explicit';
  const listed = new Set(Object.keys(after?.agents?.entries ?? {}));
  const dropped = Object.keys(before?.agents?.entries ?? {}).filter((agentId) => !listed.has(agentId));
  if (dropped.length > 0) return `Config write would drop agent roster entries without an explicit deletion: ${dropped.join(', ')}`;
  return undefined;
}

const hashOf = (raw: string) => createHash('sha256').update(raw).digest('hex');

export async function startFakeGatewayWs(options: FakeGatewayOptions) {
  /**
   * The hash of the config the gateway runs, as OpenClaw's `appliedConfigHash`: its file as it started (read then when
   * it can be; a file filled later, as a pod's init container fills it, at the first config call), then each
   * `config.apply`'s. OpenClaw's file watcher is not modelled: a file written since is read only by a `config.apply`.
   */
  let loadedConfig: string | undefined;
  let appliesToFail = options.failConfigApplyAfterWrite ?? 0;
  try {
    if (options.configFile) loadedConfig = hashOf(options.configFile.read());
  } catch {
    // not there yet
  }
  /** The roster now: the given one, else `main` and the config file's `agents.entries` (the last read, if it cannot be read now). */
  let lastRoster = ['main'];
  const rosterNow = (): string[] => {
    if (options.agents) return options.agents;
    try {
      if (options.configFile) lastRoster = rosterOfConfig(JSON.parse(options.configFile.read()));
    } catch {
      // a config file being replaced, or gone with its pod: the roster it had
    }
    return lastRoster;
  };
  // One port for HTTP and WebSocket, as OpenClaw serves both on 18789.
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', () => handleHttp(req, res, raw));
  });
  const wss = new WebSocketServer({ server, maxPayload: 64 * 1024 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  // The "remote" door: same gateway, but OpenClaw would see a non-loopback peer on these connections.
  const remoteServer = options.remoteListener
    ? createServer((req, res) => {
        let raw = '';
        req.on('data', (chunk) => {
          raw += chunk;
        });
        req.on('end', () => handleHttp(req, res, raw));
      })
    : null;
  const remoteRequests = new WeakSet<IncomingMessage>();
  if (remoteServer) {
    const remoteWss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
    remoteServer.on('upgrade', (req, socket, head) => {
      remoteRequests.add(req);
      remoteWss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    });
    await new Promise<void>((resolve, reject) => {
      remoteServer.once('error', reject);
      remoteServer.listen(0, '127.0.0.1', resolve);
    });
  }
  const remotePort = remoteServer ? (remoteServer.address() as AddressInfo).port : null;
  const startedAt = Date.now();
  let gatewayToken = options.token;
  /** The token it takes: the given one, else (its token a SecretRef of `configFile`) resolved at first use, as at a start. */
  const currentToken = () => {
    if (gatewayToken === '' && options.configFile) {
      try {
        gatewayToken = options.configFile.resolveToken();
      } catch {
        // its secret file is not there yet: nothing is accepted
      }
    }
    return gatewayToken;
  };
  const agentModel = options.model ?? { provider: 'fake', model: 'fake-1' };
  let unavailableLeft = options.unavailableConnects ?? 0;
  const jobs = new Map<string, CronJob>();
  const history = new Map<string, { role: string; content: unknown; [k: string]: unknown }[]>();
  const sessions = new Map<string, FakeSession>();
  /** Every HTTP request (`/healthz`, `/readyz`, `/v1/chat/completions`…), with the parsed JSON body. */
  const httpReceived: { method: string; path: string; authorization: string | undefined; body: any }[] = [];

  /** The session a turn runs in, created on first use; `updatedAt`/`lastActivityAt` move with every turn. */
  function touchSession(key: string, patch: Partial<FakeSession> = {}): FakeSession {
    const now = Date.now();
    const session = sessions.get(key) ?? {
      key,
      sessionId: randomUUID(),
      createdAt: now,
      updatedAt: now,
      lastActivityAt: now,
      running: false,
      inputTokens: 0,
      outputTokens: 0,
    };
    Object.assign(session, { updatedAt: now, lastActivityAt: now }, patch);
    sessions.set(key, session);
    return session;
  }

  /** OpenClaw's HTTP surface on the gateway port: probes and the OpenAI-compatible chat endpoint (Bearer token). */
  function handleHttp(req: IncomingMessage, res: ServerResponse, raw: string) {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    httpReceived.push({ method: req.method ?? 'GET', path, authorization: req.headers.authorization, body });
    const json = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(payload));
    };
    if (req.method === 'GET' && path === '/healthz') return json(200, { ok: true, status: 'live' });
    if (req.method === 'GET' && path === '/readyz') return json(200, { ready: true, failing: [], uptimeMs: Date.now() - startedAt });
    if (req.method === 'GET' && path === '/v1/models') {
      if (req.headers.authorization !== `Bearer ${currentToken()}`)
        return json(401, { error: { message: 'Unauthorized', type: 'unauthorized' } });
      return json(200, { object: 'list', data: [{ id: 'openclaw/main', object: 'model', owned_by: 'openclaw' }] });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions' || options.chatCompletions === false) {
      return json(404, { error: { message: 'Not Found', type: 'not_found' } });
    }
    if (req.headers.authorization !== `Bearer ${currentToken()}`) {
      return json(401, { error: { message: 'Unauthorized', type: 'unauthorized' } });
    }
    const model = body?.model ?? 'openclaw';
    if (typeof model !== 'string' || !/^openclaw(\/[\w-]+)?$/.test(model)) {
      return json(400, { error: { message: `Unknown agent target: ${String(model)}`, type: 'invalid_request_error' } });
    }
    const named = model.slice('openclaw/'.length);
    const roster = rosterNow();
    const turnAgent = named && named !== 'default' ? named : roster.length > 1 ? null : roster[0];
    if (!turnAgent) {
      const message = 'Multiple agents are configured, but this operation has no explicit owner';
      return json(400, { error: { message, type: 'invalid_request_error' } });
    }
    if (!roster.includes(turnAgent)) {
      return json(400, { error: { message: `Unknown agent target: ${model}`, type: 'invalid_request_error' } });
    }
    const messages: { role?: string; content?: unknown }[] = Array.isArray(body?.messages) ? body.messages : [];
    const prompt = messages.filter((m) => m.role === 'user').at(-1)?.content;
    if (typeof prompt !== 'string' || !prompt) {
      return json(400, { error: { message: 'Missing user message in `messages`.', type: 'invalid_request_error' } });
    }
    // OpenAI `user` → a stable session `agent:main:openai-user:<user>`; without it every request is its own session.
    const key =
      typeof body.user === 'string' && body.user
        ? `agent:${turnAgent}:openai-user:${body.user}`
        : `agent:${turnAgent}:openai:${randomUUID()}`;
    const log = history.get(key) ?? [];
    history.set(key, log);
    log.push({ role: 'user', content: prompt });
    if (options.stallChatMessage === prompt) {
      touchSession(key, { running: true });
      return; // the run never finishes: the caller's timeout decides
    }
    if (options.failChatMessage === prompt) {
      touchSession(key);
      return json(500, { error: { message: 'model provider failed', type: 'api_error' } });
    }
    if (options.providerKey) {
      // `resolveOpenAiCompatError`: failover reason `auth` → 401 `authentication_error` with the raw provider error
      // (a refusal) or the route check's message (no key at all).
      touchSession(key);
      const { failure, provider } = options.providerKey;
      const message = failure === 'missing' ? noAuthSource(provider) : '401 Incorrect API key provided';
      return json(401, { error: { message, type: 'authentication_error' } });
    }
    const text = (options.reply ?? ((m: string) => `reply to: ${m}`))(prompt);
    const usage = turnUsage(prompt, text);
    log.push({ role: 'assistant', content: [{ type: 'text', text }], provider: agentModel.provider, model: agentModel.model, usage });
    const session = touchSession(key);
    session.inputTokens += usage.input;
    session.outputTokens += usage.output;
    if (body.stream === true) {
      // Standard SSE `chat.completion.chunk` frames: role delta, content deltas, finish_reason, `[DONE]` (no usage frame).
      const id = `chatcmpl_${randomUUID().replaceAll('-', '')}`;
      const created = Math.floor(Date.now() / 1000);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
        res.write(
          `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
        );
      chunk({ role: 'assistant' });
      for (const piece of text.match(/[\s\S]{1,8}/g) ?? []) chunk({ content: piece });
      chunk({}, 'stop');
      res.end('data: [DONE]\n\n');
      return;
    }
    json(200, {
      id: `chatcmpl_${randomUUID().replaceAll('-', '')}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.totalTokens },
    });
  }
  const received: Received[] = [];
  const connectAttempts: { ok: boolean; code?: string }[] = [];
  const sockets = new Set<WebSocket>();
  // Device pairing state (`device.pair.*`): pending requests by request id, paired devices by device id, and which
  // device each open socket authenticated as (removing a device drops its connections, as OpenClaw does).
  const pairing = { pending: new Map<string, FakePendingPairingRequest>(), paired: new Map<string, FakePairedDevice>() };
  const socketDevice = new Map<WebSocket, string>();
  for (const deviceId of options.pairedDeviceIds ?? []) {
    const now = Date.now();
    pairing.paired.set(deviceId, {
      deviceId,
      publicKey: '',
      role: 'operator',
      roles: ['operator'],
      scopes: [],
      tokens: { operator: { token: `devtok-${deviceId.slice(0, 8)}`, role: 'operator', scopes: [], createdAtMs: now } },
      approvedVia: 'owner',
      createdAtMs: now,
      approvedAtMs: now,
    });
  }

  wss.on('connection', (ws, req) => {
    sockets.add(ws);
    ws.on('close', () => {
      sockets.delete(ws);
      socketDevice.delete(ws);
    });
    const remote = remoteRequests.has(req);
    // A remote peer is shown as Docker's bridge gateway would be; loopback peers as they are.
    const remoteIp = remote ? '172.17.0.1' : (req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '');
    const nonce = randomUUID();
    const ts = Date.now();
    let seq = 0;
    let hello = false;
    /** The scopes granted by `hello-ok` (a remote token-only connection gets none). */
    let granted: string[] = [];
    const send = (frame: unknown) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
    };
    const event = (name: string, payload: unknown) => send({ type: 'event', event: name, payload, seq: ++seq });
    const ok = (id: string, payload: unknown) => send({ type: 'res', id, ok: true, payload });
    const err = (id: string, error: Record<string, unknown>) => send({ type: 'res', id, ok: false, error });
    const rejectConnect = (id: string, error: Record<string, unknown>) => {
      connectAttempts.push({ ok: false, code: String(error.code) });
      err(id, error);
      setTimeout(() => ws.close(1008, String(error.message).slice(0, 100)), 10);
    };

    event('connect.challenge', { nonce, ts, capabilities: ['model-catalog-snapshot'] });

    ws.on('message', (data) => {
      let frame: any;
      try {
        frame = JSON.parse(data.toString());
      } catch {
        ws.close(1003, 'invalid frame');
        return;
      }
      if (frame?.type !== 'req' || typeof frame.id !== 'string' || typeof frame.method !== 'string') {
        ws.close(1008, 'invalid request frame');
        return;
      }
      received.push({ method: frame.method, params: frame.params });
      if (!hello) {
        if (frame.method !== 'connect') {
          rejectConnect(frame.id, { code: 'INVALID_REQUEST', message: 'invalid handshake: first request must be connect' });
          return;
        }
        handleConnect(frame.id, frame.params ?? {});
        return;
      }
      const needed = requiredScope(frame.method);
      if (!granted.includes(needed) && !granted.includes('operator.admin')) {
        err(frame.id, {
          code: 'FORBIDDEN',
          message: `missing scope: ${needed}`,
          details: { code: 'MISSING_SCOPE', missingScope: needed, requiredScopes: [needed] },
        });
        return;
      }
      const delay = options.methodDelayMs?.[frame.method] ?? 0;
      if (delay === Number.POSITIVE_INFINITY) return;
      if (delay > 0) setTimeout(() => handleMethod(frame.id, frame.method, frame.params ?? {}), delay);
      else handleMethod(frame.id, frame.method, frame.params ?? {});
    });

    function handleConnect(id: string, p: any) {
      if (unavailableLeft > 0) {
        unavailableLeft--;
        rejectConnect(id, {
          code: 'UNAVAILABLE',
          message: 'gateway is starting: sidecars not ready',
          details: { reason: 'startup-sidecars' },
          retryable: true,
          retryAfterMs: options.retryAfterMs ?? 50,
        });
        return;
      }
      if (!(p.minProtocol <= 4 && p.maxProtocol >= 4)) {
        rejectConnect(id, {
          code: 'INVALID_REQUEST',
          message: `protocol mismatch: server speaks 4, client ${p.minProtocol}-${p.maxProtocol}`,
        });
        return;
      }
      if (!CLIENT_IDS.has(p.client?.id) || !CLIENT_MODES.has(p.client?.mode)) {
        rejectConnect(id, { code: 'INVALID_REQUEST', message: 'invalid connect params: client.id/client.mode' });
        return;
      }
      const token = p.auth?.token;
      if (token !== currentToken()) {
        rejectConnect(id, {
          code: 'UNAUTHORIZED',
          message: token ? 'unauthorized: gateway token mismatch' : 'unauthorized: gateway token missing',
          details: { code: token ? 'AUTH_TOKEN_MISMATCH' : 'AUTH_TOKEN_MISSING' },
        });
        return;
      }
      const scopes: string[] = Array.isArray(p.scopes) ? p.scopes : [];
      let deviceToken: string | undefined;
      if (p.device !== undefined) {
        const problem = verifyDevice(p, token ?? '');
        if (problem) {
          rejectConnect(id, {
            code: 'UNAUTHORIZED',
            message: `device signature invalid: ${problem}`,
            details: { code: 'DEVICE_AUTH_INVALID' },
          });
          return;
        }
        const paired = pairing.paired.get(p.device.id);
        if ((remote || options.pairedDeviceIds) && !paired) {
          const request = requestPairing(p, scopes);
          rejectConnect(id, {
            code: 'NOT_PAIRED',
            message: 'pairing required: device is not approved yet',
            details: {
              code: 'PAIRING_REQUIRED',
              reason: 'not-paired',
              requestId: request.requestId,
              deviceId: p.device.id,
              requestedRole: p.role,
              requestedScopes: scopes,
            },
          });
          return;
        }
        if (paired) paired.lastSeenAtMs = Date.now();
        socketDevice.set(ws, p.device.id);
        deviceToken = paired?.tokens.operator?.token ?? `devtok-${p.device.id.slice(0, 8)}`;
      }
      // OpenClaw admits a remote token-only connection but grants it nothing; loopback and paired devices get what they ask.
      granted = remote && p.device === undefined ? [] : scopes;
      hello = true;
      connectAttempts.push({ ok: true });
      ok(id, {
        type: 'hello-ok',
        protocol: 4,
        server: { version: '2026.9.6', buildId: 'fake', bootId: 'fake-boot', connId: randomUUID() },
        features: { methods: METHODS, events: ['chat', 'agent', 'tick', 'presence'] },
        snapshot: { stateVersion: 1, uptimeMs: 1000, authMode: 'token' },
        auth: { method: 'token', role: p.role, scopes: granted, ...(deviceToken ? { deviceToken } : {}), issuedAtMs: Date.now() },
        policy: { maxPayload: 26214400, maxBufferedBytes: 52428800, tickIntervalMs: 30000 },
      });
    }

    /** What OpenClaw checks: id = sha256(raw key), the challenge nonce, and an Ed25519 signature over the v3 (or v2) payload. */
    function verifyDevice(p: any, token: string): string | undefined {
      const d = p.device;
      if (typeof d?.id !== 'string' || typeof d.publicKey !== 'string' || typeof d.signature !== 'string') return 'malformed device';
      const raw = Buffer.from(d.publicKey, 'base64url');
      if (raw.length !== 32) return 'public key is not 32 bytes';
      if (createHash('sha256').update(raw).digest('hex') !== d.id) return 'device id does not match public key';
      if (d.nonce !== nonce) return 'nonce mismatch';
      if (d.signedAt !== ts) return 'signedAt does not match the challenge';
      const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
      const base = [d.id, p.client.id, p.client.mode, p.role, (p.scopes ?? []).join(','), String(d.signedAt), token, d.nonce];
      const v3 = ['v3', ...base, String(p.client.platform ?? '').toLowerCase(), String(p.client.deviceFamily ?? '').toLowerCase()].join(
        '|',
      );
      const v2 = ['v2', ...base].join('|');
      const sig = Buffer.from(d.signature, 'base64url');
      const good = [v3, v2].some((payload) => verify(null, Buffer.from(payload, 'utf8'), key, sig));
      return good ? undefined : 'signature does not verify';
    }

    /**
     * One pending request per device (OpenClaw `requestDevicePairingInWorker`): a retry that asks for no new scopes
     * refreshes the existing request (same id, same `ts`); one that asks for more supersedes it with a new request.
     */
    function requestPairing(p: any, scopes: string[]): FakePendingPairingRequest {
      const existing = [...pairing.pending.values()].find((r) => r.deviceId === p.device.id);
      const incoming = {
        displayName: p.client.displayName,
        platform: p.client.platform,
        deviceFamily: p.client.deviceFamily,
        clientId: p.client.id,
        clientMode: p.client.mode,
        remoteIp,
      };
      if (existing && scopes.every((s) => existing.scopes?.includes(s))) {
        Object.assign(existing, incoming);
        return existing;
      }
      if (existing) pairing.pending.delete(existing.requestId);
      const request: FakePendingPairingRequest = {
        requestId: randomUUID(),
        deviceId: p.device.id,
        publicKey: p.device.publicKey,
        ...incoming,
        role: p.role,
        roles: [p.role],
        scopes: [...new Set([...(existing?.scopes ?? []), ...scopes])].sort(),
        silent: false,
        isRepair: false,
        ts: Date.now(),
      };
      pairing.pending.set(request.requestId, request);
      return request;
    }

    /** `device.pair.*` params are closed objects with non-empty string fields (OpenClaw's TypeBox schemas). */
    function pairParamsProblem(method: string, p: any, fields: string[]): string | undefined {
      const extra = Object.keys(p).find((k) => !fields.includes(k));
      if (extra) return `invalid ${method} params: must NOT have additional properties`;
      const missing = fields.find((f) => typeof p[f] !== 'string' || p[f].trim() === '');
      return missing ? `invalid ${method} params: must have required property '${missing}'` : undefined;
    }

    /** A paired device as listed: bearer tokens summarized, never shown. */
    function redactPaired(device: FakePairedDevice) {
      const { tokens, ...rest } = device;
      const connected = [...socketDevice.values()].includes(device.deviceId);
      return {
        ...rest,
        connected,
        tokens: Object.values(tokens).map(({ role, scopes, createdAtMs }) => ({ role, scopes, createdAtMs })),
      };
    }

    function handlePairing(id: string, method: string, p: any) {
      const fields = method === 'device.pair.list' ? [] : method === 'device.pair.remove' ? ['deviceId'] : ['requestId'];
      const problem = pairParamsProblem(method, p, fields);
      if (problem) return err(id, { code: 'INVALID_REQUEST', message: problem });
      if (method === 'device.pair.list') {
        return ok(id, { pending: [...pairing.pending.values()], paired: [...pairing.paired.values()].map(redactPaired) });
      }
      if (method === 'device.pair.remove') {
        const device = pairing.paired.get(p.deviceId.trim());
        if (!device) return err(id, { code: 'INVALID_REQUEST', message: 'unknown deviceId' });
        pairing.paired.delete(device.deviceId);
        for (const r of [...pairing.pending.values()]) if (r.deviceId === device.deviceId) pairing.pending.delete(r.requestId);
        ok(id, { deviceId: device.deviceId });
        for (const [socket, deviceId] of socketDevice) if (deviceId === device.deviceId) setTimeout(() => socket.terminate(), 0);
        return;
      }
      const request = pairing.pending.get(p.requestId.trim());
      if (!request) return err(id, { code: 'INVALID_REQUEST', message: 'unknown requestId' });
      pairing.pending.delete(request.requestId);
      if (method === 'device.pair.reject') return ok(id, { requestId: request.requestId, deviceId: request.deviceId });
      const now = Date.now();
      const existing = pairing.paired.get(request.deviceId);
      const scopes = request.scopes ?? [];
      const device: FakePairedDevice = {
        deviceId: request.deviceId,
        publicKey: request.publicKey,
        ...(request.displayName !== undefined ? { displayName: request.displayName } : {}),
        ...(request.platform !== undefined ? { platform: request.platform } : {}),
        ...(request.clientId !== undefined ? { clientId: request.clientId } : {}),
        ...(request.clientMode !== undefined ? { clientMode: request.clientMode } : {}),
        ...(request.remoteIp !== undefined ? { remoteIp: request.remoteIp } : {}),
        role: request.role ?? 'operator',
        roles: request.roles ?? ['operator'],
        scopes,
        tokens: {
          operator: { token: `devtok-${request.deviceId.slice(0, 8)}-${randomUUID()}`, role: 'operator', scopes, createdAtMs: now },
        },
        approvedVia: 'owner',
        createdAtMs: existing?.createdAtMs ?? now,
        approvedAtMs: now,
      };
      pairing.paired.set(device.deviceId, device);
      return ok(id, { requestId: request.requestId, device: redactPaired(device) });
    }

    /**
     * `cron.*` as openclaw@2026.9.6 answers them (`dist/cron-*.mjs`, `dist/service-*.mjs`): `cron.list` lists enabled jobs
     * unless `includeDisabled`/`enabled` says otherwise, filters by `query` (id, name, description), pages with
     * `limit` (1..200) and `offset`; jobs are answered in their read view (`nextRunAtMs`/`lastRunAtMs` at the top level);
     * `main` jobs need a `systemEvent` payload and isolated/session ones an `agentTurn`; system-owned monitors
     * (`declarationKey` `heartbeat:…`, payload `heartbeat`) cannot be created, edited or removed by clients.
     */
    function handleCron(id: string, method: string, p: any) {
      const notFound = (jobId: unknown) =>
        err(id, { code: 'INVALID_REQUEST', message: `cron job not found: ${jobId}`, details: { code: 'CRON_JOB_NOT_FOUND' } });
      const invalid = (message: string) => err(id, { code: 'INVALID_REQUEST', message: `invalid ${method} params: ${message}` });
      const systemOwned = (job: CronJob) => String(job.declarationKey ?? '').startsWith('heartbeat:');
      const view = (job: CronJob) => {
        const state = (job.state ?? {}) as { nextRunAtMs?: number; lastRunAtMs?: number };
        return { ...job, nextRunAtMs: state.nextRunAtMs, lastRunAtMs: state.lastRunAtMs };
      };
      const nextRun = (job: CronJob, now: number) => {
        const schedule = job.schedule as { kind?: string; everyMs?: number } | undefined;
        if (job.enabled === false) return undefined;
        return now + (schedule?.kind === 'every' && typeof schedule.everyMs === 'number' ? schedule.everyMs : 60_000);
      };
      const shapeProblem = (job: any): string | undefined => {
        const s = job.schedule;
        if (s?.kind === 'every' && !(Number.isInteger(s.everyMs) && s.everyMs >= 1)) return 'schedule.everyMs must be an integer >= 1';
        if (s?.kind === 'cron' && !(typeof s.expr === 'string' && s.expr.trim())) return 'schedule.expr must be a non-empty string';
        if (!['at', 'every', 'cron', 'on-exit', 'stream'].includes(s?.kind)) return 'schedule.kind is not supported';
        const kind = job.payload?.kind;
        if (kind === 'heartbeat') return 'system-owned payloads cannot be created by cron clients';
        if (kind === 'systemEvent' && !(typeof job.payload.text === 'string' && job.payload.text))
          return 'payload.text must be a non-empty string';
        if (kind === 'agentTurn' && !(typeof job.payload.message === 'string' && job.payload.message)) {
          return 'payload.message must be a non-empty string';
        }
        const target = String(job.sessionTarget);
        // openclaw@2026.9.6 `assertMainSessionAgentId`: a main-session job runs only for the default agent.
        if (target === 'main' && job.agentId && String(job.agentId).toLowerCase() !== 'main' && kind !== 'script') {
          return `cron: sessionTarget "main" is only valid for the default agent. Use sessionTarget "isolated" with payload.kind "agentTurn" for non-default agents (agentId: ${job.agentId})`;
        }
        if (target === 'main' && kind !== 'systemEvent' && kind !== 'script')
          return 'main cron jobs require payload.kind="systemEvent" or "script"';
        if (
          (target === 'isolated' || target === 'current' || target.startsWith('session:')) &&
          !['agentTurn', 'command', 'script'].includes(kind)
        ) {
          return 'isolated cron jobs require payload.kind="agentTurn", "command", or "script"';
        }
        return undefined;
      };
      switch (method) {
        case 'cron.list': {
          if (p.limit !== undefined && !(Number.isInteger(p.limit) && p.limit >= 1 && p.limit <= 200))
            return invalid('limit must be 1..200');
          const filter = ['all', 'enabled', 'disabled'].includes(p.enabled) ? p.enabled : p.includeDisabled === true ? 'all' : 'enabled';
          const query = typeof p.query === 'string' ? p.query.trim().toLowerCase() : '';
          const matching = [...jobs.values()].filter((job) => {
            if (filter !== 'all' && (filter === 'enabled') !== (job.enabled !== false)) return false;
            return !query || [job.id, job.name, job.description ?? ''].join(' ').toLowerCase().includes(query);
          });
          const total = matching.length;
          const offset = Math.min(total, Math.max(0, Math.floor(p.offset ?? 0)));
          const limit = Math.min(200, Math.max(1, Math.floor(p.limit ?? (total || 50))));
          const page = matching.slice(offset, offset + limit).map(view);
          const next = offset + page.length;
          return ok(id, {
            jobs: page,
            snapshotRevision: 1,
            total,
            offset,
            limit,
            hasMore: next < total,
            nextOffset: next < total ? next : null,
          });
        }
        case 'cron.add': {
          const unknownKey = Object.keys(p).find((k) => !CRON_ADD_KEYS.has(k));
          if (unknownKey)
            return err(id, {
              code: 'INVALID_REQUEST',
              message: `invalid cron.add params: must NOT have additional properties (${unknownKey})`,
            });
          for (const required of ['name', 'schedule', 'sessionTarget', 'wakeMode', 'payload']) {
            if (p[required] === undefined) {
              return err(id, { code: 'INVALID_REQUEST', message: `invalid cron.add params: must have required property '${required}'` });
            }
          }
          const problem = shapeProblem(p);
          if (problem) return invalid(problem);
          if (p.agentId !== undefined && !rosterNow().includes(p.agentId)) return invalid(`unknown agent id "${String(p.agentId)}"`);
          const now = Date.now();
          const job: CronJob = { id: randomUUID(), enabled: true, createdAtMs: now, updatedAtMs: now, ...p };
          job.state = { nextRunAtMs: nextRun(job, now) };
          jobs.set(job.id, job);
          return ok(id, view(job));
        }
        case 'cron.get': {
          const job = jobs.get(p.id ?? p.jobId);
          return job ? ok(id, view(job)) : notFound(p.id ?? p.jobId);
        }
        case 'cron.update': {
          const jobId = p.id ?? p.jobId;
          if (typeof p.patch !== 'object' || p.patch === null) return invalid("must have required property 'patch'");
          const job = jobs.get(jobId);
          if (!job) return notFound(jobId);
          if (systemOwned(job)) return invalid('system-owned monitor jobs cannot be edited by cron clients');
          const patch = p.patch as Record<string, unknown>;
          const unknownKey = Object.keys(patch).find((k) => !CRON_ADD_KEYS.has(k) && k !== 'displayName' && k !== 'state');
          if (unknownKey) return invalid(`patch must NOT have additional properties (${unknownKey})`);
          const payload = patch.payload as { kind?: string } | undefined;
          const merged: CronJob = {
            ...job,
            ...patch,
            ...(payload && payload.kind === (job.payload as { kind?: string }).kind
              ? { payload: { ...(job.payload as object), ...payload } }
              : {}),
          };
          const problem = shapeProblem(merged);
          if (problem) return invalid(problem);
          const now = Date.now();
          merged.updatedAtMs = now;
          merged.state = { ...(job.state as object), nextRunAtMs: nextRun(merged, now) };
          jobs.set(job.id, merged);
          return ok(id, view(merged));
        }
        default: {
          const jobId = p.id ?? p.jobId;
          const job = jobs.get(jobId);
          if (!job) return notFound(jobId);
          if (systemOwned(job)) return invalid('system-owned monitor jobs cannot be removed by cron clients');
          jobs.delete(jobId);
          return ok(id, { ok: true, removed: true });
        }
      }
    }

    /**
     * `models.list` and `channels.status` as openclaw@2026.9.6 answers them (`dist/models-*.mjs`, `dist/channels-*.mjs`):
     * closed params; `{ models }` (filtered by `provider`); the channel catalog with a summary, the account snapshots and
     * the default account id per channel (only the channels in `options.channels` are loaded), `unknown channel` else.
     */
    function handleCatalog(id: string, method: string, p: any) {
      const allowed = method === 'models.list' ? MODELS_LIST_KEYS : ['probe', 'timeoutMs', 'channel'];
      const extra = Object.keys(p).find((k) => !allowed.includes(k));
      if (extra) return err(id, { code: 'INVALID_REQUEST', message: `invalid ${method} params: must NOT have additional properties` });
      if (method === 'models.list') {
        const models = options.models ?? [
          { id: 'fake-1', name: 'Fake 1', provider: 'fake', contextWindow: 128000, reasoning: false, input: ['text'], available: true },
        ];
        return ok(id, { models: models.filter((m) => typeof p.provider !== 'string' || m.provider === p.provider) });
      }
      const all = options.channels ?? {};
      if (p.channel !== undefined && !(p.channel in all))
        return err(id, { code: 'INVALID_REQUEST', message: `unknown channel: ${p.channel}` });
      const ids = Object.keys(all)
        .filter((c) => p.channel === undefined || c === p.channel)
        .sort();
      const label = (c: string) => (c === 'whatsapp' ? 'WhatsApp' : c.charAt(0).toUpperCase() + c.slice(1));
      const defaultAccount = (c: string) =>
        all[c]?.find((a) => a.accountId === 'default')?.accountId ?? all[c]?.[0]?.accountId ?? 'default';
      return ok(id, {
        ts: Date.now(),
        channelOrder: ids,
        channelLabels: Object.fromEntries(ids.map((c) => [c, label(c)])),
        channelMeta: ids.map((c) => ({ id: c, label: label(c), detailLabel: label(c) })),
        channels: Object.fromEntries(
          ids.map((c) => [c, { configured: all[c]?.find((a) => a.accountId === defaultAccount(c))?.configured ?? false }]),
        ),
        channelAccounts: Object.fromEntries(ids.map((c) => [c, all[c] ?? []])),
        channelDefaultAccountId: Object.fromEntries(ids.map((c) => [c, defaultAccount(c)])),
        statusIssues: [],
      });
    }

    function handleMethod(id: string, method: string, p: any) {
      switch (method) {
        case 'health':
          return ok(id, { ok: true });
        case 'system-presence':
          // The gateway itself; the platform's operator connections announce no presence.
          return ok(id, [{ mode: 'gateway', reason: 'self', ts: Date.now() }]);
        case 'models.list':
        case 'channels.status':
          return handleCatalog(id, method, p);
        case 'cron.list':
        case 'cron.add':
        case 'cron.get':
        case 'cron.update':
        case 'cron.remove':
          return handleCron(id, method, p);
        case 'sessions.list': {
          // Newest activity first, then paged (`limit`, `offset`); rows carry no message count, as in OpenClaw.
          if (p.agentId !== undefined && !rosterNow().includes(p.agentId)) {
            return err(id, { code: 'INVALID_REQUEST', message: `unknown agent id: ${String(p.agentId)}` });
          }
          const all = [...sessions.values()]
            .filter((s) => p.agentId === undefined || agentOfKey(s.key) === p.agentId)
            .sort((a, b) => b.lastActivityAt - a.lastActivityAt || a.key.localeCompare(b.key));
          const offset = Number.isInteger(p.offset) && p.offset > 0 ? p.offset : 0;
          const limit = Number.isInteger(p.limit) && p.limit > 0 ? p.limit : all.length;
          const page = all.slice(offset, offset + limit);
          const hasMore = offset + page.length < all.length;
          return ok(id, {
            ts: Date.now(),
            count: page.length,
            totalCount: all.length,
            limitApplied: limit,
            hasMore,
            nextOffset: hasMore ? offset + page.length : null,
            defaults: { modelProvider: agentModel.provider, model: agentModel.model, contextTokens: 128000 },
            sessions: page.map((s) => ({
              key: s.key,
              sessionId: s.sessionId,
              kind: 'direct',
              agentId: agentOfKey(s.key),
              status: s.running ? 'running' : 'done',
              hasActiveRun: s.running,
              inputTokens: s.inputTokens,
              outputTokens: s.outputTokens,
              model: agentModel.model,
              modelProvider: agentModel.provider,
              createdAt: s.createdAt,
              updatedAt: s.updatedAt,
              lastActivityAt: s.lastActivityAt,
              ...(s.label ? { label: s.label } : {}),
            })),
          });
        }
        case 'chat.history': {
          const messages = history.get(sessionKeyOf(p.sessionKey)) ?? [];
          return ok(id, { sessionKey: sessionKeyOf(p.sessionKey), messages, hasMore: false, totalMessages: messages.length });
        }
        case 'chat.send':
          return chatSend(id, p);
        case 'sessions.create':
          return sessionsCreate(id, p);
        case 'device.pair.list':
        case 'device.pair.approve':
        case 'device.pair.reject':
        case 'device.pair.remove':
          return handlePairing(id, method, p);
        case 'config.get':
        case 'config.apply':
        case 'secrets.reload':
          return handleConfig(id, method, p);
        case 'agents.delete':
          return deleteAgent(id, p);
        default:
          return err(id, { code: 'INVALID_REQUEST', message: `unknown method: ${method}` });
      }
    }

    /**
     * OpenClaw's config methods over `options.configFile` (see there); the hash is of the file's text, and
     * `appliedConfigHash` that of the config the gateway runs (`loadedConfig`: read as it started, or by `config.apply`).
     */
    function handleConfig(id: string, method: string, p: any) {
      const file = options.configFile;
      if (!file) return err(id, { code: 'INVALID_REQUEST', message: `unknown method: ${method}` });
      const raw = file.read();
      loadedConfig ??= hashOf(raw);
      if (method === 'config.get') {
        return ok(id, { hash: hashOf(raw), config: JSON.parse(raw), configRevisionHash: hashOf(raw), appliedConfigHash: loadedConfig });
      }
      if (method === 'config.apply') {
        if (typeof p.raw !== 'string') return err(id, { code: 'INVALID_REQUEST', message: 'invalid config.apply params: raw' });
        if (p.baseHash !== hashOf(raw)) {
          return err(id, { code: 'INVALID_REQUEST', message: 'config changed since last load; re-run config.get and retry' });
        }
        const problem = rosterWriteProblem(JSON.parse(raw), JSON.parse(p.raw));
        if (problem) return err(id, { code: 'INVALID_REQUEST', message: problem });
        file.write(p.raw);
        loadedConfig = hashOf(file.read());
        if (appliesToFail > 0) {
          appliesToFail -= 1;
          return err(id, { code: 'UNAVAILABLE', message: 'config reload superseded' });
        }
      }
      const before = gatewayToken;
      gatewayToken = file.resolveToken();
      ok(id, method === 'config.apply' ? { ok: true, restart: false } : { ok: true });
      if (gatewayToken !== before)
        setTimeout(() => {
          for (const ws of sockets) ws.close(1008, 'gateway auth changed');
        }, 10);
    }

    /**
     * `agents.delete` as openclaw@2026.9.6 answers it: an agent of the roster other than the default one leaves it (its
     * entry removed from the config, the ownership back to `sole` when one agent is left) and its cron jobs go with it.
     */
    function deleteAgent(id: string, p: any) {
      const file = options.configFile;
      if (!file || options.agents) return err(id, { code: 'INVALID_REQUEST', message: 'unknown method: agents.delete' });
      const agentId = String(p.agentId ?? '');
      if (agentId === 'main') return err(id, { code: 'INVALID_REQUEST', message: 'cannot delete the default agent' });
      if (!rosterNow().includes(agentId)) return err(id, { code: 'INVALID_REQUEST', message: `unknown agent id "${agentId}"` });
      const config = JSON.parse(file.read());
      delete config.agents.entries[agentId];
      if (Object.keys(config.agents.entries).length <= 1) config.agents.ownership = 'sole';
      file.write(JSON.stringify(config, null, 2));
      for (const [jobId, job] of jobs) if (job.agentId === agentId) jobs.delete(jobId);
      return ok(id, { ok: true, agentId, removedBindings: 0 });
    }

    function sessionKeyOf(key: unknown): string {
      const k = String(key ?? 'main');
      return k.startsWith('agent:') ? k : `agent:main:${k}`;
    }

    /** The agent of a full session key. */
    function agentOfKey(key: string): string {
      return /^agent:([^:]+):/.exec(key)?.[1] ?? 'main';
    }

    /** Refuses a session key of an agent the gateway does not have (OpenClaw: unknown agent). */
    function unknownAgentOf(id: string, key: string): boolean {
      const agent = agentOfKey(key);
      if (rosterNow().includes(agent)) return false;
      err(id, { code: 'INVALID_REQUEST', message: `unknown agent id "${agent}"` });
      return true;
    }

    /**
     * `sessions.create` as openclaw@2026.9.6 answers it (`dist/sessions-create-*.mjs`): closed params; an explicit `key`
     * is created or adopted (`agent:main:` is prefixed to a short key), none mints `agent:main:dashboard:<uuid>`; a label
     * another session holds is refused; `idempotencyKey` needs a device identity (or a signed-in principal, which the
     * fake has not). Initial turns (`message`, `task`) are not run: the session is created without one.
     */
    function sessionsCreate(id: string, p: any) {
      const invalid = (message: string) => err(id, { code: 'INVALID_REQUEST', message });
      if (Object.keys(p).some((k) => !SESSIONS_CREATE_KEYS.has(k))) {
        return invalid('invalid sessions.create params: must NOT have additional properties');
      }
      for (const field of ['key', 'idempotencyKey', 'agentId', 'label']) {
        if (p[field] !== undefined && (typeof p[field] !== 'string' || p[field].length < 1)) {
          return invalid(`invalid sessions.create params: at /${field}: must NOT have fewer than 1 characters`);
        }
      }
      if (typeof p.label === 'string' && p.label.length > 512) {
        return invalid('invalid sessions.create params: at /label: must NOT have more than 512 characters');
      }
      if (p.idempotencyKey !== undefined && !socketDevice.has(ws)) {
        return invalid('idempotent session creation requires an authenticated principal or device identity');
      }
      const key = p.key === undefined ? `agent:main:dashboard:${randomUUID()}` : sessionKeyOf(p.key.trim());
      if (unknownAgentOf(id, key)) return;
      if (p.label !== undefined) {
        const holder = [...sessions.values()].find((s) => s.label === p.label && s.key !== key);
        if (holder) return invalid(`label already in use: ${p.label}`);
      }
      const session = touchSession(key, p.label === undefined ? {} : { label: p.label });
      ok(id, {
        ok: true,
        key,
        sessionId: session.sessionId,
        entry: { sessionId: session.sessionId, updatedAt: session.updatedAt, ...(session.label ? { label: session.label } : {}) },
        runStarted: false,
        resolved: { modelProvider: agentModel.provider, model: agentModel.model },
      });
    }

    function chatSend(id: string, p: any) {
      for (const required of ['sessionKey', 'message', 'idempotencyKey']) {
        if (typeof p[required] !== 'string' || !p[required]) {
          return err(id, { code: 'INVALID_REQUEST', message: `invalid chat.send params: must have required property '${required}'` });
        }
      }
      const runId = randomUUID();
      const sessionKey = sessionKeyOf(p.sessionKey);
      if (unknownAgentOf(id, sessionKey)) return;
      const base = { runId, sessionKey, agentId: agentOfKey(sessionKey) };
      ok(id, { runId, status: 'started' });
      const text = (options.reply ?? ((m: string) => `reply to: ${m}`))(p.message);
      const log = history.get(sessionKey) ?? [];
      history.set(sessionKey, log);
      log.push({ role: 'user', content: p.message });
      touchSession(sessionKey, { running: true });
      let s = 0;
      const half = Math.ceil(text.length / 2);
      const steps: (() => void)[] = [
        () => event('chat', { ...base, seq: ++s, state: 'status', phase: 'preparing_context' }),
        () => {
          // A run whose model call fails on its key streams no text before its error.
          if (options.providerKey) return;
          event('chat', {
            ...base,
            seq: ++s,
            state: 'delta',
            deltaText: text.slice(0, half),
            message: { role: 'assistant', content: [{ type: 'text', text: text.slice(0, half) }] },
          });
        },
        () => {
          if (options.failChatMessage === p.message) {
            touchSession(sessionKey, { running: false });
            event('chat', { ...base, seq: ++s, state: 'error', errorMessage: 'model provider failed' });
            return;
          }
          if (options.providerKey) {
            // The run's error event: a provider's refusal carries `errorDetail` (failover reason `auth`), a missing key
            // only the route check's message; then OpenClaw's second, user-facing error event for the same run.
            touchSession(sessionKey, { running: false });
            const { failure, provider } = options.providerKey;
            const errorMessage = failure === 'missing' ? noAuthSource(provider) : AUTH_INVALID_TOKEN_USER_TEXT;
            const errorDetail =
              failure === 'refused'
                ? { provider, model: agentModel.model, failoverReason: 'auth', providerRuntimeFailureKind: 'auth_invalid_token' }
                : undefined;
            event('chat', { ...base, seq: ++s, state: 'error', errorMessage, ...(errorDetail ? { errorDetail } : {}) });
            event('chat', {
              runId,
              sessionKey,
              seq: 1,
              state: 'error',
              errorMessage: `⚠️ Agent failed before reply: ${errorMessage}\nTo view logs, run \`openclaw logs --follow\` in a terminal.`,
            });
            return;
          }
          const content = [
            { type: 'text', text: text.slice(0, half) },
            { type: 'text', text: text.slice(half) },
          ];
          // The transcript's assistant message carries provider, model and usage; the final event projects it.
          const usage = turnUsage(p.message, text);
          const message = { role: 'assistant', content, provider: agentModel.provider, model: agentModel.model, usage };
          log.push(message);
          const session = touchSession(sessionKey, { running: false });
          session.inputTokens += usage.input;
          session.outputTokens += usage.output;
          event('chat', { ...base, seq: ++s, state: 'final', stopReason: 'stop', message });
        },
      ];
      if (options.stallChatMessage === p.message) steps.length = 1;
      for (const [i, step] of steps.entries()) setTimeout(step, 5 * (i + 1));
    }
  });

  return {
    url: `ws://127.0.0.1:${port}/`,
    /** The same port over HTTP (`/healthz`, `/readyz`, `/v1/chat/completions`). */
    httpUrl: `http://127.0.0.1:${port}`,
    port,
    /** With `remoteListener`: the door whose connections count as non-loopback (`null` otherwise). */
    remoteUrl: remotePort === null ? null : `ws://127.0.0.1:${remotePort}/`,
    remoteHttpUrl: remotePort === null ? null : `http://127.0.0.1:${remotePort}`,
    remotePort,
    /** The gateway token it accepts now (`configFile` can change it). */
    currentToken,
    /** Every request frame received (including `connect`). */
    received,
    /** Every HTTP request received. */
    httpReceived,
    /** The session index behind `sessions.list`, by full key (`agent:main:…`). */
    sessions,
    /** Outcome of each `connect`. */
    connectAttempts,
    jobs,
    /** Device pairing state: pending requests by request id, paired devices by device id. */
    pairing,
    /** Drops every open client socket (as a gateway restart would). */
    dropConnections(): void {
      for (const ws of sockets) ws.terminate();
    },
    async close(): Promise<void> {
      for (const ws of sockets) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (remoteServer) {
        remoteServer.closeAllConnections();
        await new Promise<void>((resolve) => remoteServer.close(() => resolve()));
      }
    },
  };
}

export type FakeGatewayWs = Awaited<ReturnType<typeof startFakeGatewayWs>>;
