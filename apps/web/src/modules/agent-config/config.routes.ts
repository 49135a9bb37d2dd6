import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser, userBeforeBody } from '../../platform/http/auth.js';
import { Backup, Config, ConfigView, RestoreConfigBody, SaveConfigBody } from './agent-config.schemas.js';
import { getBackup, getConfig, parseConfigInput, restoreBackup, saveConfig } from './agent-config.service.js';

/** Spec §4.2: per-user agent configuration with versioned backups. */
export async function configRoutes(app: App): Promise<void> {
  const invalidBody = { invalidBody: 'INVALID_REQUEST_BODY' as const };

  app.get('/api/config', { schema: { tags: ['config'], response: { 200: ConfigView } } }, async (request) => {
    const user = await requireUser(request);
    return getConfig(app.db, user.id);
  });

  app.post(
    '/api/config',
    {
      preValidation: userBeforeBody,
      config: invalidBody,
      schema: {
        tags: ['config'],
        body: SaveConfigBody,
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            config: Config,
            backupId: Type.String(),
            backups: Type.Array(Backup),
          }),
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const config = parseConfigInput(request.body.config);
      const { backupId, backups } = await saveConfig(app.db, user.id, config, () => new Date(app.clock()));
      return { success: true as const, config, backupId, backups };
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
        response: { 200: Type.Object({ backup: Type.Object({ id: Type.String(), timestamp: Type.String(), config: Config }) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const backup = await getBackup(app.db, user.id, request.params.backupId);
      if (!backup) throw new DomainError('BACKUP_NOT_FOUND');
      return { backup };
    },
  );

  app.put(
    '/api/config',
    {
      preValidation: userBeforeBody,
      config: invalidBody,
      schema: {
        tags: ['config'],
        body: RestoreConfigBody,
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            config: Config,
            restoredFrom: Type.String(),
            backups: Type.Array(Backup),
          }),
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { backupId } = request.body;
      const restored = await restoreBackup(app.db, user.id, backupId, () => new Date(app.clock()));
      if (!restored) throw new DomainError('BACKUP_NOT_FOUND');
      return { success: true as const, config: restored.config, restoredFrom: backupId, backups: restored.backups };
    },
  );
}
