import { type App, CARD_PLANS, type CardPlan, DomainError, isCardPlan } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type Stripe from 'stripe';
import type { WebConfig } from '../../config.js';
import { requireSessionUser } from '../../platform/http/auth.js';
import { perSession } from '../../platform/http/rate-limit-keys.js';
import {
  type BillingDeps,
  type Order,
  WEBHOOK_TOLERANCE_SECONDS,
  billingOverview,
  createCheckout,
  createStripeClient,
  handleEvent,
  listCheckouts,
  providerFailure,
  setByok,
  usageThisPeriod,
  verifyCheckout,
} from './billing.service.js';
import { findCreditPack, penceToPounds } from './billing-catalog.js';
import {
  BILLING_ACTIONS,
  BillingActionAnswer,
  BillingActionBody,
  BillingOverview,
  CardCheckoutFound,
  CardCheckouts,
  CheckoutAnswer,
  VerifyResult,
} from './billing.schemas.js';

const MINUTE = 60_000;

/** At most this many storage blocks in one purchase. */
const STORAGE_QUANTITY_MAX = 10;
const SESSION_ID = /^cs_[A-Za-z0-9_]{1,250}$/;

/** Money and billing data need a signed-in person: a leaked API key must not buy or read them. 401 before any body check. */
const authenticate = async (request: FastifyRequest) => {
  await requireSessionUser(request);
};

function parsePlan(value: unknown): CardPlan {
  if (value === undefined || value === null || value === '') throw new DomainError('FIELD_REQUIRED', { field: 'plan' });
  if (!isCardPlan(value)) throw new DomainError('INVALID_PLAN_CHOICE', { allowed: CARD_PLANS.join(', ') });
  return value;
}

function parseQuantity(value: unknown): number {
  if (value === undefined || value === null) return 1;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > STORAGE_QUANTITY_MAX) {
    throw new DomainError('QUANTITY_OUT_OF_RANGE', { max: STORAGE_QUANTITY_MAX });
  }
  return n;
}

/** A browser following a link is redirected to the hosted page; a client asking for JSON gets `{ url, sessionId }`. */
const wantsJson = (request: FastifyRequest) => {
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
};

/** The `t=` of a `Stripe-Signature` header in seconds, or undefined. */
const signatureTimestamp = (header: string) => {
  const match = /(?:^|,)\s*t=(\d{1,12})(?:,|$)/.exec(header);
  return match ? Number(match[1]) : undefined;
};

/**
 * Spec §4.18 Billing and the payment-provider webhook of §6 (`POST /api/wallet/top-up`): plan subscriptions, credit
 * packs and storage paid by card through Stripe Checkout, in GBP. Nothing here works without STRIPE_SECRET_KEY
 * (503), except reading the account's billing state.
 */
export async function billingRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const stripe: Stripe | undefined = config.stripe ? createStripeClient(config.stripe) : undefined;
  const checkoutLimit = app.rateLimit({
    name: 'billing-checkout',
    keyBy: perSession,
    max: 20,
    windowMs: MINUTE,
    message: 'Too many requests',
  });

  const deps = (request: FastifyRequest): BillingDeps => {
    if (!stripe) throw new DomainError('CARD_PAYMENTS_UNCONFIGURED');
    return { db: app.db, stripe, config, log: request.log };
  };

  async function checkout(request: FastifyRequest, reply: FastifyReply, order: Order, redirect: boolean) {
    const user = await requireSessionUser(request);
    const answer = await createCheckout(deps(request), user.id, order);
    if (redirect && !wantsJson(request)) return reply.redirect(answer.url, 303);
    return answer;
  }

  function creditOrder(price: unknown): Order {
    if (price === undefined || price === null || price === '') throw new DomainError('FIELD_REQUIRED', { field: 'price' });
    const pack = typeof price === 'string' || typeof price === 'number' ? findCreditPack(config.billing, String(price)) : undefined;
    if (!pack) {
      const prices = config.billing.creditPacks.map((p) => penceToPounds(p.amountPence)).join(', ');
      throw new DomainError('INVALID_PRICE', { prices });
    }
    return { kind: 'credits', pack };
  }

  app.get(
    '/api/billing',
    {
      onRequest: authenticate,
      schema: {
        tags: ['billing'],
        description: 'Plan, subscription status, customer, bring-your-own-key flag, credits, this month’s usage and the GBP price list.',
        response: { 200: BillingOverview },
      },
    },
    async (request) => {
      const user = await requireSessionUser(request);
      return billingOverview(app.db, config.billing, user.id, app.clock(), Boolean(stripe));
    },
  );

  app.post(
    '/api/billing',
    {
      onRequest: authenticate,
      config: { invalidBody: 'INVALID_REQUEST_BODY' },
      schema: {
        tags: ['billing'],
        description: `Actions: ${BILLING_ACTIONS.join(', ')}. \`create-checkout\` takes \`plan\`; \`buy-credits\` takes \`price\` (GBP).`,
        body: BillingActionBody,
        response: { 200: BillingActionAnswer },
      },
    },
    async (request, reply) => {
      const user = await requireSessionUser(request);
      const { action, plan, price } = request.body;
      switch (action) {
        case 'create-checkout': {
          await checkoutLimit(request, reply);
          return checkout(request, reply, { kind: 'plan', plan: parsePlan(plan) }, false);
        }
        case 'buy-credits': {
          await checkoutLimit(request, reply);
          return checkout(request, reply, creditOrder(price), false);
        }
        case 'enable-byok':
        case 'disable-byok':
          return { success: true as const, byok: await setByok(app.db, user.id, action === 'enable-byok', request.ip) };
        case 'get-usage':
          return { usage: await app.db.withUser(user.id, (trx) => usageThisPeriod(trx, user.id, app.clock())) };
      }
    },
  );

  app.get(
    '/api/checkout/verify',
    {
      onRequest: authenticate,
      schema: {
        tags: ['billing'],
        description: 'Reads the caller’s Checkout Session from the provider and applies it when paid (once).',
        querystring: Type.Object({ session_id: Type.Optional(Type.String()) }),
        response: { 200: VerifyResult },
      },
    },
    async (request) => {
      const user = await requireSessionUser(request);
      const sessionId = request.query.session_id;
      if (!sessionId) throw new DomainError('SESSION_ID_REQUIRED');
      if (!SESSION_ID.test(sessionId)) throw new DomainError('INVALID_SESSION_ID');
      return verifyCheckout(deps(request), user.id, sessionId);
    },
  );

  app.get(
    '/api/payments/card/checkout',
    {
      onRequest: [authenticate, checkoutLimit],
      schema: {
        tags: ['billing'],
        description: 'A monthly plan in GBP: 303 to the hosted checkout page, or `{ url, sessionId }` with `Accept: application/json`.',
        querystring: Type.Object({ plan: Type.Optional(Type.String({ description: CARD_PLANS.join(' | ') })) }),
        response: { 200: CheckoutAnswer },
      },
    },
    async (request, reply) => checkout(request, reply, { kind: 'plan', plan: parsePlan(request.query.plan) }, true),
  );

  app.get(
    '/api/payments/card/credits',
    {
      onRequest: [authenticate, checkoutLimit],
      schema: {
        tags: ['billing'],
        description: 'A credit pack by its GBP price: 303 to the hosted checkout page, or JSON as for `/api/payments/card/checkout`.',
        querystring: Type.Object({ price: Type.Optional(Type.String()) }),
        response: { 200: CheckoutAnswer },
      },
    },
    async (request, reply) => checkout(request, reply, creditOrder(request.query.price), true),
  );

  app.post(
    '/api/payments/card/storage-upgrade',
    {
      onRequest: [authenticate, checkoutLimit],
      config: { invalidBody: 'INVALID_REQUEST_BODY' },
      schema: {
        tags: ['billing'],
        description: `Extra storage on top of an active paid plan, ${config.billing.storageUpgrade.gb} GB per unit, paid once (1 to ${STORAGE_QUANTITY_MAX} units).`,
        response: { 200: CheckoutAnswer },
      },
    },
    async (request, reply) => {
      // The body is optional (no body: one unit), so it is checked here rather than by a schema that would demand one.
      const body = request.body;
      if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
        throw new DomainError('INVALID_REQUEST_BODY');
      const quantity = parseQuantity((body as { quantity?: unknown } | undefined)?.quantity);
      return checkout(request, reply, { kind: 'storage', quantity }, false);
    },
  );

  app.get(
    '/api/wallet/top-up',
    {
      onRequest: authenticate,
      schema: {
        tags: ['billing'],
        description: 'The caller’s checkouts (newest 20), or one by `session_id`, as recorded here.',
        querystring: Type.Object({ session_id: Type.Optional(Type.String()) }),
        response: { 200: Type.Union([CardCheckoutFound, CardCheckouts]) },
      },
    },
    async (request) => {
      const user = await requireSessionUser(request);
      const sessionId = request.query.session_id;
      if (sessionId !== undefined) {
        if (!SESSION_ID.test(sessionId)) throw new DomainError('INVALID_SESSION_ID');
        const [found] = await listCheckouts(app.db, user.id, sessionId);
        if (!found) throw new DomainError('CHECKOUT_SESSION_NOT_FOUND');
        return { checkout: found };
      }
      return {
        cardPayments: Boolean(stripe),
        webhookConfigured: Boolean(stripe && config.stripe?.webhookSecret),
        checkouts: await listCheckouts(app.db, user.id),
      };
    },
  );

  // The webhook reads its body raw: the signature covers the exact bytes the provider sent.
  await app.register(async (scope) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    scope.post(
      '/api/wallet/top-up',
      {
        schema: {
          tags: ['billing'],
          description:
            'Payment-provider webhook (Stripe): `Stripe-Signature` verified (5-minute tolerance); each event id is handled once; unknown types are acknowledged.',
        },
      },
      async (request) => {
        const secret = config.stripe?.webhookSecret;
        if (!stripe || !secret) throw new DomainError('WEBHOOK_UNCONFIGURED');
        const header = request.headers['stripe-signature'];
        if (typeof header !== 'string' || header === '') throw new DomainError('MISSING_STRIPE_SIGNATURE_HEADER');
        const payload = request.body;
        if (!Buffer.isBuffer(payload) || payload.length === 0) throw new DomainError('INVALID_REQUEST_BODY');

        const now = app.clock();
        // The SDK only refuses old signatures; one dated too far ahead is refused here.
        const signedAt = signatureTimestamp(header);
        if (signedAt !== undefined && signedAt * 1000 > now + WEBHOOK_TOLERANCE_SECONDS * 1000) {
          throw new DomainError('WEBHOOK_TIMESTAMP_OUTSIDE_TOLERANCE');
        }
        let event: Stripe.Event;
        try {
          event = stripe.webhooks.constructEvent(payload, header, secret, WEBHOOK_TOLERANCE_SECONDS, undefined, now);
        } catch (err) {
          const message = err instanceof Error ? err.message : '';
          request.log.warn({ reason: message }, 'payment webhook refused');
          if (/tolerance/i.test(message)) throw new DomainError('WEBHOOK_TIMESTAMP_OUTSIDE_TOLERANCE');
          throw new DomainError('INVALID_SIGNATURE_REQUEST');
        }
        let outcome: Awaited<ReturnType<typeof handleEvent>>;
        try {
          outcome = await handleEvent({ db: app.db, stripe, config, log: request.log }, event);
        } catch (err) {
          // Nothing was stored: the provider retries the event later.
          throw providerFailure(request.log, err, `webhook ${event.type}`);
        }
        request.log.info({ event: event.id, type: event.type, outcome }, 'payment webhook');
        return { received: true, outcome };
      },
    );
  });
}
