import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireUser } from '../../platform/http/auth.js';
import { BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { backendCaller } from '../../platform/sessions.js';
import { findAgentUrl, findRuntimeInstanceId, setAgentStatus } from './agents.service.js';
import { InstanceStats } from './agents.schemas.js';
import { probeGateway } from '../../platform/clients/gateway-probe.js';

const ACTIONS = ['start', 'stop', 'restart', 'update', 'repair', 'reset-memory'] as const;
const FAILED = { success: false, status: 'error' } as const;

/** Spec §4.15: `POST /api/instance/:userId/{action}` and instance details, for the signed-in user's own agent. */
export async function instanceRoutes(app: App): Promise<void> {
  app.addHook('onRequest', app.rateLimit({ name: 'instance', max: 30, windowMs: 60_000, message: 'Too many requests' }));
  const params = Type.Object({ userId: Type.String({ maxLength: 100 }) });

  /** The caller's agent; only its owner may act on `/api/instance/:userId`. */
  async function ownInstance(request: FastifyRequest, reply: FastifyReply, userId: string) {
    const user = await requireUser(request);
    if (user.id !== userId) {
      await reply.code(403).send({ ...FAILED, error: 'Forbidden' });
      return null;
    }
    const agentId = await findRuntimeInstanceId(app.db, user.id);
    if (!agentId) throw new DomainError('NO_AGENT_FOUND');
    return { user, agentId };
  }

  for (const action of ACTIONS) {
    app.post(`/api/instance/:userId/${action}`, { schema: { tags: ['agents'], params } }, async (request, reply) => {
      const own = await ownInstance(request, reply, request.params.userId);
      if (!own) return reply;
      try {
        const answer = await app.backend.request<Record<string, unknown>>(`/api/agents/${encodeURIComponent(own.agentId)}/${action}`, {
          method: 'POST',
          caller: backendCaller(own.user),
          body: action === 'update' ? (request.body ?? {}) : {},
          timeoutMs: action === 'update' ? 180_000 : 60_000,
        });
        if (answer.status >= 400) return reply.code(answer.status).send({ ...FAILED, ...answer.body });
        if (action === 'start' || action === 'restart') {
          await setAgentStatus(app.db, own.user.id, own.agentId, 'running');
        } else if (action === 'stop') {
          await setAgentStatus(app.db, own.user.id, own.agentId, 'stopped');
        }
        return answer.body;
      } catch (err) {
        if (err instanceof BackendUnavailableError) return reply.code(502).send({ ...FAILED, error: 'Backend unreachable' });
        throw err;
      }
    });
  }

  app.get('/api/instance/:userId', { schema: { tags: ['agents'], params } }, async (request, reply) => {
    const own = await ownInstance(request, reply, request.params.userId);
    if (!own) return reply;
    try {
      const answer = await app.backend.request(`/api/agents/${encodeURIComponent(own.agentId)}`, {
        caller: backendCaller(own.user),
      });
      if (answer.status >= 400) return reply.code(answer.status).send({ ...FAILED, ...(answer.body as object) });
      return { status: 'ok', instance: answer.body };
    } catch (err) {
      if (err instanceof BackendUnavailableError) return reply.code(502).send({ ...FAILED, error: 'Backend unreachable' });
      throw err;
    }
  });

  // The gateway's own health check; spec §4.15 fixes cpu and memory as 'N/A' here; degraded when unreachable.
  app.get(
    '/api/instance/:userId/stats',
    { schema: { tags: ['agents'], params, response: { 200: InstanceStats } } },
    async (request, reply) => {
      const own = await ownInstance(request, reply, request.params.userId);
      if (!own) return reply;
      const url = await findAgentUrl(app.db, own.user.id, own.agentId);
      let health: Record<string, unknown> = { ok: false, error: 'no gateway URL' };
      if (url) {
        const probe = await probeGateway(url, '/healthz');
        if (!probe.reached) health = { ok: false, error: probe.error };
        else if (!probe.ok) health = { ok: false, error: `HTTP ${probe.status}` };
        else if (probe.bodyError !== undefined) health = { ok: false, error: probe.bodyError };
        else health = probe.body as Record<string, unknown>;
      }
      return {
        status: health.ok === true ? ('ok' as const) : ('degraded' as const),
        agentId: own.agentId,
        health,
        cpu: 'N/A',
        memory: 'N/A',
      };
    },
  );
}
