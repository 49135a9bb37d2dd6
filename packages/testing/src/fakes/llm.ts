import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake LLM received. */
export interface FakeLlmRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  headers: IncomingMessage['headers'];
  /** The parsed JSON body, the raw text when it is not JSON, or undefined when empty. */
  body: unknown;
}

export interface FakeLlmOptions {
  /** The assistant text of every answer (default `FAKE-LLM reply`), or a function of the request body. */
  reply?: string | ((body: Record<string, unknown>) => string);
  /** Model ids listed by `GET /v1/models` (default `['fake-1']`). */
  models?: string[];
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401. */
  apiKey?: string;
  /** Every chat completion is answered with this HTTP status and an OpenAI-style error body (upstream failures). */
  failWith?: number;
  /** Milliseconds to wait before answering a chat completion (timeouts). */
  delayMs?: number;
}

export interface FakeLlm {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:40123/v1` (what OpenAI-compatible clients call `baseUrl`). */
  url: string;
  readonly requests: FakeLlmRequest[];
  /** The chat completion requests only. */
  chatRequests(): FakeLlmRequest[];
  close(): Promise<void>;
}

export const FAKE_LLM_REPLY = 'FAKE-LLM reply';

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The last text part across all user messages (OpenClaw sends its internal context as the final user message). */
export function lastUserText(body: Record<string, unknown>): string {
  const messages = Array.isArray(body.messages) ? (body.messages as Array<Record<string, unknown>>) : [];
  let last = '';
  for (const message of messages) {
    if (message?.role !== 'user') continue;
    const content = message.content;
    if (typeof content === 'string') last = content;
    else if (Array.isArray(content)) {
      for (const part of content as Array<Record<string, unknown>>)
        if (part?.type === 'text' && typeof part.text === 'string') last = part.text;
    }
  }
  return last;
}

/**
 * A local OpenAI-compatible LLM: `GET /v1/models` and `POST /v1/chat/completions`, answering with a fixed
 * (or computed) text, as standard SSE `chat.completion.chunk` frames when the request has `stream: true`
 * (with a usage frame when `stream_options.include_usage` is set), otherwise as one `chat.completion`.
 */
export async function startFakeLlm(options: FakeLlmOptions = {}): Promise<FakeLlm> {
  const requests: FakeLlmRequest[] = [];
  const models = options.models ?? ['fake-1'];
  const replyFor = (body: Record<string, unknown>) =>
    typeof options.reply === 'function' ? options.reply(body) : (options.reply ?? FAKE_LLM_REPLY);

  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
      if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`) {
        return sendJson(res, 401, {
          error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' },
        });
      }
      if (req.method === 'GET' && path === '/v1/models') {
        return sendJson(res, 200, { object: 'list', data: models.map((id) => ({ id, object: 'model', owned_by: 'fake' })) });
      }
      if (req.method !== 'POST' || path !== '/v1/chat/completions') {
        return sendJson(res, 404, { error: { message: `Unknown path ${path}`, type: 'invalid_request_error' } });
      }
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      if (options.failWith) {
        return sendJson(res, options.failWith, { error: { message: 'Upstream failure (fake)', type: 'server_error' } });
      }
      const json = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
      const text = replyFor(json);
      const id = `chatcmpl-fake${requests.length}`;
      const created = Math.floor(Date.now() / 1000);
      const model = typeof json.model === 'string' ? json.model : (models[0] ?? 'fake-1');
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
      if (json.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
        const frame = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
        const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
          frame({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] });
        chunk({ role: 'assistant', content: '' });
        for (const piece of text.match(/[\s\S]{1,12}/g) ?? []) chunk({ content: piece });
        chunk({}, 'stop');
        const streamOptions = json.stream_options as Record<string, unknown> | undefined;
        if (streamOptions?.include_usage) frame({ id, object: 'chat.completion.chunk', created, model, choices: [], usage });
        res.write('data: [DONE]\n\n');
        return res.end();
      }
      sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
        usage,
      });
    })().catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error), type: 'server_error' } });
      else res.end();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    chatRequests: () => requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions'),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
