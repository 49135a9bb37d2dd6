import { newId } from '@aop/core';
import { type Database, sql } from '@aop/db';
import { requireOwnAgent } from '../../platform/owned-agent.js';

/** Limits of a memory as `POST /api/memory` takes it. */
export const MEMORY_CONTENT_MAX = 10_000;
export const MEMORY_TAGS_MAX = 50;
export const MEMORY_TAG_LENGTH_MAX = 100;
export const MEMORY_AGENT_ID_MAX = 200;

/** Rows of the `memories` table (spec §4.18 memory) as the API shows them; shared by `/api/memory` and `GET /api/agent`. */

export interface MemoryRow {
  id: string;
  agent_id: string | null;
  content: string;
  tags: string[];
  created_at: Date;
  updated_at: Date;
}

export interface MemoryView {
  id: string;
  agentId: string | null;
  content: string;
  tags: string[];
  createdAt: string;
  updatedAt: string;
}

export const MEMORY_COLUMNS = ['id', 'agent_id', 'content', 'tags', 'created_at', 'updated_at'] as const;

export const memoryView = (row: MemoryRow): MemoryView => ({
  id: row.id,
  agentId: row.agent_id,
  content: row.content,
  tags: row.tags,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/** `%`, `_` and `\` match themselves in a `like` pattern. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The user's newest memories (at most `limit`) and how many match in all: of one agent, or of every agent when
 * `agentId` is undefined, and holding `q` (without case) when it is given.
 */
export async function searchMemories(
  db: Database,
  userId: string,
  filter: { agentId: string | undefined; q: string | undefined; limit: number },
): Promise<{ memories: MemoryView[]; total: number }> {
  const { agentId, q, limit } = filter;
  return db.withUser(userId, async (trx) => {
    let query = trx.selectFrom('memories').where('user_id', '=', userId);
    if (agentId !== undefined) query = query.where('agent_id', '=', agentId);
    if (q) query = query.where(sql<boolean>`content ilike ${`%${likeLiteral(q)}%`} escape '\\'`);
    const rows = await query.select(MEMORY_COLUMNS).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    const count = await query.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
    return { memories: rows.map(memoryView), total: Number(count.total) };
  });
}

/** Stores a memory of one of the user's agents (404 `Agent not found` otherwise), or of all of them when `agentId` is null. */
export async function addMemory(
  db: Database,
  userId: string,
  memory: { agentId: string | null; content: string; tags: string[] },
): Promise<MemoryView> {
  const { agentId, content, tags } = memory;
  const row = await db.withUser(userId, async (trx) => {
    if (agentId !== null) await requireOwnAgent(trx, agentId);
    return trx
      .insertInto('memories')
      .values({ id: newId('memory'), user_id: userId, agent_id: agentId, content, tags: JSON.stringify(tags) })
      .returning(MEMORY_COLUMNS)
      .executeTakeFirstOrThrow();
  });
  return memoryView(row);
}

/** Deletes one of the user's memories; false when they have none of that id. */
export async function deleteMemory(db: Database, userId: string, id: string): Promise<boolean> {
  const result = await db.withUser(userId, (trx) => trx.deleteFrom('memories').where('id', '=', id).executeTakeFirst());
  return Number(result.numDeletedRows) !== 0;
}
