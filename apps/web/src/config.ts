import { BaseEnvSchema, type BaseConfig, Env, parseEnv, resolveSecrets, splitList, toBaseConfig } from '@aop/core';
import { Type } from '@sinclair/typebox';

const WebEnvSchema = Type.Composite([
  BaseEnvSchema,
  Type.Object({
    PORT: Env.port(3000),
    DATABASE_URL: Env.url(),
    BACKEND_API_URL: Env.str('http://127.0.0.1:3001'),
    BACKEND_API_FALLBACK_URL: Env.url(),
    SUMMARIZER_URL: Env.str('http://127.0.0.1:3100'),
    INTERNAL_API_KEY: Env.optional(Type.String({ minLength: 16 })),
    HMAC_SECRET: Env.optional(Type.String({ minLength: 16 })),
    SESSION_SECRET: Env.optional(Type.String({ minLength: 32 })),
    ENCRYPTION_KEY: Env.optional(Type.String({ minLength: 32 })),
    ADMIN_EMAILS: Env.optional(Type.String()),
    COOKIE_SECURE: Env.optional(Type.Boolean()),
    PUBLIC_URL: Env.url(),
    SMTP_URL: Env.url(),
    MAIL_FROM: Env.optional(Type.String()),
    BOT_CHECK_SECRET: Env.optional(Type.String()),
    BOT_CHECK_URL: Env.url(),
    REFERRAL_CREDITS_REFERRED: Env.int(50),
    REFERRAL_CREDITS_REFERRER: Env.int(50),
    PASSWORD_RESET_TTL_MINUTES: Env.int(60, 1),
    REGISTER_LIMIT_PER_HOUR: Env.int(10, 1),
    LOGIN_LIMIT_WINDOW_SECONDS: Env.int(900, 1),
    FORGOT_PASSWORD_LIMIT_PER_15_MIN: Env.int(5, 1),
    RESET_PASSWORD_LIMIT_PER_15_MIN: Env.int(10, 1),
  }),
]);

export interface WebConfig extends BaseConfig {
  port: number;
  databaseUrl: string | undefined;
  /** The backend, then its fallback: tried in order. */
  backendUrls: string[];
  summarizerUrl: string;
  internalApiKey: string | undefined;
  /** Signs user-context headers for the backend: HMAC_SECRET, else INTERNAL_API_KEY (spec §5). */
  userContextSecret: string | undefined;
  sessionSecret: string;
  encryptionKey: string;
  adminEmails: ReadonlySet<string>;
  /** Session cookies carry `Secure`; on by default in production. */
  cookieSecure: boolean;
  /** Where users reach the platform; links in emails start with it. */
  publicUrl: string;
  mail: { smtpUrl: string | undefined; from: string };
  /** A Turnstile-style challenge verifier; off unless both are set. */
  botCheck: { secret: string; url: string } | undefined;
  referralCredits: { referred: number; referrer: number };
  passwordResetTtlMs: number;
  limits: { registerPerHour: number; loginWindowMs: number; forgotPasswordPer15Min: number; resetPasswordPer15Min: number };
}

export function loadWebConfig(env: NodeJS.ProcessEnv = process.env): WebConfig {
  const parsed = parseEnv(WebEnvSchema, env);
  const base = toBaseConfig(parsed);
  const secrets = resolveSecrets(['INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY'], env, base);
  return Object.freeze({
    ...base,
    port: parsed.PORT,
    databaseUrl: parsed.DATABASE_URL,
    backendUrls: [parsed.BACKEND_API_URL, parsed.BACKEND_API_FALLBACK_URL].filter((u): u is string => Boolean(u)),
    summarizerUrl: parsed.SUMMARIZER_URL,
    internalApiKey: secrets.INTERNAL_API_KEY,
    userContextSecret: secrets.HMAC_SECRET ?? secrets.INTERNAL_API_KEY,
    sessionSecret: secrets.SESSION_SECRET,
    encryptionKey: secrets.ENCRYPTION_KEY,
    adminEmails: new Set(splitList(parsed.ADMIN_EMAILS).map((e) => e.toLowerCase())),
    cookieSecure: parsed.COOKIE_SECURE ?? base.production,
    publicUrl: (parsed.PUBLIC_URL ?? `http://127.0.0.1:${parsed.PORT}`).replace(/\/+$/, ''),
    mail: { smtpUrl: parsed.SMTP_URL, from: parsed.MAIL_FROM ?? `no-reply@${parsed.PRODUCT_NAME}.localhost` },
    botCheck: parsed.BOT_CHECK_SECRET && parsed.BOT_CHECK_URL ? { secret: parsed.BOT_CHECK_SECRET, url: parsed.BOT_CHECK_URL } : undefined,
    referralCredits: { referred: parsed.REFERRAL_CREDITS_REFERRED, referrer: parsed.REFERRAL_CREDITS_REFERRER },
    passwordResetTtlMs: parsed.PASSWORD_RESET_TTL_MINUTES * 60_000,
    limits: {
      registerPerHour: parsed.REGISTER_LIMIT_PER_HOUR,
      loginWindowMs: parsed.LOGIN_LIMIT_WINDOW_SECONDS * 1000,
      forgotPasswordPer15Min: parsed.FORGOT_PASSWORD_LIMIT_PER_15_MIN,
      resetPasswordPer15Min: parsed.RESET_PASSWORD_LIMIT_PER_15_MIN,
    },
  });
}
