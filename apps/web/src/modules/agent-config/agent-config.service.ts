import { DomainError, checkJsonText, newId, toolsProfileFor } from '@aop/core';
import { type Database, prepared, type Tx } from '@aop/db';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { jsonArrayFrom } from 'kysely/helpers/postgres';

export const DEFAULT_MODEL = 'openrouter/anthropic/claude-sonnet-4.5';
export const DEFAULT_WORKSPACE = '/home/node/.openclaw/workspace';

/** The provisioning template (spec §2.2): what a user with no saved configuration receives. */
export function defaultAgentConfig(plan: string): Record<string, unknown> {
  const channel = { enabled: false, dmPolicy: 'pairing' };
  return {
    logging: { level: 'info' },
    agents: {
      defaults: {
        workspace: DEFAULT_WORKSPACE,
        model: { primary: DEFAULT_MODEL },
        heartbeat: { every: '30m', lightContext: true, isolatedSession: true },
      },
    },
    tools: {
      profile: toolsProfileFor(plan),
      exec: { backgroundMs: 10_000, timeoutSec: 1_800 },
      web: { search: { enabled: true }, fetch: { enabled: true, maxChars: 50_000 } },
    },
    gateway: { bind: 'lan', auth: { mode: 'token' } },
    channels: {
      telegram: { ...channel },
      discord: { ...channel },
      whatsapp: { ...channel },
      webchat: { enabled: true },
    },
    cron: { enabled: true, maxConcurrentRuns: 2, sessionRetention: '24h' },
    session: {
      scope: 'per-sender',
      reset: { mode: 'daily', atHour: 4 },
      maintenance: { mode: 'warn', pruneAfter: '30d', maxEntries: 500 },
    },
    skills: { install: { nodeManager: 'npm' } },
  };
}

// Every object is open: unknown keys are kept, only the known ones are typed.
const Open = <T extends Record<string, TSchema>>(props: T) => Type.Partial(Type.Object(props, { additionalProperties: true }));
const Duration = Type.String({ pattern: '^\\d+(ms|s|m|h|d)$' });
const DmPolicy = Type.Union([Type.Literal('pairing'), Type.Literal('allowlist')]);
const Channel = Open({ enabled: Type.Boolean(), dmPolicy: DmPolicy });

/** The known keys of §2.2 and their types. */
export const AgentConfigSchema = Open({
  logging: Open({ level: Type.String({ minLength: 1 }) }),
  agents: Open({
    defaults: Open({
      workspace: Type.String({ minLength: 1 }),
      model: Open({ primary: Type.String({ minLength: 1 }) }),
      heartbeat: Open({ every: Duration, lightContext: Type.Boolean(), isolatedSession: Type.Boolean() }),
    }),
  }),
  tools: Open({
    profile: Type.Union([Type.Literal('minimal'), Type.Literal('coding'), Type.Literal('messaging'), Type.Literal('full')]),
    exec: Open({ backgroundMs: Type.Integer({ minimum: 0 }), timeoutSec: Type.Integer({ minimum: 1 }) }),
    web: Open({
      search: Open({ enabled: Type.Boolean() }),
      fetch: Open({ enabled: Type.Boolean(), maxChars: Type.Integer({ minimum: 1 }) }),
    }),
  }),
  gateway: Open({
    bind: Type.Union([
      Type.Literal('lan'),
      Type.Literal('loopback'),
      Type.Literal('tailnet'),
      Type.Literal('auto'),
      Type.Literal('custom'),
    ]),
    auth: Open({
      mode: Type.Union([Type.Literal('token'), Type.Literal('password'), Type.Literal('none'), Type.Literal('trusted-proxy')]),
    }),
  }),
  channels: Open({ telegram: Channel, discord: Channel, whatsapp: Channel, webchat: Open({ enabled: Type.Boolean() }) }),
  cron: Open({ enabled: Type.Boolean(), maxConcurrentRuns: Type.Integer({ minimum: 1 }), sessionRetention: Duration }),
  session: Open({
    scope: Type.String({ minLength: 1 }),
    reset: Open({ mode: Type.String({ minLength: 1 }), atHour: Type.Integer({ minimum: 0, maximum: 23 }) }),
    maintenance: Open({
      mode: Type.Union([Type.Literal('warn'), Type.Literal('silent')]),
      pruneAfter: Duration,
      maxEntries: Type.Integer({ minimum: 1 }),
    }),
  }),
  skills: Open({ install: Open({ nodeManager: Type.String({ minLength: 1 }) }) }),
});
export type AgentConfig = Static<typeof AgentConfigSchema>;

/** The first problem with a config's known keys as `path: reason`, or null when it is valid. */
export function configProblem(config: Record<string, unknown>): string | null {
  const first = Value.Errors(AgentConfigSchema, config).First();
  if (!first) return null;
  const path = first.path.replace(/^\//, '').replaceAll('/', '.') || '(root)';
  return `${path}: ${first.message}`;
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A configuration as sent (`POST /api/config`, `PUT /api/agents/:id/config`): an object, or a string of JSON holding
 * one, whose known keys have the types of §2.2. Throws the spec's 400s.
 */
export function parseConfigInput(value: unknown): Record<string, unknown> {
  let config: unknown = value;
  if (typeof config === 'string') {
    // JSON inside a string gets past the body parser's rules: the config is stored as jsonb and stringified again.
    checkJsonText(config);
    try {
      config = JSON.parse(config);
    } catch {
      throw new DomainError('CONFIG_NOT_VALID_JSON');
    }
  }
  if (!isPlainObject(config)) throw new DomainError('INVALID_CONFIG_OBJECT');
  const problem = configProblem(config);
  if (problem) throw new DomainError('INVALID_CONFIG', { problem });
  return config;
}

/** Spec §8: only the 10 newest backups are kept. */
export const MAX_BACKUPS = 10;

export interface BackupView {
  id: string;
  timestamp: string;
}

async function currentConfig(trx: Tx, userId: string): Promise<Record<string, unknown>> {
  const saved = await trx.selectFrom('agent_configs').select('config').where('user_id', '=', userId).executeTakeFirst();
  if (saved) return saved.config;
  const { plan } = await trx.selectFrom('users').select('plan').where('id', '=', userId).executeTakeFirstOrThrow();
  return defaultAgentConfig(plan);
}

async function listBackups(trx: Tx): Promise<BackupView[]> {
  const rows = await trx.selectFrom('config_backups').select(['id', 'created_at']).orderBy('seq', 'desc').limit(MAX_BACKUPS).execute();
  return rows.map((r) => ({ id: r.id, timestamp: r.created_at.toISOString() }));
}

/**
 * Backs up the current configuration, writes `next`, and keeps the 10 newest
 * backups. The user's row is locked first, so concurrent saves queue up and
 * never lose a backup or keep an eleventh.
 */
async function replaceConfig(trx: Tx, userId: string, next: Record<string, unknown>, now: Date): Promise<string> {
  await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
  const backupId = newId('backup');
  await trx
    .insertInto('config_backups')
    .values({ id: backupId, user_id: userId, config: JSON.stringify(await currentConfig(trx, userId)), created_at: now })
    .execute();
  await trx
    .insertInto('agent_configs')
    .values({ user_id: userId, config: JSON.stringify(next), updated_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ config: JSON.stringify(next), updated_at: now }))
    .execute();
  const keep = trx.selectFrom('config_backups').select('id').orderBy('seq', 'desc').limit(MAX_BACKUPS);
  await trx.deleteFrom('config_backups').where('id', 'not in', keep).execute();
  return backupId;
}

/** The user's configuration (saved, or the provisioning template) and their newest backups. */
// One statement for the configuration, the plan its default follows, and the backup list: this is the dashboard's most
// frequent read, and each statement is a round trip.
const configWithBackups = prepared((db, userId: string) =>
  db
    .selectFrom('users')
    .where('users.id', '=', userId)
    .select((eb) => [
      'users.plan',
      eb.selectFrom('agent_configs').select('agent_configs.config').whereRef('agent_configs.user_id', '=', 'users.id').as('config'),
      jsonArrayFrom(
        eb
          .selectFrom('config_backups')
          .select(['config_backups.id', 'config_backups.created_at'])
          .orderBy('seq', 'desc')
          .limit(MAX_BACKUPS),
      ).as('backups'),
    ]),
);

export async function getConfig(db: Database, userId: string): Promise<{ config: Record<string, unknown>; backups: BackupView[] }> {
  const {
    rows: [row],
  } = await db.readAsUser(userId, (trx) => configWithBackups(trx, userId));
  if (!row) throw new Error('the caller has no user row');
  return {
    config: row.config ?? defaultAgentConfig(row.plan),
    // Inside JSON a timestamp is Postgres's text, not a Date: read it back into the ISO form the other routes answer.
    backups: row.backups.map((b) => ({ id: b.id, timestamp: new Date(b.created_at).toISOString() })),
  };
}

/** Saves `config` (backing up the current one) and answers the new backup's id and the newest backups. */
export async function saveConfig(
  db: Database,
  userId: string,
  config: Record<string, unknown>,
  now: () => Date,
): Promise<{ backupId: string; backups: BackupView[] }> {
  return db.withUser(userId, async (trx) => {
    const backupId = await replaceConfig(trx, userId, config, now());
    return { backupId, backups: await listBackups(trx) };
  });
}

/** One of the user's backups with its contents, or null when they have none of that id. */
export async function getBackup(
  db: Database,
  userId: string,
  backupId: string,
): Promise<{ id: string; timestamp: string; config: Record<string, unknown> } | null> {
  return db.withUser(userId, async (trx) => {
    // Another user's backup is "not found", like a missing id (row-level security says the same).
    const row = await trx
      .selectFrom('config_backups')
      .select(['id', 'config', 'created_at'])
      .where('id', '=', backupId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row ? { id: row.id, timestamp: row.created_at.toISOString(), config: row.config } : null;
  });
}

/**
 * Makes a backup the current configuration (backing up the current one first) and answers the restored configuration
 * and the newest backups, or null when the backup does not exist (nothing is written then).
 */
export async function restoreBackup(
  db: Database,
  userId: string,
  backupId: string,
  now: () => Date,
): Promise<{ config: Record<string, unknown>; backups: BackupView[] } | null> {
  return db.withUser(userId, async (trx) => {
    const backup = await trx.selectFrom('config_backups').select('config').where('id', '=', backupId).executeTakeFirst();
    if (!backup) return null;
    await replaceConfig(trx, userId, backup.config, now());
    return { config: backup.config, backups: await listBackups(trx) };
  });
}
