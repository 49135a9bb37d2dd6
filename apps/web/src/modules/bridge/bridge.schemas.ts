import { invalidAs, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';

/**
 * The bridge's channels (spec §4.18); the daily brief counts messages per channel too. Kept here rather than in
 * bridge.service.ts (which re-exports it): the request schema lists them, and a schemas file imports no service (the
 * service imports the database).
 */
export const BRIDGE_CHANNELS = ['general', 'tasks', 'alerts'] as const;

export const BridgeMessage = Type.Object({
  id: Type.String(),
  sender: Type.String(),
  channel: Type.String(),
  content: Type.String(),
  priority: Type.String(),
  created_at: Type.String(),
});
export type BridgeMessage = Static<typeof BridgeMessage>;

export const BridgeInbox = Type.Object({
  ok: Type.Literal(true),
  channel: Type.String(),
  count: Type.Integer(),
  messages: Type.Array(BridgeMessage),
});
export type BridgeInbox = Static<typeof BridgeInbox>;

export const BridgeSent = Type.Object({ ok: Type.Literal(true), message: Type.Omit(BridgeMessage, ['content']) });
export type BridgeSent = Static<typeof BridgeSent>;

export const BRIDGE_PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
export const BRIDGE_CONTENT_MAX = 100_000;

const literals = <T extends string>(values: readonly T[]) => values.map((value) => Type.Literal(value));
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The body of `POST /api/bridge/send` for the deployment's `senders`. Each field answers with the message the route
 * has always given it (see `invalidAs` in @aop/core), in the handler's old order, which Ajv follows only so far:
 * - `content` comes before `sender`: a missing or empty one of either answers "sender and content are required"
 *   before an unknown sender is named.
 * - The sender list is a `pattern`, not an `enum`: Ajv checks `enum` before `minLength`, so an empty sender would
 *   answer "invalid sender".
 * - `content`'s length is left to the handler, which checks it last (after channel and priority).
 */
export const bridgeSendBody = (senders: readonly string[]) => {
  const required = refuse('SENDER_CONTENT_ARE_REQUIRED');
  return Type.Object({
    content: Type.String({ minLength: 1, description: `at most ${BRIDGE_CONTENT_MAX} characters`, ...invalidAs(required) }),
    sender: Type.String({
      minLength: 1,
      pattern: `^(?:${senders.map(escapeRegExp).join('|')})$`,
      description: `one of ${senders.join(', ')}`,
      ...invalidAs(required, { pattern: refuse('INVALID_SENDER') }),
    }),
    channel: Type.Optional(Type.Union(literals(BRIDGE_CHANNELS), { default: 'general', ...invalidAs(refuse('INVALID_CHANNEL')) })),
    priority: Type.Optional(Type.Union(literals(BRIDGE_PRIORITIES), { default: 'normal', ...invalidAs(refuse('INVALID_PRIORITY')) })),
  });
};
export type BridgeSendBody = Static<ReturnType<typeof bridgeSendBody>>;

/** `GET /api/bridge/health` (spec §4.8); a database failure answers 500 `{ status: 'error', error }` instead. */
export const BridgeHealth = Type.Object({
  status: Type.Literal('ok'),
  total_messages: Type.Integer(),
  last_message: Type.Union([Type.Object({ created_at: Type.String(), sender: Type.String(), channel: Type.String() }), Type.Null()]),
  channels: Type.Array(Type.String()),
  senders: Type.Array(Type.String()),
  timestamp: Type.String(),
});
export type BridgeHealth = Static<typeof BridgeHealth>;
