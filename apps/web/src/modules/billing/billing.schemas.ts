import { CARD_PLANS } from '@aop/core/plans';
import { invalidAs, refuse } from '@aop/core/request-schema';
import { type Static, type TSchema, Type } from '@sinclair/typebox';

/**
 * `POST /api/billing` actions. Kept here rather than in billing.service.ts (which re-exports it): the request schema
 * lists them, and a schemas file imports no service (the service imports the payment provider's SDK and the database).
 */
export const BILLING_ACTIONS = ['create-checkout', 'enable-byok', 'disable-byok', 'get-usage', 'buy-credits'] as const;

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const CHECKOUT_KINDS = [Type.Literal('plan'), Type.Literal('credits'), Type.Literal('storage')];

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

/** Usage-ledger totals for the current billing period (the calendar month so far, UTC), in USD. */
export const BillingUsage = Type.Object({
  period: Type.Literal('mtd'),
  since: Type.String(),
  until: Type.String(),
  totalCost: Type.Number({ description: 'USD' }),
  totalTokens: Type.Integer(),
  totalCalls: Type.Integer(),
  byKind: Type.Array(Type.Object({ kind: Type.String(), calls: Type.Integer(), tokens: Type.Integer(), cost: Type.Number() })),
});
export type BillingUsage = Static<typeof BillingUsage>;

/**
 * `POST /api/billing`'s answer, by action: a card checkout (`create-checkout`, `buy-credits`), the bring-your-own-key
 * flag (`enable-byok`, `disable-byok`) or this period's usage (`get-usage`).
 */
export const BillingActionAnswer = Type.Union([
  CheckoutAnswer,
  Type.Object({ success: Type.Literal(true), byok: Type.Boolean() }),
  Type.Object({ usage: BillingUsage }),
]);
export type BillingActionAnswer = Static<typeof BillingActionAnswer>;

/** A card plan's price: pounds by the month, or the provider's price id when the operator priced it so. */
export const PlanPrice = Type.Object({
  plan: Type.String(),
  amount: Type.Optional(Type.String({ description: 'GBP, e.g. `29.00`; absent when priced by a provider price id' })),
  interval: Type.Optional(Type.String()),
  priceId: Type.Optional(Type.String()),
});
export type PlanPrice = Static<typeof PlanPrice>;

export const PriceList = Type.Object({
  currency: Type.String(),
  plans: Type.Array(PlanPrice),
  creditPacks: Type.Array(Type.Object({ price: Type.String({ description: 'GBP' }), credits: Type.Integer() })),
  storageUpgrade: Type.Object({ gb: Type.Integer(), price: Type.String({ description: 'GBP' }) }),
});
export type PriceList = Static<typeof PriceList>;

/** `GET /api/billing`: the account's billing state, this period's usage and the price list. */
export const BillingOverview = Type.Object({
  plan: Type.String(),
  subscriptionStatus: Type.String({ description: '`none`, `active`, `past_due`, `canceled`' }),
  customerId: nullable(Type.String()),
  byok: Type.Boolean(),
  credits: Type.Integer(),
  extraStorageGb: Type.Integer(),
  cardPayments: Type.Boolean(),
  usage: BillingUsage,
  prices: PriceList,
});
export type BillingOverview = Static<typeof BillingOverview>;

export const AccountBilling = Type.Object({
  plan: Type.String(),
  subscriptionStatus: Type.String(),
  credits: Type.Integer(),
  extraStorageGb: Type.Integer(),
});
export type AccountBilling = Static<typeof AccountBilling>;

/** `GET /api/checkout/verify`: the provider's view of the caller's session, and the account after applying it. */
export const VerifyResult = Type.Object({
  sessionId: Type.String(),
  kind: Type.Union(CHECKOUT_KINDS),
  status: nullable(Type.String({ description: 'the provider’s session status: `open`, `complete`, `expired`' })),
  paymentStatus: Type.String(),
  paid: Type.Boolean(),
  account: AccountBilling,
});
export type VerifyResult = Static<typeof VerifyResult>;

/** A card checkout as recorded here (`GET /api/wallet/top-up`). */
export const CardCheckout = Type.Object({
  sessionId: Type.String(),
  kind: Type.Union(CHECKOUT_KINDS),
  plan: nullable(Type.String()),
  credits: Type.Integer(),
  storageGb: Type.Integer(),
  amount: nullable(Type.String({ description: 'in `currency`, e.g. `5.00`' })),
  currency: nullable(Type.String()),
  status: Type.Union([Type.Literal('open'), Type.Literal('complete'), Type.Literal('expired')]),
  createdAt: Type.String(),
  completedAt: nullable(Type.String()),
});
export type CardCheckout = Static<typeof CardCheckout>;

/** `GET /api/wallet/top-up`: the newest 20 checkouts. */
export const CardCheckouts = Type.Object({
  cardPayments: Type.Boolean(),
  webhookConfigured: Type.Boolean(),
  checkouts: Type.Array(CardCheckout),
});
export type CardCheckouts = Static<typeof CardCheckouts>;

/** `GET /api/wallet/top-up?session_id=…`: one checkout. */
export const CardCheckoutFound = Type.Object({ checkout: CardCheckout });
export type CardCheckoutFound = Static<typeof CardCheckoutFound>;
