import { randomUUID } from 'node:crypto';
import { sseData } from '@aop/core/sse';
import { traceOutgoing, tracedFetch } from '@aop/core/tracing';
import WebSocket from 'ws';
import type { RawData } from 'ws';
import { type DeviceIdentity, signConnect } from './device-identity.js';

/** The protocol version this client speaks (`minProtocol` = `maxProtocol`). */
export const GATEWAY_PROTOCOL = 4;

/** An error answered by the gateway (`res.ok:false`) or raised locally (`TIMEOUT`, `CLOSED`, `CONNECT_FAILED`, `HTTP_<status>`…). */
export class GatewayError extends Error {
  readonly code: string;
  readonly details: unknown;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(code: string, message: string, opts: { details?: unknown; retryable?: boolean; retryAfterMs?: number | undefined } = {}) {
    super(message);
    this.name = 'GatewayError';
    this.code = code;
    this.details = opts.details;
    this.retryable = opts.retryable ?? false;
    this.retryAfterMs = opts.retryAfterMs;
    // Every failed gateway call surfaces as one of these: counting them here counts every call site's failures.
    for (const listener of errorListeners) listener(this);
  }
}

const errorListeners = new Set<(err: GatewayError) => void>();

/**
 * Calls `listener` with every `GatewayError` raised in this process (an error answer, a timeout, a refused connect, an
 * HTTP failure of the chat endpoint), for the services' metrics. Returns the unsubscribe function.
 */
export function onGatewayError(listener: (err: GatewayError) => void): () => void {
  errorListeners.add(listener);
  return () => errorListeners.delete(listener);
}

/** The `error` object of a failed response frame. */
export interface GatewayErrorShape {
  code: string;
  message: string;
  details?: unknown;
  retryable?: boolean;
  retryAfterMs?: number;
}

export interface GatewayEventFrame {
  type: 'event';
  event: string;
  payload: unknown;
  seq?: number;
  stateVersion?: number;
}

/** `hello-ok` (the `connect` response payload); only the fields the platform reads are typed. */
export interface HelloOk {
  type: 'hello-ok';
  protocol: number;
  server?: { version?: string; connId?: string; [k: string]: unknown };
  features?: { methods?: string[]; events?: string[] };
  snapshot?: Record<string, unknown>;
  auth?: { method?: string; role?: string; scopes?: string[]; deviceToken?: string; issuedAtMs?: number; [k: string]: unknown };
  policy?: { maxPayload?: number; tickIntervalMs?: number; [k: string]: unknown };
  [k: string]: unknown;
}

export type GatewayEventListener = (payload: unknown, frame: GatewayEventFrame) => void;

export interface RequestOptions {
  /** Default 60 000 ms. */
  timeoutMs?: number;
}

export interface GatewayConnection {
  readonly hello: HelloOk;
  readonly closed: boolean;
  /** Sends a request and resolves with the response payload; rejects with a `GatewayError`. */
  request<T = unknown>(method: string, params?: unknown, opts?: RequestOptions): Promise<T>;
  /** Subscribes to one event name (or `'*'` for all); returns the unsubscribe function. */
  on(event: string, fn: GatewayEventListener): () => void;
  /** Called once when the socket closes (with the error pending requests were rejected with). */
  onClose(fn: (err: GatewayError) => void): () => void;
  /** Closes the socket; resolves once it is closed. */
  close(): Promise<void>;
}

export interface ConnectGatewayOptions {
  /** `ws://host:port/`. */
  url: string;
  /** The gateway token (`auth.token`). */
  token?: string | undefined;
  /** When given, `connect` carries a v3-signed device block. */
  device?: DeviceIdentity | undefined;
  clientId?: string;
  clientMode?: string;
  clientVersion?: string;
  role?: string;
  scopes?: string[];
  platform?: string;
  deviceFamily?: string;
  /** Per attempt, from socket open to `hello-ok`. Default 15 000 ms (the gateway's own). */
  handshakeTimeoutMs?: number;
  /** How long retryable connect errors (`UNAVAILABLE` while sidecars start) are retried. Default 30 000 ms. */
  retryDeadlineMs?: number;
  /** Called for every event except `connect.challenge`. */
  onEvent?: (frame: GatewayEventFrame) => void;
}

const DEFAULT_SCOPES = ['operator.admin', 'operator.read', 'operator.write'];

/**
 * The `User-Agent` of every request the platform makes to an agent's gateway. A hibernated agent's address answers
 * 503 while it sleeps and wakes it for anyone else (a webhook, a device), but not for the platform's own reads (a
 * dashboard listing sessions must not wake every agent it shows): the platform wakes an agent by starting it.
 */
export const PLATFORM_USER_AGENT = 'aop-platform';
const MAX_PAYLOAD = 26_214_400;

interface Pending {
  method: string;
  resolve: (payload: unknown) => void;
  reject: (err: GatewayError) => void;
  timer: NodeJS.Timeout;
}

function toGatewayError(e: GatewayErrorShape | undefined): GatewayError {
  return new GatewayError(e?.code ?? 'UNKNOWN', e?.message ?? 'gateway request failed', {
    details: e?.details,
    retryable: e?.retryable === true,
    retryAfterMs: typeof e?.retryAfterMs === 'number' ? e.retryAfterMs : undefined,
  });
}

class Connection implements GatewayConnection {
  hello: HelloOk = { type: 'hello-ok', protocol: GATEWAY_PROTOCOL };
  closed = false;
  private nextId = 0;
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Map<string, Set<GatewayEventListener>>();
  private readonly closeListeners = new Set<(err: GatewayError) => void>();
  private readonly closedPromise: Promise<void>;
  private markClosed!: () => void;

  constructor(
    private readonly ws: WebSocket,
    private readonly onEvent: ((frame: GatewayEventFrame) => void) | undefined,
    private readonly onChallenge: (payload: { nonce: string; ts: number }) => void,
  ) {
    this.closedPromise = new Promise((resolve) => {
      this.markClosed = resolve;
    });
  }

  handleMessage(data: RawData): void {
    let frame: any;
    try {
      frame = JSON.parse(data.toString());
    } catch {
      return;
    }
    if (frame?.type === 'res' && typeof frame.id === 'string') {
      const p = this.pending.get(frame.id);
      if (!p) return;
      this.pending.delete(frame.id);
      clearTimeout(p.timer);
      if (frame.ok === true) p.resolve(frame.payload);
      else p.reject(toGatewayError(frame.error));
      return;
    }
    if (frame?.type !== 'event' || typeof frame.event !== 'string') return;
    if (frame.event === 'connect.challenge') {
      this.onChallenge(frame.payload ?? {});
      return;
    }
    const ev = frame as GatewayEventFrame;
    this.safely(() => this.onEvent?.(ev));
    for (const name of [ev.event, '*']) {
      for (const fn of [...(this.listeners.get(name) ?? [])]) this.safely(() => fn(ev.payload, ev));
    }
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      // A throwing listener must not break frame dispatch for the others.
      process.emitWarning(`gateway event listener threw: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  handleClose(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    const err = new GatewayError('CLOSED', `gateway connection closed (${code}${reason ? `: ${reason}` : ''})`, {
      details: { code, reason },
    });
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    for (const fn of [...this.closeListeners]) this.safely(() => fn(err));
    this.closeListeners.clear();
    this.markClosed();
  }

  /**
   * One request in a CLIENT span (`gateway <method>`) of the calling request's trace, when it is traced. Only the method
   * and the gateway's address are recorded: params can hold credentials (`connect` carries the token).
   */
  request<T = unknown>(method: string, params: unknown = {}, opts: RequestOptions = {}): Promise<T> {
    return traceOutgoing(
      `gateway ${method}`,
      () => gatewaySpanAttributes(this.ws.url, method),
      () => this.send<T>(method, params, opts),
    );
  }

  /** `request` without a span of its own: the handshake's `connect`, which runs inside `connectGateway`'s span. */
  send<T = unknown>(method: string, params: unknown = {}, opts: RequestOptions = {}): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? 60_000;
    return new Promise<T>((resolve, reject) => {
      if (this.closed || this.ws.readyState !== WebSocket.OPEN) {
        reject(new GatewayError('CLOSED', `gateway connection is closed (${method})`));
        return;
      }
      const id = `r${++this.nextId}`;
      const timer = setTimeout(() => {
        if (this.pending.delete(id)) reject(new GatewayError('TIMEOUT', `${method} timed out after ${timeoutMs} ms`, { retryable: true }));
      }, timeoutMs);
      this.pending.set(id, { method, resolve: resolve as (p: unknown) => void, reject, timer });
      this.ws.send(JSON.stringify({ type: 'req', id, method, params }), (err) => {
        if (!err) return;
        const p = this.pending.get(id);
        if (!p) return;
        this.pending.delete(id);
        clearTimeout(p.timer);
        p.reject(new GatewayError('CLOSED', `could not send ${method}: ${err.message}`));
      });
    });
  }

  on(event: string, fn: GatewayEventListener): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(fn);
    return () => {
      set.delete(fn);
    };
  }

  onClose(fn: (err: GatewayError) => void): () => void {
    this.closeListeners.add(fn);
    return () => {
      this.closeListeners.delete(fn);
    };
  }

  close(): Promise<void> {
    if (!this.closed && this.ws.readyState !== WebSocket.CLOSED) {
      if (this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
      else this.ws.close(1000, 'client closing');
    }
    return this.closedPromise;
  }

  terminate(): void {
    this.ws.terminate();
  }
}

function connectOnce(opts: ConnectGatewayOptions): Promise<Connection> {
  const handshakeTimeoutMs = opts.handshakeTimeoutMs ?? 15_000;
  const clientId = opts.clientId ?? 'gateway-client';
  const clientMode = opts.clientMode ?? 'backend';
  const role = opts.role ?? 'operator';
  const scopes = opts.scopes ?? DEFAULT_SCOPES;
  const platform = opts.platform ?? process.platform;
  const startedAt = performance.now();

  return new Promise<Connection>((resolve, reject) => {
    let settled = false;
    let challenged = false;
    const ws = new WebSocket(opts.url, {
      maxPayload: MAX_PAYLOAD,
      handshakeTimeout: handshakeTimeoutMs,
      headers: { 'user-agent': PLATFORM_USER_AGENT },
    });
    const fail = (err: GatewayError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      conn.terminate();
      reject(err);
    };
    const timer = setTimeout(
      () => fail(new GatewayError('TIMEOUT', `gateway handshake timed out after ${handshakeTimeoutMs} ms`, { retryable: true })),
      handshakeTimeoutMs,
    );

    const conn = new Connection(ws, opts.onEvent, ({ nonce, ts }) => {
      if (challenged || settled) return;
      challenged = true;
      const params: Record<string, unknown> = {
        minProtocol: GATEWAY_PROTOCOL,
        maxProtocol: GATEWAY_PROTOCOL,
        client: {
          id: clientId,
          version: opts.clientVersion ?? '1.0.0',
          platform,
          mode: clientMode,
          ...(opts.deviceFamily ? { deviceFamily: opts.deviceFamily } : {}),
        },
        role,
        scopes,
        caps: [],
        auth: { token: opts.token },
      };
      if (opts.device) {
        const signature = signConnect(opts.device, {
          clientId,
          clientMode,
          role,
          scopes,
          signedAtMs: ts,
          token: opts.token ?? '',
          nonce,
          platform,
          deviceFamily: opts.deviceFamily,
        });
        params.device = { id: opts.device.deviceId, publicKey: opts.device.publicKeyRaw, signature, signedAt: ts, nonce };
      }
      const remaining = Math.max(1, Math.floor(handshakeTimeoutMs - (performance.now() - startedAt)));
      conn.send<HelloOk>('connect', params, { timeoutMs: remaining }).then(
        (hello) => {
          if (settled) return;
          if (hello?.type !== 'hello-ok') {
            fail(new GatewayError('PROTOCOL_ERROR', `unexpected connect response: ${JSON.stringify(hello)}`));
            return;
          }
          settled = true;
          clearTimeout(timer);
          conn.hello = hello;
          resolve(conn);
        },
        (err: GatewayError) => fail(err),
      );
    });

    ws.on('message', (data) => conn.handleMessage(data));
    // Always listen for 'error' (an unhandled one would crash the process); a 'close' follows it.
    ws.on('error', (err) => fail(new GatewayError('CONNECT_FAILED', `gateway connection failed: ${err.message}`, { details: err })));
    ws.on('close', (code, reason) => {
      conn.handleClose(code, reason.toString());
      fail(new GatewayError('CLOSED', `gateway closed the connection during the handshake (${code}${reason.length ? `: ${reason}` : ''})`));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Opens a gateway WebSocket, answers `connect.challenge` with `connect` (protocol 4, token, optional signed device) and resolves
 * on `hello-ok`. Retryable connect errors (`UNAVAILABLE` while sidecars start) are retried after their `retryAfterMs` until
 * `retryDeadlineMs`; any other rejection surfaces as a `GatewayError` carrying the server's code.
 */
export function connectGateway(opts: ConnectGatewayOptions): Promise<GatewayConnection> {
  // One span for opening the socket, the handshake and its retries; what is sent later has spans of its own.
  return traceOutgoing(
    'gateway connect',
    () => gatewaySpanAttributes(opts.url, 'connect'),
    () => connectWithRetries(opts),
  );
}

/** The span attributes of a gateway call: the method and where the gateway is (never a token, even one in the URL). */
function gatewaySpanAttributes(url: string, method: string): Record<string, string | number> {
  const at = new URL(url);
  return {
    'rpc.system': 'openclaw',
    'rpc.method': method,
    'server.address': at.hostname,
    'server.port': Number(at.port || (at.protocol === 'wss:' ? 443 : 80)),
  };
}

async function connectWithRetries(opts: ConnectGatewayOptions): Promise<GatewayConnection> {
  const deadline = performance.now() + (opts.retryDeadlineMs ?? 30_000);
  for (;;) {
    try {
      return await connectOnce(opts);
    } catch (err) {
      if (!(err instanceof GatewayError) || !err.retryable || err.code === 'TIMEOUT') throw err;
      const delay = err.retryAfterMs ?? 1000;
      if (performance.now() + delay > deadline) throw err;
      await sleep(delay);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// chat

export interface ChatContentPart {
  type: string;
  text?: string;
  [k: string]: unknown;
}

export interface ChatEventPayload {
  runId: string;
  sessionKey?: string;
  seq?: number;
  state: 'status' | 'delta' | 'final' | 'error' | 'aborted' | string;
  deltaText?: string;
  errorMessage?: string;
  message?: { role: string; content: string | ChatContentPart[] };
  [k: string]: unknown;
}

export interface ChatSendOptions {
  sessionKey: string;
  message: string;
  /** Overall time for the run to reach `final`. Default 120 000 ms. */
  timeoutMs?: number;
  /** Default: a fresh UUID. */
  idempotencyKey?: string;
  /** Extra `chat.send` params (`agentId`, `thinking`, …). */
  params?: Record<string, unknown>;
}

/** The text of an assistant message (`content` string, or the concatenated `text` parts). */
export function messageText(message: ChatEventPayload['message']): string {
  if (!message) return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
}

/** Sends `chat.send` and resolves with the final assistant text of that run (following `chat` events by `runId`). */
export function chatSend(conn: GatewayConnection, opts: ChatSendOptions): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  return new Promise<string>((resolve, reject) => {
    let runId: string | undefined;
    let done = false;
    const early: ChatEventPayload[] = [];
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      offChat();
      offClose();
      settle();
    };
    const handle = (p: ChatEventPayload) => {
      if (p.runId !== runId) return;
      if (p.state === 'final') finish(() => resolve(messageText(p.message)));
      else if (p.state === 'error')
        finish(() => reject(new GatewayError('CHAT_ERROR', p.errorMessage ?? 'chat run failed', { details: p })));
      else if (p.state === 'aborted') finish(() => reject(new GatewayError('CHAT_ABORTED', 'chat run was aborted', { details: p })));
    };
    // Subscribe before sending: events of the run can be dispatched before the response's continuation runs.
    const offChat = conn.on('chat', (payload) => {
      const p = payload as ChatEventPayload;
      if (runId === undefined) early.push(p);
      else handle(p);
    });
    const offClose = conn.onClose((err) => finish(() => reject(err)));
    const timer = setTimeout(
      () => finish(() => reject(new GatewayError('TIMEOUT', `chat run did not finish within ${timeoutMs} ms`, { details: { runId } }))),
      timeoutMs,
    );
    conn
      .request<{ runId: string; status: string }>(
        'chat.send',
        { ...opts.params, sessionKey: opts.sessionKey, message: opts.message, idempotencyKey: opts.idempotencyKey ?? randomUUID() },
        { timeoutMs },
      )
      .then(
        (res) => {
          runId = res.runId;
          for (const p of early.splice(0)) handle(p);
        },
        (err: unknown) => finish(() => reject(err)),
      );
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// cron

export interface CronJobInput {
  name: string;
  description?: string;
  schedule: Record<string, unknown> & { kind: string };
  sessionTarget: string;
  wakeMode: 'now' | 'next-heartbeat';
  payload: Record<string, unknown> & { kind: string };
  delivery?: Record<string, unknown> & { mode: string };
  agentId?: string;
  sessionKey?: string;
  enabled?: boolean;
  deleteAfterRun?: boolean;
  declarationKey?: string;
  [k: string]: unknown;
}

export interface CronJob extends CronJobInput {
  id: string;
  enabled: boolean;
  createdAtMs: number;
  updatedAtMs: number;
  nextRunAtMs?: number;
}

export interface CronListResult {
  jobs: CronJob[];
  total?: number;
  offset?: number;
  limit?: number;
  hasMore?: boolean;
  [k: string]: unknown;
}

export function cronList(conn: GatewayConnection, params: Record<string, unknown> = {}, opts?: RequestOptions): Promise<CronListResult> {
  return conn.request<CronListResult>('cron.list', params, opts);
}

export function cronAdd(conn: GatewayConnection, job: CronJobInput, opts?: RequestOptions): Promise<CronJob> {
  return conn.request<CronJob>('cron.add', job, opts);
}

export function cronRemove(conn: GatewayConnection, id: string, opts?: RequestOptions): Promise<{ ok: boolean; removed: boolean }> {
  return conn.request<{ ok: boolean; removed: boolean }>('cron.remove', { id }, opts);
}

// ---------------------------------------------------------------------------------------------------------------------
// REST

/** A text part of an OpenAI message's `content` array (OpenClaw joins them). */
export interface RestChatTextPart {
  type: 'text';
  text: string;
}

export interface RestChatMessage {
  /** `system` and `developer` become the agent's extra system prompt; the others its conversation (OpenClaw's words). */
  role: 'system' | 'developer' | 'user' | 'assistant';
  content: string | RestChatTextPart[];
  name?: string;
}

export interface RestChatOptions {
  /** `http://host:port` (the gateway's HTTP port). */
  baseUrl: string;
  token: string;
  messages: RestChatMessage[];
  /** OpenAI `user`: a stable session `agent:main:openai-user:<user>`. */
  user?: string;
  /** Agent target: `openclaw`, `openclaw/default`, `openclaw/<agentId>`. */
  model?: string;
  /** Default 120 000 ms. */
  timeoutMs?: number;
  /** Extra headers (`x-openclaw-session-key`, `x-openclaw-model`). */
  headers?: Record<string, string>;
  /** Further OpenAI request fields, sent as given (`temperature`, `max_tokens`, `stop` …: OpenClaw passes them to the model). */
  params?: Record<string, unknown>;
}

export interface RestChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface RestChatResult {
  text: string;
  usage: RestChatUsage | undefined;
}

/** A fetch failure of `POST {path}` as a `GatewayError`: `TIMEOUT` when the deadline passed, `ABORTED`, else `CONNECT_FAILED`. */
function restFetchError(err: unknown, path: string, timeoutMs: number, timeout: AbortSignal): GatewayError {
  if (err instanceof GatewayError) return err;
  const name = err instanceof Error ? err.name : '';
  if (timeout.aborted || name === 'TimeoutError') {
    return new GatewayError('TIMEOUT', `POST ${path} timed out after ${timeoutMs} ms`, { retryable: true });
  }
  if (name === 'AbortError') return new GatewayError('ABORTED', `POST ${path} was aborted by the caller`);
  return new GatewayError('CONNECT_FAILED', `POST ${path} failed: ${err instanceof Error ? err.message : String(err)}`, { details: err });
}

/** `POST /v1/chat/completions` (Bearer token, OpenAI body); resolves with the response whatever its status. */
async function postChatCompletions(
  opts: RestChatOptions,
  extra: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<{ res: Response; url: URL; timeoutMs: number; timeout: AbortSignal }> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const url = new URL('/v1/chat/completions', opts.baseUrl);
  const body: Record<string, unknown> = { ...opts.params, model: opts.model ?? 'openclaw/default', messages: opts.messages, ...extra };
  if (opts.user !== undefined) body.user = opts.user;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const res = await tracedFetch('gateway', url, {
      method: 'POST',
      headers: {
        'user-agent': PLATFORM_USER_AGENT,
        ...opts.headers,
        authorization: `Bearer ${opts.token}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
      signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
    });
    return { res, url, timeoutMs, timeout };
  } catch (err) {
    throw restFetchError(err, url.pathname, timeoutMs, timeout);
  }
}

/** A non-2xx chat-completion answer as `GatewayError('HTTP_<status>')`, with the gateway's own message when it sent one. */
function restHttpError(res: Response, raw: string): GatewayError {
  let json: any;
  try {
    json = raw ? JSON.parse(raw) : undefined;
  } catch {
    json = undefined;
  }
  const message = typeof json?.error?.message === 'string' ? json.error.message : `HTTP ${res.status}`;
  return new GatewayError(`HTTP_${res.status}`, message, {
    details: { status: res.status, body: json ?? raw },
    retryable: res.status === 429 || res.status >= 502,
  });
}

/**
 * `POST /v1/chat/completions` with `Authorization: Bearer <token>`; non-2xx answers reject with `GatewayError('HTTP_<status>')`.
 * `signal` stops it early (`ABORTED`): OpenClaw cancels the agent run when its caller goes away.
 */
export async function restChat(opts: RestChatOptions, signal?: AbortSignal): Promise<RestChatResult> {
  const { res, url, timeoutMs, timeout } = await postChatCompletions(opts, {}, signal);
  let raw: string;
  try {
    raw = await res.text();
  } catch (err) {
    throw restFetchError(err, url.pathname, timeoutMs, timeout);
  }
  let json: any;
  try {
    json = raw ? JSON.parse(raw) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) throw restHttpError(res, raw);
  const content = json?.choices?.[0]?.message?.content;
  if (content === undefined || content === null) {
    throw new GatewayError('PROTOCOL_ERROR', 'chat completion has no choices[0].message.content', { details: json ?? raw });
  }
  const text = typeof content === 'string' ? content : messageText({ role: 'assistant', content });
  return { text, usage: json.usage };
}

/**
 * `restChat` with `stream: true`: OpenClaw answers standard SSE `chat.completion.chunk` frames (role delta, content
 * deltas, `finish_reason`, `[DONE]`), relaying its agent's text as the model produces it. `onDelta` gets each piece of
 * text as it arrives; the result is the whole text and the usage of the trailing usage frame (asked for with
 * `stream_options.include_usage`, which OpenClaw honours with its own count). The timeout covers the whole stream;
 * `signal` stops it early (`ABORTED`). A plain `chat.completion` answer is accepted as one delta.
 */
export async function restChatStream(
  opts: RestChatOptions,
  onDelta: (text: string) => void,
  signal?: AbortSignal,
): Promise<RestChatResult> {
  const { res, url, timeoutMs, timeout } = await postChatCompletions(
    opts,
    { stream: true, stream_options: { include_usage: true } },
    signal,
  );
  try {
    if (!res.ok) throw restHttpError(res, await res.text());
    if (!res.body || !/^text\/event-stream/i.test(res.headers.get('content-type') ?? '')) {
      const raw = await res.text();
      let json: any;
      try {
        json = JSON.parse(raw);
      } catch {
        throw new GatewayError('PROTOCOL_ERROR', 'chat completion answer is neither SSE nor JSON', { details: raw });
      }
      const content = json?.choices?.[0]?.message?.content;
      if (content === undefined || content === null) {
        throw new GatewayError('PROTOCOL_ERROR', 'chat completion has no choices[0].message.content', { details: json });
      }
      const text = typeof content === 'string' ? content : messageText({ role: 'assistant', content });
      if (text) onDelta(text);
      return { text, usage: json.usage };
    }
    let text = '';
    let usage: RestChatUsage | undefined;
    let chunks = 0;
    for await (const data of sseData(res.body)) {
      if (data.trim() === '[DONE]') break;
      let chunk: any;
      try {
        chunk = JSON.parse(data);
      } catch {
        throw new GatewayError('PROTOCOL_ERROR', 'chat completion stream carried an event that is not JSON', { details: data });
      }
      if (chunk?.error) {
        const message = typeof chunk.error.message === 'string' ? chunk.error.message : 'chat completion stream reported an error';
        throw new GatewayError('STREAM_ERROR', message, { details: chunk.error });
      }
      chunks++;
      if (chunk?.usage) usage = chunk.usage;
      const piece = chunk?.choices?.[0]?.delta?.content;
      if (typeof piece === 'string' && piece !== '') {
        text += piece;
        onDelta(piece);
      }
    }
    if (chunks === 0) throw new GatewayError('PROTOCOL_ERROR', 'chat completion stream had no chunk');
    return { text, usage };
  } catch (err) {
    throw restFetchError(err, url.pathname, timeoutMs, timeout);
  }
}
