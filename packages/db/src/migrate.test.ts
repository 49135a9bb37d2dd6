import { createTestDatabase } from '@aop/testing';
import { describe, expect, it } from 'vitest';
import { loadMigrations, migrate } from './migrate.js';

describe('migrations', () => {
  it('are numbered without gaps and re-running applies nothing', async () => {
    const files = loadMigrations();
    expect(files.map((m) => m.version)).toEqual(files.map((_, i) => i + 1));
    const t = await createTestDatabase();
    try {
      expect(await migrate(t.db)).toEqual([]);
      const rows = await t.db.kysely.selectFrom('schema_migrations').select(['version', 'name']).orderBy('version').execute();
      expect(rows.map((r) => r.version)).toEqual(files.map((m) => m.version));
    } finally {
      await t.close();
    }
  });

  it('a failing migration rolls back entirely', async () => {
    const t = await createTestDatabase();
    try {
      const broken = [{ version: 9001, name: 'broken', sql: 'create table half_done (id int); select no_such_function();' }];
      await expect(migrate(t.db, broken)).rejects.toThrow();
      const tables = await t.db.kysely.introspection.getTables();
      expect(tables.map((x) => x.name)).not.toContain('half_done');
      const versions = await t.db.kysely.selectFrom('schema_migrations').select('version').execute();
      expect(versions.map((v) => v.version)).not.toContain(9001);
    } finally {
      await t.close();
    }
  });
});
