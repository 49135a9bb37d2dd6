import type { Database } from '@aop/db';

/** The agent whose history `GET /api/agents/:id/messages` reads. */
export interface MessagesAgent {
  id: string;
  url: string | null;
}

/** One of the caller's agents with its URL, or null when they have none with this id (row-level security). */
export async function findMessagesAgent(db: Database, userId: string, agentId: string): Promise<MessagesAgent | null> {
  const agent = await db.withUser(userId, (trx) =>
    trx.selectFrom('agents').select(['id', 'url']).where('id', '=', agentId).executeTakeFirst(),
  );
  return agent ?? null;
}
