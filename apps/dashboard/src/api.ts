import { createClient } from '@aop/sdk';

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

/**
 * The API client (`@aop/sdk`, typed from the web service's OpenAPI document): same-origin requests, so the session
 * cookie goes along.
 */
export const client = createClient({ baseUrl: '', credentials: 'same-origin', headers: { accept: 'application/json' } });

/** What a client call resolves to: `data` for a success, `error` (the parsed body) for a refusal. */
interface Answer<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/**
 * The data of a client call, e.g. `await request(client.GET('/api/agents'))`; a refusal throws an `ApiError` with the
 * API's own `{ error }` message, a request that never got an answer one with status 0.
 */
export async function request<D>(call: Promise<Answer<D>>): Promise<D> {
  let answer: Answer<D>;
  try {
    answer = await call;
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'The service cannot be reached. Check your connection and try again.', null);
  }
  if (!answer.response.ok) throw refusal(answer.response.status, answer.error ?? null);
  return answer.data as D;
}

/** Parses an answer's text as JSON when it is JSON; otherwise keeps the text. */
export function parseBody(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** An error answer as an `ApiError` carrying the API's own `{ error }` message. */
export function refusal(status: number, body: unknown): ApiError {
  const message =
    body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string'
      ? (body as { error: string }).error
      : `Request failed (${status})`;
  return new ApiError(status, message, body);
}

/** A message for people: the API's own error text, or a plain fallback. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return 'Something went wrong';
}
