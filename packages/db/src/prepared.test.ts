import { newId } from '@aop/core';
import { createTestDatabase, type TestDatabase } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepared } from './prepared.js';

describe('prepared queries (compiled once, run with new values)', () => {
  let t: TestDatabase;
  const [alice, bob] = [newId('user'), newId('user')];
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.db.kysely
      .insertInto('users')
      .values([
        { id: alice, email: 'alice@example.com', name: 'Alice' },
        { id: bob, email: 'bob@example.com', name: 'Bob' },
      ])
      .execute();
  });
  afterAll(() => t.close());

  it('runs the one compiled statement with each call’s values, constants kept', async () => {
    const byEmail = prepared((db, email: string, name: string) =>
      db.selectFrom('users').select(['id', 'name']).where('email', '=', email).where('name', '=', name).limit(5),
    );
    expect((await byEmail(t.db.kysely, 'alice@example.com', 'Alice')).rows).toEqual([{ id: alice, name: 'Alice' }]);
    expect((await byEmail(t.db.kysely, 'bob@example.com', 'Bob')).rows).toEqual([{ id: bob, name: 'Bob' }]);
    expect((await byEmail(t.db.kysely, 'bob@example.com', 'Alice')).rows).toEqual([]);
    // Row-level security still applies: inside withUser the same statement sees only the caller's row.
    expect((await t.db.withUser(alice, (trx) => byEmail(trx, 'bob@example.com', 'Bob'))).rows).toEqual([]);
  });

  it('refuses a builder that would compile an argument into the SQL text', async () => {
    const broken = prepared((db, column: string) => db.selectFrom('users').select(db.dynamic.ref(column)));
    await expect(broken(t.db.kysely, 'id')).rejects.toThrow(/argument 0 is not a value/);
  });
});
