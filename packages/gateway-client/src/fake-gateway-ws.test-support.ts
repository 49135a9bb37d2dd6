import { createHash, createPublicKey, randomUUID, verify } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { ED25519_SPKI_PREFIX } from './device-identity.js';

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
const METHODS = ['health', 'sessions.list', 'chat.send', 'chat.history', 'cron.list', 'cron.add', 'cron.remove'];

export interface FakeGatewayOptions {
  /** The gateway token (`OPENCLAW_GATEWAY_TOKEN`). */
  token: string;
  /** Answer this many `connect` requests with retryable `UNAVAILABLE` (`startup-sidecars`) first. */
  unavailableConnects?: number;
  /** `retryAfterMs` of those answers (default 50). */
  retryAfterMs?: number;
  /** When set, a signed device must be one of these ids, otherwise `NOT_PAIRED` (a non-loopback connection). */
  pairedDeviceIds?: string[];
  /** The assistant's reply to a `chat.send` message (default `reply to: <message>`). */
  reply?: (message: string) => string;
  /** Chat messages for which the run ends in `state: 'error'`. */
  failChatMessage?: string;
  /** Chat messages whose run starts but never reaches a final state. */
  stallChatMessage?: string;
  /** Delay before answering a method (ms); `Infinity` = never answer. */
  methodDelayMs?: Record<string, number>;
}

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
 * (status → delta → final), `chat.history`, `sessions.list`, and `unknown method` errors.
 */
export async function startFakeGatewayWs(options: FakeGatewayOptions) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 64 * 1024 });
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  const port = (wss.address() as AddressInfo).port;
  let unavailableLeft = options.unavailableConnects ?? 0;
  const jobs = new Map<string, CronJob>();
  const history = new Map<string, { role: string; content: unknown }[]>();
  const received: Received[] = [];
  const connectAttempts: { ok: boolean; code?: string }[] = [];
  const sockets = new Set<WebSocket>();

  wss.on('connection', (ws) => {
    sockets.add(ws);
    ws.on('close', () => sockets.delete(ws));
    const nonce = randomUUID();
    const ts = Date.now();
    let seq = 0;
    let hello = false;
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
      if (token !== options.token) {
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
        if (options.pairedDeviceIds && !options.pairedDeviceIds.includes(p.device.id)) {
          rejectConnect(id, {
            code: 'NOT_PAIRED',
            message: 'pairing required: device is not approved yet',
            details: {
              code: 'PAIRING_REQUIRED',
              reason: 'not-paired',
              requestId: randomUUID(),
              deviceId: p.device.id,
              requestedRole: p.role,
              requestedScopes: scopes,
            },
          });
          return;
        }
        deviceToken = `devtok-${p.device.id.slice(0, 8)}`;
      }
      hello = true;
      connectAttempts.push({ ok: true });
      ok(id, {
        type: 'hello-ok',
        protocol: 4,
        server: { version: '2026.9.6', buildId: 'fake', bootId: 'fake-boot', connId: randomUUID() },
        features: { methods: METHODS, events: ['chat', 'agent', 'tick', 'presence'] },
        snapshot: { stateVersion: 1, uptimeMs: 1000, authMode: 'token' },
        auth: { method: 'token', role: p.role, scopes, ...(deviceToken ? { deviceToken } : {}), issuedAtMs: Date.now() },
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

    function handleMethod(id: string, method: string, p: any) {
      switch (method) {
        case 'health':
          return ok(id, { ok: true });
        case 'cron.list': {
          const all = [...jobs.values()];
          return ok(id, { jobs: all, snapshotRevision: 1, total: all.length, offset: 0, limit: 200, hasMore: false });
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
          const now = Date.now();
          const job: CronJob = {
            id: randomUUID(),
            enabled: true,
            createdAtMs: now,
            updatedAtMs: now,
            ...p,
            state: { nextRunAtMs: now + 60_000 },
          };
          jobs.set(job.id, job);
          return ok(id, job);
        }
        case 'cron.remove': {
          const jobId = p.id ?? p.jobId;
          if (!jobs.delete(jobId)) {
            return err(id, { code: 'INVALID_REQUEST', message: `cron job not found: ${jobId}`, details: { code: 'CRON_JOB_NOT_FOUND' } });
          }
          return ok(id, { ok: true, removed: true });
        }
        case 'sessions.list':
          return ok(id, { count: history.size, sessions: [...history.keys()].map((key) => ({ key, status: 'done' })) });
        case 'chat.history': {
          const messages = history.get(sessionKeyOf(p.sessionKey)) ?? [];
          return ok(id, { sessionKey: sessionKeyOf(p.sessionKey), messages, hasMore: false, totalMessages: messages.length });
        }
        case 'chat.send':
          return chatSend(id, p);
        default:
          return err(id, { code: 'INVALID_REQUEST', message: `unknown method: ${method}` });
      }
    }

    function sessionKeyOf(key: unknown): string {
      const k = String(key ?? 'main');
      return k.startsWith('agent:') ? k : `agent:main:${k}`;
    }

    function chatSend(id: string, p: any) {
      for (const required of ['sessionKey', 'message', 'idempotencyKey']) {
        if (typeof p[required] !== 'string' || !p[required]) {
          return err(id, { code: 'INVALID_REQUEST', message: `invalid chat.send params: must have required property '${required}'` });
        }
      }
      const runId = randomUUID();
      const sessionKey = sessionKeyOf(p.sessionKey);
      const base = { runId, sessionKey, agentId: 'main' };
      ok(id, { runId, status: 'started' });
      const text = (options.reply ?? ((m: string) => `reply to: ${m}`))(p.message);
      const log = history.get(sessionKey) ?? [];
      history.set(sessionKey, log);
      log.push({ role: 'user', content: p.message });
      let s = 0;
      const half = Math.ceil(text.length / 2);
      const steps: (() => void)[] = [
        () => event('chat', { ...base, seq: ++s, state: 'status', phase: 'preparing_context' }),
        () =>
          event('chat', {
            ...base,
            seq: ++s,
            state: 'delta',
            deltaText: text.slice(0, half),
            message: { role: 'assistant', content: [{ type: 'text', text: text.slice(0, half) }] },
          }),
        () => {
          if (options.failChatMessage === p.message) {
            event('chat', { ...base, seq: ++s, state: 'error', errorMessage: 'model provider failed' });
            return;
          }
          const content = [
            { type: 'text', text: text.slice(0, half) },
            { type: 'text', text: text.slice(half) },
          ];
          log.push({ role: 'assistant', content });
          event('chat', { ...base, seq: ++s, state: 'final', stopReason: 'stop', message: { role: 'assistant', content } });
        },
      ];
      if (options.stallChatMessage === p.message) steps.length = 1;
      for (const [i, step] of steps.entries()) setTimeout(step, 5 * (i + 1));
    }
  });

  return {
    url: `ws://127.0.0.1:${port}/`,
    port,
    /** Every request frame received (including `connect`). */
    received,
    /** Outcome of each `connect`. */
    connectAttempts,
    jobs,
    /** Drops every open client socket (as a gateway restart would). */
    dropConnections(): void {
      for (const ws of sockets) ws.terminate();
    },
    async close(): Promise<void> {
      for (const ws of sockets) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

export type FakeGatewayWs = Awaited<ReturnType<typeof startFakeGatewayWs>>;
