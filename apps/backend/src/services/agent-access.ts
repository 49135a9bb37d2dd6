import { DomainError } from '@aop/core';
import type { Database } from '@aop/db';
import type { AgentHost, AgentState } from '@aop/provisioner';
import { type DeploymentRow, hostState, isAgentId, ownDeployment } from './agents.js';

/**
 * Access to one agent for the routes that look inside it (workspace browse, logs, tool host): the caller from the
 * signed user context, the agent row under row-level security (another user's agent is 404, as on every agent
 * route), and the agent's place on the host.
 */

/** The caller, from the signed user context's user id; agents always belong to a real user. */
export function requireCaller(id: string | undefined): string {
  if (!id || id === 'anonymous') throw new DomainError('USER_CONTEXT_REQUIRED');
  return id;
}

/** An agent id from a query or body: 400 when missing or malformed. */
export function checkedAgentId(value: unknown): string {
  if (value === undefined || value === null || value === '') throw new DomainError('FIELD_REQUIRED', { field: 'agentId' });
  if (typeof value !== 'string' || !isAgentId(value)) throw new DomainError('INVALID_AGENTID');
  return value;
}

export interface OwnedAgent {
  userId: string;
  row: NonNullable<DeploymentRow>;
  /** The agent on the host; null when it was never deployed. */
  state: AgentState | null;
}

/** The caller's agent (`userId` from `requireCaller`): 404 when it is not theirs (or does not exist). */
export async function ownedAgent(db: Database, host: AgentHost | undefined, userId: string, agentId: string): Promise<OwnedAgent> {
  const row = await db.withUser(userId, (trx) => ownDeployment(trx, agentId));
  const state = host ? await hostState(host, agentId) : null;
  return { userId, row, state };
}

/** As `ownedAgent`, and the agent must exist on the host (409 `Agent is not deployed`, as the lifecycle routes). */
export async function deployedAgent(
  db: Database,
  host: AgentHost,
  userId: string,
  agentId: string,
): Promise<OwnedAgent & { state: AgentState }> {
  const owned = await ownedAgent(db, host, userId, agentId);
  if (!owned.state) throw new DomainError('AGENT_NOT_DEPLOYED');
  return { ...owned, state: owned.state };
}
