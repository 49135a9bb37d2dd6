import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { type FakeColony, colonyFitnessScore, request, startFakeColony } from '@aop/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend, signedCaller } from '../../backend.test-support.js';
import { createFleetFitness } from '../../services/fleet-fitness.js';

const KEY = 'internal-key-for-fleet-fitness';
const HMAC = 'hmac-secret-for-fleet-fitness';
/** The bound on one fitness call in these tests (the default is 2 s): room for a local call on a loaded machine, well under the slow colony's 5 s. */
const FITNESS_TIMEOUT_MS = 1_000;

const as = (userId: string) => signedCaller({ internalKey: KEY, hmacSecret: HMAC }, userId);
let client = 0;
/** A distinct client address per call: deployments are limited to 5 per minute per address. */
const fromAnywhere = () => ({ 'x-forwarded-for': `198.51.100.${++client % 250}` });

/** A port on 127.0.0.1 that nothing listens on: it was just bound and released. */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

interface Logged {
  fields: Record<string, unknown>;
  message: string;
}
const recorder = () => {
  const lines: Logged[] = [];
  return { lines, log: { warn: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }) } };
};

// Spec §2.10 node `fitness` (live only), §4.5 colony fitness path. The colony is a local HTTP stand-in speaking the
// paths the web's /api/x402 proxies to; the agents run on the local provider with a stand-in OpenClaw CLI.
describe('mission control graph: fitness and wallets on live nodes', () => {
  let work: string;
  let host: LocalAgentHost;
  let colony: FakeColony;
  let backend: TestBackend;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-fleet-fitness-'));
    colony = await startFakeColony();
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      readyTimeoutMs: 10_000,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend(
      {
        INTERNAL_API_KEY: KEY,
        HMAC_SECRET: HMAC,
        TRUST_PROXY: '127.0.0.1',
        X402_GATEWAY_URL: `${colony.url}/`,
        X402_FITNESS_TIMEOUT_MS: String(FITNESS_TIMEOUT_MS),
      },
      { host },
    );
    for (const [userId, agentId, name, plan] of [
      ['usr_fit', 'agt_fit_lead', 'Lead', 'collective'],
      ['usr_fit', 'agt_fit_helper', 'Helper', 'solo'],
      ['usr_fit_slow', 'agt_fit_slow', 'Slow', 'solo'],
      ['usr_fit_down', 'agt_fit_down', 'Down', 'solo'],
    ] as const) {
      const res = await request(`${backend.url}/api/deployments`, {
        headers: { ...as(userId), ...fromAnywhere() },
        json: { agentId, name, config: { autoProvision: true, plan } },
      });
      expect(res.status).toBe(201);
      await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
    }
  });
  afterAll(async () => {
    await backend.close();
    await host.shutdown();
    await colony.close();
    await rm(work, { recursive: true, force: true });
  });
  beforeEach(() => {
    colony.behaviour = {};
  });

  const graph = (userId: string) =>
    request(`${backend.url}/api/mission-control/fleet/graph?userId=${userId}`, { headers: { ...as(userId), ...fromAnywhere() } });
  const fitnessAsked = (agentId: string) => colony.requests.filter((r) => r.method === 'GET' && r.path === `/gateway/fitness/${agentId}`);

  it("every live node carries the colony's fitness score; the wallet only where the agent has one", async () => {
    const address = `0x${'cd'.repeat(20)}`;
    await backend.database.db.kysely
      .insertInto('underground_wallets')
      .values({ address, agent_id: 'agt_fit_helper', user_id: 'usr_fit', private_key_enc: 'sealed-by-the-wallet-endpoint' })
      .execute();

    const res = await graph('usr_fit');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source: 'soul', nodeCount: 2 });
    const [lead, helper] = res.body.nodes;
    expect(lead).toMatchObject({ id: 'agt_fit_lead', role: 'orchestrator', fitness: colonyFitnessScore('agt_fit_lead'), children: 1 });
    expect(lead).not.toHaveProperty('walletAddress');
    expect(helper).toMatchObject({ id: 'agt_fit_helper', fitness: colonyFitnessScore('agt_fit_helper'), walletAddress: address });
    // Parent-only fields stay on the orchestrator; nothing the platform does not measure is shown.
    expect(helper).not.toHaveProperty('children');
    expect(helper).not.toHaveProperty('url');
    for (const node of res.body.nodes) {
      for (const absent of ['endpoints', 'cycles', 'regime', 'freeEnergy']) expect(node).not.toHaveProperty(absent);
    }
    // Asked once per agent, at the gateway's configured address (its trailing slash dropped).
    expect(fitnessAsked('agt_fit_lead')).toHaveLength(1);
    expect(fitnessAsked('agt_fit_helper')).toHaveLength(1);

    // A second view within the cache period reuses the scores instead of asking again.
    const again = await graph('usr_fit');
    expect(again.body.nodes.map((n: { fitness?: number }) => n.fitness)).toEqual([
      colonyFitnessScore('agt_fit_lead'),
      colonyFitnessScore('agt_fit_helper'),
    ]);
    expect(fitnessAsked('agt_fit_lead')).toHaveLength(1);
  });

  it('a slow colony gateway is waited for only up to the bound: the graph comes without fitness', async () => {
    colony.behaviour = { delayMs: 5_000, paths: ['/gateway/fitness/agt_fit_slow'] };
    const started = Date.now();
    const res = await graph('usr_fit_slow');
    const took = Date.now() - started;
    expect(res.status).toBe(200);
    expect(took).toBeLessThan(2_500);
    expect(res.body).toMatchObject({ source: 'soul', nodeCount: 1 });
    expect(res.body.nodes[0]).toMatchObject({ id: 'agt_fit_slow', role: 'orchestrator', status: 'active', children: 0 });
    expect(res.body.nodes[0]).not.toHaveProperty('fitness');
    expect(fitnessAsked('agt_fit_slow')).toHaveLength(1);
    // The miss is remembered too: the next view does not wait on the gateway again.
    expect((await graph('usr_fit_slow')).body.nodes[0]).not.toHaveProperty('fitness');
    expect(fitnessAsked('agt_fit_slow')).toHaveLength(1);
  });

  it('a colony gateway that drops the connection gives no fitness (never the x402 fallback 50)', async () => {
    colony.behaviour = { down: true, paths: ['/gateway/fitness/agt_fit_down'] };
    const res = await graph('usr_fit_down');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source: 'soul', nodeCount: 1 });
    expect(res.body.nodes[0]).toMatchObject({ id: 'agt_fit_down', status: 'active' });
    expect(res.body.nodes[0]).not.toHaveProperty('fitness');
  });

  it('the fallback graph carries no fitness and asks nobody', async () => {
    const before = colony.requests.length;
    const res = await graph('usr_fit_nobody');
    expect(res.body).toMatchObject({ source: 'fallback', nodes: [{ id: 'atlas' }] });
    expect(res.body.nodes[0]).not.toHaveProperty('fitness');
    expect(colony.requests.length).toBe(before);
  });
});

// The fitness source on its own, against the same local colony stand-in: which answers count, what is logged, the
// time bound and the cache.
describe('fleet fitness client', () => {
  let colony: FakeColony;
  beforeAll(async () => {
    colony = await startFakeColony();
  });
  afterAll(async () => {
    await colony.close();
  });
  beforeEach(() => {
    colony.behaviour = {};
  });

  it('scores agents in parallel; ids are sent as one encoded path segment', async () => {
    const { log, lines } = recorder();
    const fitness = createFleetFitness({ gatewayUrl: colony.url, timeoutMs: 1_000, log });
    colony.behaviour = { delayMs: 400 };
    const started = Date.now();
    const scores = await fitness.scores(['agt_a', 'agt b/c']);
    // Two calls of 400 ms each, side by side rather than one after the other.
    expect(Date.now() - started).toBeLessThan(750);
    expect(scores).toEqual(
      new Map([
        ['agt_a', colonyFitnessScore('agt_a')],
        ['agt b/c', colonyFitnessScore('agt b/c')],
      ]),
    );
    expect(colony.requests.map((r) => r.path)).toContain('/gateway/fitness/agt%20b%2Fc');
    expect(lines).toEqual([]);
  });

  it('not configured: no score, no call, no log line', async () => {
    const { log, lines } = recorder();
    const fitness = createFleetFitness({ gatewayUrl: undefined, timeoutMs: 1_000, log });
    expect(await fitness.scores(['agt_a'])).toEqual(new Map());
    expect(lines).toEqual([]);
  });

  it('unreachable, failing, non-JSON or misshapen answers give no score; the log says why without their content', async () => {
    const unreachable = recorder();
    const closed = createFleetFitness({ gatewayUrl: await closedPortUrl(), timeoutMs: 1_000, log: unreachable.log });
    expect(await closed.scores(['agt_a'])).toEqual(new Map());
    expect(unreachable.lines).toEqual([
      { fields: { agentId: 'agt_a', reason: 'unreachable (ECONNREFUSED)' }, message: 'mission control: no fitness score for the agent' },
    ]);

    const cases = [
      [{ failWith: 503 }, 'upstream answered HTTP 503'],
      [{ failWith: 402 }, 'upstream answered HTTP 402'],
      [{ nonJson: true }, 'upstream answer is not JSON'],
    ] as const;
    for (const [behaviour, reason] of cases) {
      colony.behaviour = behaviour;
      const { log, lines } = recorder();
      expect(await createFleetFitness({ gatewayUrl: colony.url, timeoutMs: 1_000, log }).scores(['agt_a'])).toEqual(new Map());
      expect(lines.map((l) => l.fields.reason)).toEqual([reason]);
    }

    // A 200 that is not a fitness answer: a score outside 0-100 is not shown as one.
    const wrongShape = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ score: 140, tier: 'gold' }));
    });
    await new Promise<void>((resolve) => wrongShape.listen(0, '127.0.0.1', resolve));
    try {
      const { log, lines } = recorder();
      const url = `http://127.0.0.1:${(wrongShape.address() as AddressInfo).port}`;
      expect(await createFleetFitness({ gatewayUrl: url, timeoutMs: 1_000, log }).scores(['agt_a'])).toEqual(new Map());
      expect(lines.map((l) => l.fields.reason)).toEqual(['upstream answer has the wrong shape']);
    } finally {
      await new Promise<void>((resolve) => wrongShape.close(() => resolve()));
    }
  });

  it('each call is bounded; concurrent views share one call; scores and misses expire after the cache period', async () => {
    let clock = 1_000_000;
    const { log, lines } = recorder();
    const fitness = createFleetFitness({ gatewayUrl: colony.url, timeoutMs: 150, cacheMs: 10_000, log, now: () => clock });
    const asked = () => colony.requests.filter((r) => r.path === '/gateway/fitness/agt_cached').length;

    colony.behaviour = { delayMs: 2_000 };
    const started = Date.now();
    const [first, second] = await Promise.all([fitness.scores(['agt_cached']), fitness.scores(['agt_cached'])]);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(first).toEqual(new Map());
    expect(second).toEqual(new Map());
    expect(asked()).toBe(1);
    expect(lines.map((l) => l.fields.reason)).toEqual(['timed out after 150 ms']);

    // The gateway recovers: the miss is kept until the cache period ends, then the score is read and kept.
    colony.behaviour = {};
    clock += 9_999;
    expect(await fitness.scores(['agt_cached'])).toEqual(new Map());
    expect(asked()).toBe(1);
    clock += 1;
    expect(await fitness.scores(['agt_cached'])).toEqual(new Map([['agt_cached', colonyFitnessScore('agt_cached')]]));
    expect(asked()).toBe(2);
    clock += 5_000;
    expect(await fitness.scores(['agt_cached'])).toEqual(new Map([['agt_cached', colonyFitnessScore('agt_cached')]]));
    expect(asked()).toBe(2);
  });
});
