import { DomainError } from '@aop/core';
import { type Database, type Tx, writeAudit } from '@aop/db';
import type { Mailer } from '../../platform/clients/mailer.js';
import {
  cancelEmailLinks,
  pendingEmailOf,
  sendChangeNotice,
  sendVerificationLink,
  verificationDeps,
} from './email-verification.service.js';
import { hashPassword, verifyPassword } from './passwords.js';

/** Spec §4.1 settings and password change: what `GET`/`POST`/`PATCH /api/settings` and `POST /api/settings/password` do. */

/** The account's settings as `/api/settings` answers them; 404 when the user is gone. */
export async function readSettings(trx: Tx, userId: string, now: number) {
  const row = await trx
    .selectFrom('users')
    .select(['id', 'email', 'email_verified_at', 'name', 'plan', 'credits', 'notifications', 'runtime_instance_id', 'runtime_url'])
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!row) throw new DomainError('USER_NOT_FOUND');
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

/** `GET /api/settings`: reads as the user (row-level security). */
export const getSettings = (db: Database, userId: string, clock: () => number) =>
  db.withUser(userId, (trx) => readSettings(trx, userId, clock()));

/**
 * The account's current password, for what a stolen session must not do alone (change the password or the sign-in
 * address): 400 when missing, 401 when wrong, 400 for an account that never had one (identity provider, wallet).
 */
export async function checkCurrentPassword(
  trx: Tx,
  userId: string,
  currentPassword: string | undefined,
  missing: 'CURRENT_PASSWORD_REQUIRED' | 'CURRENT_NEW_PASSWORD_REQUIRED',
): Promise<void> {
  if (!currentPassword) throw new DomainError(missing);
  const row = await trx.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirst();
  if (!row) throw new DomainError('USER_NOT_FOUND');
  // Such an account sets a password through the emailed reset link, which proves it owns the address.
  if (!row.password_hash) throw new DomainError('ACCOUNT_HAS_NO_PASSWORD_YET');
  if (!(await verifyPassword(row.password_hash, currentPassword))) throw new DomainError('CURRENT_PASSWORD_INCORRECT');
}

/**
 * Starts moving the account to `newEmail` (already normalised and checked): the current password must be right and
 * no other account may use the address (409); a link goes to the new address and a notice to the current one.
 */
export async function requestEmailChange(
  db: Database,
  mailer: Mailer,
  config: { publicUrl: string; emailVerificationTtlMs: number },
  args: { user: { id: string; email: string }; newEmail: string; currentPassword: string | undefined; clock: () => number },
): Promise<void> {
  const { user, newEmail } = args;
  await db.withUser(user.id, (trx) => checkCurrentPassword(trx, user.id, args.currentPassword, 'CURRENT_PASSWORD_REQUIRED'));
  // The other account is invisible under row-level security, so this look-up is a system one.
  const taken = await db.kysely
    .selectFrom('users')
    .select('id')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', newEmail))
    .executeTakeFirst();
  if (taken) throw new DomainError('EMAIL_ALREADY_IN_USE');
  const now = args.clock();
  await sendVerificationLink(verificationDeps(db.kysely, mailer, config, now), { userId: user.id, email: newEmail, purpose: 'change' });
  await sendChangeNotice(mailer, user, newEmail);
}

/**
 * `POST /api/settings` after any email change was requested: stores the name, writes the audit entries (`fields`: the
 * body's fields but the password) and answers the settings, in one transaction as the user.
 */
export function updateSettings(
  db: Database,
  args: { userId: string; name: string | undefined; newEmail: string | undefined; fields: string[]; ip: string; clock: () => number },
) {
  const { userId, name, newEmail, ip } = args;
  return db.withUser(userId, async (trx) => {
    if (name !== undefined) {
      await trx.updateTable('users').set({ name, updated_at: new Date() }).where('id', '=', userId).execute();
    }
    if (name !== undefined || newEmail) {
      await writeAudit(trx, { userId, action: 'settings.update', ip, metadata: { fields: args.fields } });
    }
    if (newEmail) await writeAudit(trx, { userId, action: 'email.change_requested', ip, metadata: { to: newEmail } });
    return readSettings(trx, userId, args.clock());
  });
}

/** `PATCH /api/settings`: stores the name and notification settings given, and answers the settings. */
export function patchSettings(
  db: Database,
  userId: string,
  changes: { name: string | undefined; notifications: Record<string, unknown> | undefined },
  clock: () => number,
) {
  const { name, notifications } = changes;
  return db.withUser(userId, async (trx) => {
    if (name !== undefined || notifications !== undefined) {
      await trx
        .updateTable('users')
        .set({
          ...(name !== undefined ? { name } : {}),
          ...(notifications !== undefined ? { notifications: JSON.stringify(notifications) } : {}),
          updated_at: new Date(),
        })
        .where('id', '=', userId)
        .execute();
    }
    return readSettings(trx, userId, clock());
  });
}

/**
 * Changes the password after checking the current one. In the same
 * transaction, other sessions end and open email changes stop, so nothing started with the old password outlives it.
 */
export async function changePassword(
  db: Database,
  args: {
    userId: string;
    /** The session making the change: it stays signed in. */
    sessionId: string | undefined;
    currentPassword: string;
    newPassword: string;
    ip: string;
    clock: () => number;
  },
): Promise<void> {
  const { userId } = args;
  await db.withUser(userId, async (trx) => {
    await checkCurrentPassword(trx, userId, args.currentPassword, 'CURRENT_NEW_PASSWORD_REQUIRED');
    await trx
      .updateTable('users')
      .set({ password_hash: await hashPassword(args.newPassword), updated_at: new Date() })
      .where('id', '=', userId)
      .execute();
    // Other devices signed in with the old password are signed out; this one stays.
    let others = trx.deleteFrom('sessions').where('user_id', '=', userId);
    if (args.sessionId) others = others.where('id', '!=', args.sessionId);
    await others.execute();
    // An email change started with the old password (perhaps by whoever knew it) stops with it.
    await cancelEmailLinks(trx, userId, new Date(args.clock()));
    await writeAudit(trx, { userId, action: 'password.change', ip: args.ip });
  });
}
