import { createServer } from 'node:http';
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
import { Challenge, Receipt } from 'mppx';
import { Mppx, evm } from 'mppx/client';
import { type Address, type Hex, createWalletClient, getAddress, http, parseEther, parseEventLogs, parseUnits } from 'viem';
import { type PrivateKeyAccount, generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { type WebConfig, loadWebConfig } from '../../config.js';
import { type TestWeb, startWeb } from '../../web.test-support.js';
import { type ChargeDeps, chargeForPlugin } from './charge.js';
import { MPP_CHALLENGE_TTL_MS } from './mpp.js';
import { type ChargeRequest, PaymentError } from './types.js';

const PUBLIC_URL = 'https://pay.example.test';
const LLM_KEY = 'sk-llm-key-for-mppx-tests';
/** The test token's EIP-712 domain is USDC's: its name and version "2" (packages/testing/contracts/Token.sol). */
const USDC_DOMAIN = { name: 'USD Coin', version: '2' };
/** generate-text's reference price, in USDC units (6 decimals). */
const PRICE = parseUnits('0.01', 6);

/**
 * A JSON-RPC pass-through to the test chain that answers 503 for the methods named in `failing`: the chain stays real,
 * only its answers to us are lost.
 */
async function flakyRpc(target: string) {
  const failing = new Set<string>();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (failing.has((JSON.parse(body) as { method: string }).method)) {
      res.writeHead(503).end();
      return;
    }
    const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    failing,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// Spec §2.12 and §4.4 (MPP: the 402 challenge, `Authorization: Payment <credential>`, `Payment-Receipt`), paid by the
// unmodified mppx client (0.11) through the Payment authentication scheme's `evm` charge: the payer signs an EIP-3009
// authorization, the gateway's settlement account submits it to the token on the local chain (chain id 8453), and the
// transfer is then verified like any other MPP payment.
describe('MPP with the mppx client: the Payment scheme, settled on chain', () => {
  let chain: TestChain;
  let web: TestWeb;
  let deps: ChargeDeps;
  let llm: FakeLlm;
  let brokenLlm: FakeLlm;
  /** The same database and chain, but its LLM answers 500: every generate-text call fails after payment. */
  let brokenWeb: RunningService;
  let token: Address;
  let recipient: Address;
  let settler: PrivateKeyAccount;
  let payer: PrivateKeyAccount;

  const gatewayUrl = (service: { url: string } = web) => `${service.url}/api/v1/gateway`;
  const call = { plugin: 'generate-text', prompt: 'paid words' };
  /** The gateway answers a free card call unless the caller asks for MPP (spec §4.4 method selection). */
  const mppHeaders = { 'content-type': 'application/json', 'x-payment-method': 'mpp' };
  const post = (headers: Record<string, string>, service: { url: string } = web) =>
    request(gatewayUrl(service), { json: call, headers: { 'x-payment-method': 'mpp', ...headers } });

  const balanceOf = (account: Address) =>
    chain.publicClient.readContract({ address: token, abi: testTokenAbi, functionName: 'balanceOf', args: [account] });

  /** The mppx client method, as a developer configures it for our token. */
  const evmCharge = (account: PrivateKeyAccount = payer) => evm.charge({ account, authorization: USDC_DOMAIN });

  /** A fresh 402 from the gateway and the challenge mppx reads from it. */
  async function challenge() {
    const res = await fetch(gatewayUrl(), { method: 'POST', headers: mppHeaders, body: JSON.stringify(call) });
    expect(res.status).toBe(402);
    return { res, parsed: Challenge.fromResponse(res), body: (await res.json()) as { mpp: { nonce: string; expiresAt: number } } };
  }

  /** An mppx credential (`Payment …`) for `challenge`, as mppx's fetch would send it. */
  const credentialFor = (parsed: Challenge.Challenge, account?: PrivateKeyAccount) =>
    evmCharge(account).createCredential({ challenge: parsed as never, context: {} });

  beforeAll(async () => {
    chain = await startTestChain();
    [llm, brokenLlm] = await Promise.all([
      startFakeLlm({ apiKey: LLM_KEY, reply: (body) => `echo: ${lastUserText(body)}` }),
      startFakeLlm({ apiKey: LLM_KEY, failWith: 500 }),
    ]);
    token = await chain.deployToken({ name: USDC_DOMAIN.name, symbol: 'USDC', decimals: 6 });
    recipient = privateKeyToAccount(generatePrivateKey()).address;
    // The settlement account holds gas money only; the payer holds tokens only (an EIP-3009 payer needs no gas).
    const settlerKey = generatePrivateKey();
    settler = privateKeyToAccount(settlerKey);
    const funding = await createWalletClient({
      account: chain.deployer,
      chain: chain.chain,
      transport: http(chain.rpcUrl),
    }).sendTransaction({
      to: settler.address,
      value: parseEther('1'),
    });
    await chain.publicClient.waitForTransactionReceipt({ hash: funding, pollingInterval: 50 });
    payer = privateKeyToAccount(generatePrivateKey());
    await chain.mintTokens(token, payer.address, '100');

    const env = {
      PUBLIC_URL,
      PAYMENT_RPC_URL: chain.rpcUrl,
      PAYMENT_CHAIN_ID: String(chain.chainId),
      PAYMENT_TOKEN_ADDRESS: token,
      PAYMENT_TOKEN_DECIMALS: '6',
      PAYMENT_RECIPIENT: recipient,
      PAYMENT_SETTLER_KEY: settlerKey,
      LLM_API_KEY: LLM_KEY,
    };
    web = await startWeb({ ...env, LLM_BASE_URL: llm.url });
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
  });
  afterAll(async () => {
    await brokenWeb?.close();
    await web?.close();
    await Promise.all([llm?.close(), brokenLlm?.close()]);
    await chain?.close();
  });

  it('one challenge carries the spec parameters and the Payment scheme parameters; mppx reads it', async () => {
    const { res, parsed, body } = await challenge();
    const header = res.headers.get('www-authenticate')!;
    // A spec client still finds amount, currency and recipient first (spec §4.4).
    expect(header).toMatch(
      new RegExp(
        `^Payment amount="0\\.01", currency="${token.toLowerCase()}", recipient="${recipient.toLowerCase()}", nonce="${body.mpp.nonce}"`,
      ),
    );
    expect(parsed).toEqual({
      id: body.mpp.nonce,
      realm: 'pay.example.test',
      method: 'evm',
      intent: 'charge',
      request: {
        amount: PRICE.toString(),
        currency: getAddress(token),
        recipient: getAddress(recipient),
        methodDetails: { chainId: 8453, credentialTypes: ['authorization'], decimals: 6 },
      },
      description: 'generate-text plugin call (LLM text generation)',
      expires: new Date(body.mpp.expiresAt).toISOString(),
    });
  });

  it('the unmodified mppx client pays: 402 → EIP-3009 transfer on chain → credential → 200 with Payment-Receipt; a replay is refused', async () => {
    const mppx = Mppx.create({ methods: [evmCharge()], polyfill: false });
    let sent: string | undefined;
    mppx.onCredentialCreated(({ credential }) => {
      sent = credential;
    });
    const [payerBefore, recipientBefore] = [await balanceOf(payer.address), await balanceOf(recipient)];

    const res = await mppx.fetch(gatewayUrl(), { method: 'POST', headers: mppHeaders, body: JSON.stringify(call) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { message: string; payment: { method: string; receipt: Hex } };
    expect(body).toMatchObject({ plugin: 'generate-text', message: 'echo: paid words', payment: { method: 'mpp' } });
    const txHash = body.payment.receipt;
    expect(txHash).toMatch(/^0x[0-9a-f]{64}$/);
    const receipt = Receipt.fromResponse(res);
    expect(receipt).toMatchObject({ method: 'evm', reference: txHash, status: 'success' });
    expect(Date.parse(receipt.timestamp)).toBeGreaterThan(Date.now() - 60_000);

    // The tokens moved from the payer to the recipient, in the transaction the settlement account sent.
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(recipient)).toBe(recipientBefore + PRICE);
    const mined = await chain.publicClient.getTransactionReceipt({ hash: txHash });
    expect(mined.from).toBe(settler.address.toLowerCase());
    const transfers = parseEventLogs({ abi: testTokenAbi, eventName: 'Transfer', logs: mined.logs });
    expect(transfers.map((l) => l.args)).toEqual([{ from: payer.address, to: getAddress(recipient), value: PRICE }]);
    expect(await chain.publicClient.getBalance({ address: payer.address })).toBe(0n);
    const row = await web.database.db.kysely
      .selectFrom('payment_transactions')
      .selectAll()
      .where('tx_hash', '=', txHash)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ purpose: 'mpp', payer: payer.address.toLowerCase(), amount_atomic: PRICE.toString() });

    // The same credential again: the spec's refusal (402 payment_required with a fresh challenge), nothing moves.
    expect(sent).toMatch(/^Payment [A-Za-z0-9_-]+$/);
    const replay = await post({ authorization: sent! });
    expect(replay.status).toBe(402);
    expect(replay.body).toMatchObject({ error: 'payment_required', reason: 'challenge already used' });
    expect(Challenge.deserialize(replay.headers.get('www-authenticate')!).id).toBe(replay.body.mpp.nonce);
    expect(await balanceOf(recipient)).toBe(recipientBefore + PRICE);
  });

  it('a credential for a lower amount or another recipient is refused and moves nothing; the challenge still takes a good one', async () => {
    const { parsed } = await challenge();
    const recipientBefore = await balanceOf(recipient);
    const cheaper = { ...parsed, request: { ...parsed.request, amount: (PRICE / 2n).toString() } };
    const cheap = await post({ authorization: await credentialFor(cheaper) });
    expect(cheap.status).toBe(402);
    expect(cheap.body).toMatchObject({ error: 'payment_required', reason: 'amount below the price' });

    const elsewhere = { ...parsed, request: { ...parsed.request, recipient: chain.accounts[4]!.address } };
    const diverted = await post({ authorization: await credentialFor(elsewhere) });
    expect(diverted.body).toMatchObject({ error: 'payment_required', reason: 'authorization pays another recipient' });

    // Signed for another server (realm): the authorization's nonce names another challenge.
    const otherRealm = await post({ authorization: await credentialFor({ ...parsed, realm: 'evil.example' }) });
    expect(otherRealm.body).toMatchObject({ error: 'payment_required', reason: 'authorization is for another challenge' });

    // A signature by someone else than `from`: the token refuses it in simulation, before anything is sent.
    const forged = JSON.parse(Buffer.from((await credentialFor(parsed)).slice('Payment '.length), 'base64url').toString('utf8')) as {
      payload: { from: string };
    };
    forged.payload.from = chain.accounts[3]!.address;
    const impostor = await post({ authorization: `Payment ${Buffer.from(JSON.stringify(forged)).toString('base64url')}` });
    expect(impostor.body).toMatchObject({
      error: 'payment_required',
      reason: 'authorization refused by the token: Token: invalid signature',
    });

    expect(await balanceOf(recipient)).toBe(recipientBefore);
    const ok = await post({ authorization: await credentialFor(parsed) });
    expect(ok.status).toBe(200);
    expect(await balanceOf(recipient)).toBe(recipientBefore + PRICE);
  });

  it('concurrent presentations of one credential settle once', async () => {
    const { parsed } = await challenge();
    const authorization = await credentialFor(parsed);
    const recipientBefore = await balanceOf(recipient);
    const answers = await Promise.all([1, 2, 3].map(() => post({ authorization })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 402, 402]);
    for (const a of answers.filter((a) => a.status === 402)) expect(a.body.reason).toBe('challenge already used');
    expect(await balanceOf(recipient)).toBe(recipientBefore + PRICE);
  });

  it('a plugin that fails releases the credential, which then pays again without a second transfer', async () => {
    const { parsed } = await challenge();
    const authorization = await credentialFor(parsed);
    const recipientBefore = await balanceOf(recipient);
    const failed = await post({ authorization }, brokenWeb);
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(await balanceOf(recipient)).toBe(recipientBefore + PRICE);

    const retried = await post({ authorization });
    expect(retried.status).toBe(200);
    expect(Receipt.deserialize(retried.headers.get('payment-receipt')!).reference).toBe(retried.body.payment.receipt);
    expect(await balanceOf(recipient)).toBe(recipientBefore + PRICE);
    expect((await post({ authorization })).body.reason).toBe('challenge already used');
  });

  describe('without HTTP (chargeForPlugin)', () => {
    const charge = (headers: Record<string, string>, d: ChargeDeps = deps, over: Partial<ChargeRequest> = {}) =>
      chargeForPlugin(d, { user: null, headers, plugin: 'generate-text', pluginAuth: false, priceUsd: '0.01', ip: '127.0.0.1', ...over });
    async function refusal(promise: Promise<unknown>): Promise<PaymentError> {
      const err = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PaymentError);
      return err as PaymentError;
    }
    const configWith = (payments: Partial<NonNullable<WebConfig['payments']>>): ChargeDeps => ({
      ...deps,
      config: { ...web.config, payments: { ...web.config.payments!, ...payments } } as WebConfig,
    });
    const parsedChallenge = (err: PaymentError) => Challenge.deserialize(err.headers['WWW-Authenticate']!);

    it('an unreachable chain is 503 and frees the challenge: the same credential pays once it is back', async () => {
      const parsed = parsedChallenge(await refusal(charge({ 'x-payment-method': 'mpp' })));
      const authorization = await credentialFor(parsed);
      const down = configWith({ rpcUrl: `http://127.0.0.1:${await closedPort()}` });
      const unreachable = await refusal(charge({ authorization }, down));
      expect(unreachable.statusCode).toBe(503);
      expect(unreachable.body.error).toBe('payment_unavailable');
      const paid = await charge({ authorization });
      expect(paid.method).toBe('mpp');
      expect(Receipt.deserialize(paid.headers['Payment-Receipt']!).reference).toBe(paid.receipt);
    });

    it('a settlement the RPC cannot confirm is 503; the same credential then pays from it, sending nothing twice', async () => {
      const rpc = await flakyRpc(chain.rpcUrl);
      try {
        rpc.failing.add('eth_getTransactionReceipt');
        const parsed = parsedChallenge(await refusal(charge({ 'x-payment-method': 'mpp' })));
        const authorization = await credentialFor(parsed);
        const recipientBefore = await balanceOf(recipient);
        const lost = await refusal(charge({ authorization }, configWith({ rpcUrl: rpc.url })));
        expect(lost.statusCode).toBe(503);
        expect(lost.body.error).toBe('payment_unavailable');
        // The settlement went out and paid; the challenge keeps its hash, unused.
        expect(await balanceOf(recipient)).toBe(recipientBefore + PRICE);
        const row = await web.database.db.kysely
          .selectFrom('payment_challenges')
          .select(['used_at', 'tx_hash'])
          .where('nonce', '=', parsed.id)
          .executeTakeFirstOrThrow();
        expect(row.used_at).toBeNull();
        expect(row.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);

        const paid = await charge({ authorization });
        expect(paid.receipt).toBe(row.tx_hash);
        expect(await balanceOf(recipient)).toBe(recipientBefore + PRICE);
        expect((await refusal(charge({ authorization }))).body.reason).toBe('challenge already used');
      } finally {
        await rpc.close();
      }
    });

    it('an expired challenge and one of another plugin are refused', async () => {
      const issuedAt = Date.now();
      const parsed = parsedChallenge(await refusal(charge({ 'x-payment-method': 'mpp' }, { ...deps, clock: () => issuedAt })));
      const authorization = await credentialFor(parsed);
      const late = await refusal(charge({ authorization }, { ...deps, clock: () => issuedAt + MPP_CHALLENGE_TTL_MS + 1 }));
      expect(late.body).toMatchObject({ error: 'payment_required', reason: 'challenge expired' });
      const tts = await refusal(charge({ authorization }, deps, { plugin: 'tts', priceUsd: '0.03' }));
      expect(tts.body.reason).toBe('challenge is for another plugin');
    });

    it('with PAYMENT_REQUIRE_MEMO the settlement carries the challenge memo and pays', async () => {
      const strict = configWith({ requireMemo: true });
      const err = await refusal(charge({ 'x-payment-method': 'mpp' }, strict));
      const paid = await charge({ authorization: await credentialFor(parsedChallenge(err)) }, strict);
      const tx = await chain.publicClient.getTransaction({ hash: paid.receipt as Hex });
      expect(tx.input.endsWith((err.body.mpp as { memo: Hex }).memo.slice(2))).toBe(true);
    });

    it('without a settlement account the challenge has only the spec parameters and a standard credential is refused', async () => {
      const parsed = parsedChallenge(await refusal(charge({ 'x-payment-method': 'mpp' })));
      const authorization = await credentialFor(parsed);
      const off = configWith({ settlerKey: undefined });
      const err = await refusal(charge({ 'x-payment-method': 'mpp' }, off));
      expect(err.headers['WWW-Authenticate']).not.toMatch(/\b(id|realm|method|intent|request)=/);
      expect(() => Challenge.deserialize(err.headers['WWW-Authenticate']!)).toThrow('Missing request parameter');
      const refused = await refusal(charge({ authorization }, off));
      expect(refused.body.reason).toBe('evm authorization credentials are not accepted here');
    });
  });
});
