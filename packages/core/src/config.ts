import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Static, type TObject, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { randomHex } from './crypto.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Schema helpers for environment variables: every value arrives as a string. */
export const Env = {
  port: (def: number) => Type.Integer({ minimum: 0, maximum: 65535, default: def }),
  int: (def: number, min = 0) => Type.Integer({ minimum: min, default: def }),
  bool: (def: boolean) => Type.Boolean({ default: def }),
  str: (def: string) => Type.String({ default: def }),
  optional: <T extends TSchema>(schema: T) => Type.Optional(schema),
  url: () => Type.Optional(Type.String({ pattern: '^[a-zA-Z][a-zA-Z0-9+.-]*://' })),
  oneOf: <T extends string>(values: readonly T[], def: T) =>
    Type.Union(
      values.map((v) => Type.Literal(v)),
      { default: def },
    ),
};

/**
 * Validates the environment variables a schema names, once, at start. Empty
 * strings count as unset so `.env` files with `KEY=` lines behave as expected.
 * Every problem is reported at once, so an operator fixes them in one go.
 */
export function parseEnv<T extends TObject>(schema: T, env: NodeJS.ProcessEnv): Static<T> {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(schema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const value = Value.Default(schema, Value.Convert(schema, { ...raw })); // a copy: Convert changes what it is given
  const problems = [...Value.Errors(schema, value)].map((e) => ({ key: e.path.replace(/^\//, ''), message: e.message }));
  // Value.Convert turns "1.5" into 1 for an integer: a whole number is asked for, so anything else is refused.
  for (const [key, property] of Object.entries(schema.properties as Record<string, TSchema>)) {
    const text = raw[key];
    if (property.type === 'integer' && text !== undefined && !/^\s*[+-]?\d+\s*$/.test(text) && !problems.some((p) => p.key === key)) {
      problems.push({ key, message: 'Expected a whole number' });
    }
  }
  if (problems.length > 0) {
    const lines = problems.map((p) => `  ${p.key}: ${p.message} (got ${JSON.stringify(raw[p.key])})`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return value as Static<T>;
}

/** Settings every service shares. */
export const BaseEnvSchema = Type.Object({
  NODE_ENV: Env.oneOf(['development', 'production', 'test'] as const, 'development'),
  DATA_DIR: Env.str('./.data'),
  LOG_LEVEL: Env.oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
  /** `pretty`: one readable line per event, for a person at a terminal; `json`: one JSON object per line. */
  LOG_FORMAT: Env.optional(Type.Union([Type.Literal('json'), Type.Literal('pretty')])),
  HOST: Env.optional(Type.String()),
  TRUST_PROXY: Env.optional(Type.String()),
  PRODUCT_NAME: Env.str('service'),
  REDIS_URL: Env.url(),
  /** Connections each service process keeps to a Postgres server (DATABASE_URL). */
  DATABASE_POOL_SIZE: Env.int(10, 1),
  /** Set by npm to where `npm …` was typed: a relative DATA_DIR means the same place for every workspace. */
  INIT_CWD: Env.optional(Type.String()),
});

export interface BaseConfig {
  production: boolean;
  dataDir: string;
  logLevel: string;
  /** Unset LOG_FORMAT: pretty on a terminal outside production, JSON otherwise (log collectors read JSON). */
  logFormat: 'json' | 'pretty';
  host: string;
  /** What Fastify's `trustProxy` receives: false unless TRUST_PROXY is set. */
  trustProxy: boolean | number | string[];
  productName: string;
  redisUrl: string | undefined;
  databasePoolSize: number;
}

export function toBaseConfig(env: Static<typeof BaseEnvSchema>): BaseConfig {
  const production = env.NODE_ENV === 'production';
  return {
    production,
    dataDir: resolve(env.INIT_CWD ?? process.cwd(), env.DATA_DIR),
    logLevel: env.LOG_LEVEL,
    logFormat: env.LOG_FORMAT ?? (process.stdout.isTTY && !production ? 'pretty' : 'json'),
    host: env.HOST ?? (production ? '0.0.0.0' : '127.0.0.1'),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    productName: env.PRODUCT_NAME,
    redisUrl: env.REDIS_URL,
    databasePoolSize: env.DATABASE_POOL_SIZE,
  };
}

/** `true`/`false`, a hop count, or a comma list of addresses and CIDR ranges. */
export function parseTrustProxy(value: string | undefined): boolean | number | string[] {
  if (value === undefined) return false;
  const v = value.trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false' || v === '') return false;
  if (/^\d+$/.test(v)) return Number(v);
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export const splitList = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * The platform's own secrets. In development each is generated once and kept in
 * `DATA_DIR/secrets.json`, so web and backend started from one data directory
 * share them with nothing to set. In production each must come from the
 * environment.
 */
export const PLATFORM_SECRETS = {
  SESSION_SECRET: 32,
  INTERNAL_API_KEY: 32,
  HMAC_SECRET: 32,
  ENCRYPTION_KEY: 32,
} as const;
export type PlatformSecret = keyof typeof PLATFORM_SECRETS;

export function resolveSecrets<K extends PlatformSecret>(
  names: readonly K[],
  env: NodeJS.ProcessEnv,
  base: Pick<BaseConfig, 'production' | 'dataDir'>,
): Record<K, string> {
  const out = {} as Record<K, string>;
  const missing: K[] = [];
  for (const name of names) {
    const value = env[name];
    if (value) out[name] = value;
    else missing.push(name);
  }
  if (missing.length === 0) return out;
  if (base.production) {
    throw new ConfigError(`Missing required secrets in production: ${missing.join(', ')}`);
  }
  const stored = loadDevSecrets(base.dataDir);
  for (const name of missing) out[name] = stored[name];
  return out;
}

function generateAll(): Record<PlatformSecret, string> {
  const all = {} as Record<PlatformSecret, string>;
  for (const [name, bytes] of Object.entries(PLATFORM_SECRETS)) all[name as PlatformSecret] = randomHex(bytes);
  return all;
}

/**
 * Reads the development secrets, creating the file on first use. Creation is
 * atomic (`link` fails if another process got there first), so services started
 * together agree on one set.
 */
export function loadDevSecrets(dataDir: string): Record<PlatformSecret, string> {
  const file = join(dataDir, 'secrets.json');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    const tmp = `${file}.${process.pid}.${randomHex(4)}`;
    writeFileSync(tmp, JSON.stringify(generateAll(), null, 2), { mode: 0o600 });
    try {
      linkSync(tmp, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  const stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<Record<PlatformSecret, string>>;
  const absent = (Object.keys(PLATFORM_SECRETS) as PlatformSecret[]).filter((k) => !stored[k]);
  if (absent.length === 0) return stored as Record<PlatformSecret, string>;
  // A data directory from an older version: add the new secrets, keep the old ones.
  const merged = { ...generateAll(), ...stored };
  const tmp = `${file}.${process.pid}.${randomHex(4)}`;
  writeFileSync(tmp, JSON.stringify(merged, null, 2), { mode: 0o600 });
  renameSync(tmp, file);
  return merged;
}
