import { DomainError } from '@aop/core';
import { formatScaled, scaledDecimal, scaledInteger } from '@aop/core/money';
import type { Database } from '@aop/db';
// USDC amounts are written as the payments module writes USD (1 USDC = 1 USD, 6 decimals): `0.05`, `1.00`.
import { formatUsd, normalizeUsd } from '../payments/money.js';

/**
 * The built-in skill `booking-settlement` (spec §4.18; docs/decisions.md "Booking settlement and instant splits").
 * Two agents agree a booking on the underground bus (`BOOKING_REQUEST` … `BOOKING_ACCEPT`, run by the backend); the
 * requesting agent's owner is the payer, the responding agent's owner the payee. Settling records, once per booking,
 * that the payer paid the agreed fee; it moves no funds (the two wallets' addresses are shown so the payer knows where
 * the fee goes). Both parties read the settlement; only the payer writes it.
 */

/** USDC, the bus's currency for booking fees: 6 decimals. */
export const USDC_DECIMALS = 6;
/** Amounts accepted: numeric(20, 6) holds 14 whole digits; the bus caps fees at 10^12. */
export const USDC_MAX_UNITS = 10n ** 18n;

/** A decimal string of USDC as exact units (`1.5` → 1500000n), or undefined. */
export function parseUsdc(value: string): bigint | undefined {
  const units = scaledDecimal(value, USDC_DECIMALS);
  return units !== undefined && units <= USDC_MAX_UNITS ? units : undefined;
}

export interface SettlementView {
  bookingId: string;
  payerAgentId: string;
  payeeAgentId: string;
  amount: string;
  currency: 'USDC';
  settledAt: string;
}

export interface BookingView {
  bookingId: string;
  /** The caller's side: `payer` when the caller owns the requesting agent (also when they own both), else `payee`. */
  role: 'payer' | 'payee';
  payerAgentId: string;
  payeeAgentId: string;
  /** The agents' underground wallets, where the fee comes from and goes to; null for an agent without one. */
  payerAddress: string | null;
  payeeAddress: string | null;
  fee: string;
  currency: 'USDC';
  date: string | null;
  eventId: number | null;
  venue: string | null;
  acceptedAt: string;
  settlement: SettlementView | null;
}

interface BookingRow {
  id: string;
  status: 'open' | 'accepted' | 'declined' | 'cancelled';
  terms: Record<string, unknown>;
  updated_at: Date;
  message_status: string;
  payer_agent_id: string;
  payer_user_id: string;
  payee_agent_id: string;
  payee_user_id: string;
  payer_address: string | null;
  payee_address: string | null;
}

interface SettlementRow {
  booking_id: string;
  payer_agent_id: string;
  payee_agent_id: string;
  amount: string;
  settled_at: Date;
}

const SETTLEMENT_COLUMNS = ['booking_id', 'payer_agent_id', 'payee_agent_id', 'amount', 'settled_at'] as const;

const settlementView = (row: SettlementRow): SettlementView => ({
  bookingId: row.booking_id,
  payerAgentId: row.payer_agent_id,
  payeeAgentId: row.payee_agent_id,
  amount: normalizeUsd(row.amount),
  currency: 'USDC',
  settledAt: row.settled_at.toISOString(),
});

/**
 * Bookings (negotiations) with at least one party among `userId`'s agents. The negotiation and bus tables belong to no
 * single user (row-level security cannot scope them), so this query runs on the owner connection and filters by the
 * caller itself, through the parties' deployments. The other party's wallet address is public on the bus already.
 */
function bookingsOf(db: Database, userId: string) {
  return db.kysely
    .selectFrom('underground_negotiations as n')
    .innerJoin('underground_bus_messages as m', 'm.message_id', 'n.last_message_id')
    .innerJoin('agent_deployments as payer', 'payer.id', 'n.requester_agent_id')
    .innerJoin('agent_deployments as payee', 'payee.id', 'n.responder_agent_id')
    .leftJoin('underground_wallets as payer_wallet', 'payer_wallet.agent_id', 'n.requester_agent_id')
    .leftJoin('underground_wallets as payee_wallet', 'payee_wallet.agent_id', 'n.responder_agent_id')
    .select([
      'n.id',
      'n.status',
      'n.terms',
      'n.updated_at',
      'm.status as message_status',
      'payer.id as payer_agent_id',
      'payer.user_id as payer_user_id',
      'payee.id as payee_agent_id',
      'payee.user_id as payee_user_id',
      'payer_wallet.address as payer_address',
      'payee_wallet.address as payee_address',
    ])
    .where((eb) => eb.or([eb('payer.user_id', '=', userId), eb('payee.user_id', '=', userId)]));
}

/**
 * An accepted booking is settled only once its acceptance reached the other agent: the bus undoes a move whose
 * delivery failed, so until `BOOKING_ACCEPT` is delivered the acceptance may still be taken back.
 */
function acceptance(row: Pick<BookingRow, 'status' | 'message_status'>): 'accepted' | string {
  if (row.status !== 'accepted') return row.status;
  return row.message_status === 'delivered' ? 'accepted' : 'still being accepted';
}

/** The agreed fee in units. The bus stored it as a JSON number with at most 6 decimals (its `parseBookingTerms`). */
export function feeUnits(terms: Record<string, unknown>): bigint {
  const fee = typeof terms.fee === 'number' ? scaledInteger(terms.fee, USDC_DECIMALS) : undefined;
  if (fee === undefined) throw new Error('Booking terms without a readable fee');
  return fee;
}

function bookingView(userId: string, row: BookingRow, settlement: SettlementRow | undefined): BookingView {
  const terms = row.terms;
  return {
    bookingId: row.id,
    role: row.payer_user_id === userId ? 'payer' : 'payee',
    payerAgentId: row.payer_agent_id,
    payeeAgentId: row.payee_agent_id,
    payerAddress: row.payer_address,
    payeeAddress: row.payee_address,
    fee: formatUsd(feeUnits(terms)),
    currency: 'USDC',
    date: typeof terms.date === 'string' ? terms.date : null,
    eventId: typeof terms.eventId === 'number' ? terms.eventId : null,
    venue: typeof terms.venue === 'string' ? terms.venue : null,
    acceptedAt: row.updated_at.toISOString(),
    settlement: settlement ? settlementView(settlement) : null,
  };
}

export interface BookingFilter {
  /** Only bookings one side of which is this agent. */
  agentId?: string;
  /** `unsettled`: still to be settled; `settled`: settled already; absent: both. */
  status?: 'settled' | 'unsettled';
  limit: number;
}

/** The caller's accepted bookings, most recently accepted first, each with its settlement (null until settled). */
export async function listBookings(db: Database, userId: string, filter: BookingFilter): Promise<BookingView[]> {
  let query = bookingsOf(db, userId).where('n.status', '=', 'accepted').where('m.status', '=', 'delivered');
  if (filter.agentId !== undefined) {
    const agentId = filter.agentId;
    query = query.where((eb) => eb.or([eb('n.requester_agent_id', '=', agentId), eb('n.responder_agent_id', '=', agentId)]));
  }
  // Settlements are read as the caller (row-level security: the parties' rows only), then joined here.
  const settled = await db.readAsUser(userId, (trx) => trx.selectFrom('booking_settlements').select(SETTLEMENT_COLUMNS).execute());
  const byBooking = new Map(settled.map((row) => [row.booking_id, row]));
  if (filter.status === 'settled') {
    if (byBooking.size === 0) return [];
    query = query.where('n.id', 'in', [...byBooking.keys()]);
  } else if (filter.status === 'unsettled' && byBooking.size > 0) {
    query = query.where('n.id', 'not in', [...byBooking.keys()]);
  }
  const rows = await query.orderBy('n.updated_at', 'desc').orderBy('n.id').limit(filter.limit).execute();
  return rows.map((row) => bookingView(userId, row, byBooking.get(row.id)));
}

/** One booking of the caller's, whatever its state; 404 `Booking not found` when neither party is theirs. */
export async function findBooking(db: Database, userId: string, bookingId: string): Promise<BookingRow> {
  const row = await bookingsOf(db, userId).where('n.id', '=', bookingId).executeTakeFirst();
  if (!row) throw new DomainError('BOOKING_NOT_FOUND');
  return row;
}

/** The accepted booking behind a settlement or a split: 409 while it is open, declined, cancelled or in flight. */
export function requireAccepted(row: BookingRow): void {
  const state = acceptance(row);
  if (state !== 'accepted') throw new DomainError('BOOKING_NOT_ACCEPTED', { status: state });
}

/**
 * Settles an accepted booking for its payer. `amount` (a USDC decimal string) must be the agreed fee: the payer
 * confirms what they paid, and a stale screen cannot settle a different figure. Once per booking: the booking id is
 * the settlement's primary key, so a repeat or a concurrent duplicate answers the first settlement (`created: false`).
 */
export async function settleBooking(
  db: Database,
  userId: string,
  input: { bookingId: string; amount: string },
): Promise<{ settlement: SettlementView; created: boolean }> {
  const amount = parseUsdc(input.amount);
  if (amount === undefined) throw new DomainError('AMOUNT_USDC_DECIMAL_STRING');
  const booking = await findBooking(db, userId, input.bookingId);
  if (booking.payer_user_id !== userId) throw new DomainError('BOOKING_PAYER_ONLY');
  requireAccepted(booking);
  const fee = feeUnits(booking.terms);
  if (fee === 0n) throw new DomainError('BOOKING_NO_FEE');
  if (amount !== fee) throw new DomainError('BOOKING_AMOUNT_MISMATCH', { fee: formatUsd(fee) });

  return db.withUser(userId, async (trx) => {
    const inserted = await trx
      .insertInto('booking_settlements')
      .values({
        booking_id: booking.id,
        payer_user_id: userId,
        payer_agent_id: booking.payer_agent_id,
        payee_user_id: booking.payee_user_id,
        payee_agent_id: booking.payee_agent_id,
        amount: formatScaled(fee, USDC_DECIMALS),
      })
      .onConflict((oc) => oc.column('booking_id').doNothing())
      .returning(SETTLEMENT_COLUMNS)
      .executeTakeFirst();
    if (inserted) return { settlement: settlementView(inserted), created: true };
    // Another request settled it first (committed: the conflict waited for it); the caller, its payer, can read it.
    const existing = await trx
      .selectFrom('booking_settlements')
      .select(SETTLEMENT_COLUMNS)
      .where('booking_id', '=', booking.id)
      .executeTakeFirstOrThrow();
    return { settlement: settlementView(existing), created: false };
  });
}

/** The settlement of one booking as the caller may see it (a party's), or undefined. */
export async function findSettlement(db: Database, userId: string, bookingId: string): Promise<SettlementView | undefined> {
  const row = await db.readAsUser(userId, (trx) =>
    trx.selectFrom('booking_settlements').select(SETTLEMENT_COLUMNS).where('booking_id', '=', bookingId).executeTakeFirst(),
  );
  return row && settlementView(row);
}
