import { userContextHeaders } from '@aop/core';
import { currentClientAddress } from '../http/client-address.js';
import { tracedFetch } from '@aop/core/tracing';

/** Who the backend is told is calling (spec §5 user-context headers). */
export interface BackendCaller {
  id: string;
  email?: string | undefined;
  role?: string | undefined;
}

export interface BackendRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** Signs x-user-* headers for this caller. */
  caller?: BackendCaller;
  /** Extra headers, e.g. `x-request-id` for tracing. */
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export interface BackendStreamRequest {
  query?: Record<string, string | number | undefined>;
  caller?: BackendCaller;
  headers?: Record<string, string>;
  /** Bounds connecting and the response headers only; the body then flows as long as both ends keep it open. */
  timeoutMs?: number;
  /** Aborting it (the browser went away) closes the upstream connection. */
  signal?: AbortSignal;
}

/** An unread upstream response: a `text/event-stream` body, or the backend's JSON answer (e.g. an error). */
export interface BackendStreamAnswer {
  response: Response;
  /** Which base URL answered (primary or fallback). */
  baseUrl: string;
}

export interface BackendAnswer<T> {
  status: number;
  body: T;
  /** Which base URL answered (primary or fallback). */
  baseUrl: string;
}

/** No backend URL gave a JSON answer in time. */
export class BackendUnavailableError extends Error {
  override name = 'BackendUnavailableError';
  constructor(readonly attempts: { baseUrl: string; reason: string }[]) {
    super(`Backend unreachable: ${attempts.map((a) => `${a.baseUrl} (${a.reason})`).join('; ')}`);
  }
}

export interface BackendClientOptions {
  baseUrls: string[];
  internalApiKey: string | undefined;
  userContextSecret: string | undefined;
  defaultTimeoutMs?: number;
}

/**
 * The user-context headers, signed at `nowMs` (`x-user-ts`, HMAC-SHA256 over `{userId}:{userEmail}:{userRole}:{ts}`,
 * see `userContextHeaders`). The time is this machine's real one, not the app's injectable clock: the backend judges
 * freshness by its own wall clock, so a test that pins the web service's clock must still send a current timestamp.
 */
export function signedUserHeaders(caller: BackendCaller, secret: string | undefined, nowMs: number = Date.now()): Record<string, string> {
  return userContextHeaders({ userId: caller.id, email: caller.email, role: caller.role }, secret, nowMs);
}

/**
 * The one way the web service calls the backend: bearer internal key, signed
 * user context, a timeout, and the fallback URL when the primary does not give
 * a JSON answer (a proxy's HTML error page counts as no answer).
 */
export class BackendClient {
  readonly #options: BackendClientOptions;

  constructor(options: BackendClientOptions) {
    this.#options = options;
  }

  get configured(): boolean {
    return this.#options.baseUrls.length > 0;
  }

  /** The bearer internal key, the signed user context and the client's address (`currentClientAddress`) on top of `extra`. */
  #headers(accept: string, extra: Record<string, string> | undefined, caller: BackendCaller | undefined): Record<string, string> {
    const client = currentClientAddress();
    const headers: Record<string, string> = { accept, ...(client ? { 'x-forwarded-for': client } : {}), ...extra };
    if (this.#options.internalApiKey) headers.authorization = `Bearer ${this.#options.internalApiKey}`;
    if (caller) Object.assign(headers, signedUserHeaders(caller, this.#options.userContextSecret));
    return headers;
  }

  async request<T = unknown>(path: string, req: BackendRequest = {}): Promise<BackendAnswer<T>> {
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const attempts: { baseUrl: string; reason: string }[] = [];
    for (const baseUrl of this.#options.baseUrls) {
      // Signed per attempt: after a long timeout on the primary, the fallback must not get an expired timestamp.
      const headers = this.#headers('application/json', req.headers, req.caller);
      if (body !== undefined) headers['content-type'] = 'application/json';
      const url = new URL(path, baseUrl);
      for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      try {
        const res = await tracedFetch('backend', url, {
          method: req.method ?? (body === undefined ? 'GET' : 'POST'),
          headers,
          body,
          signal: AbortSignal.timeout(req.timeoutMs ?? this.#options.defaultTimeoutMs ?? 15_000),
        });
        const text = await res.text();
        if (!(res.headers.get('content-type') ?? '').includes('application/json')) {
          attempts.push({ baseUrl, reason: `non-JSON answer (HTTP ${res.status})` });
          continue;
        }
        return { status: res.status, body: (text ? JSON.parse(text) : null) as T, baseUrl };
      } catch (err) {
        attempts.push({ baseUrl, reason: err instanceof Error ? (err.name === 'TimeoutError' ? 'timed out' : err.message) : String(err) });
      }
    }
    throw new BackendUnavailableError(attempts);
  }

  /**
   * A `GET` whose answer is not buffered (server-sent events): the first base URL that answers with
   * `text/event-stream` or JSON wins, and its body is left for the caller to relay or read. The same fallback rule as
   * `request` applies until then; once a stream is returned it is never retried elsewhere.
   */
  async stream(path: string, req: BackendStreamRequest = {}): Promise<BackendStreamAnswer> {
    const timeoutMs = req.timeoutMs ?? this.#options.defaultTimeoutMs ?? 15_000;
    const attempts: { baseUrl: string; reason: string }[] = [];
    for (const baseUrl of this.#options.baseUrls) {
      if (req.signal?.aborted) break;
      // Signed per attempt, as in `request`; the backend checks the timestamp once, when the stream opens.
      const headers = this.#headers('text/event-stream, application/json', req.headers, req.caller);
      const url = new URL(path, baseUrl);
      for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      // One controller per attempt: the timeout ends at the headers, the caller's signal lasts as long as the body.
      const controller = new AbortController();
      const abort = () => controller.abort();
      req.signal?.addEventListener('abort', abort, { once: true });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeoutMs);
      try {
        const res = await tracedFetch('backend', url, { method: 'GET', headers, signal: controller.signal });
        clearTimeout(timer);
        const type = res.headers.get('content-type') ?? '';
        if (type.includes('text/event-stream') || type.includes('application/json')) return { response: res, baseUrl };
        await res.body?.cancel().catch(() => undefined);
        attempts.push({ baseUrl, reason: `non-JSON answer (HTTP ${res.status})` });
      } catch (err) {
        clearTimeout(timer);
        attempts.push({ baseUrl, reason: timedOut ? 'timed out' : err instanceof Error ? err.message : String(err) });
      }
      req.signal?.removeEventListener('abort', abort);
    }
    throw new BackendUnavailableError(attempts);
  }
}
