import { DomainError, newId } from '@aop/core';
import { type DB, writeAudit, isUniqueViolation } from '@aop/db';
import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, hashPassword } from './passwords.js';

/** A pragmatic address check: something@domain.tld, no spaces, at most 254 characters. */
const EMAIL_FORMAT = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const isEmail = (value: string) => value.length <= 254 && EMAIL_FORMAT.test(value);
export const normalizeEmail = (value: string) => value.trim().toLowerCase();

/**
 * Wallet accounts use `<address>@wallet.<product>`; nobody may claim such an
 * address by other means, or a later wallet sign-in would link into their account.
 */
export function checkNotReserved(email: string, productName: string): void {
  if (normalizeEmail(email).endsWith(`@wallet.${productName.toLowerCase()}`)) throw new DomainError('EMAIL_ADDRESS_RESERVED');
}

/** Spec §4.1: letters, digits and hyphens, at most 20, case-insensitive. */
const REFERRAL_FORMAT = /^[A-Za-z0-9-]{1,20}$/;
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** Eight characters without look-alikes (0/O, 1/I), so a code read aloud is typed right. */
export function newReferralCode(): string {
  let code = '';
  for (let i = 0; i < 8; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

export function checkPasswordLength(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH) throw new DomainError('PASSWORD_AT_LEAST_CHARACTERS', { min: PASSWORD_MIN_LENGTH });
  if (password.length > PASSWORD_MAX_LENGTH) throw new DomainError('PASSWORD_AT_MOST_CHARACTERS', { max: PASSWORD_MAX_LENGTH });
}

export interface Registration {
  email: string;
  password: string;
  name?: string | undefined;
  referralCode?: string | undefined;
  ip: string;
}

/**
 * Creates a user (spec §4.1 register). The referral code, if any, credits both
 * users in the same transaction as the insert, so a failure leaves no credit
 * and no half-made account.
 */
export async function registerUser(
  db: Kysely<DB>,
  input: Registration,
  credits: { referred: number; referrer: number },
): Promise<{ id: string; email: string; name: string }> {
  const email = normalizeEmail(input.email);
  if (!isEmail(email)) throw new DomainError('INVALID_EMAIL_FORMAT');
  checkPasswordLength(input.password);
  const code = input.referralCode?.trim();
  if (code !== undefined && code !== '' && !REFERRAL_FORMAT.test(code)) throw new DomainError('INVALID_REFERRAL_CODE');
  const name = input.name?.trim() || email;
  if (name.length > 100) throw new DomainError('NAME_AT_MOST_100_CHARACTERS');

  const passwordHash = await hashPassword(input.password);
  const id = newId('user');
  try {
    await db.transaction().execute(async (trx) => {
      const existing = await trx
        .selectFrom('users')
        .select('id')
        .where((eb) => eb(eb.fn('lower', ['email']), '=', email))
        .executeTakeFirst();
      if (existing) throw new DomainError('USER_ALREADY_EXISTS');
      let referrer: { id: string } | undefined;
      if (code) {
        referrer = await trx.selectFrom('users').select('id').where('referral_code', '=', code.toUpperCase()).executeTakeFirst();
        if (!referrer) throw new DomainError('INVALID_REFERRAL_CODE');
      }
      await trx
        .insertInto('users')
        .values({
          id,
          email,
          name,
          password_hash: passwordHash,
          referral_code: newReferralCode(),
          referred_by: referrer?.id ?? null,
          credits: referrer ? credits.referred : 0,
        })
        .execute();
      if (referrer) {
        await trx
          .updateTable('users')
          .set((eb) => ({ credits: eb('credits', '+', credits.referrer) }))
          .where('id', '=', referrer.id)
          .execute();
      }
      await writeAudit(trx, { userId: id, action: 'user.register', ip: input.ip, metadata: referrer ? { referredBy: referrer.id } : {} });
    });
  } catch (err) {
    // Two registrations of one email at the same moment: the unique index decides.
    if (isUniqueViolation(err, 'users_email_lower_key')) throw new DomainError('USER_ALREADY_EXISTS');
    // A referral-code collision (1 in 10^12 per pair) is retried once with a new code.
    if (isUniqueViolation(err, 'users_referral_code_key')) return registerUser(db, input, credits);
    throw err;
  }
  return { id, email, name };
}

export const findUserByEmail = (db: Kysely<DB>, email: string) =>
  db
    .selectFrom('users')
    .select(['id', 'name', 'email', 'password_hash', 'disabled_at'])
    .where((eb) => eb(eb.fn('lower', ['email']), '=', normalizeEmail(email)))
    .executeTakeFirst();
