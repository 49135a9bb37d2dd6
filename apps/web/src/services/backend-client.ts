import { hmacSha256Hex } from '@aop/core';

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

/** The user-context headers with their HMAC-SHA256 signature over `{userId}:{userEmail}:{userRole}`, lowercase hex. */
export function signedUserHeaders(caller: BackendCaller, secret: string | undefined): Record<string, string> {
  const role = caller.role ?? 'user';
  const email = caller.email ?? '';
  const headers: Record<string, string> = { 'x-user-id': caller.id, 'x-user-role': role };
  if (email) headers['x-user-email'] = email;
  if (secret) headers['x-user-signature'] = hmacSha256Hex(secret, `${caller.id}:${email}:${role}`);
  return headers;
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

  async request<T = unknown>(path: string, req: BackendRequest = {}): Promise<BackendAnswer<T>> {
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
    if (this.#options.internalApiKey) headers.authorization = `Bearer ${this.#options.internalApiKey}`;
    if (req.caller) Object.assign(headers, signedUserHeaders(req.caller, this.#options.userContextSecret));
    let body: string | undefined;
    if (req.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(req.body);
    }
    const attempts: { baseUrl: string; reason: string }[] = [];
    for (const baseUrl of this.#options.baseUrls) {
      const url = new URL(path, baseUrl);
      for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      try {
        const res = await fetch(url, {
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
}
