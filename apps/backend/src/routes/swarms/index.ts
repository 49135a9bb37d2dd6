import { refuse } from '@aop/core/request-schema';
import { type App, DomainError } from '@aop/core';
import type { AgentHost, AgentState } from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { BackendConfig } from '../../config.js';
import { callerBeforeBody, callerId, identityAuth } from '../../plugins/caller.js';
import { statusFromHost } from '../../services/agents.js';
import { colonyHealth, countByStatus, membership, probeAgents, userAgents } from '../../services/colony.js';
import { type SwarmRecord, createSwarm, deleteSwarm, listSwarms, parseSwarm } from '../../services/swarms.js';
import { CreateSwarmBody, Swarm as SwarmSchema } from './schemas.js';

const tags = ['coordination'];

/**
 * Spec §4.18 Coordination (backend, identity headers): `GET`/`POST /api/swarms` (and `DELETE /api/swarms/:id`), and
 * `GET /api/colony/status`, the caller's agents seen as one colony with live health from the agent host.
 */
export async function coordinationRoutes(
  app: App,
  { config, host }: { config: BackendConfig; host: AgentHost | undefined },
): Promise<void> {
  const onRequest = identityAuth(config);

  /** Swarms with their members' names and current statuses (the host's view when there is a host). */
  async function swarmViews(userId: string, only?: (s: SwarmRecord) => boolean) {
    const { swarms, rows } = await app.db.withUser(userId, async (trx) => ({ swarms: await listSwarms(trx), rows: await userAgents(trx) }));
    const states = new Map<string, AgentState>((host ? await host.list() : []).map((s) => [s.agentId, s]));
    const agents = new Map(rows.map((r) => [r.id, { id: r.id, name: r.name, status: statusFromHost(states.get(r.id) ?? null, r.status) }]));
    return swarms
      .filter((s) => !only || only(s))
      .map(({ agentIds, ...swarm }) => {
        const members = agentIds.flatMap((id) => agents.get(id) ?? []);
        return { ...swarm, size: members.length, agents: members };
      });
  }

  app.get(
    '/swarms',
    {
      onRequest,
      schema: {
        tags,
        description: "The caller's swarms, newest first.",
        response: { 200: Type.Object({ swarms: Type.Array(SwarmSchema) }) },
      },
    },
    async (request) => ({ swarms: await swarmViews(callerId(request)) }),
  );

  app.post(
    '/swarms',
    {
      onRequest,
      preValidation: callerBeforeBody,
      config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'name' }) },
      schema: {
        tags,
        description: 'Creates a swarm: `name` (unique per user, ≤ 100), `description` (≤ 500), `agentIds` (the caller’s agents, ≤ 50).',
        body: CreateSwarmBody,
        response: { 201: Type.Object({ swarm: SwarmSchema }) },
      },
    },
    async (request, reply) => {
      const userId = callerId(request);
      const input = parseSwarm(request.body);
      const created = await app.db.withUser(userId, (trx) => createSwarm(trx, userId, input));
      const [swarm] = await swarmViews(userId, (s) => s.id === created.id);
      if (!swarm) throw new Error(`swarm ${created.id} vanished after creation`);
      return reply.code(201).send({ swarm });
    },
  );

  app.delete(
    '/swarms/:id',
    {
      onRequest,
      schema: {
        tags,
        description: 'Deletes one of the caller’s swarms (its agents stay).',
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
      },
    },
    async (request) => {
      const userId = callerId(request);
      const deleted = await app.db.withUser(userId, (trx) => deleteSwarm(trx, request.params.id));
      if (!deleted) throw new DomainError('SWARM_NOT_FOUND');
      return { id: request.params.id, deleted: true };
    },
  );

  app.get(
    '/colony/status',
    {
      onRequest,
      schema: {
        tags,
        description:
          'The caller’s agents as a colony, live from the agent host: `status` is `empty`, `idle` (nothing meant to run), `healthy`, `degraded` or `down`; per agent its state, `/healthz` + `/readyz`, restarts and uptime; per swarm how many members are active.',
      },
    },
    async (request) => {
      const userId = callerId(request);
      // Spec §4.10: provisioning-dependent endpoints answer 500 when the provisioner is not configured.
      if (!host) throw new DomainError('PROVISIONER_NOT_CONFIGURED', { provisioner: config.provisioner });
      const now = app.clock();
      const { rows, swarms, members } = await app.db.withUser(userId, async (trx) => ({
        rows: await userAgents(trx),
        swarms: await listSwarms(trx),
        members: await membership(trx),
      }));
      const agents = await probeAgents(rows, host, now);
      const byId = new Map(agents.map((a) => [a.id, a]));
      return {
        status: colonyHealth(agents),
        provider: host.provider,
        counts: { total: agents.length, ...countByStatus(agents), ready: agents.filter((a) => a.ready === true).length },
        agents: agents.map((a) => ({ ...a, swarmIds: members.get(a.id) ?? [] })),
        swarms: swarms.map((s) => {
          const list = s.agentIds.flatMap((id) => byId.get(id) ?? []);
          return {
            id: s.id,
            name: s.name,
            size: list.length,
            active: list.filter((a) => a.status === 'active').length,
            ready: list.filter((a) => a.ready === true).length,
          };
        }),
        checkedAt: new Date(now).toISOString(),
      };
    },
  );
}
