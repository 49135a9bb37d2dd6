import { DomainError, ERROR_CATALOGUE, isPaidPlan } from '@aop/core';
import type { FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's subscription as the web layer states it; set by `requirePaidPlan`. */
    billing?: { plan: string; subscriptionId: string };
  }
}

export const PAID_PLAN_REQUIRED = ERROR_CATALOGUE.PAID_PLAN_HEADER_REQUIRED.message;
export const SUBSCRIPTION_REQUIRED = ERROR_CATALOGUE.SUBSCRIPTION_REQUIRED.message;

const SUBSCRIPTION_ID = /^[\w.:-]{1,200}$/;

/**
 * Spec §5 plan middleware for `/api/ai/chat`, separate from the user context: `x-user-plan` must name
 * a paid plan of the plan catalogue (in any case) and `x-billing-subscription-id` a subscription, else
 * 402. The headers are trusted as the web layer's word, like the user context: only holders of the
 * internal key reach this hook.
 */
export function requirePaidPlan() {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const plan = request.headers['x-user-plan'];
    const subscriptionId = request.headers['x-billing-subscription-id'];
    if (typeof plan !== 'string' || !isPaidPlan(plan.trim().toLowerCase())) throw new DomainError('PAID_PLAN_HEADER_REQUIRED');
    if (typeof subscriptionId !== 'string' || !SUBSCRIPTION_ID.test(subscriptionId.trim())) throw new DomainError('SUBSCRIPTION_REQUIRED');
    request.billing = { plan: plan.trim().toLowerCase(), subscriptionId: subscriptionId.trim() };
  };
}
