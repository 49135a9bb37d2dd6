import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@aop/core';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { type FakeColony, colonyFitnessScore, request, startFakeColony } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const SHARED = { INTERNAL_API_KEY: 'internal-key-for-mission-control-e2e', HMAC_SECRET: 'hmac-secret-for-mission-control-e2e' };
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ATLAS = { id: 'atlas', name: 'atlas', role: 'orchestrator', status: 'offline', x: 400, y: 300, load: 0, memory: 0 };

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

const view = (web: TestWeb, what: string, cookie?: string) =>
  request(`${web.url}/api/mission-control/fleet/${what}`, { headers: cookie ? { cookie } : {} });

// Spec §4.17 mission control through the web service: the session's user's fleet relayed from the backend, the spec's
// defaults for a caller without a session, and the fallbacks when the backend cannot answer.
describe('mission control through the web service', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let colony: FakeColony;
  let owner: { userId: string; cookie: string };
  let agentId: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-mission-control-e2e-'));
    // The x402 colony gateway the backend reads fitness scores from (a local stand-in).
    colony = await startFakeColony();
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend({ ...SHARED, X402_GATEWAY_URL: colony.url }, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });
    owner = await web.signIn({ isAdmin: true });
    const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie: owner.cookie } });
    expect(res.status).toBe(200);
    agentId = res.body.agentId;
    await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
  });
  afterAll(async () => {
    await web.close();
    await backend.close();
    await host.shutdown();
    await colony.close();
    await rm(work, { recursive: true, force: true });
  });

  it('answers a caller without a session with the defaults, 200', async () => {
    const graph = await view(web, 'graph');
    expect(graph.status).toBe(200);
    expect(graph.body).toEqual({ nodes: [ATLAS], edges: [], timestamp: expect.stringMatching(ISO), source: 'unauthenticated' });
    expect(graph.body).not.toHaveProperty('nodeCount');
    const traces = await view(web, 'traces');
    expect([traces.status, traces.body]).toEqual([200, []]);
    const costs = await view(web, 'costs');
    expect([costs.status, costs.body]).toEqual([200, { costs: [] }]);
    const bookings = await view(web, 'bookings');
    expect([bookings.status, bookings.body]).toEqual([200, { bookings: [] }]);
    // A cookie that names no session is no session.
    expect((await view(web, 'graph', 'service-session=not-a-session')).body.source).toBe('unauthenticated');
  });

  it("relays the signed-in user's fleet from the backend, and reads their spend from the web's ledger", async () => {
    // The web's own ledger, where its chats record usage: with embedded databases the backend has another one.
    await web.database.db.kysely
      .insertInto('usage_events')
      .values([
        { id: newId('usage'), user_id: owner.userId, agent_id: agentId, kind: 'chat', total_tokens: 40, cost_usd: '0.2' },
        { id: newId('usage'), user_id: owner.userId, agent_id: null, kind: 'ai-chat', total_tokens: 10, cost_usd: '0.05' },
      ])
      .execute();

    const graph = await view(web, 'graph', owner.cookie);
    expect(graph.status).toBe(200);
    expect(graph.body).toEqual({
      nodes: [
        {
          id: agentId,
          name: expect.any(String),
          role: 'orchestrator',
          status: 'active',
          x: 400,
          y: 300,
          load: expect.any(Number),
          memory: expect.any(Number),
          fitness: colonyFitnessScore(agentId),
          children: 0,
          url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        },
      ],
      edges: [],
      timestamp: expect.stringMatching(ISO),
      source: 'soul',
      nodeCount: 1,
    });
    const costs = await view(web, 'costs', owner.cookie);
    expect(costs.body).toEqual({ costs: [], totalSpend: 0.25, managedAiCost: 0.05, coordinationRevenue: 0 });
    // One spend, two views (issue #19): the cost dashboard's total for the same rows is the same figure.
    const board = await request(`${web.url}/api/dashboard/cost?period=7d`, { headers: { cookie: owner.cookie } });
    expect(board.body.summary.totalCost).toBe(costs.body.totalSpend);
    expect((await view(web, 'bookings', owner.cookie)).body).toEqual({ bookings: [] });

    // Another user's fleet is their own: no agents, so the backend's fallback graph and nothing spent.
    const other = await web.signIn();
    expect((await view(web, 'graph', other.cookie)).body).toEqual({
      nodes: [ATLAS],
      edges: [],
      timestamp: expect.stringMatching(ISO),
      source: 'fallback',
    });
    expect((await view(web, 'costs', other.cookie)).body).toEqual({ costs: [], totalSpend: 0, managedAiCost: 0, coordinationRevenue: 0 });
  });

  it('relays the fallback graph and no traces once no agent is reachable', async () => {
    const stop = await request(`${web.url}/api/instance/${owner.userId}/stop`, { method: 'POST', headers: { cookie: owner.cookie } });
    expect(stop.status).toBe(200);
    const graph = await view(web, 'graph', owner.cookie);
    expect(graph.body).toEqual({ nodes: [ATLAS], edges: [], timestamp: expect.stringMatching(ISO), source: 'fallback' });
    const traces = await view(web, 'traces', owner.cookie);
    expect([traces.status, traces.body]).toEqual([200, []]);
  });

  it('answers the fallback shapes when the backend is down or refuses the web service', async () => {
    const down = await startWeb({ ...SHARED, BACKEND_API_URL: `http://127.0.0.1:${await closedPort()}` });
    // A backend that does not take this web service's key answers 403: no usable answer either.
    const refused = await startWeb({ ...SHARED, INTERNAL_API_KEY: 'a-different-internal-key', BACKEND_API_URL: backend.url });
    try {
      for (const service of [down, refused]) {
        const user = await service.signIn();
        const graph = await view(service, 'graph', user.cookie);
        expect(graph.status).toBe(200);
        expect(graph.body).toEqual({ nodes: [ATLAS], edges: [], timestamp: expect.stringMatching(ISO), source: 'fallback' });
        for (const [what, body] of [
          ['traces', []],
          // Spend is the web's own ledger: it does not depend on the backend answering.
          ['costs', { costs: [], totalSpend: 0, managedAiCost: 0, coordinationRevenue: 0 }],
          ['bookings', { bookings: [] }],
        ] as const) {
          const res = await view(service, what, user.cookie);
          expect([what, res.status, res.body]).toEqual([what, 200, body]);
        }
      }
    } finally {
      await down.close();
      await refused.close();
    }
  });
});
