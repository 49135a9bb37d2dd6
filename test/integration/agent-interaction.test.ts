import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { openCredential } from '../../apps/web/src/modules/chat/agent-interaction.service.js';
import { ownerTagFor } from '../../apps/web/src/platform/clients/user-gateway.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const AGENT_TOKEN = 'agent-gateway-token-for-agent-panel-tests';
const PLATFORM_TOKEN = 'platform-gateway-token-for-agent-panel-tests';
const SHARED = {
  INTERNAL_API_KEY: 'internal-key-for-agent-panel-tests',
  HMAC_SECRET: 'hmac-secret-for-agent-panel-tests',
  TRUST_PROXY: '127.0.0.1',
};
const TIMEOUTS = { GATEWAY_CHAT_TIMEOUT_MS: '2000', GATEWAY_REQUEST_TIMEOUT_MS: '2000' };

// Every request comes from its own address, so the per-client limits only bite where tested.
let lastIp = 0;
const nextIp = () => `198.18.9.${(++lastIp % 250) + 1}`;

interface CallOptions {
  cookie?: string;
  json?: unknown;
  body?: string;
  method?: string;
  headers?: Record<string, string>;
}

function call(web: TestWeb, path: string, opts: CallOptions = {}) {
  return request(`${web.url}${path}`, {
    ...(opts.method ? { method: opts.method } : {}),
    ...(opts.json !== undefined ? { json: opts.json } : {}),
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    headers: { 'x-forwarded-for': nextIp(), ...(opts.cookie ? { cookie: opts.cookie } : {}), ...opts.headers },
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

// Spec §4.18 "Agent interaction": GET /api/agent (the dashboard's agent panel) and POST /api/agent actions, end to end:
// web → backend (gateway token, agent host) → OpenClaw-protocol gateways on 127.0.0.1.
describe('GET, POST /api/agent', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  /** No shared platform gateway. */
  let web: TestWeb;
  /** With the shared platform gateway for users without an agent. */
  let sharedWeb: TestWeb;
  /** Its backend does not answer. */
  let offlineWeb: TestWeb;
  let aliceGw: FakeGatewayWs;
  let bobGw: FakeGatewayWs;
  let platformGw: FakeGatewayWs;
  let deadUrl: string;
  let alice: { cookie: string; userId: string; agentId: string };
  let bob: { cookie: string; userId: string; agentId: string };
  /** Signed in, no agent. */
  let carol: { cookie: string; userId: string };

  const db = () => web.database.db.kysely;
  const pointAgent = (agentId: string, url: string) => db().updateTable('agents').set({ url }).where('id', '=', agentId).execute();
  const credentialRows = (userId: string) => db().selectFrom('agent_credentials').selectAll().where('user_id', '=', userId).execute();
  const post = (target: TestWeb, cookie: string, json: unknown) => call(target, '/api/agent', { cookie, json });

  /** An agent deployed on the host through the real provisioning path; its gateway is `gw`. */
  async function agentOwner(name: string, gw: FakeGatewayWs) {
    const owner = await web.signIn({ isAdmin: true });
    const res = await call(web, '/api/provision', { cookie: owner.cookie, json: { autoProvision: true, name } });
    expect(res.status).toBe(200);
    const agentId: string = res.body.agentId;
    await pointAgent(agentId, gw.httpUrl);
    return { ...owner, agentId };
  }

  async function withAgentAt<T>(agentId: string, url: string, back: string, fn: () => Promise<T>): Promise<T> {
    await pointAgent(agentId, url);
    try {
      return await fn();
    } finally {
      await pointAgent(agentId, back);
    }
  }

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-agent-panel-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      // The stand-in runtime is plain Node: it runs on this process's Node, whatever Node 24 install the machine has.
      nodeBin: process.execPath,
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    [aliceGw, bobGw, platformGw] = await Promise.all([
      startFakeGatewayWs({ token: AGENT_TOKEN, reply: (m) => `alice agent: ${m}` }),
      startFakeGatewayWs({ token: AGENT_TOKEN, reply: (m) => `bob agent: ${m}` }),
      startFakeGatewayWs({ token: PLATFORM_TOKEN, reply: (m) => `platform: ${m}` }),
    ]);
    deadUrl = `http://127.0.0.1:${await closedPort()}`;
    backend = await startBackend({ ...SHARED, GATEWAY_SHARED_TOKEN: AGENT_TOKEN, PLATFORM_GATEWAY_TOKEN: PLATFORM_TOKEN }, { host });
    [web, sharedWeb, offlineWeb] = await Promise.all([
      startWeb({ ...SHARED, ...TIMEOUTS, BACKEND_API_URL: backend.url }),
      startWeb({ ...SHARED, ...TIMEOUTS, BACKEND_API_URL: backend.url, GATEWAY_URL: platformGw.httpUrl }),
      startWeb({ ...SHARED, ...TIMEOUTS, BACKEND_API_URL: deadUrl }),
    ]);
    alice = await agentOwner('Alice Panel', aliceGw);
    bob = await agentOwner('Bob Panel', bobGw);
    carol = await web.signIn();
  }, 60_000);

  afterAll(async () => {
    await Promise.all([web?.close(), sharedWeb?.close(), offlineWeb?.close()]);
    await backend?.close();
    await host?.shutdown();
    await Promise.all([aliceGw?.close(), bobGw?.close(), platformGw?.close()]);
    await rm(work, { recursive: true, force: true });
  });

  describe('authentication and the action', () => {
    it('401 Unauthorized without a session or API key, before the body is looked at', async () => {
      for (const opts of [{}, { cookie: 'service-session=0000' }, { headers: { authorization: 'Bearer sk_not_a_key' } }] as CallOptions[]) {
        const get = await call(web, '/api/agent', opts);
        expect([get.status, get.body]).toEqual([401, { error: 'Unauthorized' }]);
        for (const body of [
          { json: { action: 'chat', message: 'hi' } },
          { body: 'not json', headers: { 'content-type': 'application/json' } },
        ]) {
          const res = await call(web, '/api/agent', { ...opts, ...body, headers: { ...opts.headers, ...body.headers }, method: 'POST' });
          expect([res.status, res.body]).toEqual([401, { error: 'Unauthorized' }]);
        }
      }
    });

    it('400 for a missing, unknown or non-string action; 400 Invalid request body for a body that is not a JSON object', async () => {
      const INVALID_ACTION_MESSAGE = 'Invalid action. Must be: chat, create-session, update-skill, set-credential';
      for (const json of [
        {},
        { action: 'delete-everything' },
        { action: 42 },
        { action: ['chat'] },
        { action: 'CHAT' },
        { message: 'hi' },
      ]) {
        const res = await post(web, alice.cookie, json);
        expect([res.status, res.body]).toEqual([400, { error: INVALID_ACTION_MESSAGE }]);
      }
      for (const opts of [
        { body: '{"action":', headers: { 'content-type': 'application/json' } },
        { body: '[1,2]', headers: { 'content-type': 'application/json' } },
        { body: 'action=chat', headers: { 'content-type': 'text/plain' } },
        {},
      ]) {
        const res = await call(web, '/api/agent', { cookie: alice.cookie, method: 'POST', ...opts });
        expect([res.status, res.body]).toEqual([400, { error: 'Invalid request body' }]);
      }
    });

    it('accepts a user API key as well as the session', async () => {
      const created = await call(web, '/api/keys', { cookie: bob.cookie, json: { name: 'panel' } });
      expect(created.status).toBe(201);
      const auth = { authorization: `Bearer ${created.body.key}` };
      const get = await call(web, '/api/agent', { headers: auth });
      expect([get.status, get.body.agent?.id]).toEqual([200, bob.agentId]);
      const chat = await call(web, '/api/agent', { headers: auth, json: { action: 'chat', message: 'via key' } });
      expect([chat.status, chat.body.reply]).toEqual([200, 'bob agent: via key']);
    });
  });

  describe('POST action chat', () => {
    it('answers as POST /api/chat does and stores the turn', async () => {
      const res = await post(web, alice.cookie, { action: 'chat', message: 'hello panel', sessionKey: 'panel' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: true,
        reply: 'alice agent: hello panel',
        agentId: alice.agentId,
        sessionKey: 'panel',
        messageId: expect.stringMatching(/^msg_/),
        // The model Alice's agent runs: its applied configuration names none (provisioned without a key), so unknown.
        model: null,
        usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) },
      });
      // The REST call carries the user's stable, owner-tagged `user`, as POST /api/chat's does.
      expect(aliceGw.httpReceived.at(-1)).toMatchObject({
        path: '/v1/chat/completions',
        authorization: `Bearer ${AGENT_TOKEN}`,
        body: { user: `${ownerTagFor(alice.userId)}:panel` },
      });
      const history = await call(web, '/api/chat?sessionKey=panel', { cookie: alice.cookie });
      expect(history.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
        ['user', 'hello panel'],
        ['assistant', 'alice agent: hello panel'],
      ]);
    });

    it('400 for a bad message, sessionKey or agentId; 404 for an agent that is not the caller’s; 404 without any agent', async () => {
      for (const json of [
        { action: 'chat' },
        { action: 'chat', message: '' },
        { action: 'chat', message: 7 },
        { action: 'chat', message: ['x'] },
      ]) {
        const res = await post(web, alice.cookie, json);
        expect([res.status, res.body]).toEqual([400, { error: 'Message required' }]);
      }
      const badKey = await post(web, alice.cookie, { action: 'chat', message: 'hi', sessionKey: 'a:b' });
      expect(badKey.status).toBe(400);
      expect(badKey.body.error).toMatch(/^Invalid sessionKey/);
      for (const agentId of [5, '', 'x'.repeat(65)]) {
        const res = await post(web, alice.cookie, { action: 'chat', message: 'hi', agentId });
        expect([res.status, res.body]).toEqual([400, { error: 'Invalid agentId' }]);
      }
      const foreign = await post(web, alice.cookie, { action: 'chat', message: 'hi', agentId: bob.agentId });
      expect([foreign.status, foreign.body]).toEqual([404, { error: 'Agent not found' }]);
      const nobody = await post(web, carol.cookie, { action: 'chat', message: 'anyone?' });
      expect([nobody.status, nobody.body]).toEqual([404, { error: 'No agent found' }]);
    });
  });

  describe('POST action create-session', () => {
    it('creates the session with sessions.create, the one the chat action with that key then runs in', async () => {
      const before = aliceGw.received.length;
      const res = await post(web, alice.cookie, { action: 'create-session', sessionKey: 'research', label: 'Research' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, sessionKey: 'research', label: 'Research', agentId: alice.agentId });
      const frames = aliceGw.received.slice(before);
      expect(frames.map((f) => f.method)).toEqual(['connect', 'sessions.create']);
      const key = `openai-user:${ownerTagFor(alice.userId)}:research`;
      expect(frames[1]?.params).toEqual({ key: `agent:main:${key}`, label: 'Research' });
      const session = aliceGw.sessions.get(`agent:main:${key}`);
      expect(session?.label).toBe('Research');

      const chat = await post(web, alice.cookie, { action: 'chat', message: 'first question', sessionKey: 'research' });
      expect(chat.status).toBe(200);
      // Same gateway session: no second one was made for the turn.
      expect(aliceGw.sessions.get(`agent:main:${key}`)?.sessionId).toBe(session?.sessionId);
      expect(aliceGw.sessions.get(`agent:main:${key}`)?.inputTokens).toBeGreaterThan(0);

      // Creating it again adopts it; a fresh key is minted when none is given.
      expect((await post(web, alice.cookie, { action: 'create-session', sessionKey: 'research' })).body).toEqual({
        success: true,
        sessionKey: 'research',
        label: null,
        agentId: alice.agentId,
      });
      const fresh = await post(web, alice.cookie, { action: 'create-session' });
      expect(fresh.status).toBe(200);
      expect(fresh.body.sessionKey).toMatch(/^[0-9a-f-]{36}$/);
      expect(aliceGw.sessions.has(`agent:main:openai-user:${ownerTagFor(alice.userId)}:${fresh.body.sessionKey}`)).toBe(true);
    });

    it('400 for a bad sessionKey, label or agentId; 409 for a label in use; 404 for another user’s agent', async () => {
      for (const sessionKey of [5, 'has space', 'agent:main:x', 'x'.repeat(101), ['a']]) {
        const res = await post(web, alice.cookie, { action: 'create-session', sessionKey });
        expect(res.status).toBe(400);
        expect(res.body.error).toMatch(/^Invalid sessionKey/);
      }
      for (const label of [5, '', '   ', 'x'.repeat(101), { text: 'x' }]) {
        const res = await post(web, alice.cookie, { action: 'create-session', label });
        expect([res.status, res.body]).toEqual([400, { error: 'label must be a non-empty string of at most 100 characters' }]);
      }
      expect((await post(web, alice.cookie, { action: 'create-session', agentId: 9 })).body).toEqual({ error: 'Invalid agentId' });
      await post(web, alice.cookie, { action: 'create-session', sessionKey: 'one', label: 'Taken' });
      const clash = await post(web, alice.cookie, { action: 'create-session', sessionKey: 'two', label: 'Taken' });
      expect([clash.status, clash.body]).toEqual([409, { error: 'Session label already in use' }]);
      const foreign = await post(web, alice.cookie, { action: 'create-session', agentId: bob.agentId });
      expect([foreign.status, foreign.body]).toEqual([404, { error: 'Agent not found' }]);
      expect([...bobGw.sessions.keys()].some((k) => k.includes(ownerTagFor(alice.userId)))).toBe(false);
    });

    it('404 without any agent or shared gateway; 502 when the gateway is down', async () => {
      const nobody = await post(web, carol.cookie, { action: 'create-session' });
      expect([nobody.status, nobody.body]).toEqual([404, { error: 'No agent found' }]);
      const down = await withAgentAt(alice.agentId, deadUrl, aliceGw.httpUrl, () =>
        post(web, alice.cookie, { action: 'create-session', sessionKey: 'lost' }),
      );
      expect([down.status, down.body]).toEqual([502, { error: 'Agent gateway unreachable' }]);
    });

    it('on the shared gateway: owner-tagged key and label, so two users never collide and each lists only their own', async () => {
      const gina = await sharedWeb.signIn();
      const hugo = await sharedWeb.signIn();
      for (const who of [gina, hugo]) {
        const res = await post(sharedWeb, who.cookie, { action: 'create-session', sessionKey: 'notes', label: 'Notes' });
        expect(res.body).toEqual({ success: true, sessionKey: 'notes', label: 'Notes', agentId: null });
      }
      const ginaKey = `agent:main:openai-user:${ownerTagFor(gina.userId)}:notes`;
      expect(platformGw.sessions.get(ginaKey)?.label).toBe(`${ownerTagFor(gina.userId)}:Notes`);
      expect(platformGw.received.filter((f) => f.method === 'connect').at(-1)?.params.auth).toEqual({ token: PLATFORM_TOKEN });

      const panel = await call(sharedWeb, '/api/agent', { cookie: gina.cookie });
      expect(panel.status).toBe(200);
      expect(panel.body.agent).toBeNull();
      expect(panel.body.health).toBe('healthy');
      expect(panel.body.sessions.list).toEqual([
        { sessionKey: 'agent:main:openai-user:notes', status: 'done', messageCount: 0, lastActivity: expect.any(String) },
      ]);
      expect(panel.body.sessions.total).toBe(1);
    });
  });

  describe('POST action update-skill', () => {
    it('updates the caller’s skill with the rules of /api/skills', async () => {
      const installed = await call(web, '/api/skills', { cookie: alice.cookie, json: { name: 'web-search', description: 'old' } });
      expect(installed.status).toBe(201);
      const res = await post(web, alice.cookie, {
        action: 'update-skill',
        name: 'web-search',
        enabled: false,
        description: '  Searches the web  ',
        config: { engine: 'ddg' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: true,
        skill: {
          ...installed.body.skill,
          enabled: false,
          description: 'Searches the web',
          config: { engine: 'ddg' },
        },
      });
      const listed = await call(web, '/api/skills', { cookie: alice.cookie });
      expect(listed.body.skills).toEqual([res.body.skill]);
    });

    it('404 Skill not found for an unknown skill or another user’s; 400 for bad fields', async () => {
      const unknown = await post(web, alice.cookie, { action: 'update-skill', name: 'no-such-skill', enabled: true });
      expect([unknown.status, unknown.body]).toEqual([404, { error: 'Skill not found' }]);
      const foreign = await post(web, bob.cookie, { action: 'update-skill', name: 'web-search', enabled: true });
      expect([foreign.status, foreign.body]).toEqual([404, { error: 'Skill not found' }]);
      const cases: [unknown, string][] = [
        [{ action: 'update-skill' }, 'Invalid skill name'],
        [{ action: 'update-skill', name: 'Web Search' }, 'Invalid skill name'],
        [{ action: 'update-skill', name: 7 }, 'Invalid skill name'],
        [{ action: 'update-skill', name: 'web-search', enabled: 'yes' }, 'enabled must be a boolean'],
        [{ action: 'update-skill', name: 'web-search', config: [1] }, 'config must be an object'],
        [{ action: 'update-skill', name: 'web-search', description: 5 }, 'description must be a string'],
        [{ action: 'update-skill', name: 'web-search', agentId: 5 }, 'agentId must be a string'],
      ];
      for (const [json, error] of cases) {
        const res = await post(web, alice.cookie, json);
        expect([res.status, res.body]).toEqual([400, { error }]);
      }
      const skill = (await call(web, '/api/skills', { cookie: alice.cookie })).body.skills[0];
      expect(skill).toMatchObject({ enabled: false, description: 'Searches the web' });
    });
  });

  describe('POST action set-credential', () => {
    it('stores a skill credential sealed: never returned, never in clear in its row', async () => {
      const value = 'ghp_secretValueForTheGithubSkill_123';
      const res = await post(web, alice.cookie, { action: 'set-credential', name: 'github', value: `${value}\n` });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: true,
        credential: { name: 'github', kind: 'skill', agentId: null, updatedAt: expect.any(String), applied: false },
      });
      expect(JSON.stringify(res.body)).not.toContain(value);

      const rows = await credentialRows(alice.userId);
      expect(rows).toHaveLength(1);
      const row = rows[0]!;
      expect(row).toMatchObject({ name: 'github', kind: 'skill', agent_id: null });
      expect(JSON.stringify(row)).not.toContain(value);
      expect(row.value_enc).toMatch(/^v1\./);
      // Sealed for real, bound to its user, scope and name (the surrounding newline was dropped).
      expect(openCredential(web.config, row)).toBe(value);
      expect(() => openCredential(web.config, { ...row, name: 'gitlab' })).toThrow();
      expect(() => openCredential(web.config, { ...row, user_id: bob.userId })).toThrow();
      expect(() => openCredential(web.config, { ...row, agent_id: alice.agentId })).toThrow();

      // Saving again replaces it: still one row.
      const again = await post(web, alice.cookie, { action: 'set-credential', name: 'github', value: 'ghp_second' });
      expect(Date.parse(again.body.credential.updatedAt)).toBeGreaterThanOrEqual(Date.parse(res.body.credential.updatedAt));
      const after = await credentialRows(alice.userId);
      expect(after).toHaveLength(1);
      expect(openCredential(web.config, after[0]!)).toBe('ghp_second');
    });

    it('applies a channel token to the caller’s deployed agent through the backend, keeping its other tokens', async () => {
      const value = 'tg-bot-token-123456:ABCdef';
      const res = await post(web, alice.cookie, { action: 'set-credential', name: 'telegram', value });
      expect(res.status).toBe(200);
      expect(res.body.credential).toEqual({
        name: 'telegram',
        kind: 'channel',
        agentId: null,
        updatedAt: expect.any(String),
        applied: true,
      });
      expect(JSON.stringify(res.body)).not.toContain(value);
      expect((await host.spec(alice.agentId)).channelTokens).toMatchObject({ telegram: value });

      const scoped = await post(web, alice.cookie, {
        action: 'set-credential',
        name: 'discord',
        value: 'dc-token',
        agentId: alice.agentId,
      });
      expect(scoped.body.credential).toMatchObject({ name: 'discord', kind: 'channel', agentId: alice.agentId, applied: true });
      expect((await host.spec(alice.agentId)).channelTokens).toEqual({ telegram: value, discord: 'dc-token' });
      // Only alice's agent got them.
      expect((await host.spec(bob.agentId)).channelTokens ?? {}).toEqual({});
      await host.waitUntilReady(alice.agentId, { timeoutMs: 15_000 });
    });

    it('applies the LLM key as the agent’s own model provider key', async () => {
      const res = await post(web, bob.cookie, { action: 'set-credential', name: 'llm', value: 'sk-or-bob-own-key' });
      expect(res.body.credential).toMatchObject({ name: 'llm', kind: 'llm', applied: true });
      expect((await host.spec(bob.agentId)).llm).toMatchObject({
        apiKey: 'sk-or-bob-own-key',
        baseUrl: backend.config.aiBaseUrls.openrouter,
      });
      await host.waitUntilReady(bob.agentId, { timeoutMs: 15_000 });
    });

    it('stores but does not apply when there is no deployed agent or the backend is down', async () => {
      const res = await post(web, carol.cookie, { action: 'set-credential', name: 'whatsapp', value: 'wa-token' });
      expect(res.body.credential).toMatchObject({ name: 'whatsapp', kind: 'channel', agentId: null, applied: false });
      expect(await credentialRows(carol.userId)).toHaveLength(1);

      const offline = await offlineWeb.signIn();
      await offlineWeb.database.db.kysely
        .insertInto('agents')
        .values({ id: 'agt_offline_panel', user_id: offline.userId, name: 'Offline', status: 'running', url: aliceGw.httpUrl })
        .execute();
      const down = await post(offlineWeb, offline.cookie, { action: 'set-credential', name: 'telegram', value: 'tg-x' });
      expect([down.status, down.body.credential?.applied]).toEqual([200, false]);
    });

    it('400 for a bad name or value (never repeating the value), 404 for another user’s agent; nothing is stored', async () => {
      const before = (await credentialRows(alice.userId)).length;
      const secret = 'do-not-echo-this-secret';
      const badName = 'Invalid credential name: lower-case letters, digits, dash and underscore, at most 64 characters';
      const cases: [unknown, string][] = [
        [{ action: 'set-credential', value: secret }, badName],
        [{ action: 'set-credential', name: 'GitHub', value: secret }, badName],
        [{ action: 'set-credential', name: '-x', value: secret }, badName],
        [{ action: 'set-credential', name: 'x'.repeat(65), value: secret }, badName],
        [{ action: 'set-credential', name: 5, value: secret }, badName],
        [{ action: 'set-credential', name: 'github' }, 'value is required'],
        [{ action: 'set-credential', name: 'github', value: '   ' }, 'value is required'],
        [{ action: 'set-credential', name: 'github', value: 42 }, 'value is required'],
        [{ action: 'set-credential', name: 'github', value: 'x'.repeat(4097) }, 'value must be at most 4096 characters'],
        [{ action: 'set-credential', name: 'github', value: secret, agentId: 3 }, 'Invalid agentId'],
      ];
      for (const [json, error] of cases) {
        const res = await post(web, alice.cookie, json);
        expect([res.status, res.body]).toEqual([400, { error }]);
      }
      const foreign = await post(web, alice.cookie, { action: 'set-credential', name: 'telegram', value: secret, agentId: bob.agentId });
      expect([foreign.status, foreign.body]).toEqual([404, { error: 'Agent not found' }]);
      expect((await credentialRows(alice.userId)).length).toBe(before);
      expect((await host.spec(bob.agentId)).channelTokens?.telegram).toBeUndefined();
    });
  });

  describe('GET /api/agent', () => {
    it('one answer for the panel: the agent, gateway health and sessions, memory, skills and credentials (no values)', async () => {
      // Memory: 11 rows for the agent or user-wide, the newest 10 shown.
      for (let i = 0; i < 11; i++) {
        const res = await call(web, '/api/memory', {
          cookie: alice.cookie,
          json: { content: `note ${i}`, tags: ['t'], ...(i % 2 ? { agentId: alice.agentId } : {}) },
        });
        expect(res.status).toBe(201);
      }
      const res = await call(web, '/api/agent', { cookie: alice.cookie });
      expect(res.status).toBe(200);
      const body = res.body;
      expect(Object.keys(body).sort()).toEqual(['agent', 'credentials', 'health', 'healthDetail', 'memory', 'sessions', 'skills']);
      expect(body.agent).toEqual({ id: alice.agentId, name: 'Alice Panel', status: expect.any(String) });
      const stored = await db().selectFrom('agents').select('status').where('id', '=', alice.agentId).executeTakeFirstOrThrow();
      expect(body.agent.status).toBe(stored.status);
      expect(body.health).toBe('healthy');
      expect(body.healthDetail).toEqual({ ok: true, status: 'live' });

      // Sessions from alice's gateway, newest first, at most 10.
      expect(body.sessions.total).toBe(aliceGw.sessions.size);
      expect(body.sessions.list.length).toBe(Math.min(10, aliceGw.sessions.size));
      expect(body.sessions.list.map((s: { sessionKey: string }) => s.sessionKey)).toContain(
        `agent:main:openai-user:${ownerTagFor(alice.userId)}:research`,
      );

      expect(body.memory.count).toBe(11);
      expect(body.memory.latest).toHaveLength(10);
      expect(body.memory.latest[0]).toEqual({
        id: expect.stringMatching(/^mem_/),
        agentId: null,
        content: 'note 10',
        tags: ['t'],
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(body.memory.latest.map((m: { content: string }) => m.content)).toEqual(
        [10, 9, 8, 7, 6, 5, 4, 3, 2, 1].map((i) => `note ${i}`),
      );

      expect(body.skills).toEqual([expect.objectContaining({ name: 'web-search', enabled: false, agentId: null })]);

      expect(body.credentials).toEqual([
        { name: 'discord', kind: 'channel', agentId: alice.agentId, updatedAt: expect.any(String) },
        { name: 'github', kind: 'skill', agentId: null, updatedAt: expect.any(String) },
        { name: 'telegram', kind: 'channel', agentId: null, updatedAt: expect.any(String) },
      ]);
      for (const value of ['ghp_second', 'tg-bot-token-123456:ABCdef', 'dc-token', 'v1.'])
        expect(JSON.stringify(body)).not.toContain(value);
    });

    it('agentId: the rows that apply to that agent (its own and user-wide); another user’s agent is 404', async () => {
      const res = await call(web, `/api/agent?agentId=${alice.agentId}`, { cookie: alice.cookie });
      expect(res.status).toBe(200);
      expect(res.body.agent.id).toBe(alice.agentId);
      expect(res.body.health).toBe('healthy');
      expect(res.body.memory.count).toBe(11);
      expect(res.body.credentials.map((c: { name: string }) => c.name)).toEqual(['discord', 'github', 'telegram']);

      // A second agent of alice's, not deployed: no gateway, and only the user-wide rows apply.
      await db()
        .insertInto('agents')
        .values({ id: 'agt_alice_second', user_id: alice.userId, name: 'Second', status: 'provisioning' })
        .execute();
      const second = await call(web, '/api/agent?agentId=agt_alice_second', { cookie: alice.cookie });
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({
        agent: { id: 'agt_alice_second', name: 'Second', status: 'provisioning' },
        health: 'unreachable',
        healthDetail: { ok: false, error: 'Agent is not deployed' },
        sessions: { total: 0, active: 0, list: [] },
      });
      expect(second.body.memory.count).toBe(6);
      expect(second.body.credentials.map((c: { name: string }) => c.name)).toEqual(['github', 'telegram']);
      // Without agentId the panel still shows the deployed agent chat goes to.
      expect((await call(web, '/api/agent', { cookie: alice.cookie })).body.agent.id).toBe(alice.agentId);

      for (const [cookie, agentId] of [
        [alice.cookie, bob.agentId],
        [bob.cookie, 'agt_alice_second'],
        [alice.cookie, 'agt_nobody'],
      ] as const) {
        const res404 = await call(web, `/api/agent?agentId=${agentId}`, { cookie });
        expect([res404.status, res404.body]).toEqual([404, { error: 'Agent not found' }]);
      }
      const bad = await call(web, `/api/agent?agentId=${'x'.repeat(65)}`, { cookie: alice.cookie });
      expect([bad.status, bad.body]).toEqual([400, { error: 'Invalid agentId' }]);
    });

    it('isolation: each user sees only their own agent, sessions, memory, skills and credentials', async () => {
      const res = await call(web, '/api/agent', { cookie: bob.cookie });
      expect(res.status).toBe(200);
      expect(res.body.agent.id).toBe(bob.agentId);
      expect(res.body.memory).toEqual({ count: 0, latest: [] });
      expect(res.body.skills).toEqual([]);
      expect(res.body.credentials).toEqual([{ name: 'llm', kind: 'llm', agentId: null, updatedAt: expect.any(String) }]);
      const keys = res.body.sessions.list.map((s: { sessionKey: string }) => s.sessionKey);
      expect(keys.some((k: string) => k.includes(alice.userId.toLowerCase()) || k.includes(alice.userId))).toBe(false);
    });

    it('an unreachable gateway is still 200: health unreachable, no sessions, the rows as usual', async () => {
      const down = await withAgentAt(alice.agentId, deadUrl, aliceGw.httpUrl, () => call(web, '/api/agent', { cookie: alice.cookie }));
      expect(down.status).toBe(200);
      expect(down.body).toMatchObject({
        agent: { id: alice.agentId },
        health: 'unreachable',
        healthDetail: { ok: false, error: 'Gateway unreachable' },
        sessions: { total: 0, active: 0, list: [] },
        memory: { count: 11 },
      });
      expect(down.body.credentials).toHaveLength(3);

      const none = await call(web, '/api/agent', { cookie: carol.cookie });
      expect(none.status).toBe(200);
      expect(none.body).toMatchObject({
        agent: null,
        health: 'unreachable',
        healthDetail: { ok: false, error: 'No agent found' },
        sessions: { total: 0, active: 0, list: [] },
        memory: { count: 0, latest: [] },
        skills: [],
      });

      const offline = await offlineWeb.signIn();
      await offlineWeb.database.db.kysely
        .insertInto('agents')
        .values({ id: 'agt_offline_panel_2', user_id: offline.userId, name: 'Offline', status: 'running', url: aliceGw.httpUrl })
        .execute();
      const noBackend = await call(offlineWeb, '/api/agent', { cookie: offline.cookie });
      expect(noBackend.status).toBe(200);
      expect(noBackend.body).toMatchObject({
        agent: { id: 'agt_offline_panel_2', name: 'Offline', status: 'running' },
        health: 'unreachable',
        healthDetail: { ok: false, error: 'Backend unreachable' },
        sessions: { total: 0, active: 0, list: [] },
      });
    });
  });

  it('429 after 20 credential saves a minute from one client', async () => {
    const headers = { 'x-forwarded-for': '198.18.10.1', cookie: carol.cookie };
    for (let i = 0; i < 20; i++) {
      const res = await request(`${web.url}/api/agent`, { headers, json: { action: 'set-credential', name: 'notion', value: `v${i}` } });
      expect(res.status).toBe(200);
    }
    const limited = await request(`${web.url}/api/agent`, { headers, json: { action: 'set-credential', name: 'notion', value: 'v20' } });
    expect([limited.status, limited.body]).toEqual([429, { error: 'Too many requests' }]);
    // Other actions are not counted against it.
    const skill = await request(`${web.url}/api/agent`, { headers, json: { action: 'update-skill', name: 'nothing-here' } });
    expect(skill.status).toBe(404);
  });
});
