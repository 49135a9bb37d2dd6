import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import type { BaseConfig } from '../config.js';
import { ID_PREFIXES } from '../ids.js';
import { loggerOptions, redactUrl } from '../logger.js';
import { validatorCompiler } from './body-schema.js';

export type App = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

/** Request bodies are at most 1 MB on every endpoint (spec §4, §8). */
export const BODY_LIMIT = 1_048_576;

const INCOMING_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

// Request ids only need to be unique, not secret: a random prefix per process and a counter cost nothing per request
// (newId's 128 random bits showed in profiles of the hot path).
const PROCESS_PREFIX = `${ID_PREFIXES.request}_${randomBytes(6).toString('base64url')}`;
let requestSequence = 0;
const nextRequestId = () => `${PROCESS_PREFIX}${(requestSequence++).toString(36)}`;

export interface ServerOptions {
  config: Pick<BaseConfig, 'logLevel' | 'trustProxy'> & Partial<Pick<BaseConfig, 'logFormat'>>;
  /** A ready logger (tests pass a silent one); otherwise one is built from config. */
  logger?: FastifyBaseLogger;
}

/** A hop count becomes "trust the nearest N proxies"; Fastify's types take a function for it. */
function trustProxyOption(value: BaseConfig['trustProxy']) {
  return typeof value === 'number' ? (_address: string, hop: number) => hop < value : value;
}

/** The Fastify instance every service starts from. */
export function createServer({ config, logger }: ServerOptions): App {
  const app = Fastify<Server, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    ...(logger ? { loggerInstance: logger } : { logger: loggerOptions(config.logLevel, config.logFormat) }),
    // One line per request, written when it is answered (below), instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    trustProxy: trustProxyOption(config.trustProxy),
    // An upstream's request id is kept so one request is traceable across services.
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && INCOMING_REQUEST_ID.test(incoming) ? incoming : nextRequestId();
    },
    requestIdHeader: false,
    requestTimeout: 120_000,
    connectionTimeout: 130_000,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
    // A path with broken percent-encoding (`/api/x/%E0%A4%A`) fails before any route or error handler runs: answer it
    // in the shared `{ error }` shape rather than Fastify's own body.
    frameworkErrors: (error, _request, reply: FastifyReply) => {
      void reply
        .code(400)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify({ error: error.code === 'FST_ERR_BAD_URL' ? 'Invalid URL' : 'Bad request' }));
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
  });
  app.setValidatorCompiler(validatorCompiler());
  app.addHook('onResponse', (request, reply, done) => {
    const ms = reply.elapsedTime;
    request.log.info(
      { req: request, res: { statusCode: reply.statusCode }, responseTime: ms },
      `${request.method} ${redactUrl(request.url)} ${reply.statusCode} ${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`,
    );
    done();
  });
  return app.withTypeProvider<TypeBoxTypeProvider>();
}
