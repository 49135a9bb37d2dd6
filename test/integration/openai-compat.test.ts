import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalAgentHost } from '@aop/provisioner';
import { type FakeLlm, lastUserText, request, startFakeLlm } from '@aop/testing';
import OpenAI, { APIError, AuthenticationError, BadRequestError, InternalServerError, NotFoundError, RateLimitError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { ownerTagFor } from '../../apps/web/src/platform/clients/user-gateway.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

// Issue #22 "OpenAI-compatible endpoint": the official `openai` client (6.x; 7.x wants Node ≥ 22, the platform runs on
// Node 20) calls POST /v1/chat/completions and GET /v1/models on the web service with a user API key. Behind it: the
// backend, the local host running the stand-in OpenClaw (real processes, gateway protocol, answering REST turns with
// the agent's model) and the local fake model, whose answers are streamed a chunk every CHUNK_MS, so a relay that
// buffered would be seen.

const SHARED = { INTERNAL_API_KEY: 'internal-key-for-openai-tests', HMAC_SECRET: 'hmac-secret-for-openai-tests', TRUST_PROXY: '127.0.0.1' };
const CHAT_TIMEOUT_MS = 1_500;
const CHUNK_MS = 30;
const say = (text: string) => `FAKE-LLM says: ${text}`;

let lastIp = 0;
const nextIp = () => `198.18.22.${(++lastIp % 250) + 1}`;

interface Owner {
  cookie: string;
  userId: string;
  agentId: string;
  key: string;
}

/** A refusal the promise must end in. */
const refusal = (promise: Promise<unknown>): Promise<APIError> =>
  promise.then(
    () => {
      throw new Error('expected the call to be refused');
    },
    (err: unknown) => err as APIError,
  );

/** A local HTTP server standing where the agent's gateway was: `handle` decides what a chat turn gets. */
async function standIn(handle: (res: ServerResponse) => void): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handle(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}
const closeServer = (server: Server) =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  });

describe('the OpenAI-compatible endpoint, called with the official openai client', () => {
  let work: string;
  let llm: FakeLlm;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let alice: Owner;
  let bob: Owner;

  const db = () => web.database.db.kysely;
  const client = (apiKey: string, ip = nextIp()) =>
    new OpenAI({ apiKey, baseURL: `${web.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-forwarded-for': ip } });
  const raw = (path: string, opts: { json?: unknown; body?: string; headers?: Record<string, string>; method?: string } = {}) =>
    request(`${web.url}${path}`, { ...opts, headers: { 'x-forwarded-for': nextIp(), ...opts.headers } });
  const usageRows = (userId: string) =>
    db().selectFrom('usage_events').selectAll().where('user_id', '=', userId).orderBy('created_at').execute();
  const sessions = async (agentId: string): Promise<Record<string, { messages: string[] }>> =>
    JSON.parse(await readFile(join(host.paths(agentId).state, 'fake-sessions.json'), 'utf8').catch(() => '{}'));

  async function owner(name: string): Promise<Owner> {
    const signed = await web.signIn({ isAdmin: true });
    const made = await raw('/api/provision', {
      headers: { cookie: signed.cookie },
      json: { name, autoProvision: true, aiProvider: 'openai', apiKey: 'sk-local' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    await host.waitUntilReady(made.body.agentId, { timeoutMs: 15_000 });
    const key = await raw('/api/keys', { headers: { cookie: signed.cookie }, json: { name: 'sdk' } });
    expect(key.status).toBe(201);
    return { ...signed, agentId: made.body.agentId, key: key.body.key };
  }

  /** Runs `fn` with the agent's address at `url`, then puts it back. */
  async function withAgentAt<T>(agentId: string, url: string, fn: () => Promise<T>): Promise<T> {
    const { url: before } = await db().selectFrom('agents').select('url').where('id', '=', agentId).executeTakeFirstOrThrow();
    await db().updateTable('agents').set({ url }).where('id', '=', agentId).execute();
    try {
      return await fn();
    } finally {
      await db().updateTable('agents').set({ url: before }).where('id', '=', agentId).execute();
    }
  }

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-openai-'));
    llm = await startFakeLlm({ reply: (body) => say(lastUserText(body)), chunkDelayMs: CHUNK_MS });
    host = await fakeRuntimeHost(work, { gatewayProtocol: true, callModel: true });
    backend = await startBackend({ ...SHARED, OPENAI_BASE_URL: llm.url }, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, GATEWAY_CHAT_TIMEOUT_MS: String(CHAT_TIMEOUT_MS) });
    [alice, bob] = await Promise.all([owner('Alice Helper'), owner('Bob Helper')]);
    // Two more of alice's agents share a name, and one has no address yet: refused before any gateway is asked.
    await db()
      .insertInto('agents')
      .values([
        { id: 'agt_twin_one', user_id: alice.userId, name: 'Twin', status: 'running', url: null },
        { id: 'agt_twin_two', user_id: alice.userId, name: 'Twin', status: 'running', url: null },
      ])
      .execute();
  }, 60_000);

  afterAll(async () => {
    await web?.close();
    await backend?.close();
    await host?.shutdown();
    await llm?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  describe('GET /v1/models', () => {
    it('lists the caller’s agents in OpenAI’s list shape; another user’s agent is not listed and not found', async () => {
      const page = await client(alice.key).models.list();
      expect(page.data.map((m) => m.id).sort()).toEqual([alice.agentId, 'agt_twin_one', 'agt_twin_two'].sort());
      const mine = page.data.find((m) => m.id === alice.agentId);
      expect(mine).toEqual({
        id: alice.agentId,
        object: 'model',
        created: expect.any(Number),
        owned_by: alice.userId,
        name: 'Alice Helper',
      });
      expect(Math.abs((mine?.created ?? 0) - Date.now() / 1000)).toBeLessThan(120);
      const listed = await raw('/v1/models', { headers: { authorization: `Bearer ${alice.key}` } });
      expect(listed.body.object).toBe('list');

      expect(await client(alice.key).models.retrieve(alice.agentId)).toEqual(mine);
      expect((await client(alice.key).models.retrieve('Alice Helper')).id).toBe(alice.agentId);
      // Bob's agent is as unknown to alice as an id nobody has: the same 404, the same words.
      const theirs = await refusal(client(alice.key).models.retrieve(bob.agentId));
      const nobodys = await refusal(client(alice.key).models.retrieve('agt_nobody'));
      expect(theirs).toBeInstanceOf(NotFoundError);
      expect(theirs.error).toEqual({
        message: `The model '${bob.agentId}' does not exist or you do not have access to it`,
        type: 'invalid_request_error',
        param: 'model',
        code: 'model_not_found',
      });
      expect(nobodys.error).toEqual({
        ...(theirs.error as object),
        message: "The model 'agt_nobody' does not exist or you do not have access to it",
      });
      expect((await client(bob.key).models.list()).data.map((m) => m.id)).toEqual([bob.agentId]);
    });
  });

  describe('POST /v1/chat/completions', () => {
    it('answers with the agent’s model in OpenAI’s shape, its usage, recorded in the ledger as a chat turn', async () => {
      const before = llm.chatRequests().length;
      const completion = await client(alice.key).chat.completions.create({
        model: alice.agentId,
        messages: [
          { role: 'system', content: 'Answer in one line.' },
          { role: 'user', content: 'hello from the SDK' },
        ],
        temperature: 0.2,
      });
      expect(completion).toEqual({
        id: expect.stringMatching(/^chatcmpl_/),
        object: 'chat.completion',
        created: expect.any(Number),
        model: alice.agentId,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: say('hello from the SDK'), refusal: null },
            finish_reason: 'stop',
            logprobs: null,
          },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      });
      // The agent's model got the conversation (system prompt included) and the sampling parameter, with the agent's key.
      const sent = llm.chatRequests().slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]?.headers.authorization).toBe('Bearer sk-local');
      expect(sent[0]?.body).toMatchObject({
        temperature: 0.2,
        messages: [
          { role: 'system', content: 'Answer in one line.' },
          { role: 'user', content: 'hello from the SDK' },
        ],
      });

      // The ledger: a chat turn of alice's agent, the gateway's counts, the model the agent's configuration runs.
      const applied = (await raw(`/api/agents/${alice.agentId}`, { headers: { cookie: alice.cookie } })).body.agent.model;
      expect(applied).toMatch(/^platform\//);
      expect((await usageRows(alice.userId)).at(-1)).toMatchObject({
        kind: 'chat',
        agent_id: alice.agentId,
        agent_name: 'Alice Helper',
        model: applied,
        prompt_tokens: 10,
        completion_tokens: 5,
        total_tokens: 15,
      });
      // The conversation is the caller's to keep (an OpenAI client sends it whole): no dashboard history is written.
      expect(await db().selectFrom('chat_messages').selectAll().where('user_id', '=', alice.userId).execute()).toEqual([]);

      // The agent named by name, or as `agent:<id>`.
      for (const model of ['Alice Helper', `agent:${alice.agentId}`]) {
        const again = await client(alice.key).chat.completions.create({ model, messages: [{ role: 'user', content: `as ${model}` }] });
        expect([again.model, again.choices[0]?.message.content]).toEqual([alice.agentId, say(`as ${model}`)]);
      }
    });

    it('streams chat.completion.chunk events as the model produces them, ends with [DONE], usage last when asked', async () => {
      const text = 'tell me something long enough to come in many pieces';
      const stream = await client(alice.key).chat.completions.create({
        model: alice.agentId,
        messages: [{ role: 'user', content: text }],
        stream: true,
        stream_options: { include_usage: true },
      });
      const seen: { chunk: OpenAI.Chat.Completions.ChatCompletionChunk; at: number }[] = [];
      for await (const chunk of stream) seen.push({ chunk, at: performance.now() });
      const chunks = seen.map((s) => s.chunk);
      for (const chunk of chunks) {
        expect(chunk).toMatchObject({ id: chunks[0]?.id, object: 'chat.completion.chunk', model: alice.agentId });
      }
      expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
      const pieces = seen.filter((s) => s.chunk.choices[0]?.delta.content);
      expect(pieces.map((s) => s.chunk.choices[0]?.delta.content).join('')).toBe(say(text));
      // The model sent its pieces CHUNK_MS apart: they reached the client as they came, not all at the end.
      expect(pieces.length).toBeGreaterThan(3);
      expect((pieces.at(-1)?.at ?? 0) - (pieces[0]?.at ?? 0)).toBeGreaterThanOrEqual((pieces.length - 2) * CHUNK_MS * 0.5);
      expect(chunks.at(-2)?.choices).toEqual([{ index: 0, delta: {}, finish_reason: 'stop', logprobs: null }]);
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
      expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
      expect((await usageRows(alice.userId)).at(-1)).toMatchObject({ kind: 'chat', agent_id: alice.agentId, total_tokens: 15 });

      // On the wire: server-sent events, `data: [DONE]` last; no usage chunk when it was not asked for.
      const wire = await raw('/v1/chat/completions', {
        headers: { authorization: `Bearer ${alice.key}` },
        json: { model: alice.agentId, messages: [{ role: 'user', content: 'plain stream' }], stream: true },
      });
      expect(wire.status).toBe(200);
      expect(wire.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = wire.text.split('\n\n').filter(Boolean);
      expect(events.at(-1)).toBe('data: [DONE]');
      const frames = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')));
      expect(frames.every((f) => !('usage' in f))).toBe(true);
      expect(frames.map((f) => f.choices[0]?.delta.content ?? '').join('')).toBe(say('plain stream'));
    });

    it('keeps one agent session per conversation (`user` or X-Session-Key), scoped to the caller; none: a session each', async () => {
      const sdk = client(alice.key);
      const ask = (content: string, extra: { user?: string } = {}, headers?: Record<string, string>) =>
        sdk.chat.completions.create({ model: alice.agentId, messages: [{ role: 'user', content }], ...extra }, headers ? { headers } : {});
      await ask('plan a trip', { user: 'trip-planning' });
      await ask('to Lisbon', { user: 'trip-planning' });
      await ask('in May', {}, { 'X-Session-Key': 'trip-planning' });
      // The dashboard chat's session of the same key is the same conversation.
      const dashboard = await raw('/api/chat', {
        headers: { authorization: `Bearer ${alice.key}` },
        json: { message: 'for two', sessionKey: 'trip-planning', agentId: alice.agentId },
      });
      expect(dashboard.status).toBe(200);
      const tag = ownerTagFor(alice.userId);
      let kept = await sessions(alice.agentId);
      expect(kept[`agent:main:openai-user:${tag}:trip-planning`]?.messages).toEqual(['plan a trip', 'to Lisbon', 'in May', 'for two']);

      // A `user` that is not a plain label (an email) is keyed by its digest, still under the caller's tag.
      await ask('by email', { user: 'alice@example.com' });
      await ask('again by email', { user: 'alice@example.com' });
      const digest = createHash('sha256').update('alice@example.com').digest('hex').slice(0, 32);
      kept = await sessions(alice.agentId);
      expect(kept[`agent:main:openai-user:${tag}:u-${digest}`]?.messages).toEqual(['by email', 'again by email']);
      // X-Session-Key wins over `user`.
      await ask('header first', { user: 'ignored' }, { 'X-Session-Key': 'trip-planning' });
      kept = await sessions(alice.agentId);
      expect(kept[`agent:main:openai-user:${tag}:trip-planning`]?.messages.at(-1)).toBe('header first');
      expect(kept[`agent:main:openai-user:${tag}:ignored`]).toBeUndefined();

      // Without either, each request is a session of its own (OpenClaw's stateless default), owner-tagged by nobody.
      const stateless = (all: Record<string, unknown>) => Object.keys(all).filter((key) => !key.includes('openai-user:'));
      const before = stateless(kept).length;
      await ask('one-off');
      await ask('another one-off');
      expect(stateless(await sessions(alice.agentId))).toHaveLength(before + 2);

      // Bob's conversation of the same name is his: his agent, his tag.
      await client(bob.key).chat.completions.create({
        model: bob.agentId,
        messages: [{ role: 'user', content: 'bob plans' }],
        user: 'trip-planning',
      });
      expect(Object.keys(await sessions(bob.agentId))).toEqual([`agent:main:openai-user:${ownerTagFor(bob.userId)}:trip-planning`]);
    });

    it('401 in OpenAI’s shape without a key, with a wrong or deleted key, or with a dashboard session alone', async () => {
      const wrong = await refusal(
        client('sk_not_a_real_key').chat.completions.create({ model: alice.agentId, messages: [{ role: 'user', content: 'hi' }] }),
      );
      expect(wrong).toBeInstanceOf(AuthenticationError);
      expect(wrong.error).toEqual({
        message: 'Incorrect API key provided',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      });
      expect(await refusal(client('not-even-our-prefix').models.list())).toBeInstanceOf(AuthenticationError);

      const body = { model: alice.agentId, messages: [{ role: 'user', content: 'hi' }] };
      const none = await raw('/v1/chat/completions', { json: body });
      expect(none.status).toBe(401);
      expect(none.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key', param: null });
      expect(none.body.error.message).toMatch(/^You didn't provide an API key/);
      const cookieOnly = await raw('/v1/chat/completions', { headers: { cookie: alice.cookie }, json: body });
      expect([cookieOnly.status, cookieOnly.body.error.code]).toEqual([401, 'invalid_api_key']);
      expect((await raw('/v1/models', { headers: { cookie: alice.cookie } })).status).toBe(401);

      const made = await raw('/api/keys', { headers: { cookie: alice.cookie }, json: { name: 'short-lived' } });
      const sdk = client(made.body.key);
      expect((await sdk.models.list()).data.length).toBeGreaterThan(0);
      expect((await raw(`/api/keys/${made.body.id}`, { method: 'DELETE', headers: { cookie: alice.cookie } })).status).toBe(200);
      expect(await refusal(sdk.models.list())).toBeInstanceOf(AuthenticationError);
    });

    it('404 for an unknown model or another user’s agent, 400 for a name two agents share, 503 for one not deployed', async () => {
      const before = llm.chatRequests().length;
      const ask = (model: string) =>
        refusal(client(alice.key).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }));
      for (const model of [bob.agentId, 'Bob Helper', `agent:${bob.agentId}`, 'no-such-agent']) {
        const err = await ask(model);
        expect(err, model).toBeInstanceOf(NotFoundError);
        expect(err.error).toEqual({
          message: `The model '${model}' does not exist or you do not have access to it`,
          type: 'invalid_request_error',
          param: 'model',
          code: 'model_not_found',
        });
      }
      const twins = await ask('Twin');
      expect(twins).toBeInstanceOf(BadRequestError);
      expect(twins.error).toMatchObject({ code: 'model_ambiguous', param: 'model' });
      expect((twins.error as { message: string }).message).toBe(
        "Several of your agents are named 'Twin': name one by its id (GET /v1/models lists them)",
      );
      const draft = await ask('agt_twin_one');
      expect([draft.status, draft.code, (draft.error as { message: string }).message]).toEqual([
        503,
        'agent_not_deployed',
        'Agent is not deployed',
      ]);
      expect(llm.chatRequests().length).toBe(before);
    });

    it('400 in OpenAI’s shape for bad bodies, naming the parameter; none reaches the agent', async () => {
      const before = llm.chatRequests().length;
      const user = [{ role: 'user', content: 'hi' }];
      const model = alice.agentId;
      const cases: [unknown, string | null, string][] = [
        [{}, 'model', "Missing required parameter: 'model'"],
        [{ model }, 'messages', "Missing required parameter: 'messages'"],
        [{ model: 42, messages: user }, 'model', "Invalid 'model': must be string"],
        [{ model, messages: 'hi' }, 'messages', "Invalid 'messages': must be array"],
        [
          { model, messages: [] },
          'messages',
          "Invalid 'messages': must NOT have fewer than 1 items (the conversation; at least one user message)",
        ],
        [
          { model, messages: [{ role: 'tool', content: 'x', tool_call_id: 'c1' }] },
          'messages[0].role',
          "Invalid 'messages[0].role': must be system, developer, user or assistant (the agent uses its own tools: no tool messages)",
        ],
        [{ model, messages: [{ role: 'user', content: 42 }] }, 'messages[0].content', "Invalid 'messages[0].content': must be a string"],
        [
          { model, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] },
          'messages[0].content',
          "Invalid 'messages[0].content': must be a string",
        ],
        [
          { model, messages: [{ role: 'user', content: 'x'.repeat(32_001) }] },
          'messages[0].content',
          "Invalid 'messages[0].content': must be a string",
        ],
        [
          { model, messages: [{ role: 'system', content: 'only a system prompt' }] },
          'messages',
          'messages must include a user message with text',
        ],
        [{ model, messages: [{ role: 'user', content: '   ' }] }, 'messages', 'messages must include a user message with text'],
        [{ model, messages: user, temperature: 3 }, 'temperature', "Invalid 'temperature': must be <= 2"],
        [{ model, messages: user, stream: 'yes' }, 'stream', "Invalid 'stream': must be boolean"],
        [{ model, messages: user, n: 2 }, 'n', "Invalid 'n': must be <= 1"],
        [
          { model, messages: user, tools: [{ type: 'function', function: { name: 'f' } }] },
          'tools',
          "Invalid 'tools': must NOT have more than 0 items",
        ],
        [{ model, messages: user, user: 'u'.repeat(257) }, 'user', "Invalid 'user': must NOT have more than 256 characters"],
        [[1, 2], null, 'Invalid request body: must be object'],
      ];
      for (const [json, param, message] of cases) {
        const res = await raw('/v1/chat/completions', { headers: { authorization: `Bearer ${alice.key}` }, json });
        expect(res.status, JSON.stringify(json).slice(0, 200)).toBe(400);
        expect(res.body.error.type).toBe('invalid_request_error');
        expect(res.body.error.param, message).toBe(param);
        expect(res.body.error.message.startsWith(message), `${res.body.error.message} ⟂ ${message}`).toBe(true);
      }
      const headers = { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' };
      const notJson = await raw('/v1/chat/completions', { headers, body: '{"model":' });
      expect([notJson.status, notJson.body.error.message]).toEqual([400, 'We could not parse the JSON body of your request']);
      const nul = await raw('/v1/chat/completions', {
        headers,
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'a\u0000b' }] }),
      });
      expect([nul.status, nul.body.error.type]).toEqual([400, 'invalid_request_error']);
      const longKey = await raw('/v1/chat/completions', {
        headers: { ...headers, 'x-session-key': 'k'.repeat(300) },
        json: { model, messages: user },
      });
      expect([longKey.status, longKey.body.error.param]).toEqual([400, 'x-session-key']);
      // The official client's own refusal type, for a tool message it would send.
      const viaClient = await refusal(
        client(alice.key).chat.completions.create({ model, messages: [{ role: 'tool', content: 'x', tool_call_id: 'c1' }] }),
      );
      expect([viaClient.constructor, viaClient.param]).toEqual([BadRequestError, 'messages[0].role']);
      expect(llm.chatRequests().length).toBe(before);
    });

    it('a hibernated agent is woken and the request waits for it; a stopped one is 503 in words', async () => {
      const { pid } = await host.status(alice.agentId);
      await host.hibernate(alice.agentId);
      expect((await host.status(alice.agentId)).status).toBe('hibernated');
      const stream = await client(alice.key).chat.completions.create({
        model: alice.agentId,
        messages: [{ role: 'user', content: 'wake up' }],
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe(say('wake up'));
      const woken = await host.status(alice.agentId);
      expect(woken.status).toBe('running');
      expect(woken.pid).not.toBe(pid);

      await host.stop(alice.agentId);
      try {
        const stopped = await refusal(
          client(alice.key).chat.completions.create({ model: alice.agentId, messages: [{ role: 'user', content: 'hi' }] }),
        );
        expect(stopped).toBeInstanceOf(InternalServerError);
        expect([stopped.status, stopped.error]).toEqual([
          503,
          { message: 'The agent is stopped: start it to chat', type: 'server_error', param: null, code: 'agent_not_live' },
        ]);
      } finally {
        await host.start(alice.agentId);
        await host.waitUntilReady(alice.agentId, { timeoutMs: 15_000 });
      }
    }, 60_000);

    it('504 when the agent does not answer in time, 503 when nothing listens; a failure mid-stream is an error event', async () => {
      const ask = (stream: boolean) =>
        refusal(
          (async () => {
            const answer = await client(alice.key).chat.completions.create({
              model: alice.agentId,
              messages: [{ role: 'user', content: 'hi' }],
              stream,
            });
            if (stream) for await (const _ of answer as AsyncIterable<unknown>);
          })(),
        );
      const silent = await standIn(() => undefined);
      try {
        await withAgentAt(alice.agentId, silent.url, async () => {
          for (const stream of [false, true]) {
            const started = performance.now();
            const late = await ask(stream);
            expect([late.status, late.error]).toEqual([
              504,
              { message: 'Agent gateway timed out', type: 'server_error', param: null, code: 'timeout' },
            ]);
            expect(performance.now() - started).toBeLessThan(CHAT_TIMEOUT_MS + 1_500);
          }
        });
      } finally {
        await closeServer(silent.server);
      }

      const closed = await standIn(() => undefined);
      await closeServer(closed.server);
      const unreachable = await withAgentAt(alice.agentId, closed.url, () => ask(false));
      expect([unreachable.status, unreachable.code]).toEqual([503, 'agent_unreachable']);

      // A gateway that relays a first piece, then goes quiet: the client has the piece, then the stream's error.
      const halting = await standIn((res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant' } }] })}\n\n`);
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'first piece' } }] })}\n\n`);
      });
      try {
        await withAgentAt(alice.agentId, halting.url, async () => {
          const stream = await client(alice.key).chat.completions.create({
            model: alice.agentId,
            messages: [{ role: 'user', content: 'hi' }],
            stream: true,
          });
          let text = '';
          const failed = await refusal(
            (async () => {
              for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
            })(),
          );
          expect(text).toBe('first piece');
          expect(failed).toBeInstanceOf(APIError);
          expect(failed.error).toEqual({ message: 'Agent gateway timed out', type: 'server_error', param: null, code: 'timeout' });
        });
      } finally {
        await closeServer(halting.server);
      }
    }, 30_000);

    it('counts against the chat’s rate limit (60 a minute per client, with /api/chat), then 429 in OpenAI’s shape', async () => {
      const ip = '203.0.113.22';
      for (let i = 0; i < 59; i++) {
        const res = await raw('/api/chat?limit=1', { headers: { authorization: `Bearer ${alice.key}`, 'x-forwarded-for': ip } });
        expect(res.status).toBe(200);
      }
      const last = await client(alice.key, ip).chat.completions.create({
        model: alice.agentId,
        messages: [{ role: 'user', content: 'the 60th' }],
      });
      expect(last.choices[0]?.message.content).toBe(say('the 60th'));
      const limited = await refusal(
        client(alice.key, ip).chat.completions.create({ model: alice.agentId, messages: [{ role: 'user', content: 'hi' }] }),
      );
      expect(limited).toBeInstanceOf(RateLimitError);
      expect(limited.error).toEqual({ message: 'Too many requests', type: 'requests', param: null, code: 'rate_limit_exceeded' });
      expect(limited.headers?.get('ratelimit-limit')).toBe('60');
      expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThan(0);
      expect((await raw('/api/chat?limit=1', { headers: { authorization: `Bearer ${alice.key}`, 'x-forwarded-for': ip } })).status).toBe(
        429,
      );
      // Another client is not affected.
      expect((await client(alice.key).models.list()).data.length).toBeGreaterThan(0);
    });
  });

  it('unknown /v1 paths are OpenAI 404s; the endpoints are in the OpenAPI document', async () => {
    for (const [method, path] of [
      ['GET', '/v1/nothing-here'],
      ['POST', '/v1/embeddings'],
      ['GET', '/v1/chat/completions'],
      ['GET', '/v1'],
    ] as const) {
      const res = await raw(path, { method, headers: { authorization: `Bearer ${alice.key}` } });
      expect([res.status, res.body.error], path).toEqual([
        404,
        { message: `Unknown request URL: ${method} ${path}`, type: 'invalid_request_error', param: null, code: 'unknown_url' },
      ]);
    }
    const doc = (await raw('/api/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/chat/completions', '/v1/models', '/v1/models/{model}']));
    expect(doc.paths['/v1/chat/completions'].post.responses).toHaveProperty('429');
  });
});
