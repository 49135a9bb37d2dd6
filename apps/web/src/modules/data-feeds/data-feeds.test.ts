import { newId } from '@aop/core';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../api-keys/api-keys.service.js';
import { recordUsage } from '../usage/usage.service.js';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// Spec §4.18 Other: GET /api/data-feeds?feed=… — feeds built from the platform's own records.

describe('GET /api/data-feeds', () => {
  let web: TestWeb;
  let ana: { userId: string; cookie: string };
  let ben: { userId: string; cookie: string };
  const feed = (query: string, headers: Record<string, string>) => request(`${web.url}/api/data-feeds${query}`, { headers });

  beforeAll(async () => {
    web = await startWeb();
    ana = await web.signIn({ name: 'Ana' });
    ben = await web.signIn({ name: 'Ben' });
    const agentId = newId('agent');
    await web.database.db.withUser(ana.userId, async (trx) => {
      await trx.insertInto('agents').values({ id: agentId, user_id: ana.userId, name: 'Scout', status: 'running', model: 'm1' }).execute();
      await trx
        .insertInto('agents')
        .values({ id: newId('agent'), user_id: ana.userId, name: 'Spare', status: 'error' })
        .execute();
      await recordUsage(trx, {
        userId: ana.userId,
        agentId,
        agentName: 'Scout',
        kind: 'llm',
        model: 'm1',
        promptTokens: 100,
        completionTokens: 20,
        costUsd: '0.12',
      });
      await recordUsage(trx, { userId: ana.userId, kind: 'plugin', costUsd: '0.05' });
      // Outside every window.
      await recordUsage(trx, { userId: ana.userId, kind: 'llm', costUsd: '9', at: new Date(Date.UTC(2000, 0, 1)) });
    });
    await web.database.db.withUser(ben.userId, (trx) => recordUsage(trx, { userId: ben.userId, kind: 'llm', costUsd: '1' }));
  });
  afterAll(async () => {
    await web?.close();
  });

  it('needs a session or an API key', async () => {
    const res = await feed('?feed=usage', {});
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'Unauthorized' });
    const { key } = await web.database.db.withUser(ana.userId, (trx) => createApiKey(trx, ana.userId, 'feeds'));
    expect((await feed('?feed=usage', { authorization: `Bearer ${key}` })).status).toBe(200);
  });

  it('lists the feeds without `feed`, refuses unknown ones', async () => {
    const list = await feed('', { cookie: ana.cookie });
    expect(list.status).toBe(200);
    expect(list.body.feeds.map((f: { id: string }) => f.id)).toEqual(['platform-status', 'usage', 'agents']);
    const unknown = await feed('?feed=weather', { cookie: ana.cookie });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ error: 'Unknown feed. Available: platform-status, usage, agents' });
    expect((await feed('?feed=__proto__', { cookie: ana.cookie })).status).toBe(400);
  });

  it('usage: the caller’s ledger only, over `days`', async () => {
    const res = await feed('?feed=usage&days=3', { cookie: ana.cookie });
    expect(res.status).toBe(200);
    expect(res.body.feed).toBe('usage');
    expect(res.body.data.days).toBe(3);
    expect(res.body.data.daily).toHaveLength(3);
    expect(res.body.data.totals).toEqual({ calls: 2, tokens: 120, promptTokens: 100, completionTokens: 20, costUsd: 0.17 });
    expect(res.body.data.byAgent[0]).toMatchObject({ name: 'Scout', calls: 1, costUsd: 0.12 });
    const other = await feed('?feed=usage', { cookie: ben.cookie });
    expect(other.body.data.totals.costUsd).toBe(1);
    expect((await feed('?feed=usage&days=x', { cookie: ana.cookie })).body).toEqual({ error: 'days must be an integer' });
  });

  it('agents: the caller’s agents with counts', async () => {
    const res = await feed('?feed=agents', { cookie: ana.cookie });
    expect(res.body.data).toMatchObject({ total: 2, byStatus: { running: 1, error: 1 } });
    expect(res.body.data.agents.map((a: { name: string }) => a.name).sort()).toEqual(['Scout', 'Spare']);
    expect((await feed('?feed=agents', { cookie: ben.cookie })).body.data).toEqual({ total: 0, byStatus: {}, agents: [] });
  });

  it('platform-status: unknown before any hosting event', async () => {
    const res = await feed('?feed=platform-status', { cookie: ben.cookie });
    expect(res.body).toMatchObject({ feed: 'platform-status', data: { status: 'unknown', services: [], updatedAt: null } });
    expect(Date.parse(res.body.generatedAt)).not.toBeNaN();
  });
});
