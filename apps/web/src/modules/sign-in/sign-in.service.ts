import { type DB, writeAudit } from '@aop/db';
import type { Kysely } from 'kysely';
import { type NewSession, createSession, deleteSession } from '../../platform/sessions.js';

/** Starts a session for the user and audits it (`session.create`; `metadata` says how the user signed in). */
export async function startSession(
  db: Kysely<DB>,
  { userId, ip, userAgent, metadata }: { userId: string; ip: string; userAgent: string | undefined; metadata: Record<string, unknown> },
  now: number,
): Promise<NewSession> {
  const session = await createSession(db, userId, { ip, userAgent }, now);
  await writeAudit(db, { userId, action: 'session.create', target: session.sessionId, ip, metadata });
  return session;
}

/** Ends the session of the token; audited (`session.delete`) when a session was deleted and its user is known. */
export async function endSession(
  db: Kysely<DB>,
  token: string,
  { user, ip }: { user: { id: string; sessionId?: string } | null | undefined; ip: string },
): Promise<void> {
  if ((await deleteSession(db, token)) && user) {
    await writeAudit(db, { userId: user.id, action: 'session.delete', target: user.sessionId ?? null, ip });
  }
}
