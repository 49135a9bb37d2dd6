/** What services log through, so they need no Fastify: a request's or the app's logger fits it, as does a test's stub. */
export interface Logger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}
