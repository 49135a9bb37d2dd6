import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWeb, type TestWeb } from '../../web.test-support.js';

// The answers of GET /api/agents, GET /api/agents/:id and GET /api/instance/:userId/stats go through their response
// schemas (agents.schemas.ts): every field the services build must come out as it went in. (Provisioning itself, with a
// backend and an agent host, is test/integration/provisioning.test.ts'.)
describe('agent answers', () => {
  let web: TestWeb;
  let gateway: Server;
  let gatewayUrl: string;
  /** What the fake gateway's `/healthz` answers next. */
  let healthz: { status: number; body: string } = { status: 200, body: '{}' };

  beforeAll(async () => {
    web = await startWeb();
    gateway = createServer((req, res) => {
      if (req.url !== '/healthz') return void res.writeHead(404).end();
      res.writeHead(healthz.status, { 'content-type': 'application/json' }).end(healthz.body);
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await web?.close();
    await new Promise((resolve) => gateway?.close(resolve));
  });

  const get = (path: string, cookie: string) => request(`${web.url}${path}`, { headers: { cookie } });

  async function owner() {
    const signed = await web.signIn();
    const db = web.database.db.kysely;
    await db
      .insertInto('agents')
      .values([
        {
          id: `agt_old_${signed.userId}`,
          user_id: signed.userId,
          name: 'Old',
          status: 'error',
          created_at: new Date('2026-01-01T00:00:00.000Z'),
          updated_at: new Date('2026-01-02T00:00:00.000Z'),
        },
        {
          id: `agt_new_${signed.userId}`,
          user_id: signed.userId,
          name: 'New',
          model: 'openrouter/some-model',
          status: 'running',
          plan: 'solo',
          subdomain: 'new-abc',
          url: gatewayUrl,
          gateway_token_sealed: 'v1.sealed',
          created_at: new Date('2026-02-01T00:00:00.000Z'),
          updated_at: new Date('2026-02-03T00:00:00.000Z'),
        },
      ])
      .execute();
    await db
      .updateTable('users')
      .set({ runtime_url: gatewayUrl, runtime_instance_id: `agt_new_${signed.userId}` })
      .where('id', '=', signed.userId)
      .execute();
    return { ...signed, newId: `agt_new_${signed.userId}`, oldId: `agt_old_${signed.userId}` };
  }

  it('GET /api/agents and /api/agents/:id: every field, nulls included, nothing sealed', async () => {
    const { cookie, newId, oldId } = await owner();
    const list = await get('/api/agents', cookie);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      agents: [
        {
          id: newId,
          name: 'New',
          model: 'openrouter/some-model',
          status: 'running',
          url: gatewayUrl,
          websocketUrl: gatewayUrl.replace('http', 'ws'),
          createdAt: '2026-02-01T00:00:00.000Z',
          updatedAt: '2026-02-03T00:00:00.000Z',
        },
        {
          id: oldId,
          name: 'Old',
          model: null,
          status: 'error',
          url: null,
          websocketUrl: null,
          createdAt: '2026-01-01T00:00:00.000Z',
          updatedAt: '2026-01-02T00:00:00.000Z',
        },
      ],
      count: 2,
      status: 'ok',
    });

    expect((await get(`/api/agents/${newId}`, cookie)).body).toEqual({
      status: 'ok',
      agent: {
        id: newId,
        name: 'New',
        model: 'openrouter/some-model',
        status: 'running',
        subdomain: 'new-abc',
        url: gatewayUrl,
        websocketUrl: gatewayUrl.replace('http', 'ws'),
        plan: 'solo',
        createdAt: '2026-02-01T00:00:00.000Z',
        updatedAt: '2026-02-03T00:00:00.000Z',
      },
    });
    expect((await get(`/api/agents/${oldId}`, cookie)).body).toEqual({
      status: 'ok',
      agent: {
        id: oldId,
        name: 'Old',
        model: null,
        status: 'error',
        subdomain: null,
        url: null,
        websocketUrl: null,
        plan: null,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-02T00:00:00.000Z',
      },
    });
    const missing = await get('/api/agents/agt_nobody', cookie);
    expect([missing.status, missing.body]).toEqual([404, { error: 'Agent not found' }]);
  });

  it('GET /api/instance/:userId/stats: the gateway’s health answer passed on as it came', async () => {
    const { cookie, userId, newId } = await owner();
    const stats = () => get(`/api/instance/${userId}/stats`, cookie);

    healthz = { status: 200, body: JSON.stringify({ ok: true, status: 'live', uptimeMs: 1234, checks: { db: [1, 'two'] } }) };
    expect((await stats()).body).toEqual({
      status: 'ok',
      agentId: newId,
      health: { ok: true, status: 'live', uptimeMs: 1234, checks: { db: [1, 'two'] } },
      cpu: 'N/A',
      memory: 'N/A',
    });

    // Whatever JSON the gateway answers is kept, even when it is no object.
    healthz = { status: 200, body: '"fine"' };
    expect((await stats()).body).toEqual({ status: 'degraded', agentId: newId, health: 'fine', cpu: 'N/A', memory: 'N/A' });

    healthz = { status: 503, body: '{}' };
    expect((await stats()).body).toEqual({
      status: 'degraded',
      agentId: newId,
      health: { ok: false, error: 'HTTP 503' },
      cpu: 'N/A',
      memory: 'N/A',
    });

    const other = await web.signIn();
    expect((await get(`/api/instance/${userId}/stats`, other.cookie)).status).toBe(403);
  });
});
