import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { PGliteDialect } from './pglite-dialect.js';
import type { DB } from './schema.js';

export type Tx = Transaction<DB>;

export interface DatabaseOptions {
  /** A Postgres server; when absent PGlite runs embedded. */
  databaseUrl?: string | undefined;
  /** Where PGlite keeps its files; in memory when absent. */
  pgliteDir?: string | undefined;
  /** A PGlite data directory dump to start from (tests clone a migrated template this way). */
  pgliteTemplate?: Blob | undefined;
  /**
   * An open embedded database to use instead of starting one, and what to do with it on `close()` instead of
   * closing it (tests reset and reuse instances: starting PGlite costs about a second of CPU).
   */
  pglite?: { instance: PGlite; release(pglite: PGlite): Promise<void> } | undefined;
  /** Pool size for a server. */
  poolSize?: number;
}

export interface Database {
  readonly kind: 'pglite' | 'postgres';
  /** The owner connection: migrations and system lookups (sign-in, session cookies). */
  readonly kysely: Kysely<DB>;
  /**
   * Runs `fn` in one transaction as the caller: the non-owner role `app_user`
   * with `app.user_id` set, so row-level security hides every other user's rows
   * even from a query that forgets its `where`.
   */
  withUser<T>(userId: string, fn: (trx: Tx) => Promise<T>): Promise<T>;
  /** The embedded database's files as a tarball (PGlite only; used to clone test databases). */
  dumpPglite(): Promise<Blob>;
  /** Answers true when a trivial query succeeds. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

// Both drivers read int8 as a number (counts, sums) and numeric as a string (money).
const INT8 = 20;
const NUMERIC = 1700;

interface Engine {
  kind: 'pglite' | 'postgres';
  kysely: Kysely<DB>;
  pglite?: PGlite;
}

/** An embedded database with the platform's type parsers. */
export function openPglite(dir?: string, template?: Blob): PGlite {
  if (dir) mkdirSync(dir, { recursive: true });
  return new PGlite({
    ...(dir ? { dataDir: dir } : {}),
    ...(template ? { loadDataDir: template } : {}),
    parsers: { [INT8]: (v: string) => Number(v), [NUMERIC]: (v: string) => v },
  });
}

function pgliteDatabase(options: DatabaseOptions): Engine {
  const pglite = options.pglite?.instance ?? openPglite(options.pgliteDir, options.pgliteTemplate);
  const dialect = new PGliteDialect(pglite, options.pglite?.release);
  return { kind: 'pglite', pglite, kysely: new Kysely<DB>({ dialect }) };
}

function postgresDatabase(url: string, poolSize: number): Engine {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client losing its server must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  return { kind: 'postgres', kysely: new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }) };
}

export function createDatabase(options: DatabaseOptions = {}): Database {
  const { kysely, kind, pglite } = options.databaseUrl
    ? postgresDatabase(options.databaseUrl, options.poolSize ?? 10)
    : pgliteDatabase(options);

  return {
    kind,
    kysely,
    withUser(userId, fn) {
      return kysely.transaction().execute(async (trx) => {
        // One round trip: `role` set through set_config is `SET LOCAL ROLE`.
        await sql`select set_config('role', 'app_user', true), set_config('app.user_id', ${userId}, true)`.execute(trx);
        return fn(trx);
      });
    },
    async dumpPglite() {
      if (!pglite) throw new Error('Only an embedded database can be dumped');
      return pglite.dumpDataDir('none');
    },
    async ping() {
      try {
        await sql`select 1`.execute(kysely);
        return true;
      } catch {
        return false;
      }
    },
    close: () => kysely.destroy(),
  };
}
