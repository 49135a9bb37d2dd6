import { ERROR_CATALOGUE } from './error-catalogue.js';

export { ERROR_CATALOGUE } from './error-catalogue.js';

type Catalogue = typeof ERROR_CATALOGUE;
/** Every error a service may raise: a closed list (see error-catalogue.ts and docs/errors.md). */
export type ErrorCode = keyof Catalogue;
export type ErrorParams<C extends ErrorCode> = Catalogue[C]['message'] extends (params: infer P) => string ? P : undefined;
/** The codes whose message takes no values (what a caller may pass around as "the error to answer with"). */
export type PlainErrorCode = { [C in ErrorCode]: ErrorParams<C> extends undefined ? C : never }[ErrorCode];
/** Extra fields some answers carry beside `error` (e.g. `{ required, balance }`), as the spec names them. */
export type ErrorDetails = Record<string, unknown>;
type Args<C extends ErrorCode> =
  ErrorParams<C> extends undefined ? [params?: undefined, details?: ErrorDetails] : [params: ErrorParams<C>, details?: ErrorDetails];

/**
 * What a service throws: a code from the catalogue (and the values its message
 * names). Services know nothing of HTTP; the edge maps the code to its status and
 * the catalogue's message with `errorResponse`.
 */
export class DomainError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly params: ErrorParams<C>;
  readonly details: ErrorDetails | undefined;

  constructor(code: C, ...[params, details]: Args<C>) {
    const message = ERROR_CATALOGUE[code].message as string | ((p: unknown) => string);
    super(typeof message === 'function' ? message(params) : message);
    this.name = 'DomainError';
    this.code = code;
    this.params = params as ErrorParams<C>;
    this.details = details;
  }
}

/**
 * An answer whose status or message is not a catalogue entry: a status relayed
 * from an upstream service (e.g. the summarizer's fetch), or a rule's message the
 * operator configured (rate limits). Whatever throws it, the client receives
 * `{ "error": message, ...extra }` with `statusCode`.
 */
export class HttpError extends Error {
  readonly statusCode: number;
  readonly extra: ErrorDetails | undefined;

  constructor(statusCode: number, message: string, extra?: ErrorDetails) {
    super(message);
    this.name = 'HttpError';
    this.statusCode = statusCode;
    this.extra = extra;
  }
}

export const isDomainError = <C extends ErrorCode>(err: unknown, code?: C): err is DomainError<C> =>
  err instanceof DomainError && (code === undefined || err.code === code);

/** The errors a client is meant to see, as opposed to bugs (which answer 500 without detail). */
export const isPublicError = (err: unknown): err is DomainError | HttpError => err instanceof DomainError || err instanceof HttpError;

/** The edge's mapping: status and body for an error a client is meant to see. */
export function errorResponse(err: DomainError | HttpError): { status: number; body: Record<string, unknown> } {
  if (err instanceof HttpError) return { status: err.statusCode, body: { ...err.extra, error: err.message } };
  return { status: ERROR_CATALOGUE[err.code].status, body: { ...err.details, error: err.message } };
}
