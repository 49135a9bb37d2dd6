import { type Static, Type } from '@sinclair/typebox';

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
