import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llmCostUsd } from '@aop/core/llm-prices';
import { chatSend, connectGateway, cronAdd } from '@aop/gateway-client';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { ownerTagFor } from '../../apps/web/src/platform/clients/user-gateway.js';
import { startWeb, type TestWeb, pointAgentAt } from '../../apps/web/src/web.test-support.js';

const AGENT_TOKEN = 'agent-gateway-token-for-chat-tests';
const PLATFORM_TOKEN = 'platform-gateway-token-for-chat-tests';
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-chat-tests', HMAC_SECRET: 'hmac-secret-for-chat-tests', TRUST_PROXY: '127.0.0.1' };
/** Short bounds so the timeout cases finish fast; every healthy exchange with the fake takes a few milliseconds. */
const CHAT_TIMEOUT_MS = 1_000;
const STALL = 'this run never finishes';
const FAIL = 'this run fails';

// Every request comes from its own address unless a test says otherwise, so the per-IP chat limit only bites where tested.
let lastIp = 0;
const nextIp = () => `198.18.7.${(++lastIp % 250) + 1}`;

interface CallOptions {
  cookie?: string;
  json?: unknown;
  body?: string;
  method?: string;
  headers?: Record<string, string>;
  ip?: string;
}

function call(web: TestWeb, path: string, opts: CallOptions = {}) {
  return request(`${web.url}${path}`, {
    ...(opts.method ? { method: opts.method } : {}),
    ...(opts.json !== undefined ? { json: opts.json } : {}),
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    headers: { 'x-forwarded-for': opts.ip ?? nextIp(), ...(opts.cookie ? { cookie: opts.cookie } : {}), ...opts.headers },
  });
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

// Spec §4.4 (POST /api/gateway/chat, GET /api/gateway/status, POST/GET /api/chat) and §8 (chat 60/min, gateway chat
// timeout, status lists of 10): web → backend (gateway token) → an OpenClaw-protocol gateway on 127.0.0.1.
describe('chatting with one’s agent', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  /** No shared platform gateway: a user without an agent has nobody to talk to. */
  let web: TestWeb;
  /** With the shared platform gateway (`GATEWAY_URL`) for users without an agent. */
  let sharedWeb: TestWeb;
  /** Its backend does not answer. */
  let offlineWeb: TestWeb;
  let agentGw: FakeGatewayWs;
  let platformGw: FakeGatewayWs;
  let wrongTokenGw: FakeGatewayWs;
  let noRestGw: FakeGatewayWs;
  let deadUrl: string;
  let alice: { cookie: string; userId: string; agentId: string; agentName: string };
  let bob: { cookie: string; userId: string; agentId: string; agentName: string };
  /** Signed in, no agent. */
  let carol: { cookie: string; userId: string };
  /** Has an agent record the backend never deployed: no token for it. */
  let dave: { cookie: string; userId: string };

  const db = () => web.database.db.kysely;
  const pointAgent = (agentId: string, url: string) => db().updateTable('agents').set({ url }).where('id', '=', agentId).execute();

  async function agentOwner(name: string) {
    const owner = await web.signIn({ isAdmin: true });
    const res = await call(web, '/api/provision', { cookie: owner.cookie, json: { autoProvision: true, name } });
    expect(res.status).toBe(200);
    const agentId: string = res.body.agentId;
    // The agent's gateway is the protocol-speaking fake, reached with the token the backend hands out.
    await pointAgent(agentId, agentGw.httpUrl);
    return { ...owner, agentId, agentName: name };
  }

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-chat-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: {
        '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0'),
        // Answers /readyz only after 2 s: an agent that stays `starting` long enough to send it a message meanwhile.
        '1.0.0-slow': await installFakeRuntime(join(work, 'rt-slow'), '1.0.0-slow', { readyDelayMs: 2_000 }),
      },
      // The stand-in runtime is plain Node: it runs on this process's Node, whatever Node 24 install the machine has.
      nodeBin: process.execPath,
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    [agentGw, platformGw, wrongTokenGw, noRestGw] = await Promise.all([
      startFakeGatewayWs({ token: AGENT_TOKEN, reply: (m) => `echo: ${m}`, stallChatMessage: STALL, failChatMessage: FAIL }),
      startFakeGatewayWs({ token: PLATFORM_TOKEN, reply: (m) => `platform: ${m}` }),
      startFakeGatewayWs({ token: 'a-different-token-entirely' }),
      startFakeGatewayWs({ token: AGENT_TOKEN, chatCompletions: false }),
    ]);
    deadUrl = `http://127.0.0.1:${await closedPort()}`;
    backend = await startBackend({ ...SHARED, GATEWAY_SHARED_TOKEN: AGENT_TOKEN, PLATFORM_GATEWAY_TOKEN: PLATFORM_TOKEN }, { host });
    const timeouts = { GATEWAY_CHAT_TIMEOUT_MS: String(CHAT_TIMEOUT_MS), GATEWAY_REQUEST_TIMEOUT_MS: String(CHAT_TIMEOUT_MS) };
    [web, sharedWeb, offlineWeb] = await Promise.all([
      startWeb({ ...SHARED, ...timeouts, BACKEND_API_URL: backend.url }),
      startWeb({ ...SHARED, ...timeouts, BACKEND_API_URL: backend.url, GATEWAY_URL: platformGw.httpUrl }),
      startWeb({ ...SHARED, ...timeouts, BACKEND_API_URL: deadUrl }),
    ]);

    alice = await agentOwner('Alice Helper');
    bob = await agentOwner('Bob Helper');
    carol = await web.signIn();
    dave = await web.signIn();
    await db()
      .insertInto('agents')
      .values({ id: 'agt_never_deployed', user_id: dave.userId, name: 'Ghost', status: 'running', url: agentGw.httpUrl })
      .execute();
  }, 60_000);

  afterAll(async () => {
    await Promise.all([web?.close(), sharedWeb?.close(), offlineWeb?.close()]);
    await backend?.close();
    await host?.shutdown();
    await Promise.all([agentGw?.close(), platformGw?.close(), wrongTokenGw?.close(), noRestGw?.close()]);
    await rm(work, { recursive: true, force: true });
  });

  /** Runs `fn` with alice's agent at `url`, then puts it back on the working gateway. */
  async function withAliceAt<T>(url: string, fn: () => Promise<T>): Promise<T> {
    await pointAgent(alice.agentId, url);
    try {
      return await fn();
    } finally {
      await pointAgent(alice.agentId, agentGw.httpUrl);
    }
  }

  const usageRows = (target: TestWeb, userId: string) =>
    target.database.db.kysely.selectFrom('usage_events').selectAll().where('user_id', '=', userId).orderBy('created_at').execute();
  const chatRows = (target: TestWeb, userId: string) =>
    target.database.db.kysely.selectFrom('chat_messages').selectAll().where('user_id', '=', userId).orderBy('seq').execute();

  describe('POST /api/gateway/chat', () => {
    it('answers over one WebSocket with the reply of the final event, naming the agent, and records the turn as usage', async () => {
      const before = agentGw.connectAttempts.length;
      const res = await call(web, '/api/gateway/chat', { cookie: alice.cookie, json: { message: 'hello there' } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, reply: 'echo: hello there', agentId: alice.agentId, agentName: 'Alice Helper' });
      // One handshake, accepted with the token the backend holds for the agent; the default session is `main`, in
      // OpenClaw's full form naming the agent (`agent:<agent>:<key>`; the agent has a gateway of its own: `main`).
      expect(agentGw.connectAttempts.slice(before)).toEqual([{ ok: true }]);
      const connect = agentGw.received.filter((f) => f.method === 'connect').at(-1);
      expect(connect?.params.auth).toEqual({ token: AGENT_TOKEN });
      expect(agentGw.received.filter((f) => f.method === 'chat.send').at(-1)?.params).toMatchObject({
        sessionKey: 'agent:main:main',
        message: 'hello there',
      });

      const other = await call(web, '/api/gateway/chat', { cookie: alice.cookie, json: { message: 'again', sessionKey: 'work' } });
      expect(other.body.reply).toBe('echo: again');
      expect(agentGw.received.filter((f) => f.method === 'chat.send').at(-1)?.params.sessionKey).toBe('agent:main:work');

      // Usage from the final event's transcript message (OpenClaw's `provider`/`model`/`usage`).
      const rows = await usageRows(web, alice.userId);
      expect(rows.slice(-2).map((r) => [r.kind, r.agent_id, r.agent_name, r.model, r.prompt_tokens, r.completion_tokens])).toEqual([
        [
          'chat',
          alice.agentId,
          'Alice Helper',
          'fake/fake-1',
          9 + Math.ceil('hello there'.length / 4),
          Math.ceil('echo: hello there'.length / 4),
        ],
        ['chat', alice.agentId, 'Alice Helper', 'fake/fake-1', 9 + Math.ceil('again'.length / 4), Math.ceil('echo: again'.length / 4)],
      ]);
      expect(Number(rows.at(-1)?.cost_usd)).toBe(0); // the fake model has no price
    });

    it('400 Message required for a missing, blank or non-string message or a body that is not JSON; 400 for a bad sessionKey', async () => {
      for (const json of [{}, { message: '' }, { message: '   ' }, { message: 42 }, { message: ['hi'] }, { sessionKey: 'main' }]) {
        const res = await call(web, '/api/gateway/chat', { cookie: alice.cookie, json });
        expect([res.status, res.body]).toEqual([400, { error: 'Message required' }]);
      }
      for (const opts of [
        { body: 'not json', headers: { 'content-type': 'application/json' } },
        { body: '[1,2]', headers: { 'content-type': 'application/json' } },
        {},
      ]) {
        const res = await call(web, '/api/gateway/chat', { cookie: alice.cookie, method: 'POST', ...opts });
        expect([res.status, res.body]).toEqual([400, { error: 'Message required' }]);
      }
      for (const sessionKey of ['agent:main:main', 'a b', 42, 'x'.repeat(101)]) {
        const res = await call(web, '/api/gateway/chat', { cookie: alice.cookie, json: { message: 'hi', sessionKey } });
        expect(res.status).toBe(400);
        expect(res.body.error).toMatch(/^Invalid sessionKey/);
      }
      const long = await call(web, '/api/gateway/chat', { cookie: alice.cookie, json: { message: 'x'.repeat(32_001) } });
      expect([long.status, long.body.error]).toEqual([400, 'Message too long (max 32000 characters)']);
    });

    it('401 Unauthorized without a session, before the body is looked at', async () => {
      for (const opts of [{ json: { message: 'hi' } }, { json: {} }, { cookie: 'service-session=0000', json: { message: 'hi' } }]) {
        const res = await call(web, '/api/gateway/chat', opts);
        expect([res.status, res.body]).toEqual([401, { error: 'Unauthorized' }]);
      }
    });

    it('404 No agent found for a user without an agent when there is no shared gateway', async () => {
      const res = await call(web, '/api/gateway/chat', { cookie: carol.cookie, json: { message: 'anyone?' } });
      expect([res.status, res.body]).toEqual([404, { error: 'No agent found' }]);
    });

    it('503 No gateway token available when the backend has no token for the agent or cannot be reached', async () => {
      const res = await call(web, '/api/gateway/chat', { cookie: dave.cookie, json: { message: 'hi' } });
      expect([res.status, res.body]).toEqual([503, { error: 'No gateway token available' }]);
      const offline = await offlineWeb.signIn();
      await offlineWeb.database.db.kysely
        .insertInto('agents')
        .values({ id: 'agt_offline', user_id: offline.userId, name: 'Offline', status: 'running', url: agentGw.httpUrl })
        .execute();
      const res2 = await call(offlineWeb, '/api/gateway/chat', { cookie: offline.cookie, json: { message: 'hi' } });
      expect([res2.status, res2.body]).toEqual([503, { error: 'No gateway token available' }]);
    });

    it('500 Chat failed when the gateway rejects the handshake, is not there, or the run fails; the cause is not sent', async () => {
      const rejected = await withAliceAt(wrongTokenGw.httpUrl, () =>
        call(web, '/api/gateway/chat', { cookie: alice.cookie, json: { message: 'hi' } }),
      );
      expect([rejected.status, rejected.body]).toEqual([500, { error: 'Chat failed' }]);
      expect(wrongTokenGw.connectAttempts.at(-1)).toEqual({ ok: false, code: 'UNAUTHORIZED' });
      expect(wrongTokenGw.received.some((f) => f.method === 'chat.send')).toBe(false);

      const dead = await withAliceAt(deadUrl, () => call(web, '/api/gateway/chat', { cookie: alice.cookie, json: { message: 'hi' } }));
      expect([dead.status, dead.body]).toEqual([500, { error: 'Chat failed' }]);

      const failed = await call(web, '/api/gateway/chat', { cookie: alice.cookie, json: { message: FAIL } });
      expect([failed.status, failed.body]).toEqual([500, { error: 'Chat failed' }]);
    });

    it('gives up after GATEWAY_CHAT_TIMEOUT_MS with 500 Chat failed', async () => {
      const started = Date.now();
      const res = await call(web, '/api/gateway/chat', { cookie: alice.cookie, json: { message: STALL } });
      const elapsed = Date.now() - started;
      expect([res.status, res.body]).toEqual([500, { error: 'Chat failed' }]);
      expect(elapsed).toBeGreaterThanOrEqual(CHAT_TIMEOUT_MS - 50);
      expect(elapsed).toBeLessThan(CHAT_TIMEOUT_MS + 1_500);
    });

    it('on the shared platform gateway: the platform token, the user’s own scoped session, the gateway’s agent named', async () => {
      const frank = await sharedWeb.signIn();
      const res = await call(sharedWeb, '/api/gateway/chat', { cookie: frank.cookie, json: { message: 'hi platform' } });
      expect([res.status, res.body]).toEqual([200, { success: true, reply: 'platform: hi platform', agentId: 'main', agentName: 'main' }]);
      expect(platformGw.received.filter((f) => f.method === 'connect').at(-1)?.params.auth).toEqual({ token: PLATFORM_TOKEN });
      expect(platformGw.received.filter((f) => f.method === 'chat.send').at(-1)?.params.sessionKey).toBe(
        `${ownerTagFor(frank.userId)}:main`,
      );
      const [usage] = await usageRows(sharedWeb, frank.userId);
      expect(usage).toMatchObject({ kind: 'chat', agent_id: null, model: 'fake/fake-1' });
    });
  });

  describe('GET /api/gateway/status', () => {
    it('401 without a session', async () => {
      const res = await call(web, '/api/gateway/status');
      expect([res.status, res.body]).toEqual([401, { error: 'Unauthorized' }]);
    });

    it('healthy: /healthz plus sessions and cron jobs read over one WebSocket, at most 10 of each', async () => {
      const conn = await connectGateway({ url: agentGw.url, token: AGENT_TOKEN });
      try {
        for (let i = 0; i < 12; i++) await chatSend(conn, { sessionKey: `seed-${i}`, message: `seed ${i}`, timeoutMs: 5_000 });
        for (let i = 0; i < 12; i++) {
          await cronAdd(conn, {
            name: `job ${i}`,
            schedule: { kind: 'every', everyMs: 3_600_000 },
            sessionTarget: 'main',
            wakeMode: 'next-heartbeat',
            payload: { kind: 'systemEvent', text: `tick ${i}` },
            enabled: i >= 2,
          });
        }
      } finally {
        await conn.close();
      }
      const socketsBefore = agentGw.connectAttempts.length;
      const res = await call(web, '/api/gateway/status', { cookie: alice.cookie });
      expect(res.status).toBe(200);
      expect(agentGw.connectAttempts.length - socketsBefore).toBe(1);
      expect(agentGw.httpReceived.at(-1)).toMatchObject({ method: 'GET', path: '/healthz' });
      const { health, healthDetail, sessions, cron } = res.body;
      expect(health).toBe('healthy');
      expect(healthDetail).toEqual({ ok: true, status: 'live' });

      const all = [...agentGw.sessions.values()];
      expect(sessions.total).toBe(all.length);
      expect(sessions.total).toBeGreaterThanOrEqual(12);
      expect(sessions.active).toBe(all.filter((s) => s.running).length);
      expect(sessions.list).toHaveLength(10);
      // Newest activity first: the last seeded session leads, with its user message and the reply.
      expect(sessions.list[0]).toEqual({
        sessionKey: 'agent:main:seed-11',
        status: 'done',
        messageCount: 2,
        lastActivity: expect.any(String),
      });
      const times = sessions.list.map((s: { lastActivity: string }) => Date.parse(s.lastActivity));
      expect([...times].sort((a, b) => b - a)).toEqual(times);

      expect(cron.total).toBe(12);
      expect(cron.enabled).toBe(10);
      expect(cron.jobs).toHaveLength(10);
      expect(cron.jobs[0]).toMatchObject({ name: 'job 0', enabled: false, lastRun: null });
      expect(cron.jobs[2]).toEqual({
        id: expect.any(String),
        name: 'job 2',
        enabled: true,
        schedule: { kind: 'every', everyMs: 3_600_000 },
        lastRun: null,
        nextRun: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
    });

    it('200 unreachable with empty lists when there is no gateway, no token, no backend, or the gateway is down or refuses', async () => {
      const empty = { sessions: { total: 0, active: 0, list: [] }, cron: { total: 0, enabled: 0, jobs: [] } };
      const status = async (target: TestWeb, cookie: string) => {
        const res = await call(target, '/api/gateway/status', { cookie });
        expect(res.status).toBe(200);
        return res.body;
      };
      const offline = await offlineWeb.signIn();
      await offlineWeb.database.db.kysely
        .insertInto('agents')
        .values({ id: 'agt_offline_2', user_id: offline.userId, name: 'Offline', status: 'running', url: agentGw.httpUrl })
        .execute();
      const cases: [Promise<unknown>, string][] = [
        [status(web, carol.cookie), 'No agent found'],
        [status(web, dave.cookie), 'No gateway token available'],
        [status(offlineWeb, offline.cookie), 'Backend unreachable'],
      ];
      for (const [answer, error] of cases)
        expect(await answer).toEqual({ health: 'unreachable', healthDetail: { ok: false, error }, ...empty });

      expect(await withAliceAt(deadUrl, () => status(web, alice.cookie))).toEqual({
        health: 'unreachable',
        healthDetail: { ok: false, error: 'Gateway unreachable' },
        ...empty,
      });
      // Live, but the platform's token is refused: not usable, so not healthy.
      expect(await withAliceAt(wrongTokenGw.httpUrl, () => status(web, alice.cookie))).toEqual({
        health: 'unreachable',
        healthDetail: { ok: false, error: 'Gateway refused the connection' },
        ...empty,
      });
    });

    it('on the shared gateway: only the user’s own sessions (shown without the owner tag) and jobs', async () => {
      const gina = await sharedWeb.signIn();
      const hugo = await sharedWeb.signIn();
      expect((await call(sharedWeb, '/api/gateway/chat', { cookie: gina.cookie, json: { message: 'from gina' } })).status).toBe(200);
      expect((await call(sharedWeb, '/api/chat', { cookie: gina.cookie, json: { message: 'rest from gina' } })).status).toBe(200);
      expect((await call(sharedWeb, '/api/gateway/chat', { cookie: hugo.cookie, json: { message: 'from hugo' } })).status).toBe(200);
      const conn = await connectGateway({ url: platformGw.url, token: PLATFORM_TOKEN });
      try {
        const job = (name: string, description?: string) =>
          cronAdd(conn, {
            name,
            ...(description ? { description } : {}),
            schedule: { kind: 'cron', expr: '0 9 * * *' },
            sessionTarget: 'isolated',
            wakeMode: 'now',
            payload: { kind: 'agentTurn', message: name },
            delivery: { mode: 'none' },
          });
        await job('gina daily', ownerTagFor(gina.userId));
        await job('hugo daily', ownerTagFor(hugo.userId));
        await job('platform housekeeping');
      } finally {
        await conn.close();
      }

      const res = await call(sharedWeb, '/api/gateway/status', { cookie: gina.cookie });
      expect(res.status).toBe(200);
      expect(res.body.health).toBe('healthy');
      expect(res.body.sessions).toEqual({
        total: 2,
        active: 0,
        list: [
          { sessionKey: 'agent:main:openai-user:main', status: 'done', messageCount: 2, lastActivity: expect.any(String) },
          { sessionKey: 'agent:main:main', status: 'done', messageCount: 2, lastActivity: expect.any(String) },
        ],
      });
      expect(res.body.cron).toMatchObject({
        total: 1,
        enabled: 1,
        jobs: [{ name: 'gina daily', schedule: { kind: 'cron', expr: '0 9 * * *' } }],
      });
    });
  });

  describe('POST /api/chat and GET /api/chat', () => {
    it('sends an OpenAI chat completion to the agent (Bearer token, stable `user`), stores the turn and its usage', async () => {
      const res = await call(web, '/api/chat', { cookie: alice.cookie, json: { message: 'what is up' } });
      expect(res.status).toBe(200);
      const usage = {
        prompt_tokens: 9 + Math.ceil('what is up'.length / 4),
        completion_tokens: Math.ceil('echo: what is up'.length / 4),
        total_tokens: 9 + Math.ceil('what is up'.length / 4) + Math.ceil('echo: what is up'.length / 4),
      };
      expect(res.body).toEqual({
        success: true,
        reply: 'echo: what is up',
        agentId: alice.agentId,
        sessionKey: 'main',
        messageId: expect.stringMatching(/^msg_/),
        // Alice's agent was provisioned without a key or a model: its applied configuration names none, so the model
        // is unknown (OpenClaw's own default runs), never the platform's default model.
        model: null,
        usage,
      });
      const sent = agentGw.httpReceived.filter((r) => r.path === '/v1/chat/completions').at(-1);
      expect(sent).toMatchObject({ method: 'POST', authorization: `Bearer ${AGENT_TOKEN}` });
      expect(sent?.body).toEqual({
        model: 'openclaw/main',
        user: `${ownerTagFor(alice.userId)}:main`,
        messages: [{ role: 'user', content: 'what is up' }],
      });

      const stored = await chatRows(web, alice.userId);
      expect(stored.map((r) => [r.role, r.content, r.agent_id, r.session_key, r.model, r.prompt_tokens, r.completion_tokens])).toEqual([
        ['user', 'what is up', alice.agentId, 'main', null, 0, 0],
        ['assistant', 'echo: what is up', alice.agentId, 'main', null, usage.prompt_tokens, usage.completion_tokens],
      ]);
      expect(stored[1]?.id).toBe(res.body.messageId);
      const ledger = (await usageRows(web, alice.userId)).at(-1);
      expect(ledger).toMatchObject({
        kind: 'chat',
        agent_id: alice.agentId,
        agent_name: 'Alice Helper',
        model: null,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        total_tokens: usage.total_tokens,
      });
      // No model, no price: the tokens are counted, the cost is 0 rather than a guess.
      expect(Number(ledger?.cost_usd)).toBe(0);
    });

    it('keeps one gateway session per user and session key; a named agent must be the caller’s', async () => {
      await call(web, '/api/chat', { cookie: alice.cookie, json: { message: 'second in main' } });
      await call(web, '/api/chat', {
        cookie: alice.cookie,
        json: { message: 'plan a trip', sessionKey: 'travel', agentId: alice.agentId },
      });
      const tag = ownerTagFor(alice.userId);
      expect(agentGw.sessions.has(`agent:main:openai-user:${tag}:main`)).toBe(true);
      expect(agentGw.sessions.has(`agent:main:openai-user:${tag}:travel`)).toBe(true);
      expect(agentGw.httpReceived.at(-1)?.body.user).toBe(`${tag}:travel`);

      const theirs = await call(web, '/api/chat', { cookie: alice.cookie, json: { message: 'hi', agentId: bob.agentId } });
      expect([theirs.status, theirs.body]).toEqual([404, { error: 'Agent not found' }]);
    });

    it('GET: the caller’s history only, newest last, filtered by agent and session, paged with `before`', async () => {
      await call(web, '/api/chat', { cookie: bob.cookie, json: { message: 'bob here' } });
      const all = await call(web, '/api/chat', { cookie: alice.cookie });
      expect(all.status).toBe(200);
      expect(all.body.hasMore).toBe(false);
      expect(all.body.nextBefore).toBeNull();
      expect(all.body.messages.map((m: { content: string }) => m.content)).toEqual([
        'what is up',
        'echo: what is up',
        'second in main',
        'echo: second in main',
        'plan a trip',
        'echo: plan a trip',
      ]);
      expect(all.body.messages[1]).toEqual({
        id: expect.stringMatching(/^msg_/),
        role: 'assistant',
        content: 'echo: what is up',
        agentId: alice.agentId,
        sessionKey: 'main',
        model: null,
        usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) },
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      expect(all.body.messages[0].usage).toBeNull();

      const travel = await call(web, '/api/chat?sessionKey=travel', { cookie: alice.cookie });
      expect(travel.body.messages.map((m: { content: string }) => m.content)).toEqual(['plan a trip', 'echo: plan a trip']);

      const page = await call(web, '/api/chat?limit=4', { cookie: alice.cookie });
      expect(page.body.messages.map((m: { content: string }) => m.content)).toEqual([
        'second in main',
        'echo: second in main',
        'plan a trip',
        'echo: plan a trip',
      ]);
      expect(page.body.hasMore).toBe(true);
      expect(page.body.nextBefore).toBe(page.body.messages[0].id);
      const older = await call(web, `/api/chat?limit=4&before=${page.body.nextBefore}`, { cookie: alice.cookie });
      expect(older.body).toEqual({ messages: [all.body.messages[0], all.body.messages[1]], hasMore: false, nextBefore: null });

      const bobs = await call(web, '/api/chat', { cookie: bob.cookie });
      expect(bobs.body.messages.map((m: { content: string }) => m.content)).toEqual(['bob here', 'echo: bob here']);
      // Another user's agent or message id finds nothing of theirs.
      expect((await call(web, `/api/chat?agentId=${bob.agentId}`, { cookie: alice.cookie })).body.messages).toEqual([]);
      const foreignCursor = await call(web, `/api/chat?before=${bobs.body.messages[0].id}`, { cookie: alice.cookie });
      expect([foreignCursor.status, foreignCursor.body]).toEqual([400, { error: 'Invalid before cursor' }]);
      expect((await call(web, '/api/chat', { cookie: carol.cookie })).body).toEqual({ messages: [], hasMore: false, nextBefore: null });
      expect((await call(web, '/api/chat')).status).toBe(401);
    });

    it('accepts a user API key as well as the session', async () => {
      const created = await call(web, '/api/keys', { cookie: bob.cookie, json: { name: 'cli' } });
      expect(created.status).toBe(201);
      const res = await call(web, '/api/chat', { headers: { authorization: `Bearer ${created.body.key}` }, json: { message: 'via key' } });
      expect([res.status, res.body.reply, res.body.agentId]).toEqual([200, 'echo: via key', bob.agentId]);
    });

    it('400 bad body, 401, 404 No agent found, 503 no token; nothing is stored when the turn fails', async () => {
      for (const json of [{}, { message: '' }, { message: 7 }]) {
        const res = await call(web, '/api/chat', { cookie: alice.cookie, json });
        expect([res.status, res.body]).toEqual([400, { error: 'Message required' }]);
      }
      const notJson = await call(web, '/api/chat', { cookie: alice.cookie, body: '{', headers: { 'content-type': 'application/json' } });
      expect([notJson.status, notJson.body]).toEqual([400, { error: 'Message required' }]);
      const long = await call(web, '/api/chat', { cookie: alice.cookie, json: { message: 'x'.repeat(32_001) } });
      expect([long.status, long.body.error]).toEqual([400, 'Message too long (max 32000 characters)']);
      const badKey = await call(web, '/api/chat', { cookie: alice.cookie, json: { message: 'hi', sessionKey: 'cron:x' } });
      expect(badKey.status).toBe(400);
      const badAgent = await call(web, '/api/chat', { cookie: alice.cookie, json: { message: 'hi', agentId: 42 } });
      expect([badAgent.status, badAgent.body]).toEqual([400, { error: 'Invalid agentId' }]);
      expect((await call(web, '/api/chat', { json: { message: 'hi' } })).body).toEqual({ error: 'Unauthorized' });

      const noAgent = await call(web, '/api/chat', { cookie: carol.cookie, json: { message: 'hi' } });
      expect([noAgent.status, noAgent.body]).toEqual([404, { error: 'No agent found' }]);
      const noToken = await call(web, '/api/chat', { cookie: dave.cookie, json: { message: 'hi' } });
      expect([noToken.status, noToken.body]).toEqual([503, { error: 'No gateway token available' }]);
      expect(await chatRows(web, carol.userId)).toEqual([]);
      expect(await chatRows(web, dave.userId)).toEqual([]);
    });

    it('502 when the agent gateway is unreachable, refuses, has no REST endpoint, fails or times out', async () => {
      const stored = (await chatRows(web, alice.userId)).length;
      const ask = (message = 'hi') => call(web, '/api/chat', { cookie: alice.cookie, json: { message } });
      expect((await withAliceAt(deadUrl, () => ask())).body).toEqual({ error: 'Agent gateway unreachable' });
      const refused = await withAliceAt(wrongTokenGw.httpUrl, () => ask());
      expect([refused.status, refused.body]).toEqual([502, { error: 'Agent gateway failed' }]);
      expect((await withAliceAt(noRestGw.httpUrl, () => ask())).body).toEqual({ error: 'Agent gateway failed' });
      expect((await ask(FAIL)).body).toEqual({ error: 'Agent gateway failed' });
      const started = Date.now();
      const slow = await ask(STALL);
      expect([slow.status, slow.body]).toEqual([502, { error: 'Agent gateway timed out' }]);
      expect(Date.now() - started).toBeLessThan(CHAT_TIMEOUT_MS + 1_500);
      expect((await chatRows(web, alice.userId)).length).toBe(stored);

      const offline = await offlineWeb.signIn();
      await offlineWeb.database.db.kysely
        .insertInto('agents')
        .values({ id: 'agt_offline_3', user_id: offline.userId, name: 'Offline', status: 'running', url: agentGw.httpUrl })
        .execute();
      const noBackend = await call(offlineWeb, '/api/chat', { cookie: offline.cookie, json: { message: 'hi' } });
      expect([noBackend.status, noBackend.body]).toEqual([502, { error: 'Backend unreachable' }]);
    });

    it('a message to an agent that is starting waits until it is live, then is answered; a stopped one is said in words', async () => {
      // Issue #19 "ready means answers a chat": the agent's gateway is not listening yet when the message arrives.
      const hana = await agentOwner('Hana Helper');
      await host.update(hana.agentId, { version: '1.0.0-slow' });
      const port = await closedPort();
      await pointAgent(hana.agentId, `http://127.0.0.1:${port}`);
      await host.stop(hana.agentId);
      const stopped = await call(web, '/api/chat', { cookie: hana.cookie, json: { message: 'are you there?', agentId: hana.agentId } });
      expect([stopped.status, stopped.body]).toEqual([409, { error: 'The agent is stopped: start it to chat' }]);

      await host.start(hana.agentId);
      const liveAt = host.waitUntilReady(hana.agentId).then(() => performance.now());
      const asked = call(web, '/api/chat', { cookie: hana.cookie, json: { message: 'first words', agentId: hana.agentId } }).then(
        (res) => ({ res, at: performance.now() }),
      );
      expect((await host.status(hana.agentId)).status).toBe('starting'); // sent while the agent starts
      // The gateway comes up on the agent's address while the message waits (the stand-in host reports live after 2 s).
      await new Promise((r) => setTimeout(r, 500));
      const late = await startFakeGatewayWs({ port, token: AGENT_TOKEN, reply: (m) => `late: ${m}` });
      try {
        const { res: answer, at: answeredAt } = await asked;
        expect([answer.status, answer.body.reply]).toEqual([200, 'late: first words']);
        // Timed against the host's own "live", not a fixed delay (which a loaded machine stretched or shrank).
        expect(answeredAt).toBeGreaterThanOrEqual(await liveAt);
        expect((await chatRows(web, hana.userId)).map((r) => r.content)).toEqual(['first words', 'late: first words']);
      } finally {
        await late.close();
      }
    });

    it('a message to an agent still starting when AGENT_START_WAIT_MS ends is refused in words, and nothing is stored', async () => {
      const impatient = await startWeb({
        ...SHARED,
        GATEWAY_CHAT_TIMEOUT_MS: String(CHAT_TIMEOUT_MS),
        AGENT_START_WAIT_MS: '300',
        BACKEND_API_URL: backend.url,
      });
      try {
        const frank = await impatient.signIn({ isAdmin: true });
        const res = await call(impatient, '/api/provision', { cookie: frank.cookie, json: { autoProvision: true, name: 'Frank Helper' } });
        const agentId: string = res.body.agentId;
        await host.update(agentId, { version: '1.0.0-slow' });
        await pointAgentAt(impatient, agentId, await closedPort());
        await host.restart(agentId);
        const refused = await call(impatient, '/api/chat', { cookie: frank.cookie, json: { message: 'hello?', agentId } });
        expect(refused.status).toBe(503);
        expect(refused.body.error).toMatch(/^The agent is still starting after \d+ s: try again shortly$/);
        expect(
          await impatient.database.db.kysely.selectFrom('chat_messages').selectAll().where('user_id', '=', frank.userId).execute(),
        ).toEqual([]);
      } finally {
        await impatient.close();
      }
    });

    it('on the shared gateway: the platform token and the user’s own `user`, no agent id', async () => {
      const ivan = await sharedWeb.signIn();
      const res = await call(sharedWeb, '/api/chat', { cookie: ivan.cookie, json: { message: 'shared rest' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ reply: 'platform: shared rest', agentId: null, model: null });
      expect(platformGw.httpReceived.at(-1)).toMatchObject({
        authorization: `Bearer ${PLATFORM_TOKEN}`,
        body: { user: `${ownerTagFor(ivan.userId)}:main` },
      });
      expect((await chatRows(sharedWeb, ivan.userId)).map((r) => [r.role, r.agent_id])).toEqual([
        ['user', null],
        ['assistant', null],
      ]);
    });

    it('429 Too many requests after 60 chat requests a minute from one client, across both chat paths', async () => {
      const ip = '203.0.113.60';
      for (let i = 0; i < 60; i++) {
        const res = await call(web, '/api/chat?limit=1', { cookie: carol.cookie, ip });
        expect(res.status).toBe(200);
      }
      const limited = await call(web, '/api/chat', { cookie: carol.cookie, ip });
      expect([limited.status, limited.body]).toEqual([429, { error: 'Too many requests' }]);
      expect(limited.headers.get('ratelimit-limit')).toBe('60');
      expect(limited.headers.get('ratelimit-remaining')).toBe('0');
      const post = await call(web, '/api/chat', { cookie: carol.cookie, ip, json: { message: 'hi' } });
      expect(post.status).toBe(429);
      const ws = await call(web, '/api/gateway/chat', { cookie: carol.cookie, ip, json: { message: 'hi' } });
      expect(ws.status).toBe(429);
      // Another client is unaffected.
      expect((await call(web, '/api/chat', { cookie: carol.cookie })).status).toBe(200);
    });
  });

  // Issue #19: the model shown, recorded and priced is the one the agent runs (read from the configuration its host
  // applies, or reported by OpenClaw for the turn), and a provider key that is missing or refused is said in words.
  describe('the model the agent runs, and its provider key', () => {
    let modelGw: FakeGatewayWs;
    let refusedGw: FakeGatewayWs;
    let missingGw: FakeGatewayWs;
    /** Provisioned with her own OpenAI key: the host writes `platform/gpt-4.1-mini` as the agent's model. */
    let erin: { cookie: string; userId: string; agentId: string };
    const APPLIED = 'platform/gpt-4.1-mini';

    beforeAll(async () => {
      [modelGw, refusedGw, missingGw] = await Promise.all([
        startFakeGatewayWs({ token: AGENT_TOKEN, reply: (m) => `erin: ${m}`, model: { provider: 'platform', model: 'gpt-4.1-mini' } }),
        startFakeGatewayWs({
          token: AGENT_TOKEN,
          model: { provider: 'platform', model: 'gpt-4.1-mini' },
          providerKey: { failure: 'refused', provider: 'platform' },
        }),
        startFakeGatewayWs({ token: AGENT_TOKEN, providerKey: { failure: 'missing', provider: 'openai' } }),
      ]);
      const owner = await web.signIn({ isAdmin: true });
      const res = await call(web, '/api/provision', {
        cookie: owner.cookie,
        json: { autoProvision: true, name: 'Erin Helper', aiProvider: 'openai', apiKey: 'sk-erin-own-key' },
      });
      expect(res.status).toBe(200);
      erin = { ...owner, agentId: res.body.agentId };
      await pointAgent(erin.agentId, modelGw.httpUrl);
    });

    afterAll(async () => {
      await Promise.all([modelGw?.close(), refusedGw?.close(), missingGw?.close()]);
    });

    it('the agent record names the model its host applies and where it comes from: OpenClaw’s default and unknown told apart', async () => {
      const one = await call(web, `/api/agents/${erin.agentId}`, { cookie: erin.cookie });
      expect([one.status, one.body.agent.model, one.body.agent.modelSource]).toEqual([200, APPLIED, 'platform']);
      const list = await call(web, '/api/agents', { cookie: erin.cookie });
      expect(
        list.body.agents.map((a: { id: string; model: string | null; modelSource: string }) => [a.id, a.model, a.modelSource]),
      ).toEqual([[erin.agentId, APPLIED, 'platform']]);
      // Alice's configuration names no model: OpenClaw's own default, not the platform's.
      const alices = (await call(web, `/api/agents/${alice.agentId}`, { cookie: alice.cookie })).body.agent;
      expect([alices.model, alices.modelSource]).toEqual([null, 'default']);
      // Dave's agent is one no backend runs: unknown.
      const daves = (await call(web, '/api/agents/agt_never_deployed', { cookie: dave.cookie })).body.agent;
      expect([daves.model, daves.modelSource]).toEqual([null, 'unknown']);
    });

    it('REST chat answers, stores and records the applied model, priced from it', async () => {
      const res = await call(web, '/api/chat', { cookie: erin.cookie, json: { message: 'price me' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ reply: 'erin: price me', agentId: erin.agentId, model: APPLIED });
      const history = await call(web, `/api/chat?agentId=${erin.agentId}`, { cookie: erin.cookie });
      expect(history.body.messages.at(-1)).toMatchObject({ role: 'assistant', model: APPLIED });
      const row = (await usageRows(web, erin.userId)).at(-1);
      expect(row).toMatchObject({ kind: 'chat', agent_id: erin.agentId, model: APPLIED });
      const expected = llmCostUsd('gpt-4.1-mini', res.body.usage.prompt_tokens, res.body.usage.completion_tokens);
      expect(expected).toBeGreaterThan(0);
      expect(Number(row?.cost_usd)).toBeCloseTo(expected ?? -1, 6);
    });

    it('WebSocket chat records the model OpenClaw reports for the turn, priced from it; Costs shows it per model', async () => {
      const res = await call(web, '/api/gateway/chat', { cookie: erin.cookie, json: { message: 'over the socket' } });
      expect([res.status, res.body.reply]).toEqual([200, 'erin: over the socket']);
      const row = (await usageRows(web, erin.userId)).at(-1);
      expect(row).toMatchObject({ kind: 'chat', agent_id: erin.agentId, model: APPLIED });
      const expected = llmCostUsd('gpt-4.1-mini', row?.prompt_tokens ?? 0, row?.completion_tokens ?? 0);
      expect(Number(row?.cost_usd)).toBeCloseTo(expected ?? -1, 6);

      const cost = await call(web, '/api/dashboard/cost', { cookie: erin.cookie });
      expect(cost.status).toBe(200);
      expect(cost.body.modelBreakdown.map((m: { model: string }) => m.model)).toEqual([APPLIED]);
      expect(cost.body.agents).toMatchObject([{ name: 'Erin Helper', model: APPLIED, calls: 2 }]);
    });

    // `POST /api/chat` (the dashboard's chat) says it in words; `POST /api/gateway/chat` keeps spec §4.4's fixed
    // 500 `Chat failed` for every failure.
    it('a refused or missing provider key is said in words on the REST chat, and nothing is recorded', async () => {
      const ledger = (await usageRows(web, erin.userId)).length;
      const stored = (await chatRows(web, erin.userId)).length;
      const refusedWords = "The agent's AI provider refused its key (openai): check the key in the agent's configuration";
      const missingWords = "The agent has no key for its AI provider (openai): add one in the agent's configuration";
      try {
        // OpenClaw names the provider the platform wrote from Erin's key `platform`; she chose `openai`.
        await pointAgent(erin.agentId, refusedGw.httpUrl);
        const asked = async (path: string) => {
          const res = await call(web, path, { cookie: erin.cookie, json: { message: 'hello?' } });
          return [res.status, res.body];
        };
        expect(await asked('/api/chat')).toEqual([502, { error: refusedWords }]);
        expect(await asked('/api/gateway/chat')).toEqual([500, { error: 'Chat failed' }]);
        // The plugin gateway's `agent` plugin says it in the same words, in its own error shape.
        const plugin = await call(web, '/api/v1/gateway', { cookie: erin.cookie, json: { plugin: 'agent', message: 'hello?' } });
        expect([plugin.status, plugin.body]).toMatchObject([502, { error: 'plugin_failed', plugin: 'agent', message: refusedWords }]);
        await pointAgent(erin.agentId, missingGw.httpUrl);
        expect(await asked('/api/chat')).toEqual([502, { error: missingWords }]);
        expect(await asked('/api/gateway/chat')).toEqual([500, { error: 'Chat failed' }]);
      } finally {
        await pointAgent(erin.agentId, modelGw.httpUrl);
      }
      // Both fakes answered the turns as OpenClaw does (REST 401 `authentication_error`, WebSocket `error` events).
      expect(refusedGw.httpReceived.filter((r) => r.path === '/v1/chat/completions')).toHaveLength(2);
      expect(missingGw.received.filter((f) => f.method === 'chat.send')).toHaveLength(1);
      expect((await usageRows(web, erin.userId)).length).toBe(ledger);
      expect((await chatRows(web, erin.userId)).length).toBe(stored);
      // The gateway's own refusal of its token is not a provider key: still `Agent gateway failed`.
      const wrong = await withAliceAt(wrongTokenGw.httpUrl, () => call(web, '/api/chat', { cookie: alice.cookie, json: { message: 'x' } }));
      expect(wrong.body).toEqual({ error: 'Agent gateway failed' });
    });
  });
});
