import { type ErrorCode, RateLimitRefusal, errorResponse, isPublicError } from '@aop/core';
import type { FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import { CompatRefusal, type CompatRefusalKind } from './openai-compat.service.js';
import type { OpenAiErrorBody } from './openai-compat.schemas.js';

/**
 * `/v1/*` answers every refusal in OpenAI's error shape, `{ error: { message, type, param, code } }`, so stock clients
 * raise their own typed errors (401 AuthenticationError, 404 NotFoundError, 429 RateLimitError …). The platform's
 * errors keep their messages (the chat's words); this file gives each its OpenAI status, type and code. An agent that
 * is not answering is 503 and a turn that outlasts its bound 504: both what OpenAI clients wait on and retry.
 */

type OpenAiError = OpenAiErrorBody['error'];

export class OpenAiRefusal extends Error {
  override readonly name = 'OpenAiRefusal';
  constructor(
    readonly status: number,
    readonly body: OpenAiError,
  ) {
    super(body.message);
  }
}

const INVALID = 'invalid_request_error';
const SERVER = 'server_error';

const refusal = (status: number, type: string, code: string | null, message: string, param: string | null = null) =>
  new OpenAiRefusal(status, { message, type, param, code });

/** No `Authorization: Bearer sk_…` (a dashboard session does not count: this API is called with a key). */
export const missingApiKey = () =>
  refusal(
    401,
    INVALID,
    'invalid_api_key',
    "You didn't provide an API key: send Authorization: Bearer sk_… (create one in the dashboard's settings)",
  );
/** A key that is not one of ours, or was deleted. */
export const incorrectApiKey = () => refusal(401, INVALID, 'invalid_api_key', 'Incorrect API key provided');
/** A path under /v1 this service does not serve. */
export const unknownUrl = (method: string, path: string) => refusal(404, INVALID, 'unknown_url', `Unknown request URL: ${method} ${path}`);

const COMPAT: Record<CompatRefusalKind, { status: number }> = {
  model_not_found: { status: 404 },
  model_ambiguous: { status: 400 },
  no_user_message: { status: 400 },
};

/** The chat's errors (agent-chat.service.ts, user-gateway.ts) in OpenAI's terms; their messages are kept. */
const PLATFORM: Partial<Record<ErrorCode, { status: number; code: string }>> = {
  // The agent went away while the request waited for it.
  AGENT_NOT_FOUND: { status: 404, code: 'model_not_found' },
  AGENT_NOT_DEPLOYED: { status: 503, code: 'agent_not_deployed' },
  AGENT_NOT_LIVE: { status: 503, code: 'agent_not_live' },
  AGENT_STILL_STARTING: { status: 503, code: 'agent_starting' },
  AGENT_GATEWAY_UNREACHABLE: { status: 503, code: 'agent_unreachable' },
  NO_GATEWAY_TOKEN_AVAILABLE: { status: 503, code: 'agent_unavailable' },
  BACKEND_UNREACHABLE: { status: 503, code: 'service_unavailable' },
  AGENT_GATEWAY_TIMED_OUT: { status: 504, code: 'timeout' },
  AGENT_GATEWAY_FAILED: { status: 502, code: 'agent_failed' },
  AGENT_PROVIDER_KEY_MISSING: { status: 502, code: 'provider_key_missing' },
  AGENT_PROVIDER_KEY_REFUSED: { status: 502, code: 'provider_key_refused' },
};

/** Fastify's codes for a body that is not JSON. */
const NOT_JSON = new Set(['FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY', 'FST_ERR_CTP_INVALID_CONTENT_LENGTH']);

/** `/messages/0/content` → `messages[0].content`, as OpenAI names a parameter. */
const paramOf = (instancePath: string, missing?: string) => {
  const segments = instancePath.split('/').filter(Boolean);
  if (missing) segments.push(missing);
  return segments.reduce((name, segment) => (/^\d+$/.test(segment) ? `${name}[${segment}]` : name ? `${name}.${segment}` : segment), '');
};

/** The schema node a JSON pointer (`#/properties/messages/items/…`) leads to. */
function schemaAt(root: unknown, pointer: string): Record<string, unknown> | undefined {
  let node: unknown = root;
  for (const segment of pointer.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    if (!node || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node && typeof node === 'object' ? (node as Record<string, unknown>) : undefined;
}

/**
 * A refused body or header in words naming the parameter. Ajv stops at the first failing value and lists a failing
 * `anyOf`'s branches before it: such a union is described by its `description` when it has one (the message roles,
 * content), else by its first branch's error (`nullable(x)`: what was wrong with the value as `x`).
 */
function validationRefusal(schema: unknown, errors: readonly FastifySchemaValidationError[]): OpenAiRefusal {
  const last = errors.at(-1) as (FastifySchemaValidationError & { schemaPath: string }) | undefined;
  if (!last) return refusal(400, INVALID, null, 'Invalid request');
  const missing = last.keyword === 'required' ? (last.params as { missingProperty?: string }).missingProperty : undefined;
  const param = paramOf(last.instancePath, missing) || null;
  if (missing) return refusal(400, INVALID, null, `Missing required parameter: '${param}'`, param);
  let words: string;
  if (last.keyword === 'anyOf') {
    const described = schemaAt(schema, last.schemaPath.replace(/\/anyOf$/, ''))?.description;
    words = typeof described === 'string' ? `must be ${described}` : (errors[0]?.message ?? 'is not valid');
  } else {
    const described = schemaAt(schema, last.schemaPath.replace(/\/[^/]*$/, ''))?.description;
    words = `${last.message ?? 'is not valid'}${typeof described === 'string' ? ` (${described})` : ''}`;
  }
  return refusal(400, INVALID, null, param ? `Invalid '${param}': ${words}` : `Invalid request body: ${words}`, param);
}

/** Any error of a `/v1` route as OpenAI's status and body; null for our own faults (500). */
export function openAiRefusalOf(error: FastifyError | Error, request: FastifyRequest): OpenAiRefusal | null {
  if (error instanceof OpenAiRefusal) return error;
  if (error instanceof CompatRefusal) return refusal(COMPAT[error.kind].status, INVALID, error.kind, error.message, error.param);
  if (error instanceof RateLimitRefusal) return refusal(429, 'requests', 'rate_limit_exceeded', error.message);
  const fastify = error as FastifyError;
  if (fastify.validation) {
    const part = fastify.validationContext === 'headers' ? 'headers' : 'body';
    return validationRefusal(request.routeOptions.schema?.[part], fastify.validation);
  }
  if ((fastify.code && NOT_JSON.has(fastify.code)) || error instanceof SyntaxError)
    return refusal(400, INVALID, null, 'We could not parse the JSON body of your request');
  if (fastify.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return refusal(415, INVALID, null, 'The body must be JSON (Content-Type: application/json)');
  if (fastify.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return refusal(413, INVALID, null, 'The request body is too large (1 MB at most)');
  if (isPublicError(error)) {
    const { status, body } = errorResponse(error);
    const message = String(body.error);
    const known = 'code' in error ? PLATFORM[error.code as ErrorCode] : undefined;
    if (known) return refusal(known.status, known.status < 500 ? INVALID : SERVER, known.code, message);
    return refusal(status, status < 500 ? INVALID : SERVER, null, message);
  }
  // Fastify's own refusals of a request (a header too large, a bad content length …).
  if (fastify.statusCode && fastify.statusCode >= 400 && fastify.statusCode < 500)
    return refusal(fastify.statusCode, INVALID, null, error.message);
  return null;
}

/** The error handler of the `/v1` routes: OpenAI's shape for every answer that is not a success. */
export function openAiErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const known = openAiRefusalOf(error, request);
  const status = known?.status ?? 500;
  const body: OpenAiErrorBody = { error: known?.body ?? { message: 'Internal server error', type: SERVER, param: null, code: null } };
  // As the shared handler: a stack for our faults only; what the caller or the agent caused is a warning.
  if (!known) request.log.error({ err: error }, 'request failed');
  else if (status !== 404) request.log.warn({ status, error: body.error.message }, 'request refused');
  return reply.code(status).type('application/json; charset=utf-8').serializer(JSON.stringify).send(body);
}

/** The same body for a failure after a streamed answer began (an `error` event), logged the same way. */
export function streamedRefusal(error: unknown, request: FastifyRequest): OpenAiErrorBody {
  const known = error instanceof Error ? openAiRefusalOf(error, request) : null;
  if (!known) request.log.error({ err: error }, 'streamed completion failed');
  else request.log.warn({ status: known.status, error: known.body.message }, 'streamed completion failed');
  return { error: known?.body ?? { message: 'Internal server error', type: SERVER, param: null, code: null } };
}
