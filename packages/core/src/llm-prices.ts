/**
 * What the platform pays per model, in USD per million tokens (input, output): the one price table
 * behind the demo chat's usage rows, the backend AI proxy's costs and `POST /api/ai/estimate-cost`.
 * Keys are model ids exactly as the provider that serves them names them: OpenRouter ids carry the
 * maker (`openai/gpt-4o-mini`), direct providers do not (`gpt-4o-mini`). List prices at the time of
 * writing; a provider that changes its prices is changed here, in one place.
 */
export interface ModelPrice {
  /** USD per 1,000,000 prompt tokens. */
  input: number;
  /** USD per 1,000,000 completion tokens. */
  output: number;
}

export const LLM_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  // OpenRouter
  'anthropic/claude-sonnet-4.5': { input: 3, output: 15 },
  'anthropic/claude-haiku-4.5': { input: 1, output: 5 },
  'openai/gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'openai/gpt-4o-mini': { input: 0.15, output: 0.6 },
  'google/gemini-2.5-flash': { input: 0.3, output: 2.5 },
  'google/gemini-2.5-pro': { input: 1.25, output: 10 },
  'meta-llama/llama-3.3-70b-instruct': { input: 0.13, output: 0.4 },
  'mistralai/mistral-small-3.2-24b-instruct': { input: 0.075, output: 0.2 },
  'deepseek/deepseek-chat-v3.1': { input: 0.2, output: 0.8 },
  // Gemini (OpenAI-compatible endpoint)
  'gemini-2.5-flash': { input: 0.3, output: 2.5 },
  'gemini-2.5-flash-lite': { input: 0.1, output: 0.4 },
  'gemini-2.5-pro': { input: 1.25, output: 10 },
  // Groq
  'llama-3.3-70b-versatile': { input: 0.59, output: 0.79 },
  'llama-3.1-8b-instant': { input: 0.05, output: 0.08 },
  // Anthropic (OpenAI-compatible endpoint)
  'claude-sonnet-4-5': { input: 3, output: 15 },
  'claude-haiku-4-5': { input: 1, output: 5 },
  'claude-opus-4-1': { input: 15, output: 75 },
  // OpenAI
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4o-mini': { input: 0.15, output: 0.6 },
  'gpt-4o': { input: 2.5, output: 10 },
});

export const priceOf = (model: string): ModelPrice | undefined => (Object.hasOwn(LLM_PRICES, model) ? LLM_PRICES[model] : undefined);

/** USD for one call, rounded to the ledger's 6 decimals; undefined for a model without a price. */
export function llmCostUsd(model: string, promptTokens: number, completionTokens: number): number | undefined {
  const price = priceOf(model);
  if (!price) return undefined;
  const cost = (Math.max(0, promptTokens) * price.input + Math.max(0, completionTokens) * price.output) / 1_000_000;
  return Math.round(cost * 1_000_000) / 1_000_000;
}

/**
 * A provider-neutral token estimate for text not yet sent: about four characters per token for
 * English, the rule of thumb the providers themselves publish. Estimates only; bills use the
 * provider's own counts.
 */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

/** Chat formats add a few tokens per message for the role and separators. */
export const MESSAGE_OVERHEAD_TOKENS = 4;
