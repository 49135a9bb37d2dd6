import { BaseEnvSchema, type BaseConfig, Env, parseEnv, toBaseConfig } from '@aop/core';
import { Type } from '@sinclair/typebox';

const SummarizerEnvSchema = Type.Composite([
  BaseEnvSchema,
  Type.Object({
    SUMMARIZER_PORT: Env.port(3100),
    SUMMARIZER_ALLOW_PRIVATE: Env.bool(false),
    SUMMARIZER_FETCH_TIMEOUT_MS: Env.int(10_000, 1),
    SUMMARIZER_MAX_BYTES: Env.int(5 * 1024 * 1024, 1024),
    SUMMARIZER_MAX_REDIRECTS: Env.int(5),
    SUMMARIZER_RATE_LIMIT_PER_MINUTE: Env.int(60, 1),
    SUMMARIZER_PAY_TO: Env.str(''),
    SUMMARIZER_PAYMENT_NETWORK: Env.str('base'),
    SUMMARIZER_PAYMENT_CURRENCY: Env.str('USDC'),
    SUMMARIZER_PAYMENT_NOTE: Env.str('Free to use. Tips in USDC on Base to the payTo address are welcome.'),
  }),
]);

export interface SummarizerConfig extends BaseConfig {
  port: number;
  /** Turns the SSRF guard off: only for local use and tests. */
  allowPrivate: boolean;
  fetchTimeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  rateLimitPerMinute: number;
  payment: { network: string; currency: string; payTo: string; note: string };
}

export function loadSummarizerConfig(env: NodeJS.ProcessEnv = process.env): SummarizerConfig {
  const parsed = parseEnv(SummarizerEnvSchema, env);
  return Object.freeze({
    ...toBaseConfig(parsed),
    port: parsed.SUMMARIZER_PORT,
    allowPrivate: parsed.SUMMARIZER_ALLOW_PRIVATE,
    fetchTimeoutMs: parsed.SUMMARIZER_FETCH_TIMEOUT_MS,
    maxBytes: parsed.SUMMARIZER_MAX_BYTES,
    maxRedirects: parsed.SUMMARIZER_MAX_REDIRECTS,
    rateLimitPerMinute: parsed.SUMMARIZER_RATE_LIMIT_PER_MINUTE,
    payment: {
      network: parsed.SUMMARIZER_PAYMENT_NETWORK,
      currency: parsed.SUMMARIZER_PAYMENT_CURRENCY,
      payTo: parsed.SUMMARIZER_PAY_TO,
      note: parsed.SUMMARIZER_PAYMENT_NOTE,
    },
  });
}
