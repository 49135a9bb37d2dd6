import { DomainError } from '@aop/core';
import type { Database, Tx } from '@aop/db';

/**
 * 404 `Agent not found` unless `agentId` is one of the caller's agents: `trx` is a `withUser` transaction, so
 * row-level security hides every other user's agents and a plain lookup is the ownership check.
 */
export async function requireOwnAgent(trx: Tx, agentId: string): Promise<void> {
  const agent = await trx.selectFrom('agents').select('id').where('id', '=', agentId).executeTakeFirst();
  if (!agent) throw new DomainError('AGENT_NOT_FOUND');
}

/** `requireOwnAgent` in a read-only transaction of its own, for routes that only check before they relay or act. */
export async function requireCallersAgent(db: Database, userId: string, agentId: string): Promise<void> {
  await db.readAsUser(userId, (trx) => requireOwnAgent(trx, agentId));
}
