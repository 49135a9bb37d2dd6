import { createTestDatabase, type TestDatabase } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@aop/core';
import { sql } from 'kysely';
import { writeAudit } from './audit.js';

// Row-level isolation (spec §1 "Authenticated requests only see and change the
// calling user's own records", §5 session row scoping). Runs on PGlite and, with
// DATABASE_URL, on a Postgres server.
describe('row-level security through withUser', () => {
  let t: TestDatabase;
  const alice = newId('user');
  const bob = newId('user');

  beforeAll(async () => {
    t = await createTestDatabase();
    const db = t.db.kysely;
    await db
      .insertInto('users')
      .values([
        { id: alice, email: 'alice@example.com', name: 'Alice' },
        { id: bob, email: 'bob@example.com', name: 'Bob' },
      ])
      .execute();
    const expires = new Date(Date.now() + 60_000);
    await db
      .insertInto('sessions')
      .values([
        { id: newId('authSession'), user_id: alice, token_hash: 'a'.repeat(64), expires_at: expires, ip: null, user_agent: null },
        { id: newId('authSession'), user_id: bob, token_hash: 'b'.repeat(64), expires_at: expires, ip: null, user_agent: null },
      ])
      .execute();
    await writeAudit(db, { userId: alice, action: 'session.create' });
    await writeAudit(db, { userId: bob, action: 'session.create' });
  });
  afterAll(() => t.close());

  it('a query with no where returns only the caller’s rows', async () => {
    const rows = await t.db.withUser(alice, async (trx) => ({
      users: await trx.selectFrom('users').selectAll().execute(),
      sessions: await trx.selectFrom('sessions').selectAll().execute(),
      audit: await trx.selectFrom('audit_log').selectAll().execute(),
    }));
    expect(rows.users.map((u) => u.id)).toEqual([alice]);
    expect(rows.sessions.map((s) => s.user_id)).toEqual([alice]);
    expect(rows.audit.map((a) => a.user_id)).toEqual([alice]);
  });

  it('runs as the non-owner role with the user id set, for that transaction only', async () => {
    const inside = await t.db.withUser(
      bob,
      async (trx) =>
        (await sql<{ role: string; uid: string }>`select current_user as role, current_setting('app.user_id', true) as uid`.execute(trx))
          .rows[0],
    );
    expect(inside).toEqual({ role: 'app_user', uid: bob });
    const after = (await sql<{ role: string }>`select current_user as role`.execute(t.db.kysely)).rows[0];
    expect(after?.role).not.toBe('app_user');
  });

  it('cannot update, delete or insert another user’s rows', async () => {
    await t.db.withUser(alice, async (trx) => {
      const updated = await trx.updateTable('users').set({ name: 'hijacked' }).where('id', '=', bob).executeTakeFirst();
      expect(Number(updated.numUpdatedRows)).toBe(0);
      const deleted = await trx.deleteFrom('sessions').where('user_id', '=', bob).executeTakeFirst();
      expect(Number(deleted.numDeletedRows)).toBe(0);
    });
    await expect(
      t.db.withUser(alice, (trx) =>
        trx
          .insertInto('sessions')
          .values({
            id: newId('authSession'),
            user_id: bob,
            token_hash: 'c'.repeat(64),
            expires_at: new Date(),
            ip: null,
            user_agent: null,
          })
          .execute(),
      ),
    ).rejects.toThrow(/row-level security/);
    const bobRow = await t.db.kysely.selectFrom('users').select('name').where('id', '=', bob).executeTakeFirstOrThrow();
    expect(bobRow.name).toBe('Bob');
    const bobSessions = await t.db.kysely.selectFrom('sessions').select('id').where('user_id', '=', bob).execute();
    expect(bobSessions).toHaveLength(1);
  });

  it('sees nothing when no user is set', async () => {
    const rows = await t.db.withUser('', (trx) => trx.selectFrom('users').selectAll().execute());
    expect(rows).toEqual([]);
  });

  it('a failing transaction leaves nothing behind', async () => {
    await expect(
      t.db.withUser(alice, async (trx) => {
        await trx.updateTable('users').set({ name: 'Alice 2' }).where('id', '=', alice).execute();
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const row = await t.db.kysely.selectFrom('users').select('name').where('id', '=', alice).executeTakeFirstOrThrow();
    expect(row.name).toBe('Alice');
  });

  it('an id that is not of the platform’s shape is a parameter, never SQL', async () => {
    const odd = "usr_x'); select set_config('role', 'postgres', true); --";
    const seen = await t.db.withUser(odd, async (trx) => ({
      uid: (await sql<{ uid: string }>`select current_setting('app.user_id', true) as uid`.execute(trx)).rows[0]?.uid,
      users: await trx.selectFrom('users').selectAll().execute(),
    }));
    expect(seen).toEqual({ uid: odd, users: [] });
  });

  it('after a failed statement the connection goes back outside any transaction and role', async () => {
    await expect(t.db.withUser(alice, (trx) => sql`select 1 / 0`.execute(trx))).rejects.toThrow(/division by zero/);
    const after = (
      await sql<{
        role: string;
        uid: string | null;
      }>`select current_user as role, nullif(current_setting('app.user_id', true), '') as uid`.execute(t.db.kysely)
    ).rows[0];
    expect(after).toEqual({ role: expect.not.stringMatching(/^app_user$/), uid: null });
  });
  it('readAsUser reads as the caller in a read-only transaction', async () => {
    const seen = await t.db.readAsUser(alice, async (trx) => ({
      users: (await trx.selectFrom('users').select('id').execute()).map((u) => u.id),
      readOnly: (await sql<{ ro: string }>`select current_setting('transaction_read_only') as ro`.execute(trx)).rows[0]?.ro,
    }));
    expect(seen).toEqual({ users: [alice], readOnly: 'on' });
    await expect(
      t.db.readAsUser(alice, (trx) => trx.updateTable('users').set({ name: 'x' }).where('id', '=', alice).execute()),
    ).rejects.toThrow(/read-only transaction/);
    const row = await t.db.kysely.selectFrom('users').select('name').where('id', '=', alice).executeTakeFirstOrThrow();
    expect(row.name).toBe('Alice');
  });

  // BEGIN travels with the first statement and a read's COMMIT with the next checkout's (pipelined connections): many
  // callers at once on the same few connections must each still see exactly their own rows, and leave no transaction.
  it('interleaved reads and writes of two users each see only their own rows', async () => {
    const calls = Array.from({ length: 60 }, (_, i) => {
      const user = i % 2 ? alice : bob;
      const read = (trx: Parameters<Parameters<typeof t.db.withUser>[1]>[0]) =>
        trx
          .selectFrom('users')
          .select('id')
          .execute()
          .then((rows) => ({ user, ids: rows.map((r) => r.id) }));
      return i % 3 ? t.db.readAsUser(user, read) : t.db.withUser(user, read);
    });
    for (const { user, ids } of await Promise.all(calls)) expect(ids).toEqual([user]);
    const after = (
      await sql<{
        role: string;
        uid: string | null;
      }>`select current_user as role, nullif(current_setting('app.user_id', true), '') as uid`.execute(t.db.kysely)
    ).rows[0];
    expect(after).toEqual({ role: expect.not.stringMatching(/^app_user$/), uid: null });
  });
});
