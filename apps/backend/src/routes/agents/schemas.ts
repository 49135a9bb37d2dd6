import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, type StringOptions, Type } from '@sinclair/typebox';
import { AI_PROVIDERS, type AiProvider } from '../../services/agents.js';

/*
 * Each field answers with the message it had when the handler checked it (see `invalidAs` in @aop/core). The order of
 * the properties is the order the handler checked them in: Ajv stops at the first failing one.
 */

/** Spec §4.15 verification types. */
export const VERIFICATION_TYPES = ['eas', 'wallet-provider', 'ens', 'webauthn'] as const;
/** Longest channel token or API key accepted (a bound on what is written into an agent's environment). */
export const SECRET_MAX = 4096;
/** A docker image tag: what `POST /api/agents/:id/update` runs. */
const VERSION_FORMAT = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';
/** `isAgentId` of the agents service, as a pattern. */
const AGENT_ID_FORMAT = '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$';
/** Non-empty, without whitespace around it (`value.trim() === value`: `\s` is the set `trim` removes). */
const NO_SURROUNDING_SPACE = '^\\S(?:[\\s\\S]*\\S)?$';
/** Not blank once trimmed. */
const NOT_BLANK = '\\S';

/**
 * An AI provider as `normalizeAiProvider` reads it: a supported name (`google` is `gemini`); empty or null is the
 * default one. One schema with `null` in its enum rather than `orNull`, which would leave `null` outside the enum.
 */
export const aiProviderName = (description: string) =>
  Type.Unsafe<AiProvider | '' | null>({
    type: ['string', 'null'],
    enum: [...AI_PROVIDERS, '', null],
    description,
    ...invalidAs(refuse('UNSUPPORTED_AIPROVIDER')),
  });

/** A free-form JSON object (`config`). */
const configObject = Type.Record(Type.String(), Type.Unknown(), invalidAs(refuse('INVALID_CONFIG_OBJECT')));

/**
 * A secret: a non-empty string without surrounding whitespace; its length (in UTF-16 units, as the host stores it) is
 * checked again in code, since `maxLength` counts code points.
 */
const secret = (options: StringOptions = {}) =>
  Type.String({ minLength: 1, maxLength: SECRET_MAX, pattern: NO_SURROUNDING_SPACE, ...options });

/** `POST /api/deployments`: `name` was typed before the handler checked `agentId`, so it still comes first. */
export const DeploymentBody = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 100 })),
  // Null counts as absent (`agentId is required`, answered in code): only a missing one is the schema's.
  agentId: orNull(
    Type.String({
      minLength: 1,
      pattern: AGENT_ID_FORMAT,
      ...invalidAs(refuse('INVALID_AGENTID'), {
        required: refuse('FIELD_REQUIRED', { field: 'agentId' }),
        minLength: refuse('FIELD_REQUIRED', { field: 'agentId' }),
      }),
    }),
  ),
  config: Type.Optional(
    Type.Unknown({
      description:
        'deployment options (`telegramToken`, `discordToken`, `autoProvision`, `agentType`, `aiProvider`, `plan`, `agentConfig`, `apiKey`); a value that is not an object is ignored',
    }),
  ),
});
export type DeploymentBody = Static<typeof DeploymentBody>;

export const CreateAgentBody = Type.Object({
  plan: Type.Optional(Type.String()),
  // Trimmed and held to 100 characters in code (`Name must be at most 100 characters`).
  name: Type.String({ pattern: NOT_BLANK, ...invalidAs(refuse('NAME_REQUIRED')) }),
  config: Type.Optional(Type.Unknown({ description: 'the agent configuration object; a value that is not an object is ignored' })),
});
export type CreateAgentBody = Static<typeof CreateAgentBody>;

export const UpdateAgentBody = Type.Object({
  plan: Type.Optional(Type.String()),
  aiProvider: Type.Optional(aiProviderName('null or empty: the default provider')),
  config: Type.Optional(configObject),
  channelTokens: Type.Optional(
    Type.Object(
      { telegram: Type.Optional(secret()), discord: Type.Optional(secret()), whatsapp: Type.Optional(secret()) },
      {
        minProperties: 1,
        // Not `additionalProperties: false`, which would drop an unknown channel silently instead of refusing it.
        propertyNames: { enum: ['telegram', 'discord', 'whatsapp'] },
        description: 'telegram, discord, whatsapp: tokens to set (merged)',
        ...invalidAs(refuse('INVALID_CHANNEL_TOKENS')),
      },
    ),
  ),
  apiKey: Type.Optional(secret({ description: "the agent's own LLM key, for its aiProvider", ...invalidAs(refuse('INVALID_API_KEY')) })),
});
export type UpdateAgentBody = Static<typeof UpdateAgentBody>;

export const UpdateImageBody = Type.Object({
  image: Type.Optional(
    orNull(
      Type.String({
        pattern: VERSION_FORMAT,
        description: 'the runtime version to run; absent or null: the pinned one',
        ...invalidAs(refuse('INVALID_DOCKER_IMAGE_VALUE')),
      }),
    ),
  ),
});
export type UpdateImageBody = Static<typeof UpdateImageBody>;

export const AgentConfigBody = Type.Object({ config: configObject });
export type AgentConfigBody = Static<typeof AgentConfigBody>;

/** The fields typed before the handler checked `type` come first; `type` is checked last, as it was. */
export const VerifyBody = Type.Object({
  verified: Type.Optional(Type.Boolean()),
  verifierAddress: Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 200 })])),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  // Optional here: a missing `type` was refused only after the other fields were checked (in code).
  type: Type.Optional(
    Type.Unsafe<(typeof VERIFICATION_TYPES)[number]>({
      type: 'string',
      enum: [...VERIFICATION_TYPES],
      ...invalidAs(refuse('INVALID_VERIFICATION_TYPE', { allowed: VERIFICATION_TYPES.join(', ') })),
    }),
  ),
});
export type VerifyBody = Static<typeof VerifyBody>;

/** A chat run is waited for to its end; OpenClaw's turns take seconds to minutes. */
export const RPC_MAX_TIMEOUT_MS = 120_000;
export const RPC_MIN_TIMEOUT_MS = 1_000;

/** `POST /api/agents/:id/rpc`; whether `method` is on the allowed list is checked in code (403). */
export const RpcBody = Type.Object({
  method: Type.String({ minLength: 1, ...invalidAs(refuse('FIELD_REQUIRED', { field: 'method' })) }),
  params: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: "the method's parameters", ...invalidAs(refuse('PARAMS_OBJECT')) }),
  ),
  timeoutMs: Type.Optional(
    Type.Integer({
      minimum: RPC_MIN_TIMEOUT_MS,
      maximum: RPC_MAX_TIMEOUT_MS,
      description: 'default 30 000',
      ...invalidAs(refuse('TIMEOUT_MS_OUT_OF_RANGE', { min: RPC_MIN_TIMEOUT_MS, max: RPC_MAX_TIMEOUT_MS })),
    }),
  ),
});
export type RpcBody = Static<typeof RpcBody>;
