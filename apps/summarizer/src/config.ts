import {
  BaseEnvSchema,
  type BaseConfig,
  ConfigError,
  Env,
  MetricsEnvSchema,
  type MetricsConfig,
  parseEnv,
  toBaseConfig,
  toMetricsConfig,
} from '@aop/core';
import { TracingEnvSchema, type TracingConfig, toTracingConfig } from '@aop/core/tracing';
import { availableParallelism } from 'node:os';
import { Type } from '@sinclair/typebox';

const SummarizerEnvSchema = Type.Composite([
  BaseEnvSchema,
  MetricsEnvSchema,
  TracingEnvSchema,
  Type.Object({
    SUMMARIZER_PORT: Env.port(3100),
    SUMMARIZER_ALLOW_PRIVATE: Env.bool(false),
    SUMMARIZER_FETCH_TIMEOUT_MS: Env.int(10_000, 1),
    SUMMARIZER_MAX_BYTES: Env.int(5 * 1024 * 1024, 1024),
    SUMMARIZER_MAX_REDIRECTS: Env.int(5),
    SUMMARIZER_RATE_LIMIT_PER_MINUTE: Env.int(60, 1),
    // Revalidation cache of extractions (see services/page-cache.ts). 0 entries turns it off.
    SUMMARIZER_CACHE_MAX_ENTRIES: Env.int(1000),
    SUMMARIZER_CACHE_MAX_BYTES: Env.int(64 * 1024 * 1024),
    SUMMARIZER_CACHE_MAX_AGE_MS: Env.int(60 * 60 * 1000),
    // Extraction worker threads: a count, or 'auto' for os.availableParallelism(); 0 or 1 extracts in-process.
    // Started on first use. On the 2-core dev machine pages of 300 KB and 1 MB went +33-62% req/s through the pool,
    // 100 KB pages anywhere from -26% to +35% (noise), hence the size threshold below.
    SUMMARIZER_WORKERS: Env.str('auto'),
    // Pages shorter than this (decoded characters) are extracted in-process even with workers: the hop costs more.
    SUMMARIZER_WORKER_MIN_BYTES: Env.int(256 * 1024),
    SUMMARIZER_PAY_TO: Env.str(''),
    SUMMARIZER_PAYMENT_NETWORK: Env.str('base'),
    SUMMARIZER_PAYMENT_CURRENCY: Env.str('USDC'),
    SUMMARIZER_PAYMENT_NOTE: Env.str('Free to use. Tips in USDC on Base to the payTo address are welcome.'),
  }),
]);

export interface SummarizerConfig extends BaseConfig, MetricsConfig {
  port: number;
  /** Turns the SSRF guard off: only for local use and tests. */
  allowPrivate: boolean;
  fetchTimeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  rateLimitPerMinute: number;
  cache: { maxEntries: number; maxBytes: number; maxAgeMs: number };
  /** Extraction worker threads; 0 = extract on the main thread. */
  workers: number;
  workerMinBytes: number;
  payment: { network: string; currency: string; payTo: string; note: string };
  /** OpenTelemetry: OTEL_EXPORTER_OTLP_ENDPOINT (unset: off) and OTEL_SERVICE_NAME (`aop-summarizer`). */
  tracing: TracingConfig;
}

export function loadSummarizerConfig(env: NodeJS.ProcessEnv = process.env): SummarizerConfig {
  const parsed = parseEnv(SummarizerEnvSchema, env);
  return Object.freeze({
    ...toBaseConfig(parsed),
    ...toMetricsConfig(parsed),
    port: parsed.SUMMARIZER_PORT,
    allowPrivate: parsed.SUMMARIZER_ALLOW_PRIVATE,
    fetchTimeoutMs: parsed.SUMMARIZER_FETCH_TIMEOUT_MS,
    maxBytes: parsed.SUMMARIZER_MAX_BYTES,
    maxRedirects: parsed.SUMMARIZER_MAX_REDIRECTS,
    rateLimitPerMinute: parsed.SUMMARIZER_RATE_LIMIT_PER_MINUTE,
    cache: {
      maxEntries: parsed.SUMMARIZER_CACHE_MAX_ENTRIES,
      maxBytes: parsed.SUMMARIZER_CACHE_MAX_BYTES,
      maxAgeMs: parsed.SUMMARIZER_CACHE_MAX_AGE_MS,
    },
    workers: workerCount(parsed.SUMMARIZER_WORKERS),
    workerMinBytes: parsed.SUMMARIZER_WORKER_MIN_BYTES,
    payment: {
      network: parsed.SUMMARIZER_PAYMENT_NETWORK,
      currency: parsed.SUMMARIZER_PAYMENT_CURRENCY,
      payTo: parsed.SUMMARIZER_PAY_TO,
      note: parsed.SUMMARIZER_PAYMENT_NOTE,
    },
    tracing: toTracingConfig(parsed, 'aop-summarizer'),
  });
}

/** `auto` → one per available core; a number as given; 1 means in-process too (a single worker only adds a hop). */
function workerCount(value: string): number {
  const raw = value.trim().toLowerCase();
  const n = raw === 'auto' ? availableParallelism() : /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isFinite(n))
    throw new ConfigError(`Invalid configuration:\n  SUMMARIZER_WORKERS: expected 'auto' or a whole number (got ${JSON.stringify(value)})`);
  return n <= 1 ? 0 : n;
}
