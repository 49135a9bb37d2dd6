import { randomBytes } from 'node:crypto';
import { DomainError, newId, sha256Hex } from '@aop/core';
import { type DB, type Database, type Tx, writeAudit } from '@aop/db';
import type { Kysely, Selectable } from 'kysely';
import type { InvitesTable } from '@aop/db';
import { findUserByEmail } from './accounts.service.js';

/**
 * Invites (spec §4.18 Coordination): a signed-in user invites an email address; the code is shown once to the
 * inviter and mailed to the address; only its SHA-256 is stored. An invite is `pending` until it expires, is revoked
 * by an administrator, or an account with its address is created (`accepted`, set by a database trigger whichever
 * way the account signs up).
 */

export type InviteStatus = 'pending' | 'accepted' | 'expired' | 'revoked';

/** 144 random bits, base64url: 24 characters that survive being pasted from a mail. */
export const generateInviteCode = (): string => randomBytes(18).toString('base64url');
const CODE_FORMAT = /^[A-Za-z0-9_-]{16,64}$/;
export const isInviteCode = (value: string) => CODE_FORMAT.test(value);

type InviteRow = Selectable<InvitesTable>;

export function inviteStatus(row: Pick<InviteRow, 'revoked_at' | 'accepted_at' | 'expires_at'>, now: number): InviteStatus {
  if (row.revoked_at) return 'revoked';
  if (row.accepted_at) return 'accepted';
  if (row.expires_at.getTime() <= now) return 'expired';
  return 'pending';
}

export interface InviteView {
  id: string;
  email: string;
  status: InviteStatus;
  createdAt: string;
  expiresAt: string;
  acceptedAt: string | null;
  revokedAt: string | null;
}

export const inviteView = (row: InviteRow, now: number): InviteView => ({
  id: row.id,
  email: row.email,
  status: inviteStatus(row, now),
  createdAt: row.created_at.toISOString(),
  expiresAt: row.expires_at.toISOString(),
  acceptedAt: row.accepted_at?.toISOString() ?? null,
  revokedAt: row.revoked_at?.toISOString() ?? null,
});

/** Pending invites of the user: not accepted, not revoked, not expired at `now`. */
function pendingOf(trx: Tx | Kysely<DB>, userId: string, now: Date) {
  return trx
    .selectFrom('invites')
    .where('user_id', '=', userId)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now);
}

export interface NewInvite {
  invite: InviteView;
  /** Shown this once. */
  code: string;
}

/**
 * Creates an invite from `userId` for `email` (already normalised). `maxOutstanding` caps the user's pending invites
 * (undefined: no cap, for administrators); the user's row is locked so concurrent calls cannot race past it.
 */
export async function createInvite(
  trx: Tx,
  args: { userId: string; email: string; ttlMs: number; now: number; maxOutstanding: number | undefined },
): Promise<NewInvite> {
  const now = new Date(args.now);
  await trx.selectFrom('users').select('id').where('id', '=', args.userId).forUpdate().execute();
  const pending = await pendingOf(trx, args.userId, now).select(['email']).execute();
  if (pending.some((p) => p.email === args.email)) throw new DomainError('INVITE_EMAIL_ALREADY_PENDING');
  if (args.maxOutstanding !== undefined && pending.length >= args.maxOutstanding) {
    throw new DomainError('MAXIMUM_PENDING_INVITES_REACHED', { max: args.maxOutstanding });
  }
  const code = generateInviteCode();
  const row = await trx
    .insertInto('invites')
    .values({
      id: newId('invite'),
      code_hash: sha256Hex(code),
      email: args.email,
      user_id: args.userId,
      created_at: now,
      expires_at: new Date(args.now + args.ttlMs),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { invite: inviteView(row, args.now), code };
}

/**
 * `POST /api/invite` and the administrators' create: 409 when an account has the address (already normalised),
 * else the invite is created and audited as the inviter (see `createInvite`).
 */
export async function inviteEmail(
  db: Database,
  args: { userId: string; email: string; ttlMs: number; maxOutstanding: number | undefined; ip: string; clock: () => number },
): Promise<NewInvite> {
  const { userId, email, maxOutstanding } = args;
  // The same answer `POST /api/register` gives for this address: it tells nothing new.
  if (await findUserByEmail(db.kysely, email)) throw new DomainError('USER_ALREADY_EXISTS');
  const now = args.clock();
  return db.withUser(userId, async (trx) => {
    const result = await createInvite(trx, { userId, email, ttlMs: args.ttlMs, now, maxOutstanding });
    await writeAudit(trx, { userId, action: 'invite.create', target: result.invite.id, ip: args.ip });
    return result;
  });
}

export interface AdminInviteView extends InviteView {
  invitedBy: { id: string; email: string | null; name: string | null };
  acceptedUserId: string | null;
}

/** Every invite, newest first, with who sent it (administrators). */
export async function listAllInvites(
  db: Kysely<DB>,
  now: number,
  filter: { status?: InviteStatus | undefined; limit: number; offset: number },
): Promise<{ invites: AdminInviteView[]; total: number }> {
  const nowDate = new Date(now);
  let q = db.selectFrom('invites as i').leftJoin('users as u', 'u.id', 'i.user_id');
  switch (filter.status) {
    case 'revoked':
      q = q.where('i.revoked_at', 'is not', null);
      break;
    case 'accepted':
      q = q.where('i.revoked_at', 'is', null).where('i.accepted_at', 'is not', null);
      break;
    case 'expired':
      q = q.where('i.revoked_at', 'is', null).where('i.accepted_at', 'is', null).where('i.expires_at', '<=', nowDate);
      break;
    case 'pending':
      q = q.where('i.revoked_at', 'is', null).where('i.accepted_at', 'is', null).where('i.expires_at', '>', nowDate);
      break;
  }
  const { total } = await q.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
  const rows = await q
    .selectAll('i')
    .select(['u.email as inviter_email', 'u.name as inviter_name'])
    .orderBy('i.created_at', 'desc')
    .orderBy('i.id')
    .limit(filter.limit)
    .offset(filter.offset)
    .execute();
  return {
    total: Number(total),
    invites: rows.map((r) => ({
      ...inviteView(r, now),
      invitedBy: { id: r.user_id, email: r.inviter_email, name: r.inviter_name },
      acceptedUserId: r.accepted_user_id,
    })),
  };
}

/**
 * Revokes a pending invite and audits it (`ip`: the administrator's); 404 unknown, 409 when it is no longer pending
 * (accepted, expired or revoked already).
 */
export async function revokeInvite(db: Kysely<DB>, id: string, by: string, now: number, ip: string): Promise<InviteView> {
  const row = await db.selectFrom('invites').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new DomainError('INVITE_NOT_FOUND');
  const status = inviteStatus(row, now);
  if (status !== 'pending') throw new DomainError('INVITE_NOT_OPEN', { status });
  const updated = await db
    .updateTable('invites')
    .set({ revoked_at: new Date(now), revoked_by: by })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .where('accepted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  // Accepted or revoked between the read and the update.
  if (!updated) throw new DomainError('INVITE_NO_LONGER_PENDING');
  await writeAudit(db, { userId: by, action: 'invite.revoke', target: updated.id, ip });
  return inviteView(updated, now);
}

export type VerifyAnswer =
  | { valid: true; email: string; expiresAt: string }
  | { valid: false; reason: 'unknown' | 'expired' | 'revoked' | 'accepted'; expiresAt: string | null };

/**
 * `POST /api/invites/verify`: whether a code can still be used. The address is shown only for a usable code (the
 * code is the proof of having received it); an unknown code and a malformed one answer alike.
 */
export async function verifyInvite(db: Kysely<DB>, code: string, now: number): Promise<VerifyAnswer> {
  if (!isInviteCode(code)) return { valid: false, reason: 'unknown', expiresAt: null };
  const row = await db.selectFrom('invites').selectAll().where('code_hash', '=', sha256Hex(code)).executeTakeFirst();
  if (!row) return { valid: false, reason: 'unknown', expiresAt: null };
  const status = inviteStatus(row, now);
  if (status === 'pending') return { valid: true, email: row.email, expiresAt: row.expires_at.toISOString() };
  return { valid: false, reason: status, expiresAt: row.expires_at.toISOString() };
}

/** The invite mail: who invites, the link (the code in it), and until when it works. */
export function inviteMail(args: { productName: string; publicUrl: string; inviter: string; code: string; expiresAt: string }) {
  return {
    subject: `You are invited to ${args.productName}`,
    text: [
      `${args.inviter} invited you to ${args.productName}.`,
      '',
      'Create your account here:',
      `${args.publicUrl}/register?invite=${args.code}`,
      '',
      `The invite code is ${args.code}; it works until ${args.expiresAt}.`,
      '',
      'If you do not know the sender, ignore this message.',
    ].join('\n'),
  };
}
