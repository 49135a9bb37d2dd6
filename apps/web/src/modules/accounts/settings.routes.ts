import { type App, HttpError } from '@aop/core';
import { type Tx, writeAudit, isUniqueViolation } from '@aop/db';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireSessionUser, requireUser } from '../../platform/http/auth.js';
import { checkNotReserved, checkPasswordLength, isEmail, normalizeEmail } from './accounts.service.js';
import {
  cancelEmailLinks,
  pendingEmailOf,
  sendChangeNotice,
  sendVerificationLink,
  verificationDeps,
} from './email-verification.service.js';
import type { Mailer } from '../../platform/clients/mailer.js';
import { hashPassword, verifyPassword } from './passwords.js';

const SettingsSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  emailVerified: Type.Boolean({ description: 'whether the verification link mailed to `email` was followed' }),
  pendingEmail: Type.Union([Type.String(), Type.Null()], {
    description: 'the address an email change waits for: it takes effect when the link mailed there is followed',
  }),
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

async function readSettings(trx: Tx, userId: string, now: number) {
  const row = await trx
    .selectFrom('users')
    .select(['id', 'email', 'email_verified_at', 'name', 'plan', 'credits', 'notifications', 'runtime_instance_id', 'runtime_url'])
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!row) throw new HttpError(404, 'User not found');
  return {
    id: row.id,
    email: row.email,
    emailVerified: row.email_verified_at !== null,
    pendingEmail: await pendingEmailOf(trx, row, now),
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

/**
 * The account's current password, for what a stolen session must not do alone (change the password or the sign-in
 * address): 400 when missing, 401 when wrong, 400 for an account that never had one (identity provider, wallet).
 */
async function checkCurrentPassword(trx: Tx, userId: string, currentPassword: string | undefined, missing: string): Promise<void> {
  if (!currentPassword) throw new HttpError(400, missing);
  const row = await trx.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirst();
  if (!row) throw new HttpError(404, 'User not found');
  // Such an account sets a password through the emailed reset link, which proves it owns the address.
  if (!row.password_hash) throw new HttpError(400, 'This account has no password yet. Use "Forgot password" to set one by email.');
  if (!(await verifyPassword(row.password_hash, currentPassword))) throw new HttpError(401, 'Current password is incorrect');
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
export async function settingsRoutes(app: App, { config, mailer }: { config: WebConfig; mailer: Mailer }): Promise<void> {
  const schema = { tags: ['settings'], response: { 200: SettingsSchema } };

  app.get('/api/settings', { schema }, async (request) => {
    const user = await requireUser(request);
    return orFail(request, 'Failed to fetch settings', () => app.db.withUser(user.id, (trx) => readSettings(trx, user.id, app.clock())));
  });

  app.post(
    '/api/settings',
    {
      schema: {
        ...schema,
        description:
          'Updates the name, or asks to change the sign-in email (signed-in session and `currentPassword`): a link goes to the new address and a notice to the current one; the change takes effect when the link is followed (`pendingEmail` until then).',
        body: Type.Object({
          name: Type.Optional(Type.String()),
          email: Type.Optional(Type.String()),
          currentPassword: Type.Optional(Type.String()),
        }),
      },
    },
    async (request) => {
      const body = request.body ?? {};
      // Changing the sign-in email is an account takeover step: never with an API key.
      const user = body.email === undefined ? await requireUser(request) : await requireSessionUser(request);
      const name = checkedName(body.name);
      let newEmail: string | undefined;
      if (body.email !== undefined) {
        const email = normalizeEmail(body.email);
        if (!isEmail(email)) throw new HttpError(400, 'Invalid email format');
        checkNotReserved(email, config.productName);
        if (email !== user.email.toLowerCase()) newEmail = email;
      }
      return orFail(request, 'Failed to update settings', async () => {
        if (newEmail) {
          await app.db.withUser(user.id, (trx) => checkCurrentPassword(trx, user.id, body.currentPassword, 'Current password required'));
          // The other account is invisible under row-level security, so this look-up is a system one.
          const taken = await app.db.kysely
            .selectFrom('users')
            .select('id')
            .where((eb) => eb(eb.fn('lower', ['email']), '=', newEmail))
            .executeTakeFirst();
          if (taken) throw new HttpError(409, 'Email already in use');
          const now = app.clock();
          await sendVerificationLink(verificationDeps(app.db.kysely, mailer, config, now), {
            userId: user.id,
            email: newEmail,
            purpose: 'change',
          });
          await sendChangeNotice(mailer, user, newEmail);
        }
        return app.db.withUser(user.id, async (trx) => {
          if (name !== undefined) {
            await trx.updateTable('users').set({ name, updated_at: new Date() }).where('id', '=', user.id).execute();
          }
          if (name !== undefined || newEmail) {
            await writeAudit(trx, {
              userId: user.id,
              action: 'settings.update',
              ip: request.ip,
              metadata: { fields: Object.keys(body).filter((field) => field !== 'currentPassword') },
            });
          }
          if (newEmail)
            await writeAudit(trx, { userId: user.id, action: 'email.change_requested', ip: request.ip, metadata: { to: newEmail } });
          return readSettings(trx, user.id, app.clock());
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
          return readSettings(trx, user.id, app.clock());
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
        await checkCurrentPassword(trx, user.id, currentPassword, 'Current and new password required');
        await trx
          .updateTable('users')
          .set({ password_hash: await hashPassword(newPassword), updated_at: new Date() })
          .where('id', '=', user.id)
          .execute();
        // Other devices signed in with the old password are signed out; this one stays.
        let others = trx.deleteFrom('sessions').where('user_id', '=', user.id);
        if (user.sessionId) others = others.where('id', '!=', user.sessionId);
        await others.execute();
        // An email change started with the old password (perhaps by whoever knew it) stops with it.
        await cancelEmailLinks(trx, user.id, new Date(app.clock()));
        await writeAudit(trx, { userId: user.id, action: 'password.change', ip: request.ip });
      });
      return { success: true as const };
    },
  );
}
