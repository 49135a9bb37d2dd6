import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PLAN_NAMES, agentLimitFor, isPaidPlan } from '@aop/core';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request, startFakeHostingApi } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const SHARED = { INTERNAL_API_KEY: 'internal-key-for-e2e-tests', HMAC_SECRET: 'hmac-secret-for-e2e-tests', TRUST_PROXY: '127.0.0.1' };
let ip = 0;
const from = () => ({ 'x-forwarded-for': `198.18.0.${++ip % 250}` });

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// Spec §4.15 (web provisioning and proxies), §3.2, §7 (402/403/429/502/503), §8 limits: web → backend → agent host.
describe('provisioning an agent from the web API', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-e2e-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend(SHARED, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });
  });
  afterAll(async () => {
    await web.close();
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  async function customer(plan = 'solo', subscription = 'active') {
    const signed = await web.signIn();
    await web.database.db.kysely
      .updateTable('users')
      .set({ plan, subscription_status: subscription })
      .where('id', '=', signed.userId)
      .execute();
    return signed;
  }
  const provision = (cookie: string | undefined, json: unknown, target = web) =>
    request(`${target.url}/api/provision`, { json, headers: { ...from(), ...(cookie ? { cookie } : {}) } });

  it('provisions: the record moves to running, the gateway runs, the runtime is on the user', async () => {
    const { cookie, userId } = await customer();
    const res = await provision(cookie, { name: 'Helper', telegramToken: 'tg-token' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      userId,
      agentId: expect.stringMatching(/^agt_/),
      subdomain: expect.stringMatching(/^helper-/),
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      status: 'running',
      streamKey: null,
      liveStreamId: null,
    });
    // The progress stream follows the gateway until it is ready.
    const events = await (await fetch(`${web.url}/api/agents/${res.body.agentId}/events`, { headers: { cookie } })).text();
    const frames = events.split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('event: done\ndata: {"status":"running","ready":true}');
    const statuses = frames.filter((f) => f.startsWith('event: status')).map((f) => JSON.parse(f.split('data: ')[1]!));
    expect(statuses.at(-1)).toMatchObject({ agentId: res.body.agentId, status: 'running', live: true, ready: true });
    expect((await fetch(`${res.body.url}/healthz`)).status).toBe(200);

    const list = await request(`${web.url}/api/agents`, { headers: { cookie } });
    expect(list.body).toMatchObject({ count: 1, status: 'ok' });
    expect(list.body.agents[0]).toMatchObject({
      id: res.body.agentId,
      name: 'Helper',
      status: 'running',
      websocketUrl: res.body.url.replace('http', 'ws'),
    });
    const provisioned = await request(`${web.url}/api/agents/provision`, { headers: { cookie } });
    expect(provisioned.body.agents).toEqual([
      {
        id: res.body.agentId,
        name: 'Helper',
        status: 'running',
        subdomain: res.body.subdomain,
        url: res.body.url,
        plan: 'solo',
        createdAt: expect.any(String),
      },
    ]);
    const one = await request(`${web.url}/api/agents/${res.body.agentId}`, { headers: { cookie } });
    expect(one.body).toMatchObject({ status: 'ok', agent: { id: res.body.agentId } });

    const runtime = await request(`${web.url}/api/user/runtime`, { headers: { cookie } });
    expect(runtime.body).toEqual({ url: res.body.url, instanceId: res.body.agentId, token: expect.stringMatching(/^[0-9a-f]{48}$/) });

    const stop = await request(`${web.url}/api/instance/${userId}/stop`, { method: 'POST', headers: { cookie } });
    // The backend's answer, and the state the agent is in when the call answers (issue #19: once it is reached).
    expect(stop.body).toMatchObject({ success: true, status: 'stopped', agentId: res.body.agentId, state: 'stopped', pending: false });
    const stats = await request(`${web.url}/api/instance/${userId}/stats`, { headers: { cookie } });
    expect(stats.body).toMatchObject({ status: 'degraded', cpu: 'N/A', memory: 'N/A' });
    const start = await request(`${web.url}/api/instance/${userId}/start`, { method: 'POST', headers: { cookie } });
    expect(start.body).toMatchObject({ success: true, status: 'active', state: 'live', pending: false });
    // Live means the gateway is ready at the moment the call answers, with no further wait.
    expect((await request(`${web.url}/api/instance/${userId}/stats`, { headers: { cookie } })).body.status).toBe('ok');
    const stats2 = await request(`${web.url}/api/agents/${res.body.agentId}/stats`, { headers: { cookie } });
    expect(stats2.body).toMatchObject({ status: 'ok', stats: { agentId: res.body.agentId, status: 'active', network: 'N/A' } });
    expect(stats2.body.stats.pids).toBeGreaterThanOrEqual(1);
    // Configuration and verification pass through to the backend for the owner.
    const agentPath = `${web.url}/api/agents/${res.body.agentId}`;
    // A wizard-made agent stores no configuration of its own; what it runs is the host's default (no model named).
    expect((await request(`${agentPath}/config`, { headers: { cookie } })).body).toEqual({
      agentId: res.body.agentId,
      config: {},
      applied: { model: null, logLevel: null, modelSource: 'default' },
      backups: [],
    });
    const put = await request(`${agentPath}/config`, {
      method: 'PUT',
      json: { config: { logging: { level: 'debug' } } },
      headers: { cookie },
    });
    // The save keeps the configuration it replaced as the agent's first backup.
    expect(put.body).toEqual({
      success: true,
      agentId: res.body.agentId,
      config: { logging: { level: 'debug' } },
      backupId: expect.stringMatching(/^bkp_/),
      backups: [{ id: put.body.backupId, timestamp: expect.any(String) }],
    });
    expect((await request(`${agentPath}/config`, { method: 'PUT', json: { config: [1] }, headers: { cookie } })).status).toBe(400);
    const verified = await request(`${agentPath}/verify`, { json: { type: 'ens', verified: false }, headers: { cookie } });
    expect(verified.body).toMatchObject({
      success: true,
      verified: true,
      type: 'ens',
      verifierAddress: null,
      metadata: { verifiedBy: userId, source: 'web' },
    });
    expect((await request(`${agentPath}/verify`, { json: { type: 'sms' }, headers: { cookie } })).status).toBe(400);
    expect((await request(`${agentPath}/verify`, { method: 'DELETE', headers: { cookie } })).body).toMatchObject({ verified: false });
    const details = await request(`${web.url}/api/instance/${userId}`, { headers: { cookie } });
    expect(details.body).toMatchObject({ status: 'ok', instance: { id: res.body.agentId } });

    // Someone else can neither act on this instance nor see the agent.
    const other = await customer();
    const foreign = await request(`${web.url}/api/instance/${userId}/stop`, { method: 'POST', headers: { cookie: other.cookie } });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ success: false, status: 'error' });
    expect((await request(`${web.url}/api/agents/${res.body.agentId}`, { headers: { cookie: other.cookie } })).status).toBe(404);
  });

  it('401 unauthenticated, 402 free plan, 403 without an active subscription, 400 without a channel token', async () => {
    expect((await provision(undefined, { telegramToken: 't' })).status).toBe(401);
    const free = await customer('free', 'none');
    expect((await provision(free.cookie, { telegramToken: 't' })).status).toBe(402);
    const lapsed = await customer('solo', 'canceled');
    const forbidden = await provision(lapsed.cookie, { telegramToken: 't' });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ error: 'Active subscription required' });
    const paying = await customer();
    const noToken = await provision(paying.cookie, {});
    expect(noToken.status).toBe(400);
    const badProvider = await provision(paying.cookie, { telegramToken: 't', aiProvider: 'deepinfra' });
    expect(badProvider.status).toBe(400);
  });

  it('every tier: an unpaid plan is 402, a paid one meets its catalogue agent limit (429) and no sooner', async () => {
    const agents = (userId: string, start: number, end: number) =>
      web.database.db.kysely
        .insertInto('agents')
        .values(
          Array.from({ length: end - start }, (_, i) => ({
            id: `agt_lim_${userId}_${start + i}`,
            user_id: userId,
            name: 'A',
            status: 'running',
          })),
        )
        .execute();
    const biggestLimit = Math.max(...PLAN_NAMES.map(agentLimitFor).filter(Number.isFinite));
    for (const plan of [...PLAN_NAMES, 'mystery']) {
      const { cookie, userId } = await customer(plan);
      if (!isPaidPlan(plan)) {
        const refused = await provision(cookie, {});
        expect(refused.status, plan).toBe(402);
        expect(refused.body).toEqual({ error: 'A paid plan (solo or higher) is required to provision agents' });
        continue;
      }
      const limit = agentLimitFor(plan);
      // Below the limit the checks go on to the channel token (400); at it, 429. A plan without a limit (network)
      // is still admitted with as many agents as the biggest limited plan allows.
      const below = Number.isFinite(limit) ? limit - 1 : biggestLimit;
      if (below > 0) await agents(userId, 0, below);
      expect((await provision(cookie, {})).status, `${plan} with ${below} agents`).toBe(400);
      if (!Number.isFinite(limit)) continue;
      await agents(userId, below, limit);
      const full = await provision(cookie, {});
      expect(full.status, plan).toBe(429);
      expect(full.body).toEqual({ error: `Agent limit reached for the ${plan} plan (${limit})` });
    }
  });

  it('a customer cannot give an agent a bigger tier than their plan (the tier sets its resources)', async () => {
    const solo = await customer('solo');
    for (const tier of ['network', 'collective', 'enterprise', 'made-up']) {
      const res = await provision(solo.cookie, { autoProvision: true, tier });
      expect(res.status, tier).toBe(403);
      expect(res.body).toEqual({ error: `The ${tier} tier is not included in the solo plan` });
    }
    const label = await customer('label');
    const smaller = await provision(label.cookie, { autoProvision: true, tier: 'collective' });
    expect(smaller.status).toBe(200);
    const row = await web.database.db.kysely.selectFrom('agents').select('plan').where('id', '=', smaller.body.agentId).executeTakeFirst();
    expect(row?.plan).toBe('collective');
    // The legacy ladder has `scale` between `pro` and `enterprise`.
    const scale = await customer('scale');
    expect((await provision(scale.cookie, { autoProvision: true, tier: 'enterprise' })).status).toBe(403);
    expect((await provision(scale.cookie, { autoProvision: true, tier: 'pro' })).status).toBe(200);
  });

  it('429 at the plan limit; admins skip subscription and limit; business agents need no channel token', async () => {
    const solo = await customer('solo');
    expect((await provision(solo.cookie, { agentType: 'business' })).status).toBe(200);
    const second = await provision(solo.cookie, { agentType: 'business' });
    expect(second.status).toBe(429);
    const admin = await web.signIn({ isAdmin: true });
    expect((await provision(admin.cookie, { autoProvision: true })).status).toBe(200);
  });

  it('the agents rate limit: 5 provisioning calls per minute per client', async () => {
    const user = await customer('network');
    const same = from();
    const answers = [];
    for (let i = 0; i < 6; i++)
      answers.push(await request(`${web.url}/api/provision`, { json: {}, headers: { ...same, cookie: user.cookie } }));
    expect(answers.slice(0, 5).every((a) => a.status === 400)).toBe(true);
    expect(answers[5]!.status).toBe(429);
  });

  it('POST /api/agents/clone is 501 whatever the body', async () => {
    const { cookie } = await customer();
    for (const json of [{}, { agentId: 'x' }])
      expect((await request(`${web.url}/api/agents/clone`, { json, headers: { cookie } })).status).toBe(501);
    expect((await request(`${web.url}/api/agents/clone`)).body).toMatchObject({ status: 'ok' });
  });
});

describe('provisioning when the backend fails', () => {
  let html: ReturnType<typeof createServer>;
  let htmlUrl: string;
  beforeAll(async () => {
    html = createServer((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<h1>Bad gateway</h1>');
    });
    await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
    htmlUrl = `http://127.0.0.1:${(html.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((r) => html.close(() => r())));

  it('502 when no path works (a non-JSON answer counts as a failure); the record ends in error', async () => {
    const web = await startWeb({ ...SHARED, BACKEND_API_URL: htmlUrl, BACKEND_API_FALLBACK_URL: 'http://127.0.0.1:9' });
    try {
      const { cookie, userId } = await web.signIn({ plan: 'solo' });
      const res = await request(`${web.url}/api/provision`, { json: { telegramToken: 't' }, headers: { cookie } });
      expect(res.status).toBe(502);
      const rows = await web.database.db.kysely.selectFrom('agents').select('status').where('user_id', '=', userId).execute();
      expect(rows).toEqual([{ status: 'error' }]);
    } finally {
      await web.close();
    }
  });

  it('no backend answers: deploys directly through the hosting provider; both failing is 502', async () => {
    const hosting = await startFakeHostingApi({ apiKey: 'hosting-key' });
    const web = await startWeb({
      ...SHARED,
      BACKEND_API_URL: 'http://127.0.0.1:9',
      HOSTING_API_URL: hosting.url,
      HOSTING_API_KEY: 'hosting-key',
      HOSTING_PROJECT_ID: 'proj-1',
      HOSTING_ENVIRONMENT_ID: 'env-1',
      HOSTING_STATUS_POLL_MS: '50',
    });
    try {
      const { cookie, userId } = await web.signIn({ isAdmin: true });
      // The provider keeps the deployment in progress until the test lets it finish.
      hosting.nextStatuses.push(['DEPLOYING']);
      const res = await request(`${web.url}/api/provision`, { json: { telegramToken: 'tg-direct' }, headers: { cookie } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: true,
        userId,
        agentId: expect.stringMatching(/^agt_/),
        status: 'deploying',
        url: 'https://svc-1.hosting.test',
        controlUiUrl: expect.stringMatching(
          /^https:\/\/svc-1\.hosting\.test\/#gatewayUrl=wss%3A%2F%2Fsvc-1\.hosting\.test&token=[0-9a-f]{48}$/,
        ),
      });
      expect(res.body.subdomain).toBeUndefined();
      expect(hosting.calls.map((c) => c.operation)).toEqual([
        'serviceCreate',
        'variableCollectionUpsert',
        'serviceInstanceUpdate',
        'serviceDomainCreate',
        'serviceInstanceDeployV2',
      ]);
      expect(hosting.calls[0]!.variables.input).toMatchObject({ projectId: 'proj-1', environmentId: 'env-1' });
      expect(hosting.calls[3]!.variables.input.targetPort).toBe(18789);
      const env = hosting.calls[1]!.variables.input.variables as Record<string, string>;
      expect(env.TELEGRAM_BOT_TOKEN).toBe('tg-direct');
      for (const secret of ['INTERNAL_API_KEY', 'HMAC_SECRET', 'DATABASE_URL', 'SESSION_SECRET', 'ENCRYPTION_KEY'])
        expect(env[secret]).toBeUndefined();
      expect(JSON.stringify(env)).not.toContain(SHARED.INTERNAL_API_KEY);
      const rows = await web.database.db.kysely.selectFrom('agents').select(['status', 'url']).where('user_id', '=', userId).execute();
      expect(rows).toEqual([{ status: 'deploying', url: 'https://svc-1.hosting.test' }]);

      // The gateway token is kept sealed on the record with the provider's ids; the owner gets it from the runtime.
      const agentId = res.body.agentId as string;
      const token = new URL(res.body.controlUiUrl).hash.split('token=')[1]!;
      const stored = await web.database.db.kysely.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirstOrThrow();
      const deploymentId = [...hosting.deployments.keys()][0]!;
      expect(stored).toMatchObject({ hosting_service_id: 'svc-1', hosting_deployment_id: deploymentId });
      expect(stored.gateway_token_sealed).toMatch(/^v1\./);
      expect(stored.gateway_token_sealed).not.toContain(token);
      const runtime = await request(`${web.url}/api/user/runtime`, { headers: { cookie } });
      expect(runtime.body).toEqual({ url: 'https://svc-1.hosting.test', instanceId: agentId, token });
      expect(JSON.stringify((await request(`${web.url}/api/agents/${agentId}`, { headers: { cookie } })).body)).not.toContain('sealed');

      // Polled in the background: deploying → running once the provider's deployment succeeds, seen by
      // GET /api/agents/:id and on the progress stream.
      const events = new AbortController();
      const stream = await fetch(`${web.url}/api/agents/${agentId}/events`, { headers: { cookie }, signal: events.signal });
      const seen: string[] = [];
      const reading = (async () => {
        const decoder = new TextDecoder();
        let buffered = '';
        for await (const chunk of stream.body!) {
          buffered += decoder.decode(chunk as Uint8Array, { stream: true });
          for (const frame of buffered.split('\n\n').slice(0, -1)) {
            if (frame.startsWith('event: status')) seen.push(JSON.parse(frame.split('data: ')[1]!).status);
          }
          buffered = buffered.slice(buffered.lastIndexOf('\n\n') + 2);
          if (seen.includes('running')) break;
        }
      })();
      await until(async () => seen.includes('deploying'));
      const polls = hosting.calls.filter((c) => c.operation === 'deployment').length;
      await until(() => hosting.calls.filter((c) => c.operation === 'deployment').length > polls);
      expect((await request(`${web.url}/api/agents/${agentId}`, { headers: { cookie } })).body.agent.status).toBe('deploying');
      hosting.setStatuses(deploymentId, ['SUCCESS']);
      await until(async () => (await request(`${web.url}/api/agents/${agentId}`, { headers: { cookie } })).body.agent.status === 'running');
      await reading;
      events.abort();
      expect(seen).toEqual(['deploying', 'running']);
      expect(hosting.calls.filter((c) => c.operation === 'deployment').every((c) => c.variables.id === deploymentId)).toBe(true);

      // A deployment that fails moves the record to error.
      hosting.nextStatuses.push(['BUILDING', 'FAILED']);
      const doomed = await request(`${web.url}/api/provision`, { json: { telegramToken: 'tg-doomed' }, headers: { cookie } });
      expect(doomed.body.status).toBe('deploying');
      await until(
        async () => (await request(`${web.url}/api/agents/${doomed.body.agentId}`, { headers: { cookie } })).body.agent.status === 'error',
      );

      hosting.failOn.add('serviceDomainCreate');
      const failed = await request(`${web.url}/api/provision`, { json: { telegramToken: 't' }, headers: { cookie } });
      expect(failed.status).toBe(502);
      expect(failed.body.error).toContain('serviceDomainCreate failed');
    } finally {
      await web.close();
      await hosting.close();
    }
  });

  it('agent stats fall back to the mock, marked status mock, when the backend is down', async () => {
    const web = await startWeb({ ...SHARED, BACKEND_API_URL: 'http://127.0.0.1:9' });
    try {
      const { cookie, userId } = await web.signIn();
      await web.database.db.kysely
        .insertInto('agents')
        .values({ id: 'agt_offline', user_id: userId, name: 'Offline', status: 'running' })
        .execute();
      const res = await request(`${web.url}/api/agents/agt_offline/stats`, { headers: { cookie } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        status: 'mock',
        stats: {
          agentId: 'agt_offline',
          messagesProcessed: 0,
          messagesPerHour: 0,
          averageResponseTime: 0,
          uptime: 0,
          successRate: 0,
          errorRate: 0,
          timestamp: expect.any(String),
        },
      });
      expect((await request(`${web.url}/api/agents/agt_missing/stats`, { headers: { cookie } })).status).toBe(404);
    } finally {
      await web.close();
    }
  });

  it('503 while the kill switch is on', async () => {
    const web = await startWeb({ ...SHARED, PROVISIONING_DISABLED: 'true' });
    try {
      const { cookie } = await web.signIn({ isAdmin: true });
      const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie } });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: 'Provisioning is temporarily disabled' });
    } finally {
      await web.close();
    }
  });
});
