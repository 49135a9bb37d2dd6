import type { LoggerOptions } from 'pino';

/** Query parameters whose values are credentials and never reach a log line. */
const SECRET_PARAM = /token|code|key|secret|signature|password|nonce|state|credential/i;

/** Removes credential values from a request URL before it is logged. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of [...params.keys()]) if (SECRET_PARAM.test(name)) params.set(name, '[redacted]');
  return `${url.slice(0, q)}?${params.toString()}`;
}

/** pino options shared by every service: levels, secret redaction, compact request lines. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-user-signature"]',
        'req.headers["x-bridge-secret"]',
        'req.headers["x-csrf-token"]',
        'res.headers["set-cookie"]',
        '*.password',
        '*.newPassword',
        '*.currentPassword',
        '*.token',
        '*.apiKey',
        '*.secret',
        '*.privateKey',
      ],
      censor: '[redacted]',
    },
    serializers: {
      req(req: { id?: unknown; method?: string; url?: string; ip?: string }) {
        return { id: req.id, method: req.method, url: redactUrl(req.url ?? ''), ip: req.ip };
      },
    },
  };
}

/**
 * What services log through, so they need no Fastify: a request's or the app's logger (pino) fits it, as does a
 * test's stub.
 */
export interface Logger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}
