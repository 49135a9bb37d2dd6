import { newId } from '@aop/core';
import { type TestResponse, request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../api-keys/api-keys.service.js';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// Spec §4.18 Memory: GET, POST /api/memory (`agentId` omitted or `all` returns all agents); DELETE is ours.
describe('memory', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(async () => {
    await web?.close();
  });

  const url = (query = '') => `${web.url}/api/memory${query}`;
  const list = (cookie: string, query = '') => request(url(query), { headers: { cookie } });
  const create = (cookie: string, json: unknown) => request(url(), { method: 'POST', headers: { cookie }, json });
  const remove = (cookie: string, query: string) => request(url(query), { method: 'DELETE', headers: { cookie } });
  const expectError = (res: TestResponse, status: number, error: string) => {
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error });
  };

  /** A signed-in user with one agent of their own. */
  async function userWithAgent() {
    const user = await web.signIn();
    const agentId = newId('agent');
    await web.database.db.kysely
      .insertInto('agents')
      .values({ id: agentId, user_id: user.userId, name: 'Agent', status: 'active' })
      .execute();
    return { ...user, agentId };
  }

  it('401 without a session on every method', async () => {
    expectError(await request(url()), 401, 'Unauthorized');
    expectError(await request(url(), { method: 'POST', json: { content: 'x' } }), 401, 'Unauthorized');
    expectError(await request(url('?id=mem_x'), { method: 'DELETE' }), 401, 'Unauthorized');
  });

  describe('POST', () => {
    it('201 { memory } with tags trimmed and de-duplicated; no agent means user-wide', async () => {
      const user = await userWithAgent();
      const res = await create(user.cookie, {
        agentId: user.agentId,
        content: 'Prefers limit orders',
        tags: [' trading ', 'prefs', 'trading', ''],
      });
      expect(res.status).toBe(201);
      expect(res.body.memory).toEqual({
        id: expect.stringMatching(/^mem_/),
        agentId: user.agentId,
        content: 'Prefers limit orders',
        tags: ['trading', 'prefs'],
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(Date.parse(res.body.memory.createdAt)).not.toBeNaN();

      const plain = await create(user.cookie, { content: 'Lives in Lisbon' });
      expect(plain.status).toBe(201);
      expect(plain.body.memory).toMatchObject({ agentId: null, content: 'Lives in Lisbon', tags: [] });
      const all = await create(user.cookie, { agentId: 'all', content: 'Speaks Portuguese' });
      expect(all.body.memory.agentId).toBeNull();
    });

    it('400 for a missing, empty or over-long content, bad tags or a bad agentId', async () => {
      const user = await userWithAgent();
      expectError(await request(url(), { method: 'POST', headers: { cookie: user.cookie } }), 400, 'content is required');
      expectError(
        await request(url(), { method: 'POST', headers: { cookie: user.cookie, 'content-type': 'application/json' }, body: '[' }),
        400,
        'content is required',
      );
      for (const json of [{}, { content: '' }, { content: '   ' }, { content: 12 }, { content: ['a'] }]) {
        expectError(await create(user.cookie, json), 400, 'content is required');
      }
      expectError(await create(user.cookie, { content: 'x'.repeat(10_001) }), 400, 'content must be at most 10000 characters');
      expect((await create(user.cookie, { content: 'x'.repeat(10_000) })).status).toBe(201);

      const tagsMessage = 'tags must be an array of at most 50 strings of at most 100 characters';
      for (const tags of ['one', [1], [null], Array.from({ length: 51 }, (_, i) => `t${i}`), ['x'.repeat(101)], { a: 1 }]) {
        expectError(await create(user.cookie, { content: 'c', tags }), 400, tagsMessage);
      }
      expect((await create(user.cookie, { content: 'c', tags: Array.from({ length: 50 }, (_, i) => `t${i}`) })).status).toBe(201);
      expectError(await create(user.cookie, { content: 'c', agentId: 5 }), 400, 'agentId must be a string');
      expectError(await create(user.cookie, { content: 'c', agentId: 'agt_nope' }), 404, 'Agent not found');
    });

    it('the body schema answers each field’s own message, in the order content, agentId, tags', async () => {
      const user = await userWithAgent();
      const tagsMessage = 'tags must be an array of at most 50 strings of at most 100 characters';
      for (const content of [null, true, { text: 'x' }]) expectError(await create(user.cookie, { content }), 400, 'content is required');
      // Blank is "required" however long it is; too long is measured in UTF-16 units, as String.length does.
      expectError(await create(user.cookie, { content: ' '.repeat(10_001) }), 400, 'content is required');
      expectError(await create(user.cookie, { content: '😀'.repeat(5_001) }), 400, 'content must be at most 10000 characters');
      for (const agentId of ['', 7, false, ['a'], 'a'.repeat(201)]) {
        expectError(await create(user.cookie, { content: 'c', agentId }), 400, 'agentId must be a string');
      }
      expectError(await create(user.cookie, { content: 'c', tags: 'x', agentId: 5 }), 400, 'agentId must be a string');
      expectError(
        await create(user.cookie, { content: 'x'.repeat(10_001), agentId: 5, tags: 'x' }),
        400,
        'content must be at most 10000 characters',
      );
      expectError(await create(user.cookie, { content: 'c', tags: [' ok ', 7] }), 400, tagsMessage);
      // Null means absent; tags are trimmed (their limit counts the trimmed text), blank and repeated ones dropped.
      const res = await create(user.cookie, { content: 'c', agentId: null, tags: null });
      expect(res.status).toBe(201);
      expect(res.body.memory).toMatchObject({ agentId: null, tags: [] });
      const tagged = await create(user.cookie, { content: 'c', agentId: user.agentId, tags: [` ${'t'.repeat(100)} `, 'a', ' a', '  '] });
      expect(tagged.status).toBe(201);
      expect(tagged.body.memory).toMatchObject({ agentId: user.agentId, tags: ['t'.repeat(100), 'a'] });
    });
  });

  describe('GET', () => {
    it('lists newest first, filters by agent and by a case-insensitive substring', async () => {
      const user = await userWithAgent();
      const other = newId('agent');
      await web.database.db.kysely.insertInto('agents').values({ id: other, user_id: user.userId, name: 'Second' }).execute();
      const made: string[] = [];
      for (const [agentId, content] of [
        [user.agentId, 'Buys ETH on Mondays'],
        [other, 'Writes haiku'],
        [null, 'Discount is 100% off_peak'],
        [user.agentId, 'eth gas is high on Fridays'],
      ] as const) {
        const res = await create(user.cookie, { ...(agentId ? { agentId } : {}), content });
        made.push(res.body.memory.id);
      }
      const ids = (res: TestResponse) => res.body.memories.map((m: { id: string }) => m.id);

      const all = await list(user.cookie);
      expect(all.status).toBe(200);
      expect(ids(all)).toEqual([...made].reverse());
      expect(all.body.total).toBe(4);
      expect(all.body.memories[0]).toEqual({
        id: made[3],
        agentId: user.agentId,
        content: 'eth gas is high on Fridays',
        tags: [],
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect((await list(user.cookie, '?agentId=all')).body).toEqual(all.body);

      const mine = await list(user.cookie, `?agentId=${user.agentId}`);
      expect(ids(mine)).toEqual([made[3], made[0]]);
      expect(mine.body.total).toBe(2);
      expect(ids(await list(user.cookie, `?agentId=${other}`))).toEqual([made[1]]);
      expect((await list(user.cookie, '?agentId=agt_unknown')).body).toEqual({ memories: [], total: 0 });

      expect(ids(await list(user.cookie, '?q=ETH'))).toEqual([made[3], made[0]]);
      expect(ids(await list(user.cookie, `?q=eth&agentId=${other}`))).toEqual([]);
      // `%` and `_` are literal characters, not patterns.
      expect(ids(await list(user.cookie, `?q=${encodeURIComponent('100%')}`))).toEqual([made[2]]);
      expect(ids(await list(user.cookie, `?q=${encodeURIComponent('f_p')}`))).toEqual([made[2]]);
      expect(ids(await list(user.cookie, `?q=${encodeURIComponent('%')}`))).toEqual([made[2]]);
      expect((await list(user.cookie, '?q=nothing-like-this')).body).toEqual({ memories: [], total: 0 });
    });

    it('limit: 50 by default, at most 200, total counts every match; 400 for a bad limit', async () => {
      const user = await web.signIn();
      const base = Date.UTC(2026, 0, 1);
      await web.database.db.kysely
        .insertInto('memories')
        .values(
          Array.from({ length: 205 }, (_, i) => ({
            id: `mem_${String(i).padStart(4, '0')}`,
            user_id: user.userId,
            content: `note ${i}`,
            created_at: new Date(base + i * 60_000),
          })),
        )
        .execute();
      const byDefault = await list(user.cookie);
      expect(byDefault.body.memories).toHaveLength(50);
      expect(byDefault.body.total).toBe(205);
      expect(byDefault.body.memories[0].id).toBe('mem_0204');
      expect(byDefault.body.memories[49].id).toBe('mem_0155');
      const two = await list(user.cookie, '?limit=2');
      expect(two.body.memories.map((m: { content: string }) => m.content)).toEqual(['note 204', 'note 203']);
      expect(two.body.total).toBe(205);
      expect((await list(user.cookie, '?limit=1000')).body.memories).toHaveLength(200);
      expect((await list(user.cookie, '?limit=200&q=note 1')).body.total).toBe(111);
      for (const limit of ['0', '-1', 'abc', '1.5']) {
        expectError(await list(user.cookie, `?limit=${limit}`), 400, 'limit must be a positive integer');
      }
    });
  });

  describe('DELETE', () => {
    it('{ success: true }; 400 without id; 404 Memory not found for an unknown or already deleted id', async () => {
      const user = await web.signIn();
      const { id } = (await create(user.cookie, { content: 'temporary' })).body.memory;
      expectError(await remove(user.cookie, ''), 400, 'id is required');
      expectError(await remove(user.cookie, '?id=mem_unknown'), 404, 'Memory not found');
      const res = await remove(user.cookie, `?id=${id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      expect((await list(user.cookie)).body).toEqual({ memories: [], total: 0 });
      expectError(await remove(user.cookie, `?id=${id}`), 404, 'Memory not found');
    });
  });

  it('isolation: another user never reads, finds, writes under or deletes A’s memories', async () => {
    const a = await userWithAgent();
    const b = await userWithAgent();
    const memory = (await create(a.cookie, { agentId: a.agentId, content: 'A secret plan', tags: ['secret'] })).body.memory;
    await create(b.cookie, { content: 'B note' });

    const bAll = await list(b.cookie);
    expect(bAll.body.total).toBe(1);
    expect(bAll.body.memories.map((m: { content: string }) => m.content)).toEqual(['B note']);
    expect((await list(b.cookie, `?agentId=${a.agentId}`)).body).toEqual({ memories: [], total: 0 });
    expect((await list(b.cookie, '?q=secret')).body).toEqual({ memories: [], total: 0 });
    expectError(await create(b.cookie, { agentId: a.agentId, content: 'planted' }), 404, 'Agent not found');
    expectError(await remove(b.cookie, `?id=${memory.id}`), 404, 'Memory not found');

    const aAll = await list(a.cookie);
    expect(aAll.body).toEqual({ memories: [memory], total: 1 });
  });

  it('a user API key works like the session', async () => {
    const user = await web.signIn();
    const { key } = await web.database.db.withUser(user.userId, (trx) => createApiKey(trx, user.userId, 'agent'));
    const headers = { authorization: `Bearer ${key}` };
    const res = await request(url(), { method: 'POST', headers, json: { content: 'via key' } });
    expect(res.status).toBe(201);
    expect((await list(user.cookie)).body.memories.map((m: { content: string }) => m.content)).toEqual(['via key']);
  });
});
