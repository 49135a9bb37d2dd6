import { randomBytes } from 'node:crypto';
import { DomainError, isPublicError } from '@aop/core';
import { type AgentAction, type AgentStateView, deriveAgentState } from '@aop/core/agent-state';
import type { Database, Tx } from '@aop/db';
import {
  type AgentHost,
  AgentNotFoundError,
  type AgentState,
  HostFullError,
  SharedGatewayError,
  type LlmSpec,
  PINNED_OPENCLAW_VERSION,
  StatsUnavailableError,
  UpdateFailedError,
} from '@aop/provisioner';
import type { BackendConfig } from '../config.js';

/** Reference behaviour: `openrouter` by default; `google` is an alias of `gemini`. */
export const AI_PROVIDERS = ['openrouter', 'gemini', 'google', 'groq', 'anthropic', 'openai'] as const;
export type AiProvider = (typeof AI_PROVIDERS)[number];

/** The default model per provider, as that provider names it. */
export const DEFAULT_MODELS: Record<Exclude<AiProvider, 'google'>, string> = {
  openrouter: 'anthropic/claude-sonnet-4.5',
  gemini: 'gemini-2.5-flash',
  groq: 'llama-3.3-70b-versatile',
  anthropic: 'claude-sonnet-4-5',
  openai: 'gpt-4.1-mini',
};

export function normalizeAiProvider(value: unknown): Exclude<AiProvider, 'google'> {
  if (value === undefined || value === null || value === '') return 'openrouter';
  if (typeof value !== 'string' || !(AI_PROVIDERS as readonly string[]).includes(value)) throw new DomainError('UNSUPPORTED_AIPROVIDER');
  return value === 'google' ? 'gemini' : (value as Exclude<AiProvider, 'google'>);
}

/** The agent's own model provider, from the key the user brought (never a platform key). */
export function llmFor(
  config: BackendConfig,
  provider: Exclude<AiProvider, 'google'>,
  apiKey: string | undefined,
  model?: string,
): LlmSpec | undefined {
  if (!apiKey) return undefined;
  return { baseUrl: config.aiBaseUrls[provider], apiKey, model: model || DEFAULT_MODELS[provider] };
}

/** Spec §4.15: the token is the shared one when set, else 24 random bytes as 48 hex characters. */
export const newGatewayToken = (config: BackendConfig) => config.gatewaySharedToken ?? randomBytes(24).toString('hex');

export const AGENT_ID_FORMAT = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
export const isAgentId = (value: string) => AGENT_ID_FORMAT.test(value);

/** `my-agent-3f9a1c`: readable, unique, and valid as a DNS label. */
export function subdomainFor(name: string, id: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  const suffix =
    id
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '')
      .slice(-6) || randomBytes(3).toString('hex');
  return `${slug || 'agent'}-${suffix}`;
}

export function publicUrl(config: BackendConfig, subdomain: string, state: AgentState | null): string | null {
  if (config.agentDomain) return `https://${subdomain}.${config.agentDomain}`;
  return state?.url ?? null;
}

/** Host states in the words of spec §2.3. */
export function statusFromHost(state: AgentState | null, stored: string): string {
  if (!state) return stored;
  switch (state.status) {
    case 'starting':
    case 'restarting':
      return 'deploying';
    case 'running':
      return 'active';
    case 'stopping':
    case 'stopped':
      return 'stopped';
    case 'error':
      return 'error';
    case 'hibernated':
      // Asleep after being idle (issue #20), woken by the next message or due job: not what anyone stopped.
      return 'hibernated';
  }
}

export async function hostState(host: AgentHost, agentId: string): Promise<AgentState | null> {
  try {
    return await host.status(agentId);
  } catch (err) {
    if (err instanceof AgentNotFoundError) return null;
    throw err;
  }
}

/**
 * What in an agent's configuration decides OpenClaw's own jobs: its heartbeat (`agents.defaults.heartbeat`) and its
 * memory maintenance (the `memory-core` plugin's dreaming).
 */
function ownJobsSettings(config: Record<string, unknown> | undefined): string {
  const agents = config?.agents as { defaults?: { heartbeat?: unknown } } | undefined;
  const plugins = config?.plugins as { entries?: Record<string, unknown> } | undefined;
  return JSON.stringify([agents?.defaults?.heartbeat ?? null, plugins?.entries?.['memory-core'] ?? null]);
}

/**
 * Applies a configuration change on the agent's host, and says whether the agent should now be woken: a sleeping
 * agent whose heartbeat or memory maintenance changed. The time it wakes for its next job was decided from what its
 * gateway said of the old settings (a heartbeat skipped for want of a destination is no reason to wake,
 * packages/provisioner/src/shared/idle.ts), and only its gateway can say what the new ones do. The caller wakes it
 * (an ordinary start) once the change is saved.
 */
export async function configureOnHost(host: AgentHost, agentId: string, changes: Parameters<AgentHost['configure']>[1]): Promise<boolean> {
  const asleep = changes.config !== undefined && (await hostState(host, agentId))?.status === 'hibernated';
  const before = asleep ? ownJobsSettings((await host.spec(agentId)).config) : null;
  await host.configure(agentId, changes);
  return before !== null && before !== ownJobsSettings(changes.config);
}

/**
 * Runs a host call, turning host failures into the spec's answers (503 full, 404 missing, 500 otherwise; 409 for what an
 * agent sharing its customer's gateway cannot have).
 */
export async function onHost<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isPublicError(err) || err instanceof UpdateFailedError) throw err;
    if (err instanceof HostFullError) throw new DomainError('HOST_FULL', { detail: err.message });
    if (err instanceof SharedGatewayError) throw new DomainError('AGENT_SHARES_GATEWAY', { detail: err.message });
    if (err instanceof AgentNotFoundError) throw new DomainError('AGENT_NOT_FOUND');
    if (err instanceof StatsUnavailableError) throw new DomainError('STATS_UNAVAILABLE', { detail: err.message });
    throw new DomainError('PROVISIONING_FAILED', { detail: err instanceof Error ? err.message : String(err) });
  }
}

export type DeploymentRow = Awaited<ReturnType<typeof findDeployment>>;

export const findDeployment = (trx: Tx, id: string) =>
  trx.selectFrom('agent_deployments').selectAll().where('id', '=', id).executeTakeFirst();

export async function ownDeployment(trx: Tx, id: string) {
  const row = await findDeployment(trx, id);
  if (!row) throw new DomainError('AGENT_NOT_FOUND');
  return row;
}

/** Any user's agent, over the owner connection (past row-level security): only for administrators. */
export const findAnyDeployment = (db: Database, id: string) =>
  db.kysely.selectFrom('agent_deployments').select('id').where('id', '=', id).executeTakeFirst();

/** The caller's agents, newest first. */
export const listDeployments = (trx: Tx) => trx.selectFrom('agent_deployments').selectAll().orderBy('created_at', 'desc').execute();

export interface DeploymentInput {
  id: string;
  userId: string;
  userEmail: string | null;
  name: string;
  plan: string;
  config: object;
}

/** A new agent row, not deployed yet (`pending`). */
export const createDeployment = (trx: Tx, input: DeploymentInput) =>
  trx
    .insertInto('agent_deployments')
    .values({
      id: input.id,
      user_id: input.userId,
      user_email: input.userEmail,
      name: input.name,
      subdomain: subdomainFor(input.name, input.id),
      status: 'pending',
      plan: input.plan,
      config: JSON.stringify(input.config),
    })
    .returningAll()
    .executeTakeFirstOrThrow();

/**
 * Records a deployment as `deploying`: an agent the caller already has keeps its row (name and subdomain) and takes the
 * new plan, provider and config; otherwise a new row, at the pinned OpenClaw version. An id another user holds fails
 * with the database's unique violation.
 */
export async function upsertDeployment(
  trx: Tx,
  input: DeploymentInput & { aiProvider: string; now: Date },
): Promise<{ row: NonNullable<DeploymentRow>; created: boolean }> {
  const { id, plan, aiProvider, now } = input;
  const config = JSON.stringify(input.config);
  const existing = await trx.selectFrom('agent_deployments').selectAll().where('id', '=', id).executeTakeFirst();
  if (existing) {
    const updated = await trx
      .updateTable('agent_deployments')
      .set({ plan, ai_provider: aiProvider, config, status: 'deploying', updated_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return { row: updated, created: false };
  }
  const inserted = await trx
    .insertInto('agent_deployments')
    .values({
      id,
      user_id: input.userId,
      user_email: input.userEmail,
      name: input.name,
      subdomain: subdomainFor(input.name, id),
      status: 'deploying',
      plan,
      ai_provider: aiProvider,
      config,
      version: PINNED_OPENCLAW_VERSION,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { row: inserted, created: true };
}

/** The outcome of a deployment on the host. */
export async function setDeploymentStatus(trx: Tx, id: string, status: 'active' | 'error'): Promise<void> {
  await trx.updateTable('agent_deployments').set({ status }).where('id', '=', id).execute();
}

/** Settings the user changed; only those given are written. */
export interface DeploymentChanges {
  plan?: string | undefined;
  aiProvider?: string | undefined;
  config?: Record<string, unknown> | undefined;
}

export const updateDeployment = (trx: Tx, id: string, changes: DeploymentChanges) =>
  trx
    .updateTable('agent_deployments')
    .set({
      ...(changes.plan ? { plan: changes.plan } : {}),
      ...(changes.aiProvider ? { ai_provider: changes.aiProvider } : {}),
      ...(changes.config ? { config: JSON.stringify(changes.config) } : {}),
      updated_at: new Date(),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();

/** The OpenClaw version the agent runs after an update. */
export async function setDeploymentVersion(trx: Tx, id: string, version: string): Promise<void> {
  await trx.updateTable('agent_deployments').set({ version, updated_at: new Date() }).where('id', '=', id).execute();
}

/** The agent's verification (spec §4.15), or null to clear it. */
export async function setVerification(trx: Tx, id: string, verification: Record<string, unknown> | null): Promise<void> {
  await trx
    .updateTable('agent_deployments')
    .set({ verification: verification === null ? null : JSON.stringify(verification), updated_at: new Date() })
    .where('id', '=', id)
    .execute();
}

/** Whether the caller had the agent (row-level security hides, and keeps from deleting, the others). */
export async function deleteDeployment(trx: Tx, id: string): Promise<boolean> {
  const result = await trx.deleteFrom('agent_deployments').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The backend's agent object (spec §2.3: `created`, `subdomain`, `url`). */
export function agentView(config: BackendConfig, row: NonNullable<DeploymentRow>, state: AgentState | null) {
  return {
    id: row.id,
    name: row.name,
    userId: row.user_id,
    subdomain: row.subdomain,
    url: publicUrl(config, row.subdomain, state),
    status: statusFromHost(state, row.status),
    plan: row.plan,
    aiProvider: row.ai_provider,
    openclawVersion: state?.version ?? row.version ?? PINNED_OPENCLAW_VERSION,
    created: row.created_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    verified: row.verification !== null,
  };
}

/** What `GET /agents/:id/model` answers: the model the agent's gateway runs and the provider whose key it calls it with. */
export interface AgentModelView {
  agentId: string;
  /** `agents.defaults.model.primary` of the configuration its host applies (`platform/<model>` with the user's key). */
  model: string | null;
  /** The AI provider behind that model: the deployment's provider when the platform wrote the model from its key. */
  provider: string | null;
  /**
   * Where the model comes from: `platform` (written from the agent's AI provider key), `config` (its configuration
   * names it), `default` (nothing names one: OpenClaw's own default), `unknown` (the applied configuration could not be
   * read, e.g. no host runs the agent). `model` is null for the last two.
   */
  source: 'platform' | 'config' | 'default' | 'unknown';
  /**
   * The host's word for the agent, read for the model anyway (null: no host of this backend runs it): lets a list of
   * agents say which sleep (`hibernated`) while their records keep `running`, without a health probe per agent.
   */
  hostStatus: AgentState['status'] | null;
}

/**
 * The model of `appliedAgentConfig` (services/agent-config.ts) with its provider (issue #19). `platform` is only the
 * id the platform gives the provider it writes into the config from the user's key (`LLM_PROVIDER_ID`), so the
 * provider then is the deployment's `ai_provider`; otherwise the model's own `<provider>/…` segment. Null when no host
 * of this backend runs the agent or its configuration names no model (OpenClaw's built-in default, not visible here).
 */
export function agentModelView(
  row: { id: string; ai_provider: string },
  applied: { model: string | null; modelSource: 'platform' | 'config' | 'default' } | null,
  hostStatus: AgentState['status'] | null,
): AgentModelView {
  const model = applied?.model ?? null;
  const provider = !model ? null : applied?.modelSource === 'platform' ? row.ai_provider : model.split('/')[0] || null;
  return { agentId: row.id, model, provider, source: applied?.modelSource ?? 'unknown', hostStatus };
}

/** What `GET /agents/:id/state` answers: the shared state machine's view, with the evidence it was derived from. */
export interface AgentLifecycleView extends AgentStateView {
  agentId: string;
  /** The host's word for the process/container; null when the host has no such agent. */
  host: AgentState['status'] | null;
  /** `/healthz` answered; false when there was no process to ask. */
  live: boolean;
  /** `/readyz` answered ready; null when there was no process to ask or the gateway did not answer. */
  ready: boolean | null;
  failing: string[];
  /** The caller's other agents in the same gateway (customer-scoped gateways); empty for a gateway of its own. */
  sharesGatewayWith: string[];
  /** While hibernated: when its host starts it for its next due job (`AgentState.wakesAt`); null otherwise or with none due. */
  wakesAt: string | null;
}

/**
 * The agent's state (issue #19): the host's process state, and — only when there is a process — the gateway's own
 * `/healthz` and `/readyz` (the host's `health`, 5 s each). `pending` is an action this backend is carrying out on it.
 */
export async function agentLifecycleState(
  host: AgentHost,
  row: { id: string; status: string },
  pending: AgentAction | null,
): Promise<AgentLifecycleView> {
  const state = await hostState(host, row.id);
  const running = state !== null && (state.status === 'running' || state.status === 'starting' || state.status === 'restarting');
  const health = running ? await host.health(row.id).catch(() => null) : null;
  // A gateway that does not answer /healthz said nothing about readiness either: "not reached", not "not ready".
  const ready = health ? (health.live ? health.ready : null) : null;
  const view = deriveAgentState({
    host: state?.status ?? null,
    ready,
    record: row.status,
    pending,
    lastError: state?.lastError ?? null,
    failing: health?.failing ?? [],
    schedulerDown: state?.schedulerDown ?? null,
  });
  return {
    agentId: row.id,
    ...view,
    host: state?.status ?? null,
    live: health?.live ?? false,
    ready,
    failing: health?.failing ?? [],
    sharesGatewayWith: state?.sharesGatewayWith ?? [],
    wakesAt: state?.status === 'hibernated' ? (state.wakesAt ?? null) : null,
  };
}
