import { type App, HttpError, checkJsonText, newId } from '@aop/core';
import type { Tx } from '@aop/db';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import { configProblem, defaultAgentConfig, isPlainObject } from './agent-config.service.js';

/** Spec §8: only the 10 newest backups are kept. */
export const MAX_BACKUPS = 10;

const BackupSchema = Type.Object({ id: Type.String(), timestamp: Type.String() });
const ConfigSchema = Type.Record(Type.String(), Type.Unknown());

async function currentConfig(trx: Tx, userId: string): Promise<Record<string, unknown>> {
  const saved = await trx.selectFrom('agent_configs').select('config').where('user_id', '=', userId).executeTakeFirst();
  if (saved) return saved.config;
  const { plan } = await trx.selectFrom('users').select('plan').where('id', '=', userId).executeTakeFirstOrThrow();
  return defaultAgentConfig(plan);
}

async function listBackups(trx: Tx): Promise<{ id: string; timestamp: string }[]> {
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

/** The `config` of a POST body: an object, or a string holding one. */
function parseConfigField(value: unknown): Record<string, unknown> {
  let config = value;
  if (typeof config === 'string') {
    // JSON inside a string gets past the body parser's rules: the config is stored as jsonb and stringified again.
    checkJsonText(config);
    try {
      config = JSON.parse(config);
    } catch {
      throw new HttpError(400, 'Config is not valid JSON');
    }
  }
  if (!isPlainObject(config)) throw new HttpError(400, 'Invalid config object');
  const problem = configProblem(config);
  if (problem) throw new HttpError(400, `Invalid config: ${problem}`);
  return config;
}

/** Spec §4.2: per-user agent configuration with versioned backups. */
export async function configRoutes(app: App): Promise<void> {
  const invalidBody = { invalidBodyMessage: 'Invalid request body' };

  app.get(
    '/api/config',
    { schema: { tags: ['config'], response: { 200: Type.Object({ config: ConfigSchema, backups: Type.Array(BackupSchema) }) } } },
    async (request) => {
      const user = await requireUser(request);
      return app.db.withUser(user.id, async (trx) => ({ config: await currentConfig(trx, user.id), backups: await listBackups(trx) }));
    },
  );

  app.post(
    '/api/config',
    {
      config: invalidBody,
      schema: {
        tags: ['config'],
        body: Type.Object({ config: Type.Optional(Type.Unknown()) }),
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            config: ConfigSchema,
            backupId: Type.String(),
            backups: Type.Array(BackupSchema),
          }),
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const config = parseConfigField(request.body?.config);
      return app.db.withUser(user.id, async (trx) => {
        const backupId = await replaceConfig(trx, user.id, config, new Date(app.clock()));
        return { success: true as const, config, backupId, backups: await listBackups(trx) };
      });
    },
  );

  // Not in spec §4.2 (backup lists carry only id and timestamp): one backup's contents, so the dashboard can show what
  // restoring it would change before anyone restores it.
  app.get(
    '/api/config/backups/:backupId',
    {
      schema: {
        tags: ['config'],
        params: Type.Object({ backupId: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: Type.Object({ backup: Type.Object({ id: Type.String(), timestamp: Type.String(), config: ConfigSchema }) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      return app.db.withUser(user.id, async (trx) => {
        // Another user's backup is "not found", like a missing id (row-level security says the same).
        const row = await trx
          .selectFrom('config_backups')
          .select(['id', 'config', 'created_at'])
          .where('id', '=', request.params.backupId)
          .where('user_id', '=', user.id)
          .executeTakeFirst();
        if (!row) throw new HttpError(404, 'Backup not found');
        return { backup: { id: row.id, timestamp: row.created_at.toISOString(), config: row.config } };
      });
    },
  );

  app.put(
    '/api/config',
    {
      config: invalidBody,
      schema: {
        tags: ['config'],
        body: Type.Object({ backupId: Type.Optional(Type.Unknown()) }),
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            config: ConfigSchema,
            restoredFrom: Type.String(),
            backups: Type.Array(BackupSchema),
          }),
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const backupId = request.body?.backupId;
      if (typeof backupId !== 'string' || backupId === '') throw new HttpError(400, 'Missing backupId');
      return app.db.withUser(user.id, async (trx) => {
        const backup = await trx.selectFrom('config_backups').select('config').where('id', '=', backupId).executeTakeFirst();
        if (!backup) throw new HttpError(404, 'Backup not found');
        await replaceConfig(trx, user.id, backup.config, new Date(app.clock()));
        return { success: true as const, config: backup.config, restoredFrom: backupId, backups: await listBackups(trx) };
      });
    },
  );
}
