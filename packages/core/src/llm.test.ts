import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeLlm, startFakeLlm, unreachableUrl } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmRequestError, chatCompletion, probeLlm } from './llm.js';
import { estimateTokens, llmCostUsd, priceOf } from './llm-prices.js';

const KEY = 'sk-test-llm-client-0123';

/** An upstream answering every request with a fixed status, content type and body. */
async function rawUpstream(status: number, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const server: Server = createServer((_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const ask = (baseUrl: string, apiKey = KEY, timeoutMs = 2000) =>
  chatCompletion({ baseUrl, apiKey, timeoutMs }, { model: 'm', messages: [{ role: 'user', content: 'hi' }], maxTokens: 16 });

async function failure(promise: Promise<unknown>): Promise<LlmRequestError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LlmRequestError);
  return err as LlmRequestError;
}

describe('OpenAI-compatible client', () => {
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm({ apiKey: KEY, reply: 'pong' });
  });
  afterAll(() => llm.close());

  it('sends one non-streaming completion with the Bearer key and reads text, ids and usage', async () => {
    const answer = await ask(`${llm.url}/`);
    expect(answer).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      model: 'm',
      content: 'pong',
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      costUsd: undefined,
    });
    const sent = llm.chatRequests().at(-1)!;
    expect(sent.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(sent.body).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16, stream: false });
  });

  it('joins text parts of array content and reads an upstream-reported cost', async () => {
    const upstream = await rawUpstream(
      200,
      JSON.stringify({
        choices: [{ message: { content: [{ type: 'text', text: 'a' }, { type: 'image_url' }, { type: 'text', text: 'b' }] } }],
        usage: { prompt_tokens: 3, completion_tokens: 2, cost: 0.0001 },
      }),
    );
    try {
      const answer = await ask(upstream.url);
      expect(answer.content).toBe('ab');
      expect(answer.usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
      expect(answer.costUsd).toBe(0.0001);
      expect(answer.id).toBeUndefined();
    } finally {
      await upstream.close();
    }
  });

  it.each([
    ['a refused key', async () => ({ url: llm.url, key: 'wrong', close: async () => {} }), 'HTTP 401'],
    ['an upstream error', async () => ({ ...(await rawUpstream(503, '{}')), key: KEY }), 'HTTP 503'],
    [
      'a body that is not JSON',
      async () => ({ ...(await rawUpstream(200, '<html>', { 'content-type': 'text/html' })), key: KEY }),
      'response was not JSON (HTTP 200)',
    ],
    ['an answer without a message', async () => ({ ...(await rawUpstream(200, '{"choices":[]}')), key: KEY }), 'response had no message'],
    [
      'a redirect (never followed with the key)',
      async () => ({ ...(await rawUpstream(307, '', { location: 'http://example.com/' })), key: KEY }),
      'HTTP 307',
    ],
  ])('throws a key-free LlmRequestError on %s', async (_name, make, reason) => {
    const upstream = await make();
    try {
      const err = await failure(ask(upstream.url, upstream.key));
      expect(err.reason).toBe(reason);
      expect(err.message).not.toContain(upstream.key);
    } finally {
      await upstream.close();
    }
  });

  it('reports an unreachable upstream and a timeout', async () => {
    expect((await failure(ask(await unreachableUrl()))).reason).toBe('unreachable (ECONNREFUSED)');
    const slow = await startFakeLlm({ delayMs: 1000 });
    try {
      expect((await failure(ask(slow.url, KEY, 100))).reason).toBe('timed out after 100 ms');
    } finally {
      await slow.close();
    }
  });

  it('probes GET {base}/models: reachable only on a 2xx with the key', async () => {
    expect(await probeLlm({ baseUrl: llm.url, apiKey: KEY, timeoutMs: 1000 })).toMatchObject({ reachable: true });
    expect(await probeLlm({ baseUrl: llm.url, apiKey: 'wrong', timeoutMs: 1000 })).toMatchObject({ reachable: false, error: 'HTTP 401' });
    const down = await probeLlm({ baseUrl: await unreachableUrl(), apiKey: KEY, timeoutMs: 1000 });
    expect(down).toMatchObject({ reachable: false, error: 'unreachable (ECONNREFUSED)' });
    expect(llm.requests.some((r) => r.path === '/v1/models' && r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
  });
});

describe('price table', () => {
  it('prices per million tokens, rounded to 6 decimals; unknown models have no price', () => {
    expect(llmCostUsd('gpt-4o', 1_000_000, 1_000_000)).toBe(12.5);
    expect(llmCostUsd('claude-haiku-4-5', 10, 5)).toBe(0.000035);
    expect(llmCostUsd('gpt-4o-mini', 1, 1)).toBe(0.000001);
    expect(llmCostUsd('no-such-model', 10, 10)).toBeUndefined();
    expect(priceOf('toString')).toBeUndefined();
    expect(estimateTokens('abcdefgh')).toBe(2);
    expect(estimateTokens('abcdefghi')).toBe(3);
  });
});
