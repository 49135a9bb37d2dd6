import { DomainError, randomHex, sha256Hex } from '@aop/core';
import { type DB, isUniqueViolation, writeAudit } from '@aop/db';
import type { Kysely } from 'kysely';
import type { Mailer } from '../../platform/clients/mailer.js';

/**
 * Email verification: an address counts (administrator rights from ADMIN_EMAILS, invites, the address the backend is
 * told) only once a link mailed to it was followed. A link proves one address for one account: the account's own
 * after registration, or the address an email change asks for; until that link is followed the account keeps the
 * address it had. Tokens are 32 random bytes, only their SHA-256 stored, good once.
 */

const TOKEN_FORMAT = /^[0-9a-f]{64}$/;

export interface VerificationLink {
  userId: string;
  /** The address to prove (lower-case); the link is mailed there. */
  email: string;
  /** `register`: the account's own address; `change`: the address it asks to move to. */
  purpose: 'register' | 'change';
}

export interface VerificationDeps {
  db: Kysely<DB>;
  mailer: Mailer;
  publicUrl: string;
  ttlMs: number;
  now: number;
}

/** The link settings from the web config: where links point and how long they work. */
export const verificationDeps = (
  db: Kysely<DB>,
  mailer: Mailer,
  config: { publicUrl: string; emailVerificationTtlMs: number },
  now: number,
): VerificationDeps => ({ db, mailer, publicUrl: config.publicUrl, ttlMs: config.emailVerificationTtlMs, now });

/** Stores a new single-use token for `link.email` and mails its link there. */
export async function sendVerificationLink(deps: VerificationDeps, link: VerificationLink): Promise<void> {
  const token = randomHex(32);
  await deps.db
    .insertInto('email_verification_tokens')
    .values({ token_hash: sha256Hex(token), user_id: link.userId, email: link.email, expires_at: new Date(deps.now + deps.ttlMs) })
    .execute();
  const hours = Math.round(deps.ttlMs / 3_600_000);
  const url = `${deps.publicUrl}/verify-email?token=${token}`;
  const text =
    link.purpose === 'register'
      ? [`Welcome! Confirm that ${link.email} is your address by opening this link (it works once, for ${hours} hours):`, url]
      : [
          `Someone (hopefully you) asked to make ${link.email} the sign-in address of their account.`,
          '',
          `Confirm it by opening this link (it works once, for ${hours} hours):`,
          url,
          '',
          'Until then the account keeps its current address. If you did not ask for this, ignore this message.',
        ];
  await deps.mailer.send({
    kind: 'email-verification',
    userId: link.userId,
    to: link.email,
    subject: link.purpose === 'register' ? 'Confirm your email address' : 'Confirm your new email address',
    text: text.join('\n'),
  });
}

/** Tells the current address that a change away from it was asked for, so a takeover does not go unnoticed. */
export async function sendChangeNotice(mailer: Mailer, user: { id: string; email: string }, newEmail: string): Promise<void> {
  await mailer.send({
    kind: 'email-change-notice',
    userId: user.id,
    to: user.email,
    subject: 'Your sign-in email address is about to change',
    text: [
      `Someone signed in to your account asked to change its sign-in address from ${user.email} to ${newEmail}.`,
      '',
      'The change happens only when the link sent to the new address is opened. If this was not you, change your',
      'password now (or use "Forgot password"): that signs out every other device.',
    ].join('\n'),
  });
}

/** The address an open email change waits for (the newest unexpired, unused link to another address), or null. */
export async function pendingEmailOf(db: Kysely<DB>, user: { id: string; email: string }, now: number): Promise<string | null> {
  const row = await db
    .selectFrom('email_verification_tokens')
    .select('email')
    .where('user_id', '=', user.id)
    .where('used_at', 'is', null)
    .where('expires_at', '>', new Date(now))
    .where('email', '!=', user.email.toLowerCase())
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.email ?? null;
}

export interface Verified {
  userId: string;
  email: string;
  /** The address the account had before, when the link completed an email change. */
  previousEmail?: string;
}

/**
 * Follows a link: marks its address verified, moving the account to it when it was an email change. Claiming the
 * token is the check (of two concurrent uses one wins); the account's other outstanding links stop working, and an
 * address another account took in the meantime is refused (409) without using the link up.
 */
export async function confirmEmail(db: Kysely<DB>, token: string, { now, ip }: { now: number; ip: string }): Promise<Verified> {
  if (!TOKEN_FORMAT.test(token)) throw new DomainError('INVALID_VERIFICATION_TOKEN');
  const at = new Date(now);
  try {
    return await db.transaction().execute(async (trx) => {
      const claimed = await trx
        .updateTable('email_verification_tokens')
        .set({ used_at: at })
        .where('token_hash', '=', sha256Hex(token))
        .where('used_at', 'is', null)
        .where('expires_at', '>', at)
        .returning(['user_id', 'email'])
        .executeTakeFirst();
      if (!claimed) throw new DomainError('INVALID_VERIFICATION_TOKEN');
      const user = await trx.selectFrom('users').select(['email']).where('id', '=', claimed.user_id).executeTakeFirst();
      if (!user) throw new DomainError('INVALID_VERIFICATION_TOKEN');
      const changed = user.email.toLowerCase() !== claimed.email;
      await trx
        .updateTable('users')
        .set({ email: claimed.email, email_verified_at: at, updated_at: at })
        .where('id', '=', claimed.user_id)
        .execute();
      await cancelEmailLinks(trx, claimed.user_id, at);
      await writeAudit(trx, {
        userId: claimed.user_id,
        action: changed ? 'email.change' : 'email.verify',
        ip,
        metadata: changed ? { from: user.email, to: claimed.email } : { email: claimed.email },
      });
      return { userId: claimed.user_id, email: claimed.email, ...(changed ? { previousEmail: user.email } : {}) };
    });
  } catch (err) {
    // Another account registered or moved to the address after the link was sent.
    if (isUniqueViolation(err, 'users_email_lower_key')) throw new DomainError('EMAIL_ALREADY_IN_USE');
    throw err;
  }
}

/**
 * A password reset proves the account's current address too (its link went there): that address counts as verified
 * from then on, as if its verification link had been followed.
 */
export async function markCurrentEmailVerified(db: Kysely<DB>, userId: string, now: Date): Promise<void> {
  await db.updateTable('users').set({ email_verified_at: now }).where('id', '=', userId).where('email_verified_at', 'is', null).execute();
}

/** Every outstanding verification link of the account stops working (after a password change or reset). */
export async function cancelEmailLinks(db: Kysely<DB>, userId: string, now: Date): Promise<void> {
  await db
    .updateTable('email_verification_tokens')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .execute();
}
