import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, restChat } from './gateway-client.js';

const TOKEN = 'gw-token-rest';

/** OpenClaw's `/v1/chat/completions` as observed: Bearer token, OpenAI request/response shapes, 401 body. */
let server: Server;
let baseUrl: string;
const seen: { headers: IncomingMessage['headers']; body: any }[] = [];

function handle(req: IncomingMessage, res: ServerResponse, raw: string) {
  const json = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return json(404, { error: { message: 'Not Found', type: 'not_found' } });
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return json(401, { error: { message: 'Unauthorized', type: 'unauthorized' } });
  const body = JSON.parse(raw);
  seen.push({ headers: req.headers, body });
  const last = body.messages.at(-1)?.content;
  if (last === 'slow') return; // never answers
  json(200, {
    id: 'chatcmpl_fake',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [{ index: 0, message: { role: 'assistant', content: `REST reply to ${last}` }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  });
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => handle(req, res, raw));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('restChat', () => {
  it('posts an OpenAI chat completion with the Bearer token and returns text and usage', async () => {
    const result = await restChat({
      baseUrl,
      token: TOKEN,
      user: 'platform-user-42',
      messages: [{ role: 'user', content: 'ping via REST' }],
    });
    expect(result).toEqual({ text: 'REST reply to ping via REST', usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
    const req = seen.at(-1)!;
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body).toEqual({
      model: 'openclaw/default',
      user: 'platform-user-42',
      messages: [{ role: 'user', content: 'ping via REST' }],
    });
    await restChat({ baseUrl, token: TOKEN, model: 'openclaw/ops', messages: [{ role: 'user', content: 'x' }] });
    expect(seen.at(-1)!.body).toEqual({ model: 'openclaw/ops', messages: [{ role: 'user', content: 'x' }] });
  });

  it('rejects a wrong token with the 401 error', async () => {
    const err = await restChat({ baseUrl, token: 'nope', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('HTTP_401');
    expect((err as GatewayError).message).toBe('Unauthorized');
    expect((err as GatewayError).details).toEqual({ status: 401, body: { error: { message: 'Unauthorized', type: 'unauthorized' } } });
    expect((err as GatewayError).retryable).toBe(false);
  });

  it('times out', async () => {
    const err = await restChat({ baseUrl, token: TOKEN, timeoutMs: 150, messages: [{ role: 'user', content: 'slow' }] }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('TIMEOUT');
  });
});
