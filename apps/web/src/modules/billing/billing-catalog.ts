import { CARD_PLANS, type CardPlan, ConfigError, isCardPlan, PLANS, planTier } from '@aop/core';

/**
 * What card payments sell (spec §4.18 Billing): the card plans of the plan catalogue by the month, credit packs and
 * storage, all in GBP. Read from the environment at start; no Stripe SDK here, so the config module can use it.
 */

export const BILLING_CURRENCY = 'gbp';

/**
 * A monthly plan price: an amount in pence (sent as `price_data`, so nothing has to exist in the Stripe account), or
 * the id of a recurring Price the operator keeps in Stripe (`price_…`; its amount and currency are Stripe's).
 */
export type PlanPrice = { amountPence: number } | { priceId: string };

export interface CreditPack {
  amountPence: number;
  credits: number;
}

export interface BillingCatalog {
  plans: Record<CardPlan, PlanPrice>;
  /** Ordered by price. */
  creditPacks: CreditPack[];
  storageUpgrade: { gb: number; amountPence: number };
}

/** The catalogue's list prices, in `PLAN_PRICES_GBP`'s own format: the environment overrides them as a whole. */
export const DEFAULT_PLAN_PRICES_GBP = CARD_PLANS.map((plan) => `${plan}:${PLANS[plan].priceGbp}`).join(',');
export const DEFAULT_CREDIT_PACKS_GBP = '5:500,10:1000,25:2500';

const POUNDS = /^(\d{1,6})(?:\.(\d{1,2}))?$/;
const PRICE_ID = /^price_[A-Za-z0-9]+$/;

/** `29` → 2900, `4.5` → 450, `0.99` → 99; anything else (or zero) is undefined. */
export function poundsToPence(value: string): number | undefined {
  const match = POUNDS.exec(value.trim());
  if (!match) return undefined;
  const pence = Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
  return pence > 0 ? pence : undefined;
}

/** 2900 → `29.00`. */
export const penceToPounds = (pence: number) => (pence / 100).toFixed(2);

const invalid = (name: string, message: string) => new ConfigError(`Invalid configuration:\n  ${name}: ${message}`);

function entries(name: string, value: string): [string, string][] {
  return value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.indexOf(':');
      if (at <= 0) throw invalid(name, `each entry must be key:value (got ${JSON.stringify(entry)})`);
      return [entry.slice(0, at).trim(), entry.slice(at + 1).trim()];
    });
}

/** PLAN_PRICES_GBP: `solo:29,collective:79,label:199,network:price_1Q…`; every paid plan must be priced. */
export function parsePlanPrices(value: string): Record<CardPlan, PlanPrice> {
  const prices: Partial<Record<CardPlan, PlanPrice>> = {};
  for (const [plan, price] of entries('PLAN_PRICES_GBP', value)) {
    if (!isCardPlan(plan)) throw invalid('PLAN_PRICES_GBP', `unknown plan ${plan}; plans: ${CARD_PLANS.join(', ')}`);
    if (prices[plan]) throw invalid('PLAN_PRICES_GBP', `plan ${plan} is listed twice`);
    if (PRICE_ID.test(price)) prices[plan] = { priceId: price };
    else {
      const amountPence = poundsToPence(price);
      if (!amountPence)
        throw invalid('PLAN_PRICES_GBP', `${plan} needs an amount in pounds or a price_… id (got ${JSON.stringify(price)})`);
      prices[plan] = { amountPence };
    }
  }
  const missing = CARD_PLANS.filter((p) => !prices[p]);
  if (missing.length) throw invalid('PLAN_PRICES_GBP', `no price for ${missing.join(', ')}`);
  return prices as Record<CardPlan, PlanPrice>;
}

/**
 * What `plan` costs a month in pounds, as the cost dashboard shows it: the configured card price, else (a plan not
 * sold by card, or one priced by a Stripe price id, whose amount only Stripe knows) the catalogue's list price; 0
 * for a plan with none.
 */
export function monthlyPriceGbp(plans: BillingCatalog['plans'], plan: string): number {
  const price = isCardPlan(plan) ? plans[plan] : undefined;
  if (price && 'amountPence' in price) return price.amountPence / 100;
  return planTier(plan).priceGbp ?? 0;
}

/** CREDIT_PACKS_GBP: `price:credits` entries, e.g. `5:500,10:1000`; prices are distinct. */
export function parseCreditPacks(value: string): CreditPack[] {
  const packs: CreditPack[] = [];
  for (const [price, credits] of entries('CREDIT_PACKS_GBP', value)) {
    const amountPence = poundsToPence(price);
    const count = Number(credits);
    if (!amountPence || !/^\d+$/.test(credits) || count < 1 || count > 10_000_000) {
      throw invalid('CREDIT_PACKS_GBP', `each entry must be <pounds>:<whole credits> (got ${JSON.stringify(`${price}:${credits}`)})`);
    }
    if (packs.some((p) => p.amountPence === amountPence)) throw invalid('CREDIT_PACKS_GBP', `price ${price} is listed twice`);
    packs.push({ amountPence, credits: count });
  }
  if (packs.length === 0) throw invalid('CREDIT_PACKS_GBP', 'at least one pack is required');
  return packs.sort((a, b) => a.amountPence - b.amountPence);
}

export function parseStoragePrice(value: string): number {
  const pence = poundsToPence(value);
  if (!pence) throw invalid('STORAGE_UPGRADE_PRICE_GBP', `an amount in pounds is required (got ${JSON.stringify(value)})`);
  return pence;
}

/** The pack a `price` query names (`10`, `10.00`), or undefined. */
export function findCreditPack(catalog: BillingCatalog, price: string): CreditPack | undefined {
  const pence = poundsToPence(price);
  return pence === undefined ? undefined : catalog.creditPacks.find((p) => p.amountPence === pence);
}
