import { ConfigError, Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

/** One model the demo offers (spec §4.6). */
export interface DemoModel {
  id: string;
  name: string;
  /** Who makes the model, for the picker (`openai`, `anthropic` …), not where it is called. */
  provider: string;
}

/** Six OpenRouter models from six makers, cheapest-to-run first; the first is the default. */
export const DEFAULT_DEMO_MODELS = [
  'openai/gpt-4o-mini|GPT-4o mini|openai',
  'google/gemini-2.5-flash|Gemini 2.5 Flash|google',
  'anthropic/claude-haiku-4.5|Claude Haiku 4.5|anthropic',
  'meta-llama/llama-3.3-70b-instruct|Llama 3.3 70B|meta',
  'mistralai/mistral-small-3.2-24b-instruct|Mistral Small 3.2|mistral',
  'deepseek/deepseek-chat-v3.1|DeepSeek V3.1|deepseek',
].join(',');

/** `DEMO_MODELS`: comma-separated `id|name|provider` entries; a malformed list stops the service at start. */
export function parseDemoModels(value: string): DemoModel[] {
  const models: DemoModel[] = [];
  for (const entry of value.split(',')) {
    if (entry.trim() === '') continue;
    const parts = entry.split('|').map((p) => p.trim());
    const [id, name, provider] = parts;
    if (parts.length !== 3 || !id || !name || !provider) {
      throw new ConfigError(`Invalid configuration:\n  DEMO_MODELS: each entry must be id|name|provider (got ${JSON.stringify(entry)})`);
    }
    if (models.some((m) => m.id === id)) throw new ConfigError(`Invalid configuration:\n  DEMO_MODELS: model ${id} is listed twice`);
    models.push({ id, name, provider });
  }
  if (models.length === 0) throw new ConfigError('Invalid configuration:\n  DEMO_MODELS: at least one model is required');
  return models;
}

/** The demo's variables; the LLM it calls (LLM_BASE_URL, LLM_API_KEY) is shared with the plugin gateway (config.ts). */
export const DemoEnvSchema = Type.Object({
  DEMO_MODELS: Env.str(DEFAULT_DEMO_MODELS),
  DEMO_CHAT_LIMIT_PER_MINUTE: Env.int(10, 1),
  DEMO_CHAT_TIMEOUT_MS: Env.int(30_000, 100),
});

export interface DemoConfig {
  /** Demo chat (spec §4.6): the OpenAI-compatible LLM it calls (unset → 503), its six models, per-IP limit, timeout. */
  demo: { llm: { baseUrl: string; apiKey: string } | undefined; models: DemoModel[]; limitPerMinute: number; timeoutMs: number };
}

export function toDemoConfig(env: Static<typeof DemoEnvSchema>, llm: { baseUrl: string; apiKey: string } | undefined): DemoConfig {
  return {
    demo: {
      llm,
      models: parseDemoModels(env.DEMO_MODELS),
      limitPerMinute: env.DEMO_CHAT_LIMIT_PER_MINUTE,
      timeoutMs: env.DEMO_CHAT_TIMEOUT_MS,
    },
  };
}
