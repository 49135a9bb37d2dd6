import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey, verifyUserContext } from '../../plugins/auth.js';
import { requirePaidPlan } from '../../plugins/plan.js';
import { llmCostUsd, priceOf } from '@aop/core/llm-prices';
import {
  DEFAULT_MAX_TOKENS,
  DEFAULT_PROVIDER,
  MAX_TOKENS_LIMIT,
  PROVIDER_IDS,
  type ProviderId,
  catalogModel,
  chosenProvider,
  createAiHealth,
  effectiveSelection,
  estimatePromptTokens,
  optionalCount,
  parseMessages,
  providerOfModel,
  providerView,
  recordAiUsage,
  runChat,
  saveSelection,
  storedSelection,
} from '../../services/ai.js';
import { normalizeAiProvider } from '../../services/agents.js';

export interface AiRoutesOptions {
  config: BackendConfig;
}

/** Routes that act for a user need a real one, not the `anonymous` default of the user context. */
function callerId(request: FastifyRequest): string {
  const id = request.userContext?.userId;
  if (!id || id === 'anonymous') throw new DomainError('USER_CONTEXT_REQUIRED');
  return id;
}

const hasUser = (request: FastifyRequest) => Boolean(request.userContext && request.userContext.userId !== 'anonymous');

/** `aiProvider` is the reference's word; `provider` is accepted too. */
const providerField = (body: { aiProvider?: unknown; provider?: unknown }) => body.aiProvider ?? body.provider;
const isAbsent = (value: unknown) => value === undefined || value === null || value === '';

/**
 * Spec §4.18 "AI (backend)", mounted at `/api/ai` under the 30/min AI limit (spec §8). Every route
 * needs the internal key and the signed user context (spec §5); chat also needs a paid plan.
 * Calls are made with the platform's key of each provider and never with a user's.
 */
export async function aiRoutes(app: App, { config }: AiRoutesOptions): Promise<void> {
  app.addHook('onRequest', requireInternalKey(config.internalApiKey));
  app.addHook('onRequest', verifyUserContext(config.userContextSecret));
  const health = createAiHealth(config);

  app.get('/health', { schema: { tags: ['ai'] } }, async () => health());

  app.get('/models', { schema: { tags: ['ai'] } }, async (request) => {
    const stored = hasUser(request)
      ? await app.db.withUser(callerId(request), (trx) => storedSelection(trx, callerId(request)))
      : undefined;
    return {
      defaultProvider: DEFAULT_PROVIDER,
      fallbackProvider: config.ai.fallbackProvider ?? null,
      selected: effectiveSelection(config, stored),
      providers: PROVIDER_IDS.map((provider) => providerView(config, provider)),
    };
  });

  app.get(
    '/models/:provider',
    { schema: { tags: ['ai'], params: Type.Object({ provider: Type.String({ maxLength: 64 }) }) } },
    async (request) => providerView(config, normalizeAiProvider(request.params.provider)),
  );

  app.post(
    '/models/select',
    {
      config: { invalidBodyMessage: 'provider and model are required' },
      schema: {
        tags: ['ai'],
        body: Type.Object({
          provider: Type.Optional(Type.Unknown()),
          aiProvider: Type.Optional(Type.Unknown()),
          model: Type.Optional(Type.Unknown()),
        }),
      },
    },
    async (request) => {
      const userId = callerId(request);
      const body = request.body;
      if (isAbsent(providerField(body)) || isAbsent(body.model)) throw new DomainError('PROVIDER_MODEL_ARE_REQUIRED');
      const provider = chosenProvider(config, providerField(body));
      const model = catalogModel(provider, body.model);
      const row = await app.db.withUser(userId, (trx) => saveSelection(trx, userId, provider, model));
      return { success: true, provider, model, updatedAt: row.updated_at.toISOString() };
    },
  );

  app.post(
    '/chat',
    {
      onRequest: requirePaidPlan(),
      config: { invalidBodyMessage: 'messages must be a non-empty array' },
      schema: {
        tags: ['ai'],
        body: Type.Object({
          messages: Type.Optional(Type.Unknown()),
          provider: Type.Optional(Type.Unknown()),
          aiProvider: Type.Optional(Type.Unknown()),
          model: Type.Optional(Type.Unknown()),
          maxTokens: Type.Optional(Type.Unknown()),
          temperature: Type.Optional(Type.Unknown()),
        }),
      },
    },
    async (request) => {
      const userId = callerId(request);
      const body = request.body;
      const messages = parseMessages(body.messages);
      const maxTokens = body.maxTokens ?? DEFAULT_MAX_TOKENS;
      if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > MAX_TOKENS_LIMIT) {
        throw new DomainError('MAX_TOKENS_OUT_OF_RANGE', { max: MAX_TOKENS_LIMIT });
      }
      const temperature = body.temperature;
      if (temperature !== undefined && temperature !== null && (typeof temperature !== 'number' || temperature < 0 || temperature > 2)) {
        throw new DomainError('TEMPERATURE_NUMBER_FROM_0_2');
      }

      // The caller's provider (and model) win; then the user's selection; then the default.
      const selected = effectiveSelection(config, await app.db.withUser(userId, (trx) => storedSelection(trx, userId)));
      let provider: ProviderId;
      let model: string;
      if (!isAbsent(providerField(body))) {
        provider = chosenProvider(config, providerField(body));
        model = isAbsent(body.model)
          ? provider === selected.provider
            ? selected.model
            : providerView(config, provider).defaultModel
          : catalogModel(provider, body.model);
      } else {
        provider = selected.provider;
        model = isAbsent(body.model) ? selected.model : catalogModel(provider, body.model);
      }

      const result = await runChat(
        config,
        { provider, model, messages, maxTokens, ...(typeof temperature === 'number' ? { temperature } : {}) },
        request.log,
      );
      await app.db.withUser(userId, (trx) => recordAiUsage(trx, userId, result));
      return {
        id: result.completion.id ?? null,
        provider: result.provider,
        model: result.model,
        message: { role: 'assistant', content: result.completion.content },
        usage: result.usage,
        costUsd: result.costUsd,
        fallback: result.fallback,
      };
    },
  );

  app.post(
    '/estimate-cost',
    {
      config: { invalidBodyMessage: 'messages or promptTokens required' },
      schema: {
        tags: ['ai'],
        body: Type.Object({
          provider: Type.Optional(Type.Unknown()),
          aiProvider: Type.Optional(Type.Unknown()),
          model: Type.Optional(Type.Unknown()),
          messages: Type.Optional(Type.Unknown()),
          prompt: Type.Optional(Type.Unknown()),
          promptTokens: Type.Optional(Type.Unknown()),
          completionTokens: Type.Optional(Type.Unknown()),
        }),
      },
    },
    async (request) => {
      const body = request.body;
      // Estimating is free: any supported provider may be priced, the fallback one included.
      let provider: ProviderId;
      let model: string;
      if (!isAbsent(providerField(body))) {
        provider = normalizeAiProvider(providerField(body));
        model = isAbsent(body.model) ? providerView(config, provider).defaultModel : catalogModel(provider, body.model);
      } else if (!isAbsent(body.model)) {
        const owner = typeof body.model === 'string' ? providerOfModel(body.model) : undefined;
        if (!owner) throw new DomainError('UNSUPPORTED_MODEL');
        provider = owner;
        model = body.model as string;
      } else {
        const stored = hasUser(request)
          ? await app.db.withUser(callerId(request), (trx) => storedSelection(trx, callerId(request)))
          : undefined;
        ({ provider, model } = effectiveSelection(config, stored));
      }

      let promptTokens: number;
      let estimated = true;
      if (body.promptTokens !== undefined && body.promptTokens !== null) {
        promptTokens = optionalCount(body.promptTokens, 'promptTokens', 0);
        estimated = false;
      } else if (body.messages !== undefined && body.messages !== null) {
        promptTokens = estimatePromptTokens(parseMessages(body.messages));
      } else if (typeof body.prompt === 'string' && body.prompt.trim() !== '') {
        promptTokens = estimatePromptTokens([{ role: 'user', content: body.prompt }]);
      } else {
        throw new DomainError('MESSAGES_PROMPTTOKENS_REQUIRED');
      }
      // Without a count, the answer is priced at the default answer cap: the most a default call can cost.
      const completionTokens = optionalCount(body.completionTokens, 'completionTokens', DEFAULT_MAX_TOKENS);
      const price = priceOf(model);
      return {
        provider,
        model,
        promptTokens,
        completionTokens,
        tokensEstimated: estimated,
        pricing: { inputPerMTok: price?.input ?? null, outputPerMTok: price?.output ?? null, currency: 'USD' },
        estimatedCostUsd: llmCostUsd(model, promptTokens, completionTokens) ?? 0,
      };
    },
  );
}
