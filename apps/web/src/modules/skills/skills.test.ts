import { newId } from '@aop/core';
import { type TestResponse, request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// Spec §4.18 Skills: GET, POST /api/skills; POST /api/skills/:name.
describe('skills', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(async () => {
    await web?.close();
  });

  const url = (path = '') => `${web.url}/api/skills${path}`;
  const list = (cookie: string, query = '') => request(url(query), { headers: { cookie } });
  const install = (cookie: string, json: unknown) => request(url(), { method: 'POST', headers: { cookie }, json });
  const update = (cookie: string, name: string, json: unknown) => request(url(`/${name}`), { method: 'POST', headers: { cookie }, json });
  const names = (res: TestResponse) =>
    res.body.skills.map((s: { name: string; agentId: string | null }) => `${s.name}@${s.agentId ?? '*'}`);
  const expectError = (res: TestResponse, status: number, error: string) => {
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error });
  };

  async function userWithAgent() {
    const user = await web.signIn();
    const agentId = newId('agent');
    await web.database.db.kysely.insertInto('agents').values({ id: agentId, user_id: user.userId, name: 'Agent' }).execute();
    return { ...user, agentId };
  }

  it('401 without a session', async () => {
    expectError(await request(url()), 401, 'Unauthorized');
    expectError(await request(url(), { method: 'POST', json: { name: 'x' } }), 401, 'Unauthorized');
    expectError(await request(url('/x'), { method: 'POST', json: { enabled: false } }), 401, 'Unauthorized');
  });

  describe('POST /api/skills', () => {
    it('201 { skill } with defaults; user-wide when no agent is named', async () => {
      const { cookie, agentId } = await userWithAgent();
      const res = await install(cookie, { name: 'web-search' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        skill: {
          id: expect.stringMatching(/^skl_/),
          name: 'web-search',
          description: null,
          enabled: true,
          agentId: null,
          config: {},
          installedAt: expect.any(String),
        },
      });
      const scoped = await install(cookie, {
        name: 'swap',
        agentId,
        description: 'Token swaps',
        config: { slippage: 0.5, chains: ['base'] },
      });
      expect(scoped.status).toBe(201);
      expect(scoped.body.skill).toMatchObject({
        name: 'swap',
        agentId,
        description: 'Token swaps',
        config: { slippage: 0.5, chains: ['base'] },
      });
      const off = await install(cookie, { name: 'off', enabled: false });
      expect(off.body.skill.enabled).toBe(false);
    });

    it('401 for an anonymous caller whatever fields it sent (the caller is checked before the body)', async () => {
      expectError(await request(url(), { json: { name: 5, enabled: 'yes' } }), 401, 'Unauthorized');
      expectError(await request(url('/web-search'), { json: { enabled: 'no' } }), 401, 'Unauthorized');
    });

    it('400 Invalid skill name; 400 for bad fields; 404 for an unknown agent', async () => {
      const { cookie } = await web.signIn();
      expectError(await request(url(), { method: 'POST', headers: { cookie } }), 400, 'Invalid skill name');
      for (const name of [undefined, '', 'Web', '-lead', 'a_b', 'a b', 'ünï', 'a'.repeat(65), 5]) {
        expectError(await install(cookie, { name }), 400, 'Invalid skill name');
      }
      expect((await install(cookie, { name: `0${'a'.repeat(63)}` })).status).toBe(201);
      expectError(await install(cookie, { name: 'ok', description: 5 }), 400, 'description must be a string');
      expectError(await install(cookie, { name: 'ok', description: 'd'.repeat(1001) }), 400, 'description must be at most 1000 characters');
      for (const config of [[1], 'x', 3, true]) expectError(await install(cookie, { name: 'ok', config }), 400, 'config must be an object');
      expectError(await install(cookie, { name: 'ok', enabled: 'yes' }), 400, 'enabled must be a boolean');
      expectError(await install(cookie, { name: 'ok', agentId: 7 }), 400, 'agentId must be a string');
      expectError(await install(cookie, { name: 'ok', agentId: 'agt_unknown' }), 404, 'Agent not found');
      expect(names(await list(cookie))).toEqual([`0${'a'.repeat(63)}@*`]);
    });

    it('409 Skill already installed in the same scope; another scope is a different skill', async () => {
      const { cookie, agentId } = await userWithAgent();
      expect((await install(cookie, { name: 'memo' })).status).toBe(201);
      expectError(await install(cookie, { name: 'memo' }), 409, 'Skill already installed');
      expect((await install(cookie, { name: 'memo', agentId })).status).toBe(201);
      expectError(await install(cookie, { name: 'memo', agentId }), 409, 'Skill already installed');
      // Concurrent installs: exactly one wins.
      const results = await Promise.all(Array.from({ length: 5 }, () => install(cookie, { name: 'race' })));
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
      expect(names(await list(cookie))).toEqual(['memo@*', `memo@${agentId}`, 'race@*']);
    });
  });

  describe('GET /api/skills', () => {
    it('lists every scope, or one agent’s skills', async () => {
      const { cookie, userId, agentId } = await userWithAgent();
      const second = newId('agent');
      await web.database.db.kysely.insertInto('agents').values({ id: second, user_id: userId, name: 'Second' }).execute();
      await install(cookie, { name: 'a-skill' });
      await install(cookie, { name: 'b-skill', agentId });
      await install(cookie, { name: 'c-skill', agentId: second });
      const all = await list(cookie);
      expect(all.status).toBe(200);
      expect(names(all)).toEqual(['a-skill@*', `b-skill@${agentId}`, `c-skill@${second}`]);
      expect((await list(cookie, '?agentId=all')).body).toEqual(all.body);
      expect(names(await list(cookie, `?agentId=${agentId}`))).toEqual([`b-skill@${agentId}`]);
      expect((await list(cookie, '?agentId=agt_none')).body).toEqual({ skills: [] });
    });
  });

  describe('POST /api/skills/:name', () => {
    it('updates enabled, config and description of the skill in the named scope', async () => {
      const { cookie, agentId } = await userWithAgent();
      const wide = (await install(cookie, { name: 'trade', config: { max: 1 } })).body.skill;
      await install(cookie, { name: 'trade', agentId, config: { max: 2 } });

      const res = await update(cookie, 'trade', { enabled: false, config: { max: 10 } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ skill: { ...wide, enabled: false, config: { max: 10 } } });
      const scoped = await update(cookie, 'trade', { agentId, description: 'agent copy' });
      expect(scoped.body.skill).toMatchObject({ agentId, enabled: true, config: { max: 2 }, description: 'agent copy' });
      // An empty update changes nothing but still answers the skill.
      expect((await update(cookie, 'trade', {})).body.skill).toMatchObject({ enabled: false, config: { max: 10 } });

      const listed = await list(cookie);
      expect(listed.body.skills.map((s: { enabled: boolean; config: unknown }) => [s.enabled, s.config])).toEqual([
        [false, { max: 10 }],
        [true, { max: 2 }],
      ]);
    });

    it('404 Skill not found; 400 for an invalid name or bad fields', async () => {
      const { cookie, agentId } = await userWithAgent();
      await install(cookie, { name: 'only-wide' });
      expectError(await update(cookie, 'missing', { enabled: true }), 404, 'Skill not found');
      expectError(await update(cookie, 'only-wide', { agentId, enabled: true }), 404, 'Skill not found');
      expectError(await update(cookie, 'Bad_Name', { enabled: true }), 400, 'Invalid skill name');
      expectError(await update(cookie, 'only-wide', { enabled: 'no' }), 400, 'enabled must be a boolean');
      expectError(await update(cookie, 'only-wide', { config: [] }), 400, 'config must be an object');
      expect((await list(cookie)).body.skills[0]).toMatchObject({ enabled: true, config: {} });
    });
  });

  it('isolation: another user never sees, changes or shadows A’s skills', async () => {
    const a = await userWithAgent();
    const b = await userWithAgent();
    await install(a.cookie, { name: 'secret-skill', config: { token: 'A' } });
    await install(a.cookie, { name: 'agent-skill', agentId: a.agentId });

    expect((await list(b.cookie)).body).toEqual({ skills: [] });
    expect((await list(b.cookie, `?agentId=${a.agentId}`)).body).toEqual({ skills: [] });
    expectError(await update(b.cookie, 'secret-skill', { enabled: false, config: { token: 'B' } }), 404, 'Skill not found');
    expectError(await update(b.cookie, 'agent-skill', { agentId: a.agentId, enabled: false }), 404, 'Skill not found');
    expectError(await install(b.cookie, { name: 'agent-skill', agentId: a.agentId }), 404, 'Agent not found');
    // The same name is free in B's own namespace.
    expect((await install(b.cookie, { name: 'secret-skill' })).status).toBe(201);
    expect(names(await list(b.cookie))).toEqual(['secret-skill@*']);

    const aSkills = (await list(a.cookie)).body.skills;
    expect(aSkills.map((s: { name: string; enabled: boolean; config: unknown }) => [s.name, s.enabled, s.config])).toEqual([
      ['secret-skill', true, { token: 'A' }],
      ['agent-skill', true, {}],
    ]);
  });
});
