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
  });
}
