import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { CHAT_MESSAGE_MAX_CHARS } from '../chat/agent-chat.service.js';
import { Usage } from '../chat/chat.schemas.js';

// OpenAI's shapes (Chat Completions and Models), as far as an agent answers them. Unknown request fields are ignored,
// as OpenAI clients send fields of their own (`store`, `metadata`, …).

/** Absent or null: OpenAI clients send `null` for a field they leave unset. */
const nullable = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));

/** At most this many messages in one request (the 1 MB body limit bounds their text). */
export const MAX_MESSAGES = 500;
/** A conversation key (`user`, `X-Session-Key`) is at most this long before it is derived (see `conversationKey`). */
export const CONVERSATION_KEY_MAX = 256;

const TextPart = Type.Object({ type: Type.Literal('text'), text: Type.String({ maxLength: CHAT_MESSAGE_MAX_CHARS }) });

export const ChatMessage = Type.Object({
  role: Type.Union([Type.Literal('system'), Type.Literal('developer'), Type.Literal('user'), Type.Literal('assistant')], {
    description: 'system, developer, user or assistant (the agent uses its own tools: no tool messages)',
  }),
  content: Type.Union([Type.String({ maxLength: CHAT_MESSAGE_MAX_CHARS }), Type.Array(TextPart, { maxItems: 100 }), Type.Null()], {
    description: `a string, an array of text parts, or null; at most ${CHAT_MESSAGE_MAX_CHARS} characters a string or part`,
  }),
  name: Type.Optional(Type.String({ maxLength: 64 })),
});

export const ChatCompletionBody = Type.Object({
  model: Type.String({
    minLength: 1,
    maxLength: 200,
    description: 'one of your agents: its id (as GET /v1/models lists it), `agent:<id>`, or its name',
  }),
  messages: Type.Array(ChatMessage, { minItems: 1, maxItems: MAX_MESSAGES, description: 'the conversation; at least one user message' }),
  stream: nullable(Type.Boolean({ description: 'answer as server-sent `chat.completion.chunk` events, ending with `data: [DONE]`' })),
  stream_options: nullable(Type.Object({ include_usage: Type.Optional(Type.Boolean()) })),
  user: nullable(
    Type.String({
      maxLength: CONVERSATION_KEY_MAX,
      description: 'a conversation: requests with the same `user` continue one agent session (X-Session-Key takes precedence)',
    }),
  ),
  temperature: nullable(Type.Number({ minimum: 0, maximum: 2 })),
  top_p: nullable(Type.Number({ minimum: 0, maximum: 1 })),
  presence_penalty: nullable(Type.Number({ minimum: -2, maximum: 2 })),
  frequency_penalty: nullable(Type.Number({ minimum: -2, maximum: 2 })),
  seed: nullable(Type.Integer()),
  stop: nullable(Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 4 })])),
  max_tokens: nullable(Type.Integer({ minimum: 1 })),
  max_completion_tokens: nullable(Type.Integer({ minimum: 1 })),
  response_format: nullable(
    Type.Object({ type: Type.Union([Type.Literal('text'), Type.Literal('json_object'), Type.Literal('json_schema')]) }),
  ),
  n: nullable(Type.Integer({ minimum: 1, maximum: 1, description: 'one choice only' })),
  tools: nullable(Type.Array(Type.Unknown(), { maxItems: 0, description: 'not supported: the agent uses its own tools' })),
  functions: nullable(Type.Array(Type.Unknown(), { maxItems: 0, description: 'not supported: the agent uses its own tools' })),
});
export type ChatCompletionBody = Static<typeof ChatCompletionBody>;

export const ChatCompletionHeaders = Type.Object({
  'x-session-key': Type.Optional(
    Type.String({ maxLength: CONVERSATION_KEY_MAX, description: 'a conversation, as `user` (this header wins when both are sent)' }),
  ),
});

export const ChatCompletion = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion'),
  created: Type.Integer(),
  model: Type.String({ description: 'the agent’s id' }),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      message: Type.Object({ role: Type.Literal('assistant'), content: Type.String(), refusal: Type.Null() }),
      finish_reason: Type.Literal('stop'),
      logprobs: Type.Null(),
    }),
  ),
  usage: Usage,
});
export type ChatCompletion = Static<typeof ChatCompletion>;

/** One server-sent event of a streamed answer (`data: <chunk>`); the stream ends with `data: [DONE]`. */
export const ChatCompletionChunk = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion.chunk'),
  created: Type.Integer(),
  model: Type.String(),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      delta: Type.Object({ role: Type.Optional(Type.Literal('assistant')), content: Type.Optional(Type.String()) }),
      finish_reason: Type.Union([Type.Literal('stop'), Type.Null()]),
      logprobs: Type.Null(),
    }),
  ),
  usage: Type.Optional(Type.Union([Usage, Type.Null()], { description: 'with stream_options.include_usage: null, then the last chunk’s' })),
});
export type ChatCompletionChunk = Static<typeof ChatCompletionChunk>;

export const Model = Type.Object({
  id: Type.String({ description: 'the agent’s id' }),
  object: Type.Literal('model'),
  created: Type.Integer({ description: 'Unix seconds: when the agent was created' }),
  owned_by: Type.String({ description: 'the owning account (the caller)' }),
  name: Type.String({ description: 'the agent’s name (also accepted as `model`)' }),
});

export const ModelList = Type.Object({ object: Type.Literal('list'), data: Type.Array(Model) });

/** Every refusal of `/v1/*`, OpenAI's error object. */
export const OpenAiErrorBody = Type.Object({
  error: Type.Object({
    message: Type.String(),
    type: Type.String(),
    param: Type.Union([Type.String(), Type.Null()]),
    code: Type.Union([Type.String(), Type.Null()]),
  }),
});
export type OpenAiErrorBody = Static<typeof OpenAiErrorBody>;
