import { type App, HttpError } from '@aop/core';
import { type Tx, writeAudit, isUniqueViolation } from '@aop/db';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireSessionUser, requireUser } from '../../plugins/auth.js';
import { checkNotReserved, checkPasswordLength, isEmail, normalizeEmail } from '../../services/accounts.js';
import { hashPassword, verifyPassword } from '../../services/passwords.js';

const SettingsSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.String(),
  plan: Type.String(),
  credits: Type.Number({ description: 'referral credits' }),
  twoFactorEnabled: Type.Boolean(),
  notifications: Type.Record(Type.String(), Type.Unknown()),
  runtime: Type.Object({
    managed: Type.Boolean(),
    instanceId: Type.Union([Type.String(), Type.Null()]),
    url: Type.Union([Type.String(), Type.Null()]),
  }),
});

async function readSettings(trx: Tx, userId: string) {
  const row = await trx
    .selectFrom('users')
    .select(['id', 'email', 'name', 'plan', 'credits', 'notifications', 'runtime_instance_id', 'runtime_url'])
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!row) throw new HttpError(404, 'User not found');
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    plan: row.plan,
    credits: row.credits,
    twoFactorEnabled: false,
    notifications: row.notifications,
    runtime: { managed: true, instanceId: row.runtime_instance_id, url: row.runtime_url },
  };
}

/** Runs `fn`, turning anything but an HttpError into a 500 with the spec's message. */
async function orFail<T>(request: FastifyRequest, message: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof HttpError) throw err;
    if (isUniqueViolation(err)) throw new HttpError(409, 'Email already in use');
    request.log.error({ err }, message);
    throw new HttpError(500, message);
  }
}

const NAME_MAX = 100;

function checkedName(name: unknown): string | undefined {
  if (name === undefined) return undefined;
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (!trimmed) throw new HttpError(400, 'Name must not be empty');
  if (trimmed.length > NAME_MAX) throw new HttpError(400, `Name must be at most ${NAME_MAX} characters`);
  return trimmed;
}

/** Spec §4.1 settings and password change; shapes from the reference (research/not-shown-facts.md). */
export async function settingsRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const schema = { tags: ['settings'], response: { 200: SettingsSchema } };

  app.get('/api/settings', { schema }, async (request) => {
    const user = await requireUser(request);
    return orFail(request, 'Failed to fetch settings', () => app.db.withUser(user.id, (trx) => readSettings(trx, user.id)));
  });

  app.post(
    '/api/settings',
    { schema: { ...schema, body: Type.Object({ name: Type.Optional(Type.String()), email: Type.Optional(Type.String()) }) } },
    async (request) => {
      // Changing the sign-in email is an account takeover step: never with an API key.
      const user = request.body?.email === undefined ? await requireUser(request) : await requireSessionUser(request);
      const name = checkedName(request.body?.name);
      let email: string | undefined;
      if (request.body?.email !== undefined) {
        email = normalizeEmail(request.body.email);
        if (!isEmail(email)) throw new HttpError(400, 'Invalid email format');
        checkNotReserved(email, config.productName);
      }
      return orFail(request, 'Failed to update settings', async () => {
        if (email && email !== user.email.toLowerCase()) {
          // The other account is invisible under row-level security, so this look-up is a system one.
          const taken = await app.db.kysely
            .selectFrom('users')
            .select('id')
            .where((eb) => eb(eb.fn('lower', ['email']), '=', email))
            .executeTakeFirst();
          if (taken && taken.id !== user.id) throw new HttpError(409, 'Email already in use');
        }
        return app.db.withUser(user.id, async (trx) => {
          if (name !== undefined || email !== undefined) {
            await trx
              .updateTable('users')
              .set({ ...(name !== undefined ? { name } : {}), ...(email !== undefined ? { email } : {}), updated_at: new Date() })
              .where('id', '=', user.id)
              .execute();
            await writeAudit(trx, {
              userId: user.id,
              action: 'settings.update',
              ip: request.ip,
              metadata: { fields: Object.keys(request.body ?? {}) },
            });
          }
          return readSettings(trx, user.id);
        });
      });
    },
  );

  app.patch(
    '/api/settings',
    {
      schema: {
        ...schema,
        body: Type.Object({ name: Type.Optional(Type.String()), notifications: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }),
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const name = checkedName(request.body?.name);
      const notifications = request.body?.notifications;
      return orFail(request, 'Failed to update settings', () =>
        app.db.withUser(user.id, async (trx) => {
          if (name !== undefined || notifications !== undefined) {
            await trx
              .updateTable('users')
              .set({
                ...(name !== undefined ? { name } : {}),
                ...(notifications !== undefined ? { notifications: JSON.stringify(notifications) } : {}),
                updated_at: new Date(),
              })
              .where('id', '=', user.id)
              .execute();
          }
          return readSettings(trx, user.id);
        }),
      );
    },
  );

  app.post(
    '/api/settings/password',
    {
      config: { invalidBodyMessage: 'Current and new password required' },
      schema: {
        tags: ['settings'],
        body: Type.Object({ currentPassword: Type.Optional(Type.String()), newPassword: Type.Optional(Type.String()) }),
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
    },
    async (request) => {
      const user = await requireSessionUser(request, 'Not authenticated');
      const { currentPassword, newPassword } = request.body ?? {};
      if (!currentPassword || !newPassword) throw new HttpError(400, 'Current and new password required');
      checkPasswordLength(newPassword);
      await app.db.withUser(user.id, async (trx) => {
        const row = await trx.selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirst();
        if (!row) throw new HttpError(404, 'User not found');
        // An account made through an identity provider or a wallet has no password to prove;
        // it sets one through the emailed reset link, which proves it owns the address.
        if (!row.password_hash) throw new HttpError(400, 'This account has no password yet. Use "Forgot password" to set one by email.');
        if (!(await verifyPassword(row.password_hash, currentPassword))) throw new HttpError(401, 'Current password is incorrect');
        await trx
          .updateTable('users')
          .set({ password_hash: await hashPassword(newPassword), updated_at: new Date() })
          .where('id', '=', user.id)
          .execute();
        // Other devices signed in with the old password are signed out; this one stays.
        let others = trx.deleteFrom('sessions').where('user_id', '=', user.id);
        if (user.sessionId) others = others.where('id', '!=', user.sessionId);
        await others.execute();
        await writeAudit(trx, { userId: user.id, action: 'password.change', ip: request.ip });
      });
      return { success: true as const };
    },
  );
}
