import { DomainError, newId, sha256Hex } from '@aop/core';
import { type DB, type Database, type Tx, writeAudit } from '@aop/db';
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type AuthUser, identityOf } from '../../platform/sessions.js';

/** Reference behaviour: at most 10 keys per account, names up to 64 characters. */
export const MAX_KEYS_PER_USER = 10;
export const KEY_NAME_MAX = 64;
const PREFIX_LENGTH = 10;

/** `sk_` and 192 random bits: too much entropy to guess, so a SHA-256 is enough to store. */
export const generateApiKey = (): string => `sk_${randomBytes(24).toString('base64url')}`;
export const keyPreview = (prefix: string) => `${prefix}...`;

export interface ApiKeyView {
  id: string;
  name: string;
  keyPreview: string;
  createdAt: string;
  lastUsed: string | null;
}

const view = (row: { id: string; name: string; key_prefix: string; created_at: Date; last_used_at: Date | null }): ApiKeyView => ({
  id: row.id,
  name: row.name,
  keyPreview: keyPreview(row.key_prefix),
  createdAt: row.created_at.toISOString(),
  lastUsed: row.last_used_at?.toISOString() ?? null,
});

const COLUMNS = ['id', 'name', 'key_prefix', 'created_at', 'last_used_at'] as const;

export async function listApiKeys(trx: Tx): Promise<ApiKeyView[]> {
  const rows = await trx.selectFrom('api_keys').select(COLUMNS).orderBy('created_at', 'desc').execute();
  return rows.map(view);
}

export async function getApiKey(trx: Tx, id: string): Promise<ApiKeyView | null> {
  const row = await trx.selectFrom('api_keys').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row ? view(row) : null;
}

/** Creates a key for the user of the transaction; the raw key is returned this once only. */
export async function createApiKey(
  trx: Tx,
  userId: string,
  name: string,
): Promise<{ id: string; name: string; key: string; createdAt: string }> {
  // Serialises concurrent creations by one user, so the limit cannot be raced past.
  await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
  const { count } = await trx
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  if (Number(count) >= MAX_KEYS_PER_USER) throw new DomainError('MAXIMUM_API_KEYS_REACHED', { max: MAX_KEYS_PER_USER });
  const key = generateApiKey();
  const id = newId('apiKey');
  const row = await trx
    .insertInto('api_keys')
    .values({ id, user_id: userId, name, key_prefix: key.slice(0, PREFIX_LENGTH), key_hash: sha256Hex(key) })
    .returning(['created_at'])
    .executeTakeFirstOrThrow();
  return { id, name, key, createdAt: row.created_at.toISOString() };
}

export async function deleteApiKey(trx: Tx, id: string): Promise<boolean> {
  const result = await trx.deleteFrom('api_keys').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Creates the user's key and audits it, in one transaction as the user (row-level security). */
export function createUserApiKey(db: Database, { userId, name, ip }: { userId: string; name: string; ip: string }) {
  return db.withUser(userId, async (trx) => {
    const key = await createApiKey(trx, userId, name);
    await writeAudit(trx, { userId, action: 'api_key.create', target: key.id, ip });
    return key;
  });
}

/** Revokes one of the user's keys and audits it, in one transaction as the user; false when there is no such key. */
export function revokeApiKey(db: Database, { userId, id, ip }: { userId: string; id: string; ip: string }): Promise<boolean> {
  return db.withUser(userId, async (trx) => {
    const done = await deleteApiKey(trx, id);
    if (done) await writeAudit(trx, { userId, action: 'api_key.revoke', target: id, ip });
    return done;
  });
}

const KEY_FORMAT = /^sk_[A-Za-z0-9_-]{20,128}$/;

export interface KeyOwner {
  keyId: string;
  user: AuthUser;
  plan: string;
}

/**
 * The owner of a raw key (system look-up: the caller is not known yet).
 * `last_used_at` is written at most once a minute per key, so API traffic does
 * not turn every read into a write.
 */
export async function findKeyOwner(
  db: Kysely<DB>,
  rawKey: string,
  adminEmails: ReadonlySet<string>,
  now: number,
): Promise<KeyOwner | null> {
  if (!KEY_FORMAT.test(rawKey)) return null;
  const row = await db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select([
      'api_keys.id as keyId',
      'api_keys.last_used_at',
      'users.id',
      'users.name',
      'users.email',
      'users.is_admin',
      'users.email_verified_at',
      'users.plan',
    ])
    .where('api_keys.key_hash', '=', sha256Hex(rawKey))
    .where('users.disabled_at', 'is', null)
    .executeTakeFirst();
  if (!row) return null;
  if (!row.last_used_at || now - row.last_used_at.getTime() > 60_000) {
    await db
      .updateTable('api_keys')
      .set({ last_used_at: new Date(now) })
      .where('id', '=', row.keyId)
      .execute();
  }
  return {
    keyId: row.keyId,
    plan: row.plan,
    user: { ...identityOf(row, adminEmails), via: 'apiKey', keyId: row.keyId },
  };
}
