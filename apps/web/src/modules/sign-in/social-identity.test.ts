import { createHmac } from 'node:crypto';
import {
  closedPort,
  type RunningService,
  type TestChain,
  listen,
  request,
  startSocialVerifier,
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

const VERIFY = '/api/auth/social-identity/verify';
const REFRESH = '/api/auth/social-identity/refresh';
const SECRET = 'social-session-secret-for-tests';
const DAY = 24 * 60 * 60 * 1000;
const GOOD = `fid-token-${'a'.repeat(80)}`;
const NO_FID = 'token-without-fid';

/** The token's two parts, its claims, and whether the signature is HMAC-SHA256 of the first part under `secret`. */
function inspect(token: string, secret = SECRET) {
  const [data, signature] = token.split('.') as [string, string];
  return {
    claims: JSON.parse(Buffer.from(data, 'base64url').toString('utf8')),
    signedWithSecret: createHmac('sha256', secret).update(data).digest('base64url') === signature,
  };
}

// Spec §4.1 social identity, §7 (403 gate-token failure), §8 (threshold 1,250,000), §9 (signed session tokens).
describe('social identity: verify and refresh', () => {
  let chain: TestChain;
  let verifier: Awaited<ReturnType<typeof startSocialVerifier>>;
  let web: TestWeb;
  let token: Address;
  let holder: Address;
  let smallHolder: Address;
  let now = Date.parse('2030-01-01T00:00:00Z');
  const variants: RunningService[] = [];

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
    verifier = await startSocialVerifier({ [GOOD]: { fid: 4242, username: 'alice' }, [NO_FID]: {} });
    token = await chain.deployToken();
    web = await startWeb(
      { GATING_RPC_URL: chain.rpcUrl, GATE_TOKEN_ADDRESS: token, SOCIAL_VERIFY_URL: verifier.url, SOCIAL_SESSION_SECRET: SECRET },
      { clock: () => now },
    );
    const factory = await chain.deployWalletFactory();
    holder = await chain.deployWallet(factory, chain.accounts[1]!.address, walletSalt(1));
    smallHolder = await chain.walletAddress(factory, chain.accounts[1]!.address, walletSalt(2));
    await chain.mintTokens(token, holder, '1250000');
    await chain.mintTokens(token, smallHolder, '10');
  });
  afterAll(async () => {
    for (const v of variants) await v.close();
    await web?.close();
    await verifier?.close();
    await chain?.close();
  });

  const verify = (body: unknown, url = web.url) => request(`${url}${VERIFY}`, { json: body });
  const refresh = (sessionToken: unknown) => request(`${web.url}${REFRESH}`, { json: { sessionToken } });
  const refused = (res: { status: number; body: unknown }) => ({ status: res.status, body: res.body });

  it('GET on both paths describes the POST endpoint', async () => {
    const v = await request(`${web.url}${VERIFY}`);
    const r = await request(`${web.url}${REFRESH}`);
    expect(v.status).toBe(200);
    expect(v.body).toMatchObject({ endpoint: VERIFY, method: 'POST', body: { fidToken: expect.stringContaining('required') } });
    expect(v.body.body.address).toContain('optional');
    expect(typeof v.body.description).toBe('string');
    expect(r.body).toMatchObject({ endpoint: REFRESH, method: 'POST', body: { sessionToken: expect.any(String) } });
  });

  it('verifies an identity token without an address: basic access, HMAC-signed 24-hour token', async () => {
    const res = await verify({ fidToken: GOOD });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      sessionToken: expect.stringMatching(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/),
      address: null,
      message: 'Identity verified',
      tokenGated: false,
      accessLevel: 'basic',
    });
    expect(verifier.received.at(-1)).toBe(GOOD);
    const { claims, signedWithSecret } = inspect(res.body.sessionToken);
    expect(signedWithSecret).toBe(true);
    expect(claims).toEqual({ fidToken: GOOD.slice(0, 64), address: null, verified: true, iat: now, exp: now + DAY, fid: 4242 });
  });

  it('verifies with a wallet that holds enough gate tokens: gated access, address in the claims', async () => {
    const res = await verify({ fidToken: NO_FID, address: holder });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, address: holder.toLowerCase(), tokenGated: true, accessLevel: 'gated' });
    const { claims } = inspect(res.body.sessionToken);
    expect(claims).toEqual({ fidToken: NO_FID, address: holder.toLowerCase(), verified: true, iat: now, exp: now + DAY });
  });

  it('403 Insufficient gate token balance with required and minBalance for a wallet below the threshold', async () => {
    const res = await verify({ fidToken: GOOD, address: smallHolder });
    expect(refused(res)).toEqual({
      status: 403,
      body: {
        error: 'Insufficient gate token balance',
        required: '1250000',
        minBalance: (1_250_000n * 10n ** 18n).toString(),
        balance: '10',
      },
    });
  });

  it('401 Missing identity token without fidToken (or with an empty one, or no JSON body)', async () => {
    for (const res of [
      await verify({}),
      await verify({ fidToken: '', address: holder }),
      await request(`${web.url}${VERIFY}`, { method: 'POST' }),
    ]) {
      expect(refused(res)).toEqual({ status: 401, body: { error: 'Missing identity token' } });
    }
  });

  it('401 Invalid identity token for a token the verification endpoint refuses', async () => {
    const res = await verify({ fidToken: 'forged-token' });
    expect(refused(res)).toEqual({ status: 401, body: { error: 'Invalid identity token' } });
    expect(verifier.received.at(-1)).toBe('forged-token');
  });

  it('400 Invalid address for a malformed wallet address', async () => {
    expect(refused(await verify({ fidToken: GOOD, address: '0xnope' }))).toEqual({ status: 400, body: { error: 'Invalid address' } });
  });

  it('refreshes a valid token into a fresh one with a later expiry', async () => {
    const issued = (await verify({ fidToken: GOOD, address: holder })).body.sessionToken;
    const issuedAt = now;
    now += 60 * 60 * 1000;
    const res = await refresh(issued);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, sessionToken: expect.any(String), expiresAt: new Date(now + DAY).toISOString() });
    expect(res.body.sessionToken).not.toBe(issued);
    const { claims, signedWithSecret } = inspect(res.body.sessionToken);
    expect(signedWithSecret).toBe(true);
    expect(claims).toEqual({
      fidToken: GOOD.slice(0, 64),
      address: holder.toLowerCase(),
      verified: true,
      iat: now,
      exp: now + DAY,
      fid: 4242,
    });
    expect(claims.exp).toBeGreaterThan(issuedAt + DAY);
    // The refreshed token refreshes in turn.
    expect((await refresh(res.body.sessionToken)).status).toBe(200);
  });

  it('401 Invalid session token for a forged signature, a tampered payload or another secret', async () => {
    const issued: string = (await verify({ fidToken: GOOD })).body.sessionToken;
    const [data, signature] = issued.split('.') as [string, string];
    const flipped = `${data}.${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
    const { claims } = inspect(issued);
    const longer = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 365 * DAY })).toString('base64url');
    const otherSecret = createHmac('sha256', 'some-other-secret').update(data).digest('base64url');
    for (const forged of [flipped, `${longer}.${signature}`, `${data}.${otherSecret}`, `${data}.${signature}.x`, `${data}.`]) {
      expect(refused(await refresh(forged))).toEqual({ status: 401, body: { error: 'Invalid session token' } });
    }
  });

  it('401 for an old unsigned (plain base64 JSON) token, asking to verify again', async () => {
    const legacy = Buffer.from(JSON.stringify({ fidToken: GOOD.slice(0, 64), verified: true, iat: now, exp: now + DAY })).toString(
      'base64',
    );
    const res = await refresh(legacy);
    expect(refused(res)).toEqual({
      status: 401,
      body: { error: 'Session token format is no longer valid. Please refresh your session by verifying again.' },
    });
  });

  it('401 Session token expired once 24 hours have passed', async () => {
    const issued = (await verify({ fidToken: GOOD })).body.sessionToken;
    now += DAY - 1;
    expect((await refresh(issued)).status).toBe(200);
    now += 1;
    expect(refused(await refresh(issued))).toEqual({ status: 401, body: { error: 'Session token expired' } });
  });

  it('401 Missing session token without one', async () => {
    expect(refused(await refresh(undefined))).toEqual({ status: 401, body: { error: 'Missing session token' } });
  });

  describe('other configurations', () => {
    it('503 without a verification endpoint', async () => {
      const off = await startVariant({ SOCIAL_SESSION_SECRET: SECRET });
      expect(refused(await verify({ fidToken: GOOD }, off.url))).toEqual({
        status: 503,
        body: { error: 'Social identity is not configured' },
      });
    });

    it('502 Identity verification failed when the verification endpoint is down', async () => {
      const down = await startVariant({
        SOCIAL_VERIFY_URL: `http://127.0.0.1:${await closedPort()}/verify`,
        SOCIAL_SESSION_SECRET: SECRET,
      });
      expect(refused(await verify({ fidToken: GOOD }, down.url))).toEqual({ status: 502, body: { error: 'Identity verification failed' } });
    });

    it('skips the gate when gating is not configured: basic access with the address kept', async () => {
      const ungated = await startVariant({ SOCIAL_VERIFY_URL: verifier.url, SOCIAL_SESSION_SECRET: SECRET });
      const res = await verify({ fidToken: GOOD, address: smallHolder }, ungated.url);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ address: smallHolder.toLowerCase(), tokenGated: false, accessLevel: 'basic' });
    });

    it('a token signed under another SOCIAL_SESSION_SECRET is refused', async () => {
      const other = await startVariant({ SOCIAL_VERIFY_URL: verifier.url, SOCIAL_SESSION_SECRET: 'a-different-secret-value' });
      const foreign = (await verify({ fidToken: GOOD }, other.url)).body.sessionToken;
      expect(inspect(foreign, 'a-different-secret-value').signedWithSecret).toBe(true);
      expect(refused(await refresh(foreign))).toEqual({ status: 401, body: { error: 'Invalid session token' } });
    });
  });
});
