import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';
import type { DB } from './schema.js';

/** What can run a compiled query: the owner connection, a transaction, or `withUser`'s connection. */
type Executor = Pick<Kysely<DB>, 'executeQuery'>;

/**
 * The value argument `i` is compiled with, so its position among the compiled parameters can be found; it is replaced
 * by the caller's value before anything is sent (a NUL could not reach Postgres as text anyway).
 */
const argumentMarker = (i: number) => `\u0000arg${i}\u0000`;

/**
 * A query built and compiled once and then run with new values. On the hottest reads Kysely's builder and compiler
 * cost more CPU than the rest of the request's own work (issue #18 profiles); the SQL text never changes, only the
 * values. `build` receives a query builder and one marker per argument, and must pass each marker as a value (it is an
 * error, found at the first run, to put one where it would be compiled into the SQL text).
 */
export function prepared<Args extends unknown[], Row>(
  build: (db: Kysely<DB>, ...args: { [K in keyof Args]: never }) => Compilable<Row>,
): (db: Executor, ...args: Args) => Promise<QueryResult<Row>> {
  let compiled: CompiledQuery<Row> | undefined;
  /** For each parameter of the compiled query: the argument it takes, or -1 for a constant the builder fixed. */
  let slots: number[] = [];
  return async (db, ...args) => {
    if (!compiled) {
      const markers = Array.from({ length: build.length - 1 }, (_, i) => argumentMarker(i));
      const query = build(db as Kysely<DB>, ...(markers as never)).compile();
      slots = query.parameters.map((value) => markers.indexOf(value as string));
      for (const i of markers.keys()) {
        if (!slots.includes(i)) throw new Error(`prepared query: argument ${i} is not a value of ${query.sql}`);
      }
      compiled = query;
    }
    const query = compiled;
    const parameters = query.parameters.map((value, i) => ((slots[i] ?? -1) < 0 ? value : args[slots[i] as number]));
    return db.executeQuery<Row>({ ...query, parameters });
  };
}
