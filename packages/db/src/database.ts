import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { CompiledQuery, Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { corkingSocket } from './corking-socket.js';
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
  /**
   * `withUser` for reads: a `read only` transaction whose answer is handed back without waiting for its COMMIT (a
   * read-only COMMIT decides nothing; the connection's next statement queues behind it). For the hottest reads.
   */
  readAsUser<T>(userId: string, fn: (trx: Tx) => Promise<T>): Promise<T>;
  /** The embedded database's files as a tarball (PGlite only; used to clone test databases). */
  dumpPglite(): Promise<Blob>;
  /**
   * Calls `listener` with a user's id whenever one of their sign-in facts changes: a session ended, a key revoked, the
   * account disabled, renamed, re-addressed, verified or made administrator (migration 0020, whoever wrote it). For
   * this process's own writes the call comes before the write's promise settles; another process's writes are heard
   * moments after they commit. Returns the unsubscribe function.
   */
  onAuthChange(listener: (userId: string) => void): () => void;
  /**
   * How the connections are used now (for /metrics): a server's pool as `pg` counts it; PGlite is one session lent
   * to one caller at a time (max 1), the others wait for it.
   */
  pool(): { max: number; inUse: number; idle: number; waiting: number };
  /** Answers true when a trivial query succeeds. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** Ids the platform mints (`usr_` + base64url) and test fixtures: nothing here can end a SQL string literal. */
const LITERAL_SAFE_ID = /^[A-Za-z0-9_-]{1,100}$/;

// Both drivers read int8 as a number (counts, sums) and numeric as a string (money).
const INT8 = 20;
const NUMERIC = 1700;

const COMMIT = CompiledQuery.raw('commit');
/** BEGIN and the caller's role in one simple-protocol message; `userId` must match `LITERAL_SAFE_ID`. */
const beginAs = (userId: string, readOnly: boolean) =>
  CompiledQuery.raw(
    `begin${readOnly ? ' read only' : ''}; select set_config('role', 'app_user', true), set_config('app.user_id', '${userId}', true)`,
  );
const ROLLBACK = CompiledQuery.raw('rollback');

/** The channel migration 0020's triggers notify on. */
const AUTH_CHANGE_CHANNEL = 'aop_auth_change';

type Notify = (payload: string) => void;

interface Engine {
  kind: 'pglite' | 'postgres';
  kysely: Kysely<DB>;
  pglite?: PGlite;
  pool: Database['pool'];
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

function pgliteDatabase(options: DatabaseOptions, notify: Notify): Engine {
  const pglite = options.pglite?.instance ?? openPglite(options.pgliteDir, options.pgliteTemplate);
  const dialect = new PGliteDialect(pglite, options.pglite?.release, { channel: AUTH_CHANGE_CHANNEL, notify });
  const pool = () => ({ max: 1, inUse: dialect.use.inUse, idle: 1 - dialect.use.inUse, waiting: dialect.use.waiting });
  return { kind: 'pglite', pglite, kysely: new Kysely<DB>({ dialect }), pool };
}

function postgresDatabase(url: string, poolSize: number, notify: Notify): Engine {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    // A connection sends each statement without waiting for the previous one's answer (they still run in order):
    // `asUser` lets BEGIN travel with the first statement and a read-only COMMIT with the next checkout's.
    pipeline: true,
    stream: corkingSocket,
    // Longer than any cache fed by auth-change notifications lives (seconds): while an entry could still be served,
    // the connection that read it is still open and listening (see `onAuthChange`).
    idleTimeoutMillis: 30_000,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client losing its server must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  // Every pooled connection listens: a session hears its own NOTIFY with its COMMIT's answer, so a change made here is
  // heard before the write's promise settles; the idle ones hear other processes' changes as they commit.
  pool.on('connect', (client) => {
    client.on('notification', (message) => {
      if (message.channel === AUTH_CHANGE_CHANNEL && message.payload) notify(message.payload);
    });
    client.query(`listen ${AUTH_CHANGE_CHANNEL}`).catch(() => undefined);
  });
  const stats = () => ({ max: poolSize, inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount });
  return { kind: 'postgres', kysely: new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }), pool: stats };
}

export function createDatabase(options: DatabaseOptions = {}): Database {
  const authListeners = new Set<(userId: string) => void>();
  const notify: Notify = (userId) => {
    for (const listener of authListeners) listener(userId);
  };
  const { kysely, kind, pglite, pool } = options.databaseUrl
    ? postgresDatabase(options.databaseUrl, options.poolSize ?? 10, notify)
    : pgliteDatabase(options, notify);

  function asUser<T>(userId: string, fn: (trx: Tx) => Promise<T>, readOnly: boolean): Promise<T> {
    // An id of the platform's own shape goes into the statement as a literal, so BEGIN and the caller's role travel
    // as one simple-protocol message: one round trip instead of two. Anything else takes the parameterized path.
    if (!LITERAL_SAFE_ID.test(userId)) {
      const transaction = kysely.transaction();
      return (readOnly ? transaction.setAccessMode('read only') : transaction).execute(async (trx) => {
        await sql`select set_config('role', 'app_user', true), set_config('app.user_id', ${userId}, true)`.execute(trx);
        return fn(trx);
      });
    }
    return kysely.connection().execute(async (connection) => {
      // The bare connection, to send BEGIN and COMMIT past Kysely's one-statement-at-a-time queue: on a server the
      // pool's connections pipeline (see `postgresDatabase`), so BEGIN is not waited for but travels with `fn`'s first
      // statement (one write, one round trip), which Postgres runs after it. `role` set through set_config is `SET
      // LOCAL ROLE`: both settings end with the transaction. A failed `begin; set_config` leaves the transaction
      // aborted and every statement behind it refused ("current transaction is aborted"), so nothing of `fn` can run
      // outside the caller's role; `begin` itself fails only with the connection, which fails what follows too.
      const bare = await connection.getExecutor().provideConnection(async (c) => c);
      const begun = bare.executeQuery(beginAs(userId, readOnly));
      begun.catch(() => undefined);
      try {
        const result = await fn(connection as unknown as Tx);
        await begun;
        const committed = bare.executeQuery(COMMIT);
        // A read-only transaction has nothing left to decide at COMMIT: its rows were read from its snapshot. The
        // answer goes out now; the connection returns to the pool with COMMIT in flight, and the next statement on it
        // waits behind it (pipelined, in order).
        if (readOnly && kind === 'postgres') committed.catch(() => undefined);
        else await committed;
        return result;
      } catch (err) {
        // Also after a failed BEGIN or COMMIT: the connection must go back to the pool outside any transaction.
        await begun.catch(() => undefined);
        await bare.executeQuery(ROLLBACK).catch(() => undefined);
        throw err;
      }
    });
  }

  return {
    kind,
    kysely,
    withUser: (userId, fn) => asUser(userId, fn, false),
    readAsUser: (userId, fn) => asUser(userId, fn, true),
    async dumpPglite() {
      if (!pglite) throw new Error('Only an embedded database can be dumped');
      return pglite.dumpDataDir('none');
    },
    onAuthChange(listener) {
      authListeners.add(listener);
      return () => authListeners.delete(listener);
    },
    pool,
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
