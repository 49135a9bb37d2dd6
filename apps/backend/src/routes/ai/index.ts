import { type App, DomainError } from '@aop/core';
import { createUsageDebitMeter } from '@aop/db';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey, verifyUserContext } from '../../plugins/auth.js';
import { requirePaidPlan } from '../../plugins/plan.js';
import { llmCostUsd, priceOf } from '@aop/core/llm-prices';
import {
  AI_USAGE_KIND,
  DEFAULT_MAX_TOKENS,
  DEFAULT_PROVIDER,
  PROVIDER_IDS,
  type ProviderId,
  catalogModel,
  chosenProvider,
  createAiHealth,
  effectiveSelection,
  estimatePromptTokens,
  parseMessages,
  providerOfModel,
  providerView,
  recordAiUsage,
  runChat,
  saveSelection,
  storedSelection,
} from '../../services/ai.js';
import { normalizeAiProvider } from '../../services/agents.js';
import { callerBeforeBody, callerId } from '../../plugins/caller.js';
import { ChatBody, EstimateCostBody, SelectModelBody } from './schemas.js';

export interface AiRoutesOptions {
  config: BackendConfig;
}

const hasUser = (request: FastifyRequest) => Boolean(request.userContext && request.userContext.userId !== 'anonymous');

/** `aiProvider` is the reference's word; `provider` is accepted too. */
const providerField = (body: { aiProvider?: string | null; provider?: unknown }) => body.aiProvider ?? body.provider;
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
  const debits = createUsageDebitMeter(app.metrics.registry);

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
      preValidation: callerBeforeBody,
      config: { invalidBody: 'PROVIDER_MODEL_ARE_REQUIRED' },
      schema: { tags: ['ai'], body: SelectModelBody },
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
      preValidation: callerBeforeBody,
      config: { invalidBody: 'MESSAGES_NON_EMPTY_ARRAY' },
      schema: { tags: ['ai'], body: ChatBody },
    },
    async (request) => {
      const userId = callerId(request);
      const body = request.body;
      // The schema checked the list's length, maxTokens and temperature; each entry is checked here (its index is named).
      const messages = parseMessages(body.messages);
      const maxTokens = body.maxTokens ?? DEFAULT_MAX_TOKENS;
      const temperature = body.temperature ?? undefined;

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
        { provider, model, messages, maxTokens, ...(temperature !== undefined ? { temperature } : {}) },
        request.log,
      );
      await app.db.withUser(userId, (trx) => recordAiUsage(trx, userId, result));
      debits.debited(AI_USAGE_KIND, result.costUsd);
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
      config: { invalidBody: 'MESSAGES_PROMPTTOKENS_REQUIRED' },
      schema: { tags: ['ai'], body: EstimateCostBody },
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
        promptTokens = body.promptTokens;
        estimated = false;
      } else if (body.messages !== undefined && body.messages !== null) {
        promptTokens = estimatePromptTokens(parseMessages(body.messages));
      } else if (typeof body.prompt === 'string' && body.prompt.trim() !== '') {
        promptTokens = estimatePromptTokens([{ role: 'user', content: body.prompt }]);
      } else {
        throw new DomainError('MESSAGES_PROMPTTOKENS_REQUIRED');
      }
      // Without a count, the answer is priced at the default answer cap: the most a default call can cost.
      const completionTokens = body.completionTokens ?? DEFAULT_MAX_TOKENS;
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
