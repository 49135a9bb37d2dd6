import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CounterStore } from '../counters/store.js';
import { HttpError } from '../errors.js';

export interface RateLimitRule {
  /** Names the counter, so two rules on one route count separately. */
  name: string;
  max: number;
  windowMs: number;
  /** The spec's message for the 429 answer. */
  message: string;
  /** What is counted; the client IP by default (proxy headers only when TRUST_PROXY is set). */
  keyBy?: (request: FastifyRequest) => string;
}

/** The 429 of a rate-limit rule: it names the rule, so /metrics counts refusals by rule (`http/metrics.ts`). */
export class RateLimitRefusal extends HttpError {
  constructor(
    readonly rule: string,
    message: string,
  ) {
    super(429, message);
  }
}

/**
 * An onRequest hook that counts the request against `rule` and answers 429 once
 * the window is used up. Rules stack: a route under a general and an area limit
 * is counted by both, and the headers describe the last rule applied.
 * Only the standard `RateLimit-*` headers are sent, never `X-RateLimit-*`.
 */
export function createRateLimitHook(store: CounterStore, rule: RateLimitRule) {
  return async function rateLimitHook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const who = rule.keyBy ? rule.keyBy(request) : request.ip;
    const { count, resetAt } = await store.hit(`rl:${rule.name}:${who}`, rule.windowMs);
    // Wall clock: `resetAt` is the store's epoch time (see MemoryCounterStore); the hook has no app clock in reach.
    const resetSeconds = Math.max(0, Math.ceil((resetAt - Date.now()) / 1000));
    reply.header('RateLimit-Limit', rule.max);
    reply.header('RateLimit-Remaining', Math.max(0, rule.max - count));
    reply.header('RateLimit-Reset', resetSeconds);
    if (count > rule.max) {
      reply.header('Retry-After', resetSeconds);
      throw new RateLimitRefusal(rule.name, rule.message);
    }
  };
}
