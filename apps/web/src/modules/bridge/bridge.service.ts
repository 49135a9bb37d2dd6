import { newId } from '@aop/core';
import { type Database, sql } from '@aop/db';

/** The bridge's channels (defined with the schemas, whose request schema lists them). */

/** The bridge message bus (spec §4.8): `bridge_messages` and the per-reader claims in `bridge_reads`. */

export interface BridgeMessage {
  id: string;
  sender: string;
  channel: string;
  content: string;
  priority: string;
  created_at: Date;
}

/** Stores one message and answers it without its content. */
export async function sendBridgeMessage(
  db: Database,
  message: { sender: string; content: string; channel: string; priority: string; createdAt: Date },
): Promise<Omit<BridgeMessage, 'content'>> {
  const { sender, content, channel, priority, createdAt } = message;
  return db.kysely
    .insertInto('bridge_messages')
    .values({ id: newId('bridgeMessage'), sender, content, channel, priority, created_at: createdAt })
    .returning(['id', 'sender', 'channel', 'priority', 'created_at'])
    .executeTakeFirstOrThrow();
}

/**
 * The messages of `channel` after `since` that `reader` has not read, oldest first, at most `limit`. A named reader
 * (anything but `unknown`) claims them, so each is answered to that reader once.
 */
export async function readBridgeInbox(
  db: Database,
  query: { channel: string; reader: string; since: Date; limit: number },
  clock: () => number,
): Promise<BridgeMessage[]> {
  const { channel, reader, since, limit } = query;
  return db.kysely.transaction().execute(async (trx) => {
    const unread = await trx
      .selectFrom('bridge_messages as m')
      .select(['m.id', 'm.sender', 'm.channel', 'm.content', 'm.priority', 'm.created_at'])
      .where('m.channel', '=', channel)
      .where('m.created_at', '>', since)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('bridge_reads as r').select(sql`1`.as('one')).whereRef('r.message_id', '=', 'm.id').where('r.reader', '=', reader),
          ),
        ),
      )
      .orderBy('m.created_at')
      .orderBy('m.id')
      .limit(limit)
      .execute();
    if (reader === 'unknown' || unread.length === 0) return unread;
    // Marking is the claim: two readers of one name polling at once each get a message once.
    const claimed = await trx
      .insertInto('bridge_reads')
      .values(unread.map((m) => ({ message_id: m.id, reader, read_at: new Date(clock()) })))
      .onConflict((oc) => oc.doNothing())
      .returning('message_id')
      .execute();
    const ids = new Set(claimed.map((c) => c.message_id));
    return unread.filter((m) => ids.has(m.id));
  });
}

/** The number of stored messages and the newest one, for the health endpoint. */
export async function bridgeStats(
  db: Database,
): Promise<{ total: number; last: Pick<BridgeMessage, 'created_at' | 'sender' | 'channel'> | undefined }> {
  const [{ total }] = (await sql<{ total: number }>`select count(*)::int as total from bridge_messages`.execute(db.kysely)).rows as [
    { total: number },
  ];
  const last = await db.kysely
    .selectFrom('bridge_messages')
    .select(['created_at', 'sender', 'channel'])
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return { total, last };
}
