import { type App, DomainError, isPublicError } from '@aop/core';
import { type ChatEventPayload, GatewayError, type GatewayConnection, type GatewayEventFrame } from '@aop/gateway-client';
import type { AgentHost } from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey, verifyUserContext } from '../../plugins/auth.js';
import { TRANSPORT_CODES, openAgentControl } from '../../services/agent-control.js';
import { onHost, ownDeployment } from '../../services/agents.js';
import { RpcBody } from './schemas.js';

/**
 * Gateway methods the web service may call on a user's agent through the backend: what its routes use (cron jobs and
 * heartbeat, sessions, conversation history, device pairing, status, models and channels) and nothing that changes the
 * gateway's configuration, runs programs on it or manages tokens (`config.*`, `exec.*`, `device.token.*`, `update.*`).
 */
export const AGENT_RPC_METHODS: ReadonlySet<string> = new Set([
  'health',
  'status',
  'cron.list',
  'cron.get',
  'cron.status',
  'cron.runs',
  'cron.add',
  'cron.update',
  'cron.remove',
  'cron.run',
  'sessions.list',
  'sessions.create',
  'sessions.reset',
  'sessions.delete',
  'chat.history',
  'chat.send',
  'chat.abort',
  'device.pair.list',
  'device.pair.approve',
  'device.pair.reject',
  'device.pair.remove',
  'models.list',
  'channels.status',
  'agents.list',
]);

const DEFAULT_TIMEOUT_MS = 30_000;

/** `502` body when the gateway (or the way to it) failed: the web service rebuilds the `GatewayError` from it. */
interface GatewayFailure {
  error: string;
  gatewayError: { code: string; message: string; details?: unknown; retryable?: boolean };
}

function failure(err: GatewayError): GatewayFailure {
  const transport = TRANSPORT_CODES[err.code];
  return {
    error: 'Agent gateway failed',
    gatewayError: transport
      ? { code: err.code, message: transport, retryable: err.retryable }
      : {
          code: err.code,
          message: err.message,
          ...(err.details === undefined ? {} : { details: err.details }),
          ...(err.retryable ? { retryable: true } : {}),
        },
  };
}

/**
 * `POST /api/agents/:id/rpc` `{ method, params?, timeoutMs? }`: one gateway call on one of the caller's agents, made by
 * the backend with the credentials only it holds (issue #8 "Pairing"). A container or hosted gateway gives a remote
 * token-only connection no scopes; the backend connects with the platform device paired by the host, so the private
 * key never leaves it. 200 `{ payload }` (plus `events` for `chat.send`: the run's `chat` events up to its end, deltas
 * left out); 502 `{ error, gatewayError: { code, message, details? } }` when the gateway refused or could not be
 * reached; 400 bad body, 403 a method off the list, 404 not the caller's agent, 503 the agent is not running.
 */
export async function agentRpcRoutes(app: App, { config, host }: { config: BackendConfig; host: AgentHost }): Promise<void> {
  app.addHook('onRequest', requireInternalKey(config.internalApiKey));
  app.addHook('onRequest', verifyUserContext(config.userContextSecret));

  app.post(
    '/agents/:id/rpc',
    {
      schema: {
        tags: ['agents'],
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        body: RpcBody,
      },
      preValidation: callerBeforeObjectBody,
    },
    async (request, reply) => {
      const userId = callerId(request);
      const { method, params, timeoutMs: askedTimeout } = request.body;
      if (!AGENT_RPC_METHODS.has(method)) throw new DomainError('METHOD_NOT_ALLOWED', { method });
      const agentId = request.params.id;
      await app.db.withUser(userId, (trx) => ownDeployment(trx, agentId));

      const state = await onHost(() => host.status(agentId));
      if (!state.url || state.status !== 'running') throw new DomainError('AGENT_NOT_RUNNING_STATE', { status: state.status });
      const timeoutMs = askedTimeout ?? DEFAULT_TIMEOUT_MS;
      const deadline = performance.now() + timeoutMs;
      const url = `${state.url.replace(/^http/, 'ws')}/`;

      let conn: GatewayConnection;
      let platformDevice: string | undefined;
      try {
        ({ conn, platformDevice } = await openAgentControl(host, agentId, url, { deadline, log: request.log }));
      } catch (err) {
        if (isPublicError(err)) throw err;
        if (!(err instanceof GatewayError)) throw err;
        request.log.warn({ agentId, method, code: err.code }, 'agent rpc: gateway connection failed');
        return reply.code(502).send(failure(err));
      }
      try {
        const remaining = Math.max(1, Math.floor(deadline - performance.now()));
        if (method === 'chat.send') return await chatRun(conn, params ?? {}, remaining);
        // The platform's own device is not the user's to see or remove: it is how the platform controls the agent.
        const target = params?.deviceId;
        if (method === 'device.pair.remove' && platformDevice !== undefined && target === platformDevice) {
          throw new GatewayError('INVALID_REQUEST', 'unknown deviceId');
        }
        const payload = await conn.request(method, params ?? {}, { timeoutMs: remaining });
        return { payload: platformDevice && method === 'device.pair.list' ? withoutDevice(payload, platformDevice) : payload };
      } catch (err) {
        if (!(err instanceof GatewayError)) throw err;
        request.log.warn({ agentId, method, code: err.code }, 'agent rpc: gateway refused the call');
        return reply.code(502).send(failure(err));
      } finally {
        await conn.close();
      }
    },
  );
}

/** The caller, from the signed user context; agents always belong to a real user. */
function callerId(request: FastifyRequest): string {
  const id = request.userContext?.userId;
  if (!id || id === 'anonymous') throw new DomainError('USER_CONTEXT_REQUIRED');
  return id;
}

/**
 * The caller ahead of the body schema: an anonymous caller gets 401 whatever fields it sent, as when the handler
 * checked them. A body that is not a JSON object was refused (400) first, and still is.
 */
async function callerBeforeObjectBody(request: FastifyRequest): Promise<void> {
  const { body } = request;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) callerId(request);
}

/** `device.pair.list` without the platform's own device: users see and manage only theirs. */
function withoutDevice(payload: unknown, deviceId: string): unknown {
  if (typeof payload !== 'object' || payload === null) return payload;
  const list = payload as { pending?: unknown; paired?: unknown };
  const keep = (rows: unknown) =>
    Array.isArray(rows) ? rows.filter((row) => (row as { deviceId?: unknown } | null)?.deviceId !== deviceId) : rows;
  return { ...list, pending: keep(list.pending), paired: keep(list.paired) };
}

/**
 * `chat.send` and its run to the end: the `chat` events of that run (status and the final, error or aborted one;
 * deltas are left out, each carries the text so far) are collected and answered with the send's own payload, so the
 * web service's `chatSend` sees them as it would on its own socket.
 */
function chatRun(conn: GatewayConnection, params: unknown, timeoutMs: number): Promise<{ payload: unknown; events: GatewayEventFrame[] }> {
  return new Promise((resolve, reject) => {
    const events: GatewayEventFrame[] = [];
    const early: GatewayEventFrame[] = [];
    let sent: { runId?: unknown } | undefined;
    let done = false;
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      offChat();
      offClose();
      settle();
    };
    const keep = (frame: GatewayEventFrame) => {
      const p = frame.payload as ChatEventPayload;
      if (p?.runId !== sent?.runId || p.state === 'delta') return;
      events.push(frame);
      if (p.state === 'final' || p.state === 'error' || p.state === 'aborted') finish(() => resolve({ payload: sent, events }));
    };
    // Subscribed before sending: events of the run can arrive before the send's answer is handled.
    const offChat = conn.on('chat', (_payload, frame) => (sent === undefined ? early.push(frame) : keep(frame)));
    const offClose = conn.onClose((err) => finish(() => reject(err)));
    const timer = setTimeout(
      () => finish(() => reject(new GatewayError('TIMEOUT', `chat run did not finish within ${timeoutMs} ms`))),
      timeoutMs,
    );
    conn.request<{ runId?: unknown }>('chat.send', params, { timeoutMs }).then(
      (answer) => {
        sent = answer ?? {};
        for (const frame of early.splice(0)) keep(frame);
      },
      (err: unknown) => finish(() => reject(err)),
    );
  });
}
