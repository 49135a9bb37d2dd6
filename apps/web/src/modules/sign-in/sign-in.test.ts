import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, cookieFrom, freshIp, login, register, startWeb, verifyEmail } from '../../web.test-support.js';

const email = () => `${randomUUID()}@example.com`;
const PASSWORD = 'correct horse battery';

// Spec §4.1 (register, login, session, signout), §3.3, §5 (CSRF), §8 (login limit, password length).
describe('accounts: register', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb({
      TRUST_PROXY: '127.0.0.1',
      REGISTER_LIMIT_PER_HOUR: '1000',
      REFERRAL_CREDITS_REFERRED: '7',
      REFERRAL_CREDITS_REFERRER: '11',
    });
  });
  afterAll(() => web.close());

  it('creates the account, names it after the email by default, and creates no session', async () => {
    const address = email().toUpperCase();
    const res = await register(web.url, { email: address, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: expect.stringMatching(/^usr_/), email: address.toLowerCase(), name: address.toLowerCase() });
    expect(res.headers.getSetCookie()).toEqual([]);
    const sessions = await web.database.db.kysely.selectFrom('sessions').select('id').where('user_id', '=', res.body.id).execute();
    expect(sessions).toEqual([]);
    const row = await web.database.db.kysely
      .selectFrom('users')
      .select(['password_hash', 'referral_code'])
      .where('id', '=', res.body.id)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(row.referral_code).toMatch(/^[A-Z2-9]{8}$/);
  });

  it('keeps a given name', async () => {
    const res = await register(web.url, { email: email(), password: PASSWORD, name: '  Ada Lovelace ' });
    expect(res.body.name).toBe('Ada Lovelace');
  });

  it.each([
    ['no email', { password: PASSWORD }],
    ['no password', { email: 'a@example.com' }],
    ['a blank email', { email: '  ', password: PASSWORD }],
  ])('400 Email and password are required with %s', async (_n, body) => {
    const res = await request(`${web.url}/api/register`, { json: body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'Email and password are required' });
  });

  it('400 for a body that is not JSON', async () => {
    const res = await request(`${web.url}/api/register`, {
      body: 'email=a@b.co',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'Email and password are required' });
  });

  it.each(['not-an-email', 'a@b', 'a b@example.com', `${'x'.repeat(250)}@example.com`])(
    '400 Invalid email format for %s',
    async (address) => {
      const res = await register(web.url, { email: address, password: PASSWORD });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid email format' });
    },
  );

  it('400 for an address in the wallet accounts’ reserved domain', async () => {
    const res = await register(web.url, { email: '0x1111111111111111111111111111111111111111@Wallet.Service', password: PASSWORD });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'This email address is reserved' });
  });

  it('400 for a password under 8 characters; 8 is enough', async () => {
    const short = await register(web.url, { email: email(), password: '1234567' });
    expect(short.status).toBe(400);
    expect(short.body).toEqual({ error: 'Password must be at least 8 characters' });
    expect((await register(web.url, { email: email(), password: '12345678' })).status).toBe(200);
  });

  it('409 User already exists, case-insensitively', async () => {
    const address = email();
    expect((await register(web.url, { email: address, password: PASSWORD })).status).toBe(200);
    const again = await register(web.url, { email: address.toUpperCase(), password: 'another password' });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: 'User already exists' });
  });

  it('concurrent registrations of one email make exactly one account', async () => {
    const address = email();
    const answers = await Promise.all(Array.from({ length: 5 }, () => register(web.url, { email: address, password: PASSWORD })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(4);
    const rows = await web.database.db.kysely.selectFrom('users').select('id').where('email', '=', address).execute();
    expect(rows).toHaveLength(1);
  });

  it('a valid referral code (any case) credits both users', async () => {
    const referrer = await register(web.url, { email: email(), password: PASSWORD });
    const { referral_code } = await web.database.db.kysely
      .selectFrom('users')
      .select('referral_code')
      .where('id', '=', referrer.body.id)
      .executeTakeFirstOrThrow();
    const referred = await register(web.url, { email: email(), password: PASSWORD, referralCode: referral_code!.toLowerCase() });
    expect(referred.status).toBe(200);
    const credits = await web.database.db.kysely
      .selectFrom('users')
      .select(['id', 'credits', 'referred_by'])
      .where('id', 'in', [referrer.body.id, referred.body.id])
      .execute();
    expect(credits.find((u) => u.id === referrer.body.id)?.credits).toBe(11);
    expect(credits.find((u) => u.id === referred.body.id)).toMatchObject({ credits: 7, referred_by: referrer.body.id });
  });

  it.each(['NO-SUCH-CODE', 'bad code!', 'x'.repeat(21)])(
    '400 Invalid referral code for %s, and no account is made',
    async (referralCode) => {
      const address = email();
      const res = await register(web.url, { email: address, password: PASSWORD, referralCode });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid referral code' });
      expect(await web.database.db.kysely.selectFrom('users').select('id').where('email', '=', address).execute()).toEqual([]);
    },
  );

  it('403 Bot detected when the honeypot is filled', async () => {
    const res = await request(`${web.url}/api/register`, { json: { email: email(), password: PASSWORD, website: 'http://spam.example' } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'Bot detected' });
  });

  it('429 past the per-IP limit, counted per client address', async () => {
    const limited = await startWeb({ TRUST_PROXY: '127.0.0.1', REGISTER_LIMIT_PER_HOUR: '2' });
    try {
      const ip = { 'x-forwarded-for': freshIp() };
      expect((await register(limited.url, { email: email(), password: PASSWORD }, ip)).status).toBe(200);
      expect((await register(limited.url, { email: email(), password: PASSWORD }, ip)).status).toBe(200);
      const third = await register(limited.url, { email: email(), password: PASSWORD }, ip);
      expect(third.status).toBe(429);
      expect(third.body).toEqual({ error: 'Too many requests' });
      expect(third.headers.get('ratelimit-limit')).toBe('2');
      expect((await register(limited.url, { email: email(), password: PASSWORD }, { 'x-forwarded-for': freshIp() })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('accounts: bot challenge', () => {
  let web: TestWeb;
  let verifier: ReturnType<typeof createServer>;
  const seen: URLSearchParams[] = [];
  beforeAll(async () => {
    // A Turnstile-style siteverify endpoint: form POST in, { success } out.
    verifier = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        const form = new URLSearchParams(body);
        seen.push(form);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ success: form.get('secret') === 'bot-secret' && form.get('response') === 'human-token' }));
      });
    });
    await new Promise<void>((r) => verifier.listen(0, '127.0.0.1', r));
    const { port } = verifier.address() as { port: number };
    web = await startWeb({ BOT_CHECK_SECRET: 'bot-secret', BOT_CHECK_URL: `http://127.0.0.1:${port}/siteverify` });
  });
  afterAll(async () => {
    await web.close();
    await new Promise<void>((r) => verifier.close(() => r()));
  });

  it('accepts a token the verifier accepts, refuses others with 403', async () => {
    const ok = await request(`${web.url}/api/register`, { json: { email: email(), password: PASSWORD, botToken: 'human-token' } });
    expect(ok.status).toBe(200);
    expect(seen.at(-1)?.get('remoteip')).toBe('127.0.0.1');
    const bad = await request(`${web.url}/api/register`, { json: { email: email(), password: PASSWORD, botToken: 'robot' } });
    expect(bad.status).toBe(403);
    expect(bad.body).toEqual({ error: 'Bot check failed' });
    const none = await request(`${web.url}/api/register`, { json: { email: email(), password: PASSWORD } });
    expect(none.status).toBe(403);
    expect(none.body).toEqual({ error: 'Bot check required' });
  });
});

describe('accounts: CSRF, login, session, sign-out', () => {
  let web: TestWeb;
  let now = Date.now();
  const account = { email: email(), password: PASSWORD };
  let userId: string;
  beforeAll(async () => {
    web = await startWeb(
      { TRUST_PROXY: '127.0.0.1', REGISTER_LIMIT_PER_HOUR: '1000', ADMIN_EMAILS: 'boss@example.com' },
      { clock: () => now },
    );
    userId = (await register(web.url, account)).body.id;
  });
  afterAll(() => web.close());
  const ip = () => ({ 'x-forwarded-for': freshIp() });

  it('GET /api/auth/csrf gives {token}:{signed} and the same value in a cookie', async () => {
    const res = await request(`${web.url}/api/auth/csrf`);
    expect(res.body.csrfToken).toMatch(/^[0-9a-f]{32}\.\d{13}:[0-9a-f]{64}$/);
    expect(cookieFrom(res.headers, 'service-csrf')).toBe(`service-csrf=${res.body.csrfToken}`);
  });

  it('signs in (email case-insensitive) with the session cookie: HttpOnly, SameSite=Lax, path /, 30 days', async () => {
    const res = await login(web.url, account.email.toUpperCase(), account.password, ip());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, user: { id: userId, name: account.email } });
    const line = res.setCookie.find((c) => c.startsWith('service-session='))!;
    expect(line).toMatch(/HttpOnly/);
    expect(line).toMatch(/SameSite=Lax/);
    expect(line).toMatch(/Path=\//);
    expect(line).not.toMatch(/Secure/);
    const expires = new Date(/Expires=([^;]+)/.exec(line)![1]!).getTime();
    expect(Math.abs(expires - (now + 30 * 24 * 3600 * 1000))).toBeLessThan(2_000);
    const session = await request(`${web.url}/api/auth/session`, { headers: { cookie: res.cookie! } });
    expect(session.body).toEqual({ user: { id: userId, name: account.email, email: account.email, isAdmin: false } });
    // Only the token's hash is stored.
    const token = res.cookie!.split('=')[1]!;
    const rows = await web.database.db.kysely.selectFrom('sessions').select('token_hash').where('user_id', '=', userId).execute();
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((r) => r.token_hash === token)).toBe(false);
  });

  it('marks the cookie Secure when COOKIE_SECURE is on', async () => {
    const secure = await startWeb({ COOKIE_SECURE: 'true' });
    try {
      const address = email();
      await register(secure.url, { email: address, password: PASSWORD });
      const res = await login(secure.url, address, PASSWORD);
      expect(res.setCookie.find((c) => c.startsWith('service-session='))).toMatch(/Secure/);
    } finally {
      await secure.close();
    }
  });

  it('isAdmin comes from ADMIN_EMAILS once the address is verified', async () => {
    await register(web.url, { email: 'Boss@Example.com', password: PASSWORD });
    const res = await login(web.url, 'boss@example.com', PASSWORD, ip());
    const isAdmin = async () => (await request(`${web.url}/api/auth/session`, { headers: { cookie: res.cookie! } })).body.user.isAdmin;
    expect(await isAdmin()).toBe(false);
    await verifyEmail(web, 'boss@example.com');
    expect(await isAdmin()).toBe(true);
  });

  it('401 Invalid credentials for a wrong password and for an unknown email alike', async () => {
    const wrong = await login(web.url, account.email, 'wrong password', ip());
    const unknown = await login(web.url, email(), 'whatever password', ip());
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Invalid credentials' });
      expect(res.cookie).toBeUndefined();
    }
  });

  it('400 Email and password are required', async () => {
    for (const body of [{ email: account.email }, { password: PASSWORD }, {}]) {
      const csrf = await request(`${web.url}/api/auth/csrf`);
      const res = await request(`${web.url}/api/auth/login`, { json: body, headers: { ...ip(), 'x-csrf-token': csrf.body.csrfToken } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Email and password are required' });
    }
  });

  describe('403 Invalid CSRF token', () => {
    const attempt = (headers: Record<string, string>) =>
      request(`${web.url}/api/auth/login`, { json: account, headers: { ...ip(), ...headers } });
    const fresh = async () => (await request(`${web.url}/api/auth/csrf`)).body.csrfToken as string;

    it('when missing', async () => {
      const res = await attempt({});
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'Invalid CSRF token' });
    });

    it('when forged, tampered or malformed', async () => {
      const good = await fresh();
      const [token, signed] = good.split(':') as [string, string];
      const forged = `${'0'.repeat(32)}.${now}:${'f'.repeat(64)}`;
      const tampered = `${token.replace(/^./, token[0] === 'a' ? 'b' : 'a')}:${signed}`;
      for (const value of [forged, tampered, token, 'x', `${token}:${signed}:extra`]) {
        const res = await attempt({ 'x-csrf-token': value });
        expect(res.status).toBe(403);
      }
    });

    it('when replayed after a sign-in attempt', async () => {
      const token = await fresh();
      expect((await attempt({ 'x-csrf-token': token })).status).toBe(200);
      const replay = await attempt({ 'x-csrf-token': token });
      expect(replay.status).toBe(403);
      expect(replay.body).toEqual({ error: 'Invalid CSRF token' });
    });

    it('when expired (older than an hour)', async () => {
      const token = await fresh();
      now += 61 * 60 * 1000;
      try {
        expect((await attempt({ 'x-csrf-token': token })).status).toBe(403);
      } finally {
        now -= 61 * 60 * 1000;
      }
    });

    it('when the CSRF cookie does not match the header', async () => {
      const a = await fresh();
      const b = await fresh();
      expect((await attempt({ 'x-csrf-token': a, cookie: `service-csrf=${b}` })).status).toBe(403);
    });

    it('accepts x-xsrf-token as well', async () => {
      expect((await attempt({ 'x-xsrf-token': await fresh() })).status).toBe(200);
    });
  });

  it('limits sign-in to 5 attempts per IP, with RateLimit-* headers, until the window resets', async () => {
    const short = await startWeb({ TRUST_PROXY: '127.0.0.1', LOGIN_LIMIT_WINDOW_SECONDS: '2' });
    try {
      const address = email();
      await register(short.url, { email: address, password: PASSWORD });
      const from = { 'x-forwarded-for': freshIp() };
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await login(short.url, address, 'wrong password', from));
      expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401, 401]);
      const csrf = await request(`${short.url}/api/auth/csrf`);
      const sixth = await request(`${short.url}/api/auth/login`, {
        json: { email: address, password: PASSWORD },
        headers: { ...from, 'x-csrf-token': csrf.body.csrfToken },
      });
      expect(sixth.status).toBe(429);
      expect(sixth.body).toEqual({ error: 'Too many login attempts. Please try again later.' });
      expect(sixth.headers.get('ratelimit-limit')).toBe('5');
      expect(sixth.headers.get('ratelimit-remaining')).toBe('0');
      expect(sixth.headers.get('x-ratelimit-limit')).toBeNull();
      // Another address is not affected; the same one is let in again after the window.
      expect((await login(short.url, address, PASSWORD, { 'x-forwarded-for': freshIp() })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 2_100));
      expect((await login(short.url, address, PASSWORD, from)).status).toBe(200);
    } finally {
      await short.close();
    }
  });

  it('a session expires after 30 days', async () => {
    const res = await login(web.url, account.email, PASSWORD, ip());
    const read = () => request(`${web.url}/api/auth/session`, { headers: { cookie: res.cookie! } });
    const start = now;
    try {
      now = start + 29 * 24 * 3600 * 1000;
      expect((await read()).body.user?.id).toBe(userId);
      now = start + 30 * 24 * 3600 * 1000 + 1000;
      expect((await read()).body).toEqual({ user: null });
    } finally {
      now = start;
    }
  });

  it('GET /api/auth/session is { user: null } without or with a bad cookie', async () => {
    const variants: Record<string, string>[] = [
      {},
      { cookie: 'service-session=deadbeef' },
      { cookie: `service-session=${'a'.repeat(64)}` },
    ];
    for (const headers of variants) {
      const res = await request(`${web.url}/api/auth/session`, { headers });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ user: null });
    }
  });

  it('sign-out deletes the server record and clears the cookie; it also succeeds without a session', async () => {
    const res = await login(web.url, account.email, PASSWORD, ip());
    const before = await web.database.db.kysely.selectFrom('sessions').select('id').where('user_id', '=', userId).execute();
    const out = await request(`${web.url}/api/auth/signout`, { method: 'POST', headers: { cookie: res.cookie! } });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ ok: true });
    expect(out.headers.getSetCookie().find((c) => c.startsWith('service-session='))).toMatch(/Expires=Thu, 01 Jan 1970/);
    const after = await web.database.db.kysely.selectFrom('sessions').select('id').where('user_id', '=', userId).execute();
    expect(after.length).toBe(before.length - 1);
    expect((await request(`${web.url}/api/auth/session`, { headers: { cookie: res.cookie! } })).body).toEqual({ user: null });
    const anonymous = await request(`${web.url}/api/auth/signout`, { method: 'POST' });
    expect(anonymous.status).toBe(200);
    expect(anonymous.body).toEqual({ ok: true });
  });
});
