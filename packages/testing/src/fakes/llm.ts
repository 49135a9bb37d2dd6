import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendJson } from '../fake-http.js';

/** One request the fake LLM received. */
export interface FakeLlmRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  headers: IncomingMessage['headers'];
  /**
   * The parsed JSON body, the raw text when it is not JSON, or undefined when empty. A multipart body
   * (`/audio/transcriptions`) is its fields by name, a file as `{ name, type, size, base64 }`.
   */
  body: unknown;
}

export interface FakeLlmOptions {
  /** The assistant text of every answer (default `FAKE-LLM reply`), or a function of the request body. */
  reply?: string | ((body: Record<string, unknown>) => string);
  /** Model ids listed by `GET /v1/models` (default `['fake-1']`). */
  models?: string[];
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401. */
  apiKey?: string;
  /** Every chat completion and audio call is answered with this HTTP status and an OpenAI-style error body (upstream failures). */
  failWith?: number;
  /** The transcript `POST /v1/audio/transcriptions` answers (default `FAKE-LLM transcript of <bytes> bytes`), or a function of the audio. */
  transcript?: string | ((audio: Buffer) => string);
  /** Milliseconds to wait before answering a chat completion (timeouts). */
  delayMs?: number;
  /** Milliseconds between the chunks of a streamed answer (a model that takes its time, to see chunks relayed as they come). */
  chunkDelayMs?: number;
  /**
   * A tool call to answer with instead of text (OpenAI's `tool_calls`, `finish_reason: "tool_calls"`), or null for a
   * text answer. Called for every chat completion; e.g. a call when the last message is the user's, text once the
   * tool's result (`role: "tool"`) is the last message.
   */
  toolCall?: (body: Record<string, unknown>) => FakeToolCall | null;
}

/** A function call the fake LLM asks for. */
export interface FakeToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export interface FakeLlm {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:40123/v1` (what OpenAI-compatible clients call `baseUrl`). */
  url: string;
  readonly requests: FakeLlmRequest[];
  /** The chat completion requests only. */
  chatRequests(): FakeLlmRequest[];
  /** The `POST /v1/audio/speech` and `POST /v1/audio/transcriptions` requests. */
  audioRequests(): FakeLlmRequest[];
  close(): Promise<void>;
}

export const FAKE_LLM_REPLY = 'FAKE-LLM reply';

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  if (/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) return readMultipart(req, raw);
  const text = raw.toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A file part of a multipart body as the fake records it. */
export interface FakeUploadedFile {
  name: string;
  type: string;
  size: number;
  base64: string;
}

/** A multipart body (parsed by the platform's own `Request.formData()`): text fields as strings, files as `FakeUploadedFile`. */
async function readMultipart(req: IncomingMessage, raw: Buffer): Promise<Record<string, string | FakeUploadedFile> | string> {
  try {
    const form = await new Request('http://fake.local/', {
      method: 'POST',
      headers: { 'content-type': req.headers['content-type'] ?? '' },
      body: raw,
    }).formData();
    const fields: Record<string, string | FakeUploadedFile> = {};
    for (const [name, value] of form.entries()) {
      if (typeof value === 'string') fields[name] = value;
      else {
        const bytes = Buffer.from(await value.arrayBuffer());
        fields[name] = { name: value.name, type: value.type, size: bytes.length, base64: bytes.toString('base64') };
      }
    }
    return fields;
  } catch {
    return raw.toString('latin1');
  }
}

/** The bytes the fake "speaks": a recognisable, deterministic stand-in for audio of `input` in `voice`. */
export const fakeSpeech = (input: string, voice: string, format: string) => Buffer.from(`FAKE-AUDIO ${format} ${voice}: ${input}`, 'utf8');

/** Content types of OpenAI's `response_format` values. */
const SPEECH_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

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
 * The audio API too: `POST /v1/audio/speech` (JSON `{ model, input, voice, response_format }` → the bytes of
 * `fakeSpeech`) and `POST /v1/audio/transcriptions` (multipart `file`, `model`, … → `{ text }`).
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
      if (req.method === 'POST' && (path === '/v1/audio/speech' || path === '/v1/audio/transcriptions')) {
        if (options.failWith) {
          return sendJson(res, options.failWith, { error: { message: 'Upstream failure (fake)', type: 'server_error' } });
        }
        return path === '/v1/audio/speech' ? speech(res, body) : transcription(res, body);
      }
      if (req.method !== 'POST' || path !== '/v1/chat/completions') {
        return sendJson(res, 404, { error: { message: `Unknown path ${path}`, type: 'invalid_request_error' } });
      }
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      if (options.failWith) {
        return sendJson(res, options.failWith, { error: { message: 'Upstream failure (fake)', type: 'server_error' } });
      }
      const json = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
      const call = options.toolCall?.(json) ?? null;
      const text = call ? '' : replyFor(json);
      const toolCalls = call
        ? [
            {
              id: `call_fake${requests.length}`,
              type: 'function',
              function: { name: call.name, arguments: JSON.stringify(call.arguments) },
            },
          ]
        : null;
      const finish = toolCalls ? 'tool_calls' : 'stop';
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
        for (const piece of text.match(/[\s\S]{1,12}/g) ?? []) {
          chunk({ content: piece });
          if (options.chunkDelayMs) await new Promise((resolve) => setTimeout(resolve, options.chunkDelayMs));
        }
        if (toolCalls) chunk({ tool_calls: toolCalls.map((toolCall, index) => ({ index, ...toolCall })) });
        chunk({}, finish);
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
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: toolCalls ? null : text, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
            finish_reason: finish,
          },
        ],
        usage,
      });
    })().catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error), type: 'server_error' } });
      else res.end();
    });
  });

  /** OpenAI's speech endpoint: `model`, `input` and `voice` are required; the answer is raw audio bytes. */
  function speech(res: ServerResponse, body: unknown): void {
    const json = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    const { model, input, voice } = json;
    const format = typeof json.response_format === 'string' ? json.response_format : 'mp3';
    if (typeof model !== 'string' || typeof input !== 'string' || !input || typeof voice !== 'string' || !SPEECH_TYPES[format]) {
      const message = 'model, input, voice and a known response_format are required';
      sendJson(res, 400, { error: { message, type: 'invalid_request_error' } });
      return;
    }
    const audio = fakeSpeech(input, voice, format);
    res.writeHead(200, { 'content-type': SPEECH_TYPES[format], 'content-length': audio.length });
    res.end(audio);
  }

  /** OpenAI's transcription endpoint: multipart with a `file` and a `model`; answers `{ text }` (response_format json). */
  function transcription(res: ServerResponse, body: unknown): void {
    const fields = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    const file = fields.file as FakeUploadedFile | undefined;
    if (typeof fields.model !== 'string' || !file || typeof file !== 'object' || file.size === 0) {
      sendJson(res, 400, { error: { message: 'file and model are required', type: 'invalid_request_error' } });
      return;
    }
    const audio = Buffer.from(file.base64, 'base64');
    const text =
      typeof options.transcript === 'function'
        ? options.transcript(audio)
        : (options.transcript ?? `FAKE-LLM transcript of ${audio.length} bytes`);
    sendJson(res, 200, { text });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    chatRequests: () => requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions'),
    audioRequests: () => requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/audio/')),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
