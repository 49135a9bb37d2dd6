import { DomainError, newId } from '@aop/core';
import type { Tx } from '@aop/db';
import { type AgentHost, type AgentSpec, buildOpenClawConfig } from '@aop/provisioner';

/**
 * One agent's configuration (`agent_deployments.config`) with versioned backups (issue #19, "Configuration is per
 * agent"): the rules spec §4.2 gives the account's `/api/config` (the previous configuration is backed up first, the
 * 10 newest backups are kept), per agent, in `agent_config_backups`.
 */

/** Spec §8's 10 newest backups, per agent. */
export const MAX_AGENT_CONFIG_BACKUPS = 10;

export interface AgentConfigBackupView {
  id: string;
  timestamp: string;
}

/** The agent's backups, newest first (row-level security and the agent id keep them to this agent). */
export async function listAgentConfigBackups(trx: Tx, agentId: string): Promise<AgentConfigBackupView[]> {
  const rows = await trx
    .selectFrom('agent_config_backups')
    .select(['id', 'created_at'])
    .where('agent_id', '=', agentId)
    .orderBy('seq', 'desc')
    .limit(MAX_AGENT_CONFIG_BACKUPS)
    .execute();
  return rows.map((r) => ({ id: r.id, timestamp: r.created_at.toISOString() }));
}

/**
 * Locks the caller's agent row (404 when it is not theirs), so saves and restores of one agent queue up: each backs up
 * what the previous one wrote, none keeps an eleventh backup, and the host applies them in the order they commit.
 */
async function lockAgent(trx: Tx, agentId: string): Promise<{ id: string; user_id: string; config: Record<string, unknown> }> {
  const row = await trx
    .selectFrom('agent_deployments')
    .select(['id', 'user_id', 'config'])
    .where('id', '=', agentId)
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw new DomainError('AGENT_NOT_FOUND');
  return row;
}

/**
 * Backs up the agent's current configuration, writes `next`, keeps the 10 newest backups, then runs `apply` (the
 * host's write of the agent's openclaw.json) inside the same transaction: a host that refuses leaves the record, the
 * backups and the agent as they were.
 */
async function replaceAgentConfig(
  trx: Tx,
  agentId: string,
  next: Record<string, unknown>,
  now: Date,
  apply: () => Promise<unknown>,
): Promise<string> {
  const backupId = await backUpAgentConfig(trx, agentId, now);
  await trx
    .updateTable('agent_deployments')
    .set({ config: JSON.stringify(next), updated_at: now })
    .where('id', '=', agentId)
    .execute();
  await apply();
  return backupId;
}

/**
 * Keeps the agent's current configuration as a backup (the 10 newest are kept), with its row locked until the
 * transaction ends: every writer of an agent's configuration calls it first (the config routes, `PUT /agents/:id`).
 */
export async function backUpAgentConfig(trx: Tx, agentId: string, now: Date): Promise<string> {
  const row = await lockAgent(trx, agentId);
  const backupId = newId('backup');
  await trx
    .insertInto('agent_config_backups')
    .values({ id: backupId, agent_id: agentId, user_id: row.user_id, config: JSON.stringify(row.config), created_at: now })
    .execute();
  const keep = trx
    .selectFrom('agent_config_backups')
    .select('id')
    .where('agent_id', '=', agentId)
    .orderBy('seq', 'desc')
    .limit(MAX_AGENT_CONFIG_BACKUPS);
  await trx.deleteFrom('agent_config_backups').where('agent_id', '=', agentId).where('id', 'not in', keep).execute();
  return backupId;
}

export async function saveAgentConfig(
  trx: Tx,
  agentId: string,
  next: Record<string, unknown>,
  now: Date,
  apply: () => Promise<unknown>,
): Promise<{ backupId: string; backups: AgentConfigBackupView[] }> {
  const backupId = await replaceAgentConfig(trx, agentId, next, now, apply);
  return { backupId, backups: await listAgentConfigBackups(trx, agentId) };
}

/** One backup of the agent with its contents; 404 `Backup not found` for another agent's or user's, or none. */
export async function getAgentConfigBackup(
  trx: Tx,
  agentId: string,
  backupId: string,
): Promise<{ id: string; timestamp: string; config: Record<string, unknown> }> {
  const row = await trx
    .selectFrom('agent_config_backups')
    .select(['id', 'config', 'created_at'])
    .where('agent_id', '=', agentId)
    .where('id', '=', backupId)
    .executeTakeFirst();
  if (!row) throw new DomainError('BACKUP_NOT_FOUND');
  return { id: row.id, timestamp: row.created_at.toISOString(), config: row.config };
}

/** Makes a backup the agent's configuration, backing up the current one first (and applying it like a save). */
export async function restoreAgentConfig(
  trx: Tx,
  agentId: string,
  backupId: string,
  now: Date,
  apply: (config: Record<string, unknown>) => Promise<unknown>,
): Promise<{ config: Record<string, unknown>; backups: AgentConfigBackupView[] }> {
  await lockAgent(trx, agentId);
  const { config } = await getAgentConfigBackup(trx, agentId, backupId);
  await replaceAgentConfig(trx, agentId, config, now, () => apply(config));
  return { config, backups: await listAgentConfigBackups(trx, agentId) };
}

/** What the agent's gateway runs with, read from the configuration its host writes (null parts: not set there). */
export interface AppliedAgentConfig {
  /** `agents.defaults.model.primary` of the applied configuration; null when unset (OpenClaw's own default then). */
  model: string | null;
  /** `logging.level`; null when unset (OpenClaw's default, `info`). */
  logLevel: string | null;
  /** `platform`: the model comes from the agent's provider key and replaces the stored `agents.defaults.model.primary`. */
  modelSource: 'platform' | 'config' | 'default';
}

const stringAt = (value: unknown, path: string[]): string | null => {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return null;
    current = (current as Record<string, unknown>)[key];
  }
  return typeof current === 'string' && current ? current : null;
};

/**
 * The configuration the host applies for `spec`: every host writes openclaw.json with `buildOpenClawConfig` (pure) of
 * the agent's spec, so this is the file's content except the host's own address, workspace and log paths, which
 * decide neither the model nor the log level.
 */
export function appliedAgentConfig(spec: Pick<AgentSpec, 'config' | 'channelTokens' | 'llm'>): AppliedAgentConfig {
  const applied = buildOpenClawConfig(spec, { port: 0, bind: 'lan' });
  const model = stringAt(applied, ['agents', 'defaults', 'model', 'primary']);
  return {
    model,
    logLevel: stringAt(applied, ['logging', 'level']),
    modelSource: spec.llm ? 'platform' : model ? 'config' : 'default',
  };
}

/** The applied configuration of an agent on the host (the host's spec, as it writes the file from it). */
export async function appliedConfigOnHost(host: AgentHost, agentId: string): Promise<AppliedAgentConfig> {
  return appliedAgentConfig(await host.spec(agentId));
}
