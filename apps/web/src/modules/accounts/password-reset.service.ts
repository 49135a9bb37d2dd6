import { randomHex, sha256Hex } from '@aop/core';
import { type DB, writeAudit } from '@aop/db';
import type { Kysely } from 'kysely';
import type { Mailer } from '../../platform/clients/mailer.js';
import { deleteUserSessions } from '../../platform/sessions.js';
import { findUserByEmail } from './accounts.service.js';
import { cancelEmailLinks, markCurrentEmailVerified } from './email-verification.service.js';
import { hashPassword } from './passwords.js';

/** Spec §4.1 forgot / reset password: single-use tokens, only their SHA-256 stored. */

/** Creates a single-use token for the account with `email`, if any, and mails the link. */
export async function sendResetLink(
  db: Kysely<DB>,
  mailer: Mailer,
  config: { publicUrl: string; passwordResetTtlMs: number },
  args: { email: string; ip: string; clock: () => number },
): Promise<void> {
  const user = await findUserByEmail(db, args.email);
  if (!user) return;
  const token = randomHex(32);
  await db
    .insertInto('password_reset_tokens')
    .values({ token_hash: sha256Hex(token), user_id: user.id, expires_at: new Date(args.clock() + config.passwordResetTtlMs) })
    .execute();
  await writeAudit(db, { userId: user.id, action: 'password.reset_requested', ip: args.ip });
  const minutes = Math.round(config.passwordResetTtlMs / 60_000);
  await mailer.send({
    kind: 'password-reset',
    userId: user.id,
    to: user.email,
    subject: 'Reset your password',
    text: [
      `Someone (hopefully you) asked to reset the password of ${user.email}.`,
      '',
      `Choose a new password here (the link works once, for ${minutes} minutes):`,
      `${config.publicUrl}/reset-password?token=${token}`,
      '',
      'If you did not ask for this, ignore this message: your password stays as it is.',
    ].join('\n'),
  });
}

/**
 * Sets the password of the account `token` was mailed for, in one transaction with everything a reset ends. False
 * when the token is unknown, used or expired (nothing changes then).
 */
export async function resetPassword(
  db: Kysely<DB>,
  args: { token: string; password: string; ip: string; clock: () => number },
): Promise<boolean> {
  const passwordHash = await hashPassword(args.password);
  const now = new Date(args.clock());
  return db.transaction().execute(async (trx) => {
    // Marking the token used is the check: of two concurrent resets only one updates the row.
    const claimed = await trx
      .updateTable('password_reset_tokens')
      .set({ used_at: now })
      .where('token_hash', '=', sha256Hex(args.token))
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('user_id')
      .executeTakeFirst();
    if (!claimed) return false;
    await trx.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', claimed.user_id).execute();
    // The link went to the account's address, so following it proves that address.
    await markCurrentEmailVerified(trx, claimed.user_id, now);
    // A reset is what people do when they fear someone else is signed in: end every session, and every email
    // change such a person may have started (its link went to their mailbox).
    await deleteUserSessions(trx, claimed.user_id);
    await cancelEmailLinks(trx, claimed.user_id, now);
    // Other outstanding links for this account stop working too.
    await trx
      .updateTable('password_reset_tokens')
      .set({ used_at: now })
      .where('user_id', '=', claimed.user_id)
      .where('used_at', 'is', null)
      .execute();
    await writeAudit(trx, { userId: claimed.user_id, action: 'password.reset', ip: args.ip });
    return true;
  });
}
