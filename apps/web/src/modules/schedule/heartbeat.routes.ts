import { type App, DomainError, isDomainError } from '@aop/core';
import type { GatewayConnection } from '@aop/gateway-client';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebContext } from '../../platform/context.js';
import { requireUser, userBeforeBody } from '../../platform/http/auth.js';
import { gatewayFailureMessage } from './cron-jobs.service.js';
import { DeleteHeartbeatBody, Heartbeat, HeartbeatWrite, WriteHeartbeatBody } from './schedule.schemas.js';
import {
  DEFAULT_FREQUENCY,
  deleteHeartbeatSettings,
  findHeartbeatJob,
  findHeartbeatSettings,
  heartbeatView,
  removeHeartbeatJob,
  saveHeartbeatSettings,
  servesAgent,
  upsertHeartbeatJob,
} from './heartbeat.service.js';
import type { AuthUser } from '../../platform/sessions.js';
import { type GatewayTarget, ownAgentGateway, resolveGateway, withGateway } from '../../platform/clients/user-gateway.js';
import { againOnceLive } from '../agents/lifecycle.service.js';

/** The agent as the schema let it through, trimmed; absent, null or '' is none. */
const trimmedAgentId = (value: string | null | undefined): string | undefined => value?.trim() || undefined;

/**
 * The deprecated routes say so on every answer their handler gave, which was every answer to an object body: the
 * header goes on before the body schema and authentication, which may refuse one now.
 */
const deprecatedObjectBody = async (request: FastifyRequest, reply: FastifyReply) => {
  const { body } = request;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) reply.header('deprecation', 'true');
  await userBeforeBody(request);
};

/** Spec §4.10 heartbeat: the platform's heartbeat job on the caller's gateway, else settings kept in the database. */
export async function heartbeatRoutes(app: App, { config, afterStart }: Pick<WebContext, 'config' | 'afterStart'>): Promise<void> {
  const deps = { db: app.db, backend: app.backend, config, clock: app.clock, afterStart };

  /**
   * Runs `fn` against the gateway that holds `agentId`'s heartbeat. Null when there is none or the call failed: the
   * caller then uses the database, as the spec says, and the reason is logged. A change (`wake`) to a sleeping agent's
   * heartbeat wakes it and waits for it, like a message, so the change is made where it runs; reading it does not.
   * `notStopped`: a stopped agent's gateway is not used even where it answers (it runs on for the customer's other
   * agents, issue #20), as when it is down: its jobs are quieted there until it is started.
   */
  async function onGateway<T>(
    request: FastifyRequest,
    user: AuthUser,
    agentId: string | undefined,
    fn: (conn: GatewayConnection, target: GatewayTarget) => Promise<T>,
    options: { wake?: boolean; notStopped?: boolean } = {},
  ): Promise<T | null> {
    try {
      // A named agent of the caller with an address: its own gateway, whichever agent is primary (issue #19).
      // Otherwise the spec's gateway, which holds only its own agent's heartbeat (or, shared, the caller's); an agent
      // it does not serve has only database settings.
      const named = agentId
        ? await ownAgentGateway(deps, user, agentId).catch((err: unknown) => {
            if (isDomainError(err)) return null;
            throw err;
          })
        : null;
      const target = named ?? (await resolveGateway(deps, user));
      if (!named && !servesAgent(target, agentId)) return null;
      if (options.notStopped && target.stopped) {
        request.log.info({ agentId: target.agentId }, 'heartbeat: the agent is stopped, its gateway not used');
        return null;
      }
      const call = () => withGateway(target, config.gateway.requestTimeoutMs, (conn) => fn(conn, target));
      return await (options.wake ? againOnceLive(deps, user, target.agentId, config.gateway.startWaitMs, call) : call());
    } catch (err) {
      const reason = gatewayFailureMessage(err);
      if (reason === null) throw err;
      request.log.info({ reason }, 'heartbeat: gateway not used');
      return null;
    }
  }

  app.get(
    '/api/heartbeat',
    {
      schema: {
        tags: ['heartbeat'],
        querystring: Type.Object({ agentId: Type.Optional(Type.String()) }),
        response: {
          200: Heartbeat,
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const agentId = request.query.agentId?.trim() || undefined;
      const saved = agentId ? await findHeartbeatSettings(app.db, user.id, agentId) : null;
      // A stopped agent's settings saved since it stopped are what its start puts on the gateway: shown before the
      // gateway's job, which its stop disabled.
      const job = await onGateway(request, user, agentId, (conn, target) => findHeartbeatJob(conn, target), {
        notStopped: saved !== null,
      });
      if (job) return { source: 'gateway' as const, ...heartbeatView(job) };
      if (!agentId) {
        return {
          source: 'db' as const,
          enabled: false,
          message:
            'No platform heartbeat job on the gateway (OpenClaw’s own heartbeat is listed with the cron jobs); pass agentId to read saved settings',
        };
      }
      if (saved) return { source: 'db' as const, enabled: saved.enabled, frequency: saved.frequency };
      return {
        source: 'db' as const,
        enabled: true,
        frequency: DEFAULT_FREQUENCY,
        message: 'No heartbeat settings saved for this agent; showing the defaults',
      };
    },
  );

  /** PUT, and the deprecated POST. */
  async function write(request: FastifyRequest, body: WriteHeartbeatBody) {
    const user = await requireUser(request);
    const { frequency } = body;
    const enabled = body.enabled ?? true;
    const agentId = trimmedAgentId(body.agentId);

    const written = await onGateway(
      request,
      user,
      agentId,
      async (conn, target) => ({ job: await upsertHeartbeatJob(conn, target, { enabled, frequency }), agentId: agentId ?? target.agentId }),
      // Saved for its start (`AfterStart`), as when its gateway is down: a job changed there now would run while stopped.
      { wake: true, notStopped: true },
    );
    if (written) {
      // The gateway holds the setting now. A copy saved while its gateway was down would otherwise be read in its place
      // whenever the gateway is down again, and be put back over it when the agent is next started (`applySavedHeartbeat`).
      if (written.agentId) await deleteHeartbeatSettings(app.db, user.id, written.agentId);
      return { success: true as const, source: 'gateway' as const, enabled: written.job.enabled, frequency: written.job.frequency };
    }

    if (!agentId) throw new DomainError('AGENT_ID_REQUIRED');
    const saved = await saveHeartbeatSettings(app.db, user.id, agentId, { enabled, frequency });
    // An agent still on its way up when the wait ran out gets them once it is live; a stopped one at its start.
    afterStart.follow(user, agentId, null, request.log);
    return { success: true as const, source: 'db' as const, enabled: saved.enabled, frequency: saved.frequency };
  }

  const writeSchema = { tags: ['heartbeat'], body: WriteHeartbeatBody, response: { 200: HeartbeatWrite } };
  app.put('/api/heartbeat', { preValidation: userBeforeBody, schema: writeSchema }, async (request) => write(request, request.body));
  app.post(
    '/api/heartbeat',
    { preValidation: deprecatedObjectBody, schema: { ...writeSchema, deprecated: true, description: 'Deprecated: use PUT.' } },
    async (request, reply) => {
      reply.header('deprecation', 'true');
      return write(request, request.body);
    },
  );

  app.delete(
    '/api/heartbeat',
    {
      preValidation: deprecatedObjectBody,
      config: { invalidBody: 'AGENT_ID_REQUIRED' },
      schema: {
        tags: ['heartbeat'],
        deprecated: true,
        description: 'Deprecated: use PUT with `enabled: false`.',
        body: DeleteHeartbeatBody,
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
    },
    async (request, reply) => {
      reply.header('deprecation', 'true');
      const user = await requireUser(request);
      const agentId = trimmedAgentId(request.body.agentId);
      // The schema refused a blank agentId; this is for the type.
      if (!agentId) throw new DomainError('AGENT_ID_REQUIRED');
      // The stored settings, and the gateway job when the gateway holds this agent's heartbeat and answers.
      await deleteHeartbeatSettings(app.db, user.id, agentId);
      await onGateway(request, user, agentId, (conn, target) => removeHeartbeatJob(conn, target), { wake: true });
      return { success: true as const };
    },
  );
}
