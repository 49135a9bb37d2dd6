import { sha256Hex } from '@aop/core';
import type { Database } from '@aop/db';

/**
 * User API keys (spec §4.18). The web service creates them; the backend reads them when both share one database. The
 * owner connection is used: the key is what names the user, so there is no user to scope the lookup to yet.
 */

/** The key's owner and plan, looked up by the SHA-256 hex of the raw key (only the hash is stored). */
export const findApiKey = (db: Database, apiKey: string) =>
  db.kysely
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select(['api_keys.id as keyId', 'api_keys.user_id as userId', 'users.plan'])
    .where('api_keys.key_hash', '=', sha256Hex(apiKey))
    .executeTakeFirst();

export async function markApiKeyUsed(db: Database, keyId: string): Promise<void> {
  await db.kysely.updateTable('api_keys').set({ last_used_at: new Date() }).where('id', '=', keyId).execute();
}
