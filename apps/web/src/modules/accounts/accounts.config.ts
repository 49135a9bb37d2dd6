import { Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

export const AccountsEnvSchema = Type.Object({
  INVITE_TTL_HOURS: Env.int(168, 1),
  INVITE_MAX_OUTSTANDING: Env.int(5, 1),
  INVITE_VERIFY_LIMIT_PER_MINUTE: Env.int(20, 1),
  BOT_CHECK_SECRET: Env.optional(Type.String()),
  BOT_CHECK_URL: Env.url(),
  REFERRAL_CREDITS_REFERRED: Env.int(50),
  REFERRAL_CREDITS_REFERRER: Env.int(50),
  PASSWORD_RESET_TTL_MINUTES: Env.int(60, 1),
  EMAIL_VERIFICATION_TTL_HOURS: Env.int(48, 1),
});

export interface AccountsConfig {
  /** Invites: lifetime, pending invites per user, and `POST /api/invites/verify` calls per minute per client. */
  invites: { ttlMs: number; maxOutstanding: number; verifyPerMinute: number };
  /** A Turnstile-style challenge verifier; off unless both are set. */
  botCheck: { secret: string; url: string } | undefined;
  referralCredits: { referred: number; referrer: number };
  passwordResetTtlMs: number;
  /** How long an email verification link works (registration and email change). */
  emailVerificationTtlMs: number;
}

export function toAccountsConfig(env: Static<typeof AccountsEnvSchema>): AccountsConfig {
  return {
    invites: {
      ttlMs: env.INVITE_TTL_HOURS * 3_600_000,
      maxOutstanding: env.INVITE_MAX_OUTSTANDING,
      verifyPerMinute: env.INVITE_VERIFY_LIMIT_PER_MINUTE,
    },
    botCheck: env.BOT_CHECK_SECRET && env.BOT_CHECK_URL ? { secret: env.BOT_CHECK_SECRET, url: env.BOT_CHECK_URL } : undefined,
    referralCredits: { referred: env.REFERRAL_CREDITS_REFERRED, referrer: env.REFERRAL_CREDITS_REFERRER },
    passwordResetTtlMs: env.PASSWORD_RESET_TTL_MINUTES * 60_000,
    emailVerificationTtlMs: env.EMAIL_VERIFICATION_TTL_HOURS * 3_600_000,
  };
}
