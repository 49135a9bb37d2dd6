import { DomainError } from '@aop/core';
import { type LlmCompletion, type LlmMessage, LlmRequestError, chatCompletion, chatCompletionStream } from '@aop/core/llm';
import type { WebConfig } from '../../../config.js';
import { CHAT_MESSAGE_MAX_CHARS } from '../../chat/agent-chat.service.js';
import { type GatewayPlugin, isAbsent, pluginFailed, pluginUnavailable } from './types.js';

/** Output tokens when the body names none, and the most a call may ask for (the price is per call, not per token). */
export const GENERATE_TEXT_DEFAULT_MAX_TOKENS = 1024;
export const GENERATE_TEXT_MAX_TOKENS = 4096;
/** At most this many messages in one call. */
export const GENERATE_TEXT_MAX_MESSAGES = 100;

const ROLES = new Set<LlmMessage['role']>(['system', 'user', 'assistant']);

/** `prompt` (one user message) or `messages` (OpenAI-style `{ role, content }` list), exactly one of them. */
export function generateTextMessages(fields: Record<string, unknown>): LlmMessage[] {
  const { prompt, messages } = fields;
  if (!isAbsent(prompt) && !isAbsent(messages)) throw new DomainError('SEND_PROMPT_MESSAGES_NOT_BOTH');
  if (!isAbsent(prompt)) {
    if (typeof prompt !== 'string' || prompt.trim() === '') throw new DomainError('PROMPT_NON_EMPTY_STRING');
    if (prompt.length > CHAT_MESSAGE_MAX_CHARS) throw new DomainError('PROMPT_TOO_LONG', { max: CHAT_MESSAGE_MAX_CHARS });
    return [{ role: 'user', content: prompt }];
  }
  if (isAbsent(messages)) throw new DomainError('PROMPT_MESSAGES_REQUIRED');
  if (!Array.isArray(messages) || messages.length === 0 || messages.length > GENERATE_TEXT_MAX_MESSAGES) {
    throw new DomainError('INVALID_MESSAGES_LIST', { max: GENERATE_TEXT_MAX_MESSAGES });
  }
  return messages.map((entry) => {
    const { role, content } = (entry ?? {}) as { role?: unknown; content?: unknown };
    if (typeof role !== 'string' || !ROLES.has(role as LlmMessage['role'])) {
      throw new DomainError('EACH_MESSAGE_NEEDS_ROLE_SYSTEM');
    }
    if (typeof content !== 'string' || content.trim() === '') throw new DomainError('EACH_MESSAGE_NEEDS_NON_EMPTY');
    if (content.length > CHAT_MESSAGE_MAX_CHARS) throw new DomainError('MESSAGE_CONTENT_TOO_LONG', { max: CHAT_MESSAGE_MAX_CHARS });
    return { role: role as LlmMessage['role'], content };
  });
}

function maxTokensOf(fields: Record<string, unknown>): number {
  const value = fields.maxTokens ?? fields.max_tokens;
  if (isAbsent(value)) return GENERATE_TEXT_DEFAULT_MAX_TOKENS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > GENERATE_TEXT_MAX_TOKENS) {
    throw new DomainError('MAX_TOKENS_OUT_OF_RANGE', { max: GENERATE_TEXT_MAX_TOKENS });
  }
  return value;
}

function temperatureOf(fields: Record<string, unknown>): number | undefined {
  const value = fields.temperature;
  if (isAbsent(value)) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 2) {
    throw new DomainError('TEMPERATURE_NUMBER_FROM_0_2');
  }
  return value;
}

/**
 * `generate-text`: one completion from the platform's OpenAI-compatible LLM (`LLM_BASE_URL`, `LLM_API_KEY`). The
 * model is one the demo lists (`GET /api/demo/chat`), the first by default: the price is per call, so a caller cannot
 * pick a model that costs more than the platform planned for. Body: `prompt` or `messages`, optional `model`,
 * `maxTokens` (≤ 4096, default 1024), `temperature`. Streams. Adds `model` and `usage` to the answer.
 */
export function generateTextPlugin(config: Pick<WebConfig, 'demo' | 'plugins'>, priceUsd: string | null): GatewayPlugin {
  return {
    id: 'generate-text',
    auth: false,
    streaming: true,
    priceUsd,
    prepare(fields) {
      const messages = generateTextMessages(fields);
      const { models } = config.demo;
      const model = isAbsent(fields.model) ? models[0] : models.find((m) => m.id === fields.model);
      if (!model) throw new DomainError('UNSUPPORTED_DEMO_MODEL');
      const maxTokens = maxTokensOf(fields);
      const temperature = temperatureOf(fields);
      const llm = config.demo.llm;
      if (!llm) throw pluginUnavailable('generate-text', 'No LLM provider is configured on this server');

      return async (run) => {
        const endpoint = { baseUrl: llm.baseUrl, apiKey: llm.apiKey, timeoutMs: config.plugins.timeoutMs };
        const options = { model: model.id, messages, maxTokens, ...(temperature !== undefined ? { temperature } : {}) };
        let completion: LlmCompletion;
        try {
          completion = run.onDelta
            ? await chatCompletionStream(endpoint, options, run.onDelta, run.signal)
            : await chatCompletion(endpoint, options);
        } catch (err) {
          if (!(err instanceof LlmRequestError)) throw err;
          // Only the key-free reason is logged.
          run.log.warn({ reason: err.reason, model: model.id }, 'gateway plugin generate-text: LLM request failed');
          throw pluginFailed(
            'generate-text',
            err.status ? `The LLM provider answered HTTP ${err.status}` : 'The LLM provider did not answer',
          );
        }
        return {
          message: completion.content,
          extra: { model: completion.model ?? model.id, ...(completion.usage ? { usage: completion.usage } : {}) },
        };
      };
    },
  };
}
