import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, type Database, loadMigrations, migrate, openPglite } from '@aop/db';
import pg from 'pg';

/**
 * A migrated PGlite data directory, dumped once and kept on disk (keyed by the
 * migrations' versions, names and text), so each test database starts in about half a second
 * instead of running initdb and every migration again.
 */
export async function pgliteTemplate(): Promise<Blob> {
  const key = createHash('sha256')
    .update(
      loadMigrations()
        // Versions and names too: a renumbered migration is recorded under its new version.
        .map((m) => `${m.version}:${m.name}\n${m.sql}`)
        .join('\0'),
    )
    .digest('hex')
    .slice(0, 16);
  const dir = join(tmpdir(), 'aop-test-cache');
  const file = join(dir, `pglite-template-${key}.tar`);
  if (existsSync(file)) return new Blob([readFileSync(file)]);
  const db = createDatabase();
  await migrate(db);
  const dump = await db.dumpPglite();
  await db.close();
  mkdirSync(dir, { recursive: true });
  const tmp = `${file}.${process.pid}`;
  writeFileSync(tmp, Buffer.from(await dump.arrayBuffer()));
  renameSync(tmp, file);
  return dump;
}

/**
 * Embedded databases handed back by closed test databases, emptied, for the next one in this worker (the fast test
 * tier shares modules between files): starting PGlite from the template costs about a second of CPU, emptying one
 * a few milliseconds. An instance whose schema a test changed (a dropped table) is closed instead.
 */
type PGlite = ReturnType<typeof openPglite>;

const idle: PGlite[] = [];
let schemaOf: Promise<string> | undefined;

const SCHEMA = `select string_agg(table_name, ',' order by table_name) as tables from information_schema.tables
  where table_schema = 'public'`;

async function recycle(pglite: PGlite, template: string): Promise<void> {
  try {
    // Whatever a test left open or set on the session goes first; then every row but the migrations' record.
    await pglite.exec('rollback; reset all; reset role; reset session authorization;');
    const { rows } = await pglite.query<{ tables: string }>(SCHEMA);
    if (rows[0]?.tables !== template) throw new Error('schema changed');
    const tables = template.split(',').filter((name) => name !== 'schema_migrations');
    await pglite.exec(`truncate ${tables.map((name) => `"${name}"`).join(', ')} restart identity cascade`);
    idle.push(pglite);
  } catch {
    await pglite.close().catch(() => {});
  }
}

async function pooledPglite(): Promise<{ instance: PGlite; release(pglite: PGlite): Promise<void> }> {
  const instance = idle.pop() ?? openPglite(undefined, await pgliteTemplate());
  schemaOf ??= instance.query<{ tables: string }>(SCHEMA).then(({ rows }) => rows[0]?.tables ?? '');
  const template = await schemaOf;
  let released = false;
  return {
    instance,
    release: async (pglite) => {
      if (released) return;
      released = true;
      await recycle(pglite, template);
    },
  };
}

export interface TestDatabase {
  db: Database;
  /** The server URL of this test's own database; undefined on PGlite. */
  databaseUrl: string | undefined;
  close(): Promise<void>;
}

/**
 * A fresh, migrated database for one test file: an in-memory PGlite by default,
 * or a new database on the server named by DATABASE_URL (dropped on close), so
 * test files never see each other's rows.
 */
export async function createTestDatabase(serverUrl = process.env.DATABASE_URL): Promise<TestDatabase> {
  if (!serverUrl) {
    const db = createDatabase({ pglite: await pooledPglite() });
    await migrate(db);
    return { db, databaseUrl: undefined, close: () => db.close() };
  }
  const name = `aop_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = createDatabase({ databaseUrl: url.toString(), poolSize: 5 });
  await migrate(db);
  return {
    db,
    databaseUrl: url.toString(),
    async close() {
      await db.close();
      const dropper = new pg.Client({ connectionString: serverUrl });
      await dropper.connect();
      try {
        await dropper.query(`drop database if exists ${name} with (force)`);
      } finally {
        await dropper.end();
      }
    },
  };
}
