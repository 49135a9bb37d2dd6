import { type App, DomainError } from '@aop/core';
import type { WebContext } from '../../platform/context.js';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireUser } from '../../platform/http/auth.js';
import { BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { backendCaller } from '../../platform/sessions.js';
import { AGENT_ACTIONS } from '@aop/core/agent-state';
import { findAgentUrl, findRuntimeInstanceId } from './agents.service.js';
import { InstanceStats, LifecycleAnswer } from './agents.schemas.js';
import { FAILED, answerLifecycle, lifecycleLimit, lifecycleRouteDeps } from './lifecycle.routes.js';
import { probeGateway } from '../../platform/clients/gateway-probe.js';

/**
 * Spec §4.15: `POST /api/instance/:userId/{action}` and instance details, for the signed-in user's primary agent
 * (`users.runtime_instance_id`; the user picks it with `PUT /api/agents/:id/primary`).
 */
export async function instanceRoutes(app: App, context: WebContext): Promise<void> {
  app.addHook('onRequest', lifecycleLimit(app));
  const deps = lifecycleRouteDeps(app, context);
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

  // The same actions as `POST /api/agents/:id/<action>`, on the account's primary agent (one shared implementation).
  for (const action of AGENT_ACTIONS) {
    app.post(
      `/api/instance/:userId/${action}`,
      { schema: { tags: ['agents'], params, response: { 200: LifecycleAnswer, 202: LifecycleAnswer } } },
      async (request, reply) => {
        const own = await ownInstance(request, reply, request.params.userId);
        if (!own) return reply;
        return answerLifecycle(deps, reply, own.user, own.agentId, action, request.body ?? {});
      },
    );
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
