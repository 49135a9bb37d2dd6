import { DomainError, decryptSecret, encryptSecret, randomHex } from '@aop/core';
import type { Database, Tx } from '@aop/db';
import { type Address, type Hex, getAddress, recoverMessageAddress, verifyMessage } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { BackendConfig } from '../config.js';
import { isAgentId } from './agents.js';
import { formatScaled, scaledInteger } from '@aop/core/money';
import { VENUE_MAX, parseIsoDate, USDC_DECIMALS, AMOUNT_MAX, ownAgent } from './underground.js';
import { type DeliveryResult, deliverToWebhook } from './underground-delivery.js';

/**
 * The agent-to-agent bus (spec §4.11 `POST /api/underground/bus/send`). No user context: a message authenticates
 * itself with the sending agent's wallet signature (EIP-191 `personal_sign`) over its canonical serialization
 * without `signature`. Then `BOOKING_*` actions move a booking negotiation, `AMPLIFY_*` actions fan out to targets,
 * and the message is delivered to each recipient agent's webhook. Bus rows are not one user's, so everything here
 * runs on the owner connection.
 */

/** A message before signing: any field besides these is allowed and is part of what is signed. */
export interface UnsignedAgentMessage {
  messageId: string;
  action: string;
  fromAgentId?: string | null;
  toAgentId?: string | null;
  payload?: unknown;
  [field: string]: unknown;
}

/** An `AgentMessage`: `messageId`, `action`, `signature` required (their formats: `AgentMessageBody` of the routes). */
export type AgentMessage = UnsignedAgentMessage & { signature: Hex };

export const MESSAGE_ID_FORMAT = /^[A-Za-z0-9._:-]{1,128}$/;
export const ACTION_FORMAT = /^[A-Z][A-Z0-9_]{0,63}$/;
export const SIGNATURE_FORMAT = /^0x[0-9a-fA-F]{130,}$/;
export const AMPLIFY_TARGETS_MAX = 25;
const NOTES_MAX = 2_000;

// ---------------------------------------------------------------------------
// Canonical form and signatures

/**
 * JSON with object keys sorted (by UTF-16 code units, recursively) and no whitespace: the same bytes whatever order
 * the sender's JSON library wrote the keys in. For JSON values this is RFC 8785 (JCS) serialization.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

/** The text an agent signs: the canonical JSON of the whole message except `signature`. */
export function signingText(message: Record<string, unknown>): string {
  const { signature: _signature, ...rest } = message;
  return canonicalJson(rest);
}

/** Signs a message as an agent whose wallet key is `privateKey` (what an agent runtime or SDK does before sending). */
export async function signAgentMessage(privateKey: Hex, message: UnsignedAgentMessage): Promise<AgentMessage> {
  const signature = await privateKeyToAccount(privateKey).signMessage({ message: signingText(message) });
  return { ...message, signature };
}

// ---------------------------------------------------------------------------
// The sender

export interface Sender {
  agentId: string;
  address: Address;
}

/** Wallets whose agent still belongs to the wallet's owner (a wallet kept from a deleted agent speaks for no one). */
const liveWallets = (db: Database) =>
  db.kysely
    .selectFrom('underground_wallets as w')
    .innerJoin('agent_deployments as d', (join) => join.onRef('d.id', '=', 'w.agent_id').onRef('d.user_id', '=', 'w.user_id'))
    .select(['w.agent_id', 'w.address']);

/**
 * The sending agent: with `fromAgentId`, the signature must verify against that agent's wallet; without it, the
 * address the signature recovers to must be an agent's wallet. Anything else is 401 `Invalid signature`.
 */
export async function identifySender(db: Database, message: AgentMessage): Promise<Sender> {
  const text = signingText(message);
  if (message.fromAgentId !== undefined && message.fromAgentId !== null) {
    const wallet = await liveWallets(db).where('w.agent_id', '=', message.fromAgentId).executeTakeFirst();
    if (!wallet) throw new DomainError('SIGNATURE_VERIFICATION_FAILED');
    const address = getAddress(wallet.address);
    const valid = await verifyMessage({ address, message: text, signature: message.signature }).catch(() => false);
    if (!valid) throw new DomainError('SIGNATURE_VERIFICATION_FAILED');
    return { agentId: wallet.agent_id, address };
  }
  const recovered = await recoverMessageAddress({ message: text, signature: message.signature }).catch(() => undefined);
  if (!recovered) throw new DomainError('SIGNATURE_VERIFICATION_FAILED');
  const wallet = await liveWallets(db).where('w.address', '=', recovered.toLowerCase()).executeTakeFirst();
  if (!wallet) throw new DomainError('SIGNATURE_VERIFICATION_FAILED');
  return { agentId: wallet.agent_id, address: getAddress(wallet.address) };
}

// ---------------------------------------------------------------------------
// Recipients

export type MessageKind = 'direct' | 'booking' | 'amplify';

export const messageKind = (action: string): MessageKind =>
  action.startsWith('BOOKING_') ? 'booking' : action.startsWith('AMPLIFY_') ? 'amplify' : 'direct';

const payloadObject = (message: AgentMessage): Record<string, unknown> =>
  typeof message.payload === 'object' && message.payload !== null && !Array.isArray(message.payload)
    ? (message.payload as Record<string, unknown>)
    : {};

/**
 * Who receives the message: `toAgentId` for direct and booking messages; for amplification, `toAgentId` and the
 * agent ids in `payload.targets` (deduplicated, the sender left out, at most 25).
 */
export function recipientsOf(message: AgentMessage, kind: MessageKind, sender: Sender): string[] {
  if (kind !== 'amplify') {
    if (message.toAgentId === undefined || message.toAgentId === null) throw new DomainError('FIELD_REQUIRED', { field: 'toAgentId' });
    return [message.toAgentId];
  }
  const targets = payloadObject(message).targets;
  if (targets !== undefined && !Array.isArray(targets)) throw new DomainError('PAYLOAD_TARGETS_ARRAY_AGENT_IDS');
  const ids = [...(message.toAgentId ? [message.toAgentId] : []), ...((targets as unknown[] | undefined) ?? [])];
  for (const id of ids) {
    if (typeof id !== 'string' || !isAgentId(id)) throw new DomainError('PAYLOAD_TARGETS_ARRAY_AGENT_IDS');
  }
  const unique = [...new Set(ids as string[])].filter((id) => id !== sender.agentId);
  if (unique.length === 0) throw new DomainError('AMPLIFICATION_NEEDS_AT_LEAST_ONE');
  if (unique.length > AMPLIFY_TARGETS_MAX) throw new DomainError('TOO_MANY_AMPLIFICATION_TARGETS', { max: AMPLIFY_TARGETS_MAX });
  return unique;
}

// ---------------------------------------------------------------------------
// Booking negotiation

export const BOOKING_ACTIONS = ['BOOKING_REQUEST', 'BOOKING_COUNTER', 'BOOKING_ACCEPT', 'BOOKING_DECLINE', 'BOOKING_CANCEL'] as const;
type BookingAction = (typeof BOOKING_ACTIONS)[number];

/** Booking terms after normalisation: fee in USDC as a number, date as a UTC ISO string. */
export interface BookingTerms {
  fee: number;
  date: string;
  eventId?: number;
  venue?: string;
  notes?: string;
}

export interface NegotiationView {
  id: string;
  status: 'open' | 'accepted' | 'declined' | 'cancelled';
  round: number;
  requesterAgentId: string;
  responderAgentId: string;
  terms: BookingTerms;
  lastOfferBy: string;
}

interface BookingMove {
  action: BookingAction;
  negotiationId: string;
  terms: BookingTerms | undefined;
}

/** `payload.terms`: `fee` (USDC, ≥ 0, 6 decimals at most) and `date` (ISO 8601) required; `eventId`, `venue`, `notes`. */
export function parseBookingTerms(value: unknown): BookingTerms {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new DomainError('FIELD_REQUIRED', { field: 'payload.terms' });
  const raw = value as Record<string, unknown>;
  const fee = typeof raw.fee === 'number' && raw.fee <= AMOUNT_MAX ? scaledInteger(raw.fee, USDC_DECIMALS) : undefined;
  if (fee === undefined) throw new DomainError('PAYLOAD_TERMS_FEE_NON_NEGATIVE');
  const date = typeof raw.date === 'string' ? parseIsoDate(raw.date) : undefined;
  if (!date) throw new DomainError('PAYLOAD_TERMS_DATE_ISO_8601');
  const terms: BookingTerms = { fee: Number(formatScaled(fee, USDC_DECIMALS)), date: date.toISOString() };
  if (raw.eventId !== undefined && raw.eventId !== null) {
    if (typeof raw.eventId !== 'number' || !Number.isSafeInteger(raw.eventId) || raw.eventId < 1) {
      throw new DomainError('PAYLOAD_TERMS_EVENTID_EVENT_ID');
    }
    terms.eventId = raw.eventId;
  }
  for (const [field, max] of [
    ['venue', VENUE_MAX],
    ['notes', NOTES_MAX],
  ] as const) {
    const text = raw[field];
    if (text === undefined || text === null) continue;
    if (typeof text !== 'string' || text.length > max) throw new DomainError('PAYLOAD_TERMS_FIELD_INVALID', { field, max });
    terms[field] = text;
  }
  return terms;
}

/** What a `BOOKING_*` message asks for, checked without the database (400 for a malformed move). */
export function parseBookingMove(message: AgentMessage): BookingMove {
  if (!(BOOKING_ACTIONS as readonly string[]).includes(message.action)) throw new DomainError('UNKNOWN_BOOKING_ACTION');
  const action = message.action as BookingAction;
  const payload = payloadObject(message);
  if (action === 'BOOKING_REQUEST') return { action, negotiationId: message.messageId, terms: parseBookingTerms(payload.terms) };
  const negotiationId = payload.negotiationId;
  if (typeof negotiationId !== 'string' || !MESSAGE_ID_FORMAT.test(negotiationId))
    throw new DomainError('FIELD_REQUIRED', { field: 'payload.negotiationId' });
  return { action, negotiationId, terms: action === 'BOOKING_COUNTER' ? parseBookingTerms(payload.terms) : undefined };
}

type NegotiationRow = {
  id: string;
  requester_agent_id: string;
  responder_agent_id: string;
  status: NegotiationView['status'];
  terms: Record<string, unknown>;
  round: number;
  last_offer_by: string;
  last_message_id: string;
};

const negotiationView = (row: NegotiationRow): NegotiationView => ({
  id: row.id,
  status: row.status,
  round: row.round,
  requesterAgentId: row.requester_agent_id,
  responderAgentId: row.responder_agent_id,
  terms: row.terms as unknown as BookingTerms,
  lastOfferBy: row.last_offer_by,
});

/**
 * Applies a booking move inside the transaction that claims the message. A request opens a negotiation (the sender
 * makes the first offer); then the parties alternate: the one who did not make the standing offer counters,
 * accepts or declines it; either party may cancel. Closed negotiations take no more moves (409).
 * Answers the negotiation after the move and the row before it (to undo the move if delivery fails).
 */
async function applyBookingMove(
  trx: Tx,
  move: BookingMove,
  messageId: string,
  sender: string,
  recipient: string,
): Promise<{ after: NegotiationView; before: NegotiationRow | undefined }> {
  const now = new Date();
  if (move.action === 'BOOKING_REQUEST') {
    if (sender === recipient) throw new DomainError('AGENT_CANNOT_BOOK_ITSELF');
    await checkEvent(trx, move.terms?.eventId, [sender, recipient]);
    const row = await trx
      .insertInto('underground_negotiations')
      .values({
        id: move.negotiationId,
        requester_agent_id: sender,
        responder_agent_id: recipient,
        status: 'open',
        terms: JSON.stringify(move.terms),
        round: 1,
        last_offer_by: sender,
        last_message_id: messageId,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { after: negotiationView(row), before: undefined };
  }
  const before = await trx
    .selectFrom('underground_negotiations')
    .selectAll()
    .where('id', '=', move.negotiationId)
    .where((eb) =>
      eb.or([
        eb.and([eb('requester_agent_id', '=', sender), eb('responder_agent_id', '=', recipient)]),
        eb.and([eb('requester_agent_id', '=', recipient), eb('responder_agent_id', '=', sender)]),
      ]),
    )
    .forUpdate()
    .executeTakeFirst();
  if (!before) throw new DomainError('NEGOTIATION_NOT_FOUND');
  if (before.status !== 'open') throw new DomainError('NEGOTIATION_CLOSED', { status: before.status });
  const answeringOwnOffer = before.last_offer_by === sender;
  let changes: Partial<Pick<NegotiationRow, 'status' | 'round' | 'last_offer_by'>> & { terms?: string } = {};
  switch (move.action) {
    case 'BOOKING_COUNTER':
      if (answeringOwnOffer) throw new DomainError('WAITING_OTHER_PARTY');
      await checkEvent(trx, move.terms?.eventId, [sender, recipient]);
      changes = { terms: JSON.stringify(move.terms), round: before.round + 1, last_offer_by: sender };
      break;
    case 'BOOKING_ACCEPT':
      if (answeringOwnOffer) throw new DomainError('WAITING_OTHER_PARTY');
      changes = { status: 'accepted' };
      break;
    case 'BOOKING_DECLINE':
      if (answeringOwnOffer) throw new DomainError('WAITING_OTHER_PARTY');
      changes = { status: 'declined' };
      break;
    case 'BOOKING_CANCEL':
      changes = { status: 'cancelled' };
      break;
  }
  const after = await trx
    .updateTable('underground_negotiations')
    .set({ ...changes, last_message_id: messageId, updated_at: now })
    .where('id', '=', before.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { after: negotiationView(after), before };
}

/** A booking may name an event; it must be one hosted by one of the two parties. */
async function checkEvent(trx: Tx, eventId: number | undefined, agents: string[]): Promise<void> {
  if (eventId === undefined) return;
  const event = await trx
    .selectFrom('underground_events')
    .select('id')
    .where('id', '=', eventId)
    .where('agent_id', 'in', agents)
    .executeTakeFirst();
  if (!event) throw new DomainError('PAYLOAD_TERMS_EVENTID_NOT_EVENT');
}

/** Undoes a move whose message could not be delivered, unless a later message has moved the negotiation since. */
async function undoBookingMove(db: Database, negotiationId: string, messageId: string, before: NegotiationRow | undefined): Promise<void> {
  if (!before) {
    await db.kysely
      .deleteFrom('underground_negotiations')
      .where('id', '=', negotiationId)
      .where('last_message_id', '=', messageId)
      .execute();
    return;
  }
  await db.kysely
    .updateTable('underground_negotiations')
    .set({
      status: before.status,
      terms: JSON.stringify(before.terms),
      round: before.round,
      last_offer_by: before.last_offer_by,
      last_message_id: before.last_message_id,
    })
    .where('id', '=', negotiationId)
    .where('last_message_id', '=', messageId)
    .execute();
}

// ---------------------------------------------------------------------------
// Sending

export interface BusDeps {
  db: Database;
  config: BackendConfig;
  encryptionKey: Buffer;
  /** The app's clock (ms), for the timestamps deliveries are signed with. */
  clock: () => number;
}

export const webhookSecretAad = (agentId: string) => `underground-webhook:${agentId}`;

/**
 * Where the bus delivers one of the caller's agents' messages (403 when the agent is not theirs). A new secret signs
 * the deliveries from now on; it is stored encrypted and returned, for the caller to see once.
 */
export async function setWebhook(db: Database, encryptionKey: Buffer, userId: string, agentId: string, url: string): Promise<string> {
  const secret = `whsec_${randomHex(24)}`;
  const now = new Date();
  await db.withUser(userId, async (trx) => {
    await ownAgent(trx, agentId);
    const secretEnc = encryptSecret(encryptionKey, secret, webhookSecretAad(agentId));
    await trx
      .insertInto('underground_webhooks')
      .values({ agent_id: agentId, user_id: userId, url, secret_enc: secretEnc, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('agent_id').doUpdateSet({ url, secret_enc: secretEnc, updated_at: now }))
      .execute();
  });
  return secret;
}

/** The bus stops delivering to one of the caller's agents (403 when the agent is not theirs). */
export async function removeWebhook(db: Database, userId: string, agentId: string): Promise<void> {
  await db.withUser(userId, async (trx) => {
    await ownAgent(trx, agentId);
    await trx.deleteFrom('underground_webhooks').where('agent_id', '=', agentId).execute();
  });
}

export interface FailedDelivery {
  agentId: string;
  attempts: number;
  error: string;
}

/**
 * Sends one bus message: verify the signature, resolve recipients, claim the messageId (a replay is 409) together
 * with the negotiation move, deliver to every recipient's webhook (3 attempts each), record the outcome. Any
 * recipient not reached makes the answer 500 `Delivery failed`, with per-recipient details outside production.
 */
export async function sendBusMessage(deps: BusDeps, message: AgentMessage): Promise<{ success: true; messageId: string }> {
  const { db, config } = deps;
  const sender = await identifySender(db, message);
  const kind = messageKind(message.action);
  const recipients = recipientsOf(message, kind, sender);
  const move = kind === 'booking' ? parseBookingMove(message) : undefined;

  const webhooks = await db.kysely
    .selectFrom('underground_webhooks as h')
    .innerJoin('agent_deployments as d', (join) => join.onRef('d.id', '=', 'h.agent_id').onRef('d.user_id', '=', 'h.user_id'))
    .select(['h.agent_id', 'h.url', 'h.secret_enc'])
    .where('h.agent_id', 'in', recipients)
    .execute();
  const byAgent = new Map(webhooks.map((w) => [w.agent_id, w]));
  if (recipients.some((id) => !byAgent.has(id))) throw new DomainError('RECIPIENT_AGENT_NOT_FOUND');

  const claimed = await db.kysely.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto('underground_bus_messages')
      .values({
        message_id: message.messageId,
        action: message.action,
        kind,
        from_agent_id: sender.agentId,
        from_address: sender.address.toLowerCase(),
        to_agent_id: message.toAgentId ?? null,
        message: JSON.stringify(message),
        status: 'delivering',
      })
      .onConflict((oc) => oc.column('message_id').doNothing())
      .returning('message_id')
      .executeTakeFirst();
    if (!inserted) throw new DomainError('MESSAGE_ALREADY_RECEIVED');
    const negotiation = move ? await applyBookingMove(trx, move, message.messageId, sender.agentId, recipients[0] as string) : undefined;
    await trx
      .insertInto('underground_bus_deliveries')
      .values(recipients.map((agentId) => ({ message_id: message.messageId, agent_id: agentId, status: 'pending' as const })))
      .execute();
    return { negotiation };
  });

  const sent = {
    message,
    sender: { agentId: sender.agentId, address: sender.address },
    ...(claimed.negotiation ? { negotiation: claimed.negotiation.after } : {}),
    ...(kind === 'amplify' ? { amplification: { targets: recipients.length } } : {}),
  };
  const options = { ...config.underground.webhook, userAgent: `${config.productName}-underground/1.0`, clock: deps.clock };
  const results = await Promise.all(
    recipients.map(async (agentId): Promise<[string, DeliveryResult]> => {
      const hook = byAgent.get(agentId) as (typeof webhooks)[number];
      let secret: string;
      try {
        secret = decryptSecret(deps.encryptionKey, hook.secret_enc, webhookSecretAad(agentId));
      } catch {
        return [agentId, { delivered: false, attempts: 0, error: 'webhook secret unreadable' }];
      }
      const payload = JSON.stringify({ ...sent, recipientAgentId: agentId });
      return [
        agentId,
        await deliverToWebhook({ url: hook.url, secret }, payload, { 'x-underground-message-id': message.messageId }, options),
      ];
    }),
  );

  const now = new Date();
  for (const [agentId, result] of results) {
    await db.kysely
      .updateTable('underground_bus_deliveries')
      .set({
        status: result.delivered ? 'delivered' : 'failed',
        attempts: result.attempts,
        last_error: result.error ?? null,
        delivered_at: result.delivered ? now : null,
      })
      .where('message_id', '=', message.messageId)
      .where('agent_id', '=', agentId)
      .execute();
  }
  const failed: FailedDelivery[] = results
    .filter(([, r]) => !r.delivered)
    .map(([agentId, r]) => ({ agentId, attempts: r.attempts, error: r.error ?? 'not delivered' }));
  await db.kysely
    .updateTable('underground_bus_messages')
    .set({ status: failed.length ? 'failed' : 'delivered', completed_at: now })
    .where('message_id', '=', message.messageId)
    .execute();
  if (failed.length) {
    if (move && claimed.negotiation) await undoBookingMove(db, move.negotiationId, message.messageId, claimed.negotiation.before);
    throw new DomainError('DELIVERY_FAILED', undefined, config.production ? undefined : { details: failed });
  }
  return { success: true, messageId: message.messageId };
}
