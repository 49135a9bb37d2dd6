import { randomInt } from 'node:crypto';
import {
  type ConnectGatewayOptions,
  type GatewayConnection,
  GatewayError,
  type GatewayEventListener,
  type RequestOptions,
  connectGateway,
} from './gateway-client.js';

export interface ReconnectOptions {
  /** First wait after a lost connection (default 1 s); doubles per failed attempt. */
  initialDelayMs?: number;
  /** Longest wait between attempts (default 30 s). */
  maxDelayMs?: number;
  /** Up to this share of each wait is added at random, so many clients do not reconnect in step (default 0.2). */
  jitter?: number;
  /** Called on every state change, e.g. for logs or metrics. */
  onState?: (state: ReconnectState, detail?: GatewayError) => void;
}

/** `connecting` (first attempt or after a wait), `open`, `waiting` (backing off after a failure), `closed` (by `close()`). */
export type ReconnectState = 'connecting' | 'open' | 'waiting' | 'closed';

/**
 * A gateway connection for long-lived use (event streams, dashboards): it reconnects with exponential back-off and
 * jitter when the socket drops or the gateway restarts, keeps its event subscriptions across connections, and lets
 * `request()` wait for the next connection instead of failing while one is being made. Short request/response work
 * should keep using `connectGateway` with one socket per request.
 *
 * Errors a retry cannot fix (a wrong token, `NOT_PAIRED`) stop the loop: the state becomes `closed` and `request()`
 * rejects with that error.
 */
export class ReconnectingGateway {
  private conn: GatewayConnection | null = null;
  private state: ReconnectState = 'connecting';
  private fatal: GatewayError | null = null;
  private attempt = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly listeners = new Map<string, Set<GatewayEventListener>>();
  private waiters: Array<{ resolve: (c: GatewayConnection) => void; reject: (e: GatewayError) => void }> = [];
  private readonly options: Required<Omit<ReconnectOptions, 'onState'>> & Pick<ReconnectOptions, 'onState'>;

  constructor(
    private readonly connectOptions: ConnectGatewayOptions,
    options: ReconnectOptions = {},
  ) {
    this.options = {
      initialDelayMs: options.initialDelayMs ?? 1_000,
      maxDelayMs: options.maxDelayMs ?? 30_000,
      jitter: options.jitter ?? 0.2,
      onState: options.onState,
    };
    void this.connect();
  }

  get status(): ReconnectState {
    return this.state;
  }

  /** Sends a request on the current connection, waiting up to the request timeout for one to be open. */
  async request<T = unknown>(method: string, params: unknown = {}, opts: RequestOptions = {}): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const started = performance.now();
    const conn = await this.connection(timeoutMs);
    return conn.request<T>(method, params, { timeoutMs: Math.max(1, Math.floor(timeoutMs - (performance.now() - started))) });
  }

  /** Subscribes to one event name (or `'*'`) on every connection, present and future; returns the unsubscribe function. */
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

  /** Stops reconnecting and closes the socket. */
  async close(): Promise<void> {
    this.setState('closed');
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.rejectWaiters(new GatewayError('CLOSED', 'gateway client closed'));
    const conn = this.conn;
    this.conn = null;
    await conn?.close();
  }

  private connection(timeoutMs: number): Promise<GatewayConnection> {
    if (this.conn && !this.conn.closed) return Promise.resolve(this.conn);
    if (this.state === 'closed') return Promise.reject(this.fatal ?? new GatewayError('CLOSED', 'gateway client closed'));
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (c: GatewayConnection) => {
          clearTimeout(timer);
          resolve(c);
        },
        reject: (e: GatewayError) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new GatewayError('TIMEOUT', `no gateway connection within ${timeoutMs} ms`, { retryable: true }));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  private async connect(): Promise<void> {
    if (this.state === 'closed') return;
    this.setState('connecting');
    let conn: GatewayConnection;
    try {
      conn = await connectGateway({ ...this.connectOptions, onEvent: (frame) => this.dispatch(frame.event, frame.payload, frame) });
    } catch (err) {
      const error = err instanceof GatewayError ? err : new GatewayError('CONNECT_FAILED', String(err));
      if (isFatal(error)) {
        this.fatal = error;
        this.setState('closed', error);
        this.rejectWaiters(error);
        return;
      }
      this.scheduleRetry(error);
      return;
    }
    // close() may have been called while the handshake ran (TypeScript cannot see that across the await).
    if ((this.state as ReconnectState) === 'closed') {
      await conn.close();
      return;
    }
    this.conn = conn;
    this.attempt = 0;
    this.setState('open');
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve(conn);
    conn.onClose((error) => {
      if (this.conn === conn) this.conn = null;
      this.scheduleRetry(error);
    });
  }

  private dispatch(event: string, payload: unknown, frame: Parameters<GatewayEventListener>[1]): void {
    for (const name of [event, '*']) {
      for (const fn of [...(this.listeners.get(name) ?? [])]) {
        try {
          fn(payload, frame);
        } catch (err) {
          process.emitWarning(`gateway event listener threw: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    }
  }

  private scheduleRetry(error: GatewayError): void {
    if (this.state === 'closed' || this.timer) return;
    const base = Math.min(this.options.maxDelayMs, this.options.initialDelayMs * 2 ** this.attempt);
    const delay = error.retryAfterMs ?? Math.round(base * (1 + (randomInt(0, 1_000_001) / 1_000_000) * this.options.jitter));
    this.attempt += 1;
    this.setState('waiting', error);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.connect();
    }, delay);
  }

  private rejectWaiters(error: GatewayError): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(error);
  }

  private setState(state: ReconnectState, detail?: GatewayError): void {
    this.state = state;
    this.options.onState?.(state, detail);
  }
}

/** Refusals a new attempt would only repeat: authentication and pairing. */
function isFatal(error: GatewayError): boolean {
  if (error.retryable) return false;
  return !['CONNECT_FAILED', 'CLOSED', 'TIMEOUT', 'PROTOCOL_ERROR'].includes(error.code);
}
