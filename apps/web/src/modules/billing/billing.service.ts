import { type CardPlan, CARD_PLANS, DomainError, isCardPlan, isPaidPlan, type Logger, planTitle } from '@aop/core';
import { type DB, type Database, roundMoney, type Tx, sql, writeAudit } from '@aop/db';
import type { Kysely } from 'kysely';
import Stripe from 'stripe';
import type { WebConfig } from '../../config.js';
import { BILLING_CURRENCY, type BillingCatalog, type CreditPack, penceToPounds } from './billing-catalog.js';
import type { AccountBilling, BillingOverview, BillingUsage, CardCheckout, PriceList, VerifyResult } from './billing.schemas.js';
import { periodRange } from '../usage/usage.service.js';

/**
 * Card payments (spec §4.18 Billing, §6 payment provider): Checkout Sessions for plans (subscription mode), credit
 * packs and storage (payment mode); fulfilment exactly once whether the webhook or `GET /api/checkout/verify` sees the
 * payment first; subscription state kept in step with the provider's events. Knows nothing of HTTP: refusals are
 * catalogue codes.
 */

export type StripeConfig = NonNullable<WebConfig['stripe']>;

/** `POST /api/billing` actions (defined with the schemas, whose request schema lists them). */

/** Spec §8 webhook timestamp tolerance (5 minutes), applied to the payment provider's signatures too. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/** One SDK client per configuration: keep-alive connections are reused across requests. */
export function createStripeClient(config: StripeConfig): Stripe {
  return new Stripe(config.secretKey, {
    ...(config.api ? { protocol: config.api.protocol, host: config.api.host, port: config.api.port } : {}),
    timeout: config.timeoutMs,
    // The SDK sends an idempotency key with every POST, so its retries never create a second object.
    maxNetworkRetries: 2,
    telemetry: false,
    appInfo: { name: 'agent-operations-platform' },
  });
}

/** Our subscription statuses (`users.subscription_status`) from the provider's. */
export function subscriptionStatusFrom(status: string): 'active' | 'past_due' | 'canceled' {
  switch (status) {
    case 'active':
    case 'trialing':
      return 'active';
    case 'canceled':
    case 'incomplete_expired':
      return 'canceled';
    default:
      // past_due, unpaid, incomplete, paused: not paid up, so agents stop being provisioned (`ACTIVE_SUBSCRIPTION_REQUIRED`).
      return 'past_due';
  }
}

/**
 * A provider failure (an SDK error: refused, unreachable, timed out) is `PROVIDER_FAILED` and a log line naming the
 * error, never the key. Anything else is ours and goes on as it is.
 */
export function providerFailure(log: Logger, err: unknown, what: string): unknown {
  if (!(err instanceof Stripe.errors.StripeError)) return err;
  log.error({ type: err.type, code: err.code, status: err.statusCode, reason: err.message }, `payment provider: ${what} failed`);
  return new DomainError('PROVIDER_FAILED');
}

export type Order = { kind: 'plan'; plan: CardPlan } | { kind: 'credits'; pack: CreditPack } | { kind: 'storage'; quantity: number };

export interface BillingDeps {
  db: Database;
  stripe: Stripe;
  config: Pick<WebConfig, 'publicUrl' | 'productName' | 'billing'>;
  log: Logger;
}

interface Account {
  email: string;
  name: string;
  plan: string;
  subscription_status: string;
  stripe_customer_id: string | null;
}

const readAccount = (trx: Tx, userId: string) =>
  trx
    .selectFrom('users')
    .select(['email', 'name', 'plan', 'subscription_status', 'stripe_customer_id'])
    .where('id', '=', userId)
    .executeTakeFirstOrThrow() as Promise<Account>;

const capitalise = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/** Synthetic wallet emails (`<address>@wallet.<product>`) receive no mail, so Stripe is not given them. */
const mailable = (email: string, productName: string) => !email.toLowerCase().endsWith(`@wallet.${productName.toLowerCase()}`);

/**
 * The user's customer at the provider: the stored one, else a new one stored now. Two requests at once send the
 * same idempotency key, so the provider answers both with one customer; the stored id wins either way.
 */
async function ensureCustomer(deps: BillingDeps, userId: string, account: Account, replace = false): Promise<string> {
  if (account.stripe_customer_id && !replace) return account.stripe_customer_id;
  const customer = await deps.stripe.customers.create(
    {
      ...(mailable(account.email, deps.config.productName) ? { email: account.email } : {}),
      name: account.name,
      metadata: { userId },
    },
    { idempotencyKey: replace ? `customer-replace-${userId}-${account.stripe_customer_id}` : `customer-${userId}` },
  );
  return deps.db.withUser(userId, async (trx) => {
    const update = trx.updateTable('users').set({ stripe_customer_id: customer.id, updated_at: new Date() }).where('id', '=', userId);
    await (replace ? update : update.where('stripe_customer_id', 'is', null)).execute();
    const stored = await trx.selectFrom('users').select('stripe_customer_id').where('id', '=', userId).executeTakeFirstOrThrow();
    return stored.stripe_customer_id ?? customer.id;
  });
}

function lineItem(catalog: BillingCatalog, order: Order, productName: string): Stripe.Checkout.SessionCreateParams.LineItem {
  if (order.kind === 'plan') {
    const price = catalog.plans[order.plan];
    if ('priceId' in price) return { price: price.priceId, quantity: 1 };
    return {
      quantity: 1,
      price_data: {
        currency: BILLING_CURRENCY,
        unit_amount: price.amountPence,
        recurring: { interval: 'month' },
        product_data: { name: `${capitalise(productName)} ${planTitle(order.plan)} plan` },
      },
    };
  }
  if (order.kind === 'credits') {
    return {
      quantity: 1,
      price_data: {
        currency: BILLING_CURRENCY,
        unit_amount: order.pack.amountPence,
        product_data: { name: `${order.pack.credits} credits` },
      },
    };
  }
  return {
    quantity: order.quantity,
    price_data: {
      currency: BILLING_CURRENCY,
      unit_amount: catalog.storageUpgrade.amountPence,
      product_data: { name: `${catalog.storageUpgrade.gb} GB extra storage` },
    },
  };
}

/**
 * Opens a Checkout Session for `order` and records it. Plans: refused when the same plan is already active; a new
 * plan replaces the old subscription once paid. Storage: only on top of an active paid plan (`PAID_PLAN_REQUIRED`,
 * `ACTIVE_SUBSCRIPTION_REQUIRED`).
 */
export async function createCheckout(deps: BillingDeps, userId: string, order: Order): Promise<{ url: string; sessionId: string }> {
  const account = await deps.db.withUser(userId, (trx) => readAccount(trx, userId));
  if (order.kind === 'plan' && account.plan === order.plan && account.subscription_status === 'active') {
    throw new DomainError('ALREADY_SUBSCRIBED', { plan: order.plan });
  }
  if (order.kind === 'storage') {
    if (!isPaidPlan(account.plan)) throw new DomainError('PAID_PLAN_REQUIRED');
    if (account.subscription_status !== 'active') throw new DomainError('ACTIVE_SUBSCRIPTION_REQUIRED');
  }
  const { publicUrl, billing, productName } = deps.config;
  const metadata: Record<string, string> = { userId, kind: order.kind };
  if (order.kind === 'plan') metadata.plan = order.plan;
  if (order.kind === 'credits') metadata.credits = String(order.pack.credits);
  if (order.kind === 'storage') metadata.storageGb = String(billing.storageUpgrade.gb * order.quantity);

  const params = (customer: string): Stripe.Checkout.SessionCreateParams => ({
    mode: order.kind === 'plan' ? 'subscription' : 'payment',
    customer,
    client_reference_id: userId,
    line_items: [lineItem(billing, order, productName)],
    metadata,
    ...(order.kind === 'plan' ? { subscription_data: { metadata: { userId, plan: order.plan } } } : { payment_intent_data: { metadata } }),
    success_url: `${publicUrl}/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
    cancel_url: `${publicUrl}/billing?checkout=canceled`,
  });

  let session: Stripe.Checkout.Session;
  try {
    let customer = await ensureCustomer(deps, userId, account);
    try {
      session = await deps.stripe.checkout.sessions.create(params(customer));
    } catch (err) {
      // A stored customer the provider no longer knows (deleted, or test keys swapped for live ones): make a new one.
      const e = err as { code?: string; param?: string };
      if (e.code !== 'resource_missing' || e.param !== 'customer') throw err;
      deps.log.warn({ customer }, 'payment provider: stored customer missing, creating a new one');
      customer = await ensureCustomer(deps, userId, { ...account, stripe_customer_id: customer }, true);
      session = await deps.stripe.checkout.sessions.create(params(customer));
    }
  } catch (err) {
    throw providerFailure(deps.log, err, 'checkout session create');
  }
  if (!session.url) {
    deps.log.error({ session: session.id }, 'payment provider: checkout session without a URL');
    throw new DomainError('PROVIDER_FAILED');
  }

  await deps.db.withUser(userId, async (trx) => {
    await trx
      .insertInto('billing_checkouts')
      .values({
        session_id: session.id,
        user_id: userId,
        kind: order.kind,
        plan: order.kind === 'plan' ? order.plan : null,
        credits: order.kind === 'credits' ? order.pack.credits : 0,
        storage_gb: order.kind === 'storage' ? billing.storageUpgrade.gb * order.quantity : 0,
        amount_total: session.amount_total,
        currency: session.currency,
      })
      .execute();
    await writeAudit(trx, { userId, action: 'billing.checkout.create', target: session.id, metadata });
  });
  return { url: session.url, sessionId: session.id };
}

/** Writes that one provider fact causes, applied inside the transaction that records it; then what follows the commit. */
interface Change {
  apply(trx: Kysely<DB>): Promise<void>;
  afterCommit?: () => Promise<void>;
}

const idOf = (value: string | { id: string } | null | undefined) => (typeof value === 'string' ? value : (value?.id ?? null));

const isPaid = (session: Stripe.Checkout.Session) =>
  session.status === 'complete' && (session.payment_status === 'paid' || session.payment_status === 'no_payment_required');

/**
 * What completing `session` changes, if it is one of ours, paid, and still `open` here. For a plan, the subscription
 * is read from the provider (its status, not the session's, says whether it is paid up). The `open` → `complete`
 * update inside `apply` is the guard that makes the webhook and the verify endpoint apply it once between them.
 */
async function checkoutCompletion(deps: BillingDeps, session: Stripe.Checkout.Session): Promise<Change | null> {
  if (!isPaid(session)) return null;
  const row = await deps.db.kysely.selectFrom('billing_checkouts').selectAll().where('session_id', '=', session.id).executeTakeFirst();
  if (row?.status !== 'open') return null;
  // A session names its user twice; both must be the user we opened it for.
  if (session.metadata?.userId !== row.user_id || session.client_reference_id !== row.user_id) {
    deps.log.warn({ session: session.id }, 'payment provider: checkout session does not belong to its recorded user');
    return null;
  }
  const subscriptionId = idOf(session.subscription);
  if (row.kind === 'plan' && !subscriptionId) return null;
  const current = row.kind === 'plan' && subscriptionId ? await deps.stripe.subscriptions.retrieve(subscriptionId) : null;
  const subscription = current ? { id: current.id, status: subscriptionStatusFrom(current.status) } : null;
  let replaced: string | null = null;
  return {
    async apply(trx) {
      const claimed = await trx
        .updateTable('billing_checkouts')
        .set({ status: 'complete', completed_at: new Date(), amount_total: session.amount_total, currency: session.currency })
        .where('session_id', '=', session.id)
        .where('status', '=', 'open')
        .returning(['user_id', 'kind', 'plan', 'credits', 'storage_gb'])
        .executeTakeFirst();
      if (!claimed) return;
      const userId = claimed.user_id;
      const customer = idOf(session.customer);
      if (claimed.kind === 'plan' && subscription) {
        const before = await trx.selectFrom('users').select('stripe_subscription_id').where('id', '=', userId).executeTakeFirstOrThrow();
        if (before.stripe_subscription_id && before.stripe_subscription_id !== subscription.id) replaced = before.stripe_subscription_id;
        await trx
          .updateTable('users')
          .set((eb) => ({
            plan: subscription.status === 'canceled' ? 'free' : (claimed.plan ?? 'free'),
            subscription_status: subscription.status,
            stripe_subscription_id: subscription.id,
            stripe_customer_id: eb.fn.coalesce('stripe_customer_id', eb.val(customer)),
            updated_at: new Date(),
          }))
          .where('id', '=', userId)
          .execute();
      } else if (claimed.kind === 'credits') {
        await trx
          .updateTable('users')
          .set((eb) => ({ credits: eb('credits', '+', claimed.credits), updated_at: new Date() }))
          .where('id', '=', userId)
          .execute();
      } else if (claimed.kind === 'storage') {
        await trx
          .updateTable('users')
          .set((eb) => ({ extra_storage_gb: eb('extra_storage_gb', '+', claimed.storage_gb), updated_at: new Date() }))
          .where('id', '=', userId)
          .execute();
      }
      await writeAudit(trx, {
        userId,
        action: 'billing.checkout.complete',
        target: session.id,
        metadata: {
          kind: claimed.kind,
          plan: claimed.plan,
          credits: claimed.credits,
          storageGb: claimed.storage_gb,
          amountTotal: session.amount_total,
          currency: session.currency,
          subscription: subscription?.id ?? null,
        },
      });
    },
    // A plan bought on top of another replaces it: the old subscription is cancelled (prorated) so nobody pays twice.
    async afterCommit() {
      if (!replaced) return;
      try {
        await deps.stripe.subscriptions.cancel(replaced, { prorate: true });
      } catch (err) {
        deps.log.error(
          { subscription: replaced, reason: (err as Error).message },
          'payment provider: the replaced subscription could not be cancelled; cancel it by hand',
        );
      }
    },
  };
}

/** Sets the state of the user whose current subscription is `subscriptionId`; other subscriptions change nothing. */
function subscriptionChange(
  subscriptionId: string,
  status: 'active' | 'past_due' | 'canceled',
  plan: string | undefined,
  eventType: string,
): Change {
  return {
    async apply(trx) {
      const updated = await trx
        .updateTable('users')
        .set({
          subscription_status: status,
          ...(status === 'canceled' ? { plan: 'free' } : isCardPlan(plan) ? { plan } : {}),
          updated_at: new Date(),
        })
        .where('stripe_subscription_id', '=', subscriptionId)
        .returning('id')
        .execute();
      for (const { id } of updated) {
        await writeAudit(trx, {
          userId: id,
          action: 'billing.subscription.update',
          target: subscriptionId,
          metadata: { status, eventType },
        });
      }
    },
  };
}

/** The subscription an invoice bills: `parent.subscription_details.subscription`, or the older top-level field. */
function invoiceSubscription(invoice: Stripe.Invoice): string | null {
  const legacy = (invoice as unknown as { subscription?: string | { id: string } | null }).subscription;
  return idOf(invoice.parent?.subscription_details?.subscription ?? legacy);
}

/** Event types the webhook acts on; every other type is acknowledged and ignored. */
export const HANDLED_EVENTS = new Set([
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'checkout.session.expired',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'invoice.payment_failed',
  'invoice.paid',
]);

/** What an event changes. Subscription events re-read the subscription: events can arrive out of order. */
async function eventChange(deps: BillingDeps, event: Stripe.Event): Promise<Change | null> {
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
      return checkoutCompletion(deps, event.data.object);
    case 'checkout.session.expired': {
      const sessionId = event.data.object.id;
      return {
        async apply(trx) {
          await trx
            .updateTable('billing_checkouts')
            .set({ status: 'expired' })
            .where('session_id', '=', sessionId)
            .where('status', '=', 'open')
            .execute();
        },
      };
    }
    case 'customer.subscription.deleted':
      return subscriptionChange(event.data.object.id, 'canceled', undefined, event.type);
    case 'customer.subscription.updated': {
      const current = await deps.stripe.subscriptions.retrieve(event.data.object.id);
      return subscriptionChange(current.id, subscriptionStatusFrom(current.status), current.metadata?.plan, event.type);
    }
    case 'invoice.paid': {
      const subscriptionId = invoiceSubscription(event.data.object);
      if (!subscriptionId) return null;
      const current = await deps.stripe.subscriptions.retrieve(subscriptionId);
      return subscriptionChange(current.id, subscriptionStatusFrom(current.status), current.metadata?.plan, event.type);
    }
    case 'invoice.payment_failed': {
      const subscriptionId = invoiceSubscription(event.data.object);
      if (!subscriptionId) return null;
      // A failed renewal: not paid up until a later payment (invoice.paid, subscription.updated) says otherwise.
      const change = subscriptionChange(subscriptionId, 'past_due', undefined, event.type);
      return {
        async apply(trx) {
          const user = await trx
            .selectFrom('users')
            .select('subscription_status')
            .where('stripe_subscription_id', '=', subscriptionId)
            .executeTakeFirst();
          if (user && user.subscription_status !== 'canceled') await change.apply(trx);
        },
      };
    }
    default:
      return null;
  }
}

export type EventOutcome = 'processed' | 'duplicate' | 'ignored';

/**
 * Handles one verified webhook event exactly once: the event id is stored in the same transaction as the changes it
 * makes, so a redelivery (or a replay of a captured request) finds it and changes nothing, and a failure stores
 * nothing, so the provider's retry runs it again.
 */
export async function handleEvent(deps: BillingDeps, event: Stripe.Event): Promise<EventOutcome> {
  if (!HANDLED_EVENTS.has(event.type)) return 'ignored';
  const seen = await deps.db.kysely.selectFrom('billing_events').select('id').where('id', '=', event.id).executeTakeFirst();
  if (seen) return 'duplicate';
  const change = await eventChange(deps, event);
  const outcome = await deps.db.kysely.transaction().execute(async (trx) => {
    const stored = await trx
      .insertInto('billing_events')
      .values({ id: event.id, type: event.type })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!stored) return 'duplicate' as const;
    await change?.apply(trx);
    return 'processed' as const;
  });
  if (outcome === 'processed') await change?.afterCommit?.();
  return outcome;
}

const accountBilling = async (trx: Tx, userId: string): Promise<AccountBilling> => {
  const row = await trx
    .selectFrom('users')
    .select(['plan', 'subscription_status', 'credits', 'extra_storage_gb'])
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
  return { plan: row.plan, subscriptionStatus: row.subscription_status, credits: row.credits, extraStorageGb: row.extra_storage_gb };
};

/**
 * `GET /api/checkout/verify`: the caller's own session (another user's is not found), read from the provider, and
 * applied now when it is paid (idempotent: the webhook may have done it already, or may do it later to no effect).
 */
export async function verifyCheckout(deps: BillingDeps, userId: string, sessionId: string): Promise<VerifyResult> {
  const row = await deps.db.withUser(userId, (trx) =>
    trx.selectFrom('billing_checkouts').select(['kind', 'user_id']).where('session_id', '=', sessionId).executeTakeFirst(),
  );
  if (!row || row.user_id !== userId) throw new DomainError('CHECKOUT_SESSION_NOT_FOUND');
  let session: Stripe.Checkout.Session;
  let change: Change | null;
  try {
    session = await deps.stripe.checkout.sessions.retrieve(sessionId);
    change = await checkoutCompletion(deps, session);
  } catch (err) {
    throw providerFailure(deps.log, err, 'checkout session verify');
  }
  if (change) {
    await deps.db.kysely.transaction().execute((trx) => change.apply(trx));
    await change.afterCommit?.();
  }
  return {
    sessionId,
    kind: row.kind,
    status: session.status,
    paymentStatus: session.payment_status,
    paid: isPaid(session),
    account: await deps.db.withUser(userId, (trx) => accountBilling(trx, userId)),
  };
}

/** Usage-ledger totals for the current billing period (the calendar month so far, UTC), in USD as the ledger keeps it. */
export async function usageThisPeriod(trx: Tx, userId: string, now: number): Promise<BillingUsage> {
  const { since, until } = periodRange('mtd', now);
  const rows = await sql<{ kind: string; calls: number; tokens: string | number | null; cost: string | null }>`
    select kind, count(*)::int as calls, sum(total_tokens)::bigint as tokens, sum(cost_usd) as cost
    from usage_events
    where user_id = ${userId} and created_at >= ${since} and created_at < ${until}
    group by kind
    order by kind`.execute(trx);
  const byKind = rows.rows.map((r) => ({
    kind: r.kind,
    calls: r.calls,
    tokens: Number(r.tokens ?? 0),
    cost: roundMoney(Number(r.cost ?? 0)),
  }));
  return {
    period: 'mtd',
    since: since.toISOString(),
    until: until.toISOString(),
    totalCost: roundMoney(rows.rows.reduce((sum, r) => sum + Number(r.cost ?? 0), 0)),
    totalTokens: byKind.reduce((sum, r) => sum + r.tokens, 0),
    totalCalls: byKind.reduce((sum, r) => sum + r.calls, 0),
    byKind,
  };
}

/** The price list in GBP as clients show it: amounts as `29.00`, or the provider's price id. */
export function priceList(catalog: BillingCatalog): PriceList {
  return {
    currency: BILLING_CURRENCY,
    plans: CARD_PLANS.map((plan) => {
      const price = catalog.plans[plan];
      return 'priceId' in price ? { plan, priceId: price.priceId } : { plan, amount: penceToPounds(price.amountPence), interval: 'month' };
    }),
    creditPacks: catalog.creditPacks.map((p) => ({ price: penceToPounds(p.amountPence), credits: p.credits })),
    storageUpgrade: { gb: catalog.storageUpgrade.gb, price: penceToPounds(catalog.storageUpgrade.amountPence) },
  };
}

/** `GET /api/billing`: the account's billing state, this period's usage and the price list. */
export async function billingOverview(
  db: Database,
  catalog: BillingCatalog,
  userId: string,
  now: number,
  cardPayments: boolean,
): Promise<BillingOverview> {
  return db.withUser(userId, async (trx) => {
    const row = await trx
      .selectFrom('users')
      .select(['plan', 'subscription_status', 'credits', 'extra_storage_gb', 'stripe_customer_id', 'byok'])
      .where('id', '=', userId)
      .executeTakeFirstOrThrow();
    return {
      plan: row.plan,
      subscriptionStatus: row.subscription_status,
      customerId: row.stripe_customer_id,
      byok: row.byok,
      credits: row.credits,
      extraStorageGb: row.extra_storage_gb,
      cardPayments,
      usage: await usageThisPeriod(trx, userId, now),
      prices: priceList(catalog),
    };
  });
}

/** Turns bring-your-own-key on or off; answers the new value. */
export async function setByok(db: Database, userId: string, byok: boolean, ip: string): Promise<boolean> {
  await db.withUser(userId, async (trx) => {
    const before = await trx.selectFrom('users').select('byok').where('id', '=', userId).executeTakeFirstOrThrow();
    if (before.byok === byok) return;
    await trx.updateTable('users').set({ byok, updated_at: new Date() }).where('id', '=', userId).execute();
    await writeAudit(trx, { userId, action: byok ? 'billing.byok.enable' : 'billing.byok.disable', ip });
  });
  return byok;
}

/** `GET /api/wallet/top-up`: the caller's checkouts, newest first, or one by id. */
export async function listCheckouts(db: Database, userId: string, sessionId?: string): Promise<CardCheckout[]> {
  const rows = await db.withUser(userId, (trx) => {
    let query = trx
      .selectFrom('billing_checkouts')
      .select(['session_id', 'kind', 'plan', 'credits', 'storage_gb', 'amount_total', 'currency', 'status', 'created_at', 'completed_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .limit(20);
    if (sessionId) query = query.where('session_id', '=', sessionId);
    return query.execute();
  });
  return rows.map((r) => ({
    sessionId: r.session_id,
    kind: r.kind,
    plan: r.plan,
    credits: r.credits,
    storageGb: r.storage_gb,
    amount: r.amount_total === null ? null : penceToPounds(r.amount_total),
    currency: r.currency,
    status: r.status,
    createdAt: r.created_at.toISOString(),
    completedAt: r.completed_at?.toISOString() ?? null,
  }));
}
