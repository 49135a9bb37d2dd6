import { type App, DomainError, errorResponse, HttpError, isPublicError } from '@aop/core';
import { writeAudit } from '@aop/db';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import type { AuthUser } from '../../platform/sessions.js';
import {
  DEFAULT_AGENT_ID,
  FALLBACK_ENDPOINTS,
  FALLBACK_FITNESS,
  type PaymentInput,
  type PaymentOrder,
  agentIdOf,
  callColony,
  checkPayment,
  endpointsFrom,
  fallbackPricing,
  fitnessFrom,
  isPlainObject,
  pricingFrom,
  publicGatewayUrl,
  upstreamDetail,
} from './x402.service.js';
import { X402Body } from './x402.schemas.js';

/** Fastify's codes for a body that is not the JSON object this route reads: there is no action to read in it. */
const BAD_BODY_CODES = new Set([
  'FST_ERR_CTP_INVALID_MEDIA_TYPE',
  'FST_ERR_CTP_EMPTY_JSON_BODY',
  'FST_ERR_CTP_INVALID_JSON_BODY',
  'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
]);

/**
 * Every error of this area in the x402 shape `{ success: false, error }` (spec §7). Thrown on to the shared
 * handler, which writes it. Anything unexpected is the spec's 500 `x402 gateway error`, logged here with its cause.
 */
function asX402Error(error: FastifyError, request: FastifyRequest): HttpError {
  const { status, body } = errorResponse(isPublicError(error) ? error : x402Failure(error, request));
  return new HttpError(status, String(body.error), { ...body, success: false });
}

function x402Failure(error: FastifyError, request: FastifyRequest): DomainError {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new DomainError('REQUEST_BODY_TOO_LARGE');
  if ((error.code && BAD_BODY_CODES.has(error.code)) || error instanceof SyntaxError || error.validation) {
    return new DomainError('X402_INVALID_ACTION');
  }
  request.log.error({ err: error }, 'x402 request failed');
  return new DomainError('X402_GATEWAY_ERROR');
}

/** Writes `body` as JSON whatever it is (an upstream answer may be any JSON value). */
const sendJson = (reply: FastifyReply, status: number, body: unknown) =>
  reply.code(status).type('application/json; charset=utf-8').serializer(JSON.stringify).send(body);

/**
 * `join-colony` and `pay` need a signed-in session with both a user id and an email (spec §4.5). An API key is not
 * a session: a leaked `sk_` key must not move money.
 */
async function requireX402User(request: FastifyRequest): Promise<AuthUser> {
  const user = await request.currentUser();
  if (user?.via !== 'session' || !user.id || !user.email) throw new DomainError('AUTHENTICATION_REQUIRED');
  return user;
}

/** An audit value: short text, a finite number, else null (the audit log never holds a megabyte of junk). */
function auditValue(value: unknown): string | number | null {
  if (typeof value === 'string') return value.slice(0, 200);
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  return null;
}

/**
 * Spec §4.5 x402 payment gateway: `GET /api/x402` is the upstream colony gateway's health; `POST /api/x402` takes
 * an `action`. `fitness`, `pricing` and `endpoints` are public and answer the spec's fallbacks when the upstream has
 * no usable answer; `join-colony` and `pay` need a session. Every payment attempt after authentication is audited.
 */
export async function x402Routes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const { timeoutMs, joinTimeoutMs } = config.x402;

  app.setErrorHandler((error: FastifyError, request) => {
    throw asX402Error(error, request);
  });

  app.get(
    '/api/x402',
    {
      schema: {
        tags: ['x402'],
        description:
          'Health of the upstream colony gateway (its `GET /health`): 200 `{ gateway, status, ...upstream fields }`; ' +
          "503 `{ success: false, gateway, status: 'unreachable', error }` when it is unreachable, unhealthy or unset.",
      },
    },
    async (request, reply) => {
      const gateway = publicGatewayUrl(config);
      const result = await callColony(config, { method: 'GET', path: '/health', timeoutMs });
      if (result.reached && result.ok && result.json && isPlainObject(result.body)) {
        const { gateway: _ignored, status, ...fields } = result.body;
        const healthStatus = typeof status === 'string' && status.trim() !== '' ? status : 'healthy';
        return sendJson(reply, 200, { gateway, status: healthStatus, ...fields });
      }
      const error = !result.reached
        ? result.reason
        : !result.ok
          ? `upstream answered HTTP ${result.status}`
          : 'upstream health answer is not a JSON object';
      request.log.warn({ reason: error }, 'x402 gateway health check failed');
      return sendJson(reply, 503, { success: false, gateway, status: 'unreachable', error });
    },
  );

  /** The upstream's fitness for `agentId`, else the spec's fallback. */
  async function fitness(request: FastifyRequest, agentId: string) {
    const result = await callColony(config, { method: 'GET', path: `/gateway/fitness/${encodeURIComponent(agentId)}`, timeoutMs });
    const answer = result.reached && result.ok && result.json ? fitnessFrom(result.body) : undefined;
    if (answer) return answer;
    request.log.warn({ reason: fallbackReason(result) }, 'x402 fitness: fallback answer');
    return { ...FALLBACK_FITNESS };
  }

  async function pricing(request: FastifyRequest, agentId: string) {
    const result = await callColony(config, { method: 'GET', path: `/gateway/pricing/${encodeURIComponent(agentId)}`, timeoutMs });
    const answer = result.reached && result.ok && result.json ? pricingFrom(agentId, result.body) : undefined;
    if (answer) return answer;
    request.log.warn({ reason: fallbackReason(result) }, 'x402 pricing: fallback answer');
    return fallbackPricing(agentId);
  }

  async function endpoints(request: FastifyRequest) {
    const result = await callColony(config, { method: 'GET', path: '/gateway/endpoints', timeoutMs });
    const answer = result.reached && result.ok && result.json ? endpointsFrom(result.body) : undefined;
    if (answer) return answer;
    request.log.warn({ reason: fallbackReason(result) }, 'x402 endpoints: fallback answer');
    return FALLBACK_ENDPOINTS;
  }

  /** Spec §4.5 `join-colony`: the upstream's answer on 200; 402 / 502 `Colony join failed: …`; 503 unreachable. */
  async function joinColony(request: FastifyRequest, reply: FastifyReply, user: AuthUser, body: X402Body) {
    const agentId = agentIdOf(body.agentId);
    if (!agentId) throw new DomainError('AGENT_ID_REQUIRED');
    // The wallet is the upstream's to judge (the spec names no local check); only a string is forwarded.
    const walletAddress = typeof body.walletAddress === 'string' ? body.walletAddress : undefined;
    const json = { agentId, ...(walletAddress !== undefined ? { walletAddress } : {}), userId: user.id };
    const result = await callColony(config, { method: 'POST', path: '/gateway/colony/join', json, timeoutMs: joinTimeoutMs });
    if (!result.reached) {
      request.log.warn({ reason: result.reason }, 'x402 colony join: gateway unreachable');
      throw new DomainError('COLONY_UNREACHABLE');
    }
    if (result.ok && result.json) return sendJson(reply, 200, result.body);
    const detail = result.ok ? 'Invalid response' : upstreamDetail(result.status, result.json ? result.body : undefined);
    request.log.warn({ upstreamStatus: result.status }, 'x402 colony join failed');
    throw new DomainError(result.status === 402 ? 'COLONY_JOIN_REFUSED' : 'COLONY_JOIN_FAILED', { status: result.status, detail });
  }

  /**
   * Spec §4.5 `pay`. Every attempt is audited as `x402.pay` before anything else happens: a refused one with the
   * reason, a valid one before it is forwarded (if that row cannot be written, nothing is paid). The upstream's
   * verdict follows as `x402.pay.result`.
   */
  async function pay(request: FastifyRequest, reply: FastifyReply, user: AuthUser, body: PaymentInput) {
    const audit = (action: string, metadata: Record<string, unknown>) =>
      app.db.withUser(user.id, (trx) =>
        writeAudit(trx, {
          userId: user.id,
          action,
          target: typeof body.agentId === 'string' ? body.agentId.slice(0, 200) : null,
          ip: request.ip,
          metadata: {
            email: user.email,
            agentId: auditValue(body.agentId),
            amount: auditValue(body.amount),
            currency: auditValue(body.currency),
            recipient: auditValue(body.recipient),
            method: auditValue(body.method),
            endpoint: auditValue(body.endpoint),
            ...metadata,
          },
        }),
      );

    let order: PaymentOrder;
    try {
      order = checkPayment(body);
    } catch (err) {
      if (isPublicError(err)) await audit('x402.pay', { outcome: 'refused', reason: err.message });
      throw err;
    }
    await audit('x402.pay', { ...order, endpoint: order.endpoint ?? null, outcome: 'forwarded' });

    const result = await callColony(config, { method: 'POST', path: '/gateway/pay', json: { ...order, userId: user.id }, timeoutMs });
    const recordResult = async (outcome: string, extra: Record<string, unknown> = {}) => {
      // The payment already went out: a failed audit write is logged, never turned into a different answer.
      await audit('x402.pay.result', { ...order, endpoint: order.endpoint ?? null, outcome, ...extra }).catch((err: unknown) =>
        request.log.error({ err }, 'x402 pay: audit of the result failed'),
      );
    };

    if (!result.reached) {
      request.log.warn({ reason: result.reason }, 'x402 pay: gateway unreachable');
      await recordResult('failed', { reason: result.reason });
      throw new DomainError('X402_GATEWAY_ERROR');
    }
    if (result.json && result.ok) {
      await recordResult('accepted', { upstreamStatus: result.status });
      return sendJson(reply, 200, result.body);
    }
    if (result.json && result.status >= 400 && result.status < 500) {
      // The upstream refused this payment (402 and its challenge included): its answer, in the x402 error shape.
      await recordResult('rejected', { upstreamStatus: result.status });
      const fields = isPlainObject(result.body) ? result.body : {};
      return sendJson(reply, result.status, { ...fields, success: false, error: upstreamDetail(result.status, result.body) });
    }
    request.log.warn({ upstreamStatus: result.status, json: result.json }, 'x402 pay: unusable upstream answer');
    await recordResult('failed', { upstreamStatus: result.status });
    throw new DomainError('X402_GATEWAY_ERROR');
  }

  app.post(
    '/api/x402',
    {
      schema: {
        tags: ['x402'],
        description:
          'Actions: `join-colony` and `pay` (session with user id and email), `fitness`, `pricing`, `endpoints` (public). ' +
          'Errors are `{ success: false, error }`.',
        body: X402Body,
      },
    },
    async (request, reply) => {
      const body = request.body;
      switch (body.action) {
        case 'endpoints':
          return sendJson(reply, 200, await endpoints(request));
        case 'fitness':
          return sendJson(reply, 200, await fitness(request, agentIdOf(body.agentId) ?? DEFAULT_AGENT_ID));
        case 'pricing':
          return sendJson(reply, 200, await pricing(request, agentIdOf(body.agentId) ?? DEFAULT_AGENT_ID));
        case 'join-colony':
          return joinColony(request, reply, await requireX402User(request), body);
        case 'pay':
          return pay(request, reply, await requireX402User(request), body);
      }
    },
  );
}

/** Why a public action fell back, for the log: never the upstream's content. */
function fallbackReason(result: Awaited<ReturnType<typeof callColony>>): string {
  if (!result.reached) return result.reason;
  if (!result.ok) return `upstream answered HTTP ${result.status}`;
  return result.json ? 'upstream answer has the wrong shape' : 'upstream answer is not JSON';
}
