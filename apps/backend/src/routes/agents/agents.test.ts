import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend, signedCaller, userCalls } from '../../backend.test-support.js';

const KEY = 'internal-key-for-agent-tests';
const HMAC = 'hmac-secret-for-agent-tests';

/** Headers the web service sends for a user (spec §5). */
/** Headers the web service sends for a user (spec §5). */
const as = (userId: string, email?: string, role?: string) => signedCaller({ internalKey: KEY, hmacSecret: HMAC }, userId, email, role);

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Spec §4.15 backend agent rows, §3.2 provisioning and image update, §5 auth; reference shapes in not-shown-facts.md.
// The agent host is the real local provider running a stand-in OpenClaw CLI that serves /healthz and /readyz.
describe('backend agents and deployments', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-backend-agents-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: {
        '1.0.0': await installFakeRuntime(join(work, 'rt-1.0.0'), '1.0.0'),
        '1.1.0': await installFakeRuntime(join(work, 'rt-1.1.0'), '1.1.0'),
        broken: await installFakeRuntime(join(work, 'rt-broken'), 'broken', { exitImmediately: true }),
      },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      readyTimeoutMs: 10_000,
      stopTimeoutMs: 5_000,
    });
    // Deployments are limited to 5 per minute per client: each test call comes from its own address.
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, TRUST_PROXY: '127.0.0.1' }, { host });
  });
  afterAll(async () => {
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  const call = userCalls(() => backend.url, { internalKey: KEY, hmacSecret: HMAC });
  const deploy = (userId: string, json: unknown) => call(userId, 'POST', '/deployments', json);

  it('POST /api/deployments validates its body', async () => {
    expect((await deploy('usr_v', {})).body).toEqual({ error: 'agentId is required' });
    expect((await deploy('usr_v', { agentId: 'bad id!' })).body).toEqual({ error: 'Invalid agentId' });
    expect((await deploy('usr_v', { agentId: 'agt_v1', config: {} })).body).toEqual({ error: 'telegramToken is required' });
    const provider = await deploy('usr_v', { agentId: 'agt_v1', config: { telegramToken: 't', aiProvider: 'cohere' } });
    expect(provider.status).toBe(400);
    expect(provider.body).toEqual({ error: 'Unsupported aiProvider' });
  });

  it('needs the internal key and a signed user context', async () => {
    const noKey = await request(`${backend.url}/api/agents`, { headers: { ...as('usr_a'), authorization: '' } });
    expect(noKey.status).toBe(401);
    const forged = await request(`${backend.url}/api/agents`, { headers: { ...as('usr_a'), 'x-user-id': 'usr_b' } });
    expect(forged.status).toBe(401);
    expect(forged.body).toEqual({ error: 'INVALID_SIGNATURE' });
  });

  it('deploys a gateway that becomes ready, lists and reads it, and hands its token to the owner only', async () => {
    const res = await deploy('usr_a', {
      agentId: 'agt_alpha',
      name: 'Alpha Bot',
      config: { telegramToken: 'tg-secret-token', plan: 'solo' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: 'deploy-agt_alpha',
      agentId: 'agt_alpha',
      subdomain: expect.stringMatching(/^alpha-bot-/),
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      status: 'active',
      openclawVersion: '1.0.0',
    });
    await host.waitUntilReady('agt_alpha', { timeoutMs: 10_000 });
    const health = await fetch(`${res.body.url}/healthz`);
    expect(await health.json()).toEqual({ ok: true, status: 'live' });

    const list = await call('usr_a', 'GET', '/agents');
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      expect.objectContaining({ id: 'agt_alpha', name: 'Alpha Bot', status: 'active', plan: 'solo', created: expect.any(String) }),
    ]);
    const one = await call('usr_a', 'GET', '/agents/agt_alpha');
    expect(one.body).toMatchObject({ id: 'agt_alpha', subdomain: res.body.subdomain, url: res.body.url });

    const token = await call('usr_a', 'GET', '/agents/agt_alpha/token');
    expect(token.body.token).toMatch(/^[0-9a-f]{48}$/);
    // The gateway takes that token, and the channel token reached only the agent's environment.
    const stateFile = await readFile(join(work, 'data', 'agents', 'agt_alpha', 'agent.json'), 'utf8');
    expect(stateFile).not.toContain('tg-secret-token');
    expect(stateFile).not.toContain(token.body.token);

    // Another user sees nothing of it.
    expect(await (await call('usr_b', 'GET', '/agents')).body).toEqual([]);
    for (const [method, path] of [
      ['GET', '/agents/agt_alpha'],
      ['GET', '/agents/agt_alpha/token'],
      ['POST', '/agents/agt_alpha/stop'],
    ] as const) {
      const res = await call('usr_b', method, path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Agent not found' });
    }
    const takeover = await deploy('usr_b', { agentId: 'agt_alpha', config: { telegramToken: 'x' } });
    expect(takeover.status).toBe(409);
  });

  it('stop, start, restart, repair and reset-memory answer the reference shapes', async () => {
    const stop = await call('usr_a', 'POST', '/agents/agt_alpha/stop');
    expect(stop.body).toEqual({ success: true, status: 'stopped' });
    expect((await call('usr_a', 'GET', '/agents/agt_alpha')).body.status).toBe('stopped');
    const restart = await call('usr_a', 'POST', '/agents/agt_alpha/restart');
    expect(restart.body).toEqual({
      success: true,
      status: 'active',
      healedLegacyModel: false,
      healMessage: 'skip:container-not-running',
      openclawVersion: '1.0.0',
    });
    await host.waitUntilReady('agt_alpha', { timeoutMs: 10_000 });
    expect((await call('usr_a', 'POST', '/agents/agt_alpha/start')).body).toEqual({ success: true, status: 'active' });
    expect((await call('usr_a', 'POST', '/agents/agt_alpha/repair')).body).toEqual({
      success: true,
      message: 'Agent repaired successfully',
    });
    await host.waitUntilReady('agt_alpha', { timeoutMs: 10_000 });
    expect((await call('usr_a', 'POST', '/agents/agt_alpha/reset-memory')).body).toEqual({
      success: true,
      message: 'Memory reset successfully',
    });
    await host.waitUntilReady('agt_alpha', { timeoutMs: 10_000 });
    const running = await until(
      () => call('usr_a', 'GET', '/agents/agt_alpha'),
      (r) => r.body.status === 'active',
    );
    expect(running.body.status).toBe('active');
  });

  it('GET /agents/:id/state follows the state machine: stopped, starting, live; never live before /readyz', async () => {
    await host.waitUntilReady('agt_alpha', { timeoutMs: 10_000 });
    const live = await call('usr_a', 'GET', '/agents/agt_alpha/state');
    expect(live.body).toEqual({
      agentId: 'agt_alpha',
      state: 'live',
      reason: 'the gateway answers /readyz',
      actions: ['stop', 'restart', 'update', 'repair', 'reset-memory'],
      host: 'running',
      live: true,
      ready: true,
      failing: [],
      sharesGatewayWith: [],
      wakesAt: null,
    });
    await call('usr_a', 'POST', '/agents/agt_alpha/stop');
    // A stopped agent says so: no probe of a gateway that is not there, no "degraded".
    expect((await call('usr_a', 'GET', '/agents/agt_alpha/state')).body).toMatchObject({
      state: 'stopped',
      actions: ['start', 'update', 'repair'],
      host: 'stopped',
      live: false,
      ready: null,
    });
    await call('usr_a', 'POST', '/agents/agt_alpha/start');
    // Every answer before the host saw /readyz ready is a state on the way, never `live`.
    const seen = new Set<string>();
    await until(
      async () => (await call('usr_a', 'GET', '/agents/agt_alpha/state')).body,
      (b: { state: string; host: string; ready: boolean | null }) => {
        seen.add(b.state);
        if (b.state === 'live') expect(b).toMatchObject({ host: 'running', ready: true });
        else expect(['starting', 'degraded']).toContain(b.state);
        return b.state === 'live';
      },
    );
    expect(seen.has('live')).toBe(true);
    // `?waitMs=`: a starting agent is answered once it is live, in one request (what a message waiting on a start uses).
    await call('usr_a', 'POST', '/agents/agt_alpha/restart');
    expect((await call('usr_a', 'GET', '/agents/agt_alpha/state')).body.state).not.toBe('live');
    const waited = await call('usr_a', 'GET', '/agents/agt_alpha/state?waitMs=10000');
    expect(waited.body).toMatchObject({ state: 'live', host: 'running', ready: true });
    // A stopped agent is answered at once: there is nothing to wait for.
    await call('usr_a', 'POST', '/agents/agt_alpha/stop');
    const asked = performance.now();
    expect((await call('usr_a', 'GET', '/agents/agt_alpha/state?waitMs=10000')).body.state).toBe('stopped');
    expect(performance.now() - asked).toBeLessThan(5_000);
    for (const bad of ['-1', '30001', 'soon', '1.5']) {
      expect((await call('usr_a', 'GET', `/agents/agt_alpha/state?waitMs=${bad}`)).status).toBe(400);
    }
    await call('usr_a', 'POST', '/agents/agt_alpha/start');
    await host.waitUntilReady('agt_alpha', { timeoutMs: 10_000 });
    // Another user's agent is 404 like a missing one.
    expect((await call('usr_b', 'GET', '/agents/agt_alpha/state')).status).toBe(404);
    expect((await call('usr_a', 'GET', '/agents/agt_missing/state')).status).toBe(404);
  });

  it('update: to a new version, and a failed one rolls back with a backup path (500)', async () => {
    const bad = await call('usr_a', 'POST', '/agents/agt_alpha/update', { image: 'not a version!' });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'Invalid docker image value' });

    // While the update runs (the host stops the gateway, backs up, starts the new version and waits for /readyz), the
    // state is `updating`, with no action offered: not `stopped`, not `degraded`.
    const updating = call('usr_a', 'POST', '/agents/agt_alpha/update', { image: '1.1.0' });
    const during = await until(
      async () => (await call('usr_a', 'GET', '/agents/agt_alpha/state')).body,
      (b: { state: string }) => b.state === 'updating',
      5_000,
    );
    expect(during).toMatchObject({ state: 'updating', actions: [] });
    const ok = await updating;
    expect(ok.status).toBe(200);
    expect((await call('usr_a', 'GET', '/agents/agt_alpha/state')).body.state).not.toBe('updating');
    expect(ok.body).toEqual({
      success: true,
      status: 'active',
      image: '1.1.0',
      previousImage: '1.0.0',
      backupPath: null,
      openclawVersion: '1.1.0',
    });

    const failed = await call('usr_a', 'POST', '/agents/agt_alpha/update', { image: 'broken' });
    expect(failed.status).toBe(500);
    expect(failed.body.backupPath).toEqual(expect.any(String));
    expect(existsSync(failed.body.backupPath)).toBe(true);
    expect(failed.body.previousImage).toBe('1.1.0');
    const after = await until(
      () => call('usr_a', 'GET', '/agents/agt_alpha'),
      (r) => r.body.status === 'active',
    );
    expect(after.body.openclawVersion).toBe('1.1.0');
  });

  it('PUT updates plan, provider and config; POST creates a pending record', async () => {
    const put = await call('usr_a', 'PUT', '/agents/agt_alpha', {
      plan: 'collective',
      aiProvider: 'google',
      config: { logging: { level: 'debug' } },
    });
    expect(put.body).toEqual({
      id: 'agt_alpha',
      plan: 'collective',
      aiProvider: 'gemini',
      subdomain: expect.any(String),
      status: 'active',
      message: 'Agent updated',
    });
    expect((await call('usr_a', 'PUT', '/agents/agt_alpha', { aiProvider: 'nope' })).status).toBe(400);
    // A new configuration keeps the one it replaced as a backup, as the configuration routes do (issue #19).
    const kept = await call('usr_a', 'GET', '/agents/agt_alpha/config');
    expect(kept.body.config).toEqual({ logging: { level: 'debug' } });
    expect(kept.body.backups).toHaveLength(1);
    const backup = await call('usr_a', 'GET', `/agents/agt_alpha/config/backups/${kept.body.backups[0].id}`);
    expect(backup.body.backup.config).not.toEqual({ logging: { level: 'debug' } });
    // A change of plan alone leaves the configuration and its backups alone.
    await call('usr_a', 'PUT', '/agents/agt_alpha', { plan: 'solo' });
    expect((await call('usr_a', 'GET', '/agents/agt_alpha/config')).body.backups).toHaveLength(1);

    expect((await call('usr_a', 'POST', '/agents', {})).body).toEqual({ error: 'Name required' });
    const created = await call('usr_a', 'POST', '/agents', { name: 'Later' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^agt_/),
      name: 'Later',
      agentId: created.body.id,
      status: 'pending',
      subdomain: expect.stringMatching(/^later-/),
      url: null,
      createdAt: expect.any(String),
    });
    const start = await call('usr_a', 'POST', `/agents/${created.body.id}/start`);
    expect(start.status).toBe(409);
    expect(start.body).toEqual({ error: 'Agent is not deployed' });
  });

  // Issue #20: a sleeping agent's wake time was decided from what its gateway said of its heartbeat and memory
  // maintenance; a change to those wakes it so that its gateway says what the new ones do. Other changes do not.
  it('a configuration change wakes a sleeping agent only when it touches its heartbeat or memory maintenance', async () => {
    await until(
      () => host.status('agt_alpha'),
      (s) => s.status === 'running',
    );
    const current = (await call('usr_a', 'GET', '/agents/agt_alpha/config')).body.config as Record<string, unknown>;
    await host.hibernate('agt_alpha');
    const quiet = await call('usr_a', 'PUT', '/agents/agt_alpha/config', { config: { ...current, logging: { level: 'warn' } } });
    expect(quiet.status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect((await host.status('agt_alpha')).status).toBe('hibernated');

    const beating = { ...current, logging: { level: 'warn' }, agents: { defaults: { heartbeat: { every: '1h', target: 'none' } } } };
    const woken = await call('usr_a', 'PUT', '/agents/agt_alpha/config', { config: beating });
    expect(woken.status).toBe(200);
    expect(['starting', 'running']).toContain((await host.status('agt_alpha')).status);
    await until(
      () => host.status('agt_alpha'),
      (s) => s.status === 'running',
    );
    expect((await host.spec('agt_alpha')).config).toEqual(beating);

    // The memory maintenance's settings count too; PUT /agents/:id takes the same path.
    await host.hibernate('agt_alpha');
    const dreamless = { ...beating, plugins: { entries: { 'memory-core': { config: { dreaming: { enabled: false } } } } } };
    expect((await call('usr_a', 'PUT', '/agents/agt_alpha', { config: dreamless })).status).toBe(200);
    expect(['starting', 'running']).toContain((await host.status('agt_alpha')).status);
    await until(
      () => host.status('agt_alpha'),
      (s) => s.status === 'running',
    );

    // So does restoring a backup that brings other such settings back (the one saved before the heartbeat change).
    await host.hibernate('agt_alpha');
    const { backups } = (await call('usr_a', 'GET', '/agents/agt_alpha/config')).body as { backups: Array<{ id: string }> };
    const quietBackup = await (async () => {
      for (const { id } of backups) {
        const { backup } = (await call('usr_a', 'GET', `/agents/agt_alpha/config/backups/${id}`)).body;
        if (JSON.stringify(backup.config) === JSON.stringify({ ...current, logging: { level: 'warn' } })) return id as string;
      }
      throw new Error('the backup of the quiet change is missing');
    })();
    expect((await call('usr_a', 'POST', '/agents/agt_alpha/config/restore', { backupId: quietBackup })).status).toBe(200);
    expect(['starting', 'running']).toContain((await host.status('agt_alpha')).status);
    await until(
      () => host.status('agt_alpha'),
      (s) => s.status === 'running',
    );
  });

  it('U+0000 (which Postgres refuses) in a name, an id or the query: 400 Invalid characters in request, nothing created (§7)', async () => {
    const refused = { status: 400, body: { error: 'Invalid characters in request' } };
    for (const [method, path, json] of [
      ['POST', '/agents', { name: 'a\u0000b' }],
      ['POST', '/agents', { name: 'ok', config: { 'key\u0000': 1 } }],
      ['PUT', '/agents/agt_%00', { plan: 'collective' }],
      ['DELETE', '/agents/agt_x?force=%00', undefined],
    ] as const) {
      const res = await call('usr_nul', method, path, json);
      expect({ status: res.status, body: res.body }).toEqual(refused);
    }
    expect((await call('usr_nul', 'GET', '/agents')).body).toEqual([]);
  });

  it('DELETE is best effort: deleted even for an unknown agent; a deployed one is really removed', async () => {
    expect((await call('usr_a', 'DELETE', '/agents/agt_unknown')).body).toEqual({ id: 'agt_unknown', deleted: true });
    const res = await call('usr_a', 'DELETE', '/agents/agt_alpha');
    expect(res.body).toEqual({ id: 'agt_alpha', deleted: true });
    expect(existsSync(join(work, 'data', 'agents', 'agt_alpha'))).toBe(false);
    expect((await call('usr_a', 'GET', '/agents/agt_alpha')).status).toBe(404);
  });
});

describe('backend without an agent host', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, PROVISIONER: 'hosting' });
  });
  afterAll(() => backend.close());

  it('provisioning-dependent endpoints answer 500, the rest keep working', async () => {
    const res = await request(`${backend.url}/api/deployments`, { json: { agentId: 'a' }, headers: as('usr_x') });
    expect(res.status).toBe(500);
    expect(res.body.error).toMatch(/^Provisioning is not available/);
    expect((await request(`${backend.url}/api/agents`, { headers: as('usr_x') })).status).toBe(500);
    expect((await request(`${backend.url}/health`)).status).toBe(200);
  });
});

describe('runtime endpoints (operators)', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  const admin = (method: string, path: string, json?: unknown, who = 'ops@example.com') =>
    request(`${backend.url}/api${path}`, { method, headers: as('usr_ops', who), ...(json === undefined ? {} : { json }) });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-backend-runtime-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, ADMIN_EMAILS: 'ops@example.com' }, { host });
    const deployed = await request(`${backend.url}/api/deployments`, {
      json: { agentId: 'agt_rt', config: { autoProvision: true } },
      headers: as('usr_t'),
    });
    expect(deployed.status).toBe(201);
    await host.waitUntilReady('agt_rt', { timeoutMs: 10_000 });
  });
  afterAll(async () => {
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('version needs only the internal key', async () => {
    const res = await request(`${backend.url}/api/runtime/version`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.body).toMatchObject({ openclawVersion: '2026.9.6', backendNode: process.version, provider: 'local' });
  });

  it('instances, stats and maintenance need an administrator', async () => {
    const list = await admin('GET', '/runtime/instances');
    expect(list.body).toMatchObject({ count: 1, instances: [{ agentId: 'agt_rt', status: 'running' }] });
    const stats = await admin('GET', '/runtime/instances/agt_rt/stats');
    expect(stats.body).toMatchObject({ agentId: 'agt_rt', status: 'running', health: { live: true, ready: true } });
    expect(stats.body.stats.pids).toBeGreaterThanOrEqual(1);
    const check = await admin('GET', '/runtime/maintenance');
    expect(check.body).toMatchObject({ status: 'ok', total: 1, live: 1, ready: 1 });
    const restart = await admin('POST', '/runtime/maintenance', { agentId: 'agt_rt' });
    expect(restart.body).toMatchObject({ success: true, agentId: 'agt_rt', action: 'restart' });
    expect((await admin('POST', '/runtime/maintenance', {})).body).toEqual({ error: 'agentId is required' });
    expect((await admin('GET', '/runtime/instances/agt_nope/stats')).status).toBe(404);
    const denied = await admin('GET', '/runtime/instances', undefined, 'someone@example.com');
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'ADMIN_REQUIRED' });
  });
});
