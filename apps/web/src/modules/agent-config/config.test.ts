import { PLAN_NAMES, toolsProfileFor } from '@aop/core';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultAgentConfig } from './agent-config.service.js';
import { startWeb, type TestWeb } from '../../web.test-support.js';

// Spec §4.2 configuration with backups, §2.2 defaults, §8 (10 backups kept).
describe('configuration', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(() => web.close());

  const get = (cookie?: string) => request(`${web.url}/api/config`, { headers: cookie ? { cookie } : {} });
  const post = (cookie: string, json: unknown) => request(`${web.url}/api/config`, { json, headers: { cookie } });
  const put = (cookie: string, json: unknown) => request(`${web.url}/api/config`, { method: 'PUT', json, headers: { cookie } });

  it('401 Unauthorized on every method without a session', async () => {
    for (const res of [
      await get(),
      await request(`${web.url}/api/config`, { json: { config: {} } }),
      await request(`${web.url}/api/config`, { method: 'PUT', json: { backupId: 'x' } }),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    }
  });

  it('a user with nothing saved gets the provisioning defaults and no backups', async () => {
    const { cookie } = await web.signIn();
    const res = await get(cookie);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ config: defaultAgentConfig('free'), backups: [] });
    const c = res.body.config;
    expect(c.logging.level).toBe('info');
    expect(c.agents.defaults.heartbeat).toEqual({ every: '30m', lightContext: true, isolatedSession: true });
    expect(c.tools.profile).toBe('messaging');
    expect(c.tools.exec).toEqual({ backgroundMs: 10000, timeoutSec: 1800 });
    expect(c.tools.web).toEqual({ search: { enabled: true }, fetch: { enabled: true, maxChars: 50000 } });
    expect(c.gateway).toEqual({ bind: 'lan', auth: { mode: 'token' } });
    expect(c.channels.telegram).toEqual({ enabled: false, dmPolicy: 'pairing' });
    expect(c.channels.webchat).toEqual({ enabled: true });
    expect(c.cron).toEqual({ enabled: true, maxConcurrentRuns: 2, sessionRetention: '24h' });
    expect(c.session).toEqual({
      scope: 'per-sender',
      reset: { mode: 'daily', atHour: 4 },
      maintenance: { mode: 'warn', pruneAfter: '30d', maxEntries: 500 },
    });
    expect(c.skills).toEqual({ install: { nodeManager: 'npm' } });
    expect(c.agents.defaults.model.primary.split('/')).toHaveLength(3);
  });

  it('tools.profile is the plan catalogue’s, for every tier', async () => {
    const { cookie, userId } = await web.signIn();
    for (const plan of [...PLAN_NAMES, 'mystery']) {
      await web.database.db.kysely.updateTable('users').set({ plan }).where('id', '=', userId).execute();
      expect((await get(cookie)).body.config.tools.profile, plan).toBe(toolsProfileFor(plan));
    }
  });

  it('POST saves, backs the previous config up first, and GET returns it; unknown keys are kept', async () => {
    const { cookie } = await web.signIn();
    const next = { ...defaultAgentConfig('free'), logging: { level: 'debug' }, custom: { anything: [1, 2] } };
    const res = await post(cookie, { config: next });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      config: next,
      backupId: expect.stringMatching(/^bkp_/),
      backups: [{ id: res.body.backupId, timestamp: expect.any(String) }],
    });
    expect((await get(cookie)).body.config).toEqual(next);
    // The backup holds what was there before: the defaults.
    const restored = await put(cookie, { backupId: res.body.backupId });
    expect(restored.body.config).toEqual(defaultAgentConfig('free'));
  });

  it('accepts the config as a JSON string', async () => {
    const { cookie } = await web.signIn();
    const res = await post(cookie, { config: JSON.stringify({ logging: { level: 'warn' } }) });
    expect(res.status).toBe(200);
    expect(res.body.config).toEqual({ logging: { level: 'warn' } });
  });

  it.each([
    ['U+0000', '{"a": "\\u0000"}', 'Invalid characters in request'],
    ['half a surrogate pair', '{"a": "\\ud800"}', 'Invalid characters in request'],
    ['65 levels deep', `${'{"a":'.repeat(65)}1${'}'.repeat(65)}`, 'Request body nested too deeply'],
    ['10,000 levels deep', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`, 'Request body nested too deeply'],
  ])('a config sent as a JSON string holding %s: 400 as the same JSON body would be (§7), nothing saved', async (_n, text, message) => {
    const { cookie } = await web.signIn();
    const res = await post(cookie, { config: text });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: message } });
    expect((await get(cookie)).body.backups).toEqual([]);
  });

  it.each([
    ['missing', {}, 'Invalid config object'],
    ['an array', { config: [1] }, 'Invalid config object'],
    ['a number', { config: 5 }, 'Invalid config object'],
    ['null', { config: null }, 'Invalid config object'],
    ['a string that is not JSON', { config: '{nope' }, 'Config is not valid JSON'],
    ['a JSON string of an array', { config: '[]' }, 'Invalid config object'],
  ])('400 when config is %s', async (_n, body, message) => {
    const { cookie } = await web.signIn();
    const res = await post(cookie, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: message });
  });

  it('400 Invalid request body when the body is not JSON', async () => {
    const { cookie } = await web.signIn();
    for (const method of ['POST', 'PUT']) {
      const res = await request(`${web.url}/api/config`, {
        method,
        body: '{broken',
        headers: { cookie, 'content-type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid request body' });
    }
  });

  it.each([
    [{ session: { reset: { atHour: 24 } } }, 'session.reset.atHour'],
    [{ tools: { profile: 'everything' } }, 'tools.profile'],
    [{ cron: { enabled: 'yes' } }, 'cron.enabled'],
    [{ channels: { telegram: { dmPolicy: 'open' } } }, 'channels.telegram.dmPolicy'],
    [{ agents: { defaults: { heartbeat: { every: 'often' } } } }, 'agents.defaults.heartbeat.every'],
  ])('400 naming the path of a known key with a wrong type: %j', async (config, path) => {
    const { cookie } = await web.signIn();
    const res = await post(cookie, { config });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(`Invalid config: ${path}`);
  });

  it('keeps exactly the 10 newest backups, newest first', async () => {
    const { cookie } = await web.signIn();
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await post(cookie, { config: { logging: { level: `v${i}` } } })).body.backupId);
    const { backups } = (await get(cookie)).body;
    expect(backups.map((b: { id: string }) => b.id)).toEqual(ids.slice(2).reverse());
    for (const b of backups) expect(Object.keys(b).sort()).toEqual(['id', 'timestamp']);
    const count = await web.database.db.kysely.selectFrom('config_backups').select('id').where('id', 'in', ids).execute();
    expect(count).toHaveLength(10);
  });

  it('concurrent saves never lose a backup or keep an eleventh', async () => {
    const { cookie, userId } = await web.signIn();
    const answers = await Promise.all(Array.from({ length: 14 }, (_, i) => post(cookie, { config: { logging: { level: `c${i}` } } })));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const rows = await web.database.db.kysely.selectFrom('config_backups').select('id').where('user_id', '=', userId).execute();
    expect(rows).toHaveLength(10);
    // Every save backed up something distinct: the 14 backup ids are all different.
    expect(new Set(answers.map((a) => a.body.backupId)).size).toBe(14);
  });

  it('PUT restores a backup after backing up the current config', async () => {
    const { cookie } = await web.signIn();
    const first = await post(cookie, { config: { logging: { level: 'one' } } });
    await post(cookie, { config: { logging: { level: 'two' } } });
    const second = (await get(cookie)).body.backups[0].id;
    const res = await put(cookie, { backupId: second });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, config: { logging: { level: 'one' } }, restoredFrom: second });
    expect(res.body.backups).toHaveLength(3);
    expect(res.body.backups[1].id).toBe(second);
    // The config that was current before the restore is now the newest backup.
    const undo = await put(cookie, { backupId: res.body.backups[0].id });
    expect(undo.body.config).toEqual({ logging: { level: 'two' } });
    expect(first.body.backupId).toBeDefined();
  });

  it('PUT: 400 Missing backupId, 404 Backup not found', async () => {
    const { cookie } = await web.signIn();
    for (const body of [{}, { backupId: '' }, { backupId: 42 }]) {
      const res = await put(cookie, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Missing backupId' });
    }
    const missing = await put(cookie, { backupId: 'bkp_does_not_exist' });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'Backup not found' });
  });

  it('one user cannot see or restore another user’s backups', async () => {
    const a = await web.signIn();
    const b = await web.signIn();
    const saved = await post(a.cookie, { config: { logging: { level: 'secret-of-a' } } });
    expect((await get(b.cookie)).body.backups).toEqual([]);
    const steal = await put(b.cookie, { backupId: saved.body.backupId });
    expect(steal.status).toBe(404);
    expect((await get(b.cookie)).body.config).toEqual(defaultAgentConfig('free'));
  });
});
