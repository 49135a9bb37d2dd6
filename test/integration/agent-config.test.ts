import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalAgentHost } from '@aop/provisioner';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const SHARED = { INTERNAL_API_KEY: 'internal-key-for-agent-config', HMAC_SECRET: 'hmac-secret-for-agent-config' };

// Issue #19 "Configuration is per agent": `/api/agents/:id/config*` through the real web and backend, with two agents
// of one customer on the local host. The gateways are the stand-in OpenClaw CLI, which answers no `config.get` (it
// speaks only HTTP and an echoing WebSocket): what the gateway runs with is read where OpenClaw itself reads it, the
// openclaw.json its host wrote at OPENCLAW_CONFIG_PATH (OpenClaw hot-reloads that file on change).
describe('per-agent configuration', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let owner: { cookie: string; userId: string };
  let stranger: { cookie: string; userId: string };
  let keyed: string;
  let plain: string;

  const url = (agentId: string, suffix = '') => `${web.url}/api/agents/${encodeURIComponent(agentId)}/config${suffix}`;
  const get = (agentId: string, cookie = owner.cookie) => request(url(agentId), { headers: { cookie } });
  const put = (agentId: string, json: unknown, cookie = owner.cookie) =>
    request(url(agentId), { method: 'PUT', json, headers: { cookie } });
  const restore = (agentId: string, json: unknown, cookie = owner.cookie) =>
    request(url(agentId, '/restore'), { json, headers: { cookie } });
  const backup = (agentId: string, backupId: string, cookie = owner.cookie) =>
    request(url(agentId, `/backups/${encodeURIComponent(backupId)}`), { headers: { cookie } });
  /** The configuration the agent's gateway reads: the file its host wrote. */
  const gatewayConfig = async (agentId: string) => JSON.parse(await readFile(host.paths(agentId).config, 'utf8'));

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-agent-config-'));
    host = await fakeRuntimeHost(work);
    backend = await startBackend(SHARED, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });
    owner = await web.signIn({ isAdmin: true });
    stranger = await web.signIn({ isAdmin: true });
    const provision = async (json: Record<string, unknown>) => {
      const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true, ...json }, headers: { cookie: owner.cookie } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      await host.waitUntilReady(res.body.agentId, { timeoutMs: 15_000 });
      return res.body.agentId as string;
    };
    keyed = await provision({ name: 'Keyed', aiProvider: 'openai', apiKey: 'sk-test-agent-config' });
    plain = await provision({ name: 'Plain' });
  }, 60_000);

  afterAll(async () => {
    await web?.close();
    await backend?.close();
    await host?.shutdown();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('GET answers the agent’s own configuration, no backups yet, and the model it runs as applied', async () => {
    const res = await get(keyed);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      agentId: keyed,
      config: {},
      backups: [],
      applied: { model: 'platform/gpt-4.1-mini', logLevel: null, modelSource: 'platform' },
    });
    // The model is the one the gateway's file names, not the provisioning template's default.
    expect((await gatewayConfig(keyed)).agents.defaults.model.primary).toBe(res.body.applied.model);
    expect(res.body.applied.model).not.toBe('openrouter/anthropic/claude-sonnet-4.5');
    expect((await get(plain)).body.applied).toEqual({ model: null, logLevel: null, modelSource: 'default' });
  });

  it('saving the log level changes that agent’s applied configuration, and only that agent’s', async () => {
    const before = await gatewayConfig(plain);
    const res = await put(keyed, { config: { logging: { level: 'debug' } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      agentId: keyed,
      config: { logging: { level: 'debug' } },
      backupId: expect.stringMatching(/^bkp_/),
      backups: [{ id: res.body.backupId, timestamp: expect.any(String) }],
    });
    // What the gateway reads now, and what the platform reports it runs with.
    const applied = await gatewayConfig(keyed);
    expect(applied.logging.level).toBe('debug');
    expect(applied.logging.file).toBe(join(host.paths(keyed).logs, 'openclaw.log'));
    const after = await get(keyed);
    expect(after.body.config).toEqual({ logging: { level: 'debug' } });
    expect(after.body.applied).toEqual({ model: 'platform/gpt-4.1-mini', logLevel: 'debug', modelSource: 'platform' });
    // The other agent of the same customer: its file, its configuration and its backups are as they were.
    expect(await gatewayConfig(plain)).toEqual(before);
    expect((await get(plain)).body).toMatchObject({ config: {}, backups: [], applied: { logLevel: null } });
    // The account's template (spec §4.2) is a different document, untouched.
    const template = await request(`${web.url}/api/config`, { headers: { cookie: owner.cookie } });
    expect(template.body.config.logging.level).toBe('info');
    expect(template.body.backups).toEqual([]);
  });

  it('a model set in the configuration is the one applied when no provider key sets it', async () => {
    const res = await put(plain, { config: { agents: { defaults: { model: { primary: 'openrouter/openai/gpt-4o' } } } } });
    expect(res.status).toBe(200);
    expect((await gatewayConfig(plain)).agents.defaults.model.primary).toBe('openrouter/openai/gpt-4o');
    expect((await get(plain)).body.applied).toEqual({ model: 'openrouter/openai/gpt-4o', logLevel: null, modelSource: 'config' });
    // The keyed agent's provider key decides its model: a model in its configuration is replaced where it is applied.
    await put(keyed, { config: { logging: { level: 'debug' }, agents: { defaults: { model: { primary: 'openrouter/x/y' } } } } });
    expect((await gatewayConfig(keyed)).agents.defaults.model.primary).toBe('platform/gpt-4.1-mini');
    expect((await get(keyed)).body.applied.model).toBe('platform/gpt-4.1-mini');
  });

  it('each backup holds what was there before; a diff can read it; restore backs up, writes and applies', async () => {
    const first = await put(keyed, { config: { logging: { level: 'warn' } } });
    const second = await put(keyed, { config: { logging: { level: 'error' } } });
    expect((await backup(keyed, second.body.backupId)).body).toEqual({
      agentId: keyed,
      backup: { id: second.body.backupId, timestamp: expect.any(String), config: { logging: { level: 'warn' } } },
    });
    expect((await gatewayConfig(keyed)).logging.level).toBe('error');

    const res = await restore(keyed, { backupId: second.body.backupId });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      agentId: keyed,
      config: { logging: { level: 'warn' } },
      restoredFrom: second.body.backupId,
    });
    expect((await gatewayConfig(keyed)).logging.level).toBe('warn');
    // The configuration the restore replaced is now the newest backup.
    expect((await backup(keyed, res.body.backups[0].id)).body.backup.config).toEqual({ logging: { level: 'error' } });
    expect(first.body.backupId).not.toBe(second.body.backupId);
  });

  it('keeps the 10 newest backups per agent, newest first, without touching another agent’s', async () => {
    const plainBackups = (await get(plain)).body.backups;
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await put(keyed, { config: { logging: { level: `v${i}` } } })).body.backupId);
    const { backups } = (await get(keyed)).body;
    expect(backups.map((b: { id: string }) => b.id)).toEqual(ids.slice(2).reverse());
    expect((await get(plain)).body.backups).toEqual(plainBackups);
    expect((await gatewayConfig(keyed)).logging.level).toBe('v11');
  });

  it('concurrent saves of one agent queue up: the last to commit is the one applied, no backup lost', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => put(plain, { config: { logging: { level: `c${i}` } } })));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.body.backupId)).size).toBe(6);
    const current = (await get(plain)).body;
    expect((await gatewayConfig(plain)).logging.level).toBe(current.config.logging.level);
    expect(current.applied.logLevel).toBe(current.config.logging.level);
  });

  it('the checks of POST /api/config: 400 in its words, nothing saved or applied', async () => {
    const before = (await get(keyed)).body;
    const file = await gatewayConfig(keyed);
    for (const [json, error] of [
      [{}, 'Invalid config object'],
      [{ config: [1] }, 'Invalid config object'],
      [{ config: '{nope' }, 'Config is not valid JSON'],
    ] as const) {
      expect(await put(keyed, json)).toMatchObject({ status: 400, body: { error } });
    }
    const typed = await put(keyed, { config: { session: { reset: { atHour: 24 } } } });
    expect(typed.status).toBe(400);
    expect(typed.body.error).toContain('Invalid config: session.reset.atHour');
    for (const json of [{}, { backupId: '' }, { backupId: 7 }]) {
      expect(await restore(keyed, json)).toMatchObject({ status: 400, body: { error: 'Missing backupId' } });
    }
    expect(await restore(keyed, { backupId: 'bkp_does_not_exist' })).toMatchObject({ status: 404, body: { error: 'Backup not found' } });
    expect(await backup(keyed, 'bkp_does_not_exist')).toMatchObject({ status: 404, body: { error: 'Backup not found' } });
    // One agent's backup is not another's, even of the same customer.
    const plainBackup = (await get(plain)).body.backups[0].id;
    expect(await restore(keyed, { backupId: plainBackup })).toMatchObject({ status: 404, body: { error: 'Backup not found' } });
    expect(await backup(keyed, plainBackup)).toMatchObject({ status: 404, body: { error: 'Backup not found' } });
    expect((await get(keyed)).body).toEqual(before);
    expect(await gatewayConfig(keyed)).toEqual(file);
  });

  it('owner only: another user’s agent is 404 Agent not found on every route, and nothing changes', async () => {
    const before = (await get(keyed)).body;
    const backupId = before.backups[0].id;
    for (const res of [
      await get(keyed, stranger.cookie),
      await put(keyed, { config: { logging: { level: 'stolen' } } }, stranger.cookie),
      await put(keyed, {}, stranger.cookie),
      await backup(keyed, backupId, stranger.cookie),
      await restore(keyed, { backupId }, stranger.cookie),
      await get('agt_does_not_exist'),
    ]) {
      expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { error: 'Agent not found' } });
    }
    expect((await request(url(keyed))).status).toBe(401);
    expect((await get(keyed)).body).toEqual(before);
    // Row-level security in the backend's record too: the stranger's connection sees none of the owner's backups.
    const seen = await backend.database.db.withUser(stranger.userId, (trx) =>
      trx.selectFrom('agent_config_backups').select('id').execute(),
    );
    expect(seen).toEqual([]);
    const own = await backend.database.db.withUser(owner.userId, (trx) => trx.selectFrom('agent_config_backups').select('id').execute());
    expect(own.length).toBeGreaterThan(0);
  });
});
