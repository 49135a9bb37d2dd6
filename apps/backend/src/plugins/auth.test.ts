import { type App, MemoryCounterStore, createServer, hmacSha256Hex, sharedHttpPlugin } from '@aop/core';
import { listen, request, type RunningService } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireAdmin, requireInternalKey, userContextPayload, verifyUserContext } from './auth.js';

const KEY = 'internal-key-0123456789abcdef';
const SECRET = 'hmac-secret-0123456789abcdef';

async function appWith(register: (app: App) => void): Promise<RunningService> {
  const app = createServer({ config: { logLevel: 'silent', trustProxy: false } });
  await app.register(sharedHttpPlugin, {
    counters: new MemoryCounterStore(),
    openapi: { path: '/openapi.json', title: 't', description: 't' },
  });
  register(app);
  return listen(app);
}

const sign = (userId: string, email: string, role: string, secret = SECRET) =>
  hmacSha256Hex(secret, userContextPayload({ userId, email, role }));

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

  it('accepts a lowercase-hex HMAC-SHA256 over userId:userEmail:userRole', async () => {
    const headers = {
      ...auth,
      'x-user-id': 'usr_1',
      'x-user-email': 'a@example.com',
      'x-user-role': 'user',
      'x-user-signature': sign('usr_1', 'a@example.com', 'user'),
    };
    const res = await request(`${svc.url}/api/me`, { headers });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId: 'usr_1', email: 'a@example.com', role: 'user' });
  });

  it('defaults the id to anonymous and the role to user, and signs those defaults', async () => {
    const headers = { ...auth, 'x-user-signature': sign('anonymous', '', 'user') };
    const res = await request(`${svc.url}/api/me`, { headers });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId: 'anonymous', role: 'user' });
  });

  it('401 SIGNATURE_REQUIRED when the signature is absent', async () => {
    const res = await request(`${svc.url}/api/me`, { headers: { ...auth, 'x-user-id': 'usr_1' } });
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
  ])('401 INVALID_SIGNATURE with %s', async (_name, signature, extra: Record<string, string> = {}) => {
    const headers = {
      ...auth,
      'x-user-id': 'usr_1',
      'x-user-email': 'a@example.com',
      'x-user-role': 'user',
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
      headers: { 'x-user-id': 'u', 'x-user-email': 'Boss@Example.COM', 'x-user-signature': sign('u', 'Boss@Example.COM', 'user') },
    });
    expect(ok.status).toBe(200);
    const no = await request(`${svc.url}/api/admin`, {
      headers: { 'x-user-id': 'u', 'x-user-email': 'someone@example.com', 'x-user-signature': sign('u', 'someone@example.com', 'user') },
    });
    expect(no.status).toBe(403);
    expect(no.body).toEqual({ error: 'ADMIN_REQUIRED' });
    const noEmail = await request(`${svc.url}/api/admin`, { headers: { 'x-user-id': 'u', 'x-user-signature': sign('u', '', 'user') } });
    expect(noEmail.status).toBe(403);
  });
});
