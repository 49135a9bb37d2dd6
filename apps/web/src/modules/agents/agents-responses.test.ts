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
  /** What the fake gateway's `/healthz` and `/readyz` answer next. */
  let healthz: { status: number; body: string } = { status: 200, body: '{}' };
  let readyz: { status: number; body: string } = { status: 200, body: '{"ready":true,"failing":[]}' };

  beforeAll(async () => {
    web = await startWeb();
    gateway = createServer((req, res) => {
      const answer = req.url === '/healthz' ? healthz : req.url === '/readyz' ? readyz : null;
      if (!answer) return void res.writeHead(404).end();
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
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
          // The model the agent runs is read from its host through the backend, never the stored column: no backend
          // runs this agent, so it is unknown.
          model: null,
          modelSource: 'unknown',
          status: 'running',
          hostStatus: null,
          url: gatewayUrl,
          websocketUrl: gatewayUrl.replace('http', 'ws'),
          primary: true,
          createdAt: '2026-02-01T00:00:00.000Z',
          updatedAt: '2026-02-03T00:00:00.000Z',
        },
        {
          id: oldId,
          name: 'Old',
          model: null,
          modelSource: 'unknown',
          status: 'error',
          hostStatus: null,
          url: null,
          websocketUrl: null,
          primary: false,
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
        model: null,
        modelSource: 'unknown',
        status: 'running',
        hostStatus: null,
        subdomain: 'new-abc',
        url: gatewayUrl,
        websocketUrl: gatewayUrl.replace('http', 'ws'),
        plan: 'solo',
        primary: true,
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
        modelSource: 'unknown',
        status: 'error',
        hostStatus: null,
        subdomain: null,
        url: null,
        websocketUrl: null,
        plan: null,
        primary: false,
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

  // Issue #19: an agent no backend knows (a direct deployment; this web has no backend) is judged by its record and its
  // gateway's own /readyz, with the same state machine the backend uses.
  it('GET /api/agents/:id/health: the state from the record and /readyz; another user’s agent is 404', async () => {
    const { cookie, newId, oldId } = await owner();
    const health = (id: string, as = cookie) => get(`/api/agents/${id}/health`, as);

    healthz = { status: 200, body: '{"ok":true}' };
    readyz = { status: 200, body: '{"ready":true,"failing":[]}' };
    expect((await health(newId)).body).toEqual({
      agentId: newId,
      state: 'live',
      reason: 'the gateway answers /readyz',
      actions: ['stop', 'restart', 'update', 'repair', 'reset-memory'],
      host: null,
      live: true,
      ready: true,
      failing: [],
      sharesGatewayWith: [],
      wakesAt: null,
      source: 'gateway',
      checkedAt: expect.any(String),
    });
    readyz = { status: 503, body: '{"ready":false,"failing":["startup-sidecars"]}' };
    expect((await health(newId)).body).toMatchObject({
      state: 'degraded',
      reason: 'the deployment runs but the gateway is not ready yet (startup-sidecars)',
      ready: false,
      failing: ['startup-sidecars'],
    });
    // A record in error with no gateway is failed, and nothing but the state machine's actions are offered.
    expect((await health(oldId)).body).toMatchObject({ state: 'failed', actions: ['start', 'restart', 'update', 'repair'] });

    const other = await web.signIn();
    const refused = await health(newId, other.cookie);
    expect([refused.status, refused.body]).toEqual([404, { error: 'Agent not found' }]);
    expect((await health('agt_nobody')).status).toBe(404);
  });

  it('PUT /api/agents/:id/primary: the account’s primary agent is the one chosen, and /api/user/runtime follows it', async () => {
    const { cookie, newId, oldId } = await owner();
    const put = (id: string, as = cookie) => request(`${web.url}/api/agents/${id}/primary`, { method: 'PUT', headers: { cookie: as } });
    expect((await put(oldId)).body).toEqual({ success: true, primaryAgentId: oldId, url: null });
    const list = (await get('/api/agents', cookie)).body.agents as { id: string; primary: boolean }[];
    expect(list.map((a) => [a.id, a.primary])).toEqual([
      [newId, false],
      [oldId, true],
    ]);
    expect((await get('/api/user/runtime', cookie)).body).toMatchObject({ url: null, instanceId: oldId });

    const other = await web.signIn();
    const refused = await put(newId, other.cookie);
    expect([refused.status, refused.body]).toEqual([404, { error: 'Agent not found' }]);
    expect((await put(newId)).body).toMatchObject({ primaryAgentId: newId, url: gatewayUrl });
  });

  it('the OpenAPI document describes the per-agent lifecycle, health and primary routes with their answers', async () => {
    const doc = (await request(`${web.url}/api/openapi.json`)).body as {
      paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>>;
    };
    for (const action of ['start', 'stop', 'restart', 'update', 'repair', 'reset-memory']) {
      const op = doc.paths[`/api/agents/{id}/${action}`]?.post;
      expect(op?.responses?.['200']?.content?.['application/json']?.schema, action).toMatchObject({
        properties: { state: { anyOf: expect.any(Array) }, pending: { type: 'boolean' }, events: { type: 'string' } },
      });
      expect(op?.responses?.['202'], action).toBeDefined();
    }
    expect(doc.paths['/api/agents/{id}/health']?.get?.responses?.['200']?.content?.['application/json']?.schema).toMatchObject({
      properties: { state: expect.any(Object), actions: expect.any(Object), reason: expect.any(Object) },
    });
    expect(doc.paths['/api/agents/{id}/primary']?.put).toBeDefined();
  });
});
