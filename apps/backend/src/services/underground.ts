import { DomainError, encryptSecret, newId } from '@aop/core';
import { type Database, type Tx, sql } from '@aop/db';
import { type Address, type PublicClient, createPublicClient, erc20Abi, formatUnits, getAddress, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { BackendConfig } from '../config.js';
import { isAgentId } from './agents.js';
import type { Logger } from '@aop/core';
import { SHARE_DECIMALS, allocateByShares, formatScaled, parseShareRecipients, scaledInteger } from '@aop/core/money';

/**
 * Underground (spec §2.9, §3.4, §4.11, §8): events, agent wallets and royalty splits. Every function here runs for
 * one user (row-level security through `withUser`) and checks that the agent named is one of theirs.
 */

/** Spec §8: event and split names. */
export const NAME_MAX = 200;
export const DESCRIPTION_MAX = 5_000;
export const VENUE_MAX = 200;
/** Spec §8 ticket defaults. */
export const DEFAULT_TICKET_PRICE_USDC = 0;
export const DEFAULT_TOTAL_TICKETS = 100;
/** The `integer` column's range. */
export const TOTAL_TICKETS_MAX = 2_147_483_647;
/** USDC has 6 decimals: a price finer than that could not be paid. */
export const USDC_DECIMALS = 6;
/** Largest money amount accepted (well inside numeric(20, …) and exact as a JSON number to the cent). */
export const AMOUNT_MAX = 1_000_000_000_000;
export const RECIPIENTS_MAX = 100;

export const ADDRESS_FORMAT = /^0x[0-9a-fA-F]{40}$/;

// ---------------------------------------------------------------------------
// Field checks (400 with the field named)

/** `agentId`: required, in the platform's agent id format. */
export function requiredAgentId(value: unknown): string {
  if (value === undefined || value === null || value === '') throw new DomainError('FIELD_REQUIRED', { field: 'agentId' });
  if (typeof value !== 'string' || !isAgentId(value)) throw new DomainError('INVALID_AGENTID');
  return value;
}

/**
 * `name`, trimmed: present, and at most 200 characters once trimmed (spec §8). That it is a string and not blank is
 * the body schema's; a `maxLength` there would count the spaces around it.
 */
export function requiredName(value: string | undefined): string {
  const name = value?.trim();
  if (!name) throw new DomainError('FIELD_REQUIRED', { field: 'name' });
  if (name.length > NAME_MAX) throw new DomainError('FIELD_TOO_LONG', { field: 'name', max: NAME_MAX });
  return name;
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * An ISO 8601 date (`2025-06-01`) or date-time (`2025-06-01T20:00:00Z`, offsets allowed) as a Date, or undefined.
 * Calendar fields are checked (no 30 February: `Date` would roll it over into March). A date alone is midnight UTC,
 * and a date-time without an offset is read as UTC, so the answer never depends on the server's time zone.
 */
export function parseIsoDate(value: string): Date | undefined {
  const m = ISO_DATE.exec(value);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined;
  const millis = Number((m[7] ?? '0').padEnd(3, '0').slice(0, 3));
  let time = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  const zone = m[8];
  if (zone && zone.toUpperCase() !== 'Z') {
    const offset = /^([+-])(\d{2}):?(\d{2})$/.exec(zone);
    if (!offset) return undefined;
    const [hours, mins] = [Number(offset[2]), Number(offset[3])];
    if (hours > 23 || mins > 59) return undefined;
    time -= (offset[1] === '-' ? -1 : 1) * (hours * 60 + mins) * 60_000;
  }
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

// ---------------------------------------------------------------------------
// Ownership

/** The agent must be one of the caller's (row-level security hides the others): 403 otherwise (spec §4.11). */
export async function ownAgent(trx: Tx, agentId: string): Promise<void> {
  const row = await trx.selectFrom('agent_deployments').select('id').where('id', '=', agentId).executeTakeFirst();
  if (!row) throw new DomainError('AGENT_NOT_OWNED');
}

// ---------------------------------------------------------------------------
// Events

/** Spec §2.9 event. */
export interface EventView {
  id: number;
  agent_id: string;
  name: string;
  description: string | null;
  venue: string | null;
  event_date: string | null;
  ticket_price_usdc: number;
  total_tickets: number;
}

export interface EventInput {
  agentId: string;
  name: string;
  description: string | null;
  venue: string | null;
  eventDate: Date | null;
  ticketPriceUsdc: string;
  totalTickets: number;
}

/** What `POST /api/underground/events` sends, its types and ranges already checked by the route's schema. */
export interface EventBody {
  agentId: string | null;
  name?: string;
  description?: string | null;
  venue?: string | null;
  eventDate?: string | null;
  ticketPriceUsdc?: number | null;
  totalTickets?: number | null;
}

/** The event to create, with what the body schema cannot check: a null agentId, the name trimmed, the calendar, decimals. */
export function parseEventInput(body: EventBody): EventInput {
  const agentId = requiredAgentId(body.agentId);
  const name = requiredName(body.name);
  let eventDate: Date | null = null;
  if (body.eventDate !== undefined && body.eventDate !== null) {
    const parsed = parseIsoDate(body.eventDate);
    if (!parsed) throw new DomainError('EVENTDATE_ISO_8601_DATE');
    eventDate = parsed;
  }
  let ticketPriceUsdc = formatScaled(BigInt(DEFAULT_TICKET_PRICE_USDC), USDC_DECIMALS);
  if (body.ticketPriceUsdc !== undefined && body.ticketPriceUsdc !== null) {
    const scaled = scaledInteger(body.ticketPriceUsdc, USDC_DECIMALS);
    if (scaled === undefined) throw new DomainError('TICKETPRICEUSDC_NON_NEGATIVE_NUMBER');
    ticketPriceUsdc = formatScaled(scaled, USDC_DECIMALS);
  }
  return {
    agentId,
    name,
    description: body.description ?? null,
    venue: body.venue ?? null,
    eventDate,
    ticketPriceUsdc,
    totalTickets: body.totalTickets ?? DEFAULT_TOTAL_TICKETS,
  };
}

type EventRow = {
  id: number;
  agent_id: string;
  name: string;
  description: string | null;
  venue: string | null;
  event_date: Date | null;
  ticket_price_usdc: string;
  total_tickets: number;
};

const eventView = (row: EventRow): EventView => ({
  id: row.id,
  agent_id: row.agent_id,
  name: row.name,
  description: row.description,
  venue: row.venue,
  event_date: row.event_date ? row.event_date.toISOString() : null,
  ticket_price_usdc: Number(row.ticket_price_usdc),
  total_tickets: row.total_tickets,
});

const EVENT_COLUMNS = ['id', 'agent_id', 'name', 'description', 'venue', 'event_date', 'ticket_price_usdc', 'total_tickets'] as const;

export async function createEvent(db: Database, userId: string, input: EventInput): Promise<EventView> {
  const row = await db.withUser(userId, async (trx) => {
    await ownAgent(trx, input.agentId);
    return trx
      .insertInto('underground_events')
      .values({
        user_id: userId,
        agent_id: input.agentId,
        name: input.name,
        description: input.description,
        venue: input.venue,
        event_date: input.eventDate,
        ticket_price_usdc: input.ticketPriceUsdc,
        total_tickets: input.totalTickets,
      })
      .returning(EVENT_COLUMNS)
      .executeTakeFirstOrThrow();
  });
  return eventView(row);
}

/** The events of the user's agents, newest `event_date` first; undated events last; then newest created first. */
export async function listEvents(db: Database, userId: string): Promise<EventView[]> {
  const rows = await db.withUser(userId, (trx) =>
    trx.selectFrom('underground_events').select(EVENT_COLUMNS).orderBy(sql`event_date desc nulls last`).orderBy('id', 'desc').execute(),
  );
  return rows.map(eventView);
}

// ---------------------------------------------------------------------------
// Wallets

/** Binds a sealed wallet key to its agent and address: a sealed value copied to another row does not open. */
export const walletKeyAad = (agentId: string, address: string) => `underground-wallet:${agentId}:${address.toLowerCase()}`;

export interface WalletView {
  address: Address;
  agentId: string;
}

/**
 * The agent's wallet: a fresh secp256k1 key pair whose private key is sealed at rest and never returned. One wallet
 * per agent: a second call answers the existing wallet (`created: false`) and never replaces a key that may hold funds.
 */
export async function createWallet(
  db: Database,
  encryptionKey: Buffer,
  userId: string,
  agentId: string,
): Promise<{ wallet: WalletView; created: boolean }> {
  return db.withUser(userId, async (trx) => {
    await ownAgent(trx, agentId);
    const existing = await trx.selectFrom('underground_wallets').select('address').where('agent_id', '=', agentId).executeTakeFirst();
    if (existing) return { wallet: { address: getAddress(existing.address), agentId }, created: false };
    const privateKey = generatePrivateKey();
    const address = privateKeyToAccount(privateKey).address.toLowerCase();
    const inserted = await trx
      .insertInto('underground_wallets')
      .values({
        address,
        agent_id: agentId,
        user_id: userId,
        private_key_enc: encryptSecret(encryptionKey, privateKey, walletKeyAad(agentId, address)),
      })
      .onConflict((oc) => oc.column('agent_id').doNothing())
      .returning('address')
      .executeTakeFirst();
    if (inserted) return { wallet: { address: getAddress(inserted.address), agentId }, created: true };
    // A concurrent call made the wallet first: answer that one.
    const winner = await trx.selectFrom('underground_wallets').select('address').where('agent_id', '=', agentId).executeTakeFirst();
    // Invisible here: a wallet kept from an earlier (deleted) agent of another user with the same id.
    if (!winner) throw new DomainError('AGENTID_ALREADY_HAS_WALLET');
    return { wallet: { address: getAddress(winner.address), agentId }, created: false };
  });
}

const clients = new Map<string, PublicClient>();
const decimalsByToken = new Map<string, number>();

function rpcClient(rpcUrl: string, timeoutMs: number): PublicClient {
  const key = `${rpcUrl}|${timeoutMs}`;
  let client = clients.get(key);
  if (!client) {
    client = createPublicClient({ transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 1, retryDelay: 100 }) });
    clients.set(key, client);
  }
  return client;
}

/** Spec §2.9 balance object. */
export interface BalanceView {
  address: Address;
  balance_usdc: number;
}

/**
 * `balanceOf` of one of the caller's wallets on the configured USDC contract, scaled by the contract's own
 * `decimals()` (read once per contract). Another user's or an unknown address is 404; RPC failures are 500.
 */
export async function walletBalance(
  db: Database,
  config: BackendConfig['underground'],
  userId: string,
  rawAddress: string,
  log: Pick<Logger, 'warn'>,
): Promise<BalanceView> {
  if (!ADDRESS_FORMAT.test(rawAddress)) throw new DomainError('INVALID_ADDRESS');
  const address = rawAddress.toLowerCase();
  const wallet = await db.withUser(userId, (trx) =>
    trx.selectFrom('underground_wallets').select('address').where('address', '=', address).executeTakeFirst(),
  );
  if (!wallet) throw new DomainError('WALLET_NOT_FOUND');
  if (!config.rpcUrl || !config.usdcAddress) throw new DomainError('WALLET_BALANCES_ARE_NOT_CONFIGURED');
  const client = rpcClient(config.rpcUrl, config.rpcTimeoutMs);
  const token = config.usdcAddress;
  const holder = getAddress(address);
  try {
    const [balance, decimals] = await Promise.all([
      client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] }),
      decimalsByToken.get(`${config.rpcUrl}|${token}`) ??
        client.readContract({ address: token, abi: erc20Abi, functionName: 'decimals' }).then((d) => {
          decimalsByToken.set(`${config.rpcUrl}|${token}`, d);
          return d;
        }),
    ]);
    return { address: holder, balance_usdc: Number(formatUnits(balance, decimals)) };
  } catch (err) {
    // viem's short message names the failure without the RPC URL (which may carry a provider key).
    log.warn({ reason: (err as Error).name, detail: (err as { shortMessage?: string }).shortMessage }, 'underground balance read failed');
    throw new DomainError('FAILED_FETCH_BALANCE');
  }
}

// ---------------------------------------------------------------------------
// Royalty splits

/** Cents. */
const MONEY_DECIMALS = 2;

export interface SplitInput {
  agentId: string;
  name: string;
  /** In cents. */
  total: bigint;
  /** Addresses lower-case; shares in hundredths of a percent. */
  recipients: { address: string; share: bigint }[];
}

/** What `POST /api/underground/splits` sends: `totalAmount`'s range and the list's length are the schema's. */
export interface SplitBody {
  agentId: string | null;
  name?: string;
  totalAmount: number;
  /** Checked here: their errors name the entry's index, which a schema's error cannot. */
  recipients: unknown[];
}

/** The split to record: amounts exact to the cent, each recipient checked, shares summed as integers (spec §4.11, §8). */
export function parseSplitInput(body: SplitBody): SplitInput {
  const agentId = requiredAgentId(body.agentId);
  const name = requiredName(body.name);
  const total = scaledInteger(body.totalAmount, MONEY_DECIMALS);
  if (total === undefined) throw new DomainError('TOTALAMOUNT_HAVE_AT_MOST_2');
  if (total === 0n) throw new DomainError('TOTALAMOUNT_POSITIVE_NUMBER');
  const recipients = parseShareRecipients(body.recipients);
  return { agentId, name, total, recipients };
}

/**
 * Records a split and its payouts, processed synchronously (spec §3.4: `completed`). Each recipient's amount is cut
 * to the cent by the largest-remainder method, so the payouts add up to the total exactly.
 */
export async function createSplit(db: Database, userId: string, input: SplitInput): Promise<string> {
  const amounts = allocateByShares(
    input.total,
    input.recipients.map((r) => r.share),
  );
  const id = newId('split');
  await db.withUser(userId, async (trx) => {
    await ownAgent(trx, input.agentId);
    const wallet = await trx.selectFrom('underground_wallets').select('address').where('agent_id', '=', input.agentId).executeTakeFirst();
    await trx
      .insertInto('underground_splits')
      .values({
        id,
        user_id: userId,
        agent_id: input.agentId,
        name: input.name,
        total_amount: formatScaled(input.total, MONEY_DECIMALS),
        from_address: wallet?.address ?? null,
        status: 'completed',
      })
      .execute();
    await trx
      .insertInto('underground_split_payouts')
      .values(
        input.recipients.map((r, i) => ({
          split_id: id,
          ordinal: i,
          user_id: userId,
          address: r.address,
          share: formatScaled(r.share, SHARE_DECIMALS),
          amount: formatScaled(amounts[i] as bigint, MONEY_DECIMALS),
        })),
      )
      .execute();
  });
  return id;
}
