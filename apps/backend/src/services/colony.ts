import type { AgentDeploymentsTable, Tx } from '@aop/db';
import type { AgentHost, AgentState } from '@aop/provisioner';
import type { Selectable } from 'kysely';
import { statusFromHost } from './agents.js';

/**
 * A user's agents seen together ("colony", spec §4.18 Coordination): each agent's record joined with what the host
 * says about it now (state, restarts, start-up time) and, for running agents, a live `/healthz` + `/readyz` probe.
 */

type DeploymentRow = Selectable<AgentDeploymentsTable>;

export interface AgentProbe {
  id: string;
  name: string;
  /** In the spec's words: `pending`, `deploying`, `active`, `stopped`, `error`. */
  status: string;
  version: string | null;
  /** `/healthz` and `/readyz` answered; null when the agent is not running or the host could not probe it. */
  live: boolean | null;
  ready: boolean | null;
  /** Crash restarts since it was last started by request. */
  restarts: number;
  startedAt: string | null;
  readyAt: string | null;
  /** From spawn to ready, for the current process. */
  startupMs: number | null;
  /** Since the current process became ready (running agents only). */
  uptimeMs: number | null;
}

/** All of the user's agents, probed in parallel (each probe is bounded by the host's 5-second timeout). */
export async function probeAgents(rows: DeploymentRow[], host: AgentHost | undefined, now: number): Promise<AgentProbe[]> {
  const states = new Map<string, AgentState>();
  if (host) for (const s of await host.list()) states.set(s.agentId, s);
  return Promise.all(
    rows.map(async (row): Promise<AgentProbe> => {
      const state = states.get(row.id) ?? null;
      const running = state?.status === 'running';
      const health = running && host ? await host.health(row.id).catch(() => null) : null;
      const started = state?.startedAt ? Date.parse(state.startedAt) : Number.NaN;
      const ready = state?.readyAt ? Date.parse(state.readyAt) : Number.NaN;
      return {
        id: row.id,
        name: row.name,
        status: statusFromHost(state, row.status),
        version: state?.version ?? row.version,
        live: health ? health.live : null,
        ready: health ? health.ready : null,
        restarts: state?.restarts ?? 0,
        startedAt: state?.startedAt ?? null,
        readyAt: state?.readyAt ?? null,
        startupMs: Number.isFinite(started) && Number.isFinite(ready) && ready >= started ? ready - started : null,
        uptimeMs: running && Number.isFinite(ready) ? Math.max(0, now - ready) : null,
      };
    }),
  );
}

export const userAgents = (trx: Tx) =>
  trx.selectFrom('agent_deployments').selectAll().orderBy('created_at', 'desc').orderBy('id').execute();

/** Swarm membership of the user's agents: agent id → swarm ids. */
export async function membership(trx: Tx): Promise<Map<string, string[]>> {
  const rows = await trx.selectFrom('swarm_agents').select(['swarm_id', 'agent_id']).orderBy('added_at').execute();
  const map = new Map<string, string[]>();
  for (const r of rows) map.set(r.agent_id, [...(map.get(r.agent_id) ?? []), r.swarm_id]);
  return map;
}

export type ColonyHealth = 'empty' | 'idle' | 'healthy' | 'degraded' | 'down';

/**
 * `empty`: no agents; `idle`: none is meant to run (all stopped or never deployed); `healthy`: every agent meant to
 * run is active and ready; `down`: none of them is; `degraded`: some are.
 */
export function colonyHealth(agents: AgentProbe[]): ColonyHealth {
  if (agents.length === 0) return 'empty';
  const expected = agents.filter((a) => a.status !== 'stopped' && a.status !== 'pending');
  if (expected.length === 0) return 'idle';
  const serving = expected.filter((a) => a.status === 'active' && a.ready !== false).length;
  if (serving === expected.length) return 'healthy';
  return serving === 0 ? 'down' : 'degraded';
}

export function countByStatus(agents: { status: string }[]): Record<string, number> {
  const counts: Record<string, number> = { pending: 0, deploying: 0, active: 0, stopped: 0, error: 0 };
  for (const a of agents) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}
