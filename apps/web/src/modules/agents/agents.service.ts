import type { Database, Tx } from '@aop/db';
import { type BackendClient, BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { type AuthUser, backendCaller } from '../../platform/sessions.js';
import { openGatewayToken } from './hosting.service.js';
import { MODEL_SOURCES, type ModelSourceName } from './agents.schemas.js';

/** The caller's agents, their records and runtime (spec §4.15), as the agent routes answer them. */

const wsUrl = (url: string | null) => (url ? url.replace(/^http/, 'ws') : null);

/** A direct deployment still being followed: a system lookup across users, for picking them up after a restart. */
export async function pendingDirectDeployments(
  db: Database,
): Promise<{ id: string; user_id: string; hosting_deployment_id: string | null }[]> {
  return db.kysely
    .selectFrom('agents')
    .select(['id', 'user_id', 'hosting_deployment_id'])
    .where('status', '=', 'deploying')
    .where('hosting_deployment_id', 'is not', null)
    .execute();
}

/** `GET /api/agents/provision`: the caller's agents, newest first. */
export async function listProvisionedAgents(db: Database, userId: string) {
  const agents = await db.withUser(userId, (trx) =>
    trx
      .selectFrom('agents')
      .select(['id', 'name', 'status', 'subdomain', 'url', 'plan', 'created_at'])
      .orderBy('created_at', 'desc')
      .execute(),
  );
  return agents.map((a) => ({
    id: a.id,
    name: a.name,
    status: a.status,
    subdomain: a.subdomain,
    url: a.url,
    plan: a.plan,
    createdAt: a.created_at.toISOString(),
  }));
}

/** The model an agent runs and the AI provider whose key it calls it with (issue #19); null parts: unknown. */
export interface AppliedModel {
  model: string | null;
  provider: string | null;
  source: ModelSourceName;
}

/** The model, and the host's word for the agent read beside it (`hibernated` while the record says `running`). */
export interface ModelOnHost extends AppliedModel {
  /** Null: unknown (no host runs it, or the backend did not answer). */
  hostStatus: string | null;
}

export const UNKNOWN_MODEL: ModelOnHost = { model: null, provider: null, source: 'unknown', hostStatus: null };
/** A model read is part of a page load or a chat turn: a backend slower than this leaves the model unknown. */
const APPLIED_MODEL_TIMEOUT_MS = 5_000;

/**
 * The model the agent's gateway runs, read from the configuration its host applies (the backend's
 * `GET /api/agents/:id/model`, from the host's spec as it writes openclaw.json), never a default: an agent no backend
 * knows (a direct deployment at the hosting provider), a backend that does not answer or a configuration naming no
 * model is "unknown" (null). The host's status comes with it (the backend reads it anyway): the agent list's `hostStatus`.
 */
export async function readAppliedModel(
  backend: BackendClient,
  user: Pick<AuthUser, 'id' | 'email' | 'emailVerified'>,
  agentId: string,
): Promise<ModelOnHost> {
  try {
    const answer = await backend.request<{ model?: unknown; provider?: unknown; source?: unknown; hostStatus?: unknown }>(
      `/api/agents/${encodeURIComponent(agentId)}/model`,
      {
        caller: backendCaller(user),
        timeoutMs: APPLIED_MODEL_TIMEOUT_MS,
      },
    );
    if (answer.status !== 200 || !answer.body) return UNKNOWN_MODEL;
    const { model, provider, source, hostStatus } = answer.body;
    return {
      model: typeof model === 'string' && model ? model : null,
      provider: typeof provider === 'string' && provider ? provider : null,
      source: MODEL_SOURCES.includes(source as ModelSourceName) ? (source as ModelSourceName) : 'unknown',
      hostStatus: typeof hostStatus === 'string' && hostStatus ? hostStatus : null,
    };
  } catch (err) {
    if (err instanceof BackendUnavailableError) return UNKNOWN_MODEL;
    throw err;
  }
}

/** `GET /api/agents`: the caller's agents, newest first, the primary one marked, each with the model it runs. */
export async function listAgents(db: Database, backend: BackendClient, user: AuthUser) {
  const userId = user.id;
  const [rows, primaryId] = await db.withUser(userId, async (trx) => [
    await trx.selectFrom('agents').selectAll().orderBy('created_at', 'desc').execute(),
    await primaryOf(trx, userId),
  ]);
  // One read per agent, side by side: a customer has a handful of agents (the plan's limit).
  const models = await Promise.all(rows.map((a) => readAppliedModel(backend, user, a.id)));
  return rows.map((a, i) => ({
    id: a.id,
    name: a.name,
    model: models[i]?.model ?? null,
    modelSource: models[i]?.source ?? 'unknown',
    status: a.status,
    hostStatus: models[i]?.hostStatus ?? null,
    url: a.url,
    websocketUrl: wsUrl(a.url),
    primary: a.id === primaryId,
    createdAt: a.created_at.toISOString(),
    updatedAt: a.updated_at.toISOString(),
  }));
}

/** The account's primary agent (`users.runtime_instance_id`): what `/api/instance/:userId` and `/api/user/runtime` act on. */
const primaryOf = async (trx: Tx, userId: string) =>
  (await trx.selectFrom('users').select('runtime_instance_id').where('id', '=', userId).executeTakeFirst())?.runtime_instance_id ?? null;

/**
 * `PUT /api/agents/:id/primary`: makes one of the caller's agents the account's primary agent (the user record's
 * runtime, spec §4.15 `GET /api/user/runtime`). Null when the caller has no agent with this id.
 */
export async function setPrimaryAgent(db: Database, userId: string, agentId: string): Promise<{ url: string | null } | null> {
  return db.withUser(userId, async (trx) => {
    const agent = await trx.selectFrom('agents').select(['id', 'url']).where('id', '=', agentId).executeTakeFirst();
    if (!agent) return null;
    await trx.updateTable('users').set({ runtime_instance_id: agent.id, runtime_url: agent.url }).where('id', '=', userId).execute();
    return { url: agent.url };
  });
}

/** `GET /api/agents/:id`: one of the caller's agents with the model it runs, or null when they have none with this id. */
export async function findAgent(db: Database, backend: BackendClient, user: AuthUser, agentId: string) {
  const userId = user.id;
  const [agent, primaryId] = await db.withUser(userId, async (trx) => [
    await trx.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirst(),
    await primaryOf(trx, userId),
  ]);
  if (!agent) return null;
  const { model, source, hostStatus } = await readAppliedModel(backend, user, agent.id);
  return {
    id: agent.id,
    name: agent.name,
    model,
    modelSource: source,
    status: agent.status,
    hostStatus,
    subdomain: agent.subdomain,
    url: agent.url,
    websocketUrl: wsUrl(agent.url),
    plan: agent.plan,
    primary: agent.id === primaryId,
    createdAt: agent.created_at.toISOString(),
    updatedAt: agent.updated_at.toISOString(),
  };
}

/** The caller's runtime: its URL and the agent that serves it. */
export async function findUserRuntime(
  db: Database,
  userId: string,
): Promise<{ runtime_url: string | null; runtime_instance_id: string | null }> {
  return db.withUser(userId, (trx) =>
    trx.selectFrom('users').select(['runtime_url', 'runtime_instance_id']).where('id', '=', userId).executeTakeFirstOrThrow(),
  );
}

/** A direct deployment's token lives only here (sealed on the agent row): no backend knows that agent. Null when none is sealed. */
export async function openDirectGatewayToken(db: Database, encryptionKey: string, userId: string, agentId: string): Promise<string | null> {
  const agent = await db.withUser(userId, (trx) =>
    trx.selectFrom('agents').select('gateway_token_sealed').where('id', '=', agentId).executeTakeFirst(),
  );
  return agent?.gateway_token_sealed ? openGatewayToken(encryptionKey, agentId, agent.gateway_token_sealed) : null;
}

/** The caller's own agent (`users.runtime_instance_id`), or null when they have none. */
export async function findRuntimeInstanceId(db: Database, userId: string): Promise<string | null> {
  const row = await db.withUser(userId, (trx) =>
    trx.selectFrom('users').select('runtime_instance_id').where('id', '=', userId).executeTakeFirstOrThrow(),
  );
  return row.runtime_instance_id;
}

/** Records what a start/restart or stop on the backend did to the caller's agent. */
export async function setAgentStatus(db: Database, userId: string, agentId: string, status: 'running' | 'stopped'): Promise<void> {
  await db.withUser(userId, (trx) => trx.updateTable('agents').set({ status, updated_at: new Date() }).where('id', '=', agentId).execute());
}

/** The gateway URL of one of the caller's agents; null when it has none or is not theirs. */
export async function findAgentUrl(db: Database, userId: string, agentId: string): Promise<string | null> {
  const agent = await db.withUser(userId, (trx) => trx.selectFrom('agents').select('url').where('id', '=', agentId).executeTakeFirst());
  return agent?.url ?? null;
}

/** The wallet address of the caller, if they have one. */
export async function findWalletAddress(db: Database, userId: string): Promise<string | null> {
  const row = await db.withUser(userId, (trx) =>
    trx.selectFrom('users').select('wallet_address').where('id', '=', userId).executeTakeFirstOrThrow(),
  );
  return row.wallet_address;
}

/** The status and URL of one of the caller's agents, or null when they have none with this id (or it was deleted). */
export async function findAgentProgress(
  db: Database,
  userId: string,
  agentId: string,
): Promise<{ status: string; url: string | null } | null> {
  const row = await db.withUser(userId, (trx) =>
    trx.selectFrom('agents').select(['status', 'url']).where('id', '=', agentId).executeTakeFirst(),
  );
  return row ?? null;
}
