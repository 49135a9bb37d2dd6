import { DomainError, newId } from '@aop/core';
import { type Database, isUniqueViolation } from '@aop/db';
import { requireOwnAgent } from '../../platform/owned-agent.js';

/** Rules of the `skills` table (spec §4.18), shared by `/api/skills` and `POST /api/agent` `update-skill`. */

export const SKILL_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
export const SKILL_DESCRIPTION_MAX = 1000;
/** The JSON text of a skill's config. */
export const SKILL_CONFIG_MAX_BYTES = 64 * 1024;
export const SKILL_AGENT_ID_MAX = 200;
/**
 * The built-in skills, served at `/api/skills/<name>` by their own routes (spec §4.18): an installed skill of the same
 * name could never be updated through `POST /api/skills/:name`, so the names are not free.
 */
export const BUILT_IN_SKILLS: readonly string[] = ['booking-settlement', 'instant-split'];

export interface SkillRow {
  id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  agent_id: string | null;
  config: Record<string, unknown>;
  installed_at: Date;
}

export const SKILL_COLUMNS = ['id', 'name', 'description', 'enabled', 'agent_id', 'config', 'installed_at'] as const;

export interface SkillView {
  id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  agentId: string | null;
  config: Record<string, unknown>;
  installedAt: string;
}

export const skillView = (row: SkillRow): SkillView => ({
  id: row.id,
  name: row.name,
  description: row.description,
  enabled: row.enabled,
  agentId: row.agent_id,
  config: row.config,
  installedAt: row.installed_at.toISOString(),
});

/** `agentId` of a body: absent, null or `all` is the user-wide scope (null). */
export function skillAgentScope(agentId: unknown): string | null {
  if (agentId === undefined || agentId === null || agentId === 'all') return null;
  if (typeof agentId !== 'string' || agentId === '' || agentId.length > SKILL_AGENT_ID_MAX)
    throw new DomainError('FIELD_NOT_STRING', { field: 'agentId' });
  return agentId;
}

export function checkedSkillConfig(config: unknown): Record<string, unknown> {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new DomainError('CONFIG_OBJECT');
  if (Buffer.byteLength(JSON.stringify(config)) > SKILL_CONFIG_MAX_BYTES) {
    throw new DomainError('SKILL_CONFIG_TOO_LARGE', { max: SKILL_CONFIG_MAX_BYTES });
  }
  return config as Record<string, unknown>;
}

export function checkedSkillDescription(description: unknown): string | null {
  if (description === undefined || description === null) return null;
  if (typeof description !== 'string') throw new DomainError('FIELD_NOT_STRING', { field: 'description' });
  if (description.length > SKILL_DESCRIPTION_MAX)
    throw new DomainError('FIELD_TOO_LONG', { field: 'description', max: SKILL_DESCRIPTION_MAX });
  return description.trim() || null;
}

/** The caller's skills, oldest first; `agentId` omitted, '' or `all` lists every scope. */
export async function listSkills(db: Database, userId: string, agentId: string | undefined): Promise<SkillView[]> {
  const rows = await db.withUser(userId, (trx) => {
    let query = trx.selectFrom('skills').select(SKILL_COLUMNS).where('user_id', '=', userId);
    if (agentId !== undefined && agentId !== '' && agentId !== 'all') query = query.where('agent_id', '=', agentId);
    return query.orderBy('installed_at').orderBy('name').orderBy('id').execute();
  });
  return rows.map(skillView);
}

/**
 * Installs a skill in the scope `agentId` (null: all of the user's agents); null when that scope already has a skill
 * of this name. 404 `Agent not found` when `agentId` is not the caller's.
 */
export async function installSkill(
  db: Database,
  userId: string,
  skill: {
    name: string;
    agentId: string | null;
    description: string | null;
    config: Record<string, unknown>;
    enabled: boolean | undefined;
  },
): Promise<SkillView | null> {
  const { name, agentId, description, config, enabled } = skill;
  if (BUILT_IN_SKILLS.includes(name)) throw new DomainError('SKILL_NAME_RESERVED');
  try {
    const row = await db.withUser(userId, async (trx) => {
      if (agentId !== null) await requireOwnAgent(trx, agentId);
      return trx
        .insertInto('skills')
        .values({
          id: newId('skill'),
          user_id: userId,
          agent_id: agentId,
          name,
          description,
          config: JSON.stringify(config),
          ...(typeof enabled === 'boolean' ? { enabled } : {}),
        })
        .returning(SKILL_COLUMNS)
        .executeTakeFirstOrThrow();
    });
    return skillView(row);
  } catch (err) {
    // The unique index (user, scope, name) decides, so two concurrent installs cannot both succeed.
    if (isUniqueViolation(err)) return null;
    throw err;
  }
}

export interface SkillChanges {
  agentId?: unknown;
  enabled?: unknown;
  config?: unknown;
  description?: unknown;
}

/**
 * Updates the skill `name` of the scope `changes.agentId` (absent: the user-wide one): `enabled`, `config` and
 * `description` when given. 400 for a bad field, 404 `Skill not found` when the user has no such skill.
 */
export async function updateSkill(db: Database, userId: string, name: unknown, changes: SkillChanges): Promise<SkillView> {
  if (typeof name !== 'string' || !SKILL_NAME.test(name)) throw new DomainError('INVALID_SKILL_NAME');
  const agentId = skillAgentScope(changes.agentId);
  if (changes.enabled !== undefined && typeof changes.enabled !== 'boolean')
    throw new DomainError('FIELD_NOT_BOOLEAN', { field: 'enabled' });
  const enabled = changes.enabled;
  const config = changes.config === undefined ? undefined : checkedSkillConfig(changes.config);
  const description = changes.description === undefined ? undefined : checkedSkillDescription(changes.description);
  const skill = await db.withUser(userId, async (trx) => {
    let query = trx
      .updateTable('skills')
      .set({
        updated_at: new Date(),
        ...(typeof enabled === 'boolean' ? { enabled } : {}),
        ...(config !== undefined ? { config: JSON.stringify(config) } : {}),
        ...(description !== undefined ? { description } : {}),
      })
      .where('user_id', '=', userId)
      .where('name', '=', name);
    query = agentId === null ? query.where('agent_id', 'is', null) : query.where('agent_id', '=', agentId);
    return query.returning(SKILL_COLUMNS).executeTakeFirst();
  });
  if (!skill) throw new DomainError('SKILL_NOT_FOUND');
  return skillView(skill);
}
