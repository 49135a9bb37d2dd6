import { sql } from '@aop/db';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from './database.js';

// Test databases on PGlite are reused within a worker: each must still start as empty as a fresh one.
describe.skipIf(process.env.DATABASE_URL)('reused test databases', () => {
  it('a database handed on is empty, its schema intact, even after a test left a transaction open', async () => {
    const first = await createTestDatabase();
    await first.db.kysely.insertInto('users').values({ id: 'user_reuse_1', email: 'reuse@example.com', name: 'r' }).execute();
    await sql`begin`.execute(first.db.kysely);
    await first.close();

    const second = await createTestDatabase();
    try {
      expect(await second.db.kysely.selectFrom('users').selectAll().execute()).toEqual([]);
      const versions = await second.db.kysely.selectFrom('schema_migrations').select('version').execute();
      expect(versions.length).toBeGreaterThan(10);
      // Row-level security still confines a caller to their rows.
      await second.db.kysely.insertInto('users').values({ id: 'user_reuse_2', email: 'two@example.com', name: 't' }).execute();
      const seen = await second.db.withUser('user_someone_else', (trx) => trx.selectFrom('users').select('id').execute());
      expect(seen).toEqual([]);
    } finally {
      await second.close();
    }
  });

  it('a database whose schema a test changed is not handed on', async () => {
    const broken = await createTestDatabase();
    await sql`drop table usage_events cascade`.execute(broken.db.kysely);
    await broken.close();
    for (let i = 0; i < 3; i++) {
      const next = await createTestDatabase();
      try {
        const tables = await next.db.kysely.introspection.getTables();
        expect(tables.map((t) => t.name)).toContain('usage_events');
      } finally {
        await next.close();
      }
    }
  });
});
