import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  closedPort,
  type RunningService,
  type TestChain,
  listen,
  request,
  startTestChain,
  testCounters,
  testEnv,
  testWalletFactoryAbi,
  walletSalt,
} from '@aop/testing';
import { type Address, type Hex, encodeFunctionData, serializeErc6492Signature } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { type CreateSiweMessageParameters, createSiweMessage, generateSiweNonce } from 'viem/siwe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { loadWebConfig } from '../../config.js';
import { type TestWeb, cookieFrom, startWeb } from '../../web.test-support.js';

const PUBLIC_URL = 'https://app.example.test';
const DOMAIN = 'app.example.test';
const MISSING = 'Missing: address, message, signature';
const ONLY_SMART = 'Only smart-contract wallets are supported';

// Spec §4.1 nonce + wallet-auth, §5 (wallet sign-ins create the session cookie), §9 (POST /api/wallet-auth).
describe('wallet sign-in (SIWE, smart-contract wallets only)', () => {
  let chain: TestChain;
  let web: TestWeb;
  let factory: Address;
  let owner: PrivateKeyAccount;
  let eoa: PrivateKeyAccount;
  let stranger: PrivateKeyAccount;
  let deployedWallet: Address;
  let salt = 100;

  beforeAll(async () => {
    chain = await startTestChain();
    web = await startWeb({ GATING_RPC_URL: chain.rpcUrl, PUBLIC_URL, PRODUCT_NAME: 'acme' });
    [, owner, eoa, stranger] = chain.accounts as [PrivateKeyAccount, PrivateKeyAccount, PrivateKeyAccount, PrivateKeyAccount];
    factory = await chain.deployWalletFactory();
    deployedWallet = await chain.deployWallet(factory, owner.address, walletSalt(1));
  });
  afterAll(async () => {
    await web?.close();
    await chain?.close();
  });

  /** Another web service on the same database with a different environment (no second database to start). */
  const startVariant = async (env: Record<string, string>): Promise<RunningService> => {
    const counters = testCounters();
    const running = await listen(
      await buildApp({ config: loadWebConfig(testEnv(web.config.dataDir, env)), db: web.database.db, counters }),
    );
    return {
      ...running,
      async close() {
        await running.close();
        await counters.close();
      },
    };
  };
  const nonce = async (method: 'GET' | 'POST' = 'GET'): Promise<string> => {
    const res = await request(`${web.url}/api/auth/nonce`, { method });
    expect(res.status).toBe(200);
    return res.body.nonce;
  };
  const message = (address: Address, nonceValue: string, overrides: Partial<CreateSiweMessageParameters> = {}) =>
    createSiweMessage({
      domain: DOMAIN,
      address,
      statement: 'Sign in to acme',
      uri: `${PUBLIC_URL}/login`,
      version: '1',
      chainId: 8453,
      nonce: nonceValue,
      issuedAt: new Date(),
      ...overrides,
    });
  const walletAuth = (body: unknown) => request(`${web.url}/api/wallet-auth`, { json: body });
  const userRow = (wallet: string) =>
    web.database.db.kysely
      .selectFrom('users')
      .select(['id', 'email', 'name', 'wallet_address', 'email_verified_at', 'password_hash'])
      .where('wallet_address', '=', wallet.toLowerCase())
      .executeTakeFirst();
  /** A signed message from the deployed wallet (its owner key signs). */
  const signedByWallet = async (overrides: Partial<CreateSiweMessageParameters> = {}, signer = owner) => {
    const text = message(deployedWallet, await nonce(), overrides);
    return { address: deployedWallet, message: text, signature: await signer.signMessage({ message: text }) };
  };
  const expectRefused = (res: { status: number; body: unknown }, status: number, error: string) => {
    expect({ status: res.status, body: res.body }).toEqual({ status, body: { error } });
  };

  it('GET and POST /api/auth/nonce each answer a fresh 96-character nonce', async () => {
    const [a, b, c] = [await nonce('GET'), await nonce('POST'), await nonce('GET')];
    for (const n of [a, b, c]) expect(n).toMatch(/^[a-zA-Z0-9]{96}$/);
    expect(new Set([a, b, c]).size).toBe(3);
  });

  it('signs in a deployed ERC-1271 wallet: session cookie, synthetic verified email, Wallet: name', async () => {
    const body = await signedByWallet();
    const res = await walletAuth(body);
    expect(res.status).toBe(200);
    const lower = deployedWallet.toLowerCase();
    const name = `Wallet:${lower.slice(0, 6)}...${lower.slice(-4)}`;
    expect(res.body).toEqual({ ok: true, user: { id: expect.stringMatching(/^usr_/), name } });
    const cookie = cookieFrom(res.headers, 'service-session');
    expect(cookie).toMatch(/^service-session=[0-9a-f]{64}$/);
    expect(res.headers.getSetCookie()[0]).toMatch(/HttpOnly/i);

    const session = await request(`${web.url}/api/auth/session`, { headers: { cookie: cookie! } });
    expect(session.body).toEqual({ user: { id: res.body.user.id, name, email: `${lower}@wallet.acme`, isAdmin: false } });

    const row = await userRow(deployedWallet);
    expect(row).toMatchObject({ id: res.body.user.id, wallet_address: lower, email: `${lower}@wallet.acme`, password_hash: null });
    expect(row?.email_verified_at).toBeInstanceOf(Date);
    const audit = await web.database.db.kysely
      .selectFrom('audit_log')
      .select(['action', 'metadata'])
      .where('user_id', '=', res.body.user.id)
      .where('action', '=', 'session.create')
      .execute();
    expect(audit).toEqual([{ action: 'session.create', metadata: expect.objectContaining({ method: 'wallet', walletKind: 'contract' }) }]);
  });

  it('gives the same wallet the same account on every sign-in (addresses compared case-insensitively)', async () => {
    const first = await walletAuth(await signedByWallet());
    const again = await signedByWallet();
    const second = await walletAuth({ ...again, address: deployedWallet.toLowerCase() });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body.user.id).toBe(first.body.user.id);
    expect(cookieFrom(second.headers, 'service-session')).not.toBe(cookieFrom(first.headers, 'service-session'));
    const rows = await web.database.db.kysely
      .selectFrom('users')
      .select('id')
      .where('email', '=', `${deployedWallet.toLowerCase()}@wallet.acme`)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('two first sign-ins of one wallet at the same moment end in one account', async () => {
    const wallet = await chain.deployWallet(factory, owner.address, walletSalt(salt++));
    const bodies = await Promise.all(
      [1, 2, 3].map(async () => {
        const text = message(wallet, await nonce());
        return { address: wallet, message: text, signature: await owner.signMessage({ message: text }) };
      }),
    );
    const results = await Promise.all(bodies.map((b) => walletAuth(b)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(new Set(results.map((r) => r.body.user.id)).size).toBe(1);
    const rows = await web.database.db.kysely
      .selectFrom('users')
      .select(['id', 'referral_code'])
      .where('wallet_address', '=', wallet.toLowerCase())
      .execute();
    expect(rows).toEqual([{ id: results[0]!.body.user.id, referral_code: expect.stringMatching(/^[A-Z2-9]{8}$/) }]);
  });

  it('signs in an undeployed (counterfactual) wallet with an ERC-6492 signature, without deploying it', async () => {
    const s = walletSalt(2);
    const wallet = await chain.walletAddress(factory, owner.address, s);
    expect(await chain.getCode(wallet)).toBe('0x');
    const text = message(wallet, await nonce());
    const signature = serializeErc6492Signature({
      address: factory,
      data: encodeFunctionData({ abi: testWalletFactoryAbi, functionName: 'deploy', args: [owner.address, s] }),
      signature: await owner.signMessage({ message: text }),
    });
    const res = await walletAuth({ address: wallet, message: text, signature });
    expect(res.status).toBe(200);
    expect(res.body.user.name).toBe(`Wallet:${wallet.toLowerCase().slice(0, 6)}...${wallet.slice(-4).toLowerCase()}`);
    expect(cookieFrom(res.headers, 'service-session')).toBeDefined();
    expect(await chain.getCode(wallet)).toBe('0x');
    expect((await userRow(wallet))?.id).toBe(res.body.user.id);
  });

  it('refuses a plain EOA even with a valid signature, and creates no account', async () => {
    const text = message(eoa.address, await nonce());
    const res = await walletAuth({ address: eoa.address, message: text, signature: await eoa.signMessage({ message: text }) });
    expectRefused(res, 401, ONLY_SMART);
    expect(cookieFrom(res.headers, 'service-session')).toBeUndefined();
    expect(await userRow(eoa.address)).toBeUndefined();
  });

  it('refuses a forged ERC-6492 wrapper around an EOA signature', async () => {
    const text = message(eoa.address, await nonce());
    const inner = await eoa.signMessage({ message: text });
    // The wrapper names the real factory, deploying a wallet the EOA owns, but at another address.
    const signature = serializeErc6492Signature({
      address: factory,
      data: encodeFunctionData({ abi: testWalletFactoryAbi, functionName: 'deploy', args: [eoa.address, walletSalt(3)] }),
      signature: inner,
    });
    expectRefused(await walletAuth({ address: eoa.address, message: text, signature }), 401, 'Invalid signature');
    // A wrapper whose "factory" call does nothing at all.
    const text2 = message(eoa.address, await nonce());
    const bare = serializeErc6492Signature({ address: eoa.address, data: '0x', signature: await eoa.signMessage({ message: text2 }) });
    expectRefused(await walletAuth({ address: eoa.address, message: text2, signature: bare }), 401, 'Invalid signature');
    expect(await userRow(eoa.address)).toBeUndefined();
  });

  it('refuses an EOA with an EIP-7702 delegation to a wallet contract', async () => {
    const delegated = chain.accounts[4]!;
    await chain.setCode(delegated.address, `0xef0100${deployedWallet.slice(2)}` as Hex);
    const text = message(delegated.address, await nonce());
    const res = await walletAuth({ address: delegated.address, message: text, signature: await delegated.signMessage({ message: text }) });
    expectRefused(res, 401, ONLY_SMART);
  });

  it('refuses a signature by someone other than the wallet owner', async () => {
    expectRefused(await walletAuth(await signedByWallet({}, stranger)), 401, 'Invalid signature');
  });

  it('refuses a counterfactual wallet signed by someone other than its owner', async () => {
    const s = walletSalt(4);
    const wallet = await chain.walletAddress(factory, owner.address, s);
    const text = message(wallet, await nonce());
    const signature = serializeErc6492Signature({
      address: factory,
      data: encodeFunctionData({ abi: testWalletFactoryAbi, functionName: 'deploy', args: [owner.address, s] }),
      signature: await stranger.signMessage({ message: text }),
    });
    expectRefused(await walletAuth({ address: wallet, message: text, signature }), 401, 'Invalid signature');
  });

  it.each([
    ['a wrong domain', { domain: 'evil.example' }, 'Invalid SIWE message: wrong domain'],
    ['the gating domain on another port', { domain: `${DOMAIN}:8443` }, 'Invalid SIWE message: wrong domain'],
    ['a wrong chain id', { chainId: 1 }, 'Invalid SIWE message: wrong chain id'],
    ['a URI on another origin', { uri: 'https://evil.example/login' }, 'Invalid SIWE message: wrong URI'],
    ['an expired message', { expirationTime: new Date(Date.now() - 1_000) }, 'Invalid SIWE message: expired'],
    ['a message not valid yet', { notBefore: new Date(Date.now() + 3_600_000) }, 'Invalid SIWE message: not yet valid'],
    ['a message issued in the future', { issuedAt: new Date(Date.now() + 3_600_000) }, 'Invalid SIWE message: issued in the future'],
  ] as const)('401 for %s, and the nonce stays usable', async (_name, overrides, error) => {
    const body = await signedByWallet(overrides);
    expectRefused(await walletAuth(body), 401, error);
    // Refused before the nonce was consumed: a correct message with the same nonce still signs in.
    const nonceValue = body.message.match(/Nonce: (\w+)/)![1]!;
    const text = message(deployedWallet, nonceValue);
    expect(
      (await walletAuth({ address: deployedWallet, message: text, signature: await owner.signMessage({ message: text }) })).status,
    ).toBe(200);
  });

  it('401 Invalid or expired nonce for a reused nonce', async () => {
    const body = await signedByWallet();
    expect((await walletAuth(body)).status).toBe(200);
    expectRefused(await walletAuth(body), 401, 'Invalid or expired nonce');
  });

  it('401 Invalid or expired nonce for a nonce the server never issued', async () => {
    const text = message(deployedWallet, generateSiweNonce());
    expectRefused(
      await walletAuth({ address: deployedWallet, message: text, signature: await owner.signMessage({ message: text }) }),
      401,
      'Invalid or expired nonce',
    );
  });

  it('401 Signed wallet address mismatch when the message names another address', async () => {
    const body = await signedByWallet();
    expectRefused(await walletAuth({ ...body, address: eoa.address }), 401, 'Signed wallet address mismatch');
  });

  it('400 Missing nonce in signed message for a message that is not SIWE', async () => {
    expectRefused(
      await walletAuth({ address: deployedWallet, message: 'please let me in', signature: await owner.signMessage({ message: 'x' }) }),
      400,
      'Missing nonce in signed message',
    );
  });

  it.each([
    ['no address', ['message', 'signature']],
    ['no message', ['address', 'signature']],
    ['no signature', ['address', 'message']],
    ['an empty signature', ['address', 'message', 'signature=']],
  ])('400 %s', async (_name, keep) => {
    const full = await signedByWallet();
    const body: Record<string, string> = {};
    for (const k of keep) {
      if (k.endsWith('=')) body[k.slice(0, -1)] = '';
      else body[k] = full[k as keyof typeof full];
    }
    expectRefused(await walletAuth(body), 400, MISSING);
  });

  it('400 for a missing or non-JSON body', async () => {
    expectRefused(await request(`${web.url}/api/wallet-auth`, { method: 'POST' }), 400, MISSING);
    const res = await request(`${web.url}/api/wallet-auth`, { body: 'address=0x1', headers: { 'content-type': 'text/plain' } });
    expectRefused(res, 400, MISSING);
  });

  it('403 Account disabled for a wallet whose account protection disabled it', async () => {
    const s = walletSalt(salt++);
    const wallet = await chain.deployWallet(factory, owner.address, s);
    const text = message(wallet, await nonce());
    const first = await walletAuth({ address: wallet, message: text, signature: await owner.signMessage({ message: text }) });
    expect(first.status).toBe(200);
    await web.database.db.kysely.updateTable('users').set({ disabled_at: new Date() }).where('id', '=', first.body.user.id).execute();
    const text2 = message(wallet, await nonce());
    const res = await walletAuth({ address: wallet, message: text2, signature: await owner.signMessage({ message: text2 }) });
    expectRefused(res, 403, 'Account disabled');
    expect(cookieFrom(res.headers, 'service-session')).toBeUndefined();
  });

  it('links a wallet to the existing account with its wallet-derived email', async () => {
    const s = walletSalt(salt++);
    const wallet = await chain.deployWallet(factory, owner.address, s);
    const id = 'usr_existing_wallet_account';
    await web.database.db.kysely
      .insertInto('users')
      .values({ id, email: `${wallet.toLowerCase()}@wallet.acme`, name: 'Earlier wallet user' })
      .execute();
    const text = message(wallet, await nonce());
    const res = await walletAuth({ address: wallet, message: text, signature: await owner.signMessage({ message: text }) });
    expect(res.status).toBe(200);
    expect(res.body.user).toEqual({ id, name: 'Earlier wallet user' });
    const row = await userRow(wallet);
    expect(row?.id).toBe(id);
    expect(row?.email_verified_at).toBeInstanceOf(Date);
  });

  describe('without a reachable gating network', () => {
    let unconfigured: RunningService;
    let down: RunningService;
    beforeAll(async () => {
      unconfigured = await startVariant({ PUBLIC_URL });
      down = await startVariant({ PUBLIC_URL, GATING_RPC_URL: `http://127.0.0.1:${await closedPort()}` });
    });
    afterAll(async () => {
      await unconfigured?.close();
      await down?.close();
    });

    it('503 Wallet sign-in is not configured without GATING_RPC_URL', async () => {
      const body = await signedByWallet();
      expectRefused(await request(`${unconfigured.url}/api/wallet-auth`, { json: body }), 503, 'Wallet sign-in is not configured');
    });

    it('500 Auth failed when the RPC node cannot be reached (not "invalid signature")', async () => {
      const n = (await request(`${down.url}/api/auth/nonce`)).body.nonce;
      const text = message(deployedWallet, n);
      const res = await request(`${down.url}/api/wallet-auth`, {
        json: { address: deployedWallet, message: text, signature: await owner.signMessage({ message: text }) },
      });
      expectRefused(res, 500, 'Auth failed');
    });
  });

  it('deploys contracts from artifacts that compile.mjs regenerates identically from the Solidity sources', async () => {
    const script = fileURLToPath(new URL('../../../../../packages/testing/contracts/compile.mjs', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [script, '--check']);
    expect(stdout).toContain('artifacts.json matches the sources');
  });
});
