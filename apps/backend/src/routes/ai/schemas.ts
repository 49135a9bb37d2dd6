import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { MAX_MESSAGES, MAX_TOKENS_LIMIT } from '../../services/ai.js';
import { aiProviderName } from '../agents/schemas.js';

/*
 * Each field answers with the message it had when the handler checked it (see `invalidAs` in @aop/core). Left as
 * `Type.Unknown()`, because no fixed message fits their wrong type:
 * - `provider`: ignored whenever `aiProvider` is set (`aiProvider ?? provider`), so any value may stand there;
 * - `model`: a wrong one answers `Unsupported model for <provider>`, naming the provider of the same body;
 * - the entries of `messages`: a bad one answers with its own index (`messages[3].role must be …`);
 * - `messages` and `prompt` of estimate-cost: ignored when `promptTokens` (or a non-blank `prompt`) decides.
 */

/** `aiProvider` is the reference's word; empty or null counts as absent. A fallback-only provider is refused in code. */
const aiProvider = aiProviderName('the provider (alias: `provider`); empty or null: absent');
const provider = Type.Unknown({ description: 'alias of `aiProvider`, used when `aiProvider` is absent or null' });
const model = Type.Unknown({ description: "a model of the provider's catalog (`GET /api/ai/models/:provider`)" });
const message = Type.Unknown({ description: '`{ role: system | user | assistant, content: non-empty string }`' });

const tokenCount = (name: 'promptTokens' | 'completionTokens') =>
  orNull(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      ...invalidAs(refuse('FIELD_NOT_INTEGER_IN_RANGE', { name, max: Number.MAX_SAFE_INTEGER })),
    }),
  );

export const SelectModelBody = Type.Object({
  provider: Type.Optional(provider),
  aiProvider: Type.Optional(aiProvider),
  model: Type.Optional(model),
});
export type SelectModelBody = Static<typeof SelectModelBody>;

export const ChatBody = Type.Object({
  messages: Type.Array(message, {
    minItems: 1,
    maxItems: MAX_MESSAGES,
    ...invalidAs(refuse('MESSAGES_NON_EMPTY_ARRAY'), { maxItems: refuse('TOO_MANY_MESSAGES', { max: MAX_MESSAGES }) }),
  }),
  maxTokens: Type.Optional(
    orNull(
      Type.Integer({
        minimum: 1,
        maximum: MAX_TOKENS_LIMIT,
        description: 'default 1024',
        ...invalidAs(refuse('MAX_TOKENS_OUT_OF_RANGE', { max: MAX_TOKENS_LIMIT })),
      }),
    ),
  ),
  temperature: Type.Optional(orNull(Type.Number({ minimum: 0, maximum: 2, ...invalidAs(refuse('TEMPERATURE_NUMBER_FROM_0_2')) }))),
  provider: Type.Optional(provider),
  aiProvider: Type.Optional(aiProvider),
  model: Type.Optional(model),
});
export type ChatBody = Static<typeof ChatBody>;

export const EstimateCostBody = Type.Object({
  provider: Type.Optional(provider),
  aiProvider: Type.Optional(aiProvider),
  model: Type.Optional(model),
  promptTokens: Type.Optional(tokenCount('promptTokens')),
  messages: Type.Optional(Type.Unknown({ description: 'as for chat; estimated when `promptTokens` is absent' })),
  prompt: Type.Optional(Type.Unknown({ description: 'a single user message; used when neither `promptTokens` nor `messages` is given' })),
  completionTokens: Type.Optional(tokenCount('completionTokens')),
});
export type EstimateCostBody = Static<typeof EstimateCostBody>;
