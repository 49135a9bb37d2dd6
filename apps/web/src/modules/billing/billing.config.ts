import { ConfigError, Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';
import {
  type BillingCatalog,
  DEFAULT_CREDIT_PACKS_GBP,
  DEFAULT_PLAN_PRICES_GBP,
  parseCreditPacks,
  parsePlanPrices,
  parseStoragePrice,
} from './billing-catalog.js';

export const BillingEnvSchema = Type.Object({
  STRIPE_SECRET_KEY: Env.optional(Type.String({ pattern: '^(sk|rk)_' })),
  STRIPE_WEBHOOK_SECRET: Env.optional(Type.String({ minLength: 8 })),
  STRIPE_API_BASE: Env.url(),
  STRIPE_TIMEOUT_MS: Env.int(20_000, 100),
  PLAN_PRICES_GBP: Env.str(DEFAULT_PLAN_PRICES_GBP),
  CREDIT_PACKS_GBP: Env.str(DEFAULT_CREDIT_PACKS_GBP),
  STORAGE_UPGRADE_GB: Env.int(10, 1),
  STORAGE_UPGRADE_PRICE_GBP: Env.str('5'),
});

export interface BillingConfig {
  /**
   * Card payments through Stripe (spec §4.18 Billing): undefined unless STRIPE_SECRET_KEY is set. `webhookSecret`
   * verifies `POST /api/wallet/top-up`; `api` (from STRIPE_API_BASE) points the SDK elsewhere than api.stripe.com.
   */
  stripe:
    | {
        secretKey: string;
        webhookSecret: string | undefined;
        api: { protocol: 'http' | 'https'; host: string; port: number } | undefined;
        timeoutMs: number;
      }
    | undefined;
  /** What card payments sell, in GBP: plans by the month, credit packs, storage. */
  billing: BillingCatalog;
}

/** STRIPE_API_BASE (`http://127.0.0.1:12111`) as the SDK's `protocol`, `host` and `port`. */
function stripeApiBase(value: string): { protocol: 'http' | 'https'; host: string; port: number } {
  const url = new URL(value);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`Invalid configuration:\n  STRIPE_API_BASE: http or https URL required (got ${JSON.stringify(value)})`);
  }
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { protocol, host: url.hostname, port: url.port ? Number(url.port) : protocol === 'http' ? 80 : 443 };
}

/** Checks STRIPE_API_BASE (when the secret key is set), then the plan prices, the credit packs, the storage price. */
export function toBillingConfig(env: Static<typeof BillingEnvSchema>): BillingConfig {
  return {
    stripe: env.STRIPE_SECRET_KEY
      ? {
          secretKey: env.STRIPE_SECRET_KEY,
          webhookSecret: env.STRIPE_WEBHOOK_SECRET,
          api: env.STRIPE_API_BASE ? stripeApiBase(env.STRIPE_API_BASE) : undefined,
          timeoutMs: env.STRIPE_TIMEOUT_MS,
        }
      : undefined,
    billing: {
      plans: parsePlanPrices(env.PLAN_PRICES_GBP),
      creditPacks: parseCreditPacks(env.CREDIT_PACKS_GBP),
      storageUpgrade: { gb: env.STORAGE_UPGRADE_GB, amountPence: parseStoragePrice(env.STORAGE_UPGRADE_PRICE_GBP) },
    },
  };
}
