import { requireCallersAgent } from '../../platform/owned-agent.js';
import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { requireUser } from '../../platform/http/auth.js';
import { BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { DeploymentWatcher } from './hosting.service.js';
import { AgentAnswer, AgentList, Provisioned } from './agents.schemas.js';
import {
  findAgent,
  findUserRuntime,
  listAgents,
  listProvisionedAgents,
  openDirectGatewayToken,
  pendingDirectDeployments,
} from './agents.service.js';
import { provisionAgent, settleDirectDeployment } from './provisioning.service.js';
import { backendCaller } from '../../platform/sessions.js';

const MINUTE = 60_000;

/** Spec §4.15 (web): provisioning, the agent list and records, clone, runtime details. */
export async function agentRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const provisionLimit = app.rateLimit({ name: 'provision', max: 5, windowMs: MINUTE, message: 'Too many requests' });
  const agentsLimit = app.rateLimit({ name: 'agents', max: 100, windowMs: MINUTE, message: 'Too many requests' });

  // Direct deployments (no backend answered) are followed until the provider's deployment settles (spec §3.2).
  const watcher = config.hosting
    ? new DeploymentWatcher(config.hosting, (err, deploymentId) => app.log.error({ err, deploymentId }, 'direct deployment watch failed'))
    : undefined;
  if (watcher) {
    // After a restart: pick up the deployments that were still being followed (a system lookup across users).
    app.addHook('onReady', async () => {
      const pending = await pendingDirectDeployments(app.db);
      for (const row of pending) {
        watcher.watch(row.hosting_deployment_id!, ({ status }) => settleDirectDeployment(app.db, row.user_id, row.id, status));
      }
    });
    app.addHook('onClose', () => watcher.close());
  }

  for (const url of ['/api/provision', '/api/agents/provision']) {
    app.post(
      url,
      {
        onRequest: provisionLimit,
        schema: { tags: ['agents'], body: Type.Optional(Type.Record(Type.String(), Type.Unknown())), response: { 200: Provisioned } },
      },
      async (request) => {
        const user = await requireUser(request);
        return provisionAgent(app.db, app.backend, config, user, request.body ?? {}, watcher);
      },
    );
  }

  app.get('/api/agents/provision', { onRequest: agentsLimit, schema: { tags: ['agents'] } }, async (request) => {
    const user = await requireUser(request);
    return { agents: await listProvisionedAgents(app.db, user.id) };
  });

  app.get('/api/agents', { onRequest: agentsLimit, schema: { tags: ['agents'], response: { 200: AgentList } } }, async (request) => {
    const user = await requireUser(request);
    const agents = await listAgents(app.db, app.backend, user);
    return { agents, count: agents.length, status: 'ok' as const };
  });

  // Spec §4.15: agent cloning answers 501 whatever the body.
  app.post('/api/agents/clone', { schema: { tags: ['agents'] } }, async (_request, reply) =>
    reply.code(501).send({ error: 'Not Implemented' }),
  );
  app.get('/api/agents/clone', { schema: { tags: ['agents'] } }, async () => ({ status: 'ok', service: 'agent-clone', available: false }));

  app.get(
    '/api/agents/:id',
    {
      onRequest: agentsLimit,
      schema: { tags: ['agents'], params: Type.Object({ id: Type.String({ maxLength: 64 }) }), response: { 200: AgentAnswer } },
    },
    async (request) => {
      const user = await requireUser(request);
      const agent = await findAgent(app.db, app.backend, user, request.params.id);
      if (!agent) throw new DomainError('AGENT_NOT_FOUND');
      return { status: 'ok' as const, agent };
    },
  );

  // Spec §4.15: live figures from the backend; only when the backend is down, the named mock with `status: 'mock'`.
  app.get(
    '/api/agents/:id/stats',
    { onRequest: agentsLimit, schema: { tags: ['agents'], params: Type.Object({ id: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      const user = await requireUser(request);
      const agentId = request.params.id;
      await requireCallersAgent(app.db, user.id, agentId);
      try {
        const answer = await app.backend.request(`/api/agents/${encodeURIComponent(agentId)}/stats`, {
          caller: backendCaller(user),
          timeoutMs: 10_000,
        });
        return reply.code(answer.status).send(answer.body);
      } catch (err) {
        if (!(err instanceof BackendUnavailableError)) throw err;
        return {
          stats: {
            agentId,
            messagesProcessed: 0,
            messagesPerHour: 0,
            averageResponseTime: 0,
            uptime: 0,
            successRate: 0,
            errorRate: 0,
            timestamp: new Date(app.clock()).toISOString(),
          },
          status: 'mock',
        };
      }
    },
  );

  app.get('/api/user/runtime', { schema: { tags: ['agents'] } }, async (request) => {
    const user = await requireUser(request);
    const row = await findUserRuntime(app.db, user.id);
    let token: string | null = null;
    const instanceId = row.runtime_instance_id;
    if (instanceId) {
      try {
        const answer = await app.backend.request<{ token?: string }>(`/api/agents/${encodeURIComponent(instanceId)}/token`, {
          caller: backendCaller(user),
        });
        token = answer.status === 200 ? (answer.body.token ?? null) : null;
      } catch (err) {
        if (!(err instanceof BackendUnavailableError)) throw err;
      }
      // A direct deployment's token lives only here (sealed on the agent row): no backend knows that agent.
      if (token === null) token = await openDirectGatewayToken(app.db, config.encryptionKey, user.id, instanceId);
    }
    return { url: row.runtime_url, instanceId: row.runtime_instance_id, token };
  });
}
