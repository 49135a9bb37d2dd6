import {
  closedPort,
  type RunningService,
  type TestChain,
  listen,
  request,
  startTestChain,
  testCounters,
  testEnv,
  walletSalt,
} from '@aop/testing';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { loadWebConfig } from '../../config.js';
import { type TestWeb, startWeb } from '../../web.test-support.js';

const PATH = '/api/auth/token-gating/verify';

// Spec §4.1 token gating, §8 gate-token threshold 1,250,000, §7 (403/502/503).
describe('token gating: GET|POST /api/auth/token-gating/verify', () => {
  let chain: TestChain;
  let web: TestWeb;
  let token: Address;
  let factory: Address;
  let rich: Address;
  let poor: Address;
  let exact: Address;
  const variants: RunningService[] = [];

  /** Another web service on the same database with a different environment. */
  const startVariant = async (env: Record<string, string>): Promise<RunningService> => {
    const counters = testCounters();
    const running = await listen(
      await buildApp({ config: loadWebConfig(testEnv(web.config.dataDir, env)), db: web.database.db, counters }),
    );
    const variant = {
      ...running,
      async close() {
        await running.close();
        await counters.close();
      },
    };
    variants.push(variant);
    return variant;
  };

  beforeAll(async () => {
    chain = await startTestChain();
    token = await chain.deployToken({ decimals: 18 });
    web = await startWeb({ GATING_RPC_URL: chain.rpcUrl, GATE_TOKEN_ADDRESS: token });
    factory = await chain.deployWalletFactory();
    const owner = chain.accounts[1]!.address;
    // A deployed smart wallet, and two that exist only as CREATE2 addresses: balances are per address either way.
    rich = await chain.deployWallet(factory, owner, walletSalt(1));
    poor = await chain.walletAddress(factory, owner, walletSalt(2));
    exact = await chain.walletAddress(factory, owner, walletSalt(3));
    await chain.mintTokens(token, rich, '2000000.25');
    await chain.mintTokens(token, poor, '1249999.999999999999999999');
    await chain.mintTokens(token, exact, '1250000');
  });
  afterAll(async () => {
    for (const v of variants) await v.close();
    await web?.close();
    await chain?.close();
  });

  it('allows a wallet holding more than 1,250,000 gate tokens (POST body)', async () => {
    const res = await request(`${web.url}${PATH}`, { json: { address: rich } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      address: rich.toLowerCase(),
      allowed: true,
      balance: '2000000.25',
      required: '1250000',
      token,
      chainId: 8453,
    });
  });

  it('allows exactly the threshold (GET query)', async () => {
    const res = await request(`${web.url}${PATH}?address=${exact}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ address: exact.toLowerCase(), allowed: true, balance: '1250000', required: '1250000' });
  });

  it('refuses a wallet one base unit below the threshold, on GET and POST alike', async () => {
    const post = await request(`${web.url}${PATH}`, { json: { address: poor } });
    const get = await request(`${web.url}${PATH}?address=${poor.toLowerCase()}`);
    for (const res of [post, get]) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        address: poor.toLowerCase(),
        allowed: false,
        balance: '1249999.999999999999999999',
        required: '1250000',
        token,
        chainId: 8453,
      });
    }
  });

  it('answers allowed false with balance 0 for an address that never held the token', async () => {
    const res = await request(`${web.url}${PATH}`, { json: { address: chain.accounts[3]!.address } });
    expect(res.body).toMatchObject({ allowed: false, balance: '0' });
  });

  it.each([
    ['POST without an address', () => request(`${web.url}${PATH}`, { json: {} }), 'Missing address'],
    ['GET without an address', () => request(`${web.url}${PATH}`), 'Missing address'],
    ['POST with a malformed address', () => request(`${web.url}${PATH}`, { json: { address: '0x1234' } }), 'Invalid address'],
    ['GET with a malformed address', () => request(`${web.url}${PATH}?address=not-an-address`), 'Invalid address'],
    [
      'POST with a non-JSON body',
      () => request(`${web.url}${PATH}`, { body: 'x', headers: { 'content-type': 'text/plain' } }),
      'Missing address',
    ],
  ])('400 for %s', async (_name, send, error) => {
    const res = await send();
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error } });
  });

  it('scales the threshold by the token decimals (a 6-decimal token)', async () => {
    const usdLike = await chain.deployToken({ name: 'Six', symbol: 'SIX', decimals: 6 });
    await chain.mintTokens(usdLike, rich, '1250000');
    await chain.mintTokens(usdLike, poor, '1249999.999999');
    const six = await startVariant({ GATING_RPC_URL: chain.rpcUrl, GATE_TOKEN_ADDRESS: usdLike });
    const ok = await request(`${six.url}${PATH}`, { json: { address: rich } });
    const short = await request(`${six.url}${PATH}`, { json: { address: poor } });
    expect(ok.body).toMatchObject({ allowed: true, balance: '1250000', token: usdLike });
    expect(short.body).toMatchObject({ allowed: false, balance: '1249999.999999', token: usdLike });
  });

  it('follows GATE_MIN_BALANCE', async () => {
    const lower = await startVariant({ GATING_RPC_URL: chain.rpcUrl, GATE_TOKEN_ADDRESS: token, GATE_MIN_BALANCE: '1000' });
    const res = await request(`${lower.url}${PATH}`, { json: { address: poor } });
    expect(res.body).toMatchObject({ allowed: true, required: '1000' });
  });

  it('503 Token gating is not configured without an RPC URL or a token address', async () => {
    const noToken = await startVariant({ GATING_RPC_URL: chain.rpcUrl });
    const noRpc = await startVariant({ GATE_TOKEN_ADDRESS: token });
    for (const v of [noToken, noRpc]) {
      const res = await request(`${v.url}${PATH}`, { json: { address: rich } });
      expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { error: 'Token gating is not configured' } });
    }
  });

  it('502 Gate check failed when the RPC node is down', async () => {
    const down = await startVariant({ GATING_RPC_URL: `http://127.0.0.1:${await closedPort()}`, GATE_TOKEN_ADDRESS: token });
    const res = await request(`${down.url}${PATH}?address=${rich}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 502, body: { error: 'Gate check failed' } });
  });

  it('502 Gate check failed when the configured token address holds no contract', async () => {
    const wrong = await startVariant({ GATING_RPC_URL: chain.rpcUrl, GATE_TOKEN_ADDRESS: chain.accounts[4]!.address });
    const res = await request(`${wrong.url}${PATH}`, { json: { address: rich } });
    expect({ status: res.status, body: res.body }).toEqual({ status: 502, body: { error: 'Gate check failed' } });
  });
});
