import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { Database } from './database.js';

/** `packages/db/migrations`, from both `src/` and `dist/`. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Numbered SQL files: `0001_foundation.sql`, `0002_…`. */
export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file.slice(5, -4),
      sql: readFileSync(`${dir}${file}`, 'utf8'),
    }));
}

// Any fixed number: every instance starting at once waits on the same lock.
const MIGRATION_LOCK = 7_270_001;

/**
 * Applies the pending migrations in one transaction under an advisory lock, so
 * replicas starting together apply each file once, and a failing file leaves
 * the schema as it was. Returns the versions applied.
 */
export async function migrate(db: Database, migrations = loadMigrations()): Promise<number[]> {
  return db.kysely.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
    await sql`create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`.execute(trx);
    const done = new Set((await trx.selectFrom('schema_migrations').select('version').execute()).map((r) => r.version));
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await sql.raw(m.sql).execute(trx);
      await trx.insertInto('schema_migrations').values({ version: m.version, name: m.name }).execute();
      applied.push(m.version);
    }
    return applied;
  });
}
