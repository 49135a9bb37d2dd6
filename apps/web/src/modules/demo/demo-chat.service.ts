import { DomainError, ERROR_CATALOGUE, newId } from '@aop/core';
import { type LlmMessage, LlmRequestError, chatCompletion } from '@aop/core/llm';
import { estimateTokens, llmCostUsd } from '@aop/core/llm-prices';
import type { Database } from '@aop/db';
import { recordUsage } from '../usage/usage.service.js';
import type { DemoConfig, DemoModel } from './demo.config.js';

/** Spec §4.6 / §8: the demo answers with at most 1024 tokens and never streams. */
export const DEMO_MAX_OUTPUT_TOKENS = 1024;
/** Spec §8: each conversation entry is cut to 4000 characters. */
export const DEMO_ENTRY_MAX_CHARS = 4000;
/** Only the latest user entries are sent: the demo is a taste, not a long session on the platform's key. */
export const DEMO_HISTORY_MAX_ENTRIES = 20;

/** Spec §4.6: usage of the demo is logged under user `demo` and agent `demo-chat`. */
export const DEMO_USER_ID = 'demo';
export const DEMO_AGENT_ID = 'demo-chat';
export const DEMO_USAGE_KIND = 'demo-chat';

export const DEMO_UNAVAILABLE = ERROR_CATALOGUE.DEMO_UNAVAILABLE.message;
export const DEMO_READY_MESSAGE = 'Try the agent without an account: pick a model and send a message.';
export const UNSUPPORTED_DEMO_MODEL = ERROR_CATALOGUE.UNSUPPORTED_DEMO_MODEL.message;

/**
 * The history sent upstream: only `user` entries with string content (a client cannot put words in
 * the assistant's or the system's mouth), each cut to 4000 characters, the latest 20.
 */
export function demoHistory(conversation: readonly unknown[]): LlmMessage[] {
  const kept: LlmMessage[] = [];
  for (const entry of conversation) {
    const { role, content } = (entry ?? {}) as { role?: unknown; content?: unknown };
    if (role !== 'user' || typeof content !== 'string' || content.trim() === '') continue;
    kept.push({ role: 'user', content: content.slice(0, DEMO_ENTRY_MAX_CHARS) });
  }
  return kept.slice(-DEMO_HISTORY_MAX_ENTRIES);
}

export interface DemoAnswer {
  id: string;
  model: string;
  message: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  done: true;
}

/**
 * One demo completion on the platform's LLM key, logged to the usage ledger as user `demo`.
 * 503 when no LLM is configured; 500 `Failed to get response` when the LLM fails or times out.
 */
export async function askDemo(
  db: Database,
  config: DemoConfig,
  model: DemoModel,
  messages: LlmMessage[],
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void },
): Promise<DemoAnswer> {
  const llm = config.demo.llm;
  if (!llm) throw new DomainError('DEMO_UNAVAILABLE');
  let completion: Awaited<ReturnType<typeof chatCompletion>>;
  try {
    completion = await chatCompletion(
      { baseUrl: llm.baseUrl, apiKey: llm.apiKey, timeoutMs: config.demo.timeoutMs },
      { model: model.id, messages, maxTokens: DEMO_MAX_OUTPUT_TOKENS },
    );
  } catch (err) {
    // Only the key-free reason is logged.
    if (err instanceof LlmRequestError) log.warn({ reason: err.reason, model: model.id }, 'demo chat: LLM request failed');
    else log.error({ err }, 'demo chat: LLM request failed');
    throw new DomainError('FAILED_GET_RESPONSE');
  }

  // Providers that send no counts are estimated, so the ledger never records a free call.
  const usage = completion.usage ?? {
    prompt_tokens: messages.reduce((sum, m) => sum + estimateTokens(m.content), 0),
    completion_tokens: estimateTokens(completion.content),
    total_tokens: 0,
  };
  if (!completion.usage) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const costUsd = completion.costUsd ?? llmCostUsd(model.id, usage.prompt_tokens, usage.completion_tokens) ?? 0;
  try {
    await db.withUser(DEMO_USER_ID, (trx) =>
      recordUsage(trx, {
        userId: DEMO_USER_ID,
        agentId: DEMO_AGENT_ID,
        agentName: DEMO_AGENT_ID,
        kind: DEMO_USAGE_KIND,
        model: model.id,
        promptTokens: usage.prompt_tokens,
        completionTokens: usage.completion_tokens,
        totalTokens: usage.total_tokens,
        costUsd,
      }),
    );
  } catch (err) {
    // The visitor got an answer the platform paid for; a lost ledger row is logged, not turned into an error.
    log.error({ err, model: model.id }, 'demo chat: usage not recorded');
  }
  return {
    id: completion.id ?? newId('message'),
    model: completion.model ?? model.id,
    message: completion.content,
    usage,
    done: true,
  };
}
