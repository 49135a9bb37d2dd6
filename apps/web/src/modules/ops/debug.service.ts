import type { DB } from '@aop/db';
import type { Kysely } from 'kysely';

/** The newest applied migration; undefined when there is none or the table cannot be read (the diagnostic still answers). */
export function latestMigration(db: Kysely<DB>) {
  return db
    .selectFrom('schema_migrations')
    .select(['version', 'name', 'applied_at'])
    .orderBy('version', 'desc')
    .limit(1)
    .executeTakeFirst()
    .catch(() => undefined);
}

/** How many email addresses are suppressed (hard bounce or complaint). */
export function suppressedAddressCount(db: Kysely<DB>): Promise<number> {
  return db
    .selectFrom('email_suppressions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst()
    .then((r) => Number(r?.n ?? 0));
}

/** Stored email provider events: how many, and when the latest arrived. */
export function emailEventStats(db: Kysely<DB>) {
  return db
    .selectFrom('email_events')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('received_at').as('at')])
    .executeTakeFirst();
}

/** Stored hosting provider events: how many, and when the latest arrived. */
export function hostingEventStats(db: Kysely<DB>) {
  return db
    .selectFrom('hosting_events')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('received_at').as('at')])
    .executeTakeFirst();
}
