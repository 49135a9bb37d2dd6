import type { DB } from '@aop/db';
import type { Kysely } from 'kysely';

/**
 * Email provider events (spec §6, `POST /api/webhooks/email`): inbound mail and the delivery events `sent`,
 * `delivered`, `bounced`, `opened`, `clicked`, `complained` of mail we sent. The payload is the Resend-style
 * `{ type: 'email.<event>', created_at, data: { email_id, from, to[], subject, … } }`; inbound mail is
 * `email.received`. Each delivery is stored once (its message id is the primary key); a hard bounce or a
 * complaint suppresses the recipient, so the mailer stops writing to that address.
 */

export const EMAIL_EVENT_TYPES = ['inbound', 'sent', 'delivered', 'bounced', 'opened', 'clicked', 'complained'] as const;
export type EmailEventType = (typeof EMAIL_EVENT_TYPES)[number];

/** Provider event names (with or without the `email.` prefix) → our type; anything else is acknowledged, not kept. */
const TYPE_NAMES: Record<string, EmailEventType> = {
  received: 'inbound',
  inbound: 'inbound',
  sent: 'sent',
  delivered: 'delivered',
  bounced: 'bounced',
  opened: 'opened',
  clicked: 'clicked',
  complained: 'complained',
};

export function emailEventType(providerType: string): EmailEventType | undefined {
  const name = providerType.startsWith('email.') ? providerType.slice('email.'.length) : providerType;
  return Object.hasOwn(TYPE_NAMES, name) ? TYPE_NAMES[name] : undefined;
}

/** Bounded copies of what we index; the whole payload is kept as well. */
const TEXT_MAX = 1_000;
const BODY_MAX = 200_000;
const ADDRESSES_MAX = 100;

const str = (value: unknown, max = TEXT_MAX): string | null => (typeof value === 'string' && value !== '' ? value.slice(0, max) : null);

/** `Ada <ada@example.com>` → `ada@example.com`; lower-case, as suppressions are kept. */
export function bareAddress(value: string): string | null {
  const angle = /<([^<>\s]+@[^<>\s]+)>/.exec(value);
  const address = (angle?.[1] ?? value).trim().toLowerCase();
  return /^[^\s@]+@[^\s@]+$/.test(address) && address.length <= 254 ? address : null;
}

function addresses(value: unknown): string[] {
  const list = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : [];
  const out = new Set<string>();
  for (const item of list.slice(0, ADDRESSES_MAX)) {
    const address = typeof item === 'string' ? bareAddress(item) : null;
    if (address) out.add(address);
  }
  return [...out];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export interface ParsedEmailEvent {
  type: EmailEventType;
  emailId: string | null;
  from: string | null;
  to: string[];
  subject: string | null;
  textBody: string | null;
  htmlBody: string | null;
  occurredAt: Date;
  /** Recipients to suppress, with the reason. */
  suppress: { reason: 'bounced' | 'complained'; addresses: string[] } | null;
}

export class InvalidEmailEventError extends Error {
  override name = 'InvalidEmailEventError';
}

/**
 * Reads one provider payload; `undefined` for an event type we do not keep. A soft (`Transient`) bounce is stored but
 * suppresses nothing: a full mailbox today is not a dead address.
 */
export function parseEmailEvent(payload: unknown, deliveredAtMs: number): ParsedEmailEvent | undefined {
  if (!isObject(payload) || typeof payload.type !== 'string') throw new InvalidEmailEventError('Invalid payload');
  const type = emailEventType(payload.type);
  if (!type) return undefined;
  const data = isObject(payload.data) ? payload.data : {};
  const when = Date.parse(str(payload.created_at) ?? str(data.created_at) ?? '');
  const to = addresses(data.to);
  let suppress: ParsedEmailEvent['suppress'] = null;
  if (type === 'complained') suppress = { reason: 'complained', addresses: to };
  if (type === 'bounced') {
    const bounceType = isObject(data.bounce) ? str(data.bounce.type) : null;
    if (bounceType?.toLowerCase() !== 'transient') suppress = { reason: 'bounced', addresses: to };
  }
  return {
    type,
    emailId: str(data.email_id, 200),
    from: typeof data.from === 'string' ? (bareAddress(data.from) ?? str(data.from)) : null,
    to,
    subject: str(data.subject),
    textBody: type === 'inbound' ? str(data.text, BODY_MAX) : null,
    htmlBody: type === 'inbound' ? str(data.html, BODY_MAX) : null,
    occurredAt: new Date(Number.isFinite(when) ? when : deliveredAtMs),
    suppress: suppress && suppress.addresses.length > 0 ? suppress : null,
  };
}

export interface StoredEmailEvent {
  /** False when this delivery id was stored before (a retry): nothing changed. */
  stored: boolean;
  suppressed: string[];
}

/** Stores the event and its suppressions in one transaction, once per delivery id. */
export async function storeEmailEvent(
  db: Kysely<DB>,
  deliveryId: string,
  event: ParsedEmailEvent,
  payload: Record<string, unknown>,
): Promise<StoredEmailEvent> {
  return db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto('email_events')
      .values({
        id: deliveryId,
        type: event.type,
        email_id: event.emailId,
        from_address: event.from,
        to_addresses: JSON.stringify(event.to),
        subject: event.subject,
        text_body: event.textBody,
        html_body: event.htmlBody,
        occurred_at: event.occurredAt,
        payload: JSON.stringify(payload),
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) return { stored: false, suppressed: [] };
    if (!event.suppress) return { stored: true, suppressed: [] };
    const { reason, addresses: list } = event.suppress;
    // The first reason recorded for an address stays.
    await trx
      .insertInto('email_suppressions')
      .values(list.map((address) => ({ address, reason, event_id: deliveryId })))
      .onConflict((oc) => oc.column('address').doNothing())
      .execute();
    return { stored: true, suppressed: list };
  });
}

/** Whether the mailer must skip `address` (spec §6 email events: bounced and complained addresses). */
export async function isSuppressed(db: Kysely<DB>, address: string): Promise<boolean> {
  const bare = bareAddress(address);
  if (!bare) return false;
  const row = await db.selectFrom('email_suppressions').select('address').where('address', '=', bare).executeTakeFirst();
  return row !== undefined;
}
