/**
 * The public API, called like any other client: same-origin requests carry the session cookie (httpOnly, never
 * readable here), errors come back as `{ error }` and become an `ApiError` with that message.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export function apiUrl(path: string, query?: RequestOptions['query']): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) params.set(key, String(value));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const { method = options.body === undefined ? 'GET' : 'POST', body, query, headers, signal } = options;
  let res: Response;
  try {
    res = await fetch(apiUrl(path, query), {
      method,
      credentials: 'same-origin',
      headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'The service cannot be reached. Check your connection and try again.', null);
  }
  const text = await res.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!res.ok) {
    const message =
      data && typeof data === 'object' && typeof (data as { error?: unknown }).error === 'string'
        ? (data as { error: string }).error
        : `Request failed (${res.status})`;
    throw new ApiError(res.status, message, data);
  }
  return data as T;
}

/** A message for people: the API's own error text, or a plain fallback. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return 'Something went wrong';
}

/**
 * Server-sent events from a GET route (same-origin, cookie sent by the browser). Returns a function that closes the
 * stream. `EventSource` reconnects on its own after a network error; `onError` hears about it.
 */
export function subscribe(path: string, handlers: Record<string, (data: unknown) => void>, onError?: (event: Event) => void): () => void {
  const source = new EventSource(path, { withCredentials: true });
  for (const [event, handler] of Object.entries(handlers)) {
    source.addEventListener(event, (e) => {
      const raw = (e as MessageEvent<string>).data;
      let data: unknown = raw;
      try {
        data = JSON.parse(raw);
      } catch {
        // Plain text events stay strings.
      }
      handler(data);
    });
  }
  if (onError) source.onerror = onError;
  return () => source.close();
}
