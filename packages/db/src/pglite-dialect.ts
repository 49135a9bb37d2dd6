import type { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

/**
 * PGlite is one Postgres session. Kysely's connection is that session, lent to
 * one caller at a time: a transaction holds it from BEGIN to COMMIT, so no other
 * query can slip into it.
 */
class PGliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PGlite) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    if (compiled.parameters.length > 0) {
      const result = await this.pglite.query<R>(compiled.sql, [...compiled.parameters]);
      return toQueryResult(result);
    }
    // Without parameters the simple protocol runs, which also takes scripts of
    // several statements (migrations); the last statement's result is returned.
    const results = await this.pglite.exec(compiled.sql);
    const last = results.at(-1);
    return last ? toQueryResult(last as unknown as { rows: R[]; affectedRows?: number }) : { rows: [] };
  }

  // biome-ignore lint/correctness/useYield: PGlite has no cursor streaming; the contract still needs a generator.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('Streaming queries are not supported on PGlite');
  }
}

function toQueryResult<R>(result: { rows: R[]; affectedRows?: number }): QueryResult<R> {
  return result.affectedRows === undefined ? { rows: result.rows } : { rows: result.rows, numAffectedRows: BigInt(result.affectedRows) };
}

/** A channel to LISTEN on for the lifetime of the driver, and who hears its notifications. */
export interface PGliteListener {
  channel: string;
  notify(payload: string): void;
}

/** How the one session is used now: lent out (0 or 1) and callers queued for it (read by /metrics). */
export interface PGliteUse {
  inUse: number;
  waiting: number;
}

class PGliteDriver implements Driver {
  readonly #connection: PGliteConnection;
  #queue: Promise<void> = Promise.resolve();
  #release: (() => void) | undefined;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly pglite: PGlite,
    private readonly release: (pglite: PGlite) => Promise<void>,
    private readonly listener: PGliteListener | undefined,
    private readonly use: PGliteUse,
  ) {
    this.#connection = new PGliteConnection(pglite);
  }

  async init(): Promise<void> {
    await this.pglite.waitReady;
    // Before any transaction can hold the session (a LISTEN inside one would be undone by its rollback). PGlite hands
    // a session its own notifications while it reads the COMMIT's answer, so they arrive before the write settles.
    if (this.listener) this.#unlisten = await this.pglite.listen(this.listener.channel, this.listener.notify);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.#queue;
    let release!: () => void;
    this.#queue = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.use.waiting++;
    try {
      await previous;
    } finally {
      this.use.waiting--;
    }
    this.use.inUse = 1;
    this.#release = release;
    return this.#connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const level = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    await connection.executeQuery(CompiledQuery.raw(`begin${level}`));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(): Promise<void> {
    const release = this.#release;
    this.#release = undefined;
    this.use.inUse = 0;
    release?.();
  }

  async destroy(): Promise<void> {
    await this.#queue;
    await this.#unlisten?.();
    await this.release(this.pglite);
  }
}

export class PGliteDialect implements Dialect {
  /** The session's use, shared with the driver Kysely creates. */
  readonly use: PGliteUse = { inUse: 0, waiting: 0 };
  /** `release` runs when the Kysely instance is destroyed: closing the database, unless its owner recycles it. */
  constructor(
    private readonly pglite: PGlite,
    private readonly release: (pglite: PGlite) => Promise<void> = (p) => p.close(),
    private readonly listener?: PGliteListener,
  ) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pglite, this.release, this.listener, this.use);
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new PostgresIntrospector(db);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
}
