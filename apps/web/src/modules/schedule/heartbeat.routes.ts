import { type App, DomainError } from '@aop/core';
import type { GatewayConnection } from '@aop/gateway-client';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireUser } from '../../platform/http/auth.js';
import { gatewayFailureMessage } from './cron-jobs.service.js';
import { Heartbeat, HeartbeatWrite } from './schedule.schemas.js';
import {
  DEFAULT_FREQUENCY,
  FREQUENCIES,
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
import { type GatewayTarget, resolveGateway, withGateway } from '../../platform/clients/user-gateway.js';

const AGENT_ID_MAX = 200;
const AGENT_ID_REQUIRED = 'agentId required';

const HeartbeatBody = Type.Object({
  agentId: Type.Optional(Type.Unknown()),
  frequency: Type.Optional(Type.Unknown()),
  enabled: Type.Optional(Type.Unknown()),
});

/** absent, null or '' → undefined; a non-string → 400. */
function optionalAgentId(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || value.trim() === '' || value.length > AGENT_ID_MAX)
    throw new DomainError('FIELD_NOT_STRING', { field: 'agentId' });
  return value.trim();
}

/** Spec §4.10 heartbeat: the platform's heartbeat job on the caller's gateway, else settings kept in the database. */
export async function heartbeatRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const deps = { db: app.db, backend: app.backend, config };

  /**
   * Runs `fn` against the gateway that holds `agentId`'s heartbeat. Null when there is none or the call failed: the
   * caller then uses the database, as the spec says, and the reason is logged.
   */
  async function onGateway<T>(
    request: FastifyRequest,
    user: AuthUser,
    agentId: string | undefined,
    fn: (conn: GatewayConnection, target: GatewayTarget) => Promise<T>,
  ): Promise<T | null> {
    try {
      const target = await resolveGateway(deps, user);
      // The user's own gateway holds only its agent's heartbeat; another of their agents has only database settings.
      if (!servesAgent(target, agentId)) return null;
      return await withGateway(target, config.gateway.requestTimeoutMs, (conn) => fn(conn, target));
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
      const job = await onGateway(request, user, agentId, (conn, target) => findHeartbeatJob(conn, target));
      if (job) return { source: 'gateway' as const, ...heartbeatView(job) };
      if (!agentId) {
        return { source: 'db' as const, enabled: false, message: 'No heartbeat job on the gateway; pass agentId to read saved settings' };
      }
      const row = await findHeartbeatSettings(app.db, user.id, agentId);
      if (row) return { source: 'db' as const, enabled: row.enabled, frequency: row.frequency };
      return {
        source: 'db' as const,
        enabled: true,
        frequency: DEFAULT_FREQUENCY,
        message: 'No heartbeat settings saved for this agent; showing the defaults',
      };
    },
  );

  /** PUT, and the deprecated POST. */
  async function write(request: FastifyRequest) {
    const user = await requireUser(request);
    const body: Record<string, unknown> = typeof request.body === 'object' && request.body !== null ? { ...request.body } : {};
    if (body.frequency !== undefined && (typeof body.frequency !== 'string' || !Object.hasOwn(FREQUENCIES, body.frequency))) {
      throw new DomainError('INVALID_FREQUENCY', { allowed: Object.keys(FREQUENCIES).join(', ') });
    }
    const frequency = body.frequency as string | undefined;
    if (body.enabled !== undefined && typeof body.enabled !== 'boolean') throw new DomainError('FIELD_NOT_BOOLEAN', { field: 'enabled' });
    const enabled = typeof body.enabled === 'boolean' ? body.enabled : true;
    const agentId = optionalAgentId(body.agentId);

    const written = await onGateway(request, user, agentId, (conn, target) => upsertHeartbeatJob(conn, target, { enabled, frequency }));
    if (written) return { success: true as const, source: 'gateway' as const, enabled: written.enabled, frequency: written.frequency };

    if (!agentId) throw new DomainError('AGENT_ID_REQUIRED');
    const saved = await saveHeartbeatSettings(app.db, user.id, agentId, { enabled, frequency });
    return { success: true as const, source: 'db' as const, enabled: saved.enabled, frequency: saved.frequency };
  }

  const writeOptions = { schema: { tags: ['heartbeat'], body: HeartbeatBody, response: { 200: HeartbeatWrite } } };
  app.put('/api/heartbeat', writeOptions, write);
  app.post(
    '/api/heartbeat',
    { schema: { ...writeOptions.schema, deprecated: true, description: 'Deprecated: use PUT.' } },
    async (request, reply: FastifyReply) => {
      reply.header('deprecation', 'true');
      return write(request);
    },
  );

  app.delete(
    '/api/heartbeat',
    {
      config: { invalidBodyMessage: AGENT_ID_REQUIRED },
      schema: {
        tags: ['heartbeat'],
        deprecated: true,
        description: 'Deprecated: use PUT with `enabled: false`.',
        body: HeartbeatBody,
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
    },
    async (request, reply) => {
      reply.header('deprecation', 'true');
      const user = await requireUser(request);
      const raw = request.body?.agentId;
      if (typeof raw !== 'string' || raw.trim() === '') throw new DomainError('AGENT_ID_REQUIRED');
      const agentId = optionalAgentId(raw) as string;
      // The stored settings, and the gateway job when the gateway holds this agent's heartbeat and answers.
      await deleteHeartbeatSettings(app.db, user.id, agentId);
      await onGateway(request, user, agentId, (conn, target) => removeHeartbeatJob(conn, target));
      return { success: true as const };
    },
  );
}
