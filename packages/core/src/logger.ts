import type { DestinationStream, LoggerOptions } from 'pino';
import pretty from 'pino-pretty';

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

/** Fields a readable line leaves out: the request line's message already says them (method, path, status, time). */
const PRETTY_HIDDEN = 'pid,hostname,reqId,req,res,responseTime';

/**
 * A person at a terminal reads one line per event (`npm start`), with the rest of its fields inline; written
 * synchronously (no worker thread), as a development terminal needs no more. Colours when the terminal has them, or
 * when `npm start` (whose children write to a pipe) says its own terminal does (`FORCE_COLOR`).
 */
export function prettyStream(destination: NodeJS.WritableStream | number = 1): DestinationStream {
  const colorize =
    destination === 1 && (Boolean(process.stdout.isTTY) || (process.env.FORCE_COLOR !== undefined && process.env.FORCE_COLOR !== '0'));
  // Only `err` is an error object (its stack on the lines below); `error` is a refused request's message, kept inline.
  return pretty({
    destination,
    sync: true,
    colorize,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: PRETTY_HIDDEN,
    errorLikeObjectKeys: ['err'],
  });
}

/** pino options shared by every service: levels, secret redaction, compact request lines, JSON or readable lines. */
export function loggerOptions(level: string, format: 'json' | 'pretty' = 'json'): LoggerOptions & { stream?: DestinationStream } {
  return {
    level,
    ...(format === 'pretty' ? { stream: prettyStream() } : {}),
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
