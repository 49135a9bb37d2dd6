import { newId } from '@aop/core';
import { createTestDatabase, type TestDatabase } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDatabase } from './database.js';

// Issue #18: the web caches who a session or key belongs to for seconds, and forgets it when the database says a
// sign-in fact changed (migration 0020). Runs on PGlite and, with DATABASE_URL, on a Postgres server.
describe('auth-change notifications', () => {
  let t: TestDatabase;
  const heard: string[] = [];
  const alice = newId('user');
  const bob = newId('user');
  const aliceSession = newId('authSession');
  const aliceKey = newId('apiKey');

  beforeAll(async () => {
    t = await createTestDatabase();
    t.db.onAuthChange((userId) => heard.push(userId));
    const db = t.db.kysely;
    await db
      .insertInto('users')
      .values([
        { id: alice, email: 'alice@example.com', name: 'Alice' },
        { id: bob, email: 'bob@example.com', name: 'Bob' },
      ])
      .execute();
    await db
      .insertInto('sessions')
      .values({ id: aliceSession, user_id: alice, token_hash: 'a'.repeat(64), expires_at: new Date(Date.now() + 60_000) })
      .execute();
    await db
      .insertInto('api_keys')
      .values({ id: aliceKey, user_id: alice, name: 'ci', key_prefix: 'sk_abc', key_hash: 'k'.repeat(64) })
      .execute();
  });
  afterAll(() => t.close());

  it('creating users, sessions and keys announces nothing', () => {
    expect(heard).toEqual([]);
  });

  it('this process hears its own change before the write settles, also through withUser', async () => {
    heard.length = 0;
    await t.db.kysely.updateTable('users').set({ name: 'Alice A.' }).where('id', '=', alice).execute();
    expect(heard).toContain(alice);
    heard.length = 0;
    await t.db.withUser(bob, (trx) => trx.updateTable('users').set({ email_verified_at: new Date() }).where('id', '=', bob).execute());
    expect(heard).toContain(bob);
  });

  it('a revoked key, an ended session and a disabled account are announced; a key’s last use is not', async () => {
    heard.length = 0;
    await t.db.kysely.updateTable('api_keys').set({ last_used_at: new Date() }).where('id', '=', aliceKey).execute();
    await t.db.kysely.updateTable('users').set({ updated_at: new Date() }).where('id', '=', alice).execute();
    expect(heard).toEqual([]);
    await t.db.kysely.deleteFrom('api_keys').where('id', '=', aliceKey).execute();
    expect(heard).toEqual([alice]);
    await t.db.kysely.deleteFrom('sessions').where('id', '=', aliceSession).execute();
    await t.db.kysely.updateTable('users').set({ disabled_at: new Date() }).where('id', '=', bob).execute();
    expect(heard).toEqual([alice, alice, bob]);
  });

  it('a rolled-back change announces nothing', async () => {
    heard.length = 0;
    await expect(
      t.db.withUser(alice, async (trx) => {
        await trx.updateTable('users').set({ name: 'never' }).where('id', '=', alice).execute();
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(heard).toEqual([]);
  });

  it.skipIf(!process.env.DATABASE_URL)('another process’s change is heard moments after it commits', async () => {
    heard.length = 0;
    const other = createDatabase({ databaseUrl: t.databaseUrl });
    try {
      await other.kysely.updateTable('users').set({ is_admin: true }).where('id', '=', alice).execute();
    } finally {
      await other.close();
    }
    await vi.waitFor(() => expect(heard).toContain(alice), { timeout: 2000 });
  });
});
