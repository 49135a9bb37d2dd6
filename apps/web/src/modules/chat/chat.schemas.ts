import { type Static, Type } from '@sinclair/typebox';

export const Usage = Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), total_tokens: Type.Integer() });
export type Usage = Static<typeof Usage>;

export const ChatReply = Type.Object({
  success: Type.Literal(true),
  reply: Type.String(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  sessionKey: Type.String(),
  messageId: Type.String(),
  model: Type.Union([Type.String(), Type.Null()]),
  usage: Usage,
});
export type ChatReply = Static<typeof ChatReply>;
