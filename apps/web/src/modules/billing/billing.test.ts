import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import {
  type FakeStripe,
  type TestChain,
  request,
  startFakeStripe,
  startTestChain,
  testTokenAbi,
  unreachableUrl,
  walletSalt,
} from '@aop/testing';
import { type Address, type Hex, createWalletClient, getAddress, http, namehash, parseAbi } from 'viem';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BILLING_ACTIONS } from './billing.schemas.js';

const INVALID_BILLING_ACTION = 'Invalid action. Must be: create-checkout, enable-byok, disable-byok, get-usage, buy-credits';
const INVALID_PLAN = 'Invalid plan. Must be: solo, collective, label, network';
const INVALID_WALLET_ACTION = 'Invalid action. Must be: create_wallet, get_balance, create_payment, onramp';
import { createApiKey } from '../api-keys/api-keys.service.js';
import { signStripeWebhook } from './billing.test-support.js';
import { recordUsage } from '../usage/usage.service.js';
import { WALLET_LINK_STATEMENT } from '../wallets/wallets.service.js';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// Spec §4.18 Billing and Wallets, §6 payment provider → POST /api/wallet/top-up, §7 402/403. The payment provider is
// a local server speaking Stripe's REST API (driven by the real SDK), webhooks are signed with the SDK's own helper,
// and balances and names are read from a real EVM chain in process.

const SECRET_KEY = 'sk_test_billing_0123456789abcdef';
const WEBHOOK_SECRET = 'whsec_billing_test_secret_0123456789';
const PROVIDER_KEY = 'wallet-provider-key-for-tests';

/** A tiny ENS-style resolver: reverse names and forward addresses, set by anyone (a test contract). */
const RESOLVER_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
contract TestResolver {
  mapping(bytes32 => string) private names;
  mapping(bytes32 => address) private addrs;
  function setName(bytes32 node, string calldata value) external { names[node] = value; }
  function setAddr(bytes32 node, address value) external { addrs[node] = value; }
  function name(bytes32 node) external view returns (string memory) { return names[node]; }
  function addr(bytes32 node) external view returns (address) { return addrs[node]; }
}`;
const resolverAbi = parseAbi([
  'function setName(bytes32 node, string value)',
  'function setAddr(bytes32 node, address value)',
  'function name(bytes32 node) view returns (string)',
  'function addr(bytes32 node) view returns (address)',
]);

function compileResolver(): Hex {
  const solc = createRequire(import.meta.url)('solc');
  const output = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { 'TestResolver.sol': { content: RESOLVER_SOURCE } },
        settings: { evmVersion: 'paris', outputSelection: { '*': { '*': ['evm.bytecode.object'] } } },
      }),
    ),
  );
  const errors = (output.errors ?? []).filter((e: { severity: string }) => e.severity === 'error');
  if (errors.length) throw new Error(JSON.stringify(errors));
  return `0x${output.contracts['TestResolver.sol'].TestResolver.evm.bytecode.object}`;
}

/** The custodial wallet provider of docs/operations.md: `POST /wallets`, `/payments`, `/onramp`, Bearer key. */
interface FakeWalletProvider {
  url: string;
  calls: { path: string; body: any; authorization: string | undefined }[];
  close(): Promise<void>;
}
async function startFakeWalletProvider(): Promise<FakeWalletProvider> {
  const calls: FakeWalletProvider['calls'] = [];
  const wallets = new Map<string, string>();
  const read = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  };
  const server: Server = createServer(async (req, res) => {
    const body = await read(req);
    calls.push({ path: req.url ?? '', body, authorization: req.headers.authorization });
    const send = (status: number, json: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    };
    if (req.headers.authorization !== `Bearer ${PROVIDER_KEY}`) return send(401, { error: 'unauthorized' });
    if (req.url === '/wallets') {
      const address = wallets.get(body.userId) ?? privateKeyToAccount(generatePrivateKey()).address;
      wallets.set(body.userId, address);
      return send(201, { address });
    }
    if (req.url === '/payments') return send(200, { id: 'pay_1', status: 'submitted', from: body.from, to: body.to, amount: body.amount });
    if (req.url === '/onramp') return send(200, { url: `https://onramp.example/buy?address=${body.address}` });
    return send(404, { error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('billing and wallets', () => {
  let stripe: FakeStripe;
  let chain: TestChain;
  let provider: FakeWalletProvider;
  let web: TestWeb;
  let bare: TestWeb;
  let token: Address;
  let resolver: Address;

  const webhookUrl = () => `${web.url}/api/wallet/top-up`;
  const get = (base: string, path: string, cookie?: string, headers: Record<string, string> = {}) =>
    request(`${base}${path}`, { headers: { ...headers, ...(cookie ? { cookie } : {}) } });
  const post = (base: string, path: string, cookie: string | undefined, json: unknown) =>
    request(`${base}${path}`, { json, headers: cookie ? { cookie } : {} });
  const billing = (cookie: string, json: unknown) => post(web.url, '/api/billing', cookie, json);
  const userRow = (userId: string) =>
    web.database.db.kysely
      .selectFrom('users')
      .select(['plan', 'subscription_status', 'credits', 'extra_storage_gb', 'stripe_customer_id', 'stripe_subscription_id', 'byok'])
      .where('id', '=', userId)
      .executeTakeFirstOrThrow();

  /** Opens a plan checkout for `cookie` and lets the customer pay: answers the (complete) session. */
  async function paidPlan(cookie: string, plan: string) {
    const res = await billing(cookie, { action: 'create-checkout', plan });
    expect(res.status).toBe(200);
    return stripe.completeCheckout(res.body.sessionId);
  }

  beforeAll(async () => {
    chain = await startTestChain();
    stripe = await startFakeStripe({ secretKey: SECRET_KEY, sign: signStripeWebhook });
    provider = await startFakeWalletProvider();
    token = await chain.deployToken({ name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    const deployer = createWalletClient({ account: chain.deployer, chain: chain.chain, transport: http(chain.rpcUrl) });
    const hash = await deployer.deployContract({ abi: resolverAbi, bytecode: compileResolver() });
    resolver = (await chain.publicClient.waitForTransactionReceipt({ hash })).contractAddress as Address;
    web = await startWeb({
      STRIPE_SECRET_KEY: SECRET_KEY,
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_BASE: stripe.url,
      GATING_RPC_URL: chain.rpcUrl,
      PAYMENT_RPC_URL: chain.rpcUrl,
      PAYMENT_CHAIN_ID: String(chain.chainId),
      PAYMENT_TOKEN_ADDRESS: token,
      PAYMENT_TOKEN_DECIMALS: '6',
      PAYMENT_RECIPIENT: chain.accounts[4]!.address,
      WALLET_PROVIDER_URL: provider.url,
      WALLET_PROVIDER_API_KEY: PROVIDER_KEY,
      BASENAME_RESOLVER_ADDRESS: resolver,
    });
    bare = await startWeb({});
  }, 120_000);

  afterAll(async () => {
    await Promise.all([web?.close(), bare?.close(), stripe?.close(), provider?.close(), chain?.close()]);
  });

  describe('checkout', () => {
    it('creates a subscription Checkout Session in GBP for the user’s customer', async () => {
      const alice = await web.signIn({ email: 'alice@example.com', name: 'Alice' });
      const res = await billing(alice.cookie, { action: 'create-checkout', plan: 'solo' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ url: `${stripe.url}/c/pay/${res.body.sessionId}`, sessionId: expect.stringMatching(/^cs_test_/) });

      const [customerCall] = stripe.requestsTo('/v1/customers', 'POST');
      expect(customerCall!.body).toEqual({ email: 'alice@example.com', name: 'Alice', metadata: { userId: alice.userId } });
      const [call] = stripe.requestsTo('/v1/checkout/sessions', 'POST');
      expect(call!.authorized).toBe(true);
      expect(call!.body).toMatchObject({
        mode: 'subscription',
        client_reference_id: alice.userId,
        metadata: { userId: alice.userId, kind: 'plan', plan: 'solo' },
        subscription_data: { metadata: { userId: alice.userId, plan: 'solo' } },
        line_items: [
          {
            quantity: '1',
            price_data: {
              currency: 'gbp',
              unit_amount: '2900',
              recurring: { interval: 'month' },
              product_data: { name: 'Service Solo plan' },
            },
          },
        ],
        success_url: `${web.config.publicUrl}/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
        cancel_url: `${web.config.publicUrl}/billing?checkout=canceled`,
      });
      const row = await userRow(alice.userId);
      expect(call!.body.customer).toBe(row.stripe_customer_id);
      expect(row.stripe_customer_id).toMatch(/^cus_/);
    });

    it('reuses the stored customer and prices every plan and credit pack in GBP', async () => {
      const user = await web.signIn();
      const before = stripe.requestsTo('/v1/customers', 'POST').length;
      for (const [plan, pence] of [
        ['collective', '7900'],
        ['label', '19900'],
        ['network', '79900'],
      ] as const) {
        const res = await billing(user.cookie, { action: 'create-checkout', plan });
        expect(res.status).toBe(200);
        expect(stripe.checkoutSessions.get(res.body.sessionId)!.amount_total).toBe(Number(pence));
        expect(stripe.checkoutSessions.get(res.body.sessionId)!.currency).toBe('gbp');
      }
      const credits = await billing(user.cookie, { action: 'buy-credits', price: '10' });
      expect(credits.status).toBe(200);
      const call = stripe.requestsTo('/v1/checkout/sessions', 'POST').at(-1)!;
      expect(call.body).toMatchObject({
        mode: 'payment',
        metadata: { userId: user.userId, kind: 'credits', credits: '1000' },
        payment_intent_data: { metadata: { userId: user.userId, kind: 'credits', credits: '1000' } },
        line_items: [{ quantity: '1', price_data: { currency: 'gbp', unit_amount: '1000', product_data: { name: '1000 credits' } } }],
      });
      expect(call.body.subscription_data).toBeUndefined();
      // One customer for all four checkouts.
      expect(stripe.requestsTo('/v1/customers', 'POST').length - before).toBe(1);
      const customers = new Set(
        stripe
          .requestsTo('/v1/checkout/sessions', 'POST')
          .slice(-4)
          .map((r) => r.body.customer),
      );
      expect(customers.size).toBe(1);
    });

    it('GET /api/payments/card/checkout redirects to the hosted page, or answers JSON when asked', async () => {
      const user = await web.signIn();
      const redirect = await get(web.url, '/api/payments/card/checkout?plan=label', user.cookie, { accept: 'text/html' });
      expect(redirect.status).toBe(303);
      expect(redirect.headers.get('location')).toMatch(new RegExp(`^${stripe.url}/c/pay/cs_test_`));
      const json = await get(web.url, '/api/payments/card/checkout?plan=network', user.cookie, { accept: 'application/json' });
      expect(json.status).toBe(200);
      expect(stripe.checkoutSessions.get(json.body.sessionId)!.amount_total).toBe(79900);

      const credits = await get(web.url, '/api/payments/card/credits?price=25.00', user.cookie, { accept: 'application/json' });
      expect(credits.status).toBe(200);
      expect(stripe.checkoutSessions.get(credits.body.sessionId)!.amount_total).toBe(2500);
    });

    it('refuses bad plans, prices, actions and bodies', async () => {
      const user = await web.signIn();
      const cases: [unknown, number, string][] = [
        [{ action: 'create-checkout' }, 400, 'plan is required'],
        [{ action: 'create-checkout', plan: 'gold' }, 400, INVALID_PLAN],
        [{ action: 'create-checkout', plan: 7 }, 400, INVALID_PLAN],
        [{ action: 'buy-credits' }, 400, 'price is required'],
        [{ action: 'buy-credits', price: '7' }, 400, 'Invalid price. Must be one of: 5.00, 10.00, 25.00'],
        [{ action: 'buy-credits', price: { amount: 5 } }, 400, 'Invalid price. Must be one of: 5.00, 10.00, 25.00'],
        [{ action: 'refund' }, 400, INVALID_BILLING_ACTION],
        [{}, 400, INVALID_BILLING_ACTION],
        [{ action: 5 }, 400, INVALID_BILLING_ACTION],
        [{ action: null, plan: 'solo' }, 400, INVALID_BILLING_ACTION],
        // Another action's field is not looked at.
        [{ action: 'refund', plan: 7, price: [] }, 400, INVALID_BILLING_ACTION],
        [[1, 2], 400, 'Invalid request body'],
      ];
      for (const [body, status, error] of cases) {
        const res = await billing(user.cookie, body);
        expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status, error });
      }
      const text = await request(`${web.url}/api/billing`, {
        method: 'POST',
        body: 'action=get-usage',
        headers: { cookie: user.cookie, 'content-type': 'text/plain' },
      });
      expect(text.status).toBe(400);
      expect((await get(web.url, '/api/payments/card/checkout', user.cookie)).body).toEqual({ error: 'plan is required' });
      expect((await get(web.url, '/api/payments/card/checkout?plan=pro', user.cookie)).body).toEqual({ error: INVALID_PLAN });
      expect((await get(web.url, '/api/payments/card/credits', user.cookie)).body).toEqual({ error: 'price is required' });
      expect((await get(web.url, '/api/checkout/verify', user.cookie)).body).toEqual({ error: 'session_id is required' });
      expect((await get(web.url, '/api/checkout/verify?session_id=../etc', user.cookie)).body).toEqual({ error: 'Invalid session_id' });
      expect(BILLING_ACTIONS).toEqual(['create-checkout', 'enable-byok', 'disable-byok', 'get-usage', 'buy-credits']);
    });

    it('needs a signed-in session: 401 without one, 403 for an API key', async () => {
      const anonymous: [string, string, unknown?][] = [
        ['GET', '/api/billing'],
        ['POST', '/api/billing', { action: 'create-checkout', plan: 'solo' }],
        ['GET', '/api/checkout/verify?session_id=cs_test_x'],
        ['GET', '/api/payments/card/checkout?plan=solo'],
        ['GET', '/api/payments/card/credits?price=5'],
        ['POST', '/api/payments/card/storage-upgrade', {}],
        ['GET', '/api/wallet/top-up'],
        ['GET', '/api/wallet'],
        ['POST', '/api/wallet', {}],
        ['GET', '/api/wallet/address'],
        ['POST', '/api/wallet/create', {}],
        ['GET', '/api/wallet/provider'],
        ['POST', '/api/wallet/provider', { action: 'get_balance' }],
        ['GET', '/api/wallet-provider'],
        ['POST', '/api/wallet-provider', { action: 'get_balance' }],
        ['GET', '/api/basename'],
      ];
      for (const [method, path, json] of anonymous) {
        const res = await request(`${web.url}${path}`, { method, ...(json !== undefined ? { json } : {}) });
        expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 401, body: { error: 'Unauthorized' } });
      }
      const user = await web.signIn();
      const key = await web.database.db.withUser(user.userId, (trx) => createApiKey(trx, user.userId, 'ci'));
      const res = await request(`${web.url}/api/billing`, {
        json: { action: 'create-checkout', plan: 'solo' },
        headers: { authorization: `Bearer ${key.key}` },
      });
      expect(res.status).toBe(403);
      expect(stripe.requestsTo('/v1/checkout/sessions', 'POST').every((r) => r.body.client_reference_id !== user.userId)).toBe(true);
    });
  });

  describe('verify', () => {
    it('activates a paid plan once, only for its owner', async () => {
      const carol = await web.signIn();
      const mallory = await web.signIn();
      const res = await billing(carol.cookie, { action: 'create-checkout', plan: 'solo' });
      const sessionId: string = res.body.sessionId;

      const unpaid = await get(web.url, `/api/checkout/verify?session_id=${sessionId}`, carol.cookie);
      expect(unpaid.status).toBe(200);
      expect(unpaid.body).toEqual({
        sessionId,
        kind: 'plan',
        status: 'open',
        paymentStatus: 'unpaid',
        paid: false,
        account: { plan: 'free', subscriptionStatus: 'none', credits: 0, extraStorageGb: 0 },
      });

      stripe.completeCheckout(sessionId);
      // Another user can neither see nor apply it.
      const stolen = await get(web.url, `/api/checkout/verify?session_id=${sessionId}`, mallory.cookie);
      expect(stolen.status).toBe(404);
      expect(stolen.body).toEqual({ error: 'Checkout session not found' });
      expect((await userRow(mallory.userId)).plan).toBe('free');

      const paid = await get(web.url, `/api/checkout/verify?session_id=${sessionId}`, carol.cookie);
      expect(paid.status).toBe(200);
      expect(paid.body).toEqual({
        sessionId,
        kind: 'plan',
        status: 'complete',
        paymentStatus: 'paid',
        paid: true,
        account: { plan: 'solo', subscriptionStatus: 'active', credits: 0, extraStorageGb: 0 },
      });
      const subscription = stripe.checkoutSessions.get(sessionId)!.subscription;
      expect((await userRow(carol.userId)).stripe_subscription_id).toBe(subscription);

      const again = await get(web.url, `/api/checkout/verify?session_id=${sessionId}`, carol.cookie);
      expect(again.body.account).toEqual(paid.body.account);
      // The webhook for the same session arrives later: nothing more happens.
      const late = await stripe.deliver(webhookUrl(), stripe.event('checkout.session.completed', stripe.checkoutSessions.get(sessionId)!), {
        secret: WEBHOOK_SECRET,
      });
      expect(late.status).toBe(200);
      const audits = await web.database.db.kysely
        .selectFrom('audit_log')
        .select('action')
        .where('user_id', '=', carol.userId)
        .where('action', '=', 'billing.checkout.complete')
        .execute();
      expect(audits).toHaveLength(1);
      // The same plan again is refused while it is active.
      const twice = await billing(carol.cookie, { action: 'create-checkout', plan: 'solo' });
      expect(twice.status).toBe(409);
      expect(twice.body).toEqual({ error: 'Already subscribed to the solo plan' });
    });

    it('adds bought credits exactly once across verify and webhook', async () => {
      const dave = await web.signIn();
      const res = await billing(dave.cookie, { action: 'buy-credits', price: '5' });
      const session = stripe.completeCheckout(res.body.sessionId);
      const event = stripe.event('checkout.session.completed', session);
      const [first, second] = await Promise.all([
        get(web.url, `/api/checkout/verify?session_id=${session.id}`, dave.cookie),
        stripe.deliver(webhookUrl(), event, { secret: WEBHOOK_SECRET }),
      ]);
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      await get(web.url, `/api/checkout/verify?session_id=${session.id}`, dave.cookie);
      expect((await userRow(dave.userId)).credits).toBe(500);
      const top = await get(web.url, `/api/wallet/top-up?session_id=${session.id}`, dave.cookie);
      expect(top.body).toEqual({
        checkout: {
          sessionId: session.id,
          kind: 'credits',
          plan: null,
          credits: 500,
          storageGb: 0,
          amount: '5.00',
          currency: 'gbp',
          status: 'complete',
          createdAt: expect.any(String),
          completedAt: expect.any(String),
        },
      });
    });
  });

  describe('webhook POST /api/wallet/top-up', () => {
    it('activates a plan, processes each event id once, and follows the subscription', async () => {
      const erin = await web.signIn();
      const session = await paidPlan(erin.cookie, 'collective');
      const event = stripe.event('checkout.session.completed', session);
      const first = await stripe.deliver(webhookUrl(), event, { secret: WEBHOOK_SECRET });
      expect(first).toMatchObject({ status: 200, body: { received: true, outcome: 'processed' } });
      expect(await userRow(erin.userId)).toMatchObject({
        plan: 'collective',
        subscription_status: 'active',
        stripe_subscription_id: session.subscription,
      });

      // A replay of the same event (same id, signed again) changes nothing.
      const replay = await stripe.deliver(webhookUrl(), event, { secret: WEBHOOK_SECRET });
      expect(replay).toMatchObject({ status: 200, body: { received: true, outcome: 'duplicate' } });

      // A failed renewal: past due (spec §7: provisioning then answers 403).
      const invoice = {
        id: 'in_test_1',
        object: 'invoice',
        customer: session.customer,
        parent: { type: 'subscription_details', subscription_details: { subscription: session.subscription, metadata: {} } },
        status: 'open',
      };
      const failed = await stripe.deliver(webhookUrl(), stripe.event('invoice.payment_failed', invoice), { secret: WEBHOOK_SECRET });
      expect(failed.body.outcome).toBe('processed');
      expect((await userRow(erin.userId)).subscription_status).toBe('past_due');
      const provision = await post(web.url, '/api/provision', erin.cookie, { telegramToken: '123:abc' });
      expect(provision.status).toBe(403);

      // Paid again: the provider's subscription says active, whatever the event snapshot says.
      stripe.setSubscriptionStatus(session.subscription, 'active');
      const stale = { ...stripe.subscriptions.get(session.subscription)!, status: 'past_due' };
      const updated = await stripe.deliver(webhookUrl(), stripe.event('customer.subscription.updated', stale), { secret: WEBHOOK_SECRET });
      expect(updated.body.outcome).toBe('processed');
      expect((await userRow(erin.userId)).subscription_status).toBe('active');

      // Cancelled: status canceled, back to the free plan (spec §7: provisioning then answers 402).
      stripe.setSubscriptionStatus(session.subscription, 'canceled');
      const deleted = await stripe.deliver(
        webhookUrl(),
        stripe.event('customer.subscription.deleted', stripe.subscriptions.get(session.subscription)!),
        { secret: WEBHOOK_SECRET },
      );
      expect(deleted.body.outcome).toBe('processed');
      expect(await userRow(erin.userId)).toMatchObject({ plan: 'free', subscription_status: 'canceled' });
      expect((await post(web.url, '/api/provision', erin.cookie, { telegramToken: '123:abc' })).status).toBe(402);
    });

    it('adds credits for a paid one-off checkout', async () => {
      const frank = await web.signIn();
      const res = await billing(frank.cookie, { action: 'buy-credits', price: '25' });
      const session = stripe.completeCheckout(res.body.sessionId);
      const delivered = await stripe.deliver(webhookUrl(), stripe.event('checkout.session.completed', session), { secret: WEBHOOK_SECRET });
      expect(delivered.body.outcome).toBe('processed');
      expect((await userRow(frank.userId)).credits).toBe(2500);
      // An unpaid (asynchronous) completion changes nothing until the payment succeeds.
      const res2 = await billing(frank.cookie, { action: 'buy-credits', price: '5' });
      const pending = stripe.completeCheckout(res2.body.sessionId, { paymentStatus: 'unpaid' });
      await stripe.deliver(webhookUrl(), stripe.event('checkout.session.completed', pending), { secret: WEBHOOK_SECRET });
      expect((await userRow(frank.userId)).credits).toBe(2500);
      pending.payment_status = 'paid';
      await stripe.deliver(webhookUrl(), stripe.event('checkout.session.async_payment_succeeded', pending), { secret: WEBHOOK_SECRET });
      expect((await userRow(frank.userId)).credits).toBe(3000);
    });

    it('replaces the old subscription when another plan is bought; events about the old one change nothing', async () => {
      const gina = await web.signIn();
      const solo = await paidPlan(gina.cookie, 'solo');
      await stripe.deliver(webhookUrl(), stripe.event('checkout.session.completed', solo), { secret: WEBHOOK_SECRET });
      const label = await paidPlan(gina.cookie, 'label');
      await stripe.deliver(webhookUrl(), stripe.event('checkout.session.completed', label), { secret: WEBHOOK_SECRET });
      expect(await userRow(gina.userId)).toMatchObject({
        plan: 'label',
        subscription_status: 'active',
        stripe_subscription_id: label.subscription,
      });
      expect(stripe.requestsTo(`/v1/subscriptions/${solo.subscription}`, 'DELETE')).toHaveLength(1);
      expect(stripe.subscriptions.get(solo.subscription)!.status).toBe('canceled');
      await stripe.deliver(webhookUrl(), stripe.event('customer.subscription.deleted', stripe.subscriptions.get(solo.subscription)!), {
        secret: WEBHOOK_SECRET,
      });
      expect(await userRow(gina.userId)).toMatchObject({ plan: 'label', subscription_status: 'active' });
    });

    it('refuses tampered, unsigned, wrongly signed, stale and future-dated deliveries', async () => {
      const hank = await web.signIn();
      const res = await billing(hank.cookie, { action: 'buy-credits', price: '10' });
      const session = stripe.completeCheckout(res.body.sessionId);
      const event = stripe.event('checkout.session.completed', session);
      const now = Math.floor(Date.now() / 1000);
      const attempts: [string, Parameters<FakeStripe['deliver']>[2], string][] = [
        [
          'tampered',
          { secret: WEBHOOK_SECRET, tamper: (p) => p.replace('"amount_total": 1000', '"amount_total": 1') },
          'Invalid signature',
        ],
        ['wrong secret', { secret: 'whsec_someone_else_secret' }, 'Invalid signature'],
        ['no header', { secret: WEBHOOK_SECRET, signatureHeader: null }, 'Missing Stripe-Signature header'],
        ['garbage header', { secret: WEBHOOK_SECRET, signatureHeader: 'v1=deadbeef' }, 'Invalid signature'],
        ['stale', { secret: WEBHOOK_SECRET, timestamp: now - 301 }, 'Webhook timestamp outside the tolerance zone'],
        ['future', { secret: WEBHOOK_SECRET, timestamp: now + 600 }, 'Webhook timestamp outside the tolerance zone'],
      ];
      for (const [name, options, error] of attempts) {
        const answer = await stripe.deliver(webhookUrl(), event, options);
        expect({ name, status: answer.status, body: answer.body }).toEqual({ name, status: 400, body: { error } });
      }
      expect((await userRow(hank.userId)).credits).toBe(0);
      // Within the tolerance, the same event is accepted (nothing was stored by the refusals).
      const fresh = await stripe.deliver(webhookUrl(), event, { secret: WEBHOOK_SECRET, timestamp: now - 240 });
      expect(fresh.body.outcome).toBe('processed');
      expect((await userRow(hank.userId)).credits).toBe(1000);
      // A non-JSON body is refused before anything is read.
      const text = await request(webhookUrl(), {
        method: 'POST',
        body: 'x',
        headers: { 'content-type': 'text/plain', 'stripe-signature': 't=1,v1=0' },
      });
      expect(text.status).toBe(400);
    });

    it('acknowledges event types it does not handle', async () => {
      const event = stripe.event('customer.created', { id: 'cus_unrelated', object: 'customer' });
      const answer = await stripe.deliver(webhookUrl(), event, { secret: WEBHOOK_SECRET });
      expect(answer).toMatchObject({ status: 200, body: { received: true, outcome: 'ignored' } });
    });
  });

  describe('account, BYOK, usage, storage', () => {
    it('GET /api/billing answers the account’s billing state, this month’s usage and the prices', async () => {
      const ivy = await web.signIn();
      await web.database.db.withUser(ivy.userId, async (trx) => {
        await recordUsage(trx, { userId: ivy.userId, kind: 'llm', model: 'm', promptTokens: 100, completionTokens: 50, costUsd: '0.25' });
        await recordUsage(trx, { userId: ivy.userId, kind: 'plugin', costUsd: '0.05' });
        await recordUsage(trx, { userId: ivy.userId, kind: 'llm', costUsd: '9', at: new Date(Date.UTC(2000, 0, 1)) });
      });
      const res = await get(web.url, '/api/billing', ivy.cookie);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        plan: 'free',
        subscriptionStatus: 'none',
        customerId: null,
        byok: false,
        credits: 0,
        extraStorageGb: 0,
        cardPayments: true,
        usage: {
          period: 'mtd',
          since: expect.any(String),
          until: expect.any(String),
          totalCost: 0.3,
          totalTokens: 150,
          totalCalls: 2,
          byKind: [
            { kind: 'llm', calls: 1, tokens: 150, cost: 0.25 },
            { kind: 'plugin', calls: 1, tokens: 0, cost: 0.05 },
          ],
        },
        prices: {
          currency: 'gbp',
          plans: [
            { plan: 'solo', amount: '29.00', interval: 'month' },
            { plan: 'collective', amount: '79.00', interval: 'month' },
            { plan: 'label', amount: '199.00', interval: 'month' },
            { plan: 'network', amount: '799.00', interval: 'month' },
          ],
          creditPacks: [
            { price: '5.00', credits: 500 },
            { price: '10.00', credits: 1000 },
            { price: '25.00', credits: 2500 },
          ],
          storageUpgrade: { gb: 10, price: '5.00' },
        },
      });
      const usage = await billing(ivy.cookie, { action: 'get-usage' });
      expect(usage.body.usage).toEqual(res.body.usage);
    });

    it('enable-byok and disable-byok set the flag', async () => {
      const jay = await web.signIn();
      expect((await billing(jay.cookie, { action: 'enable-byok' })).body).toEqual({ success: true, byok: true });
      expect((await get(web.url, '/api/billing', jay.cookie)).body.byok).toBe(true);
      expect((await billing(jay.cookie, { action: 'disable-byok' })).body).toEqual({ success: true, byok: false });
      expect((await userRow(jay.userId)).byok).toBe(false);
    });

    it('storage-upgrade needs an active paid plan (402, 403) and adds the storage once paid', async () => {
      const kim = await web.signIn();
      const free = await post(web.url, '/api/payments/card/storage-upgrade', kim.cookie, {});
      expect(free).toMatchObject({ status: 402, body: { error: 'A paid plan (solo or higher) is required' } });
      // No body at all means one unit.
      const bodiless = await request(`${web.url}/api/payments/card/storage-upgrade`, { method: 'POST', headers: { cookie: kim.cookie } });
      expect(bodiless.status).toBe(402);
      const session = await paidPlan(kim.cookie, 'solo');
      await stripe.deliver(webhookUrl(), stripe.event('checkout.session.completed', session), { secret: WEBHOOK_SECRET });
      stripe.setSubscriptionStatus(session.subscription, 'past_due');
      await stripe.deliver(webhookUrl(), stripe.event('customer.subscription.updated', stripe.subscriptions.get(session.subscription)!), {
        secret: WEBHOOK_SECRET,
      });
      const pastDue = await post(web.url, '/api/payments/card/storage-upgrade', kim.cookie, {});
      expect(pastDue).toMatchObject({ status: 403, body: { error: 'Active subscription required' } });
      stripe.setSubscriptionStatus(session.subscription, 'active');
      await stripe.deliver(webhookUrl(), stripe.event('customer.subscription.updated', stripe.subscriptions.get(session.subscription)!), {
        secret: WEBHOOK_SECRET,
      });

      for (const quantity of [0, 11, 1.5, 'two']) {
        const bad = await post(web.url, '/api/payments/card/storage-upgrade', kim.cookie, { quantity });
        expect(bad).toMatchObject({ status: 400, body: { error: 'quantity must be an integer from 1 to 10' } });
      }
      expect((await post(web.url, '/api/payments/card/storage-upgrade', kim.cookie, [2])).body).toEqual({ error: 'Invalid request body' });
      const res = await post(web.url, '/api/payments/card/storage-upgrade', kim.cookie, { quantity: 2 });
      expect(res.status).toBe(200);
      const call = stripe.requestsTo('/v1/checkout/sessions', 'POST').at(-1)!;
      expect(call.body).toMatchObject({
        mode: 'payment',
        metadata: { kind: 'storage', storageGb: '20' },
        line_items: [{ quantity: '2', price_data: { currency: 'gbp', unit_amount: '500', product_data: { name: '10 GB extra storage' } } }],
      });
      stripe.completeCheckout(res.body.sessionId);
      const verified = await get(web.url, `/api/checkout/verify?session_id=${res.body.sessionId}`, kim.cookie);
      expect(verified.body.account).toMatchObject({ plan: 'solo', extraStorageGb: 20 });
    });

    it('GET /api/wallet/top-up lists only the caller’s checkouts', async () => {
      const leo = await web.signIn();
      const other = await web.signIn();
      const res = await billing(leo.cookie, { action: 'buy-credits', price: '5' });
      const list = await get(web.url, '/api/wallet/top-up', leo.cookie);
      expect(list.body).toEqual({
        cardPayments: true,
        webhookConfigured: true,
        checkouts: [
          {
            sessionId: res.body.sessionId,
            kind: 'credits',
            plan: null,
            credits: 500,
            storageGb: 0,
            amount: '5.00',
            currency: 'gbp',
            status: 'open',
            createdAt: expect.any(String),
            completedAt: null,
          },
        ],
      });
      expect((await get(web.url, '/api/wallet/top-up', other.cookie)).body.checkouts).toEqual([]);
      expect((await get(web.url, `/api/wallet/top-up?session_id=${res.body.sessionId}`, other.cookie)).status).toBe(404);
    });
  });

  describe('unconfigured or unreachable provider', () => {
    it('answers 503 for card payments and the webhook without keys, and still reads the account', async () => {
      const user = await bare.signIn();
      expect((await post(bare.url, '/api/billing', user.cookie, { action: 'create-checkout', plan: 'solo' })).body).toEqual({
        error: 'Card payments are not configured',
      });
      expect((await get(bare.url, '/api/payments/card/checkout?plan=solo', user.cookie)).status).toBe(503);
      expect((await get(bare.url, '/api/payments/card/credits?price=5', user.cookie)).status).toBe(503);
      expect((await get(bare.url, '/api/checkout/verify?session_id=cs_test_abc', user.cookie)).status).toBe(503);
      const hook = await request(`${bare.url}/api/wallet/top-up`, { json: { id: 'evt_1' }, headers: { 'stripe-signature': 't=1,v1=00' } });
      expect(hook).toMatchObject({ status: 503, body: { error: 'Payment webhook is not configured' } });
      const account = await get(bare.url, '/api/billing', user.cookie);
      expect(account.status).toBe(200);
      expect(account.body).toMatchObject({ plan: 'free', cardPayments: false });
      expect((await post(bare.url, '/api/billing', user.cookie, { action: 'enable-byok' })).body).toEqual({ success: true, byok: true });
    });

    it('answers 502 when the payment provider cannot be reached', async () => {
      const down = await startWeb({ STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_API_BASE: await unreachableUrl(), STRIPE_TIMEOUT_MS: '2000' });
      try {
        const user = await down.signIn();
        const res = await post(down.url, '/api/billing', user.cookie, { action: 'create-checkout', plan: 'solo' });
        expect(res).toMatchObject({ status: 502, body: { error: 'Payment provider request failed' } });
      } finally {
        await down.close();
      }
    });
  });

  describe('wallets', () => {
    /** A SIWE link message for `address` with a fresh nonce from the service at `base`. */
    async function linkMessage(base: TestWeb, address: Address, overrides: Partial<Parameters<typeof createSiweMessage>[0]> = {}) {
      const { nonce } = (await get(base.url, '/api/auth/nonce')).body;
      return createSiweMessage({
        address,
        chainId: base.config.gating.chainId,
        domain: base.config.siweDomain,
        uri: base.config.publicUrl,
        nonce,
        issuedAt: new Date(),
        version: '1',
        statement: WALLET_LINK_STATEMENT,
        ...overrides,
      });
    }

    it('links a wallet proven by its signature, and refuses forged or replayed proofs', async () => {
      const mia = await web.signIn();
      const account = privateKeyToAccount(generatePrivateKey());
      const forger = privateKeyToAccount(generatePrivateKey());
      expect((await get(web.url, '/api/wallet', mia.cookie)).body).toMatchObject({ address: null, wallets: [] });

      const forgedMessage = await linkMessage(web, account.address);
      const forged = await post(web.url, '/api/wallet', mia.cookie, {
        address: account.address,
        message: forgedMessage,
        signature: await forger.signMessage({ message: forgedMessage }),
      });
      expect(forged).toMatchObject({ status: 401, body: { error: 'Invalid signature' } });

      const message = await linkMessage(web, account.address);
      const signature = await account.signMessage({ message });
      const linked = await post(web.url, '/api/wallet', mia.cookie, { address: account.address, message, signature });
      expect(linked.status).toBe(201);
      expect(linked.body.wallet).toMatchObject({ address: account.address.toLowerCase(), kind: 'external', signer: 'eoa' });
      // The same signed message again: its nonce is spent.
      const replayed = await post(web.url, '/api/wallet', mia.cookie, { address: account.address, message, signature });
      expect(replayed).toMatchObject({ status: 401, body: { error: 'Invalid or expired nonce' } });

      const listed = await get(web.url, '/api/wallet', mia.cookie);
      expect(listed.body).toEqual({
        address: account.address.toLowerCase(),
        wallets: [{ address: account.address.toLowerCase(), kind: 'external', signer: 'eoa', createdAt: expect.any(String) }],
        linkStatement: 'Link this wallet to my account.',
      });
      expect((await get(web.url, '/api/wallet/address', mia.cookie)).body).toEqual({ address: account.address.toLowerCase() });

      // Linking again (fresh proof) is fine; another account cannot take it.
      const againMessage = await linkMessage(web, account.address);
      const again = await post(web.url, '/api/wallet', mia.cookie, {
        address: account.address,
        message: againMessage,
        signature: await account.signMessage({ message: againMessage }),
      });
      expect(again.status).toBe(200);
      const ned = await web.signIn();
      const theftMessage = await linkMessage(web, account.address);
      const theft = await post(web.url, '/api/wallet', ned.cookie, {
        address: account.address,
        message: theftMessage,
        signature: await account.signMessage({ message: theftMessage }),
      });
      expect(theft).toMatchObject({ status: 409, body: { error: 'Wallet already linked to another account' } });
      expect((await get(web.url, '/api/wallet', ned.cookie)).body.wallets).toEqual([]);
    });

    it('refuses link messages with the wrong statement, address, domain or nonce, and bad bodies', async () => {
      const oli = await web.signIn();
      const account = privateKeyToAccount(generatePrivateKey());
      const other = privateKeyToAccount(generatePrivateKey());
      const signed = async (message: string) => ({ address: account.address, message, signature: await account.signMessage({ message }) });
      const cases: [string, unknown, number, string][] = [
        [
          'sign-in statement',
          await signed(await linkMessage(web, account.address, { statement: 'Sign in' })),
          401,
          `Invalid SIWE message: the statement must be "${WALLET_LINK_STATEMENT}"`,
        ],
        [
          'other domain',
          await signed(await linkMessage(web, account.address, { domain: 'evil.example' })),
          401,
          'Invalid SIWE message: wrong domain',
        ],
        ['other chain', await signed(await linkMessage(web, account.address, { chainId: 1 })), 401, 'Invalid SIWE message: wrong chain id'],
        [
          'unissued nonce',
          await signed(await linkMessage(web, account.address, { nonce: 'abcdefgh12345678' })),
          401,
          'Invalid or expired nonce',
        ],
        [
          'address mismatch',
          { ...(await signed(await linkMessage(web, account.address))), address: other.address },
          401,
          'Signed wallet address mismatch',
        ],
        ['missing signature', { address: account.address, message: 'x' }, 400, 'Missing: address, message, signature'],
        ['wrong types', { address: 1, message: [], signature: {} }, 400, 'Missing: address, message, signature'],
        ['an empty address', { address: '', message: 'x', signature: '0x00' }, 400, 'Missing: address, message, signature'],
        ['a null message', { address: account.address, message: null, signature: '0x00' }, 400, 'Missing: address, message, signature'],
        // All three are required before the address is looked at.
        ['bad address, missing message', { address: '0x123', signature: '0x00' }, 400, 'Missing: address, message, signature'],
        ['bad address', { address: '0x123', message: 'x', signature: '0x00' }, 400, 'Invalid wallet address'],
      ];
      for (const [name, body, status, error] of cases) {
        const res = await post(web.url, '/api/wallet', oli.cookie, body);
        expect({ name, status: res.status, error: res.body.error }).toEqual({ name, status, error });
      }
      expect((await get(web.url, '/api/wallet', oli.cookie)).body.wallets).toEqual([]);
    });

    it('links a smart-contract wallet (ERC-1271) through the chain', async () => {
      const pam = await web.signIn();
      const owner = chain.accounts[2]!;
      const factory = await chain.deployWalletFactory();
      const wallet = await chain.deployWallet(factory, owner.address, walletSalt('billing-wallet'));
      const message = await linkMessage(web, wallet);
      const res = await post(web.url, '/api/wallet', pam.cookie, {
        address: wallet,
        message,
        signature: await owner.signMessage({ message }),
      });
      expect(res.status).toBe(201);
      expect(res.body.wallet).toMatchObject({ address: wallet.toLowerCase(), signer: 'contract' });
    });

    it('get_balance reads the payment token on the chain for the caller’s own wallet', async () => {
      const quinn = await web.signIn();
      const account = privateKeyToAccount(generatePrivateKey());
      const none = await post(web.url, '/api/wallet-provider', quinn.cookie, { action: 'get_balance' });
      expect(none).toMatchObject({ status: 404, body: { error: 'No wallet linked' } });
      const message = await linkMessage(web, account.address);
      await post(web.url, '/api/wallet', quinn.cookie, {
        address: account.address,
        message,
        signature: await account.signMessage({ message }),
      });
      await chain.mintTokens(token, account.address, '12.5');

      const res = await post(web.url, '/api/wallet-provider', quinn.cookie, { action: 'get_balance' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        address: account.address.toLowerCase(),
        chainId: chain.chainId,
        token: getAddress(token),
        decimals: 6,
        balance: '12500000',
        formatted: '12.5',
        balance_usdc: 12.5,
      });
      const onChain = await chain.publicClient.readContract({
        address: token,
        abi: testTokenAbi,
        functionName: 'balanceOf',
        args: [account.address],
      });
      expect(onChain).toBe(12_500_000n);
      // The alias path answers the same; someone else's address is refused.
      expect(
        (await post(web.url, '/api/wallet/provider', quinn.cookie, { action: 'get_balance', address: account.address })).body.balance,
      ).toBe('12500000');
      const foreign = await post(web.url, '/api/wallet-provider', quinn.cookie, {
        action: 'get_balance',
        address: chain.accounts[1]!.address,
      });
      expect(foreign).toMatchObject({ status: 403, body: { error: 'Wallet not linked to this account' } });
      const bad = await post(web.url, '/api/wallet-provider', quinn.cookie, { action: 'mint' });
      expect(bad).toMatchObject({ status: 400, body: { error: INVALID_WALLET_ACTION } });
      for (const body of [{}, { action: null }, { action: ['get_balance'] }]) {
        expect(await post(web.url, '/api/wallet/provider', quinn.cookie, body)).toMatchObject({
          status: 400,
          body: { error: INVALID_WALLET_ACTION },
        });
      }
    });

    it('creates a custodial wallet, a payment and an on-ramp link through the configured provider', async () => {
      const rex = await web.signIn();
      const info = {
        configured: true,
        actions: ['create_wallet', 'get_balance', 'create_payment', 'onramp'],
        paymentChain: { chainId: chain.chainId, token: web.config.payments!.tokenAddress, decimals: web.config.payments!.tokenDecimals },
      };
      expect((await get(web.url, '/api/wallet/provider', rex.cookie)).body).toEqual(info);
      expect((await get(web.url, '/api/wallet-provider', rex.cookie)).body).toEqual(info);
      const noWallet = await post(web.url, '/api/wallet-provider', rex.cookie, {
        action: 'create_payment',
        to: chain.accounts[3]!.address,
        amount: '1.5',
      });
      expect(noWallet.status).toBe(404);
      const created = await post(web.url, '/api/wallet/create', rex.cookie, {});
      expect(created.status).toBe(201);
      expect(created.body.wallet).toMatchObject({ kind: 'custodial' });
      expect(provider.calls.at(-1)).toMatchObject({
        path: '/wallets',
        body: { userId: rex.userId },
        authorization: `Bearer ${PROVIDER_KEY}`,
      });
      const again = await post(web.url, '/api/wallet-provider', rex.cookie, { action: 'create_wallet' });
      expect(again.body).toEqual({ wallet: created.body.wallet, created: false });

      for (const body of [
        { to: 'nobody', amount: '1' },
        { to: chain.accounts[3]!.address, amount: '-1' },
        { to: chain.accounts[3]!.address, amount: 1 },
      ]) {
        expect((await post(web.url, '/api/wallet-provider', rex.cookie, { action: 'create_payment', ...body })).status).toBe(400);
      }
      const payment = await post(web.url, '/api/wallet-provider', rex.cookie, {
        action: 'create_payment',
        to: chain.accounts[3]!.address,
        amount: '1.5',
      });
      expect(payment.status).toBe(200);
      expect(payment.body.payment).toMatchObject({ id: 'pay_1', status: 'submitted', from: created.body.wallet.address, amount: '1.5' });
      expect(provider.calls.at(-1)!.body).toMatchObject({ userId: rex.userId, token: web.config.payments!.tokenAddress });
      const onramp = await post(web.url, '/api/wallet-provider', rex.cookie, { action: 'onramp', amount: '20' });
      expect(onramp.body).toEqual({
        url: `https://onramp.example/buy?address=${created.body.wallet.address}`,
        address: created.body.wallet.address,
      });
    });

    it('answers 503 when no wallet provider or payment chain is configured; never a made-up wallet', async () => {
      const sam = await bare.signIn();
      expect((await get(bare.url, '/api/wallet/provider', sam.cookie)).body).toEqual({
        configured: false,
        actions: ['create_wallet', 'get_balance', 'create_payment', 'onramp'],
        paymentChain: null,
      });
      const created = await post(bare.url, '/api/wallet/create', sam.cookie, {});
      expect(created).toMatchObject({ status: 503, body: { error: 'Wallet provider is not configured' } });
      for (const action of ['create_wallet', 'create_payment', 'onramp']) {
        const res = await post(bare.url, '/api/wallet-provider', sam.cookie, { action });
        expect({ action, status: res.status, body: res.body }).toEqual({
          action,
          status: 503,
          body: { error: 'Wallet provider is not configured' },
        });
      }
      const balance = await post(bare.url, '/api/wallet-provider', sam.cookie, { action: 'get_balance' });
      expect(balance).toMatchObject({ status: 503, body: { error: 'Payment chain is not configured' } });
      expect((await get(bare.url, '/api/wallet', sam.cookie)).body.wallets).toEqual([]);
      expect((await get(bare.url, '/api/basename', sam.cookie)).body).toEqual({ address: null, basename: null });

      // Without a chain only a plain ECDSA signature links a wallet; the name stays null without a resolver.
      const account = privateKeyToAccount(generatePrivateKey());
      const message = await linkMessage(bare, account.address);
      const linked = await post(bare.url, '/api/wallet', sam.cookie, {
        address: account.address,
        message,
        signature: await account.signMessage({ message }),
      });
      expect(linked.status).toBe(201);
      expect(linked.body.wallet.signer).toBe('eoa');
      expect((await get(bare.url, '/api/basename', sam.cookie)).body).toEqual({ address: account.address.toLowerCase(), basename: null });
    });

    it('GET /api/basename reverse-resolves the caller’s wallet and checks the forward record', async () => {
      const tia = await web.signIn();
      const account = privateKeyToAccount(generatePrivateKey());
      const message = await linkMessage(web, account.address);
      await post(web.url, '/api/wallet', tia.cookie, {
        address: account.address,
        message,
        signature: await account.signMessage({ message }),
      });
      expect((await get(web.url, '/api/basename', tia.cookie)).body).toEqual({ address: account.address.toLowerCase(), basename: null });

      const deployer = createWalletClient({ account: chain.deployer, chain: chain.chain, transport: http(chain.rpcUrl) });
      const write = async (functionName: 'setName' | 'setAddr', args: readonly [Hex, string]) => {
        const hash = await deployer.writeContract({ address: resolver, abi: resolverAbi, functionName, args: args as never });
        await chain.publicClient.waitForTransactionReceipt({ hash });
      };
      const reverseNode = namehash(`${account.address.slice(2).toLowerCase()}.80002105.reverse`);
      await write('setName', [reverseNode, 'tia.base.eth']);
      // A reverse record whose name does not point back is not trusted.
      expect((await get(web.url, '/api/basename', tia.cookie)).body.basename).toBeNull();
      await write('setAddr', [namehash('tia.base.eth'), account.address]);
      expect((await get(web.url, '/api/basename', tia.cookie)).body).toEqual({
        address: account.address.toLowerCase(),
        basename: 'tia.base.eth',
      });
      const foreign = await get(web.url, `/api/basename?address=${chain.accounts[1]!.address}`, tia.cookie);
      expect(foreign.status).toBe(403);
    });
  });
});
