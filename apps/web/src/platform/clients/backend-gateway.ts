import {
  GATEWAY_PROTOCOL,
  GatewayError,
  type GatewayConnection,
  type GatewayEventFrame,
  type GatewayEventListener,
  type HelloOk,
  type RequestOptions,
} from '@aop/gateway-client';
import { type BackendCaller, type BackendClient, BackendUnavailableError } from './backend-client.js';

/** How to reach an agent's gateway through the backend (`POST /api/agents/:id/rpc`) on behalf of its owner. */
export interface BackendControl {
  backend: BackendClient;
  caller: BackendCaller;
  agentId: string;
}

interface RpcAnswer {
  payload?: unknown;
  events?: GatewayEventFrame[];
  error?: string;
  gatewayError?: { code?: unknown; message?: unknown; details?: unknown; retryable?: unknown };
}

/** The backend's per-call bounds (`timeoutMs` 1 000…120 000). */
const MIN_CALL_MS = 1_000;
const MAX_CALL_MS = 120_000;

/**
 * A `GatewayConnection` whose requests are made by the backend: for agents whose gateway gives this service's
 * token-only connection no scopes (a container or hosted gateway sees us as a remote peer; only the backend's paired
 * platform device gets its scopes). Each `request` is one `POST /api/agents/:id/rpc`; the gateway's refusals come
 * back as the same `GatewayError`s a socket would give. There is no event stream: the events of a `chat.send` run are
 * answered with it and handed to the listeners before the request resolves, so `chatSend` works unchanged.
 */
export class BackendGatewayConnection implements GatewayConnection {
  readonly hello: HelloOk = { type: 'hello-ok', protocol: GATEWAY_PROTOCOL, auth: { method: 'backend' } };
  closed = false;
  readonly #control: BackendControl;
  readonly #deadline: number;
  readonly #listeners = new Map<string, Set<GatewayEventListener>>();
  readonly #closeListeners = new Set<(err: GatewayError) => void>();
  /** Rejects every pending request when the connection is closed. */
  readonly #pending = new Set<(err: GatewayError) => void>();

  /** `deadline` (`performance.now()` ms) bounds every request, as the socket `withGateway` closes at its deadline would. */
  constructor(control: BackendControl, deadline: number) {
    this.#control = control;
    this.#deadline = deadline;
  }

  request<T = unknown>(method: string, params: unknown = {}, opts: RequestOptions = {}): Promise<T> {
    if (this.closed) return Promise.reject(new GatewayError('CLOSED', `gateway connection is closed (${method})`));
    // Whole milliseconds: the backend call's AbortSignal.timeout refuses a fraction.
    const left = Math.floor(this.#deadline - performance.now());
    const timeoutMs = Math.min(MAX_CALL_MS, Math.max(MIN_CALL_MS, Math.min(opts.timeoutMs ?? 60_000, left)));
    return new Promise<T>((resolve, reject) => {
      const abandon = (err: GatewayError) => reject(err);
      this.#pending.add(abandon);
      this.#call(method, params, timeoutMs).then(
        (answer) => {
          this.#pending.delete(abandon);
          if (this.closed) return reject(new GatewayError('CLOSED', `gateway connection closed (${method})`));
          for (const frame of answer.events ?? []) this.#dispatch(frame);
          resolve(answer.payload as T);
        },
        (err: unknown) => {
          this.#pending.delete(abandon);
          reject(err);
        },
      );
    });
  }

  on(event: string, fn: GatewayEventListener): () => void {
    let set = this.#listeners.get(event);
    if (!set) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(fn);
    return () => {
      set.delete(fn);
    };
  }

  onClose(fn: (err: GatewayError) => void): () => void {
    this.#closeListeners.add(fn);
    return () => {
      this.#closeListeners.delete(fn);
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const err = new GatewayError('CLOSED', 'gateway connection closed (1000: client closing)', {
      details: { code: 1000, reason: 'client closing' },
    });
    for (const reject of [...this.#pending]) reject(err);
    this.#pending.clear();
    for (const fn of [...this.#closeListeners]) fn(err);
    this.#closeListeners.clear();
  }

  #dispatch(frame: GatewayEventFrame): void {
    for (const name of [frame.event, '*']) {
      for (const fn of [...(this.#listeners.get(name) ?? [])]) {
        try {
          fn(frame.payload, frame);
        } catch (err) {
          process.emitWarning(`gateway event listener threw: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    }
  }

  async #call(method: string, params: unknown, timeoutMs: number): Promise<RpcAnswer> {
    const { backend, caller, agentId } = this.#control;
    let answer: Awaited<ReturnType<BackendClient['request']>>;
    try {
      answer = await backend.request<RpcAnswer>(`/api/agents/${encodeURIComponent(agentId)}/rpc`, {
        method: 'POST',
        body: { method, params, timeoutMs },
        caller,
        // The backend answers within `timeoutMs` (its own connect included); allow for the hop.
        timeoutMs: timeoutMs + 5_000,
      });
    } catch (err) {
      if (err instanceof BackendUnavailableError) throw new GatewayError('CONNECT_FAILED', 'backend unreachable');
      throw err;
    }
    const body = (answer.body ?? {}) as RpcAnswer;
    if (answer.status === 200) return body;
    const g = body.gatewayError;
    if (g && typeof g.code === 'string' && typeof g.message === 'string') {
      throw new GatewayError(g.code, g.message, { details: g.details, retryable: g.retryable === true });
    }
    // The backend refused before reaching the gateway (agent gone or not running, method not allowed).
    const message = typeof body.error === 'string' ? body.error : `backend answered ${answer.status}`;
    if (answer.status === 401) throw new GatewayError('UNAUTHORIZED', message);
    if (answer.status === 403) throw new GatewayError('FORBIDDEN', message);
    throw new GatewayError('CONNECT_FAILED', message, { details: { status: answer.status } });
  }
}
