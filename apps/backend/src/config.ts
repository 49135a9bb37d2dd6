import { BaseEnvSchema, type BaseConfig, Env, parseEnv, resolveSecrets, splitList, toBaseConfig } from '@aop/core';
import { Type } from '@sinclair/typebox';

const BackendEnvSchema = Type.Composite([
  BaseEnvSchema,
  Type.Object({
    BACKEND_PORT: Env.port(3001),
    DATABASE_URL: Env.url(),
    INTERNAL_API_KEY: Env.optional(Type.String({ minLength: 16 })),
    HMAC_SECRET: Env.optional(Type.String({ minLength: 16 })),
    ADMIN_EMAILS: Env.optional(Type.String()),
    PROVISIONER: Env.oneOf(['local', 'docker', 'hosting'] as const, 'local'),
    DOCKER_SOCKET: Env.str('/var/run/docker.sock'),
    HOSTING_API_URL: Env.url(),
    HOSTING_API_KEY: Env.optional(Type.String()),
    OPENCLAW_ENTRY: Env.optional(Type.String()),
  }),
]);

export interface BackendConfig extends BaseConfig {
  port: number;
  databaseUrl: string | undefined;
  /** Bearer key of the internal API; undefined only when deliberately unset (routes answer 500). */
  internalApiKey: string | undefined;
  /** Key of the user-context signature: HMAC_SECRET, else INTERNAL_API_KEY (spec §5). */
  userContextSecret: string | undefined;
  adminEmails: ReadonlySet<string>;
  provisioner: 'local' | 'docker' | 'hosting';
  dockerSocket: string;
  hostingApiUrl: string | undefined;
  hostingApiKey: string | undefined;
  /** Path of OpenClaw's entry point for the local provisioner; resolved from the runtime workspace when unset. */
  openclawEntry: string | undefined;
}

export interface LoadOptions {
  /** Generate development secrets in DATA_DIR when unset (default: yes, except in production where they are required). */
  devSecrets?: boolean;
}

export function loadBackendConfig(env: NodeJS.ProcessEnv = process.env, options: LoadOptions = {}): BackendConfig {
  const parsed = parseEnv(BackendEnvSchema, env);
  const base = toBaseConfig(parsed);
  const secrets =
    options.devSecrets === false
      ? { INTERNAL_API_KEY: parsed.INTERNAL_API_KEY, HMAC_SECRET: parsed.HMAC_SECRET }
      : resolveSecrets(['INTERNAL_API_KEY', 'HMAC_SECRET'], env, base);
  return Object.freeze({
    ...base,
    port: parsed.BACKEND_PORT,
    databaseUrl: parsed.DATABASE_URL,
    internalApiKey: secrets.INTERNAL_API_KEY,
    userContextSecret: secrets.HMAC_SECRET ?? secrets.INTERNAL_API_KEY,
    adminEmails: new Set(splitList(parsed.ADMIN_EMAILS).map((e) => e.toLowerCase())),
    provisioner: parsed.PROVISIONER,
    dockerSocket: parsed.DOCKER_SOCKET,
    hostingApiUrl: parsed.HOSTING_API_URL,
    hostingApiKey: parsed.HOSTING_API_KEY,
    openclawEntry: parsed.OPENCLAW_ENTRY,
  });
}
