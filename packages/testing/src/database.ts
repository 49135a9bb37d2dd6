import { randomBytes } from 'node:crypto';
import { createDatabase, type Database, migrate } from '@aop/db';
import pg from 'pg';

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
    const db = createDatabase();
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
