import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { type FakeLlm, type TestResponse, fakeSpeech, lastUserText, request, startFakeLlm } from '@aop/testing';
import { sql } from '@aop/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { GATEWAY_LIMIT_PER_MINUTE } from '../../apps/web/src/modules/plugin-gateway/plugin-gateway.routes.js';
import { parseDemoModels, DEFAULT_DEMO_MODELS } from '../../apps/web/src/modules/demo/demo.config.js';
import { ownerTagFor } from '../../apps/web/src/platform/clients/user-gateway.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

// Spec §2.5 (plugins agent, generate-text, tts, stt), §4.4 POST /api/v1/gateway (routing, success shape, headers,
// errors), §8 (gateway 100/min), §9 (the versioned path). Every plugin calls a real upstream on 127.0.0.1: an
// OpenAI-compatible LLM and speech API, and an OpenClaw-protocol gateway (token from the real backend). Payment is the
// default card method; MPP and payment sessions are covered by the payments tests.

const LLM_KEY = 'sk-llm-platform-key-for-gateway-tests';
const PLATFORM_TOKEN = 'platform-gateway-token-for-plugin-tests';
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-plugin-tests', HMAC_SECRET: 'hmac-secret-for-plugin-tests', TRUST_PROXY: '127.0.0.1' };
const FAIL = 'this agent turn fails';
const DEFAULT_MODEL = parseDemoModels(DEFAULT_DEMO_MODELS)[0]!.id;
const PATH = '/api/v1/gateway';

let lastIp = 0;
const nextIp = () => `198.18.9.${(++lastIp % 250) + 1}`;

interface CallOptions {
  json?: unknown;
  body?: string;
  headers?: Record<string, string>;
  cookie?: string;
  ip?: string;
}

function call(web: TestWeb, opts: CallOptions = {}): Promise<TestResponse> {
  const headers = { 'x-forwarded-for': opts.ip ?? nextIp(), ...(opts.cookie ? { cookie: opts.cookie } : {}), ...opts.headers };
  if (opts.body !== undefined) {
    return request(`${web.url}${PATH}`, { method: 'POST', body: opts.body, headers: { 'content-type': 'application/json', ...headers } });
  }
  return request(`${web.url}${PATH}`, { json: opts.json ?? {}, headers });
}

/** Server-sent events of a whole answer: `{ event, data }` per event, `data` parsed as JSON. */
function sseEvents(text: string): { event: string; data: any }[] {
  return text
    .split(/\n\n+/)
    .filter((block) => block.trim() !== '')
    .map((block) => {
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      return { event, data: JSON.parse(data.join('\n')) };
    });
}

/** A WAV file's signature and a few samples: what `stt` is sent. */
const wav = () => {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + 16, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(16, 40);
  return Buffer.concat([header, Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])]);
};

describe('plugin gateway POST /api/v1/gateway', () => {
  let llm: FakeLlm;
  let brokenLlm: FakeLlm;
  let gateway: FakeGatewayWs;
  let backend: TestBackend;
  /** LLM, speech API and the shared platform gateway configured. */
  let web: TestWeb;
  /** Its LLM and speech API answer 500. */
  let brokenWeb: TestWeb;
  /** Nothing configured: no LLM, no speech API, no shared gateway. */
  let bareWeb: TestWeb;
  /** An LLM that streams two chunks and then drops the connection. */
  let droppingLlm: Server;
  let droppingWeb: TestWeb;
  let alice: { userId: string; cookie: string };

  const usageRows = (w: TestWeb, userId: string) =>
    w.database.db.kysely.selectFrom('usage_events').selectAll().where('user_id', '=', userId).execute();
  const gatewayChats = () => gateway.httpReceived.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions');

  beforeAll(async () => {
    [llm, brokenLlm, gateway] = await Promise.all([
      startFakeLlm({
        apiKey: LLM_KEY,
        reply: (body) => `echo: ${lastUserText(body)}`,
        transcript: (audio) => `heard ${audio.length} bytes`,
      }),
      startFakeLlm({ apiKey: LLM_KEY, failWith: 500 }),
      startFakeGatewayWs({ token: PLATFORM_TOKEN, reply: (m) => `agent says: ${m}`, failChatMessage: FAIL }),
    ]);
    backend = await startBackend({ ...SHARED, PLATFORM_GATEWAY_TOKEN: PLATFORM_TOKEN });
    const common = { ...SHARED, BACKEND_API_URL: backend.url, GATEWAY_CHAT_TIMEOUT_MS: '5000', PLUGIN_TIMEOUT_MS: '5000' };
    [web, brokenWeb, bareWeb] = await Promise.all([
      startWeb({ ...common, GATEWAY_URL: gateway.httpUrl, LLM_BASE_URL: llm.url, LLM_API_KEY: LLM_KEY }),
      startWeb({ ...common, GATEWAY_URL: gateway.httpUrl, LLM_BASE_URL: brokenLlm.url, LLM_API_KEY: LLM_KEY }),
      startWeb({ ...common }),
    ]);
    alice = await web.signIn();
    droppingLlm = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const content of ['partial ', 'answer ']) {
          res.write(
            `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] })}\n\n`,
          );
        }
        setTimeout(() => res.destroy(), 50);
      });
    });
    await new Promise<void>((r) => droppingLlm.listen(0, '127.0.0.1', r));
    const droppingUrl = `http://127.0.0.1:${(droppingLlm.address() as AddressInfo).port}/v1`;
    droppingWeb = await startWeb({ ...common, LLM_BASE_URL: droppingUrl, LLM_API_KEY: LLM_KEY });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([web?.close(), brokenWeb?.close(), bareWeb?.close(), droppingWeb?.close()]);
    droppingLlm?.closeAllConnections();
    await new Promise((r) => droppingLlm?.close(r));
    await backend?.close();
    await Promise.all([llm?.close(), brokenLlm?.close(), gateway?.close()]);
  });

  describe('routing', () => {
    it('runs agent by default and answers { plugin, message, timestamp, payment } with x-plugin-id', async () => {
      const before = gatewayChats().length;
      const res = await call(web, { cookie: alice.cookie, json: { message: 'plan my week' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-plugin-id')).toBe('agent');
      expect(res.body).toMatchObject({
        plugin: 'agent',
        message: 'agent says: plan my week',
        sessionKey: 'main',
        payment: { method: 'card', receipt: null },
      });
      expect(new Date(res.body.timestamp).toISOString()).toBe(res.body.timestamp);
      // Card payment carries no receipt headers (spec §4.4: MPP and session only).
      expect(res.headers.get('payment-receipt')).toBeNull();
      expect(res.headers.get('x-session-remaining')).toBeNull();
      // The turn really reached the gateway: Bearer token from the backend, the caller's owner-tagged conversation.
      const sent = gatewayChats().slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatchObject({
        authorization: `Bearer ${PLATFORM_TOKEN}`,
        body: {
          model: 'openclaw/default',
          user: `${ownerTagFor(alice.userId)}:main`,
          messages: [{ role: 'user', content: 'plan my week' }],
        },
      });
    });

    it('takes the body plugin over the default and X-Plugin-Id over the body', async () => {
      const byBody = await call(web, { cookie: alice.cookie, json: { plugin: 'generate-text', prompt: 'from the body' } });
      expect(byBody.status).toBe(200);
      expect(byBody.body).toMatchObject({ plugin: 'generate-text', message: 'echo: from the body' });
      expect(byBody.headers.get('x-plugin-id')).toBe('generate-text');

      const byHeader = await call(web, {
        cookie: alice.cookie,
        headers: { 'x-plugin-id': 'generate-text' },
        json: { plugin: 'tts', prompt: 'header wins' },
      });
      expect(byHeader.status).toBe(200);
      expect(byHeader.body).toMatchObject({ plugin: 'generate-text', message: 'echo: header wins' });
      // `plugin` is routing, not a field forwarded to the plugin.
      expect(llm.chatRequests().at(-1)?.body).not.toHaveProperty('plugin');
    });

    it('answers 502 no_plugin for an id nothing is registered under, before any payment or upstream call', async () => {
      const rows = (await usageRows(web, alice.userId)).length;
      const calls = llm.requests.length + gateway.httpReceived.length;
      for (const opts of [
        { headers: { 'x-plugin-id': 'image' }, json: { prompt: 'x' } },
        { json: { plugin: 'nope', message: 'x' } },
        { headers: { 'x-plugin-id': 'nope' }, json: { plugin: 'agent', message: 'x' } },
      ]) {
        const res = await call(web, { cookie: alice.cookie, ...opts });
        expect(res.status).toBe(502);
        expect(res.body).toEqual({ error: 'no_plugin' });
        expect(res.headers.get('x-plugin-id')).toBeNull();
      }
      expect(llm.requests.length + gateway.httpReceived.length).toBe(calls);
      expect(await usageRows(web, alice.userId)).toHaveLength(rows);
    });

    it('needs no account for unprotected plugins: anonymous calls run, the agent on the shared gateway, statelessly', async () => {
      const before = gatewayChats().length;
      const res = await call(web, { json: { message: 'who am I?' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ plugin: 'agent', message: 'agent says: who am I?', payment: { method: 'card', receipt: null } });
      expect(res.body).not.toHaveProperty('sessionKey');
      const sent = gatewayChats().slice(before);
      expect(sent).toHaveLength(1);
      // No OpenAI `user`: the turn runs in a session of its own, nobody else's conversation and nobody's to resume.
      expect(sent[0]?.authorization).toBe(`Bearer ${PLATFORM_TOKEN}`);
      expect(sent[0]?.body).not.toHaveProperty('user');
      // An anonymous conversation could not be kept private, so it cannot be named.
      const named = await call(web, { json: { message: 'hi', sessionKey: 'main' } });
      expect(named.status).toBe(400);
      expect(named.body).toEqual({ error: 'sessionKey needs a signed-in caller (session cookie or API key)' });

      const text = await call(web, { json: { plugin: 'generate-text', prompt: 'anonymous' } });
      expect(text.status).toBe(200);
      expect(text.body).toMatchObject({ plugin: 'generate-text', message: 'echo: anonymous' });
    });

    it('identifies an API-key caller (Authorization: Bearer sk_…) as that user: their conversation, their ledger', async () => {
      const erin = await web.signIn();
      const created = await request(`${web.url}/api/keys`, { json: { name: 'gateway' }, headers: { cookie: erin.cookie } });
      expect(created.status).toBe(201);
      const before = gatewayChats().length;
      const res = await call(web, {
        headers: { authorization: `Bearer ${created.body.key}` },
        json: { message: 'by key', sessionKey: 'ops' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ plugin: 'agent', sessionKey: 'ops' });
      expect(gatewayChats().slice(before)[0]?.body).toMatchObject({ user: `${ownerTagFor(erin.userId)}:ops` });
      expect(await usageRows(web, erin.userId)).toHaveLength(1);
    });

    it('is the only versioned path: /api/gateway answers 404', async () => {
      const res = await request(`${web.url}/api/gateway`, { json: { message: 'x' }, headers: { 'x-forwarded-for': nextIp() } });
      expect(res.status).toBe(404);
    });
  });

  describe('bad bodies', () => {
    it('400 for a body that is not a JSON object', async () => {
      for (const body of ['not json', '[1,2]', '"text"', '42', 'null', '']) {
        const res = await call(web, { cookie: alice.cookie, body });
        expect(res.status, body).toBe(400);
        expect(res.body).toEqual({ error: 'Body must be a JSON object' });
      }
      const plain = await request(`${web.url}${PATH}`, {
        body: 'message=hi',
        headers: { 'content-type': 'text/plain', 'x-forwarded-for': nextIp(), cookie: alice.cookie },
      });
      expect(plain.status).toBe(400);
      const badPlugin = await call(web, { cookie: alice.cookie, json: { plugin: 5, message: 'x' } });
      expect(badPlugin.status).toBe(400);
      expect(badPlugin.body).toEqual({ error: 'plugin must be a string' });
    });

    it('400 with the plugin’s own words for missing or wrong fields, and nothing is charged or sent upstream', async () => {
      const rows = (await usageRows(web, alice.userId)).length;
      const calls = llm.requests.length + gateway.httpReceived.length;
      const cases: [Record<string, unknown>, string][] = [
        [{}, 'Message required'],
        [{ message: 42 }, 'Message required'],
        [{ message: 'hi', sessionKey: 'a:b' }, 'Invalid sessionKey: letters, digits, dot, dash and underscore, at most 100 characters'],
        [{ plugin: 'generate-text' }, 'prompt or messages required'],
        [{ plugin: 'generate-text', prompt: 'a', messages: [{ role: 'user', content: 'b' }] }, 'Send prompt or messages, not both'],
        [{ plugin: 'generate-text', prompt: 7 }, 'prompt must be a non-empty string'],
        [{ plugin: 'generate-text', messages: [{ role: 'tool', content: 'b' }] }, 'Each message needs role system, user or assistant'],
        [{ plugin: 'generate-text', messages: [{ role: 'user', content: '' }] }, 'Each message needs a non-empty string content'],
        [{ plugin: 'generate-text', messages: 'hi' }, 'messages must be a list of 1 to 100 { role, content } entries'],
        [{ plugin: 'generate-text', prompt: 'a', model: 'openai/o1-pro' }, 'Unsupported model: choose one listed by GET /api/demo/chat'],
        [{ plugin: 'generate-text', prompt: 'a', maxTokens: 0 }, 'maxTokens must be an integer from 1 to 4096'],
        [{ plugin: 'generate-text', prompt: 'a', temperature: 'hot' }, 'temperature must be a number from 0 to 2'],
        [{ plugin: 'tts' }, 'text required'],
        [{ plugin: 'tts', text: 'x'.repeat(4097) }, 'text too long (max 4096 characters)'],
        [{ plugin: 'tts', text: 'hi', format: 'mid' }, 'format must be one of mp3, opus, aac, flac, wav, pcm'],
        [{ plugin: 'tts', text: 'hi', voice: '../etc' }, 'voice must be a voice name'],
        [{ plugin: 'stt' }, 'audio required (base64)'],
        [{ plugin: 'stt', audio: 'not base64!' }, 'audio must be base64-encoded'],
        [
          { plugin: 'stt', audio: Buffer.from('plain bytes').toString('base64') },
          'Unrecognised audio: send format (one of flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm)',
        ],
        [{ plugin: 'stt', audio: wav().toString('base64'), language: 'English' }, 'language must be an ISO 639-1 code such as en'],
      ];
      for (const [json, error] of cases) {
        const res = await call(web, { cookie: alice.cookie, json });
        expect(res.status, JSON.stringify(json).slice(0, 80)).toBe(400);
        expect(res.body).toEqual({ error });
      }
      expect(llm.requests.length + gateway.httpReceived.length).toBe(calls);
      expect(await usageRows(web, alice.userId)).toHaveLength(rows);
    });

    it('503 plugin_unavailable when the plugin’s upstream is not configured, before any payment', async () => {
      const bob = await bareWeb.signIn();
      for (const [json, plugin] of [
        [{ plugin: 'generate-text', prompt: 'hi' }, 'generate-text'],
        [{ plugin: 'tts', text: 'hi' }, 'tts'],
        [{ plugin: 'stt', audio: wav().toString('base64') }, 'stt'],
      ] as const) {
        const res = await call(bareWeb, { cookie: bob.cookie, json });
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ error: 'plugin_unavailable', plugin, message: expect.any(String) });
      }
      // A caller without an account has no agent of their own; with no shared gateway there is nobody to ask.
      const anonymous = await call(bareWeb, { json: { message: 'hi' } });
      expect(anonymous.status).toBe(503);
      expect(anonymous.body).toMatchObject({ error: 'plugin_unavailable', plugin: 'agent' });
      // A signed-in caller without an agent and no shared gateway: the agent routes' answer, the charge given back.
      const noAgent = await call(bareWeb, { cookie: bob.cookie, json: { message: 'hi' } });
      expect(noAgent.status).toBe(404);
      expect(noAgent.body).toEqual({ error: 'No agent found' });
      expect(await usageRows(bareWeb, bob.userId)).toHaveLength(0);
    });
  });

  describe('plugins call their upstream', () => {
    it('generate-text: the platform LLM with the first demo model, 1024 tokens, the platform key', async () => {
      const res = await call(web, { cookie: alice.cookie, json: { plugin: 'generate-text', prompt: 'write a haiku' } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        plugin: 'generate-text',
        message: 'echo: write a haiku',
        model: DEFAULT_MODEL,
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        timestamp: expect.any(String),
        payment: { method: 'card', receipt: null },
      });
      const sent = llm.chatRequests().at(-1)!;
      expect(sent.headers.authorization).toBe(`Bearer ${LLM_KEY}`);
      expect(sent.body).toEqual({
        model: DEFAULT_MODEL,
        messages: [{ role: 'user', content: 'write a haiku' }],
        max_tokens: 1024,
        stream: false,
      });
    });

    it('generate-text: messages, a listed model, maxTokens and temperature are forwarded', async () => {
      const model = parseDemoModels(DEFAULT_DEMO_MODELS)[2]!.id;
      const messages = [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'second' },
      ];
      const res = await call(web, {
        cookie: alice.cookie,
        json: { plugin: 'generate-text', messages, model, maxTokens: 200, temperature: 0.2 },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ message: 'echo: second', model });
      expect(llm.chatRequests().at(-1)!.body).toEqual({ model, messages, max_tokens: 200, temperature: 0.2, stream: false });
    });

    it('tts: POST /audio/speech (model, input, voice, format) → base64 audio and its contentType', async () => {
      const res = await call(web, { cookie: alice.cookie, json: { plugin: 'tts', text: 'Hello there' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        plugin: 'tts',
        contentType: 'audio/mpeg',
        format: 'mp3',
        voice: 'alloy',
        model: 'gpt-4o-mini-tts',
        payment: { method: 'card', receipt: null },
      });
      expect(Buffer.from(res.body.message, 'base64')).toEqual(fakeSpeech('Hello there', 'alloy', 'mp3'));
      const sent = llm.audioRequests().at(-1)!;
      expect(sent.path).toBe('/v1/audio/speech');
      expect(sent.headers.authorization).toBe(`Bearer ${LLM_KEY}`);
      expect(sent.body).toEqual({ model: 'gpt-4o-mini-tts', input: 'Hello there', voice: 'alloy', response_format: 'mp3' });

      const wavVoice = await call(web, {
        cookie: alice.cookie,
        headers: { accept: 'text/event-stream' },
        json: { plugin: 'tts', text: 'Again', voice: 'nova', format: 'wav' },
      });
      // tts never streams: Accept is ignored.
      expect(wavVoice.status).toBe(200);
      expect(wavVoice.headers.get('content-type')).toMatch(/^application\/json/);
      expect(wavVoice.body).toMatchObject({ contentType: 'audio/wav', format: 'wav', voice: 'nova' });
      expect(Buffer.from(wavVoice.body.message, 'base64')).toEqual(fakeSpeech('Again', 'nova', 'wav'));
    });

    it('stt: POST /audio/transcriptions (multipart file, model, language) → the transcript', async () => {
      const audio = wav();
      const res = await call(web, {
        cookie: alice.cookie,
        headers: { accept: 'text/event-stream' },
        json: { plugin: 'stt', audio: audio.toString('base64'), language: 'en' },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ plugin: 'stt', message: `heard ${audio.length} bytes`, model: 'whisper-1' });
      const sent = llm.audioRequests().at(-1)!;
      expect(sent.path).toBe('/v1/audio/transcriptions');
      expect(sent.headers.authorization).toBe(`Bearer ${LLM_KEY}`);
      expect(sent.body).toEqual({
        file: { name: 'audio.wav', type: 'audio/wav', size: audio.length, base64: audio.toString('base64') },
        model: 'whisper-1',
        response_format: 'json',
        language: 'en',
      });

      // A data URL names its type; `format` names it outright.
      const mp3 = Buffer.from('ID3 not really an mp3 but signed like one');
      const dataUrl = await call(web, {
        cookie: alice.cookie,
        json: { plugin: 'stt', audio: `data:audio/ogg;base64,${mp3.toString('base64')}` },
      });
      expect(dataUrl.status).toBe(200);
      expect((llm.audioRequests().at(-1)!.body as any).file).toMatchObject({ name: 'audio.ogg', type: 'audio/ogg', size: mp3.length });
      const named = await call(web, { cookie: alice.cookie, json: { plugin: 'stt', audio: mp3.toString('base64'), format: 'webm' } });
      expect(named.status).toBe(200);
      expect((llm.audioRequests().at(-1)!.body as any).file).toMatchObject({ name: 'audio.webm', type: 'audio/webm' });
    });
  });

  describe('streaming (Accept: text/event-stream)', () => {
    it('agent streams delta events from the gateway, then the success object with payment', async () => {
      const before = gatewayChats().length;
      const res = await call(web, {
        cookie: alice.cookie,
        headers: { accept: 'text/event-stream' },
        json: { message: 'stream me a long answer please' },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(res.headers.get('x-plugin-id')).toBe('agent');
      const events = sseEvents(res.text);
      const deltas = events.filter((e) => e.event === 'message');
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.map((e) => e.data.delta).join('')).toBe('agent says: stream me a long answer please');
      const done = events.at(-1)!;
      expect(done.event).toBe('done');
      expect(done.data).toMatchObject({
        plugin: 'agent',
        message: 'agent says: stream me a long answer please',
        sessionKey: 'main',
        payment: { method: 'card', receipt: null },
      });
      expect(typeof done.data.timestamp).toBe('string');
      const sent = gatewayChats().slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]?.body).toMatchObject({ stream: true, user: `${ownerTagFor(alice.userId)}:main` });
    });

    it('generate-text streams the LLM’s chunks (usage requested), then the success object', async () => {
      const res = await call(web, {
        cookie: alice.cookie,
        headers: { accept: 'text/event-stream' },
        json: { plugin: 'generate-text', prompt: 'count slowly from one to ten' },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(res.headers.get('x-plugin-id')).toBe('generate-text');
      const events = sseEvents(res.text);
      const deltas = events.filter((e) => e.event === 'message').map((e) => e.data.delta);
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.join('')).toBe('echo: count slowly from one to ten');
      expect(events.at(-1)).toEqual({
        event: 'done',
        data: {
          plugin: 'generate-text',
          message: 'echo: count slowly from one to ten',
          model: DEFAULT_MODEL,
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
          timestamp: expect.any(String),
          payment: { method: 'card', receipt: null },
        },
      });
      expect(llm.chatRequests().at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true }, max_tokens: 1024 });
    });
  });

  describe('upstream failures release the charge', () => {
    it('generate-text, tts and stt: 502 plugin_failed and no usage left behind', async () => {
      const carol = await brokenWeb.signIn();
      const cases = [
        [{ plugin: 'generate-text', prompt: 'hi' }, 'generate-text', 'The LLM provider answered HTTP 500'],
        [{ plugin: 'tts', text: 'hi' }, 'tts', 'The speech provider answered HTTP 500'],
        [{ plugin: 'stt', audio: wav().toString('base64') }, 'stt', 'The speech provider answered HTTP 500'],
      ] as const;
      for (const [json, plugin, message] of cases) {
        const res = await call(brokenWeb, { cookie: carol.cookie, json });
        expect(res.status).toBe(502);
        expect(res.body).toEqual({ error: 'plugin_failed', plugin, message });
        expect(res.headers.get('x-plugin-id')).toBeNull();
      }
      // The upstream was really asked (and failed).
      expect(brokenLlm.requests.map((r) => r.path)).toEqual(
        expect.arrayContaining(['/v1/chat/completions', '/v1/audio/speech', '/v1/audio/transcriptions']),
      );
      // A streaming call that fails before its first piece is an ordinary 502, not a broken stream.
      const streamed = await call(brokenWeb, {
        cookie: carol.cookie,
        headers: { accept: 'text/event-stream' },
        json: { plugin: 'generate-text', prompt: 'hi' },
      });
      expect(streamed.status).toBe(502);
      expect(streamed.body).toEqual({ error: 'plugin_failed', plugin: 'generate-text', message: 'The LLM provider answered HTTP 500' });
      expect(await usageRows(brokenWeb, carol.userId)).toHaveLength(0);
    });

    it('a stream that breaks after it started ends with an error event, and the charge is released', async () => {
      const frank = await droppingWeb.signIn();
      const res = await call(droppingWeb, {
        cookie: frank.cookie,
        headers: { accept: 'text/event-stream' },
        json: { plugin: 'generate-text', prompt: 'hi' },
      });
      expect(res.status).toBe(200);
      const events = sseEvents(res.text);
      expect(events.filter((e) => e.event === 'message').map((e) => e.data.delta)).toEqual(['partial ', 'answer ']);
      expect(events.at(-1)).toEqual({
        event: 'error',
        data: { error: 'plugin_failed', plugin: 'generate-text', message: 'The LLM provider did not answer', status: 502 },
      });
      expect(events.some((e) => e.event === 'done')).toBe(false);
      expect(await usageRows(droppingWeb, frank.userId)).toHaveLength(0);
    });

    it('agent: a failed turn is 502 plugin_failed and no usage is left behind', async () => {
      const dave = await web.signIn();
      const res = await call(web, { cookie: dave.cookie, json: { message: FAIL } });
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ error: 'plugin_failed', plugin: 'agent', message: 'The agent gateway failed' });
      const streamed = await call(web, { cookie: dave.cookie, headers: { accept: 'text/event-stream' }, json: { message: FAIL } });
      expect(streamed.status).toBe(502);
      expect(await usageRows(web, dave.userId)).toHaveLength(0);

      // The same caller's successful call is charged: the empty ledger above is the release, not a free gateway.
      const ok = await call(web, { cookie: dave.cookie, json: { message: 'fine now' } });
      expect(ok.status).toBe(200);
      expect((await usageRows(web, dave.userId)).length).toBeGreaterThan(0);
    });
  });

  it('500 internal when the server itself fails (here: the ledger the card charge writes to is gone)', async () => {
    const broken = await startWeb({ ...SHARED, LLM_BASE_URL: llm.url, LLM_API_KEY: LLM_KEY });
    try {
      const grace = await broken.signIn();
      await sql`drop table usage_events cascade`.execute(broken.database.db.kysely);
      const calls = llm.requests.length;
      const res = await call(broken, { cookie: grace.cookie, json: { plugin: 'generate-text', prompt: 'hi' } });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'internal' });
      expect(llm.requests.length).toBe(calls);
    } finally {
      await broken.close();
    }
  });

  it(`limits each client to ${GATEWAY_LIMIT_PER_MINUTE} requests a minute (429 with RateLimit headers)`, async () => {
    const ip = nextIp();
    for (let i = 0; i < GATEWAY_LIMIT_PER_MINUTE; i++) {
      const res = await call(web, { ip, json: { plugin: 'none' } });
      expect(res.status).toBe(502);
      if (i === 0) expect(res.headers.get('ratelimit-limit')).toBe(String(GATEWAY_LIMIT_PER_MINUTE));
    }
    const limited = await call(web, { ip, json: { plugin: 'none' } });
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: 'Too many requests' });
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect(limited.headers.get('x-ratelimit-limit')).toBeNull();
    // Another client is unaffected.
    expect((await call(web, { json: { plugin: 'none' } })).status).toBe(502);
  });
});
