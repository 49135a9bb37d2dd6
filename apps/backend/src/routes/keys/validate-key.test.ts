import { createHash, randomBytes } from 'node:crypto';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../backend.test-support.js';

const KEY = 'internal-key-for-validate-tests';

// Spec §4.18 backend POST /api/validate-key (internal key); reference: SHA-256 hex in api_keys.key_hash.
describe('POST /api/validate-key (backend)', () => {
  let backend: TestBackend;
  const raw = `sk_${randomBytes(24).toString('base64url')}`;
  beforeAll(async () => {
    backend = await startBackend({ INTERNAL_API_KEY: KEY });
    const db = backend.database.db.kysely;
    await db.insertInto('users').values({ id: 'usr_k', email: 'k@example.com', name: 'K', plan: 'collective' }).execute();
    await db
      .insertInto('api_keys')
      .values({
        id: 'key_1',
        user_id: 'usr_k',
        name: 'ci',
        key_prefix: raw.slice(0, 10),
        key_hash: createHash('sha256').update(raw).digest('hex'),
      })
      .execute();
  });
  afterAll(() => backend.close());

  const validate = (body: unknown, authorization = `Bearer ${KEY}`) =>
    request(`${backend.url}/api/validate-key`, { json: body, headers: { authorization } });

  it('answers the owner and plan of a stored key and records its use', async () => {
    const res = await validate({ apiKey: raw });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ valid: true, userId: 'usr_k', keyId: 'key_1', plan: 'collective' });
    const row = await backend.database.db.kysely
      .selectFrom('api_keys')
      .select('last_used_at')
      .where('id', '=', 'key_1')
      .executeTakeFirstOrThrow();
    expect(row.last_used_at).toBeInstanceOf(Date);
  });

  it('401 for an unknown or malformed key, 400 without one', async () => {
    for (const apiKey of [`sk_${randomBytes(24).toString('base64url')}`, 'pk_nope', raw.slice(0, -1)]) {
      const res = await validate({ apiKey });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ valid: false, error: 'Invalid API key' });
    }
    expect((await validate({})).body).toEqual({ error: 'apiKey required' });
  });

  it('needs the internal key', async () => {
    expect((await validate({ apiKey: raw }, '')).status).toBe(401);
    expect((await validate({ apiKey: raw }, 'Bearer wrong-key')).status).toBe(403);
  });
});
