import { STATUS_CODES } from 'node:http';
import { DomainError } from '@aop/core';
import {
  type ColonyCall,
  type ColonyResult,
  type Fitness,
  fitnessFrom,
  isColonyScore as isScore,
  isColonyTier as isTier,
  requestColony,
} from '@aop/core/colony';
import type { WebConfig } from '../../config.js';

/**
 * Spec §4.5 x402 payment gateway: a proxy to an upstream colony gateway. This module holds
 * the fallback answers, the input checks and the one function that talks to the upstream (the shared colony client
 * of `@aop/core/colony`, which the backend's mission control also uses for fitness scores).
 */

export { type ColonyCall, type ColonyResult, type Fitness, fitnessFrom };

export const X402_ACTIONS = ['join-colony', 'fitness', 'pricing', 'endpoints', 'pay'] as const;
export type X402Action = (typeof X402_ACTIONS)[number];

/** Spec §8: a payment is more than 0 and at most 100. */
export const PAYMENT_MAX = 100;
export const DEFAULT_AGENT_ID = 'atlas';
export const DEFAULT_CURRENCY = 'USDC';
export const DEFAULT_METHOD = 'default';
/** Bounds on the optional text fields of `pay`: enough for any token symbol, method name or URL. */
export const CURRENCY_MAX = 64;
export const METHOD_MAX = 64;
export const ENDPOINT_MAX = 2048;

export interface Pricing {
  agentId: string;
  tier: string;
  pricing: { rate: number; discount: number };
  fitness: { score: number; tier: string };
}

/** Fallback when the upstream has no fitness answer (spec §4.5). */
export const FALLBACK_FITNESS: Readonly<Fitness> = Object.freeze({ score: 50, tier: 'new', details: null });

/** Fallback pricing (spec §4.5): tier `basic`, rate 0.01, no discount (0), fitness score 50 tier `new`. */
export const fallbackPricing = (agentId: string): Pricing => ({
  agentId,
  tier: 'basic',
  pricing: { rate: 0.01, discount: 0 },
  fitness: { score: FALLBACK_FITNESS.score, tier: FALLBACK_FITNESS.tier },
});

/** Fallback endpoint list (spec §4.5), word for word. */
export const FALLBACK_ENDPOINTS = Object.freeze({
  success: true,
  endpoints: [
    { slug: '/gateway/colony/join', description: 'Join agent colony', price: 'Free' },
    { slug: '/gateway/fitness/:agentId', description: 'Get agent fitness score', price: 'Free' },
    { slug: '/gateway/pricing/:agentId', description: 'Get dynamic pricing', price: 'Free' },
    { slug: '/gateway/pay', description: 'Make payment', price: 'Variable' },
  ],
});

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** Base58 (no 0, O, I, l), 32 to 44 characters: the length range of a 32-byte Solana public key. */
const SOLANA_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/** Spec §4.5 recipient formats: EVM `0x` plus exactly 40 hex characters, or Solana base58 of 32 to 44 characters. */
export const isRecipientAddress = (value: string): boolean => EVM_ADDRESS.test(value) || SOLANA_ADDRESS.test(value);

/** A non-empty (trimmed) string, else undefined: how `agentId` is read for every action. */
export function agentIdOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

export interface PaymentOrder {
  agentId: string;
  amount: number;
  currency: string;
  recipient: string;
  method: string;
  endpoint?: string;
}

/** The raw `pay` fields as they arrived, before any check. */
export interface PaymentInput {
  agentId?: unknown;
  amount?: unknown;
  currency?: unknown;
  recipient?: unknown;
  method?: unknown;
  endpoint?: unknown;
}

/** An optional text field: absent or null → `fallback`; a non-empty string up to `max` → as is; anything else → 400. */
function optionalText(value: unknown, name: string, max: number, fallback: string | undefined): string | undefined {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string' || value.trim() === '' || value.length > max) throw new DomainError('INVALID_PARAMETER', { name });
  return value;
}

/**
 * Checks a `pay` body in the spec's order (agentId, amount, recipient) and returns the order to forward. `currency`
 * is forwarded exactly as sent (spec: "forwarded as is"); a present but malformed `currency`, `method` or
 * `endpoint` is refused rather than silently replaced by the default, since it is money.
 */
export function checkPayment(input: PaymentInput): PaymentOrder {
  const agentId = agentIdOf(input.agentId);
  if (!agentId) throw new DomainError('AGENT_ID_REQUIRED');
  const { amount } = input;
  // JSON has no NaN; a huge literal such as 1e400 parses to Infinity and is refused as above the limit.
  if (typeof amount !== 'number' || Number.isNaN(amount) || amount <= 0) throw new DomainError('INVALID_AMOUNT');
  if (amount > PAYMENT_MAX) throw new DomainError('AMOUNT_OVER_LIMIT');
  const { recipient } = input;
  if (typeof recipient !== 'string' || recipient === '') throw new DomainError('RECIPIENT_REQUIRED');
  if (!isRecipientAddress(recipient)) throw new DomainError('INVALID_RECIPIENT');
  const currency = optionalText(input.currency, 'currency', CURRENCY_MAX, DEFAULT_CURRENCY) as string;
  const method = optionalText(input.method, 'method', METHOD_MAX, DEFAULT_METHOD) as string;
  const endpoint = optionalText(input.endpoint, 'endpoint', ENDPOINT_MAX, undefined);
  return { agentId, amount, currency, recipient, method, ...(endpoint !== undefined ? { endpoint } : {}) };
}

export type X402Config = Pick<WebConfig, 'x402'>;

/** The configured gateway as shown to clients: without user info, query or fragment. */
export function publicGatewayUrl(config: X402Config): string | null {
  const raw = config.x402.gatewayUrl;
  if (!raw) return null;
  try {
    const url = new URL(raw);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.href.replace(/\/+$/, '');
  } catch {
    return null;
  }
}

/**
 * One call to the configured colony gateway. Never throws: an unset gateway, a network error or the timeout is
 * `reached: false` with a short reason that carries no upstream content; redirects are not followed.
 */
export const callColony = (config: X402Config, call: ColonyCall): Promise<ColonyResult> => requestColony(config.x402.gatewayUrl, call);

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isRate = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;

/**
 * The upstream's pricing answer in the spec's shape `{ agentId, tier, pricing: { rate, discount }, fitness }`, or
 * undefined when it is not one. A missing discount is 0 (no discount); `agentId` is the one asked for.
 */
export function pricingFrom(agentId: string, body: unknown): Pricing | undefined {
  if (!isPlainObject(body) || !isTier(body.tier) || !isPlainObject(body.pricing) || !isPlainObject(body.fitness)) return undefined;
  const { rate, discount = 0 } = body.pricing;
  const { score, tier: fitnessTier } = body.fitness;
  if (!isRate(rate) || !isRate(discount) || !isScore(score) || !isTier(fitnessTier)) return undefined;
  return { agentId, tier: body.tier, pricing: { rate, discount }, fitness: { score, tier: fitnessTier } };
}

/** The upstream's endpoint list: an object carrying an `endpoints` array, relayed as is. */
export const endpointsFrom = (body: unknown): Record<string, unknown> | undefined =>
  isPlainObject(body) && Array.isArray(body.endpoints) ? body : undefined;

/**
 * The "..." of `Colony join failed: <status> ...`: the upstream's own `error` or `message` when it is short text,
 * else the status's reason phrase. Control characters are dropped and the text is cut at 200 characters.
 */
export function upstreamDetail(status: number, body: unknown): string {
  if (isPlainObject(body)) {
    for (const key of ['error', 'message'] as const) {
      const value = body[key];
      if (typeof value === 'string') {
        const clean = Array.from(value, (ch) => (ch < ' ' || ch === '\u007f' ? ' ' : ch))
          .join('')
          .trim()
          .slice(0, 200);
        if (clean) return clean;
      }
    }
  }
  return STATUS_CODES[status] ?? 'Upstream error';
}
