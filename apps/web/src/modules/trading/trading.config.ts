import { Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

export const TradingEnvSchema = Type.Object({
  TRADING_API_URL: Env.str('https://api.bankr.bot'),
  TRADING_API_KEY: Env.optional(Type.String()),
  TRADING_TIMEOUT_MS: Env.int(30_000, 100),
});

export interface TradingConfig {
  /** Trading service: base URL, the platform key (used when a user has none), request timeout. */
  trading: { apiUrl: string; platformKey: string | undefined; timeoutMs: number };
}

export function toTradingConfig(env: Static<typeof TradingEnvSchema>): TradingConfig {
  return {
    trading: {
      apiUrl: env.TRADING_API_URL.replace(/\/+$/, ''),
      platformKey: env.TRADING_API_KEY,
      timeoutMs: env.TRADING_TIMEOUT_MS,
    },
  };
}
