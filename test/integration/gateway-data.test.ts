import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@aop/core';
import { chatSend, connectGateway, cronAdd } from '@aop/gateway-client';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { recordUsage } from '../../apps/web/src/modules/usage/usage.service.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const AGENT_TOKEN = 'agent-gateway-token-for-data-tests';
const PLATFORM_TOKEN = 'platform-gateway-token-for-data-tests';
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-gateway-data', HMAC_SECRET: 'hmac-secret-for-gateway-data' };
const DAY_MS = 86_400_000;
/** The web service's clock: fixed, so day buckets are computed from the same instant here and there. */
const NOW = Date.now();
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const todayStart = Math.floor(NOW / DAY_MS) * DAY_MS;
const ENDPOINTS = ['/api/channels', '/api/sessions', '/api/daily-brief', '/api/metrics', '/api/credits', '/api/models'];

type Signed = { cookie: string; userId: string };

// Spec §4.18 "Chat and gateway data": the user's own agent gateway (owner) and the shared platform gateway reached through
// web GATEWAY_URL + backend PLATFORM_GATEWAY_TOKEN (alice, bob), both speaking OpenClaw's protocol v4 on 127.0.0.1.
describe('chat and gateway data', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let agentGateway: FakeGatewayWs;
  let sharedGateway: FakeGatewayWs;
  let owner: Signed;
  let alice: Signed;
  let bob: Signed;
  let agentId: string;
  let deadUrl: string;

  const get = (path: string, who?: Signed | { authorization: string }, base = web.url) =>
    request(`${base}${path}`, {
      headers: who ? ('cookie' in who ? { cookie: who.cookie } : { authorization: who.authorization }) : {},
    });
  const pointAgentAt = (url: string) => web.database.db.kysely.updateTable('agents').set({ url }).where('id', '=', agentId).execute();

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-gateway-data-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    agentGateway = await startFakeGatewayWs({
      token: AGENT_TOKEN,
      channels: {
        telegram: [
          {
            accountId: 'default',
            enabled: true,
            configured: true,
            running: true,
            connected: true,
            dmPolicy: 'pairing',
            tokenSource: 'env',
            lastInboundAt: NOW - 60_000,
            lastOutboundAt: null,
          },
        ],
        discord: [{ accountId: 'default', enabled: true, configured: true, running: false, lastError: 'Discord rejected the token' }],
      },
    });
    sharedGateway = await startFakeGatewayWs({ token: PLATFORM_TOKEN });
    const dead = await startFakeGatewayWs({ token: AGENT_TOKEN });
    deadUrl = dead.httpUrl;
    await dead.close();

    backend = await startBackend({ ...SHARED, GATEWAY_SHARED_TOKEN: AGENT_TOKEN, PLATFORM_GATEWAY_TOKEN: PLATFORM_TOKEN }, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, GATEWAY_URL: sharedGateway.httpUrl }, { clock: () => NOW });

    owner = await web.signIn({ isAdmin: true });
    alice = await web.signIn();
    bob = await web.signIn();
    const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie: owner.cookie } });
    expect([res.status, res.body.error]).toEqual([200, undefined]);
    agentId = res.body.agentId;
    await pointAgentAt(agentGateway.httpUrl);

    // Two conversations on the owner's own gateway.
    const own = await connectGateway({ url: agentGateway.url, token: AGENT_TOKEN });
    await chatSend(own, { sessionKey: 'main', message: 'hello agent', timeoutMs: 5_000 });
    await chatSend(own, { sessionKey: 'research', message: 'find papers', timeoutMs: 5_000 });
    await cronAdd(own, {
      name: 'owner-daily',
      schedule: { kind: 'every', everyMs: 3_600_000 },
      sessionTarget: 'main',
      wakeMode: 'now',
      payload: { kind: 'systemEvent', text: 'check in' },
    });
    await own.close();

    // On the shared gateway: the platform's own session, alice's over the WebSocket (stored lower-cased, as OpenClaw
    // stores keys) and over REST, bob's, and one tagged cron job each.
    const shared = await connectGateway({ url: sharedGateway.url, token: PLATFORM_TOKEN });
    await chatSend(shared, { sessionKey: 'main', message: 'platform only', timeoutMs: 5_000 });
    await chatSend(shared, { sessionKey: `aop-owner:${alice.userId}:main`.toLowerCase(), message: 'alice here', timeoutMs: 5_000 });
    await chatSend(shared, { sessionKey: `aop-owner:${bob.userId}:main`, message: 'bob here', timeoutMs: 5_000 });
    for (const [who, name] of [
      [alice, 'alice-job'],
      [bob, 'bob-job'],
    ] as const) {
      await cronAdd(shared, {
        name,
        description: `aop-owner:${who.userId}`,
        schedule: { kind: 'every', everyMs: 600_000 },
        sessionTarget: 'isolated',
        wakeMode: 'now',
        payload: { kind: 'agentTurn', message: 'hi' },
        delivery: { mode: 'none' },
      });
    }
    await shared.close();
    const rest = await request(`${sharedGateway.httpUrl}/v1/chat/completions`, {
      json: { model: 'openclaw', user: `aop-owner:${alice.userId}:notes`, messages: [{ role: 'user', content: 'note this' }] },
      headers: { authorization: `Bearer ${PLATFORM_TOKEN}` },
    });
    expect(rest.status).toBe(200);

    // The usage ledger, the user's records and the operators' bridge bus.
    const kysely = web.database.db.kysely;
    const usage = [
      {
        userId: owner.userId,
        agentId,
        agentName: 'My agent',
        promptTokens: 60,
        completionTokens: 40,
        costUsd: '0.01',
        at: NOW - 3_600_000,
      },
      {
        userId: owner.userId,
        agentId,
        agentName: 'My agent',
        promptTokens: 30,
        completionTokens: 20,
        costUsd: '0.02',
        at: NOW - 7_200_000,
      },
      { userId: owner.userId, agentName: 'Old bot', promptTokens: 5, completionTokens: 5, costUsd: '0.5', at: NOW - 2 * DAY_MS },
      { userId: owner.userId, agentName: 'Old bot', promptTokens: 1, completionTokens: 1, costUsd: '1', at: NOW - 10 * DAY_MS },
      { userId: alice.userId, agentName: 'Alice bot', promptTokens: 999, completionTokens: 999, costUsd: '9.99', at: NOW - 60_000 },
    ];
    for (const u of usage) await recordUsage(kysely, { ...u, kind: 'llm', model: 'fake-1', at: new Date(u.at) });
    await kysely.updateTable('users').set({ credits: 50, referral_code: 'OWNER-REF' }).where('id', '=', owner.userId).execute();
    const task = (userId: string, name: string, nextRun: number, enabled = true) => ({
      id: newId('task'),
      user_id: userId,
      name,
      schedule: 'every:60m',
      prompt: 'do it',
      enabled,
      next_run_at: new Date(nextRun),
    });
    await kysely
      .insertInto('scheduled_tasks')
      .values([
        task(owner.userId, 'overdue report', NOW - 1_800_000),
        task(owner.userId, 'tomorrow report', todayStart + DAY_MS + 3_600_000),
        task(owner.userId, 'paused report', NOW - 600_000, false),
        task(alice.userId, 'alice task', NOW - 600_000),
      ])
      .execute();
    const bridge = (channel: string, at: number) => ({
      id: newId('bridgeMessage'),
      sender: 'atlas-main',
      channel,
      content: 'status',
      priority: 'normal',
      created_at: new Date(at),
    });
    await kysely
      .insertInto('bridge_messages')
      .values([
        bridge('general', NOW - 1000),
        bridge('general', NOW - 2000),
        bridge('alerts', NOW - 3000),
        bridge('general', NOW - 2 * DAY_MS),
      ])
      .execute();
  }, 60_000);

  afterAll(async () => {
    await agentGateway.close();
    await sharedGateway.close();
    await web.close();
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('every endpoint answers 401 Unauthorized without a session or with a bad API key', async () => {
    for (const path of ENDPOINTS) {
      const anonymous = await get(path);
      expect([path, anonymous.status, anonymous.body]).toEqual([path, 401, { error: 'Unauthorized' }]);
      const badKey = await get(path, { authorization: 'Bearer sk_not-a-real-key' });
      expect([path, badKey.status]).toEqual([path, 401]);
    }
  });

  it('accepts an API key as well as the session cookie', async () => {
    const created = await request(`${web.url}/api/keys`, { json: { name: 'data reader' }, headers: { cookie: alice.cookie } });
    expect(created.status).toBe(201);
    const res = await get('/api/sessions', { authorization: `Bearer ${created.body.key}` });
    expect(res.status).toBe(200);
    expect(res.body.source).toBe('gateway');
  });

  describe('GET /api/sessions', () => {
    it("lists the owner's sessions on their own gateway, keys as the gateway stores them", async () => {
      const res = await get('/api/sessions', owner);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ total: 2, source: 'gateway' });
      expect(res.body.sessions.map((s: { sessionKey: string }) => s.sessionKey).sort()).toEqual(['agent:main:main', 'agent:main:research']);
      for (const s of res.body.sessions) {
        expect(s).toEqual({
          sessionKey: expect.any(String),
          status: 'done',
          inputTokens: expect.any(Number),
          outputTokens: expect.any(Number),
          model: 'fake-1',
          lastActivity: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        });
        expect(s.inputTokens).toBeGreaterThan(0);
        expect(s.outputTokens).toBeGreaterThan(0);
      }
      expect(agentGateway.received.filter((f) => f.method === 'sessions.list').at(-1)?.params).toEqual({ limit: 50, agentId: 'main' });
    });

    it('keeps only the caller’s sessions on the shared gateway and shows them without the owner tag', async () => {
      const a = await get('/api/sessions', alice);
      expect(a.status).toBe(200);
      expect(a.body).toMatchObject({ total: 2, source: 'gateway' });
      expect(a.body.sessions.map((s: { sessionKey: string }) => s.sessionKey).sort()).toEqual([
        'agent:main:main',
        'agent:main:openai-user:notes',
      ]);
      expect(JSON.stringify(a.body).toLowerCase()).not.toContain('aop-owner');
      const b = await get('/api/sessions', bob);
      expect(b.body).toMatchObject({ total: 1, sessions: [{ sessionKey: 'agent:main:main', status: 'done' }] });
      // The platform's own `main` session is nobody's: 4 sessions exist there, each user sees theirs only.
      expect(sharedGateway.sessions.size).toBe(4);
    });

    it('clamps limit to 1..200 and refuses a limit that is not an integer', async () => {
      const one = await get('/api/sessions?limit=1', owner);
      expect(one.body).toMatchObject({ total: 2, source: 'gateway' });
      expect(one.body.sessions).toHaveLength(1);
      const zero = await get('/api/sessions?limit=0', alice);
      expect(zero.status).toBe(200);
      expect(zero.body.sessions).toHaveLength(1);
      expect(zero.body.total).toBe(2);
      expect((await get('/api/sessions?limit=5000', owner)).status).toBe(200);
      expect(agentGateway.received.filter((f) => f.method === 'sessions.list').at(-1)?.params).toEqual({ limit: 200, agentId: 'main' });
      for (const bad of ['abc', '1.5', '10e2', '']) {
        const res = await get(`/api/sessions?limit=${bad}`, owner);
        if (bad === '') expect(res.status).toBe(200);
        else expect([bad, res.status, res.body]).toEqual([bad, 400, { error: 'limit must be an integer' }]);
      }
    });

    it('answers 200 with an empty list and the reason when the gateway is unreachable', async () => {
      await pointAgentAt(deadUrl);
      try {
        const res = await get('/api/sessions', owner);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ sessions: [], total: 0, error: expect.stringMatching(/^Gateway unreachable/), source: 'gateway-error' });
      } finally {
        await pointAgentAt(agentGateway.httpUrl);
      }
    });
  });

  describe('GET /api/channels', () => {
    it("reports the owner's channels live from their gateway, never a token", async () => {
      // A token someone wrote into the stored config must not come back either.
      await web.database.db.kysely
        .insertInto('agent_configs')
        .values({
          user_id: owner.userId,
          config: JSON.stringify({ channels: { telegram: { enabled: true, dmPolicy: 'allowlist', botToken: 'secret-bot-token' } } }),
        })
        .execute();
      const res = await get('/api/channels', owner);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ agentId, agentName: 'My agent', source: 'gateway' });
      expect(res.body.error).toBeUndefined();
      const [telegram, discord, whatsapp] = res.body.channels;
      expect(telegram).toEqual({
        name: 'telegram',
        configured: true,
        enabled: true,
        dmPolicy: 'pairing',
        running: true,
        connected: true,
        linked: null,
        status: 'connected',
        lastError: null,
        lastInboundAt: new Date(NOW - 60_000).toISOString(),
        lastOutboundAt: null,
      });
      expect(discord).toMatchObject({ name: 'discord', configured: true, status: 'error', lastError: 'Discord rejected the token' });
      expect(whatsapp).toMatchObject({ name: 'whatsapp', configured: false, status: 'not-configured' });
      expect(JSON.stringify(res.body)).not.toMatch(/secret|tokenSource/);
    });

    it('falls back to the stored config (source config, with the reason) when the gateway is unreachable', async () => {
      await pointAgentAt(deadUrl);
      try {
        const res = await get('/api/channels', owner);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ agentId, source: 'config', error: expect.stringMatching(/^Gateway unreachable/) });
        expect(
          res.body.channels.map((c: { name: string; configured: boolean; status: string }) => [c.name, c.configured, c.status]),
        ).toEqual([
          ['telegram', true, 'unknown'],
          ['discord', false, 'not-configured'],
          ['whatsapp', false, 'not-configured'],
        ]);
        expect(res.body.channels[0]).toMatchObject({ dmPolicy: 'allowlist', running: null, connected: null });
        expect(JSON.stringify(res.body)).not.toContain('secret-bot-token');
      } finally {
        await pointAgentAt(agentGateway.httpUrl);
      }
    });

    it('answers from the stored config for a user without an agent: the shared gateway’s channels are not theirs', async () => {
      const before = sharedGateway.received.filter((f) => f.method === 'channels.status').length;
      const res = await get('/api/channels', bob);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        agentId: null,
        agentName: null,
        source: 'config',
        channels: ['telegram', 'discord', 'whatsapp'].map((name) =>
          expect.objectContaining({ name, configured: false, status: 'not-configured' }),
        ),
      });
      expect(sharedGateway.received.filter((f) => f.method === 'channels.status')).toHaveLength(before);
    });
  });

  describe('GET /api/models', () => {
    it("lists the gateway's models and the platform's", async () => {
      const res = await get('/api/models', owner);
      expect(res.status).toBe(200);
      expect(res.body.source).toBe('gateway');
      expect(res.body.models[0]).toEqual({
        id: 'fake-1',
        name: 'Fake 1',
        provider: 'fake',
        source: 'gateway',
        contextWindow: 128000,
        reasoning: false,
        available: true,
      });
      const platform = res.body.models.filter((m: { source: string }) => m.source === 'platform');
      expect(platform.map((m: { id: string }) => m.id)).toEqual(web.config.demo.models.map((m) => m.id));
      expect(platform[0]).toMatchObject({ available: web.config.demo.llm !== undefined, contextWindow: null });
      expect(agentGateway.received.filter((f) => f.method === 'models.list').at(-1)?.params).toEqual({});
    });

    it('keeps the platform models and says why when the gateway is unreachable', async () => {
      await pointAgentAt(deadUrl);
      try {
        const res = await get('/api/models', owner);
        expect(res.status).toBe(200);
        expect(res.body.source).toBe('gateway-error');
        expect(res.body.error).toMatch(/^Gateway unreachable/);
        expect(res.body.models.every((m: { source: string }) => m.source === 'platform')).toBe(true);
        expect(res.body.models).toHaveLength(web.config.demo.models.length);
      } finally {
        await pointAgentAt(agentGateway.httpUrl);
      }
    });
  });

  describe('GET /api/metrics', () => {
    it('sums the last 7 UTC days by day and by agent, from the caller’s ledger rows only', async () => {
      const res = await get('/api/metrics', owner);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        days: 7,
        since: new Date(todayStart - 6 * DAY_MS).toISOString(),
        until: new Date(todayStart + DAY_MS).toISOString(),
        totals: { calls: 3, tokens: 160, promptTokens: 95, completionTokens: 65, costUsd: 0.53 },
        currency: 'USD',
      });
      expect(res.body.daily).toHaveLength(7);
      expect(res.body.daily.at(-1).date).toBe(isoDay(NOW));
      const byDate = (ms: number) => res.body.daily.filter((d: { date: string }) => d.date === isoDay(ms));
      expect(byDate(NOW - 2 * DAY_MS)).toEqual([
        { date: isoDay(NOW - 2 * DAY_MS), calls: 1, tokens: 10, promptTokens: 5, completionTokens: 5, costUsd: 0.5 },
      ]);
      const recent = res.body.daily.filter(
        (d: { date: string }) => d.date === isoDay(NOW - 3_600_000) || d.date === isoDay(NOW - 7_200_000),
      );
      expect(recent.reduce((n: number, d: { calls: number }) => n + d.calls, 0)).toBe(2);
      expect(res.body.byAgent).toEqual([
        { agentId: null, name: 'Old bot', calls: 1, tokens: 10, promptTokens: 5, completionTokens: 5, costUsd: 0.5 },
        { agentId, name: 'My agent', calls: 2, tokens: 150, promptTokens: 90, completionTokens: 60, costUsd: 0.03 },
      ]);
    });

    it('widens to 30 days; clamps days to 1..90; refuses days that are not an integer', async () => {
      const month = await get('/api/metrics?days=30', owner);
      expect(month.body).toMatchObject({ days: 30, totals: { calls: 4, costUsd: 1.53 } });
      expect(month.body.daily).toHaveLength(30);
      expect((await get('/api/metrics?days=1000', owner)).body.days).toBe(90);
      const one = await get('/api/metrics?days=-3', owner);
      expect(one.body.days).toBe(1);
      expect(one.body.daily).toEqual([expect.objectContaining({ date: isoDay(NOW) })]);
      for (const bad of ['week', '7.5', '0x10']) {
        const res = await get(`/api/metrics?days=${bad}`, owner);
        expect([bad, res.status, res.body]).toEqual([bad, 400, { error: 'days must be an integer' }]);
      }
    });

    it('shows another user nothing of the owner’s usage', async () => {
      const res = await get('/api/metrics', bob);
      expect(res.body.totals).toEqual({ calls: 0, tokens: 0, promptTokens: 0, completionTokens: 0, costUsd: 0 });
      expect(res.body.byAgent).toEqual([]);
      expect(res.body.daily.every((d: { calls: number }) => d.calls === 0)).toBe(true);
    });
  });

  describe('GET /api/credits', () => {
    it('answers referral credits and the month-to-date usage cost', async () => {
      const monthStart = Date.UTC(new Date(NOW).getUTCFullYear(), new Date(NOW).getUTCMonth(), 1);
      const ownerRows = [
        { at: NOW - 3_600_000, cost: 0.01, tokens: 100 },
        { at: NOW - 7_200_000, cost: 0.02, tokens: 50 },
        { at: NOW - 2 * DAY_MS, cost: 0.5, tokens: 10 },
        { at: NOW - 10 * DAY_MS, cost: 1, tokens: 2 },
      ].filter((r) => r.at >= monthStart);
      const res = await get('/api/credits', owner);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        credits: 50,
        referralCredits: 50,
        referralCode: 'OWNER-REF',
        usage: {
          since: new Date(monthStart).toISOString(),
          calls: ownerRows.length,
          tokens: ownerRows.reduce((n, r) => n + r.tokens, 0),
          monthToDateUsd: Math.round(ownerRows.reduce((n, r) => n + r.cost, 0) * 10_000) / 10_000,
        },
        currency: 'USD',
      });
      const other = await get('/api/credits', bob);
      expect(other.body).toMatchObject({ credits: 0, referralCredits: 0, usage: { calls: 0, tokens: 0, monthToDateUsd: 0 } });
    });
  });

  describe('GET /api/daily-brief', () => {
    it('summarizes the last 24 hours for the owner: usage, agents, cron, bridge (operator), tasks due today', async () => {
      const res = await get('/api/daily-brief', owner);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        generatedAt: new Date(NOW).toISOString(),
        since: new Date(NOW - DAY_MS).toISOString(),
        usage: { calls: 2, tokens: 150, costUsd: 0.03 },
        agents: { total: 1, active: 1, items: [{ id: agentId, name: 'My agent', status: 'running', model: null }] },
        bridge: { messages: 3, byChannel: { general: 2, tasks: 0, alerts: 1 } },
        currency: 'USD',
      });
      expect(res.body.cron).toEqual({
        jobs: [
          {
            id: expect.any(String),
            name: 'owner-daily',
            enabled: true,
            schedule: { kind: 'every', everyMs: 3_600_000 },
            payload: { kind: 'systemEvent', text: 'check in' },
            lastRun: null,
            nextRun: expect.stringMatching(/^\d{4}-/),
          },
        ],
        total: 1,
        source: 'gateway',
      });
      expect(res.body.tasks).toEqual({
        total: 1,
        dueToday: [
          {
            id: expect.any(String),
            name: 'overdue report',
            agentId: null,
            schedule: 'every:60m',
            nextRun: new Date(NOW - 1_800_000).toISOString(),
            overdue: true,
          },
        ],
      });
    });

    it('gives a user on the shared gateway their own jobs and rows only, and no bridge traffic', async () => {
      const res = await get('/api/daily-brief', alice);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        usage: { calls: 1, costUsd: 9.99 },
        agents: { total: 0, active: 0, items: [] },
        bridge: null,
        tasks: { total: 1, dueToday: [{ name: 'alice task', overdue: true }] },
        cron: { total: 1, source: 'gateway', jobs: [{ name: 'alice-job' }] },
      });
      const b = await get('/api/daily-brief', bob);
      expect(b.body).toMatchObject({
        usage: { calls: 0 },
        tasks: { total: 0, dueToday: [] },
        cron: { total: 1, jobs: [{ name: 'bob-job' }] },
      });
    });

    it('keeps the database parts and reports the cron part as gateway-error when the gateway is unreachable', async () => {
      await pointAgentAt(deadUrl);
      try {
        const res = await get('/api/daily-brief', owner);
        expect(res.status).toBe(200);
        expect(res.body.cron).toEqual({
          jobs: [],
          total: 0,
          error: expect.stringMatching(/^Gateway unreachable/),
          source: 'gateway-error',
        });
        expect(res.body.usage.calls).toBe(2);
        expect(res.body.tasks.total).toBe(1);
      } finally {
        await pointAgentAt(agentGateway.httpUrl);
      }
    });
  });

  it('an agent the backend has no token for: every gateway read falls back with the reason', async () => {
    // The web knows the agent (with an address) but the backend does not: no token, so no gateway to use.
    const carol = await web.signIn();
    await web.database.db.kysely
      .insertInto('agents')
      .values({ id: newId('agent'), user_id: carol.userId, name: 'Stray', status: 'running', url: agentGateway.httpUrl })
      .execute();
    const reason = 'No gateway available: No gateway token available';
    expect((await get('/api/sessions', carol)).body).toEqual({ sessions: [], total: 0, error: reason, source: 'gateway-error' });
    const models = await get('/api/models', carol);
    expect(models.body).toMatchObject({ source: 'gateway-error', error: reason });
    expect(models.body.models).toHaveLength(web.config.demo.models.length);
    expect((await get('/api/channels', carol)).body).toMatchObject({ agentName: 'Stray', source: 'config', error: reason });
    const brief = await get('/api/daily-brief', carol);
    expect(brief.body.cron).toEqual({ jobs: [], total: 0, error: reason, source: 'gateway-error' });
    expect(brief.body.agents).toMatchObject({ total: 1, active: 1, items: [{ name: 'Stray', status: 'running' }] });
  });
});
