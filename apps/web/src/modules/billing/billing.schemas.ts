import { CARD_PLANS } from '@aop/core';
import { invalidAs, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { BILLING_ACTIONS } from './billing.service.js';

/** A card checkout started: the hosted payment page (`url`), where the browser goes next, and its session id. */
export const CheckoutAnswer = Type.Object({ url: Type.String(), sessionId: Type.String() });
export type CheckoutAnswer = Static<typeof CheckoutAnswer>;

/**
 * `POST /api/billing`. Only `action` is typed: `plan` and `price` belong to one action each (the others ignore them)
 * and are read after the checkout rate limit, and `price` may be a string or a number, so both stay as sent.
 */
export const BillingActionBody = Type.Object({
  action: Type.Union(
    BILLING_ACTIONS.map((action) => Type.Literal(action)),
    invalidAs(refuse('INVALID_ACTION_CHOICE', { allowed: BILLING_ACTIONS.join(', ') })),
  ),
  plan: Type.Optional(Type.Unknown({ description: `create-checkout: ${CARD_PLANS.join(' | ')}` })),
  price: Type.Optional(Type.Unknown({ description: 'buy-credits: a credit pack price in GBP, e.g. "10"' })),
});
export type BillingActionBody = Static<typeof BillingActionBody>;
