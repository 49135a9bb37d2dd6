/**
 * The one error type of the platform. Whatever throws it, the client receives
 * `{ "error": message, ...extra }` with `statusCode`.
 */
export class HttpError extends Error {
  readonly statusCode: number;
  readonly extra: Record<string, unknown> | undefined;

  constructor(statusCode: number, message: string, extra?: Record<string, unknown>) {
    super(message);
    this.name = 'HttpError';
    this.statusCode = statusCode;
    this.extra = extra;
  }

  toBody(): Record<string, unknown> {
    return { ...this.extra, error: this.message };
  }
}

export const isHttpError = (err: unknown): err is HttpError => err instanceof HttpError;
