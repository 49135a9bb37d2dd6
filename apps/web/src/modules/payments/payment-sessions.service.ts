import type { IncomingHttpHeaders } from 'node:http';
import { DomainError, newId, randomHex } from '@aop/core';
import { type DB, type Database, isUniqueViolation, sql, writeAudit } from '@aop/db';
import type { Kysely, Selectable } from 'kysely';
import { type Address, BaseError, type Hex, HttpRequestError, TimeoutError, isAddress } from 'viem';
import type { WebConfig } from '../../config.js';
import { formatUsd, minimumTokenUnits, normalizeUsd, parseUsd } from './money.js';
import { ChainUnavailableError, checkedPaymentClient, verifyTokenTransfer } from './onchain.js';
import { type ChargeResult, PaymentError } from './types.js';

/** Not-shown facts: a deposit is 1.00 to 100.00 USD. */
export const MIN_DEPOSIT_USD = '1.00';
export const MAX_DEPOSIT_USD = '100.00';
/** Not-shown facts: accumulated vouchers settle at $5.00 or hourly. */
export const SETTLEMENT_THRESHOLD_USD = '5.00';
export const SETTLEMENT_INTERVAL_MS = 60 * 60_000;
/** A session lists at most this many pending vouchers (the newest). */
const LISTED_VOUCHERS = 100;
/** `GET ?address=` lists at most this many sessions (the newest). */
const LISTED_SESSIONS = 50;
/** How often crediting a deposit is tried when it races another open of the same wallet's session. */
const OPEN_ATTEMPTS = 3;
const SESSION_ID = /^ses_[A-Za-z0-9_-]{1,64}$/;
/** A nonce a wallet chose for a signed voucher. */
export const CLIENT_VOUCHER_NONCE = /^[A-Za-z0-9_-]{8,64}$/;

/** Not-shown facts: the gateway's voucher nonces look like `v_<24 hex>`. */
export const newVoucherNonce = () => `v_${randomHex(12)}`;

type SessionRow = Selectable<DB['payment_sessions']>;
export type SessionStatus = SessionRow['status'];

/** The session shape of the wallet API (not-shown facts); USD amounts as strings, times in epoch ms. */
export interface SessionView {
  id: string;
  userAddress: string;
  deposit: string;
  spent: string;
  remaining: string;
  /** The vouchers not yet settled (at most the newest 100), oldest first. */
  vouchers: { plugin: string; timestamp: number; amount: string }[];
  status: SessionStatus;
  createdAt: number;
  lastSettledAt: number;
}

export interface PaymentDeps {
  db: Database;
  config: WebConfig;
  clock?: () => number;
  /** Where failures that do not change the answer are reported (a settlement that will be retried). */
  logger?: { warn(obj: object, msg: string): void };
}

const lower = (address: string) => address.toLowerCase();
export const isSessionId = (value: unknown): value is string => typeof value === 'string' && SESSION_ID.test(value);

export async function findSession(db: Kysely<DB>, id: string): Promise<SessionRow | undefined> {
  if (!isSessionId(id)) return undefined;
  return db.selectFrom('payment_sessions').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function sessionViews(db: Kysely<DB>, rows: SessionRow[]): Promise<SessionView[]> {
  if (rows.length === 0) return [];
  const pending = await db
    .selectFrom('payment_vouchers')
    .select(['session_id', 'plugin', 'amount', 'created_at', 'id'])
    .where(
      'session_id',
      'in',
      rows.map((r) => r.id),
    )
    .where('settlement_id', 'is', null)
    .orderBy('id', 'desc')
    .limit(LISTED_VOUCHERS * rows.length)
    .execute();
  return rows.map((row) => {
    const vouchers = pending
      .filter((v) => v.session_id === row.id)
      .slice(0, LISTED_VOUCHERS)
      .reverse()
      .map((v) => ({ plugin: v.plugin, timestamp: v.created_at.getTime(), amount: normalizeUsd(v.amount) }));
    const deposit = parseUsd(row.deposit) ?? 0n;
    const spent = parseUsd(row.spent) ?? 0n;
    return {
      id: row.id,
      userAddress: row.user_address,
      deposit: formatUsd(deposit),
      spent: formatUsd(spent),
      remaining: formatUsd(deposit - spent),
      vouchers,
      status: row.status,
      createdAt: row.created_at.getTime(),
      lastSettledAt: row.last_settled_at.getTime(),
    };
  });
}

export const sessionView = async (db: Kysely<DB>, row: SessionRow) => (await sessionViews(db, [row]))[0] as SessionView;

/** The wallet's sessions, newest first (at most 50), closed ones included. */
export async function listSessions(db: Kysely<DB>, address: string): Promise<SessionView[]> {
  const rows = await db
    .selectFrom('payment_sessions')
    .selectAll()
    .where('user_address', '=', lower(address))
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .limit(LISTED_SESSIONS)
    .execute();
  return sessionViews(db, rows);
}

/** Whether the account owns the wallet: its SIWE wallet or one of its linked wallets. */
export async function userOwnsWallet(db: Kysely<DB>, userId: string, address: string): Promise<boolean> {
  const wallet = lower(address);
  const owns = await db
    .selectFrom('users')
    .select('id')
    .where('id', '=', userId)
    .where((eb) =>
      eb.or([
        eb('wallet_address', '=', wallet),
        eb.exists(
          eb.selectFrom('wallets').select('wallets.id').whereRef('wallets.user_id', '=', 'users.id').where('wallets.address', '=', wallet),
        ),
      ]),
    )
    .executeTakeFirst();
  return owns !== undefined;
}

export type DebitOutcome =
  | { ok: true; spent: string; remaining: string }
  | { ok: false; code: 'session_invalid' }
  | { ok: false; code: 'insufficient_balance'; remaining: string }
  | { ok: false; code: 'voucher_failed' }
  | { ok: false; code: 'duplicate_voucher' };

/** SQLSTATEs of a transaction that lost a race and was aborted by the server (serialization failure, deadlock). */
const LOST_RACE = new Set(['40001', '40P01']);

/**
 * Debits `amount` USD from the open session `sessionId` of `address` and records the voucher, in ONE statement: the
 * conditional update adds to `spent` only while the session is open and `deposit - spent` covers the amount (numeric,
 * exact), and the voucher row is written from its result. Postgres serialises concurrent updates of the row and
 * re-checks the condition on the newest version, so the balance never goes below zero and every debit has exactly one
 * voucher. A nonce used before on the session is refused with the whole statement.
 */
export async function debitSession(
  db: Kysely<DB>,
  v: { sessionId: string; address: string; plugin: string; amount: string; nonce: string; signature: string | null; now: number },
): Promise<DebitOutcome> {
  const at = new Date(v.now);
  try {
    const result = await sql<{ spent: string; remaining: string }>`
      with debit as (
        update payment_sessions
           set spent = spent + ${v.amount}::numeric, updated_at = ${at}
         where id = ${v.sessionId}
           and user_address = ${lower(v.address)}
           and status in ('active', 'settling')
           and deposit - spent >= ${v.amount}::numeric
        returning id, spent, deposit - spent as remaining
      ), voucher as (
        insert into payment_vouchers (session_id, nonce, plugin, amount, signature, created_at)
        select id, ${v.nonce}, ${v.plugin}, ${v.amount}::numeric, ${v.signature}, ${at} from debit
        returning session_id
      )
      select debit.spent, debit.remaining from debit join voucher on voucher.session_id = debit.id`.execute(db);
    const row = result.rows[0];
    if (row) return { ok: true, spent: normalizeUsd(row.spent), remaining: normalizeUsd(row.remaining) };
  } catch (err) {
    if (isUniqueViolation(err)) return { ok: false, code: 'duplicate_voucher' };
    if (LOST_RACE.has((err as { code?: string }).code ?? '')) return { ok: false, code: 'voucher_failed' };
    throw err;
  }
  // Nothing debited: say why (the session may have changed since, which only matters for the wording).
  const session = await db
    .selectFrom('payment_sessions')
    .select(['status', 'user_address', sql<string>`deposit - spent`.as('remaining')])
    .where('id', '=', v.sessionId)
    .executeTakeFirst();
  if (!session || session.user_address !== lower(v.address) || session.status === 'closed') return { ok: false, code: 'session_invalid' };
  return { ok: false, code: 'insufficient_balance', remaining: normalizeUsd(session.remaining) };
}

/**
 * Undoes one debit (the plugin could not answer): deletes the voucher and gives its amount back, in one statement; a
 * voucher already booked in a settlement is taken out of it, and a session closed meanwhile returns that much more.
 * Calling it again changes nothing.
 */
export async function creditVoucher(db: Kysely<DB>, { sessionId, nonce, now }: { sessionId: string; nonce: string; now: number }) {
  await sql`
    with voucher as (
      delete from payment_vouchers where session_id = ${sessionId} and nonce = ${nonce}
      returning amount, settlement_id
    ), unbooked as (
      update payment_settlements s
         set amount = s.amount - voucher.amount, voucher_count = s.voucher_count - 1
        from voucher
       where s.id = voucher.settlement_id
    )
    update payment_sessions p
       set spent = p.spent - voucher.amount,
           returned = case when p.status = 'closed' then p.returned + voucher.amount else p.returned end,
           updated_at = ${new Date(now)}
      from voucher
     where p.id = ${sessionId}`.execute(db);
}

/**
 * Books the session's pending vouchers into one settlement row. The deposits already sit with the recipient (each was
 * paid there on chain before it was credited), so nothing moves on chain: a settlement is the point where spent
 * vouchers become earned revenue. A session `settling` goes back to `active`. Safe to run twice at once: the vouchers
 * are claimed by an update, so each is booked once, and an empty settlement is not kept.
 */
async function recordSettlement(db: Kysely<DB>, sessionId: string, now: number, reason: 'threshold' | 'hourly' | 'close'): Promise<void> {
  const at = new Date(now);
  await db.transaction().execute(async (trx) => {
    const settlement = await trx
      .insertInto('payment_settlements')
      .values({ session_id: sessionId, amount: '0', voucher_count: 0, reason, settled_at: at })
      .returning('id')
      .executeTakeFirstOrThrow();
    const booked = await trx
      .updateTable('payment_vouchers')
      .set({ settlement_id: settlement.id })
      .where('session_id', '=', sessionId)
      .where('settlement_id', 'is', null)
      .returning('amount')
      .execute();
    if (booked.length === 0) {
      await trx.deleteFrom('payment_settlements').where('id', '=', settlement.id).execute();
    } else {
      const total = booked.reduce((sum, v) => sum + (parseUsd(v.amount) ?? 0n), 0n);
      await trx
        .updateTable('payment_settlements')
        .set({ amount: formatUsd(total), voucher_count: booked.length })
        .where('id', '=', settlement.id)
        .execute();
    }
    await sql`
      update payment_sessions
         set status = case when status = 'settling' then 'active' else status end, last_settled_at = ${at}
       where id = ${sessionId}`.execute(trx);
  });
}

/**
 * Claims (`active` → `settling`) the sessions whose pending vouchers reach $5.00 or whose last settlement is an hour
 * old, all of them or only `sessionId`, and answers each with its reason. The claim is one conditional update, so two
 * replicas never settle the same session at once.
 */
async function claimDue(db: Kysely<DB>, now: number, sessionId?: string): Promise<{ id: string; reason: 'threshold' | 'hourly' }[]> {
  const hourAgo = new Date(now - SETTLEMENT_INTERVAL_MS);
  const result = await sql<{ id: string; reason: 'threshold' | 'hourly' }>`
    with due as (
      select p.id,
             case when sum(v.amount) >= ${SETTLEMENT_THRESHOLD_USD}::numeric then 'threshold' else 'hourly' end as reason
        from payment_sessions p
        join payment_vouchers v on v.session_id = p.id and v.settlement_id is null
       where p.status = 'active' ${sessionId ? sql`and p.id = ${sessionId}` : sql``}
       group by p.id, p.last_settled_at
      having sum(v.amount) >= ${SETTLEMENT_THRESHOLD_USD}::numeric or p.last_settled_at <= ${hourAgo}
    )
    update payment_sessions p
       set status = 'settling'
      from due
     where p.id = due.id and p.status = 'active'
    returning p.id, due.reason`.execute(db);
  return result.rows;
}

/** The settlement sweep's queue depth (/metrics): vouchers redeemed and not settled on chain yet. */
export async function unsettledVouchers(db: Kysely<DB>): Promise<number> {
  const row = await db
    .selectFrom('payment_vouchers')
    .select((eb) => eb.fn.countAll<number>().as('unsettled'))
    .where('settlement_id', 'is', null)
    .executeTakeFirst();
  return Number(row?.unsettled ?? 0);
}

/** After a debit: settles `sessionId` when it is due. */
export async function settleIfDue(db: Kysely<DB>, sessionId: string, now: number): Promise<void> {
  for (const { id, reason } of await claimDue(db, now, sessionId)) await recordSettlement(db, id, now, reason);
}

/**
 * The periodic sweep: settles every session that is due (hourly even without new calls), and finishes settlements a
 * crashed process left `settling`. Answers how many sessions it settled.
 */
export async function settleDueSessions(db: Kysely<DB>, now: number): Promise<number> {
  const claimed = await claimDue(db, now);
  const claimedIds = new Set(claimed.map((c) => c.id));
  const stuck = await db.selectFrom('payment_sessions').select('id').where('status', '=', 'settling').execute();
  for (const { id, reason } of claimed) await recordSettlement(db, id, now, reason);
  for (const { id } of stuck) if (!claimedIds.has(id)) await recordSettlement(db, id, now, 'hourly');
  return claimed.length + stuck.filter((s) => !claimedIds.has(s.id)).length;
}

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first?.trim() || undefined;
};

/**
 * Spec §4.4 session billing: `X-Session-Id` and `X-Wallet-Address` name an open session of that wallet (402
 * `session_required`, `session_invalid`), the plugin has a price (400 `unknown_plugin`), and the price is debited in
 * one step (402 `insufficient_balance` with `session.remaining` and `session.cost`; 402 `voucher_failed` when the
 * debit lost a race the server aborted). The receipt is `session:<sessionId>:<nonce>`.
 */
export async function chargeSession(
  deps: PaymentDeps,
  { headers, plugin, priceUsd }: { headers: IncomingHttpHeaders; plugin: string; priceUsd: string | null },
): Promise<ChargeResult> {
  const clock = deps.clock ?? Date.now;
  const db = deps.db.kysely;
  const sessionId = header(headers, 'x-session-id');
  const wallet = header(headers, 'x-wallet-address');
  if (!sessionId || !wallet) {
    throw new PaymentError(402, {
      error: 'session_required',
      message: 'Session billing needs the X-Session-Id and X-Wallet-Address headers',
    });
  }
  const invalid = () =>
    new PaymentError(402, { error: 'session_invalid', message: 'No active payment session for that id and wallet address' });
  if (!isAddress(wallet, { strict: false })) throw invalid();
  const session = await findSession(db, sessionId);
  if (!session || session.user_address !== lower(wallet) || session.status === 'closed') throw invalid();

  const price = priceUsd === null ? null : parseUsd(priceUsd);
  if (price === null || price <= 0n) throw new PaymentError(400, { error: 'unknown_plugin', message: `No pricing for plugin ${plugin}` });
  const amount = formatUsd(price);

  const nonce = newVoucherNonce();
  const outcome = await debitSession(db, { sessionId, address: wallet, plugin, amount, nonce, signature: null, now: clock() });
  if (!outcome.ok) {
    switch (outcome.code) {
      case 'session_invalid':
        throw invalid();
      case 'insufficient_balance':
        throw new PaymentError(402, {
          error: 'insufficient_balance',
          message: `The session balance does not cover the price of ${plugin}`,
          session: { id: sessionId, remaining: outcome.remaining, cost: amount },
        });
      default:
        throw new PaymentError(402, { error: 'voucher_failed', message: 'The voucher could not be processed; try again' });
    }
  }
  await settleIfDue(db, sessionId, clock()).catch((err: unknown) =>
    deps.logger?.warn({ err, sessionId }, 'payment session settlement failed; the sweep retries'),
  );
  const receipt = `session:${sessionId}:${nonce}`;
  return {
    method: 'session',
    receipt,
    headers: { 'Payment-Receipt': receipt, 'X-Session-Remaining': outcome.remaining },
    release: () => creditVoucher(db, { sessionId, nonce, now: clock() }),
  };
}

/** What a wallet signs (EIP-191) to debit its session with a voucher: the session, the plugin, its price, a nonce. */
export const voucherMessage = (v: { sessionId: string; plugin: string; amount: string; nonce: string }) =>
  ['Payment session voucher', `Session: ${v.sessionId}`, `Plugin: ${v.plugin}`, `Amount: ${v.amount} USD`, `Nonce: ${v.nonce}`].join('\n');

/** An error of a call that never reached the node (refused, timed out, HTTP error), as opposed to a refused signature. */
export function isTransportFailure(err: unknown): boolean {
  return err instanceof BaseError && Boolean(err.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError));
}

/**
 * What a wallet signs (EIP-191) to prove it owns a session without an account: the action, the wallet, what it acts on,
 * and when (accepted for WALLET_PROOF_WINDOW_MS either side of our clock). `domain` names this service, so a
 * signature made for another site does not work here.
 */
export const walletProofMessage = (p: {
  domain: string;
  action: 'open' | 'list' | 'close';
  address: string;
  target: string;
  timestamp: number;
}) =>
  [
    `${p.domain} payment session`,
    `Action: ${p.action}`,
    `Address: ${lower(p.address)}`,
    `Target: ${p.target}`,
    `Timestamp: ${p.timestamp}`,
  ].join('\n');

export const WALLET_PROOF_WINDOW_MS = 5 * 60_000;

/**
 * True when `signature` is `address`'s EIP-191 signature of `walletProofMessage` at `timestamp`, within the window.
 * Checked through the RPC (ERC-1271 contract wallets and ERC-6492 counterfactual ones sign too; EOAs by ecrecover).
 */
export async function verifyWalletProof(
  deps: PaymentDeps,
  p: { action: 'open' | 'list' | 'close'; address: Address; target: string; signature: Hex; timestamp: number },
): Promise<boolean> {
  const payments = paymentsOf(deps.config);
  const now = (deps.clock ?? Date.now)();
  if (!Number.isSafeInteger(p.timestamp) || Math.abs(now - p.timestamp) > WALLET_PROOF_WINDOW_MS) return false;
  try {
    const client = await checkedPaymentClient(payments);
    return await client.verifyMessage({
      address: p.address,
      message: walletProofMessage({ domain: deps.config.siweDomain, ...p }),
      signature: p.signature,
    });
  } catch (err) {
    if (err instanceof ChainUnavailableError || isTransportFailure(err)) throw chainDown();
    return false;
  }
}

const paymentsOf = (config: WebConfig) => {
  if (!config.payments) throw new DomainError('PAYMENT_SESSIONS_ARE_NOT_CONFIGURED');
  return config.payments;
};
const chainDown = () => new DomainError('PAYMENT_NETWORK_UNAVAILABLE');

/**
 * Credits a deposit paid on chain to the wallet's session: `txHash` must have moved at least `deposit` (less 0.0001)
 * of the payment token from `address` to the recipient and never have paid for anything before (409 when it has, 402
 * when it cannot be verified). The wallet's open session, if any, is topped up (`created: false`: its `deposit` grows
 * by the amount); otherwise a new session opens with it (`created: true`).
 *
 * Every deposit is recorded in `payment_transactions` (purpose `session_deposit`, with the session id) in the same DB
 * transaction as the balance change, so its primary key makes a transaction credit once whatever the concurrency: a
 * second request with the same hash rolls back whole. `deposit_tx_hash` names only the deposit that opened the session;
 * the session's deposits are its `payment_transactions` rows, and `deposit` is their (claimed) sum.
 */
export async function openSession(
  deps: PaymentDeps,
  { address, deposit, txHash, ip }: { address: Address; deposit: string; txHash: Hex; ip: string },
): Promise<{ session: SessionView; created: boolean }> {
  const payments = paymentsOf(deps.config);
  const db = deps.db.kysely;
  const clock = deps.clock ?? Date.now;
  const wallet = lower(address);
  const hash = txHash.toLowerCase();

  // Cheap early answer for a used hash (no RPC call); the primary key below is what actually guards it.
  const used = await db.selectFrom('payment_transactions').select('tx_hash').where('tx_hash', '=', hash).executeTakeFirst();
  if (used) throw new DomainError('DEPOSIT_TRANSACTION_ALREADY_USED');

  const paid = await verifyTokenTransfer(payments, {
    txHash: hash as Hex,
    from: wallet as Address,
    minAmount: minimumTokenUnits(deposit, payments.tokenDecimals),
  }).catch((err: unknown) => {
    throw err instanceof ChainUnavailableError ? chainDown() : err;
  });
  if (!paid.ok) throw new DomainError('DEPOSIT_NOT_VERIFIED', undefined, { reason: paid.reason });

  const credit = (now: Date) =>
    db.transaction().execute(async (trx) => {
      // A relative update, so concurrent top-ups of the session both count (Postgres serialises them on the row and
      // re-checks `status` on the newest version). A close that commits first leaves nothing to top up: the deposit
      // then opens a new session instead, and one that waits for us returns the topped-up balance.
      const topped = await trx
        .updateTable('payment_sessions')
        .set({ deposit: sql<string>`deposit + ${deposit}::numeric`, updated_at: now })
        .where('user_address', '=', wallet)
        .where('status', '<>', 'closed')
        .returning(['id', 'deposit'])
        .executeTakeFirst();
      const id = topped?.id ?? newId('paymentSession');
      if (!topped) {
        await trx
          .insertInto('payment_sessions')
          .values({ id, user_address: wallet, deposit, deposit_tx_hash: hash, created_at: now, last_settled_at: now })
          .execute();
      }
      await trx
        .insertInto('payment_transactions')
        .values({
          tx_hash: hash,
          purpose: 'session_deposit',
          session_id: id,
          payer: paid.payer,
          amount_atomic: paid.amount.toString(),
          block_number: Number(paid.blockNumber),
        })
        .execute();
      await writeAudit(trx, {
        userId: null,
        action: topped ? 'payment_session.top_up' : 'payment_session.open',
        target: id,
        ip,
        metadata: topped
          ? { address: wallet, deposit, txHash: hash, total: normalizeUsd(topped.deposit) }
          : { address: wallet, deposit, txHash: hash },
      });
      return { id, created: !topped };
    });

  let credited: { id: string; created: boolean } | undefined;
  for (let attempt = 1; !credited; attempt++) {
    try {
      credited = await credit(new Date(clock()));
    } catch (err) {
      // A session the wallet opened at the same moment met our insert at the one-open-session index: the next attempt
      // finds and tops it up (a few attempts, in case it was closed again meanwhile).
      if (isUniqueViolation(err, 'payment_sessions_open_address_key')) {
        if (attempt < OPEN_ATTEMPTS) continue;
        throw err;
      }
      if (isUniqueViolation(err)) throw new DomainError('DEPOSIT_TRANSACTION_ALREADY_USED');
      throw err;
    }
  }
  const row = await db.selectFrom('payment_sessions').selectAll().where('id', '=', credited.id).executeTakeFirstOrThrow();
  return { session: await sessionView(db, row), created: credited.created };
}

/**
 * Closes a session: no more debits, the pending vouchers are settled, and `returned` (all its deposits less spent) is
 * recorded as owed back to the wallet; a top-up racing the close is either counted in it or opens a new session.
 * Paying it back on chain is an operator action in this version. Null when the session is unknown; 409 when it is
 * already closed.
 */
export async function closeSession(
  deps: PaymentDeps,
  { sessionId, ip }: { sessionId: string; ip: string },
): Promise<{ returned: string } | null> {
  const db = deps.db.kysely;
  const now = (deps.clock ?? Date.now)();
  const closed = await db
    .updateTable('payment_sessions')
    .set({ status: 'closed', closed_at: new Date(now), updated_at: new Date(now), returned: sql<string>`deposit - spent` })
    .where('id', '=', sessionId)
    .where('status', '<>', 'closed')
    .returning(['returned', 'user_address'])
    .executeTakeFirst();
  if (!closed) {
    if (await findSession(db, sessionId)) throw new DomainError('SESSION_ALREADY_CLOSED');
    return null;
  }
  await recordSettlement(db, sessionId, now, 'close');
  const returned = normalizeUsd(closed.returned ?? '0');
  await writeAudit(db, {
    userId: null,
    action: 'payment_session.close',
    target: sessionId,
    ip,
    metadata: { address: closed.user_address, returned },
  });
  return { returned };
}

/**
 * `POST /api/wallet/sessions/voucher`: a voucher the wallet signed (EIP-191 over `voucherMessage`, checked through
 * the RPC so smart-contract wallets sign too) debits the plugin's price once per nonce.
 */
export async function redeemVoucher(
  deps: PaymentDeps,
  v: { sessionId: string; userAddress: Address; plugin: string; signature: Hex; nonce: string },
): Promise<{
  success: true;
  session: { id: string; spent: string; remaining: string; pendingVouchers: number };
  voucher: { amount: string; plugin: string; description: string };
}> {
  const payments = paymentsOf(deps.config);
  const db = deps.db.kysely;
  const clock = deps.clock ?? Date.now;
  const prices: Record<string, string> = deps.config.plugins.prices;
  const price = Object.hasOwn(prices, v.plugin) ? parseUsd(prices[v.plugin]) : null;
  if (price === null || price <= 0n) throw new DomainError('UNKNOWN_PLUGIN', undefined, { message: `No pricing for plugin ${v.plugin}` });
  const amount = formatUsd(price);

  const session = await findSession(db, v.sessionId);
  if (!session || session.user_address !== lower(v.userAddress) || session.status === 'closed') throw new DomainError('SESSION_NOT_FOUND');

  let valid: boolean;
  try {
    const client = await checkedPaymentClient(payments);
    valid = await client.verifyMessage({
      address: v.userAddress,
      message: voucherMessage({ sessionId: v.sessionId, plugin: v.plugin, amount, nonce: v.nonce }),
      signature: v.signature,
    });
  } catch (err) {
    if (err instanceof ChainUnavailableError || isTransportFailure(err)) throw chainDown();
    valid = false;
  }
  if (!valid) throw new DomainError('INVALID_VOUCHER_SIGNATURE');

  const outcome = await debitSession(db, {
    sessionId: v.sessionId,
    address: v.userAddress,
    plugin: v.plugin,
    amount,
    nonce: v.nonce,
    signature: v.signature,
    now: clock(),
  });
  if (!outcome.ok) {
    switch (outcome.code) {
      case 'session_invalid':
        throw new DomainError('SESSION_NOT_FOUND');
      case 'insufficient_balance':
        throw new DomainError('INSUFFICIENT_BALANCE', undefined, {
          session: { id: v.sessionId, remaining: outcome.remaining, cost: amount },
        });
      case 'duplicate_voucher':
        throw new DomainError('VOUCHER_ALREADY_USED');
      default:
        throw new DomainError('VOUCHER_FAILED');
    }
  }
  await settleIfDue(db, v.sessionId, clock()).catch((err: unknown) =>
    deps.logger?.warn({ err, sessionId: v.sessionId }, 'payment session settlement failed; the sweep retries'),
  );
  const pending = await db
    .selectFrom('payment_vouchers')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('session_id', '=', v.sessionId)
    .where('settlement_id', 'is', null)
    .executeTakeFirstOrThrow();
  return {
    success: true,
    session: { id: v.sessionId, spent: outcome.spent, remaining: outcome.remaining, pendingVouchers: Number(pending.count) },
    voucher: { amount, plugin: v.plugin, description: `${v.plugin} plugin call` },
  };
}
