import { newId, randomHex, sha256Hex } from '@aop/core';
import type { DB } from '@aop/db';
import type { Kysely } from 'kysely';
import type { BackendCaller } from './clients/backend-client.js';

/** Spec §2.1 / §3.3: the session cookie and its server-side record live 30 days. */
export const SESSION_COOKIE = 'service-session';
export const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/** The signed-in user, however they proved it. */
export interface AuthUser {
  id: string;
  name: string;
  email: string;
  /** Whether a link mailed to `email` was followed (or an identity provider or wallet vouched for it). */
  emailVerified: boolean;
  isAdmin: boolean;
  /** `session` for the cookie, `apiKey` for `Authorization: Bearer sk_…`. */
  via: 'session' | 'apiKey';
  sessionId?: string;
  /** The key that authenticated the request (`via: 'apiKey'`). */
  keyId?: string;
}

/** What an account row says about who the user is, for `AuthUser`. */
export interface IdentityRow {
  id: string;
  name: string;
  email: string;
  is_admin: boolean;
  email_verified_at: Date | null;
}

/**
 * Administrator rights: the role an operator granted (`npm run cli -- admin grant`), or a VERIFIED address in
 * ADMIN_EMAILS. An address the user merely typed (at registration or in settings) grants nothing.
 */
export const hasAdminRights = (row: IdentityRow, adminEmails: ReadonlySet<string>): boolean =>
  row.is_admin || (row.email_verified_at !== null && adminEmails.has(row.email.toLowerCase()));

export const identityOf = (row: IdentityRow, adminEmails: ReadonlySet<string>) => ({
  id: row.id,
  name: row.name,
  email: row.email,
  emailVerified: row.email_verified_at !== null,
  isAdmin: hasAdminRights(row, adminEmails),
});

/** Who a call acts for, as far as the database (row-level security) and the backend (`backendCaller`) need to know. */
export type Caller = Pick<AuthUser, 'id' | 'email' | 'emailVerified'>;

/**
 * Who the backend is told is calling. The address travels only once verified: the backend grants administrator
 * rights by `x-user-email` (spec §5), so an unverified one must never reach it.
 */
export const backendCaller = (user: Caller): BackendCaller => (user.emailVerified ? { id: user.id, email: user.email } : { id: user.id });

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
  // Routes pass the app's clock; the default is for test fixtures, which sign a user in without an app.
  now = Date.now(),
): Promise<NewSession> {
  const token = randomHex(32);
  const sessionId = newId('authSession');
  const expiresAt = new Date(now + SESSION_TTL_MS);
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

/** The user behind a live session token and when the session ends, or null (unknown, malformed or expired at `now`). */
export async function findSessionUser(
  db: Kysely<DB>,
  token: string,
  adminEmails: ReadonlySet<string>,
  now: number,
): Promise<{ user: AuthUser; expiresAt: number } | null> {
  if (!TOKEN_FORMAT.test(token)) return null;
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select([
      'sessions.id as sessionId',
      'sessions.expires_at',
      'users.id',
      'users.name',
      'users.email',
      'users.is_admin',
      'users.email_verified_at',
    ])
    .where('sessions.token_hash', '=', sha256Hex(token))
    // A disabled account (account protection) has no working session.
    .where('users.disabled_at', 'is', null)
    .executeTakeFirst();
  if (!row || row.expires_at.getTime() <= now) return null;
  return { user: { ...identityOf(row, adminEmails), via: 'session', sessionId: row.sessionId }, expiresAt: row.expires_at.getTime() };
}

/** Deletes the session behind a token; succeeds whether or not it existed. */
export async function deleteSession(db: Kysely<DB>, token: string): Promise<boolean> {
  if (!TOKEN_FORMAT.test(token)) return false;
  const result = await db.deleteFrom('sessions').where('token_hash', '=', sha256Hex(token)).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Ends every session of a user (after a password reset). */
export async function deleteUserSessions(db: Kysely<DB>, userId: string): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).execute();
}
