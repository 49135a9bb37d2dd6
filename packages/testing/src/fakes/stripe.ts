import { randomBytes } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local card-payment provider speaking the Stripe REST API (v1) the SDK calls: form-encoded bodies in, Stripe-shaped
 * JSON out, `Authorization: Bearer <secret key>`, `Idempotency-Key` replays, Stripe's error bodies. Point the SDK at it
 * with `host`/`port`/`protocol` (`STRIPE_API_BASE`). What a customer does on the hosted Checkout page is played by
 * `completeCheckout`; webhooks are built by `event` and posted signed by `deliver`.
 *
 * Endpoints: `POST /v1/customers`, `GET /v1/customers/:id`, `POST /v1/checkout/sessions`,
 * `GET /v1/checkout/sessions/:id`, `POST /v1/prices`, `GET /v1/prices/:id`, `GET /v1/subscriptions/:id`,
 * `DELETE /v1/subscriptions/:id` (cancel).
 */

type StripeObject = Record<string, any>;

/** One request the fake received: the form body parsed into nested objects as Stripe reads it. */
export interface StripeApiRequest {
  method: string;
  /** e.g. `/v1/checkout/sessions`. */
  path: string;
  query: StripeObject;
  body: StripeObject;
  idempotencyKey: string | undefined;
  stripeVersion: string | undefined;
  authorized: boolean;
}

/** Computes a `Stripe-Signature` header value, e.g. with the SDK's `webhooks.generateTestHeaderString`. */
export type StripeSigner = (input: { payload: string; secret: string; timestamp: number }) => string;

export interface StripeEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  data: { object: StripeObject; previous_attributes?: StripeObject };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
}

export interface DeliverOptions {
  /** The endpoint's signing secret (`whsec_…`). */
  secret: string;
  /** Unix seconds the signature is made at; now by default. */
  timestamp?: number;
  /** Send this header instead of a computed one (null: no header at all). */
  signatureHeader?: string | null;
  /** Change the body after signing it. */
  tamper?: (payload: string) => string;
}

export interface FakeStripe {
  /** `http://127.0.0.1:<port>`: the value of STRIPE_API_BASE. */
  url: string;
  secretKey: string;
  readonly requests: StripeApiRequest[];
  readonly customers: Map<string, StripeObject>;
  readonly checkoutSessions: Map<string, StripeObject>;
  readonly subscriptions: Map<string, StripeObject>;
  readonly prices: Map<string, StripeObject>;
  /** Requests to `path` (and `method`, when given), oldest first. */
  requestsTo(path: string, method?: string): StripeApiRequest[];
  /**
   * The customer pays on the hosted page: the session becomes `complete` with `payment_status` (`paid` by default).
   * A subscription-mode session gets an `active` subscription carrying `subscription_data.metadata`; a payment-mode
   * one a payment intent. Answers the session as the API would now.
   */
  completeCheckout(sessionId: string, options?: { paymentStatus?: 'paid' | 'unpaid' | 'no_payment_required' }): StripeObject;
  /** The subscription's status changes (e.g. `past_due` after a failed renewal). */
  setSubscriptionStatus(subscriptionId: string, status: string): StripeObject;
  /** An event of `type` about `object` (a snapshot copy), with a fresh `evt_…` id. */
  event(type: string, object: StripeObject, extra?: Partial<StripeEvent>): StripeEvent;
  /** Posts `event` to `url` as the provider does: raw JSON body, `Stripe-Signature` header. */
  deliver(url: string, event: StripeEvent, options: DeliverOptions): Promise<{ status: number; body: any; payload: string }>;
  close(): Promise<void>;
}

export const FAKE_STRIPE_API_VERSION = '2026-10-28.endive';

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
const now = () => Math.floor(Date.now() / 1000);

/**
 * Stripe's form encoding: `a[b][0][c]=1` → `{ a: { b: [ { c: '1' } ] } }`. Numeric segments make arrays. Values stay
 * strings, as the API receives them.
 */
export function parseStripeForm(text: string): StripeObject {
  const root: StripeObject = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const segments = key.split('[').map((s, i) => (i === 0 ? s : s.replace(/\]$/, '')));
    let node: any = root;
    segments.forEach((segment, i) => {
      const last = i === segments.length - 1;
      if (last) {
        node[segment] = value;
        return;
      }
      const nextIsIndex = /^\d+$/.test(segments[i + 1] ?? '');
      node[segment] ??= nextIsIndex ? [] : {};
      node = node[segment];
    });
  }
  return root;
}

class StripeApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param?: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

const list = (data: StripeObject[], url: string) => ({ object: 'list', data, has_more: false, url });
const int = (value: unknown, param: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new StripeApiError(400, 'invalid_request_error', `Invalid integer: ${String(value)}`, param);
  return n;
};

export async function startFakeStripe(options: { secretKey: string; sign?: StripeSigner }): Promise<FakeStripe> {
  const requests: StripeApiRequest[] = [];
  const customers = new Map<string, StripeObject>();
  const checkoutSessions = new Map<string, StripeObject>();
  const subscriptions = new Map<string, StripeObject>();
  const prices = new Map<string, StripeObject>();
  /** Idempotency-Key → the first answer, replayed for every retry (Stripe keeps them 24 hours). */
  const idempotent = new Map<string, { status: number; body: unknown }>();
  let baseUrl = '';

  function createPrice(body: StripeObject): StripeObject {
    const currency = String(body.currency ?? '').toLowerCase();
    if (!currency) throw new StripeApiError(400, 'invalid_request_error', 'Missing required param: currency.', 'currency');
    const price: StripeObject = {
      id: id('price'),
      object: 'price',
      active: true,
      billing_scheme: 'per_unit',
      created: now(),
      currency,
      livemode: false,
      lookup_key: body.lookup_key ?? null,
      metadata: body.metadata ?? {},
      nickname: body.nickname ?? null,
      product: body.product ?? id('prod'),
      recurring: body.recurring
        ? { interval: body.recurring.interval, interval_count: Number(body.recurring.interval_count ?? 1), usage_type: 'licensed' }
        : null,
      type: body.recurring ? 'recurring' : 'one_time',
      unit_amount: int(body.unit_amount, 'unit_amount'),
    };
    prices.set(price.id, price);
    return price;
  }

  /** A line item's price: a stored one by id, or one made from `price_data` (as Stripe does, not listed). */
  function linePrice(item: StripeObject, index: number): StripeObject {
    if (typeof item.price === 'string') {
      const price = prices.get(item.price);
      if (!price)
        throw new StripeApiError(
          400,
          'invalid_request_error',
          `No such price: '${item.price}'`,
          `line_items[${index}][price]`,
          'resource_missing',
        );
      return price;
    }
    const data = item.price_data;
    if (!data)
      throw new StripeApiError(400, 'invalid_request_error', 'You must specify either `price` or `price_data`.', `line_items[${index}]`);
    if (!data.product && !data.product_data?.name) {
      throw new StripeApiError(
        400,
        'invalid_request_error',
        'You must specify either `product` or `product_data`.',
        `line_items[${index}][price_data]`,
      );
    }
    return {
      id: id('price'),
      object: 'price',
      currency: String(data.currency ?? '').toLowerCase(),
      unit_amount: int(data.unit_amount, `line_items[${index}][price_data][unit_amount]`),
      recurring: data.recurring ? { interval: data.recurring.interval, interval_count: 1, usage_type: 'licensed' } : null,
      type: data.recurring ? 'recurring' : 'one_time',
      product: data.product ?? id('prod'),
      product_name: data.product_data?.name,
    };
  }

  function createCheckoutSession(body: StripeObject): StripeObject {
    const mode = body.mode;
    if (!['payment', 'subscription', 'setup'].includes(mode)) {
      throw new StripeApiError(400, 'invalid_request_error', 'Invalid mode: must be one of payment, setup, or subscription', 'mode');
    }
    if (!body.success_url && body.ui_mode !== 'embedded') {
      throw new StripeApiError(400, 'invalid_request_error', 'Missing required param: success_url.', 'success_url');
    }
    if (body.customer && !customers.has(body.customer)) {
      throw new StripeApiError(400, 'invalid_request_error', `No such customer: '${body.customer}'`, 'customer', 'resource_missing');
    }
    const items: StripeObject[] = Array.isArray(body.line_items) ? body.line_items : [];
    if (mode !== 'setup' && items.length === 0)
      throw new StripeApiError(400, 'invalid_request_error', 'Missing required param: line_items.', 'line_items');
    const lines = items.map((item, i) => ({ price: linePrice(item, i), quantity: int(item.quantity ?? 1, `line_items[${i}][quantity]`) }));
    const currencies = new Set(lines.map((l) => l.price.currency));
    if (currencies.size > 1)
      throw new StripeApiError(400, 'invalid_request_error', 'All prices must be in the same currency.', 'line_items');
    const recurring = lines.some((l) => l.price.recurring);
    if (mode === 'subscription' && !recurring) {
      throw new StripeApiError(
        400,
        'invalid_request_error',
        'You must provide at least one recurring price in `subscription` mode when using prices.',
        'line_items',
      );
    }
    if (mode === 'payment' && recurring) {
      throw new StripeApiError(400, 'invalid_request_error', 'You specified `payment` mode but passed a recurring price.', 'line_items');
    }
    const amount = lines.reduce((sum, l) => sum + l.price.unit_amount * l.quantity, 0);
    const sessionId = `cs_test_${randomBytes(24).toString('base64url').replace(/[-_]/g, 'x')}`;
    const created = now();
    const session: StripeObject = {
      id: sessionId,
      object: 'checkout.session',
      amount_subtotal: amount,
      amount_total: amount,
      cancel_url: body.cancel_url ?? null,
      client_reference_id: body.client_reference_id ?? null,
      created,
      currency: [...currencies][0] ?? null,
      customer: body.customer ?? null,
      customer_email: body.customer_email ?? null,
      expires_at: created + 24 * 3600,
      invoice: null,
      livemode: false,
      metadata: body.metadata ?? {},
      mode,
      payment_intent: null,
      payment_method_types: ['card'],
      payment_status: 'unpaid',
      status: 'open',
      subscription: null,
      success_url: body.success_url ?? null,
      ui_mode: body.ui_mode ?? 'hosted',
      url: `${baseUrl}/c/pay/${sessionId}`,
    };
    // Kept aside: what the session will put on the subscription or payment it makes.
    Object.defineProperty(session, '_lines', { value: lines, enumerable: false });
    Object.defineProperty(session, '_subscriptionData', { value: body.subscription_data ?? {}, enumerable: false });
    checkoutSessions.set(sessionId, session);
    return session;
  }

  function retrieve(map: Map<string, StripeObject>, objectId: string, kind: string, param = 'id'): StripeObject {
    const found = map.get(decodeURIComponent(objectId));
    if (!found) throw new StripeApiError(404, 'invalid_request_error', `No such ${kind}: '${objectId}'`, param, 'resource_missing');
    return found;
  }

  function route(method: string, path: string, body: StripeObject): StripeObject {
    const parts = path.split('/').filter(Boolean);
    if (method === 'POST' && path === '/v1/customers') {
      const customer = {
        id: id('cus'),
        object: 'customer',
        created: now(),
        description: body.description ?? null,
        email: body.email ?? null,
        livemode: false,
        metadata: body.metadata ?? {},
        name: body.name ?? null,
      };
      customers.set(customer.id, customer);
      return customer;
    }
    if (method === 'GET' && parts[1] === 'customers' && parts.length === 3) return retrieve(customers, parts[2]!, 'customer');
    if (method === 'POST' && path === '/v1/checkout/sessions') return createCheckoutSession(body);
    if (method === 'GET' && parts[1] === 'checkout' && parts[2] === 'sessions' && parts.length === 4) {
      return retrieve(checkoutSessions, parts[3]!, 'checkout.session', 'session');
    }
    if (method === 'POST' && path === '/v1/prices') return createPrice(body);
    if (method === 'GET' && parts[1] === 'prices' && parts.length === 3) return retrieve(prices, parts[2]!, 'price');
    if (method === 'GET' && parts[1] === 'subscriptions' && parts.length === 3) return retrieve(subscriptions, parts[2]!, 'subscription');
    if (method === 'DELETE' && parts[1] === 'subscriptions' && parts.length === 3) {
      const subscription = retrieve(subscriptions, parts[2]!, 'subscription');
      if (subscription.status === 'canceled') {
        throw new StripeApiError(
          400,
          'invalid_request_error',
          `A canceled subscription can only update its cancellation_details and metadata.`,
        );
      }
      subscription.status = 'canceled';
      subscription.canceled_at = now();
      subscription.ended_at = now();
      return subscription;
    }
    throw new StripeApiError(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path}).`);
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  function send(res: ServerResponse, status: number, body: unknown, requestId: string) {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, 'stripe-version': FAKE_STRIPE_API_VERSION });
    res.end(JSON.stringify(body));
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const requestId = id('req');
    const url = new URL(req.url ?? '/', 'http://localhost');
    const text = await readBody(req);
    const method = req.method ?? 'GET';
    const idempotencyKey = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined;
    const authorized = req.headers.authorization === `Bearer ${options.secretKey}`;
    const entry: StripeApiRequest = {
      method,
      path: url.pathname,
      query: parseStripeForm(url.search.slice(1)),
      body: parseStripeForm(text),
      idempotencyKey,
      stripeVersion: typeof req.headers['stripe-version'] === 'string' ? req.headers['stripe-version'] : undefined,
      authorized,
    };
    requests.push(entry);
    if (!authorized) {
      const shown = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      send(
        res,
        401,
        {
          error: {
            type: 'invalid_request_error',
            message: `Invalid API Key provided: ${shown.slice(0, 8)}${'*'.repeat(Math.max(0, shown.length - 12))}${shown.slice(-4)}`,
          },
        },
        requestId,
      );
      return;
    }
    const replayKey = idempotencyKey && method === 'POST' ? `${url.pathname}\0${idempotencyKey}` : undefined;
    const replay = replayKey ? idempotent.get(replayKey) : undefined;
    if (replay) {
      res.setHeader('idempotent-replayed', 'true');
      send(res, replay.status, replay.body, requestId);
      return;
    }
    let status = 200;
    let answer: unknown;
    try {
      answer = route(method, url.pathname, entry.body);
    } catch (err) {
      if (!(err instanceof StripeApiError)) throw err;
      status = err.status;
      answer = {
        error: {
          type: err.type,
          message: err.message,
          ...(err.param ? { param: err.param } : {}),
          ...(err.code ? { code: err.code } : {}),
          request_log_url: `${baseUrl}/logs/${requestId}`,
        },
      };
    }
    if (replayKey) idempotent.set(replayKey, { status, body: answer });
    send(res, status, answer, requestId);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'api_error', message: String(err) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: baseUrl,
    secretKey: options.secretKey,
    requests,
    customers,
    checkoutSessions,
    subscriptions,
    prices,
    requestsTo: (path, method) => requests.filter((r) => r.path === path && (!method || r.method === method)),
    completeCheckout(sessionId, { paymentStatus = 'paid' } = {}) {
      const session = checkoutSessions.get(sessionId);
      if (!session) throw new Error(`No such checkout session ${sessionId}`);
      session.status = 'complete';
      session.payment_status = paymentStatus;
      session.customer ??= (() => {
        const customer = { id: id('cus'), object: 'customer', created: now(), email: null, livemode: false, metadata: {}, name: null };
        customers.set(customer.id, customer);
        return customer.id;
      })();
      const lines = (session as { _lines?: { price: StripeObject; quantity: number }[] })._lines ?? [];
      if (session.mode === 'subscription') {
        const data = (session as { _subscriptionData?: StripeObject })._subscriptionData ?? {};
        const start = now();
        const subscription: StripeObject = {
          id: id('sub'),
          object: 'subscription',
          cancel_at_period_end: false,
          canceled_at: null,
          created: start,
          currency: session.currency,
          customer: session.customer,
          ended_at: null,
          items: list(
            lines.map((l) => ({
              id: id('si'),
              object: 'subscription_item',
              price: l.price,
              quantity: l.quantity,
              current_period_start: start,
              current_period_end: start + 30 * 86400,
            })),
            '/v1/subscription_items',
          ),
          livemode: false,
          metadata: data.metadata ?? {},
          start_date: start,
          status: paymentStatus === 'unpaid' ? 'incomplete' : 'active',
        };
        subscriptions.set(subscription.id, subscription);
        session.subscription = subscription.id;
        session.invoice = id('in');
      } else if (session.mode === 'payment') {
        session.payment_intent = id('pi');
      }
      return session;
    },
    setSubscriptionStatus(subscriptionId, status) {
      const subscription = subscriptions.get(subscriptionId);
      if (!subscription) throw new Error(`No such subscription ${subscriptionId}`);
      subscription.status = status;
      return subscription;
    },
    event(type, object, extra = {}) {
      return {
        id: id('evt'),
        object: 'event',
        api_version: FAKE_STRIPE_API_VERSION,
        created: now(),
        data: { object: structuredClone(object) },
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        type,
        ...extra,
      };
    },
    async deliver(url, event, { secret, timestamp = now(), signatureHeader, tamper }) {
      const payload = JSON.stringify(event, null, 2);
      let header = signatureHeader;
      if (header === undefined) {
        if (!options.sign) throw new Error('startFakeStripe needs a `sign` function to deliver signed webhooks');
        header = options.sign({ payload, secret, timestamp });
      }
      const headers: Record<string, string> = {
        'content-type': 'application/json; charset=utf-8',
        'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      };
      if (header !== null) headers['stripe-signature'] = header;
      const res = await fetch(url, { method: 'POST', headers, body: tamper ? tamper(payload) : payload });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      return { status: res.status, body, payload };
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
