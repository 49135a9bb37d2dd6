import { randomUUID } from 'node:crypto';
import { decryptSecret, parseEncryptionKey } from '@aop/core';
import { type CodehostTestChoice, type CodehostTestUser, type FakeOAuth2Server, request, startOAuth2Server } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, cookieFrom, login, register, startWeb, verifyEmail } from '../../web.test-support.js';

// Spec §4.1 GET /api/auth/codehost and its callback (same steps and error values, `Codehost` prefix), §2.1, §3.3.
const PUBLIC_URL = 'https://app.example.test';
const REDIRECT_URI = `${PUBLIC_URL}/api/auth/codehost/callback`;
const PASSWORD = 'correct horse battery';

const codehostEnv = (host: FakeOAuth2Server, overrides: Record<string, string> = {}) => ({
  PUBLIC_URL,
  CODEHOST_CLIENT_ID: host.clientId,
  CODEHOST_CLIENT_SECRET: host.clientSecret,
  CODEHOST_AUTHORIZE_URL: host.authorizeUrl,
  CODEHOST_TOKEN_URL: host.tokenUrl,
  CODEHOST_USER_URL: host.userUrl,
  CODEHOST_EMAILS_URL: host.emailsUrl,
  ...overrides,
});

async function begin(web: TestWeb) {
  const res = await request(`${web.url}/api/auth/codehost`);
  expect(res.status).toBe(302);
  const stateCookie = cookieFrom(res.headers, 'service-codehost-state');
  expect(stateCookie).toBeDefined();
  return { location: new URL(res.headers.get('location')!), stateCookie: stateCookie!, setCookie: res.headers.getSetCookie() };
}

async function arrive(web: TestWeb, back: URL, cookie?: string) {
  expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
  return request(`${web.url}/api/auth/codehost/callback${back.search}`, cookie ? { headers: { cookie } } : {});
}

let nextId = 1000;

describe('code host sign-in (OAuth 2)', () => {
  let host: FakeOAuth2Server;
  let web: TestWeb;

  beforeAll(async () => {
    host = await startOAuth2Server({ redirectUris: [REDIRECT_URI] });
    web = await startWeb(codehostEnv(host));
  });
  afterAll(async () => {
    await web?.close();
    await host?.close();
  });

  const user = (extra: Partial<CodehostTestUser> = {}): CodehostTestUser => {
    const id = nextId++;
    const login = `octo-${id}`;
    const created: CodehostTestUser = { id, login, name: 'The Octocat', email: `${login}@example.com`, ...extra };
    host.users.set(login, created);
    return created;
  };

  async function signInThrough(choice: CodehostTestChoice, target = web) {
    const { location, stateCookie } = await begin(target);
    const back = await host.authorize(location.href, choice);
    const res = await arrive(target, back, stateCookie);
    return { res, back, stateCookie, session: cookieFrom(res.headers, 'service-session') };
  }

  const sessionUser = async (cookie: string | undefined) =>
    (await request(`${web.url}/api/auth/session`, { headers: { cookie: cookie ?? '' } })).body.user;
  const links = (id: number) =>
    web.database.db.kysely
      .selectFrom('oauth_accounts')
      .selectAll()
      .where('provider', '=', 'codehost')
      .where('provider_account_id', '=', String(id))
      .execute();

  it('redirects to the authorize URL with client id, redirect URI, scope, state and PKCE S256', async () => {
    const { location, stateCookie, setCookie } = await begin(web);
    expect(`${location.origin}${location.pathname}`).toBe(host.authorizeUrl);
    const q = location.searchParams;
    expect(q.get('client_id')).toBe(host.clientId);
    expect(q.get('redirect_uri')).toBe(REDIRECT_URI);
    expect(q.get('scope')).toBe('read:user user:email');
    expect(q.get('state')).toMatch(/^[0-9a-f]{64}$/);
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.has('client_secret')).toBe(false);
    expect(stateCookie).toBe(`service-codehost-state=${q.get('state')}`);
    expect(setCookie.find((c) => c.startsWith('service-codehost-state='))).toMatch(/HttpOnly/i);
  });

  it('first sign-in creates the user from the public email, seals the token, sets the session and lands on /dashboard', async () => {
    const octo = user({ name: 'Mona Lisa Octocat' });
    const before = host.tokenRequests.length;
    const { res, session } = await signInThrough({ signInAs: octo.login });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/dashboard');
    expect(session).toBeDefined();

    // The exchange was a form POST asking for JSON, with the secret and the PKCE verifier.
    const exchange = host.tokenRequests.slice(before);
    expect(exchange).toHaveLength(1);
    expect(exchange[0]!.error).toBeUndefined();
    expect(exchange[0]!.headers.accept).toBe('application/json');
    expect(exchange[0]!.headers['content-type']).toContain('application/x-www-form-urlencoded');
    expect(exchange[0]!.params.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    expect(exchange[0]!.params.get('redirect_uri')).toBe(REDIRECT_URI);
    const api = host.apiRequests.at(-1)!;
    expect(api.path).toBe('/user');
    expect(api.headers.accept).toBe('application/vnd.github+json');
    expect(api.headers['user-agent']).toBeTruthy();
    expect(api.headers.authorization).toMatch(/^Bearer gho_/);

    const me = await sessionUser(session);
    expect(me).toEqual({ id: expect.stringMatching(/^usr_/), name: 'Mona Lisa Octocat', email: octo.email, isAdmin: false });
    const row = await web.database.db.kysely.selectFrom('users').selectAll().where('id', '=', me.id).executeTakeFirstOrThrow();
    expect(row.password_hash).toBeNull();
    expect(row.email_verified_at).toBeInstanceOf(Date);

    const [link, ...more] = await links(octo.id);
    expect(more).toEqual([]);
    expect(link).toMatchObject({ user_id: me.id, provider: 'codehost', provider_account_id: String(octo.id), email: octo.email });
    expect(link!.metadata).toMatchObject({ login: octo.login, name: 'Mona Lisa Octocat' });
    expect(link!.access_token_enc).toMatch(/^v1\./);
    const token = decryptSecret(parseEncryptionKey(web.config.encryptionKey), link!.access_token_enc!, me.id);
    expect(token).toMatch(/^gho_/);
    expect(JSON.stringify(link)).not.toContain(token);
    // The sealed token is the code host's real one.
    const check = await request(host.userUrl, { headers: { authorization: `Bearer ${token}`, 'user-agent': 'test' } });
    expect(check.body.id).toBe(octo.id);

    const audit = await web.database.db.kysely
      .selectFrom('audit_log')
      .select('metadata')
      .where('user_id', '=', me.id)
      .where('action', '=', 'session.create')
      .execute();
    expect(audit).toEqual([{ metadata: { method: 'codehost' } }]);
  });

  it('a private email is resolved through /user/emails: the primary verified one', async () => {
    const octo = user({
      email: null,
      emails: [
        { email: `unverified-${randomUUID()}@example.com`, primary: false, verified: false },
        { email: `secondary-${randomUUID()}@example.com`, primary: false, verified: true },
        { email: `Primary-${randomUUID()}@Example.com`, primary: true, verified: true },
      ],
    });
    const { res, session } = await signInThrough({ signInAs: octo.login });
    expect(res.headers.get('location')).toBe('/dashboard');
    expect(host.apiRequests.at(-1)!.path).toBe('/user/emails');
    expect((await sessionUser(session)).email).toBe(octo.emails![2]!.email.toLowerCase());
  });

  it('CodehostNoEmail when neither the profile nor the email list has a verified address', async () => {
    const octo = user({ email: null, emails: [{ email: `unverified-${randomUUID()}@example.com`, primary: true, verified: false }] });
    const users = await web.database.db.kysely.selectFrom('users').select('id').execute();
    const { res, session } = await signInThrough({ signInAs: octo.login });
    expect(res.headers.get('location')).toBe('/login?error=CodehostNoEmail');
    expect(session).toBeUndefined();
    expect(await links(octo.id)).toEqual([]);
    expect(await web.database.db.kysely.selectFrom('users').select('id').execute()).toHaveLength(users.length);
  });

  it('links to the existing (verified) password user with the same email (any case); one user, both sign-ins work, one provider row', async () => {
    const address = `${randomUUID()}@example.com`;
    const registered = await register(web.url, { email: address, password: PASSWORD, name: 'Hubot' });
    await verifyEmail(web, address);
    const octo = user({ email: address.toUpperCase() });

    const first = await signInThrough({ signInAs: octo.login });
    expect(first.res.headers.get('location')).toBe('/dashboard');
    expect((await sessionUser(first.session)).id).toBe(registered.body.id);
    const second = await signInThrough({ signInAs: octo.login });
    expect((await sessionUser(second.session)).id).toBe(registered.body.id);
    expect(await links(octo.id)).toHaveLength(1);
    const sameEmail = await web.database.db.kysely
      .selectFrom('users')
      .select('id')
      .where((eb) => eb(eb.fn('lower', ['email']), '=', address))
      .execute();
    expect(sameEmail).toEqual([{ id: registered.body.id }]);
    expect((await login(web.url, address, PASSWORD)).status).toBe(200);
  });

  it('AccessDenied when the person denies the app; no token exchange', async () => {
    const before = host.tokenRequests.length;
    const { res, back, session } = await signInThrough({ deny: true });
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(res.headers.get('location')).toBe('/login?error=AccessDenied');
    expect(session).toBeUndefined();
    expect(host.tokenRequests.length).toBe(before);
  });

  it('CodehostAuthFailed for another provider error, a missing code, a reused or forged state', async () => {
    const octo = user();
    const a = await begin(web);
    const errorBack = new URL(REDIRECT_URI);
    errorBack.searchParams.set('error', 'redirect_uri_mismatch');
    errorBack.searchParams.set('state', a.location.searchParams.get('state')!);
    expect((await arrive(web, errorBack, a.stateCookie)).headers.get('location')).toBe('/login?error=CodehostAuthFailed');

    const b = await begin(web);
    const noCode = new URL(REDIRECT_URI);
    noCode.searchParams.set('state', b.location.searchParams.get('state')!);
    expect((await arrive(web, noCode, b.stateCookie)).headers.get('location')).toBe('/login?error=CodehostAuthFailed');

    const ok = await signInThrough({ signInAs: octo.login });
    expect(ok.res.headers.get('location')).toBe('/dashboard');
    const before = host.tokenRequests.length;
    const replay = await arrive(web, ok.back, ok.stateCookie);
    expect(replay.headers.get('location')).toBe('/login?error=CodehostAuthFailed');

    const c = await begin(web);
    const back = await host.authorize(c.location.href, { signInAs: octo.login });
    const forged = new URL(back);
    forged.searchParams.set('state', '0'.repeat(64));
    expect((await arrive(web, forged, `service-codehost-state=${'0'.repeat(64)}`)).headers.get('location')).toBe(
      '/login?error=CodehostAuthFailed',
    );
    // Without the browser binding cookie a real code and state are refused too.
    expect((await arrive(web, back)).headers.get('location')).toBe('/login?error=CodehostAuthFailed');
    expect(host.tokenRequests.length).toBe(before);
  });

  it('AccessDenied for a disabled user', async () => {
    const octo = user();
    const first = await signInThrough({ signInAs: octo.login });
    const userId = (await sessionUser(first.session)).id;
    await web.database.db.kysely.updateTable('users').set({ disabled_at: new Date() }).where('id', '=', userId).execute();
    const again = await signInThrough({ signInAs: octo.login });
    expect(again.res.headers.get('location')).toBe('/login?error=AccessDenied');
    expect(again.session).toBeUndefined();
  });

  it('CodehostTokenFailed when the code host refuses the exchange (wrong client secret), answered 200 with `error`', async () => {
    const wrong = await startWeb(codehostEnv(host, { CODEHOST_CLIENT_SECRET: 'not-the-secret' }));
    try {
      const octo = user();
      const before = host.tokenRequests.length;
      const { res, session } = await signInThrough({ signInAs: octo.login }, wrong);
      expect(res.headers.get('location')).toBe('/login?error=CodehostTokenFailed');
      expect(session).toBeUndefined();
      expect(host.tokenRequests.slice(before).map((r) => r.error)).toEqual(['incorrect_client_credentials']);
    } finally {
      await wrong.close();
    }
  });

  it('CodehostAuthError when the user endpoint fails after a good exchange', async () => {
    const broken = await startWeb(codehostEnv(host, { CODEHOST_USER_URL: `${host.url}/no-such-endpoint` }));
    try {
      const octo = user();
      const { res, session } = await signInThrough({ signInAs: octo.login }, broken);
      expect(res.headers.get('location')).toBe('/login?error=CodehostAuthError');
      expect(session).toBeUndefined();
    } finally {
      await broken.close();
    }
  });
});

describe('code host sign-in: not configured', () => {
  let bare: TestWeb;
  beforeAll(async () => {
    bare = await startWeb({ PUBLIC_URL, CODEHOST_CLIENT_ID: 'only-an-id' });
  });
  afterAll(() => bare?.close());

  it('CodehostNotConfigured without a client secret, at the start and at the callback', async () => {
    const start = await request(`${bare.url}/api/auth/codehost`);
    expect(start.status).toBe(302);
    expect(start.headers.get('location')).toBe('/login?error=CodehostNotConfigured');
    const back = await request(`${bare.url}/api/auth/codehost/callback?code=abc&state=def`);
    expect(back.headers.get('location')).toBe('/login?error=CodehostNotConfigured');
  });
});
