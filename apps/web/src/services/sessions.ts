import { newId, randomHex, sha256Hex } from '@aop/core';
import type { Kysely } from 'kysely';
import type { DB } from '@aop/db';

/** Spec §2.1 / §3.3: the session cookie and its server-side record live 30 days. */
export const SESSION_COOKIE = 'service-session';
export const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export interface SessionUser {
  id: string;
  name: string;
  email: string;
  isAdmin: boolean;
  sessionId: string;
}

export interface NewSession {
  /** The cookie value; only its SHA-256 is stored. */
  token: string;
  sessionId: string;
  expiresAt: Date;
}

/** Creates a session record for `userId` and returns the token for the cookie. */
export async function createSession(
  db: Kysely<DB>,
  userId: string,
  meta: { ip?: string | null; userAgent?: string | null } = {},
): Promise<NewSession> {
  const token = randomHex(32);
  const sessionId = newId('authSession');
  const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
  await db
    .insertInto('sessions')
    .values({
      id: sessionId,
      user_id: userId,
      token_hash: sha256Hex(token),
      expires_at: expiresAt,
      ip: meta.ip ?? null,
      user_agent: meta.userAgent?.slice(0, 512) ?? null,
    })
    .execute();
  return { token, sessionId, expiresAt };
}

const TOKEN_FORMAT = /^[0-9a-f]{64}$/;

/** The user behind a live session token, or null (unknown, malformed or expired). */
export async function findSessionUser(db: Kysely<DB>, token: string, adminEmails: ReadonlySet<string>): Promise<SessionUser | null> {
  if (!TOKEN_FORMAT.test(token)) return null;
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['sessions.id as sessionId', 'users.id', 'users.name', 'users.email', 'users.is_admin'])
    .where('sessions.token_hash', '=', sha256Hex(token))
    .where('sessions.expires_at', '>', new Date())
    .executeTakeFirst();
  if (!row) return null;
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    isAdmin: row.is_admin || adminEmails.has(row.email.toLowerCase()),
    sessionId: row.sessionId,
  };
}

/** Deletes the session behind a token; succeeds whether or not it existed. */
export async function deleteSession(db: Kysely<DB>, token: string): Promise<void> {
  if (!TOKEN_FORMAT.test(token)) return;
  await db.deleteFrom('sessions').where('token_hash', '=', sha256Hex(token)).execute();
}
