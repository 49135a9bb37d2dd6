import {
  closedPort,
  type FakeLlm,
  type RunningService,
  type TestChain,
  lastUserText,
  listen,
  request,
  startFakeLlm,
  startTestChain,
  testCounters,
  testEnv,
  testTokenAbi,
} from '@aop/testing';
import { type Address, type BaseError, type Hex, createWalletClient, encodeFunctionData, http, parseEther, parseUnits } from 'viem';
import { type PrivateKeyAccount, generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { type WebConfig, loadWebConfig } from '../../config.js';
import { type ChargeDeps, chargeForPlugin } from './charge.js';
import { MPP_CHALLENGE_TTL_MS } from './mpp.js';
import { settleDueSessions, voucherMessage, walletProofMessage } from './payment-sessions.service.js';
import { type ChargeRequest, type ChargeResult, PaymentError } from './types.js';
import type { AuthUser } from '../../platform/sessions.js';
import { type TestWeb, freshIp, startWeb } from '../../web.test-support.js';

const PUBLIC_URL = 'https://pay.example.test';
const LLM_KEY = 'sk-llm-key-for-payment-tests';
const HOUR = 60 * 60_000;

/** What chargeForPlugin threw (it must throw a PaymentError). */
async function refusal(promise: Promise<unknown>): Promise<PaymentError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PaymentError);
  return err as PaymentError;
}

// Spec §2.12, §3.4, §4.4 (payment method selection, MPP, session billing, errors), §7; the wallet API's payment
// sessions (not-shown facts). Payments are real ERC-20 transfers on an in-process hardhat chain (chain id 8453) that
// the web service reads over JSON-RPC, exactly as it reads Base in production.
describe('plugin payments: MPP on chain, payment sessions, card metering', () => {
  let chain: TestChain;
  let web: TestWeb;
  let deps: ChargeDeps;
  let token: Address;
  let otherToken: Address;
  let recipient: Address;
  let payer: PrivateKeyAccount;
  let llm: FakeLlm;
  let brokenLlm: FakeLlm;
  /** The same database and chain, but its LLM answers 500: every generate-text call fails after payment. */
  let brokenWeb: RunningService;

  const walletOf = (account: PrivateKeyAccount) =>
    createWalletClient({ account, chain: chain.chain, transport: http(chain.rpcUrl, { retryCount: 0 }), pollingInterval: 50 });

  /** A new wallet with 1 ETH for gas and 1000 of the payment token. */
  async function freshWallet(): Promise<PrivateKeyAccount> {
    const account = privateKeyToAccount(generatePrivateKey());
    const hash = await walletOf(chain.deployer).sendTransaction({ to: account.address, value: parseEther('1') });
    await chain.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    await chain.mintTokens(token, account.address, '1000');
    return account;
  }

  /** An ERC-20 transfer of `amount` whole tokens, mined; answers its hash. */
  async function pay(
    from: PrivateKeyAccount,
    { amount = '0.05', to = recipient, asset = token, memo }: { amount?: string; to?: Address; asset?: Address; memo?: Hex } = {},
  ): Promise<Hex> {
    const hash = await walletOf(from).writeContract({
      address: asset,
      abi: testTokenAbi,
      functionName: 'transfer',
      args: [to, parseUnits(amount, 6)],
      ...(memo ? { dataSuffix: memo } : {}),
    });
    const receipt = await chain.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    expect(receipt.status).toBe('success');
    return hash;
  }

  const charge = (over: Partial<ChargeRequest> = {}, d: ChargeDeps = deps): Promise<ChargeResult> =>
    chargeForPlugin(d, { user: null, headers: {}, plugin: 'agent', pluginAuth: false, priceUsd: '0.05', ip: '127.0.0.1', ...over });

  const credential = (transaction: string, challengeNonce: string) =>
    `Payment ${JSON.stringify({ scheme: 'Payment', transaction, challengeNonce })}`;

  /** The challenge of a 402 answer for `plugin`. */
  async function challenge(over: Partial<ChargeRequest> = {}, d: ChargeDeps = deps) {
    const err = await refusal(charge({ headers: { 'x-payment-method': 'mpp' }, ...over }, d));
    expect(err.statusCode).toBe(402);
    return err.body.mpp as { nonce: string; amount: string; memo: Hex; expiresAt: number };
  }

  /** The credential is refused: 402 payment_required with `reason` and a fresh challenge. */
  async function expectRefused(result: Promise<unknown>, reason: string, oldNonce?: string) {
    const err = await refusal(result);
    expect(err.statusCode).toBe(402);
    expect(err.body).toMatchObject({ error: 'payment_required', reason });
    const fresh = err.body.mpp as { nonce: string };
    expect(fresh.nonce).toMatch(/^[0-9a-f]{32}$/);
    if (oldNonce) expect(fresh.nonce).not.toBe(oldNonce);
    expect(err.headers['WWW-Authenticate']).toContain(`nonce="${fresh.nonce}"`);
  }

  beforeAll(async () => {
    chain = await startTestChain();
    [llm, brokenLlm] = await Promise.all([
      startFakeLlm({ apiKey: LLM_KEY, reply: (body) => `echo: ${lastUserText(body)}` }),
      startFakeLlm({ apiKey: LLM_KEY, failWith: 500 }),
    ]);
    token = await chain.deployToken({ name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    otherToken = await chain.deployToken({ name: 'Other Dollar', symbol: 'ODL', decimals: 6 });
    recipient = privateKeyToAccount(generatePrivateKey()).address;
    const env = {
      PUBLIC_URL,
      PAYMENT_RPC_URL: chain.rpcUrl,
      PAYMENT_CHAIN_ID: String(chain.chainId),
      PAYMENT_TOKEN_ADDRESS: token,
      PAYMENT_TOKEN_DECIMALS: '6',
      PAYMENT_RECIPIENT: recipient,
      LLM_API_KEY: LLM_KEY,
    };
    // TRUST_PROXY: a test may act from its own client address (X-Forwarded-For) to stay clear of shared rate limits.
    web = await startWeb({ ...env, LLM_BASE_URL: llm.url, TRUST_PROXY: '127.0.0.1' });
    deps = { db: web.database.db, config: web.config };
    const counters = testCounters();
    const running = await listen(
      await buildApp({
        config: loadWebConfig(testEnv(web.config.dataDir, { ...env, LLM_BASE_URL: brokenLlm.url })),
        db: web.database.db,
        counters,
      }),
    );
    brokenWeb = {
      ...running,
      async close() {
        await running.close();
        await counters.close();
      },
    };
    payer = await freshWallet();
    await chain.mintTokens(otherToken, payer.address, '1000');
  });
  afterAll(async () => {
    await brokenWeb?.close();
    await web?.close();
    await Promise.all([llm?.close(), brokenLlm?.close()]);
    await chain?.close();
  });

  describe('payment method selection', () => {
    it('X-Payment-Method wins, then Authorization: Payment means mpp, else card; an unknown method is 400', async () => {
      expect((await charge()).method).toBe('card');
      expect(
        (await charge({ headers: { 'x-payment-method': 'CARD', authorization: credential(`0x${'1'.repeat(64)}`, '0'.repeat(32)) } }))
          .method,
      ).toBe('card');
      // An Authorization: Payment header alone selects MPP (here a credential for no challenge: refused with a challenge).
      await expectRefused(charge({ headers: { authorization: credential(`0x${'1'.repeat(64)}`, '0'.repeat(32)) } }), 'unknown challenge');
      // A Bearer API key is not a payment credential.
      expect((await charge({ headers: { authorization: 'Bearer sk_abc' } })).method).toBe('card');
      const bad = await refusal(charge({ headers: { 'x-payment-method': 'bitcoin' } }));
      expect(bad.statusCode).toBe(400);
      expect(bad.body).toEqual({ error: 'invalid_payment_method', message: 'X-Payment-Method must be card, mpp or session' });
    });
  });

  describe('card', () => {
    const user = (id: string): AuthUser => ({
      id,
      name: 'Card User',
      email: `${id}@example.com`,
      isAdmin: false,
      emailVerified: true,
      via: 'session',
    });
    const usageRows = (userId: string) =>
      web.database.db.kysely.selectFrom('usage_events').selectAll().where('user_id', '=', userId).execute();

    it('a protected plugin without a user is 401 Unauthorized', async () => {
      const err = await refusal(charge({ pluginAuth: true }));
      expect(err.statusCode).toBe(401);
      expect(err.body).toEqual({ error: 'Unauthorized' });
    });

    it('an anonymous call of an unprotected plugin is free: receipt null, no usage row', async () => {
      const before = await web.database.db.kysely
        .selectFrom('usage_events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      const result = await charge();
      expect(result).toMatchObject({ method: 'card', receipt: null, headers: {} });
      const after = await web.database.db.kysely
        .selectFrom('usage_events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(after.n)).toBe(Number(before.n));
    });

    it('a signed-in call is metered in the usage ledger at the plugin price; release() takes it back', async () => {
      const { userId } = await web.signIn();
      const result = await charge({ user: user(userId), pluginAuth: true, plugin: 'tts', priceUsd: '0.03' });
      expect(result).toMatchObject({ method: 'card', receipt: null, headers: {} });
      const rows = await usageRows(userId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ kind: 'plugin', model: 'plugin:tts', cost_usd: '0.030000' });
      await result.release();
      expect(await usageRows(userId)).toHaveLength(0);
    });
  });

  describe('MPP', () => {
    it('answers 402 with the spec §2.12 challenge, pricing and a double-quoted WWW-Authenticate', async () => {
      const now = Date.now();
      const err = await refusal(
        charge({ headers: { 'x-payment-method': 'mpp' }, plugin: 'tts', priceUsd: '0.03' }, { ...deps, clock: () => now }),
      );
      expect(err.statusCode).toBe(402);
      const body = err.body as any;
      expect(body).toMatchObject({
        error: 'payment_required',
        mpp: {
          scheme: 'Payment',
          amount: '0.03',
          currency: token.toLowerCase(),
          recipient: recipient.toLowerCase(),
          expiresAt: now + MPP_CHALLENGE_TTL_MS,
          chainId: 8453,
          decimals: 6,
        },
        card: { checkoutUrl: `${PUBLIC_URL}/api/payments/card/checkout?plan=solo`, amount: '0.03', currency: 'usd' },
        pricing: {
          plugin: 'tts',
          amount: '0.03',
          currency: 'usd',
          prices: { agent: '0.05', 'generate-text': '0.01', tts: '0.03', stt: '0.02' },
        },
      });
      expect(body.message).toMatch(/^Payment required for tts\. Choose payment method: /);
      expect(body.mpp.description).toContain('tts');
      expect(body.mpp.nonce).toMatch(/^[0-9a-f]{32}$/);
      expect(body.mpp.memo).toMatch(/^0x[0-9a-f]{64}$/);
      expect(body.reason).toBeUndefined();
      expect(err.headers['WWW-Authenticate']).toBe(
        `Payment amount="0.03", currency="${token.toLowerCase()}", recipient="${recipient.toLowerCase()}", nonce="${body.mpp.nonce}", expires="${new Date(now + MPP_CHALLENGE_TTL_MS).toISOString()}", chainId="8453"`,
      );
    });

    it('a real transfer to the recipient pays: receipt and Payment-Receipt are the tx hash; the same credential never pays again', async () => {
      const { nonce } = await challenge();
      const tx = await pay(payer);
      const result = await charge({ headers: { authorization: credential(tx, nonce) } });
      expect(result.method).toBe('mpp');
      expect(result.receipt).toBe(tx.toLowerCase());
      expect(result.headers).toEqual({ 'Payment-Receipt': tx.toLowerCase() });
      const row = await web.database.db.kysely
        .selectFrom('payment_transactions')
        .selectAll()
        .where('tx_hash', '=', tx.toLowerCase())
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ purpose: 'mpp', challenge_nonce: nonce, payer: payer.address.toLowerCase(), amount_atomic: '50000' });

      await expectRefused(charge({ headers: { authorization: credential(tx, nonce) } }), 'challenge already used', nonce);
      // The same transaction with a new challenge: still refused.
      const second = await challenge();
      await expectRefused(charge({ headers: { authorization: credential(tx, second.nonce) } }), 'transaction already used');
    });

    it('two concurrent uses of one credential: exactly one passes; one transaction under two challenges at once: exactly one', async () => {
      const { nonce } = await challenge();
      const tx = await pay(payer);
      const same = await Promise.allSettled([1, 2, 3].map(() => charge({ headers: { authorization: credential(tx, nonce) } })));
      expect(same.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of same) if (r.status === 'rejected') expect((r.reason as PaymentError).statusCode).toBe(402);

      const [a, b] = [await challenge(), await challenge()];
      const tx2 = await pay(payer);
      const split = await Promise.allSettled([a, b].map((c) => charge({ headers: { authorization: credential(tx2, c.nonce) } })));
      expect(split.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const used = await web.database.db.kysely
        .selectFrom('payment_challenges')
        .select('nonce')
        .where('tx_hash', '=', tx2.toLowerCase())
        .execute();
      expect(used).toHaveLength(1);
    });

    it('refuses a transfer to another address, too small, in another token, a failed transaction', async () => {
      let c = await challenge();
      await expectRefused(
        charge({ headers: { authorization: credential(await pay(payer, { to: chain.accounts[4]!.address }), c.nonce) } }),
        'no transfer of the payment token to the recipient',
        c.nonce,
      );
      c = await challenge();
      await expectRefused(
        charge({ headers: { authorization: credential(await pay(payer, { amount: '0.0498' }), c.nonce) } }),
        'amount below the price',
      );
      c = await challenge();
      await expectRefused(
        charge({ headers: { authorization: credential(await pay(payer, { asset: otherToken }), c.nonce) } }),
        'no transfer of the payment token to the recipient',
      );
      // A transfer of more than the payer holds, sent without gas estimation: mined, reverted. (Hardhat answers the
      // send with the revert, naming the mined transaction's hash.)
      c = await challenge();
      const failed = await walletOf(payer)
        .sendTransaction({
          to: token,
          data: encodeFunctionData({ abi: testTokenAbi, functionName: 'transfer', args: [recipient, parseUnits('1000000', 6)] }),
          gas: 100_000n,
        })
        .catch(
          (err: BaseError) =>
            (err.walk((e) => Boolean((e as { data?: { txHash?: Hex } }).data?.txHash)) as unknown as { data: { txHash: Hex } }).data.txHash,
        );
      expect((await chain.publicClient.waitForTransactionReceipt({ hash: failed, pollingInterval: 50 })).status).toBe('reverted');
      await expectRefused(charge({ headers: { authorization: credential(failed, c.nonce) } }), 'transaction failed');
      // Refusals consume nothing: the challenge still takes a good payment.
      expect((await charge({ headers: { authorization: credential(await pay(payer), c.nonce) } })).method).toBe('mpp');
    });

    it('accepts a payment short of the price by the 0.0001 tolerance', async () => {
      const c = await challenge();
      const result = await charge({ headers: { authorization: credential(await pay(payer, { amount: '0.0499' }), c.nonce) } });
      expect(result.method).toBe('mpp');
    });

    it('refuses an expired challenge, an unknown nonce, a challenge of another plugin, a transaction older than its challenge', async () => {
      const issuedAt = Date.now();
      const c = await challenge({}, { ...deps, clock: () => issuedAt });
      const tx = await pay(payer);
      await expectRefused(
        charge({ headers: { authorization: credential(tx, c.nonce) } }, { ...deps, clock: () => issuedAt + MPP_CHALLENGE_TTL_MS + 1 }),
        'challenge expired',
      );
      await expectRefused(charge({ headers: { authorization: credential(tx, 'f'.repeat(32)) } }), 'unknown challenge');
      const ttsChallenge = await challenge({ plugin: 'tts', priceUsd: '0.03' });
      await expectRefused(charge({ headers: { authorization: credential(tx, ttsChallenge.nonce) } }), 'challenge is for another plugin');
      // A challenge issued 10 minutes from now (by its clock): the transfer was made before it existed.
      const later = { ...deps, clock: () => Date.now() + 10 * 60_000 };
      const future = await challenge({}, later);
      await expectRefused(
        charge({ headers: { authorization: credential(tx, future.nonce) } }, later),
        'transaction predates the challenge',
      );
      // The transfer still pays a challenge issued moments after it (block times are whole seconds; 30 s of skew).
      const fresh = await challenge();
      expect((await charge({ headers: { authorization: credential(tx, fresh.nonce) } })).receipt).toBe(tx.toLowerCase());
    });

    it('refuses malformed credentials', async () => {
      const c = await challenge();
      const tx = await pay(payer);
      for (const authorization of [
        'Payment ',
        'Payment not-json',
        'Payment {"scheme":"Payment"}',
        `Payment ${JSON.stringify({ scheme: 'Basic', transaction: tx, challengeNonce: c.nonce })}`,
        `Payment ${JSON.stringify({ scheme: 'Payment', transaction: '0x1234', challengeNonce: c.nonce })}`,
        `Payment ${JSON.stringify({ scheme: 'Payment', transaction: tx, challengeNonce: 12 })}`,
        `Payment ${JSON.stringify({ scheme: 'Payment', transaction: tx, challengeNonce: `${c.nonce}'; drop table x` })}`,
        `Payment ${'x'.repeat(5000)}`,
      ]) {
        await expectRefused(charge({ headers: { authorization } }), 'malformed credential');
      }
      // X-Payment-Method: mpp without any credential: just the challenge.
      const err = await refusal(charge({ headers: { 'x-payment-method': 'mpp' } }));
      expect(err.body.reason).toBeUndefined();
      // base64url JSON is also accepted.
      const b64 = Buffer.from(JSON.stringify({ scheme: 'Payment', transaction: tx, challengeNonce: c.nonce })).toString('base64url');
      expect((await charge({ headers: { authorization: `Payment ${b64}` } })).receipt).toBe(tx.toLowerCase());
    });

    it('release() frees the credential: the same one pays again (once)', async () => {
      const c = await challenge();
      const tx = await pay(payer);
      const first = await charge({ headers: { authorization: credential(tx, c.nonce) } });
      await first.release();
      await first.release();
      const again = await charge({ headers: { authorization: credential(tx, c.nonce) } });
      expect(again.receipt).toBe(tx.toLowerCase());
      await expectRefused(charge({ headers: { authorization: credential(tx, c.nonce) } }), 'challenge already used');
    });

    it('with PAYMENT_REQUIRE_MEMO the transfer must carry its challenge memo', async () => {
      const strict = { ...deps, config: { ...web.config, payments: { ...web.config.payments!, requireMemo: true } } as WebConfig };
      const c = await challenge({}, strict);
      await expectRefused(
        charge({ headers: { authorization: credential(await pay(payer), c.nonce) } }, strict),
        'transaction does not carry the challenge memo',
      );
      // Another challenge's memo does not do either.
      const other = await challenge({}, strict);
      await expectRefused(
        charge({ headers: { authorization: credential(await pay(payer, { memo: other.memo }), c.nonce) } }, strict),
        'transaction does not carry the challenge memo',
      );
      const result = await charge({ headers: { authorization: credential(await pay(payer, { memo: c.memo }), c.nonce) } }, strict);
      expect(result.method).toBe('mpp');
    });

    it('without PAYMENT_* configured MPP is 503; an unreachable chain is 503 and leaves the credential usable', async () => {
      const off = { ...deps, config: { ...web.config, payments: undefined } as WebConfig };
      const err = await refusal(charge({ headers: { 'x-payment-method': 'mpp' } }, off));
      expect(err.statusCode).toBe(503);
      expect(err.body.error).toBe('payment_unavailable');

      const c = await challenge();
      const tx = await pay(payer);
      const down = {
        ...deps,
        config: { ...web.config, payments: { ...web.config.payments!, rpcUrl: `http://127.0.0.1:${await closedPort()}` } } as WebConfig,
      };
      const unreachable = await refusal(charge({ headers: { authorization: credential(tx, c.nonce) } }, down));
      expect(unreachable.statusCode).toBe(503);
      expect(unreachable.body.error).toBe('payment_unavailable');
      expect((await charge({ headers: { authorization: credential(tx, c.nonce) } })).receipt).toBe(tx.toLowerCase());
    });

    it('an RPC serving another chain id is never trusted', async () => {
      const c = await challenge();
      const tx = await pay(payer);
      const wrong = { ...deps, config: { ...web.config, payments: { ...web.config.payments!, chainId: 84532 } } as WebConfig };
      const err = await refusal(charge({ headers: { authorization: credential(tx, c.nonce) } }, wrong));
      expect(err.statusCode).toBe(503);
    });

    it('a plugin without a price is 400 unknown_plugin', async () => {
      const err = await refusal(charge({ headers: { 'x-payment-method': 'mpp' }, plugin: 'video', priceUsd: null }));
      expect(err.statusCode).toBe(400);
      expect(err.body.error).toBe('unknown_plugin');
    });
  });

  describe('payment sessions', () => {
    const sessions = () => `${web.url}/api/wallet/sessions`;

    /** The wallet's signature headers for `action` on `target`. */
    async function proof(account: PrivateKeyAccount, action: 'open' | 'list' | 'close', target: string, timestamp = Date.now()) {
      const message = walletProofMessage({ domain: web.config.siweDomain, action, address: account.address, target, timestamp });
      return { 'x-wallet-signature': await account.signMessage({ message }), 'x-wallet-timestamp': String(timestamp) };
    }

    /** `client`: extra request headers (a client address of its own). */
    async function open(account: PrivateKeyAccount, deposit = '1.00', transaction?: Hex, client: Record<string, string> = {}) {
      const tx = transaction ?? (await pay(account, { amount: deposit }));
      const res = await request(sessions(), {
        json: { address: account.address, deposit, transaction: tx },
        headers: { ...client, ...(await proof(account, 'open', tx.toLowerCase())) },
      });
      return { res, tx };
    }

    async function close(account: PrivateKeyAccount, sessionId: string, client: Record<string, string> = {}) {
      return request(`${sessions()}?sessionId=${sessionId}`, {
        method: 'DELETE',
        headers: { ...client, ...(await proof(account, 'close', sessionId)) },
      });
    }

    const sessionHeaders = (sessionId: string, wallet: string) => ({
      'x-payment-method': 'session',
      'x-session-id': sessionId,
      'x-wallet-address': wallet,
    });

    describe('the wallet API', () => {
      let alice: PrivateKeyAccount;
      let sessionId: string;
      let depositTx: Hex;

      beforeAll(async () => {
        alice = await freshWallet();
      });

      it('validates the body', async () => {
        const tx = `0x${'a'.repeat(64)}`;
        const post = (json: unknown) => request(sessions(), { json, headers: {} });
        expect((await post({})).body).toEqual({ error: 'Missing: address, deposit, transaction' });
        expect((await post({ address: alice.address, deposit: '1.00' })).status).toBe(400);
        expect((await post({ address: 'nope', deposit: '1.00', transaction: tx })).body).toEqual({ error: 'Invalid wallet address' });
        for (const deposit of ['0.99', '100.01', 'abc', '-5', '1e2', 0.5, '1.0000001']) {
          const res = await post({ address: alice.address, deposit, transaction: tx });
          expect(res.status).toBe(400);
          expect(res.body.error).toBe('Deposit must be a USD amount from 1.00 to 100.00');
        }
        expect((await post({ address: alice.address, deposit: '1.00', transaction: '0x12' })).body).toEqual({
          error: 'Invalid transaction hash',
        });
        expect((await post({ address: alice.address, deposit: 5, transaction: 42 })).status).toBe(400);
      });

      it('opening needs proof of the wallet', async () => {
        const tx = await pay(alice, { amount: '1.00' });
        const json = { address: alice.address, deposit: '1.00', transaction: tx };
        expect(await request(sessions(), { json })).toMatchObject({ status: 401, body: { error: 'Wallet signature required' } });
        // Signed by another wallet, signed for another action, or too old: refused.
        const stranger = privateKeyToAccount(generatePrivateKey());
        const forged = await proof(stranger, 'open', tx.toLowerCase());
        expect((await request(sessions(), { json, headers: forged })).body).toEqual({ error: 'Invalid wallet signature' });
        expect((await request(sessions(), { json, headers: await proof(alice, 'close', tx.toLowerCase()) })).status).toBe(401);
        expect(
          (await request(sessions(), { json, headers: await proof(alice, 'open', tx.toLowerCase(), Date.now() - 6 * 60_000) })).status,
        ).toBe(401);
        // A signed-in account the wallet does not belong to: 403.
        const { cookie } = await web.signIn();
        expect((await request(sessions(), { json, headers: { cookie } })).status).toBe(403);
        depositTx = tx;
      });

      it('opens with a verified on-chain deposit: 201 { session }', async () => {
        const { res } = await open(alice, '1.00', depositTx);
        expect(res.status).toBe(201);
        const session = res.body.session;
        expect(session).toMatchObject({
          userAddress: alice.address.toLowerCase(),
          deposit: '1.00',
          spent: '0.00',
          remaining: '1.00',
          vouchers: [],
          status: 'active',
        });
        expect(session.id).toMatch(/^ses_[A-Za-z0-9_-]{22}$/);
        expect(session.createdAt).toBeGreaterThan(Date.now() - 60_000);
        expect(session.lastSettledAt).toBe(session.createdAt);
        sessionId = session.id;
      });

      it('the deposit transaction never pays twice, not even as an MPP credential', async () => {
        const c = await challenge();
        await expectRefused(charge({ headers: { authorization: credential(depositTx, c.nonce) } }), 'transaction already used');
      });

      it('GET ?sessionId= answers { session } (404 unknown); GET ?address= needs the wallet', async () => {
        const one = await request(`${sessions()}?sessionId=${sessionId}`);
        expect(one.status).toBe(200);
        expect(one.body.session).toMatchObject({ id: sessionId, remaining: '1.00' });
        expect((await request(`${sessions()}?sessionId=ses_unknown`)).status).toBe(404);
        expect((await request(`${sessions()}?sessionId=not-a-session`)).body).toEqual({ error: 'Session not found' });
        expect((await request(sessions())).body).toEqual({ error: 'Missing address or sessionId' });

        const url = `${sessions()}?address=${alice.address}`;
        expect((await request(url)).status).toBe(401);
        const listed = await request(url, { headers: await proof(alice, 'list', alice.address.toLowerCase()) });
        expect(listed.status).toBe(200);
        expect(listed.body.sessions.map((s: { id: string }) => s.id)).toEqual([sessionId]);
        // The owner's signed-in account (its SIWE wallet) may list too.
        const { cookie, userId } = await web.signIn();
        expect((await request(url, { headers: { cookie } })).status).toBe(403);
        await web.database.db.kysely
          .updateTable('users')
          .set({ wallet_address: alice.address.toLowerCase() })
          .where('id', '=', userId)
          .execute();
        expect((await request(url, { headers: { cookie } })).body.sessions).toHaveLength(1);
      });

      it('POST /voucher debits once per signed voucher', async () => {
        const voucher = async (plugin: string, nonce: string, signer = alice, amount = '0.03') => ({
          sessionId,
          userAddress: alice.address,
          plugin,
          nonce,
          signature: await signer.signMessage({ message: voucherMessage({ sessionId, plugin, amount, nonce }) }),
        });
        const url = `${sessions()}/voucher`;
        const body = await voucher('tts', 'nonce-0001');
        const res = await request(url, { json: body });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          success: true,
          session: { id: sessionId, spent: '0.03', remaining: '0.97', pendingVouchers: 1 },
          voucher: { amount: '0.03', plugin: 'tts', description: 'tts plugin call' },
        });
        expect(await request(url, { json: body })).toMatchObject({ status: 409, body: { error: 'Voucher already used' } });
        expect((await request(url, { json: await voucher('tts', 'nonce-0002', privateKeyToAccount(generatePrivateKey())) })).body).toEqual({
          error: 'Invalid voucher signature',
        });
        // Signed for another price: not this plugin's voucher.
        expect((await request(url, { json: await voucher('tts', 'nonce-0003', alice, '0.01') })).status).toBe(401);
        const unknown = await request(url, { json: await voucher('video', 'nonce-0004') });
        expect(unknown).toMatchObject({ status: 400, body: { error: 'unknown_plugin' } });
        expect((await request(url, { json: { sessionId } })).body).toEqual({
          error: 'Missing: sessionId, userAddress, plugin, signature, nonce',
        });
        expect((await request(url, { json: { ...body, nonce: 'short' } })).body).toEqual({ error: 'Invalid nonce' });
        expect((await request(url, { json: { ...body, sessionId: 'ses_nope' } })).status).toBe(404);

        const view = (await request(`${sessions()}?sessionId=${sessionId}`)).body.session;
        expect(view).toMatchObject({ spent: '0.03', remaining: '0.97' });
        expect(view.vouchers).toEqual([{ plugin: 'tts', amount: '0.03', timestamp: expect.any(Number) }]);
      });

      it('DELETE ?sessionId= closes (owner only): { success, returned }; a closed session takes no debit', async () => {
        expect((await request(`${sessions()}?sessionId=${sessionId}`, { method: 'DELETE' })).status).toBe(401);
        const stranger = privateKeyToAccount(generatePrivateKey());
        const url = `${sessions()}?sessionId=${sessionId}`;
        expect((await request(url, { method: 'DELETE', headers: await proof(stranger, 'close', sessionId) })).status).toBe(401);
        expect(
          (await request(`${sessions()}?sessionId=ses_unknown`, { method: 'DELETE', headers: await proof(alice, 'close', 'ses_unknown') }))
            .status,
        ).toBe(404);

        const res = await close(alice, sessionId);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ success: true, returned: '0.97' });
        expect((await close(alice, sessionId)).body).toEqual({ error: 'Session already closed' });
        const view = (await request(url)).body.session;
        expect(view).toMatchObject({ status: 'closed', spent: '0.03', remaining: '0.97', vouchers: [] });
        const settlement = await web.database.db.kysely
          .selectFrom('payment_settlements')
          .selectAll()
          .where('session_id', '=', sessionId)
          .execute();
        expect(settlement).toMatchObject([{ reason: 'close', amount: '0.030000', voucher_count: 1 }]);

        const err = await refusal(charge({ headers: sessionHeaders(sessionId, alice.address) }));
        expect(err.body.error).toBe('session_invalid');
      });

      it('after closing, the used deposit stays refused; a new deposit opens a new session', async () => {
        expect((await open(alice, '1.00', depositTx)).res).toMatchObject({
          status: 409,
          body: { error: 'Deposit transaction already used' },
        });
        const { res } = await open(alice, '3.50');
        expect(res.status).toBe(201);
        expect(res.body.session).toMatchObject({ deposit: '3.50', remaining: '3.50' });
        expect(res.body.session.id).not.toBe(sessionId);
      });

      it('refuses deposits that were not paid as claimed', async () => {
        const bob = await freshWallet();
        // Too small for the claimed deposit.
        const small = await open(bob, '5.00', await pay(bob, { amount: '4.99' }));
        expect(small.res).toMatchObject({
          status: 402,
          body: { error: 'Deposit could not be verified', reason: 'amount below the price' },
        });
        // Paid by another wallet: not bob's deposit.
        const byOther = await open(bob, '1.00', await pay(payer, { amount: '1.00' }));
        expect(byOther.res.body.reason).toBe('no transfer of the payment token from that wallet to the recipient');
        // Unknown transaction.
        expect((await open(bob, '1.00', `0x${'e'.repeat(64)}`)).res.body.reason).toBe('transaction not found or not mined yet');
      });
    });

    describe('topping up the open session', () => {
      const TOPPED_UP = 'Deposit added to the active session';
      /** These tests make many wallet API calls: from their own client address, under their own rate limit. */
      const client = { 'x-forwarded-for': freshIp() };
      const balance = async (id: string) => (await request(`${sessions()}?sessionId=${id}`, { headers: client })).body.session;
      /** The wallet's session that is not closed, from the database (none or one). */
      const openSessions = (account: PrivateKeyAccount) =>
        web.database.db.kysely
          .selectFrom('payment_sessions')
          .select(['id', 'deposit'])
          .where('user_address', '=', account.address.toLowerCase())
          .where('status', '<>', 'closed')
          .execute();

      it('§4.4 session billing: a new deposit to a spent session is credited once (200 with a note); a replay is 409, an unverifiable one 402', async () => {
        const erin = await freshWallet();
        const first = await open(erin, '1.00', undefined, client);
        expect(first.res.status).toBe(201);
        const id = first.res.body.session.id as string;
        await charge({ headers: sessionHeaders(id, erin.address), priceUsd: '1.00' });
        const broke = await refusal(charge({ headers: sessionHeaders(id, erin.address) }));
        expect(broke.body).toMatchObject({ error: 'insufficient_balance', session: { remaining: '0.00' } });

        const { res, tx } = await open(erin, '1.00', undefined, client);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          session: expect.objectContaining({ id, deposit: '2.00', spent: '1.00', remaining: '1.00', status: 'active' }),
          note: TOPPED_UP,
        });
        const recorded = await web.database.db.kysely
          .selectFrom('payment_transactions')
          .select(['tx_hash', 'purpose', 'session_id'])
          .where('session_id', '=', id)
          .orderBy('created_at')
          .execute();
        expect(recorded.map((r) => r.tx_hash).sort()).toEqual([first.tx.toLowerCase(), tx.toLowerCase()].sort());
        for (const r of recorded) expect(r).toMatchObject({ purpose: 'session_deposit', session_id: id });
        const audits = await web.database.db.kysely
          .selectFrom('audit_log')
          .select(['action', 'metadata'])
          .where('target', '=', id)
          .where('action', '=', 'payment_session.top_up')
          .execute();
        expect(audits).toEqual([
          {
            action: 'payment_session.top_up',
            metadata: { address: erin.address.toLowerCase(), deposit: '1.00', txHash: tx.toLowerCase(), total: '2.00' },
          },
        ]);

        // Replays of either deposit, and deposits that cannot be verified, credit nothing.
        for (const used of [tx, first.tx]) {
          expect((await open(erin, '1.00', used, client)).res).toMatchObject({
            status: 409,
            body: { error: 'Deposit transaction already used' },
          });
        }
        expect((await open(erin, '1.00', `0x${'d'.repeat(64)}`, client)).res).toMatchObject({
          status: 402,
          body: { error: 'Deposit could not be verified', reason: 'transaction not found or not mined yet' },
        });
        expect((await open(erin, '1.00', await pay(erin, { amount: '0.50' }), client)).res).toMatchObject({
          status: 402,
          body: { error: 'Deposit could not be verified', reason: 'amount below the price' },
        });
        expect(await balance(id)).toMatchObject({ deposit: '2.00', remaining: '1.00' });
        expect((await charge({ headers: sessionHeaders(id, erin.address) })).headers['X-Session-Remaining']).toBe('0.95');
        // Closing returns both deposits less spent (and settles, so the sweep tests below find nothing of this wallet).
        expect((await close(erin, id, client)).body).toEqual({ success: true, returned: '0.95' });
      });

      it('§4.4 session billing: two new deposits at once are both credited; one deposit sent three times at once is credited once', async () => {
        const frank = await freshWallet();
        // No session yet: the two deposits race to open one; one opens it (201), the other tops it up (200).
        const [a, b] = [await pay(frank, { amount: '1.00' }), await pay(frank, { amount: '2.00' })];
        const opened = await Promise.all([open(frank, '1.00', a, client), open(frank, '2.00', b, client)]);
        expect(opened.map((o) => o.res.status).sort()).toEqual([200, 201]);
        const [session] = await openSessions(frank);
        expect(opened.map((o) => o.res.body.session.id)).toEqual([session?.id, session?.id]);
        expect(session?.deposit).toBe('3.000000');

        // The session is open: two more deposits at once.
        const [c, d] = [await pay(frank, { amount: '1.00' }), await pay(frank, { amount: '5.00' })];
        const topped = await Promise.all([open(frank, '1.00', c, client), open(frank, '5.00', d, client)]);
        expect(topped.map((t) => t.res.status)).toEqual([200, 200]);
        expect(await balance(session!.id)).toMatchObject({ deposit: '9.00', remaining: '9.00' });

        const e = await pay(frank, { amount: '1.00' });
        const same = await Promise.all([1, 2, 3].map(() => open(frank, '1.00', e, client)));
        expect(same.map((s) => s.res.status).sort()).toEqual([200, 409, 409]);
        expect(await balance(session!.id)).toMatchObject({ deposit: '10.00', remaining: '10.00' });
        expect(await openSessions(frank)).toHaveLength(1);
      });

      it('§4.4 session billing: deposits racing the close are each either returned with the closed session or in a new one', async () => {
        const grace = await freshWallet();
        const { res } = await open(grace, '1.00', undefined, client);
        const id = res.body.session.id as string;
        await charge({ headers: sessionHeaders(id, grace.address), priceUsd: '0.25' });
        const [a, b] = [await pay(grace, { amount: '2.00' }), await pay(grace, { amount: '3.00' })];
        const [closed, ...deposits] = await Promise.all([
          close(grace, id, client),
          open(grace, '2.00', a, client),
          open(grace, '3.00', b, client),
        ]);
        expect(closed.status).toBe(200);
        // Whatever the order, every deposit is credited exactly once: a top-up before the close is in `returned`, one
        // after it opened (or topped up) the wallet's new session.
        const statuses = deposits.map((d) => d.res.status);
        for (const status of statuses) expect([200, 201]).toContain(status);
        const after = await openSessions(grace);
        const cents = (usd: string) => Math.round(Number(usd) * 100);
        expect(cents(closed.body.returned) + after.reduce((sum, s) => sum + cents(s.deposit), 0)).toBe(cents('5.75'));
        if (statuses.includes(201)) {
          expect(after).toHaveLength(1);
          for (const d of deposits) if (d.res.status === 201) expect(d.res.body.session.id).toBe(after[0]?.id);
        } else {
          expect(after).toEqual([]);
        }
      });
    });

    describe('gateway session billing', () => {
      let carol: PrivateKeyAccount;
      let sessionId: string;

      beforeAll(async () => {
        carol = await freshWallet();
        const { res } = await open(carol, '1.00');
        expect(res.status).toBe(201);
        sessionId = res.body.session.id;
      });

      it('needs X-Session-Id and X-Wallet-Address (402 session_required)', async () => {
        for (const headers of [
          { 'x-payment-method': 'session' },
          { 'x-payment-method': 'session', 'x-session-id': sessionId },
          { 'x-payment-method': 'session', 'x-wallet-address': carol.address },
        ]) {
          const err = await refusal(charge({ headers }));
          expect(err.statusCode).toBe(402);
          expect(err.body.error).toBe('session_required');
        }
      });

      it('finds the session by id and wallet, case-insensitively (402 session_invalid otherwise)', async () => {
        for (const [id, wallet] of [
          [sessionId, chain.accounts[4]!.address],
          ['ses_unknown', carol.address],
          [sessionId, 'not-an-address'],
        ] as const) {
          const err = await refusal(charge({ headers: sessionHeaders(id, wallet) }));
          expect(err.statusCode).toBe(402);
          expect(err.body.error).toBe('session_invalid');
        }
        const ok = await charge({ headers: sessionHeaders(sessionId, carol.address.toUpperCase().replace('0X', '0x')) });
        expect(ok.method).toBe('session');
        await ok.release();
      });

      it('a plugin without a price is 400 unknown_plugin', async () => {
        const err = await refusal(charge({ headers: sessionHeaders(sessionId, carol.address), plugin: 'video', priceUsd: null }));
        expect(err.statusCode).toBe(400);
        expect(err.body.error).toBe('unknown_plugin');
      });

      it('debits the price: receipt session:<id>:v_<24 hex>, Payment-Receipt and X-Session-Remaining; release() credits it back', async () => {
        const result = await charge({ headers: sessionHeaders(sessionId, carol.address) });
        expect(result.method).toBe('session');
        expect(result.receipt).toMatch(new RegExp(`^session:${sessionId}:v_[0-9a-f]{24}$`));
        expect(result.headers).toEqual({ 'Payment-Receipt': result.receipt, 'X-Session-Remaining': '0.95' });
        await result.release();
        const view = (await request(`${sessions()}?sessionId=${sessionId}`)).body.session;
        expect(view).toMatchObject({ spent: '0.00', remaining: '1.00', vouchers: [] });
      });

      it('50 concurrent charges on a session that can afford 10: exactly 10 pass and spent is exact', async () => {
        for (let i = 0; i < 10; i++) await charge({ headers: sessionHeaders(sessionId, carol.address) });
        const results = await Promise.allSettled(
          Array.from({ length: 50 }, () => charge({ headers: sessionHeaders(sessionId, carol.address) })),
        );
        const passed = results.filter((r): r is PromiseFulfilledResult<ChargeResult> => r.status === 'fulfilled');
        expect(passed).toHaveLength(10);
        expect(new Set(passed.map((r) => r.value.receipt)).size).toBe(10);
        for (const r of results) {
          if (r.status === 'rejected') expect(['insufficient_balance', 'voucher_failed']).toContain((r.reason as PaymentError).body.error);
        }
        const row = await web.database.db.kysely
          .selectFrom('payment_sessions')
          .selectAll()
          .where('id', '=', sessionId)
          .executeTakeFirstOrThrow();
        expect(row.spent).toBe('1.000000');
        const vouchers = await web.database.db.kysely
          .selectFrom('payment_vouchers')
          .select('nonce')
          .where('session_id', '=', sessionId)
          .execute();
        expect(vouchers).toHaveLength(20);
      });

      it('an underfunded session: 402 insufficient_balance with session.remaining and session.cost', async () => {
        const err = await refusal(charge({ headers: sessionHeaders(sessionId, carol.address), plugin: 'stt', priceUsd: '0.02' }));
        expect(err.statusCode).toBe(402);
        expect(err.body).toEqual({
          error: 'insufficient_balance',
          message: 'The session balance does not cover the price of stt',
          session: { id: sessionId, remaining: '0.00', cost: '0.02' },
        });
      });

      it('settles at $5.00 accumulated, hourly, and in the sweep', async () => {
        expect((await close(carol, sessionId)).body).toEqual({ success: true, returned: '0.00' });
        const { res } = await open(carol, '20.00');
        const id = res.body.session.id as string;
        const settlements = () =>
          web.database.db.kysely
            .selectFrom('payment_settlements')
            .select(['reason', 'amount', 'voucher_count'])
            .where('session_id', '=', id)
            .orderBy('id')
            .execute();

        await charge({ headers: sessionHeaders(id, carol.address), priceUsd: '2.50' });
        expect(await settlements()).toEqual([]);
        await charge({ headers: sessionHeaders(id, carol.address), priceUsd: '2.50' });
        expect(await settlements()).toEqual([{ reason: 'threshold', amount: '5.000000', voucher_count: 2 }]);
        let view = (await request(`${sessions()}?sessionId=${id}`)).body.session;
        expect(view).toMatchObject({ status: 'active', spent: '5.00', remaining: '15.00', vouchers: [] });
        const settledAt = view.lastSettledAt as number;

        // An hour after the last settlement, the next debit settles what accumulated.
        const later = Date.now() + HOUR + 60_000;
        await charge({ headers: sessionHeaders(id, carol.address) }, { ...deps, clock: () => later });
        expect((await settlements()).at(-1)).toEqual({ reason: 'hourly', amount: '0.050000', voucher_count: 1 });
        view = (await request(`${sessions()}?sessionId=${id}`)).body.session;
        expect(view.lastSettledAt).toBe(later);
        expect(view.lastSettledAt).toBeGreaterThan(settledAt);

        // Without calls, the sweep settles an hour later.
        await charge({ headers: sessionHeaders(id, carol.address) }, { ...deps, clock: () => later + 1000 });
        expect(await settleDueSessions(web.database.db.kysely, later + 30 * 60_000)).toBe(0);
        expect(await settleDueSessions(web.database.db.kysely, later + HOUR + 1)).toBe(1);
        expect((await settlements()).at(-1)).toEqual({ reason: 'hourly', amount: '0.050000', voucher_count: 1 });
        view = (await request(`${sessions()}?sessionId=${id}`)).body.session;
        expect(view).toMatchObject({ status: 'active', spent: '5.10', vouchers: [] });
      });
    });
  });
  describe('through POST /api/v1/gateway', () => {
    const gateway = (service: { url: string }, headers: Record<string, string> = {}) =>
      request(`${service.url}/api/v1/gateway`, { json: { plugin: 'generate-text', prompt: 'paid words' }, headers });

    it('MPP: 402 with the challenge and WWW-Authenticate, then 200 with the tx hash as receipt and Payment-Receipt', async () => {
      const unpaid = await gateway(web, { 'x-payment-method': 'mpp' });
      expect(unpaid.status).toBe(402);
      expect(unpaid.body).toMatchObject({
        error: 'payment_required',
        mpp: { scheme: 'Payment', amount: '0.01' },
        card: { amount: '0.01' },
      });
      expect(unpaid.headers.get('www-authenticate')).toMatch(
        /^Payment amount="0\.01", currency="0x[0-9a-f]{40}", recipient="0x[0-9a-f]{40}"/,
      );

      const tx = await pay(payer, { amount: '0.01' });
      const paid = await gateway(web, { authorization: credential(tx, unpaid.body.mpp.nonce) });
      expect(paid.status).toBe(200);
      expect(paid.body).toMatchObject({
        plugin: 'generate-text',
        message: 'echo: paid words',
        payment: { method: 'mpp', receipt: tx.toLowerCase() },
      });
      expect(paid.headers.get('payment-receipt')).toBe(tx.toLowerCase());
      expect(paid.headers.get('x-session-remaining')).toBeNull();

      const replay = await gateway(web, { authorization: credential(tx, unpaid.body.mpp.nonce) });
      expect(replay.status).toBe(402);
      expect(replay.body).toMatchObject({ error: 'payment_required', reason: 'challenge already used' });
    });

    it('MPP: a plugin that fails releases the credential, which then pays for a call that works', async () => {
      const unpaid = await gateway(brokenWeb, { 'x-payment-method': 'mpp' });
      const tx = await pay(payer, { amount: '0.01' });
      const failed = await gateway(brokenWeb, { authorization: credential(tx, unpaid.body.mpp.nonce) });
      expect(failed.status).toBeGreaterThanOrEqual(500);
      const retried = await gateway(web, { authorization: credential(tx, unpaid.body.mpp.nonce) });
      expect(retried.status).toBe(200);
      expect(retried.body.payment).toEqual({ method: 'mpp', receipt: tx.toLowerCase() });
    });

    it('session: 200 with the receipt, Payment-Receipt and X-Session-Remaining; a failed plugin call is credited back', async () => {
      const dave = await freshWallet();
      const tx = await pay(dave, { amount: '1.00' });
      const message = walletProofMessage({
        domain: web.config.siweDomain,
        action: 'open',
        address: dave.address,
        target: tx.toLowerCase(),
        timestamp: Date.now(),
      });
      const opened = await request(`${web.url}/api/wallet/sessions`, {
        json: { address: dave.address, deposit: '1.00', transaction: tx },
        headers: { 'x-wallet-signature': await dave.signMessage({ message }), 'x-wallet-timestamp': message.split('Timestamp: ')[1]! },
      });
      expect(opened.status).toBe(201);
      const id = opened.body.session.id as string;
      const headers = { 'x-payment-method': 'session', 'x-session-id': id, 'x-wallet-address': dave.address };

      const res = await gateway(web, headers);
      expect(res.status).toBe(200);
      expect(res.body.payment.method).toBe('session');
      expect(res.body.payment.receipt).toMatch(new RegExp(`^session:${id}:v_[0-9a-f]{24}$`));
      expect(res.headers.get('payment-receipt')).toBe(res.body.payment.receipt);
      expect(res.headers.get('x-session-remaining')).toBe('0.99');

      expect((await gateway(brokenWeb, headers)).status).toBeGreaterThanOrEqual(500);
      expect((await request(`${web.url}/api/wallet/sessions?sessionId=${id}`)).body.session).toMatchObject({
        spent: '0.01',
        remaining: '0.99',
      });

      const missing = await gateway(web, { 'x-payment-method': 'session' });
      expect(missing).toMatchObject({ status: 402, body: { error: 'session_required' } });
    });
  });
});
