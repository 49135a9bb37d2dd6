import { DomainError, newId } from '@aop/core';
import { type LlmCompletion, type LlmMessage, type LlmProbe, LlmRequestError, chatCompletion, probeLlm } from '@aop/core/llm';
import { MESSAGE_OVERHEAD_TOKENS, estimateTokens, llmCostUsd, priceOf } from '@aop/core/llm-prices';
import type { Tx } from '@aop/db';
import type { BackendConfig } from '../config.js';
import { type AiProvider, DEFAULT_MODELS, normalizeAiProvider } from './agents.js';

/** A provider by its canonical name (`google` is an alias of `gemini`). */
export type ProviderId = Exclude<AiProvider, 'google'>;
export const PROVIDER_IDS: readonly ProviderId[] = ['openrouter', 'gemini', 'groq', 'anthropic', 'openai'];
/** Reference behaviour: `openrouter` unless the caller or their selection says otherwise. */
export const DEFAULT_PROVIDER: ProviderId = 'openrouter';

/** Answers are 1024 tokens unless the caller asks for more (up to 8192), like the demo's fixed cap. */
export const DEFAULT_MAX_TOKENS = 1024;
export const MAX_TOKENS_LIMIT = 8192;
export const MAX_MESSAGES = 100;
const ROLES = ['system', 'user', 'assistant'] as const;

type AiConfig = Pick<BackendConfig, 'ai' | 'aiBaseUrls'>;

/**
 * The models the platform's keys may be spent on, per provider. The platform pays for every call, so
 * only models with a price in `@aop/core/llm-prices` are offered; each provider's default (the same
 * one agents get, `DEFAULT_MODELS`) is among them.
 */
export const AI_MODEL_CATALOG: Readonly<Record<ProviderId, readonly { id: string; name: string }[]>> = {
  openrouter: [
    { id: 'anthropic/claude-sonnet-4.5', name: 'Claude Sonnet 4.5' },
    { id: 'anthropic/claude-haiku-4.5', name: 'Claude Haiku 4.5' },
    { id: 'openai/gpt-4.1-mini', name: 'GPT-4.1 mini' },
    { id: 'openai/gpt-4o-mini', name: 'GPT-4o mini' },
    { id: 'google/gemini-2.5-flash', name: 'Gemini 2.5 Flash' },
    { id: 'google/gemini-2.5-pro', name: 'Gemini 2.5 Pro' },
    { id: 'meta-llama/llama-3.3-70b-instruct', name: 'Llama 3.3 70B' },
    { id: 'mistralai/mistral-small-3.2-24b-instruct', name: 'Mistral Small 3.2' },
    { id: 'deepseek/deepseek-chat-v3.1', name: 'DeepSeek V3.1' },
  ],
  gemini: [
    { id: 'gemini-2.5-flash', name: 'Gemini 2.5 Flash' },
    { id: 'gemini-2.5-flash-lite', name: 'Gemini 2.5 Flash-Lite' },
    { id: 'gemini-2.5-pro', name: 'Gemini 2.5 Pro' },
  ],
  groq: [
    { id: 'llama-3.3-70b-versatile', name: 'Llama 3.3 70B Versatile' },
    { id: 'llama-3.1-8b-instant', name: 'Llama 3.1 8B Instant' },
  ],
  anthropic: [
    { id: 'claude-sonnet-4-5', name: 'Claude Sonnet 4.5' },
    { id: 'claude-haiku-4-5', name: 'Claude Haiku 4.5' },
    { id: 'claude-opus-4-1', name: 'Claude Opus 4.1' },
  ],
  openai: [
    { id: 'gpt-4.1-mini', name: 'GPT-4.1 mini' },
    { id: 'gpt-4.1', name: 'GPT-4.1' },
    { id: 'gpt-4o-mini', name: 'GPT-4o mini' },
    { id: 'gpt-4o', name: 'GPT-4o' },
  ],
};

export const isFallbackOnly = (config: AiConfig, provider: ProviderId) => config.ai.fallbackProvider === provider;
export const isConfigured = (config: AiConfig, provider: ProviderId) => Boolean(config.ai.keys[provider]);

/**
 * A provider a caller names: supported (else 400 `Unsupported aiProvider`) and not the fallback-only
 * one, which is kept for failover (else 400).
 */
export function chosenProvider(config: AiConfig, value: unknown): ProviderId {
  const provider = normalizeAiProvider(value);
  if (isFallbackOnly(config, provider)) throw new DomainError('FALLBACK_PROVIDER_NOT_SELECTABLE', { provider });
  return provider;
}

const inCatalog = (provider: ProviderId, model: string) => AI_MODEL_CATALOG[provider].some((m) => m.id === model);

/** The model a caller names for a provider: one of its catalog (else 400). */
export function catalogModel(provider: ProviderId, value: unknown): string {
  if (typeof value !== 'string' || !inCatalog(provider, value)) throw new DomainError('UNSUPPORTED_MODEL_FOR_PROVIDER', { provider });
  return value;
}

/** The provider whose catalog holds `model` (ids never repeat across providers), or undefined. */
export const providerOfModel = (model: string): ProviderId | undefined => PROVIDER_IDS.find((p) => inCatalog(p, model));

const pricing = (model: string) => {
  const price = priceOf(model);
  return { inputPerMTok: price?.input ?? null, outputPerMTok: price?.output ?? null };
};

export function providerView(config: AiConfig, provider: ProviderId) {
  return {
    provider,
    configured: isConfigured(config, provider),
    fallbackOnly: isFallbackOnly(config, provider),
    defaultModel: DEFAULT_MODELS[provider],
    models: AI_MODEL_CATALOG[provider].map((m) => ({ ...m, default: m.id === DEFAULT_MODELS[provider], pricing: pricing(m.id) })),
  };
}

export interface Selection {
  provider: ProviderId;
  model: string;
  /** `user` when the user's stored choice applies, `default` otherwise. */
  source: 'user' | 'default';
}

export async function storedSelection(trx: Tx, userId: string) {
  return trx.selectFrom('ai_model_selections').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

export async function saveSelection(trx: Tx, userId: string, provider: ProviderId, model: string) {
  const now = new Date();
  return trx
    .insertInto('ai_model_selections')
    .values({ user_id: userId, provider, model, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ provider, model, updated_at: now }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * What applies to a user: their stored choice while it is still valid (the provider supported and not
 * made fallback-only since, the model still offered), else the default provider and its default model.
 */
export function effectiveSelection(config: AiConfig, stored: { provider: string; model: string } | undefined): Selection {
  if (stored) {
    const provider = PROVIDER_IDS.find((p) => p === stored.provider);
    if (provider && !isFallbackOnly(config, provider) && inCatalog(provider, stored.model)) {
      return { provider, model: stored.model, source: 'user' };
    }
  }
  return { provider: DEFAULT_PROVIDER, model: DEFAULT_MODELS[DEFAULT_PROVIDER], source: 'default' };
}

/** `messages[]` of `{ role, content }`: 1 to 100, role `system`, `user` or `assistant`, content a non-empty string. */
export function parseMessages(value: unknown): LlmMessage[] {
  if (!Array.isArray(value) || value.length === 0) throw new DomainError('MESSAGES_NON_EMPTY_ARRAY');
  if (value.length > MAX_MESSAGES) throw new DomainError('TOO_MANY_MESSAGES', { max: MAX_MESSAGES });
  return value.map((entry, i) => {
    const { role, content } = (entry ?? {}) as { role?: unknown; content?: unknown };
    if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) {
      throw new DomainError('MESSAGE_ROLE_INVALID', { i, allowed: ROLES.join(', ') });
    }
    if (typeof content !== 'string' || content.trim() === '') throw new DomainError('MESSAGE_CONTENT_EMPTY', { i });
    return { role: role as LlmMessage['role'], content };
  });
}

/** Prompt tokens of messages not yet sent, estimated (see `estimateTokens`). */
export const estimatePromptTokens = (messages: readonly LlmMessage[]) =>
  messages.reduce((sum, m) => sum + estimateTokens(m.content) + MESSAGE_OVERHEAD_TOKENS, 0);

export interface ChatResult {
  provider: ProviderId;
  model: string;
  completion: LlmCompletion;
  /** The fallback provider answered because the chosen one failed. */
  fallback: boolean;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  costUsd: number;
}

type Log = { warn(obj: object, msg: string): void };

async function complete(
  config: AiConfig,
  provider: ProviderId,
  model: string,
  messages: LlmMessage[],
  maxTokens: number,
  temperature?: number,
) {
  const apiKey = config.ai.keys[provider];
  if (!apiKey) throw new DomainError('AI_PROVIDER_NOT_CONFIGURED', { provider });
  return chatCompletion(
    { baseUrl: config.aiBaseUrls[provider], apiKey, timeoutMs: config.ai.timeoutMs },
    { model, messages, maxTokens, ...(temperature !== undefined ? { temperature } : {}) },
  );
}

/**
 * One completion on the platform's key for `provider` (503 when it has none). When that call fails
 * and a fallback provider with a key is configured, the fallback's default model answers instead;
 * when both fail, 502. Only key-free reasons are logged.
 */
export async function runChat(
  config: AiConfig,
  request: { provider: ProviderId; model: string; messages: LlmMessage[]; maxTokens: number; temperature?: number },
  log: Log,
): Promise<ChatResult> {
  const { messages, maxTokens, temperature } = request;
  let provider = request.provider;
  let model = request.model;
  let fallback = false;
  let completion: LlmCompletion;
  try {
    completion = await complete(config, provider, model, messages, maxTokens, temperature);
  } catch (err) {
    if (!(err instanceof LlmRequestError)) throw err;
    log.warn({ reason: err.reason, provider, model }, 'AI chat: provider request failed');
    const backup = config.ai.fallbackProvider;
    if (!backup || backup === provider || !isConfigured(config, backup)) throw new DomainError('AI_PROVIDER_REQUEST_FAILED');
    provider = backup;
    model = DEFAULT_MODELS[backup];
    fallback = true;
    try {
      completion = await complete(config, provider, model, messages, maxTokens, temperature);
    } catch (again) {
      if (!(again instanceof LlmRequestError)) throw again;
      log.warn({ reason: again.reason, provider, model }, 'AI chat: fallback provider request failed');
      throw new DomainError('AI_PROVIDER_REQUEST_FAILED');
    }
  }
  const usage = completion.usage ?? {
    prompt_tokens: estimatePromptTokens(messages),
    completion_tokens: estimateTokens(completion.content),
    total_tokens: 0,
  };
  if (!completion.usage) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const costUsd = completion.costUsd ?? llmCostUsd(model, usage.prompt_tokens, usage.completion_tokens) ?? 0;
  return { provider, model, completion, fallback, usage, costUsd };
}

/** The usage ledger's kind of an `/api/ai` call. */
export const AI_USAGE_KIND = 'ai-chat';

/** The call goes on the user's usage ledger (kind `ai-chat`), like every LLM call the platform pays for. */
export async function recordAiUsage(trx: Tx, userId: string, result: ChatResult): Promise<void> {
  await trx
    .insertInto('usage_events')
    .values({
      id: newId('usage'),
      user_id: userId,
      agent_id: null,
      agent_name: null,
      kind: AI_USAGE_KIND,
      model: result.model,
      prompt_tokens: result.usage.prompt_tokens,
      completion_tokens: result.usage.completion_tokens,
      total_tokens: result.usage.total_tokens,
      cost_usd: result.costUsd,
    })
    .execute();
}

export interface ProviderHealth extends Partial<LlmProbe> {
  provider: ProviderId;
  configured: boolean;
  fallbackOnly: boolean;
  reachable: boolean;
}

export interface AiHealth {
  /** `ok`: every configured provider answers; `degraded`: some do; `unavailable`: none (or none configured). */
  status: 'ok' | 'degraded' | 'unavailable';
  defaultProvider: ProviderId;
  fallbackProvider: ProviderId | null;
  providers: ProviderHealth[];
  checkedAt: string;
}

/** Probes stay short whatever the chat timeout: health must answer quickly. */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * `GET {base}/models` with the platform key for each configured provider, in parallel. Results are
 * cached for `ttlMs`, so polling the endpoint does not turn into a stream of upstream calls.
 */
export function createAiHealth(config: AiConfig, ttlMs = 15_000): () => Promise<AiHealth> {
  let cached: { at: number; value: Promise<AiHealth> } | undefined;
  const check = async (): Promise<AiHealth> => {
    const providers = await Promise.all(
      PROVIDER_IDS.map(async (provider): Promise<ProviderHealth> => {
        const base = { provider, configured: isConfigured(config, provider), fallbackOnly: isFallbackOnly(config, provider) };
        const apiKey = config.ai.keys[provider];
        if (!apiKey) return { ...base, reachable: false, error: 'not configured' };
        // Anthropic's own model listing reads `x-api-key`; its chat compatibility layer reads the Bearer header.
        const extra: Record<string, string> = provider === 'anthropic' ? { 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' } : {};
        const timeoutMs = Math.min(PROBE_TIMEOUT_MS, config.ai.timeoutMs);
        return { ...base, ...(await probeLlm({ baseUrl: config.aiBaseUrls[provider], apiKey, timeoutMs }, extra)) };
      }),
    );
    const configured = providers.filter((p) => p.configured);
    const reachable = configured.filter((p) => p.reachable);
    const status = reachable.length === 0 ? 'unavailable' : reachable.length === configured.length ? 'ok' : 'degraded';
    return {
      status,
      defaultProvider: DEFAULT_PROVIDER,
      fallbackProvider: config.ai.fallbackProvider ?? null,
      providers,
      checkedAt: new Date().toISOString(),
    };
  };
  return () => {
    // The cache's age only: monotonic, so a clock step cannot keep a stale answer or drop a fresh one.
    const now = performance.now();
    if (!cached || now - cached.at >= ttlMs) cached = { at: now, value: check() };
    return cached.value;
  };
}
