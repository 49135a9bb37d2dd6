import { NOT_BLANK, invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { CHAT_AGENT_ID_MAX, CHAT_MESSAGE_MAX_CHARS, DEFAULT_SESSION_KEY, SESSION_KEY_PATTERN } from './agent-chat.service.js';
import { AGENT_ACTIONS, type AgentAction } from './agent-interaction.service.js';

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

/** One stored message of `GET /api/chat` (agent-chat.service.ts `HistoryMessage`); `usage` only on the agent's replies. */
export const ChatMessage = Type.Object({
  id: Type.String(),
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
  content: Type.String(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  sessionKey: Type.String(),
  model: Type.Union([Type.String(), Type.Null()]),
  usage: Type.Union([Usage, Type.Null()]),
  createdAt: Type.String(),
});
export type ChatMessage = Static<typeof ChatMessage>;

/** `GET /api/chat`: the caller's stored chat, newest last; `nextBefore` (a message id) pages further back while `hasMore`. */
export const ChatHistory = Type.Object({
  messages: Type.Array(ChatMessage),
  hasMore: Type.Boolean(),
  nextBefore: Type.Union([Type.String(), Type.Null()]),
});
export type ChatHistory = Static<typeof ChatHistory>;

// ---------------------------------------------------------------------------------------------------------------------
// Request bodies. Each field answers with the message its handler check gave before (see `invalidAs` in
// @aop/core/request-schema), in the order the handlers checked them: message, sessionKey, agentId.

const message = Type.String({
  ...NOT_BLANK,
  maxLength: CHAT_MESSAGE_MAX_CHARS,
  ...invalidAs(refuse('MESSAGE_REQUIRED'), { maxLength: refuse('MESSAGE_TOO_LONG', { max: CHAT_MESSAGE_MAX_CHARS }) }),
});
const sessionKey = orNull(
  Type.String({
    // Empty is the default session, as absent or null.
    pattern: `^$|${SESSION_KEY_PATTERN.source}`,
    description: `letters, digits, dot, dash and underscore, at most 100 characters; absent, null or empty: \`${DEFAULT_SESSION_KEY}\``,
    ...invalidAs(refuse('INVALID_SESSION_KEY')),
  }),
);

/** `POST /api/gateway/chat`. */
export const GatewayChatBody = Type.Object({ message, sessionKey: Type.Optional(sessionKey) });
export type GatewayChatBody = Static<typeof GatewayChatBody>;

/** `POST /api/chat`. */
export const ChatBody = Type.Object({
  message,
  sessionKey: Type.Optional(sessionKey),
  agentId: Type.Optional(
    orNull(
      Type.String({
        minLength: 1,
        maxLength: CHAT_AGENT_ID_MAX,
        description: 'one of the caller’s agents; absent or null: their own agent',
        ...invalidAs(refuse('INVALID_AGENTID')),
      }),
    ),
  ),
});
export type ChatBody = Static<typeof ChatBody>;

/**
 * `POST /api/agent`. Only `action` is common to every body; each action reads its own fields and ignores the rest, and
 * the `chat` and `set-credential` actions spend their rate budget before their fields are read. A field typed here
 * would be refused for actions that ignore it, and before the budget is spent, so the other fields stay untyped and
 * each action checks its own (agent-interaction.service.ts).
 */
export const AgentActionBody = Type.Object({
  action: Type.Unsafe<AgentAction>({
    type: 'string',
    enum: [...AGENT_ACTIONS],
    ...invalidAs(refuse('INVALID_ACTION_CHOICE', { allowed: AGENT_ACTIONS.join(', ') })),
  }),
  message: Type.Optional(Type.Unknown({ description: 'chat: the message (string)' })),
  sessionKey: Type.Optional(Type.Unknown({ description: 'chat, create-session: a session key (string)' })),
  agentId: Type.Optional(
    Type.Unknown({ description: 'chat, create-session, update-skill (scope), set-credential (scope): an agent id (string)' }),
  ),
  label: Type.Optional(Type.Unknown({ description: 'create-session: the session’s label (string)' })),
  name: Type.Optional(Type.Unknown({ description: 'update-skill: the skill; set-credential: the credential (string)' })),
  enabled: Type.Optional(Type.Unknown({ description: 'update-skill (boolean)' })),
  description: Type.Optional(Type.Unknown({ description: 'update-skill (string or null)' })),
  config: Type.Optional(Type.Unknown({ description: 'update-skill (object)' })),
  value: Type.Optional(Type.Unknown({ description: 'set-credential (string); never returned' })),
});
export type AgentActionBody = Static<typeof AgentActionBody>;
