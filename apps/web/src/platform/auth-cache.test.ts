import { listen, request, type RunningService, testCounters } from '@aop/testing';
import { createDatabase } from '@aop/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../app.js';
import { createApiKey } from '../modules/api-keys/api-keys.service.js';
import { startWeb, type TestWeb } from '../web.test-support.js';

const TTL_MS = 60_000;

// Issue #18: who a cookie or key belongs to is cached for SESSION_CACHE_TTL_MS, and a signed-out session, a revoked
// key or a disabled account is refused at once on the replica that made the change, and within moments (well inside
// the TTL) on every other replica.
describe('the session and key cache', () => {
  let web: TestWeb;
  let now = Date.now();
  beforeAll(async () => {
    web = await startWeb({ SESSION_CACHE_TTL_MS: String(TTL_MS) }, { clock: () => now });
  });
  afterAll(() => web.close());

  const whoAmI = async (headers: Record<string, string>, url = web.url) =>
    (await request(`${url}/api/auth/session`, { headers })).body.user as { id: string; name: string } | null;
  const newKey = async (userId: string) => (await web.database.db.withUser(userId, (trx) => createApiKey(trx, userId, 'ci'))).key;
  /** Changes rows without firing triggers: what the cache cannot hear about, so only its TTL ends the answer. */
  const silently = (statement: ReturnType<typeof sql>) =>
    web.database.db.kysely.transaction().execute(async (trx) => {
      await sql`set local session_replication_role = replica`.execute(trx);
      await statement.execute(trx);
    });

  it('answers from memory within the TTL, and asks the database again after it', async () => {
    const { userId, cookie } = await web.signIn({ name: 'Cached' });
    expect(await whoAmI({ cookie })).toMatchObject({ id: userId, name: 'Cached' });
    await silently(sql`delete from sessions where user_id = ${userId}`);
    expect(await whoAmI({ cookie })).toMatchObject({ id: userId });
    now += TTL_MS + 1;
    expect(await whoAmI({ cookie })).toBeNull();
  });

  it('a session never outlives its own expiry because it was cached', async () => {
    const { userId, cookie } = await web.signIn();
    await web.database.db.kysely
      .updateTable('sessions')
      .set({ expires_at: new Date(now + 1_000) })
      .where('user_id', '=', userId)
      .execute();
    expect(await whoAmI({ cookie })).toMatchObject({ id: userId });
    now += 1_001;
    expect(await whoAmI({ cookie })).toBeNull();
  });

  it('sign-out, a revoked key, a disabled account and a new name apply at once on this replica', async () => {
    const { userId, cookie } = await web.signIn({ name: 'Before' });
    const key = await newKey(userId);
    const bearer = { authorization: `Bearer ${key}` };
    expect(await whoAmI(bearer)).toMatchObject({ id: userId });
    expect(await whoAmI({ cookie })).toMatchObject({ name: 'Before' });

    await web.database.db.kysely.updateTable('users').set({ name: 'After' }).where('id', '=', userId).execute();
    expect(await whoAmI({ cookie })).toMatchObject({ name: 'After' });

    const keys = (await request(`${web.url}/api/keys`, { headers: { cookie } })).body.keys as { id: string }[];
    expect((await request(`${web.url}/api/keys/${keys[0]?.id}`, { method: 'DELETE', headers: { cookie } })).status).toBe(200);
    expect(await whoAmI(bearer)).toBeNull();

    expect((await request(`${web.url}/api/auth/signout`, { method: 'POST', headers: { cookie } })).status).toBe(200);
    expect(await whoAmI({ cookie })).toBeNull();

    const other = await web.signIn();
    expect(await whoAmI({ cookie: other.cookie })).toMatchObject({ id: other.userId });
    await web.database.db.kysely.updateTable('users').set({ disabled_at: new Date() }).where('id', '=', other.userId).execute();
    expect(await whoAmI({ cookie: other.cookie })).toBeNull();
  });

  it('an unknown token is not remembered: a session created afterwards works at once', async () => {
    const { cookie } = await web.signIn();
    expect(await whoAmI({ cookie: `${cookie.slice(0, -4)}0000` })).toBeNull();
    expect(await whoAmI({ cookie })).not.toBeNull();
  });

  // Two replicas need a database server both reach: Postgres (DATABASE_URL), not the embedded one.
  describe.skipIf(!process.env.DATABASE_URL)('with a second replica on the same database', () => {
    let replica: RunningService;
    let replicaDb: ReturnType<typeof createDatabase>;
    beforeAll(async () => {
      replicaDb = createDatabase({ databaseUrl: web.database.databaseUrl });
      const app = await buildApp({ config: web.config, db: replicaDb, counters: testCounters(), clock: () => now });
      replica = await listen(app);
    });
    afterAll(async () => {
      await replica.close();
      await replicaDb.close();
    });

    it('a session ended or a key revoked on one replica is refused on the other within moments, not the TTL', async () => {
      const { userId, cookie } = await web.signIn();
      const key = await newKey(userId);
      const bearer = { authorization: `Bearer ${key}` };
      expect(await whoAmI({ cookie }, replica.url)).toMatchObject({ id: userId });
      expect(await whoAmI(bearer, replica.url)).toMatchObject({ id: userId });

      const keys = (await request(`${web.url}/api/keys`, { headers: { cookie } })).body.keys as { id: string }[];
      await request(`${web.url}/api/keys/${keys[0]?.id}`, { method: 'DELETE', headers: { cookie } });
      await vi.waitFor(async () => expect(await whoAmI(bearer, replica.url)).toBeNull(), { timeout: 2_000, interval: 20 });

      await request(`${web.url}/api/auth/signout`, { method: 'POST', headers: { cookie } });
      await vi.waitFor(async () => expect(await whoAmI({ cookie }, replica.url)).toBeNull(), { timeout: 2_000, interval: 20 });
    });
  });
});
