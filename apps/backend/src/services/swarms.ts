import { DomainError, newId } from '@aop/core';
import { type Tx, isUniqueViolation } from '@aop/db';

/**
 * Swarms (spec §4.18 Coordination): named groups of one user's agents, e.g. the agents that work a project together.
 * An agent may be in several swarms; deleting an agent takes it out of every swarm (foreign key cascade).
 */

export const SWARM_NAME_MAX = 100;
export const SWARM_DESCRIPTION_MAX = 500;
export const MAX_SWARM_AGENTS = 50;
export const MAX_SWARMS = 100;

export interface SwarmInput {
  name: string;
  description: string | null;
  agentIds: string[];
}

/**
 * A `POST /api/swarms` body the request schema let through (types, a non-blank name, agent ids as strings of 1 to 64
 * code points): the rest of its checks (400 with the field's problem). Lengths count UTF-16 units, as they always did.
 */
export function parseSwarm(body: { name: string; description?: string | null; agentIds?: string[] | null }): SwarmInput {
  const name = body.name.trim();
  if (name.length > SWARM_NAME_MAX) throw new DomainError('FIELD_TOO_LONG', { field: 'name', max: SWARM_NAME_MAX });
  let description: string | null = null;
  if (body.description !== undefined && body.description !== null) {
    if (body.description.length > SWARM_DESCRIPTION_MAX) {
      throw new DomainError('FIELD_TOO_LONG', { field: 'description', max: SWARM_DESCRIPTION_MAX });
    }
    description = body.description.trim() || null;
  }
  const ids = body.agentIds ?? [];
  if (ids.some((id) => id.length > 64)) throw new DomainError('AGENTIDS_ARRAY_AGENT_IDS');
  const agentIds = [...new Set(ids)];
  if (agentIds.length > MAX_SWARM_AGENTS) throw new DomainError('SWARM_TOO_LARGE', { max: MAX_SWARM_AGENTS });
  return { name, description, agentIds };
}

export interface SwarmRecord {
  id: string;
  name: string;
  description: string | null;
  agentIds: string[];
  createdAt: string;
  updatedAt: string;
}

/** Creates a swarm of the caller's agents: 404 `Agent not found` for an id that is not theirs, 409 for a taken name. */
export async function createSwarm(trx: Tx, userId: string, input: SwarmInput): Promise<SwarmRecord> {
  if (input.agentIds.length > 0) {
    // Row-level security: another user's agent is not found, like a missing one.
    const owned = await trx.selectFrom('agent_deployments').select('id').where('id', 'in', input.agentIds).execute();
    if (owned.length !== input.agentIds.length) throw new DomainError('AGENT_NOT_FOUND');
  }
  const { count } = await trx
    .selectFrom('swarms')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  if (Number(count) >= MAX_SWARMS) throw new DomainError('MAXIMUM_SWARMS_REACHED', { max: MAX_SWARMS });
  const id = newId('swarm');
  const now = new Date();
  const row = await trx
    .insertInto('swarms')
    .values({ id, user_id: userId, name: input.name, description: input.description, created_at: now, updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow()
    .catch((err) => {
      if (isUniqueViolation(err, 'swarms_user_name_key')) throw new DomainError('SWARM_WITH_NAME_ALREADY_EXISTS');
      throw err;
    });
  if (input.agentIds.length > 0) {
    await trx
      .insertInto('swarm_agents')
      .values(input.agentIds.map((agentId) => ({ swarm_id: id, agent_id: agentId, user_id: userId, added_at: now })))
      .execute();
  }
  return {
    id,
    name: row.name,
    description: row.description,
    agentIds: input.agentIds,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The caller's swarms, newest first, with their members in the order they were added. */
export async function listSwarms(trx: Tx): Promise<SwarmRecord[]> {
  const swarms = await trx.selectFrom('swarms').selectAll().orderBy('created_at', 'desc').orderBy('id').execute();
  const members = await trx.selectFrom('swarm_agents').select(['swarm_id', 'agent_id']).orderBy('added_at').orderBy('agent_id').execute();
  const bySwarm = new Map<string, string[]>();
  for (const m of members) bySwarm.set(m.swarm_id, [...(bySwarm.get(m.swarm_id) ?? []), m.agent_id]);
  return swarms.map((s) => ({
    id: s.id,
    name: s.name,
    description: s.description,
    agentIds: bySwarm.get(s.id) ?? [],
    createdAt: s.created_at.toISOString(),
    updatedAt: s.updated_at.toISOString(),
  }));
}

export async function deleteSwarm(trx: Tx, id: string): Promise<boolean> {
  const result = await trx.deleteFrom('swarms').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
