/// <reference types="@fastify/swagger" preserve="true" />
import swagger from '@fastify/swagger';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { CounterStore } from '../counters/store.js';
import { DomainError, type ErrorCode, errorResponse, isPublicError, type PlainErrorCode } from '../errors.js';
import type { Refusal } from '../request-schema.js';
import { bodyErrorOf } from './body-schema.js';
import { jsonHasInvalidCharacters, jsonNestsDeeperThan } from './json-text.js';
import { createRateLimitHook, type RateLimitRule } from './rate-limit.js';
import { staticSecurityHeaders } from './security-headers.js';

declare module 'fastify' {
  interface FastifyInstance {
    counters: CounterStore;
    /** Builds an onRequest hook that enforces `rule` with the shared counter store. */
    rateLimit(rule: RateLimitRule): (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  }
  interface FastifyContextConfig {
    /**
     * The catalogue error whose message this route answers (always with 400) when the body is missing, not JSON, or
     * fails a schema keyword that names no error of its own: a code (`'CRON_REQUIRED'`) or, for a message with
     * values, `refuse('FIELD_REQUIRED', { field: 'agentId' })`. Without one: `Invalid request body` for a body
     * that is not JSON, Ajv's own words for a failing keyword.
     */
    invalidBody?: PlainErrorCode | Refusal;
  }
}

export interface SharedHttpOptions {
  counters: CounterStore;
  openapi: { path: string; title: string; description: string; version?: string };
  /**
   * Keep helmet's `upgrade-insecure-requests` CSP directive (default true). A service reached over plain HTTP on a
   * non-loopback address (a development machine on a LAN) turns it off: browsers would fetch its pages' scripts over
   * HTTPS, where nothing answers.
   */
  upgradeInsecureRequests?: boolean;
}

/**
 * The message of a route's `invalidBody`. The status is 400 whatever the code's own: the body is what is wrong, even
 * where the same message answers 401 elsewhere (`Missing session token` for a missing cookie).
 */
function invalidBodyMessage(invalidBody: PlainErrorCode | Refusal | undefined): string {
  const refusal: Refusal = typeof invalidBody === 'string' ? { code: invalidBody } : (invalidBody ?? { code: 'INVALID_REQUEST_BODY' });
  return new (DomainError as new (code: ErrorCode, params?: unknown) => DomainError)(refusal.code, refusal.params).message;
}

/** Fastify error codes that mean "the body is not the JSON this route needs". */
const BAD_BODY_CODES = new Set([
  'FST_ERR_CTP_INVALID_MEDIA_TYPE',
  'FST_ERR_CTP_EMPTY_JSON_BODY',
  'FST_ERR_CTP_INVALID_JSON_BODY',
  'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
]);

function errorBody(error: FastifyError, request: FastifyRequest): [number, Record<string, unknown>] {
  if (isPublicError(error)) {
    const { status, body } = errorResponse(error);
    return [status, body];
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return [413, { error: new DomainError('REQUEST_BODY_TOO_LARGE').message }];
  const invalidBody = request.routeOptions.config?.invalidBody;
  if ((error.code && BAD_BODY_CODES.has(error.code)) || error instanceof SyntaxError)
    return [400, { error: invalidBodyMessage(invalidBody) }];
  if (error.validation) {
    const named = error.validationContext === 'body' ? bodyErrorOf(request.routeOptions.schema?.body, error.validation) : undefined;
    if (named) {
      const { status, body } = errorResponse(named);
      return [status, body];
    }
    const message = error.validationContext === 'body' && invalidBody ? invalidBodyMessage(invalidBody) : error.message;
    return [400, { error: message }];
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return [status, { error: error.message }];
  return [500, { error: 'Internal server error' }];
}

/** What every error answer holds (see the error handler below): the message, and some answers add fields. */
const ERROR_BODY = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string', description: 'What went wrong, in words for people (the spec’s message).' } },
  additionalProperties: true,
} as const;

type OpenApiDocument = { components?: { schemas?: Record<string, unknown> }; paths?: Record<string, Record<string, unknown>> };

/**
 * The error shape in the OpenAPI document, once (`#/components/schemas/Error`), as every operation's `default`
 * answer: routes declare their successes, and whatever else they answer comes from the error handler. With it a
 * generated client (`@aop/sdk`) types the `error` of a refused request.
 */
function addErrorAnswers(doc: OpenApiDocument): void {
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, Error: ERROR_BODY } };
  const error = {
    description: 'An error: `{ "error": message }`, some with more fields.',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
  for (const item of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(item)) {
      const responses = (operation as { responses?: Record<string, unknown> } | undefined)?.responses;
      if (responses && !responses.default) responses.default = error;
    }
  }
}

/**
 * The HTTP rules every service shares (spec §4 conventions, §7, §8): one error
 * shape, 1 MB bodies, JSON-only bodies unless a route opts in to another type,
 * no characters Postgres refuses and at most 64 levels of JSON nesting,
 * `{ error: 'Not found' }` for unknown routes, security headers, request ids,
 * rate limiting, and an OpenAPI document built from the route schemas.
 */
async function sharedHttp(app: FastifyInstance, opts: SharedHttpOptions): Promise<void> {
  app.decorate('counters', opts.counters);
  app.decorate('rateLimit', (rule: RateLimitRule) => createRateLimitHook(opts.counters, rule));

  // Postgres refuses U+0000 in text, so a NUL that reached a query would be a 500. `%00` is the only way a URL can
  // carry one (Node refuses raw control bytes in the request line), and the raw URL covers the path, its parameters
  // and the query string before anything decodes them. (Half a surrogate pair cannot come this way: percent-encoded,
  // it is invalid UTF-8, refused in a path and left undecoded in a query.) Routes that read their body raw (signed
  // webhooks) only get this check here: their bytes must stay exactly as signed, and they apply `checkJsonText`.
  app.addHook('onRequest', (request, _reply, done) => {
    done(request.url.includes('%00') ? new DomainError('INVALID_CHARACTERS') : undefined);
  });

  // JSON only: a text/plain body must not reach a JSON route as a string.
  app.removeContentTypeParser('text/plain');
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // An empty body with a JSON content type means "no body", as clients often send it.
    if (body === '' || body === undefined) return done(null, undefined);
    const text = body as string;
    // Before parsing: the prototype scan, validation and relaying (JSON.stringify) all recurse.
    if (jsonNestsDeeperThan(text)) return done(new DomainError('NESTED_TOO_DEEPLY'), undefined);
    parseJson(request, text, (err, value) => {
      // Only valid JSON is judged for its characters, so malformed JSON keeps the route's own message.
      if (!err && jsonHasInvalidCharacters(text)) return done(new DomainError('INVALID_CHARACTERS'), undefined);
      done(err, value);
    });
  });

  // Security headers and the request id in one hook: helmet's headers do not depend on the request, so they are
  // computed once here rather than by helmet's middleware on every request.
  const securityHeaders = staticSecurityHeaders(
    opts.upgradeInsecureRequests === false ? { contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } } : {},
  );
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(securityHeaders);
    reply.header('x-request-id', request.id);
    done();
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: opts.openapi.title, description: opts.openapi.description, version: opts.openapi.version ?? '1.0.0' },
    },
    transformObject: (document) => {
      // Always OpenAPI 3 here (`openapi` above), never Swagger 2.
      if (!('openapiObject' in document)) return document.swaggerObject;
      addErrorAnswers(document.openapiObject as OpenApiDocument);
      return document.openapiObject;
    },
  });
  app.get(opts.openapi.path, { schema: { hide: true } }, async () => app.swagger());

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const [status, body] = errorBody(error, request);
    // `error` (with the stack) is for our faults: an unexpected error, or a 500. What the caller or the set-up caused (a
    // refused input, a gateway refusing a bad cron job, payments not configured: a catalogued error that is not a 500)
    // is a `warn`, without a stack. A 404 is in the request line already.
    if (status === 500 || (status > 500 && !isPublicError(error))) request.log.error({ err: error }, 'request failed');
    else if (status !== 404) request.log.warn({ status, error: body.error }, 'request refused');
    // Error bodies are always `{ error, … }`: never run them through a route's response schema for that status.
    return reply.code(status).type('application/json; charset=utf-8').serializer(JSON.stringify).send(body);
  });

  app.setNotFoundHandler(notFoundHandler);
}

/**
 * `{ "error": "Not found" }`. A prefixed scope that sets it again (with
 * `setNotFoundHandler`) makes unknown paths there pass through that scope's
 * hooks, so probing unknown URLs counts against its rate limits.
 */
export async function notFoundHandler(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  await reply.code(404).send({ error: 'Not found' });
}

export const sharedHttpPlugin = fp(sharedHttp, { name: 'shared-http', fastify: '5.x' });
