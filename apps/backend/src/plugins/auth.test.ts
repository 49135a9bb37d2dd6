import { createHmac } from 'node:crypto';
import { type App, MemoryCounterStore, createServer, sharedHttpPlugin, signUserContext, userContextHeaders } from '@aop/core';
import { listen, request, type RunningService } from '@aop/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../backend.test-support.js';
import { requireAdmin, requireInternalKey, verifyUserContext } from './auth.js';

const KEY = 'internal-key-0123456789abcdef';
const SECRET = 'hmac-secret-0123456789abcdef';
/** The apps' clock: a fixed instant (a whole second), so signing times are exact. */
const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const TS = String(NOW / 1000);

/** A bare app on the shared HTTP plugin whose clock (`app.clock`, as `buildApp` decorates it) is `clock`. */
async function appWith(register: (app: App) => void, clock: () => number = () => NOW): Promise<RunningService> {
  const app = createServer({ config: { logLevel: 'silent', trustProxy: false } });
  app.decorate('clock', clock);
  await app.register(sharedHttpPlugin, {
    counters: new MemoryCounterStore(),
    openapi: { path: '/openapi.json', title: 't', description: 't' },
  });
  register(app);
  return listen(app);
}

/** `x-user-signature` for a context signed at NOW (send `x-user-ts: TS` with it). */
const sign = (userId: string, email: string, role: string, secret = SECRET) =>
  signUserContext(secret, { userId, email, role, ts: NOW / 1000 });

// Spec §5: internal key, requireAuth, user-context headers, admin.
describe('internal key (Bearer INTERNAL_API_KEY)', () => {
  let svc: RunningService;
  let misconfigured: RunningService;
  beforeAll(async () => {
    svc = await appWith((app) => app.get('/api/core', { onRequest: requireInternalKey(KEY) }, async () => ({ ok: true })));
    misconfigured = await appWith((app) => app.get('/api/core', { onRequest: requireInternalKey(undefined) }, async () => ({ ok: true })));
  });
  afterAll(async () => {
    await svc.close();
    await misconfigured.close();
  });

  it('accepts the right key', async () => {
    const res = await request(`${svc.url}/api/core`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
  });
  it.each([
    ['no header', {}],
    ['no Bearer prefix', { authorization: KEY }],
    ['Basic scheme', { authorization: `Basic ${KEY}` }],
    ['empty bearer', { authorization: 'Bearer ' }],
  ])('401 Unauthorized with %s', async (_name, headers) => {
    const res = await request(`${svc.url}/api/core`, { headers });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'Unauthorized' });
  });
  it.each([
    ['a wrong key', 'Bearer wrong'],
    ['a key with one character changed', `Bearer ${KEY.slice(0, -1)}X`],
    ['a longer key', `Bearer ${KEY}extra`],
  ])('403 Forbidden with %s', async (_name, authorization) => {
    const res = await request(`${svc.url}/api/core`, { headers: { authorization } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'Forbidden' });
  });
  it('500 Server misconfigured when the key is unset', async () => {
    const res = await request(`${misconfigured.url}/api/core`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'Server misconfigured' });
  });
});

describe('user-context headers', () => {
  let svc: RunningService;
  let unsigned: RunningService;
  beforeAll(async () => {
    svc = await appWith((app) => {
      app.get('/api/me', { onRequest: [requireInternalKey(KEY), verifyUserContext(SECRET)] }, async (req) => req.userContext);
      app.get('/api/admin', { onRequest: [verifyUserContext(SECRET), requireAdmin(new Set(['boss@example.com']))] }, async () => ({
        admin: true,
      }));
    });
    unsigned = await appWith((app) => app.get('/api/me', { onRequest: verifyUserContext(undefined) }, async (req) => req.userContext));
  });
  afterAll(async () => {
    await svc.close();
    await unsigned.close();
  });

  const auth = { authorization: `Bearer ${KEY}` };

  it('accepts a lowercase-hex HMAC-SHA256 over userId:userEmail:userRole:ts', async () => {
    // Computed here from the literal payload, not with the shared signer, so a change to the signed string shows.
    const headers = {
      ...auth,
      'x-user-id': 'usr_1',
      'x-user-email': 'a@example.com',
      'x-user-role': 'user',
      'x-user-ts': TS,
      'x-user-signature': createHmac('sha256', SECRET).update(`usr_1:a@example.com:user:${TS}`).digest('hex'),
    };
    const res = await request(`${svc.url}/api/me`, { headers });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId: 'usr_1', email: 'a@example.com', role: 'user' });
  });

  it('defaults the id to anonymous and the role to user, and signs those defaults', async () => {
    const headers = { ...auth, 'x-user-ts': TS, 'x-user-signature': sign('anonymous', '', 'user') };
    const res = await request(`${svc.url}/api/me`, { headers });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId: 'anonymous', role: 'user' });
  });

  it('401 SIGNATURE_REQUIRED when the signature is absent', async () => {
    const res = await request(`${svc.url}/api/me`, { headers: { ...auth, 'x-user-id': 'usr_1', 'x-user-ts': TS } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'SIGNATURE_REQUIRED' });
  });

  it.each([
    ['signed for another user', () => sign('usr_2', 'a@example.com', 'user')],
    ['a role escalated after signing', () => sign('usr_1', 'a@example.com', 'user'), { 'x-user-role': 'admin' }],
    ['uppercase hex', () => sign('usr_1', 'a@example.com', 'user').toUpperCase()],
    ['base64 instead of hex', () => Buffer.from(sign('usr_1', 'a@example.com', 'user'), 'hex').toString('base64')],
    ['a truncated signature', () => sign('usr_1', 'a@example.com', 'user').slice(0, 63)],
    ['the wrong secret', () => sign('usr_1', 'a@example.com', 'user', 'other-secret')],
    ['the timestamp moved after signing', () => sign('usr_1', 'a@example.com', 'user'), { 'x-user-ts': String(NOW / 1000 + 1) }],
  ])('401 INVALID_SIGNATURE with %s', async (_name, signature, extra: Record<string, string> = {}) => {
    const headers = {
      ...auth,
      'x-user-id': 'usr_1',
      'x-user-email': 'a@example.com',
      'x-user-role': 'user',
      'x-user-ts': TS,
      'x-user-signature': signature(),
      ...extra,
    };
    const res = await request(`${svc.url}/api/me`, { headers });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'INVALID_SIGNATURE' });
  });

  it('skips the signature when no secret is configured', async () => {
    const res = await request(`${unsigned.url}/api/me`, { headers: { 'x-user-id': 'usr_9', 'x-user-role': 'user' } });
    expect(res.status).toBe(200);
    expect(res.body.userId).toBe('usr_9');
  });

  it('admin: compares the email case-insensitively, else 403 ADMIN_REQUIRED', async () => {
    const ok = await request(`${svc.url}/api/admin`, {
      headers: {
        'x-user-id': 'u',
        'x-user-email': 'Boss@Example.COM',
        'x-user-ts': TS,
        'x-user-signature': sign('u', 'Boss@Example.COM', 'user'),
      },
    });
    expect(ok.status).toBe(200);
    const no = await request(`${svc.url}/api/admin`, {
      headers: {
        'x-user-id': 'u',
        'x-user-email': 'someone@example.com',
        'x-user-ts': TS,
        'x-user-signature': sign('u', 'someone@example.com', 'user'),
      },
    });
    expect(no.status).toBe(403);
    expect(no.body).toEqual({ error: 'ADMIN_REQUIRED' });
    const noEmail = await request(`${svc.url}/api/admin`, {
      headers: { 'x-user-id': 'u', 'x-user-ts': TS, 'x-user-signature': sign('u', '', 'user') },
    });
    expect(noEmail.status).toBe(403);
  });
});

// Spec §5 "User-context headers" signs {userId}:{userEmail}:{userRole}; we add x-user-ts to the signed string so that
// a captured header set is refused 5 minutes on (and one dated more than a minute ahead of our clock at all).
describe('spec §5 "User-context headers": a signed context expires (x-user-ts)', () => {
  let now = NOW;
  let svc: RunningService;
  beforeAll(async () => {
    svc = await appWith(
      (app) => app.get('/api/me', { onRequest: verifyUserContext(SECRET) }, async (req) => req.userContext),
      () => now,
    );
  });
  beforeEach(() => {
    now = NOW;
  });
  afterAll(async () => {
    await svc.close();
  });

  /** A header set as the web service sent it at NOW. */
  const captured = () => userContextHeaders({ userId: 'usr_1', email: 'a@example.com' }, SECRET, NOW);
  const me = (headers: Record<string, string>) => request(`${svc.url}/api/me`, { headers });

  it.each([
    ['fresh', 0],
    ['4 min 59 s old', 299_000],
    ['exactly 5 min old', 300_000],
    ['60 s ahead of our clock (skew)', -60_000],
  ])('accepts a context signed %s', async (_name, age) => {
    now = NOW + age;
    const res = await me(captured());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId: 'usr_1', email: 'a@example.com', role: 'user' });
  });

  it.each([
    ['replayed 5 min 1 s later', 301_000],
    ['replayed an hour later', 3_600_000],
    ['dated 61 s ahead of our clock', -61_000],
  ])('401 INVALID_SIGNATURE for a header set %s', async (_name, age) => {
    now = NOW + age;
    const res = await me(captured());
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'INVALID_SIGNATURE' });
  });

  it('401 INVALID_SIGNATURE for a stale header set re-dated to now (the signature covers x-user-ts)', async () => {
    now = NOW + 600_000;
    const res = await me({ ...captured(), 'x-user-ts': String(now / 1000) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'INVALID_SIGNATURE' });
  });

  it('401 INVALID_SIGNATURE without x-user-ts, even with a valid signature over the three spec fields', async () => {
    const { 'x-user-ts': _, ...headers } = captured();
    const legacy = createHmac('sha256', SECRET).update('usr_1:a@example.com:user').digest('hex');
    const res = await me({ ...headers, 'x-user-signature': legacy });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'INVALID_SIGNATURE' });
  });

  it.each([['1768478400.0'], ['1.7684784e9'], ['-1768478400'], ['0x6968d6c0'], ['now']])(
    '401 INVALID_SIGNATURE for x-user-ts %j, though signed as sent',
    async (ts) => {
      const signature = createHmac('sha256', SECRET).update(`usr_1:a@example.com:user:${ts}`).digest('hex');
      const res = await me({ ...captured(), 'x-user-ts': ts, 'x-user-signature': signature });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'INVALID_SIGNATURE' });
    },
  );

  it('SIGNATURE_REQUIRED still comes first when the signature is absent', async () => {
    const { 'x-user-signature': _, ...headers } = captured();
    now = NOW + 3_600_000;
    expect((await me(headers)).body).toEqual({ error: 'SIGNATURE_REQUIRED' });
  });
});

describe('spec §5 "User-context headers": the backend judges x-user-ts by its injected clock', () => {
  const env = { INTERNAL_API_KEY: KEY, HMAC_SECRET: SECRET };
  let now = Date.now();
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend(env, { clock: () => now });
  });
  afterAll(async () => {
    await backend?.close();
  });

  it('accepts a header set until 5 min on by that clock, on identity routes and mission control alike', async () => {
    const signedAt = now;
    const headers = { authorization: `Bearer ${KEY}`, ...userContextHeaders({ userId: 'usr_1' }, SECRET, signedAt) };
    const calls = () =>
      Promise.all(
        ['/api/installations', '/api/mission-control/fleet/costs?userId=usr_1'].map((path) =>
          request(`${backend.url}${path}`, { headers }),
        ),
      );
    now = signedAt + 299_000;
    for (const res of await calls()) expect(res.status).toBe(200);
    now = signedAt + 301_000;
    for (const res of await calls()) expect([res.status, res.body]).toEqual([401, { error: 'INVALID_SIGNATURE' }]);
  });
});
