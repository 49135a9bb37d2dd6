/**
 * A minimal client of OpenAI-compatible chat-completion APIs (OpenRouter, Gemini's and Anthropic's
 * compatibility endpoints, Groq, OpenAI, a local server): one completion, whole or streamed, and a
 * reachability probe of `GET {base}/models`. Built on `fetch` with a timeout that covers the body.
 * Errors carry a short reason that never includes the key, the request or the upstream body.
 */

import { sseData } from './sse.js';

export interface LlmMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface LlmEndpoint {
  /** The API root, e.g. `https://openrouter.ai/api/v1` (what OpenAI clients call `baseURL`). */
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
}

export interface LlmUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface LlmCompletion {
  /** The upstream's completion id, when it sent one. */
  id: string | undefined;
  /** The model that answered, as the upstream reports it. */
  model: string | undefined;
  content: string;
  /** The upstream's token counts, when it sent them. */
  usage: LlmUsage | undefined;
  /** What the upstream says the call cost in USD (OpenRouter's `usage.cost`), when it says. */
  costUsd: number | undefined;
}

/** Why a call failed, in words safe to log: never the key, the prompt or the upstream's body. */
export class LlmRequestError extends Error {
  override name = 'LlmRequestError';
  constructor(
    readonly reason: string,
    /** The upstream's HTTP status, when it answered. */
    readonly status?: number,
  ) {
    super(`LLM request failed: ${reason}`);
  }
}

const endpointUrl = (baseUrl: string, path: string) => `${baseUrl.replace(/\/+$/, '')}${path}`;

const authHeaders = (apiKey: string): Record<string, string> => ({ authorization: `Bearer ${apiKey}`, accept: 'application/json' });

/** A short, key-free reason for a network failure. */
function describeFetchError(err: unknown): string {
  const code = (err as { cause?: { code?: unknown } })?.cause?.code;
  return typeof code === 'string' && /^E[A-Z_]+$/.test(code) ? `unreachable (${code})` : 'unreachable';
}

async function send(endpoint: LlmEndpoint, path: string, init: RequestInit): Promise<{ status: number; text: string }> {
  const signal = AbortSignal.timeout(endpoint.timeoutMs);
  try {
    // A redirect is not followed: the key must not travel to another host.
    const res = await fetch(endpointUrl(endpoint.baseUrl, path), { ...init, signal, redirect: 'manual' });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    if (signal.aborted) throw new LlmRequestError(`timed out after ${endpoint.timeoutMs} ms`);
    throw new LlmRequestError(describeFetchError(err));
  }
}

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : 0);

function readUsage(value: unknown): { usage: LlmUsage | undefined; costUsd: number | undefined } {
  if (!value || typeof value !== 'object') return { usage: undefined, costUsd: undefined };
  const u = value as Record<string, unknown>;
  const prompt = count(u.prompt_tokens);
  const completion = count(u.completion_tokens);
  const total = typeof u.total_tokens === 'number' ? count(u.total_tokens) : prompt + completion;
  const cost = typeof u.cost === 'number' && Number.isFinite(u.cost) && u.cost >= 0 ? u.cost : undefined;
  return { usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total }, costUsd: cost };
}

/** The assistant text: a string, or the text parts of a content array. */
function readContent(message: unknown): string | undefined {
  const content = (message as { content?: unknown } | undefined)?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => ((part as { type?: unknown })?.type === 'text' ? String((part as { text?: unknown }).text ?? '') : ''))
      .join('');
  }
  return undefined;
}

export interface CompletionOptions {
  model: string;
  messages: LlmMessage[];
  maxTokens: number;
  temperature?: number;
}

/** `POST {base}/chat/completions` with `stream: false`; throws `LlmRequestError` unless a 2xx answer carries a reply. */
export async function chatCompletion(endpoint: LlmEndpoint, options: CompletionOptions): Promise<LlmCompletion> {
  const body = {
    model: options.model,
    messages: options.messages,
    max_tokens: options.maxTokens,
    stream: false,
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
  };
  const { status, text } = await send(endpoint, '/chat/completions', {
    method: 'POST',
    headers: { ...authHeaders(endpoint.apiKey), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (status < 200 || status >= 300) throw new LlmRequestError(`HTTP ${status}`, status);
  return parseCompletion(status, text);
}

/** A 2xx `chat.completion` body, or `LlmRequestError` when it is not JSON or carries no reply. */
function parseCompletion(status: number, text: string): LlmCompletion {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new LlmRequestError(`response was not JSON (HTTP ${status})`, status);
  }
  const choice = Array.isArray(json?.choices) ? (json.choices[0] as Record<string, unknown> | undefined) : undefined;
  const content = readContent(choice?.message);
  if (content === undefined) throw new LlmRequestError('response had no message', status);
  return {
    id: typeof json.id === 'string' ? json.id : undefined,
    model: typeof json.model === 'string' ? json.model : undefined,
    content,
    ...readUsage(json.usage),
  };
}

/**
 * `POST {base}/chat/completions` with `stream: true` (and `stream_options.include_usage`, so providers that support it
 * send token counts): calls `onDelta` with each piece of text as it arrives and resolves with the whole completion.
 * The timeout covers the whole stream; `signal` lets the caller stop early (the client went away). A provider that
 * answers a plain `chat.completion` instead is accepted: its text is one delta.
 */
export async function chatCompletionStream(
  endpoint: LlmEndpoint,
  options: CompletionOptions,
  onDelta: (text: string) => void,
  signal?: AbortSignal,
): Promise<LlmCompletion> {
  const body = {
    model: options.model,
    messages: options.messages,
    max_tokens: options.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
  };
  const timeout = AbortSignal.timeout(endpoint.timeoutMs);
  const combined = signal ? AbortSignal.any([timeout, signal]) : timeout;
  const failure = (err: unknown): LlmRequestError => {
    if (err instanceof LlmRequestError) return err;
    if (timeout.aborted) return new LlmRequestError(`timed out after ${endpoint.timeoutMs} ms`);
    if (signal?.aborted) return new LlmRequestError('aborted by the caller');
    return new LlmRequestError(describeFetchError(err));
  };
  let res: Response;
  try {
    res = await fetch(endpointUrl(endpoint.baseUrl, '/chat/completions'), {
      method: 'POST',
      headers: { ...authHeaders(endpoint.apiKey), accept: 'text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: combined,
      redirect: 'manual',
    });
  } catch (err) {
    throw failure(err);
  }
  try {
    if (res.status < 200 || res.status >= 300) {
      await res.body?.cancel();
      throw new LlmRequestError(`HTTP ${res.status}`, res.status);
    }
    if (!res.body || !/^text\/event-stream/i.test(res.headers.get('content-type') ?? '')) {
      const completion = parseCompletion(res.status, await res.text());
      if (completion.content) onDelta(completion.content);
      return completion;
    }
    let content = '';
    let id: string | undefined;
    let model: string | undefined;
    let usage: ReturnType<typeof readUsage> = { usage: undefined, costUsd: undefined };
    let chunks = 0;
    for await (const data of sseData(res.body)) {
      if (data.trim() === '[DONE]') break;
      let chunk: Record<string, unknown>;
      try {
        chunk = JSON.parse(data) as Record<string, unknown>;
      } catch {
        throw new LlmRequestError('stream carried an event that was not JSON', res.status);
      }
      if (chunk.error) throw new LlmRequestError('stream reported an error', res.status);
      chunks++;
      if (typeof chunk.id === 'string') id ??= chunk.id;
      if (typeof chunk.model === 'string') model ??= chunk.model;
      if (chunk.usage) usage = readUsage(chunk.usage);
      const choice = Array.isArray(chunk.choices) ? (chunk.choices[0] as { delta?: { content?: unknown } } | undefined) : undefined;
      const piece = choice?.delta?.content;
      if (typeof piece === 'string' && piece !== '') {
        content += piece;
        onDelta(piece);
      }
    }
    if (chunks === 0) throw new LlmRequestError('stream had no message', res.status);
    return { id, model, content, ...usage };
  } catch (err) {
    throw failure(err);
  }
}

export interface LlmProbe {
  /** The provider answered `GET {base}/models` with 2xx using this key. */
  reachable: boolean;
  latencyMs: number;
  /** Why not, in key-free words. */
  error?: string;
}

/** Is the provider up and does it take this key? `GET {base}/models`, the cheapest authenticated call. */
export async function probeLlm(endpoint: LlmEndpoint, extraHeaders: Record<string, string> = {}): Promise<LlmProbe> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  try {
    const { status } = await send(endpoint, '/models', { method: 'GET', headers: { ...authHeaders(endpoint.apiKey), ...extraHeaders } });
    if (status >= 200 && status < 300) return { reachable: true, latencyMs: latency() };
    return { reachable: false, latencyMs: latency(), error: `HTTP ${status}` };
  } catch (err) {
    return { reachable: false, latencyMs: latency(), error: err instanceof LlmRequestError ? err.reason : 'unreachable' };
  }
}
