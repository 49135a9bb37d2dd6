import { DomainError, newId, sha256Hex } from '@aop/core';
import { SHARE_DECIMALS, type ShareRecipient, allocateByShares, formatScaled, parseShareRecipients } from '@aop/core/money';
import type { Database, Tx } from '@aop/db';
import { requireOwnAgent } from '../../platform/owned-agent.js';
import { SPLIT_NAME_MAX, SPLIT_RECIPIENTS_MAX } from './skills.schemas.js';
import { normalizeUsd } from '../payments/money.js';
import { USDC_DECIMALS, findBooking, findSettlement, parseUsdc, requireAccepted } from './booking-settlement.service.js';

/**
 * The built-in skill `instant-split` (spec §4.18; docs/decisions.md "Booking settlement and instant splits"): an amount
 * of USDC divided among wallets by shares and recorded at once, either a free amount or the fee of a settled booking
 * that the caller's agent received. The parts are cut with the royalty splits' rule (`allocateByShares`), exact to
 * USDC's 6 decimals. Like royalty splits, nothing is sent on chain: the split is the record of who is owed what.
 */

/** `Idempotency-Key`: visible ASCII, as the IETF draft and Stripe use it. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export interface SplitRecipientView {
  address: string;
  share: number;
  amount: string;
}

export interface InstantSplitView {
  id: string;
  name: string | null;
  agentId: string | null;
  bookingId: string | null;
  amount: string;
  currency: 'USDC';
  recipients: SplitRecipientView[];
  createdAt: string;
}

export interface InstantSplitRequest {
  amount?: string;
  bookingId?: string;
  agentId?: string | null;
  name?: string | null;
  /** Checked here: their errors name the entry's index, which a schema's error cannot. */
  recipients: unknown[];
  idempotencyKey?: string;
}

/** The recipients, a bounded non-empty list each checked by the split rule of `@aop/core/money`. */
function parseRecipients(entries: unknown[]): ShareRecipient[] {
  if (entries.length === 0) throw new DomainError('RECIPIENTS_NON_EMPTY_ARRAY');
  if (entries.length > SPLIT_RECIPIENTS_MAX) throw new DomainError('TOO_MANY_RECIPIENTS', { max: SPLIT_RECIPIENTS_MAX });
  return parseShareRecipients(entries);
}

function parseName(name: string | null | undefined): string | null {
  const trimmed = name?.trim();
  if (!trimmed) return null;
  if (trimmed.length > SPLIT_NAME_MAX) throw new DomainError('FIELD_TOO_LONG', { field: 'name', max: SPLIT_NAME_MAX });
  return trimmed;
}

export function checkedIdempotencyKey(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(value)) throw new DomainError('IDEMPOTENCY_KEY_INVALID');
  return value;
}

/** What the split is of: an amount, or a settled booking's fee received by the caller's agent. */
type Source = { amount: bigint; agentId: string | null; bookingId: null } | { amount: bigint; agentId: string; bookingId: string };

async function sourceOf(db: Database, userId: string, request: InstantSplitRequest): Promise<Source> {
  const agentId = request.agentId === undefined || request.agentId === null ? null : request.agentId;
  if ((request.amount === undefined) === (request.bookingId === undefined)) throw new DomainError('AMOUNT_OR_BOOKING_ID');
  if (request.amount !== undefined) {
    const amount = parseUsdc(request.amount);
    if (amount === undefined) throw new DomainError('AMOUNT_USDC_DECIMAL_STRING');
    if (amount === 0n) throw new DomainError('AMOUNT_POSITIVE_DECIMAL_STRING');
    return { amount, agentId, bookingId: null };
  }
  const booking = await findBooking(db, userId, request.bookingId as string);
  if (booking.payee_user_id !== userId) throw new DomainError('BOOKING_PAYEE_ONLY');
  requireAccepted(booking);
  if (agentId !== null && agentId !== booking.payee_agent_id) throw new DomainError('BOOKING_SPLIT_AGENT');
  // What was settled, not the terms: the settlement is the record of what the payer paid.
  const settlement = await findSettlement(db, userId, booking.id);
  if (!settlement) throw new DomainError('BOOKING_NOT_SETTLED');
  return { amount: parseUsdc(settlement.amount) as bigint, agentId: booking.payee_agent_id, bookingId: booking.id };
}

const SPLIT_COLUMNS = ['id', 'name', 'agent_id', 'booking_id', 'request_hash', 'amount', 'created_at'] as const;

interface SplitRow {
  id: string;
  name: string | null;
  agent_id: string | null;
  booking_id: string | null;
  request_hash: string;
  amount: string;
  created_at: Date;
}

/** The caller's splits with their payouts, in the order given. */
async function withPayouts(trx: Tx, rows: SplitRow[]): Promise<InstantSplitView[]> {
  if (rows.length === 0) return [];
  const payouts = await trx
    .selectFrom('instant_split_payouts')
    .select(['split_id', 'address', 'share', 'amount'])
    .where(
      'split_id',
      'in',
      rows.map((row) => row.id),
    )
    .orderBy('split_id')
    .orderBy('ordinal')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    agentId: row.agent_id,
    bookingId: row.booking_id,
    amount: normalizeUsd(row.amount),
    currency: 'USDC' as const,
    recipients: payouts
      .filter((p) => p.split_id === row.id)
      .map((p) => ({ address: p.address, share: Number(p.share), amount: normalizeUsd(p.amount) })),
    createdAt: row.created_at.toISOString(),
  }));
}

/**
 * Records a split. Once per booking (a booking's fee is split once) and once per `Idempotency-Key`: a repeat of the
 * same request, even a concurrent one, answers the split already recorded (`created: false`); the same booking or key
 * with a different request is 409. Without a key or a booking every request records a new split.
 */
export async function createInstantSplit(
  db: Database,
  userId: string,
  request: InstantSplitRequest,
): Promise<{ split: InstantSplitView; created: boolean }> {
  const idempotencyKey = checkedIdempotencyKey(request.idempotencyKey);
  const recipients = parseRecipients(request.recipients);
  const name = parseName(request.name);
  const source = await sourceOf(db, userId, request);
  const parts = allocateByShares(
    source.amount,
    recipients.map((r) => r.share),
  );
  // The request as recorded, normalised (amounts as units, addresses lower-case), so a retry matches its first copy.
  const requestHash = sha256Hex(
    JSON.stringify({
      amount: source.amount.toString(),
      bookingId: source.bookingId,
      agentId: source.agentId,
      name,
      recipients: recipients.map((r) => [r.address, r.share.toString()]),
    }),
  );

  return db.withUser(userId, async (trx) => {
    if (source.agentId !== null && source.bookingId === null) await requireOwnAgent(trx, source.agentId);
    const id = newId('instantSplit');
    const inserted = await trx
      .insertInto('instant_splits')
      .values({
        id,
        user_id: userId,
        agent_id: source.agentId,
        booking_id: source.bookingId,
        idempotency_key: idempotencyKey ?? null,
        request_hash: requestHash,
        name,
        amount: formatScaled(source.amount, USDC_DECIMALS),
      })
      // A unique booking or (user, key) already taken: the conflict waits for the other transaction, then skips.
      .onConflict((oc) => oc.doNothing())
      .returning(SPLIT_COLUMNS)
      .executeTakeFirst();
    if (inserted) {
      await trx
        .insertInto('instant_split_payouts')
        .values(
          recipients.map((r, i) => ({
            split_id: id,
            ordinal: i,
            user_id: userId,
            address: r.address,
            share: formatScaled(r.share, SHARE_DECIMALS),
            amount: formatScaled(parts[i] as bigint, USDC_DECIMALS),
          })),
        )
        .execute();
      const [split] = await withPayouts(trx, [inserted]);
      return { split: split as InstantSplitView, created: true };
    }
    // Which unique rule refused the row: the booking's single split, else the caller's key.
    const byBooking =
      source.bookingId === null
        ? undefined
        : await trx.selectFrom('instant_splits').select(SPLIT_COLUMNS).where('booking_id', '=', source.bookingId).executeTakeFirst();
    const byKey =
      byBooking || idempotencyKey === undefined
        ? undefined
        : await trx
            .selectFrom('instant_splits')
            .select(SPLIT_COLUMNS)
            .where('user_id', '=', userId)
            .where('idempotency_key', '=', idempotencyKey)
            .executeTakeFirst();
    const first = byBooking ?? byKey;
    if (!first || first.request_hash !== requestHash) throw new DomainError(byKey ? 'IDEMPOTENCY_KEY_REUSED' : 'BOOKING_ALREADY_SPLIT');
    const [split] = await withPayouts(trx, [first]);
    return { split: split as InstantSplitView, created: false };
  });
}

export interface SplitFilter {
  agentId?: string;
  bookingId?: string;
  limit: number;
}

/** The caller's instant splits, newest first. */
export async function listInstantSplits(db: Database, userId: string, filter: SplitFilter): Promise<InstantSplitView[]> {
  return db.readAsUser(userId, async (trx) => {
    let query = trx.selectFrom('instant_splits').select(SPLIT_COLUMNS).where('user_id', '=', userId);
    if (filter.agentId !== undefined) query = query.where('agent_id', '=', filter.agentId);
    if (filter.bookingId !== undefined) query = query.where('booking_id', '=', filter.bookingId);
    const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
    return withPayouts(trx, rows);
  });
}
