import { PLAN_NAMES, isPaidPlan, planFeatures } from '@aop/core';
import { request, type TestResponse } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWeb, type TestWeb } from '../../web.test-support.js';

const KEY_FORMAT = /^sk_[A-Za-z0-9_-]{32}$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Who a request is made as: a session cookie or an API key. */
type Caller = { cookie: string } | { key: string } | undefined;
const authHeaders = (as: Caller): Record<string, string> => {
  if (!as) return {};
  return 'cookie' in as ? { cookie: as.cookie } : { authorization: `Bearer ${as.key}` };
};

const expectError = (res: TestResponse, status: number, error: string) => {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ error });
};

// Spec §5 user API keys (§4.18 endpoints); shapes from research/not-shown-facts.md (API keys).
describe('API keys', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(async () => {
    await web.close();
  });

  const newUser = async () => {
    const email = `${crypto.randomUUID()}@example.com`;
    const { userId, cookie } = await web.signIn({ email, name: 'Key Owner' });
    return { userId, email, as: { cookie } };
  };

  const api = (path: string, as: Caller, init: { method?: string; json?: unknown; body?: string; headers?: Record<string, string> } = {}) =>
    request(`${web.url}${path}`, { ...init, headers: { ...authHeaders(as), ...init.headers } });
  const createKey = (as: Caller, json: unknown = { name: 'ci' }) => api('/api/keys', as, { method: 'POST', json });
  const listKeys = (as: Caller) => api('/api/keys', as);
  const getKey = (as: Caller, id: string) => api(`/api/keys/${id}`, as);
  const deleteKey = (as: Caller, id: string) => api(`/api/keys/${id}`, as, { method: 'DELETE' });
  const validate = (json: unknown) => api('/api/keys/validate', undefined, { method: 'POST', json });

  /** Creates a key and checks the 201 answer. */
  async function createdKey(as: Caller, name = 'ci'): Promise<{ id: string; name: string; key: string; createdAt: string }> {
    const res = await createKey(as, { name });
    expect(res.status).toBe(201);
    return res.body;
  }

  describe('lifecycle', () => {
    it('creates (key shown once), lists with a preview, gets, deletes, then 404s', async () => {
      const user = await newUser();
      const before = Date.now();
      const res = await createKey(user.as, { name: '  deploy bot  ' });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'id', 'key', 'name']);
      const { id, key, createdAt } = res.body;
      expect(res.body.name).toBe('deploy bot');
      expect(key).toMatch(KEY_FORMAT);
      expect(createdAt).toMatch(ISO_DATE);
      expect(Date.parse(createdAt)).toBeGreaterThanOrEqual(before - 5_000);

      const view = { id, name: 'deploy bot', keyPreview: `${key.slice(0, 10)}...`, createdAt, lastUsed: null };
      const list = await listKeys(user.as);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({ keys: [view] });
      expect(list.text).not.toContain(key);
      expect(list.text).not.toContain(key.slice(10));

      const one = await getKey(user.as, id);
      expect(one.status).toBe(200);
      expect(one.body).toEqual({ key: view });
      expect(one.text).not.toContain(key);

      const deleted = await deleteKey(user.as, id);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ success: true, id });

      expectError(await getKey(user.as, id), 404, 'API key not found');
      expectError(await deleteKey(user.as, id), 404, 'API key not found');
      expect((await listKeys(user.as)).body).toEqual({ keys: [] });
    });

    it('every key is different, and the list holds them all', async () => {
      const user = await newUser();
      const first = await createdKey(user.as, 'first');
      const second = await createdKey(user.as, 'second');
      expect(second.key).not.toBe(first.key);
      expect(second.id).not.toBe(first.id);
      const names = (await listKeys(user.as)).body.keys.map((k: { name: string }) => k.name);
      expect(names.sort()).toEqual(['first', 'second']);
    });

    it('401 Unauthorized on every key route without a session', async () => {
      expectError(await listKeys(undefined), 401, 'Unauthorized');
      expectError(await createKey(undefined), 401, 'Unauthorized');
      expectError(await getKey(undefined, 'apikey_x'), 401, 'Unauthorized');
      expectError(await deleteKey(undefined, 'apikey_x'), 401, 'Unauthorized');
    });
  });

  describe('validation of POST /api/keys', () => {
    it('400 Name is required for a missing, blank or non-JSON name', async () => {
      const user = await newUser();
      for (const json of [{}, { name: '' }, { name: '   ' }]) expectError(await createKey(user.as, json), 400, 'Name is required');
      for (const [body, type] of [
        ['{"name":', 'application/json'],
        ['name=ci', 'application/x-www-form-urlencoded'],
        ['ci', 'text/plain'],
      ] as const) {
        expectError(await api('/api/keys', user.as, { method: 'POST', body, headers: { 'content-type': type } }), 400, 'Name is required');
      }
      expect((await listKeys(user.as)).body).toEqual({ keys: [] });
    });

    it('400 for a 65-character name; 64 characters are accepted', async () => {
      const user = await newUser();
      expectError(await createKey(user.as, { name: 'k'.repeat(65) }), 400, 'Name must be at most 64 characters');
      expect((await listKeys(user.as)).body).toEqual({ keys: [] });
      expect((await createdKey(user.as, 'k'.repeat(64))).name).toBe('k'.repeat(64));
    });
  });

  describe('limit of 10 keys per account', () => {
    it('429 for the 11th key; a freed slot can be used again', async () => {
      const user = await newUser();
      const keys = [];
      for (let i = 0; i < 10; i++) keys.push(await createdKey(user.as, `key ${i}`));
      expectError(await createKey(user.as, { name: 'eleventh' }), 429, 'Maximum of 10 API keys reached');
      expect((await listKeys(user.as)).body.keys).toHaveLength(10);

      expect((await deleteKey(user.as, keys[0]!.id)).status).toBe(200);
      await createdKey(user.as, 'replacement');
      expectError(await createKey(user.as, { name: 'twelfth' }), 429, 'Maximum of 10 API keys reached');
    });

    it('12 concurrent creations: exactly 10 succeed, the rest get 429', async () => {
      const user = await newUser();
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => createKey(user.as, { name: `race ${i}` })));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([...Array(10).fill(201), 429, 429]);
      for (const r of results.filter((r) => r.status === 429)) expect(r.body).toEqual({ error: 'Maximum of 10 API keys reached' });
      expect((await listKeys(user.as)).body.keys).toHaveLength(10);
    });

    it("one user's keys do not count against another's limit", async () => {
      const [a, b] = [await newUser(), await newUser()];
      for (let i = 0; i < 10; i++) await createdKey(a.as, `a ${i}`);
      await createdKey(b.as, 'b 0');
    });
  });

  describe('Authorization: Bearer sk_…', () => {
    it('authenticates as the owner where a session does', async () => {
      const user = await newUser();
      const { id, key } = await createdKey(user.as);
      const bearer = { key };

      const settings = await api('/api/settings', bearer);
      expect(settings.status).toBe(200);
      expect(settings.body).toMatchObject({ id: user.userId, email: user.email, name: 'Key Owner' });

      const session = await api('/api/auth/session', bearer);
      expect(session.status).toBe(200);
      expect(session.body).toEqual({ user: { id: user.userId, name: 'Key Owner', email: user.email, isAdmin: false } });

      const list = await listKeys(bearer);
      expect(list.status).toBe(200);
      expect(list.body.keys.map((k: { id: string }) => k.id)).toEqual([id]);
    });

    it('sets lastUsed once the key is used', async () => {
      const user = await newUser();
      const { id, key } = await createdKey(user.as);
      expect((await getKey(user.as, id)).body.key.lastUsed).toBeNull();
      const before = Date.now();
      expect((await api('/api/settings', { key })).status).toBe(200);
      const { lastUsed } = (await getKey(user.as, id)).body.key;
      expect(lastUsed).toMatch(ISO_DATE);
      expect(Date.parse(lastUsed)).toBeGreaterThanOrEqual(before - 5_000);
      expect(Date.parse(lastUsed)).toBeLessThanOrEqual(Date.now() + 5_000);
    });

    it('a deleted key no longer authenticates', async () => {
      const user = await newUser();
      const { id, key } = await createdKey(user.as);
      expect((await api('/api/settings', { key })).status).toBe(200);
      expect((await deleteKey(user.as, id)).status).toBe(200);
      expectError(await api('/api/settings', { key }), 401, 'Unauthorized');
      expect((await api('/api/auth/session', { key })).body).toEqual({ user: null });
    });

    it("a key cannot revoke the account's other keys (403), only itself", async () => {
      const user = await newUser();
      const first = await createdKey(user.as, 'first');
      const second = await createdKey(user.as, 'second');
      expectError(await deleteKey({ key: first.key }, second.id), 403, 'This action needs a signed-in session, not an API key');
      expect((await api('/api/settings', { key: second.key })).status).toBe(200);

      expect((await deleteKey({ key: first.key }, first.id)).body).toEqual({ success: true, id: first.id });
      expectError(await api('/api/settings', { key: first.key }), 401, 'Unauthorized');
      // A signed-in session revokes any of the account's keys.
      expect((await deleteKey(user.as, second.id)).status).toBe(200);
      expect((await listKeys(user.as)).body.keys).toEqual([]);
    });

    it('a made-up sk_ key is 401', async () => {
      for (const key of [`sk_${'A'.repeat(32)}`, 'sk_short', `sk_${'x'.repeat(200)}`]) {
        expectError(await api('/api/settings', { key }), 401, 'Unauthorized');
        expect((await api('/api/auth/session', { key })).body).toEqual({ user: null });
      }
    });

    it('403 when creating a key while authenticated by an API key', async () => {
      const user = await newUser();
      const { key } = await createdKey(user.as);
      expectError(await createKey({ key }, { name: 'minted by a key' }), 403, 'This action needs a signed-in session, not an API key');
      expect((await listKeys(user.as)).body.keys).toHaveLength(1);
    });
  });

  describe('POST /api/keys/validate (no session)', () => {
    it('200 with the owner, plan and features for a valid key', async () => {
      const user = await newUser();
      const { key } = await createdKey(user.as);
      const res = await validate({ apiKey: key });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        valid: true,
        userId: user.userId,
        email: user.email,
        plan: 'free',
        subscriptionStatus: 'none',
        features: expect.any(Array),
      });
      expect(res.body.features).toContain('api');
    });

    it('subscription status and features are the plan catalogue’s, for every tier', async () => {
      const user = await newUser();
      const { key } = await createdKey(user.as);
      for (const plan of [...PLAN_NAMES, 'mystery']) {
        await web.database.db.kysely.updateTable('users').set({ plan }).where('id', '=', user.userId).execute();
        expect((await validate({ apiKey: key })).body, plan).toMatchObject({
          plan,
          subscriptionStatus: isPaidPlan(plan) ? 'active' : 'none',
          features: planFeatures(plan),
        });
      }
    });

    it('401 { valid: false, error: Invalid API key } for keys that are not sk_ or unknown', async () => {
      for (const apiKey of ['pk_live_123', 'Bearer sk_abc', 'SK_' + 'A'.repeat(32), `sk_${'B'.repeat(32)}`, 'sk_']) {
        const res = await validate({ apiKey });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ valid: false, error: 'Invalid API key' });
      }
    });

    it('400 apiKey required when it is missing', async () => {
      for (const json of [{}, { apiKey: '' }]) expectError(await validate(json), 400, 'apiKey required');
      expectError(
        await api('/api/keys/validate', undefined, { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } }),
        400,
        'apiKey required',
      );
    });

    it('401 for a deleted key', async () => {
      const user = await newUser();
      const { id, key } = await createdKey(user.as);
      expect((await validate({ apiKey: key })).status).toBe(200);
      expect((await deleteKey(user.as, id)).status).toBe(200);
      const res = await validate({ apiKey: key });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ valid: false, error: 'Invalid API key' });
    });
  });

  describe('isolation', () => {
    it("user B can neither get nor delete user A's key, nor see it listed", async () => {
      const [a, b] = [await newUser(), await newUser()];
      const aKey = await createdKey(a.as, 'a secret');
      const bKey = await createdKey(b.as, 'b own');

      expectError(await getKey(b.as, aKey.id), 404, 'API key not found');
      expectError(await deleteKey(b.as, aKey.id), 404, 'API key not found');
      // Nor with B's API key, which may revoke only itself.
      expectError(await deleteKey({ key: bKey.key }, aKey.id), 403, 'This action needs a signed-in session, not an API key');

      const bList = await listKeys(b.as);
      expect(bList.body.keys.map((k: { id: string }) => k.id)).toEqual([bKey.id]);
      expect(bList.text).not.toContain(aKey.id);
      expect(bList.text).not.toContain(aKey.key.slice(0, 10));

      expect((await getKey(a.as, aKey.id)).status).toBe(200);
      expect((await validate({ apiKey: aKey.key })).body).toMatchObject({ valid: true, userId: a.userId });
    });
  });
});
