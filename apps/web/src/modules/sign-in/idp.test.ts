import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { decryptSecret, parseEncryptionKey } from '@aop/core';
import { type FakeOidcProvider, type OidcTestChoice, request, startOidcProvider } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, cookieFrom, login, register, startWeb, verifyEmail } from '../../web.test-support.js';

// Spec §4.1 GET /api/auth/idp and its callback (six steps, error table), §2.1 linking by email, §3.3 session, §5.
const PUBLIC_URL = 'https://app.example.test';
const REDIRECT_URI = `${PUBLIC_URL}/api/auth/idp/callback`;
const PASSWORD = 'correct horse battery';

const idpEnv = (idp: FakeOidcProvider, overrides: Record<string, string> = {}) => ({
  PUBLIC_URL,
  IDP_ISSUER: idp.issuer,
  IDP_CLIENT_ID: idp.clientId,
  IDP_CLIENT_SECRET: idp.clientSecret,
  ...overrides,
});

/** `GET /api/auth/idp`: the provider URL it redirects to and the state cookie it binds to the browser. */
async function begin(web: TestWeb) {
  const res = await request(`${web.url}/api/auth/idp`);
  expect(res.status).toBe(302);
  const location = new URL(res.headers.get('location')!);
  const stateCookie = cookieFrom(res.headers, 'service-idp-state');
  expect(stateCookie).toBeDefined();
  return { location, stateCookie: stateCookie!, setCookie: res.headers.getSetCookie() };
}

/** The browser arriving at our callback with what the provider put on the redirect URI. */
async function arrive(web: TestWeb, back: URL, cookie?: string) {
  expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
  return request(`${web.url}/api/auth/idp/callback${back.search}`, cookie ? { headers: { cookie } } : {});
}

describe('identity provider sign-in (OIDC)', () => {
  let idp: FakeOidcProvider;
  let web: TestWeb;

  beforeAll(async () => {
    idp = await startOidcProvider({ redirectUris: [REDIRECT_URI] });
    web = await startWeb(idpEnv(idp));
  });
  afterAll(async () => {
    await web?.close();
    await idp?.close();
  });

  const account = (extra: { email?: string | null; emailVerified?: boolean; name?: string } = {}) => {
    const sub = `sub-${randomUUID()}`;
    const email = extra.email === undefined ? `${sub}@example.com` : extra.email;
    idp.accounts.set(sub, {
      sub,
      ...(email !== null ? { email, emailVerified: extra.emailVerified ?? true } : {}),
      name: extra.name ?? 'Grace Hopper',
      picture: `https://pictures.example.test/${sub}.png`,
    });
    return { sub, email };
  };

  /** The whole round trip: our redirect, the provider's login and consent, our callback. */
  async function signInThrough(choice: OidcTestChoice, target = web) {
    const { location, stateCookie } = await begin(target);
    const back = await idp.authorize(location.href, choice);
    const res = await arrive(target, back, stateCookie);
    return { res, back, stateCookie, session: cookieFrom(res.headers, 'service-session') };
  }

  const sessionUser = async (cookie: string | undefined) =>
    (await request(`${web.url}/api/auth/session`, { headers: { cookie: cookie ?? '' } })).body.user;
  const links = (sub: string) =>
    web.database.db.kysely.selectFrom('oauth_accounts').selectAll().where('provider_account_id', '=', sub).execute();

  it("redirects to the provider's account selector: openid email profile, offline access, select_account, PKCE S256, state, nonce", async () => {
    const { location, stateCookie, setCookie } = await begin(web);
    expect(`${location.origin}${location.pathname}`).toBe(`${idp.issuer}/auth`);
    const q = location.searchParams;
    expect(q.get('scope')?.split(' ').sort()).toEqual(['email', 'openid', 'profile']);
    expect(q.get('prompt')).toBe('select_account');
    expect(q.get('access_type')).toBe('offline');
    expect(q.get('response_type')).toBe('code');
    expect(q.get('client_id')).toBe(idp.clientId);
    expect(q.get('redirect_uri')).toBe(REDIRECT_URI);
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toMatch(/^[0-9a-f]{64}$/);
    expect(q.get('nonce')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    // The state and the secrets of the request stay on the server; the browser only gets the state back.
    expect(stateCookie).toBe(`service-idp-state=${q.get('state')}`);
    const line = setCookie.find((c) => c.startsWith('service-idp-state='))!;
    expect(line).toMatch(/HttpOnly/i);
    expect(line).toMatch(/SameSite=Lax/i);
    expect(line).toMatch(/Path=\/api\/auth\/idp\/callback/);
    expect(location.href).not.toContain('code_verifier');
    // Two sign-ins, two states.
    expect((await begin(web)).location.searchParams.get('state')).not.toBe(q.get('state'));
  });

  it('first sign-in creates the user, seals the provider tokens, sets the session cookie and lands on /dashboard', async () => {
    const { sub, email } = account({ name: 'Grace Hopper' });
    const requestsBefore = idp.tokenRequests.length;
    const { res, session } = await signInThrough({ signInAs: sub });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/dashboard');
    expect(session).toBeDefined();
    const line = res.headers.getSetCookie().find((c) => c.startsWith('service-session='))!;
    expect(line).toMatch(/HttpOnly/i);
    expect(line).toMatch(/SameSite=Lax/i);
    expect(idp.tokenRequests.slice(requestsBefore)).toEqual([{ grantType: 'authorization_code', status: 200 }]);

    const user = await sessionUser(session);
    expect(user).toEqual({ id: expect.stringMatching(/^usr_/), name: 'Grace Hopper', email, isAdmin: false });
    const row = await web.database.db.kysely.selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow();
    expect(row.password_hash).toBeNull();
    expect(row.email_verified_at).toBeInstanceOf(Date);

    const [link, ...more] = await links(sub);
    expect(more).toEqual([]);
    expect(link).toMatchObject({
      user_id: user.id,
      provider: 'idp',
      email,
      metadata: { name: 'Grace Hopper', picture: `https://pictures.example.test/${sub}.png` },
    });
    expect(link!.scope?.split(' ')).toEqual(expect.arrayContaining(['openid', 'email', 'profile']));
    expect(link!.expires_at!.getTime()).toBeGreaterThan(Date.now());
    // Sealed at rest (AES-256-GCM, bound to the user): the raw tokens only come back with the key.
    const key = parseEncryptionKey(web.config.encryptionKey);
    for (const sealed of [link!.access_token_enc, link!.refresh_token_enc, link!.id_token_enc]) expect(sealed).toMatch(/^v1\./);
    const accessToken = decryptSecret(key, link!.access_token_enc!, user.id);
    const refreshToken = decryptSecret(key, link!.refresh_token_enc!, user.id);
    const idToken = decryptSecret(key, link!.id_token_enc!, user.id);
    for (const raw of [accessToken, refreshToken, idToken]) {
      expect(JSON.stringify(link)).not.toContain(raw);
    }
    expect(() => decryptSecret(key, link!.access_token_enc!, 'usr_someone-else')).toThrow();
    // And they are the provider's real tokens: the access token reads the user info, the refresh token refreshes.
    const info = await request(`${idp.issuer}/me`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({ sub, email });
    const refreshed = await request(`${idp.issuer}/token`, {
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${idp.clientId}:${idp.clientSecret}`).toString('base64')}`,
      },
    });
    expect(refreshed.status).toBe(200);
    expect(JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString())).toMatchObject({
      sub,
      iss: idp.issuer,
      aud: idp.clientId,
    });

    const audit = await web.database.db.kysely
      .selectFrom('audit_log')
      .select(['action', 'metadata'])
      .where('user_id', '=', user.id)
      .where('action', '=', 'session.create')
      .execute();
    expect(audit).toEqual([{ action: 'session.create', metadata: { method: 'idp' } }]);
  });

  it('a second sign-in reuses the user and the provider account row, with fresh tokens', async () => {
    const { sub } = account();
    const first = await signInThrough({ signInAs: sub });
    const userId = (await sessionUser(first.session)).id;
    const [before] = await links(sub);

    const second = await signInThrough({ signInAs: sub });
    expect(second.res.headers.get('location')).toBe('/dashboard');
    expect(second.session).not.toBe(first.session);
    expect((await sessionUser(second.session)).id).toBe(userId);
    const after = await links(sub);
    expect(after).toHaveLength(1);
    expect(after[0]!.id).toBe(before!.id);
    expect(after[0]!.access_token_enc).not.toBe(before!.access_token_enc);
    expect(after[0]!.refresh_token_enc).toMatch(/^v1\./);
    expect(await web.database.db.kysely.selectFrom('oauth_accounts').select('id').where('user_id', '=', userId).execute()).toHaveLength(1);
  });

  it('links to the existing (verified) password user with the same email in another case; both sign-ins keep working', async () => {
    const address = `${randomUUID()}@example.com`;
    const registered = await register(web.url, { email: address, password: PASSWORD, name: 'Ada' });
    expect(registered.status).toBe(200);
    await verifyEmail(web, address);
    const { sub } = account({ email: address.toUpperCase(), name: 'Ada Lovelace' });

    const { res, session } = await signInThrough({ signInAs: sub });
    expect(res.headers.get('location')).toBe('/dashboard');
    expect(await sessionUser(session)).toEqual({ id: registered.body.id, name: 'Ada', email: address, isAdmin: false });
    const sameEmail = await web.database.db.kysely
      .selectFrom('users')
      .select('id')
      .where((eb) => eb(eb.fn('lower', ['email']), '=', address))
      .execute();
    expect(sameEmail).toEqual([{ id: registered.body.id }]);
    expect((await links(sub)).map((l) => l.user_id)).toEqual([registered.body.id]);

    const password = await login(web.url, address, PASSWORD);
    expect(password.status).toBe(200);
    expect(password.body.user.id).toBe(registered.body.id);
    const again = await signInThrough({ signInAs: sub });
    expect((await sessionUser(again.session)).id).toBe(registered.body.id);
  });

  it('an account whose address nobody verified becomes the provider-verified person’s alone: the squatter’s password, sessions and keys stop', async () => {
    // Issue #16: registering someone else's address must not let the registrant inherit what the real owner brings.
    const address = `${randomUUID()}@example.com`;
    const squatter = await register(web.url, { email: address, password: PASSWORD });
    const squatterSession = (await login(web.url, address, PASSWORD)).cookie!;
    const key = await request(`${web.url}/api/keys`, { json: { name: 'k' }, headers: { cookie: squatterSession } });
    expect(key.status).toBe(201);

    const { sub } = account({ email: address });
    const { session } = await signInThrough({ signInAs: sub });
    expect((await sessionUser(session)).id).toBe(squatter.body.id);
    expect((await login(web.url, address, PASSWORD)).status).toBe(401);
    expect((await request(`${web.url}/api/auth/session`, { headers: { cookie: squatterSession } })).body).toEqual({ user: null });
    expect((await request(`${web.url}/api/settings`, { headers: { authorization: `Bearer ${key.body.key}` } })).status).toBe(401);
    const row = await web.database.db.kysely
      .selectFrom('users')
      .select(['password_hash', 'email_verified_at'])
      .where('id', '=', squatter.body.id)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toBeNull();
    expect(row.email_verified_at).toBeInstanceOf(Date);
  });

  it('AccessDenied when the person cancels at the provider; no token exchange, no session', async () => {
    account();
    const before = idp.tokenRequests.length;
    const { res, back, session } = await signInThrough({ cancel: true });
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/login?error=AccessDenied');
    expect(session).toBeUndefined();
    expect(idp.tokenRequests.length).toBe(before);
  });

  it('IdpAuthFailed for another provider error, with no token exchange', async () => {
    const { location, stateCookie } = await begin(web);
    const before = idp.tokenRequests.length;
    const back = new URL(REDIRECT_URI);
    back.searchParams.set('error', 'server_error');
    back.searchParams.set('state', location.searchParams.get('state')!);
    const res = await arrive(web, back, stateCookie);
    expect(res.headers.get('location')).toBe('/login?error=IdpAuthFailed');
    expect(idp.tokenRequests.length).toBe(before);
  });

  it('IdpAuthFailed when no code comes back', async () => {
    const { location, stateCookie } = await begin(web);
    const back = new URL(REDIRECT_URI);
    back.searchParams.set('state', location.searchParams.get('state')!);
    const res = await arrive(web, back, stateCookie);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/login?error=IdpAuthFailed');
  });

  it('IdpAuthFailed for a reused callback: the state works once', async () => {
    const { sub } = account();
    const first = await signInThrough({ signInAs: sub });
    expect(first.res.headers.get('location')).toBe('/dashboard');
    const before = idp.tokenRequests.length;
    const replay = await arrive(web, first.back, first.stateCookie);
    expect(replay.headers.get('location')).toBe('/login?error=IdpAuthFailed');
    expect(cookieFrom(replay.headers, 'service-session')).toBeUndefined();
    expect(idp.tokenRequests.length).toBe(before);
  });

  it('IdpAuthFailed for a forged state, or a state from another browser', async () => {
    const { sub } = account();
    const { location, stateCookie } = await begin(web);
    const back = await idp.authorize(location.href, { signInAs: sub });
    const forged = new URL(back);
    forged.searchParams.set('state', 'f'.repeat(64));
    const res = await arrive(web, forged, `service-idp-state=${'f'.repeat(64)}`);
    expect(res.headers.get('location')).toBe('/login?error=IdpAuthFailed');

    // A real code and state, but the browser that arrives is not the one that started (login CSRF).
    const other = await begin(web);
    const victim = await arrive(web, await idp.authorize(other.location.href, { signInAs: sub }));
    expect(victim.headers.get('location')).toBe('/login?error=IdpAuthFailed');
    expect(cookieFrom(victim.headers, 'service-session')).toBeUndefined();
    // The forged attempt did not spend the real state: its own browser still completes.
    const genuine = await arrive(web, back, stateCookie);
    expect(genuine.headers.get('location')).toBe('/dashboard');
  });

  it('IdpNoEmail when the provider account has no email; nothing is created', async () => {
    const { sub } = account({ email: null });
    const users = await web.database.db.kysely.selectFrom('users').select('id').execute();
    const { res, session } = await signInThrough({ signInAs: sub });
    expect(res.headers.get('location')).toBe('/login?error=IdpNoEmail');
    expect(session).toBeUndefined();
    expect(await links(sub)).toEqual([]);
    expect(await web.database.db.kysely.selectFrom('users').select('id').execute()).toHaveLength(users.length);
  });

  it('AccessDenied for a disabled user, and no session', async () => {
    const { sub } = account();
    const first = await signInThrough({ signInAs: sub });
    const userId = (await sessionUser(first.session)).id;
    await web.database.db.kysely.updateTable('users').set({ disabled_at: new Date() }).where('id', '=', userId).execute();
    const { res, session } = await signInThrough({ signInAs: sub });
    expect(res.headers.get('location')).toBe('/login?error=AccessDenied');
    expect(session).toBeUndefined();
  });

  it('AccessDenied rather than linking an existing account to an email the provider does not vouch for', async () => {
    const address = `${randomUUID()}@example.com`;
    const registered = await register(web.url, { email: address, password: PASSWORD });
    const { sub } = account({ email: address, emailVerified: false });
    const { res, session } = await signInThrough({ signInAs: sub });
    expect(res.headers.get('location')).toBe('/login?error=AccessDenied');
    expect(session).toBeUndefined();
    expect(await links(sub)).toEqual([]);
    // A new person with an unverified address still gets an account, marked unverified.
    const fresh = account({ emailVerified: false });
    const created = await signInThrough({ signInAs: fresh.sub });
    const user = await sessionUser(created.session);
    expect(user.id).not.toBe(registered.body.id);
    const row = await web.database.db.kysely
      .selectFrom('users')
      .select('email_verified_at')
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(row.email_verified_at).toBeNull();
  });

  it('IdpTokenFailed when the code exchange fails (the provider refuses the client secret)', async () => {
    const wrong = await startWeb(idpEnv(idp, { IDP_CLIENT_SECRET: 'not-the-secret' }));
    try {
      const { sub } = account();
      const before = idp.tokenRequests.length;
      const { res, session } = await signInThrough({ signInAs: sub }, wrong);
      expect(res.headers.get('location')).toBe('/login?error=IdpTokenFailed');
      expect(session).toBeUndefined();
      expect(idp.tokenRequests.slice(before)).toEqual([{ grantType: 'authorization_code', status: 401 }]);
      expect(await wrong.database.db.kysely.selectFrom('oauth_accounts').select('id').execute()).toEqual([]);
    } finally {
      await wrong.close();
    }
  });
});

describe('identity provider sign-in: not configured, unreachable', () => {
  let bare: TestWeb;
  let unreachable: TestWeb;
  let closedPort: number;

  beforeAll(async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    closedPort = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    bare = await startWeb({ PUBLIC_URL, IDP_CLIENT_ID: 'only-an-id', IDP_ISSUER: `http://127.0.0.1:${closedPort}` });
    unreachable = await startWeb({
      PUBLIC_URL,
      IDP_ISSUER: `http://127.0.0.1:${closedPort}`,
      IDP_CLIENT_ID: 'client',
      IDP_CLIENT_SECRET: 'secret',
    });
  });
  afterAll(async () => {
    await bare?.close();
    await unreachable?.close();
  });

  it('IdpNotConfigured without a client secret, at the start and at the callback', async () => {
    const start = await request(`${bare.url}/api/auth/idp`);
    expect(start.status).toBe(302);
    expect(start.headers.get('location')).toBe('/login?error=IdpNotConfigured');
    const back = await request(`${bare.url}/api/auth/idp/callback?code=abc&state=def`);
    expect(back.headers.get('location')).toBe('/login?error=IdpNotConfigured');
  });

  it('IdpAuthError when the provider cannot be reached', async () => {
    const start = await request(`${unreachable.url}/api/auth/idp`);
    expect(start.status).toBe(302);
    expect(start.headers.get('location')).toBe('/login?error=IdpAuthError');
  });
});
