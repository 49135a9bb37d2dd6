import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from '@aop/db';
import type { LocalAgentHost } from '@aop/provisioner';
import { request, scrapeMetrics } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, signedCaller, startBackend, type TestBackend } from '../backend.test-support.js';

const KEY = 'internal-key-for-metrics-tests';
const HMAC = 'hmac-secret-for-metrics-tests';
const TOKEN = 'metrics-token-for-the-backend-test';
const AGENT = 'agt_metrics';

// Issue #21 "Metrics": the backend's /metrics, scraped over HTTP before and after real requests. The agent host is the
// local provider running the stand-in gateway (real processes, real /readyz, the gateway's WebSocket protocol).
describe('backend /metrics (issue #21)', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const scrape = () => scrapeMetrics(backend.url, auth);

  let client = 0;
  const call = (method: string, path: string, json?: unknown, ip = `203.0.113.${++client % 250}`) =>
    request(`${backend.url}/api${path}`, {
      method,
      headers: { ...signedCaller({ internalKey: KEY, hmacSecret: HMAC }, 'usr_metrics'), 'x-forwarded-for': ip },
      ...(json === undefined ? {} : { json }),
    });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-backend-metrics-'));
    host = await fakeRuntimeHost(work, { gatewayProtocol: true });
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, TRUST_PROXY: '127.0.0.1', METRICS_TOKEN: TOKEN }, { host });
  });
  afterAll(async () => {
    await backend?.close();
    await host?.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('refuses a scrape without the token or with a wrong one', async () => {
    expect((await scrapeMetrics(backend.url)).status).toBe(401);
    expect((await scrapeMetrics(backend.url, { authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    // The internal API key is not the metrics token.
    expect((await scrapeMetrics(backend.url, { authorization: `Bearer ${KEY}` })).status).toBe(401);
    expect((await scrape()).status).toBe(200);
  });

  it('shows a provisioned agent live, its start timed, and the request that made it', async () => {
    const before = await scrape();
    expect(before.value('aop_agents', { state: 'live', provider: 'local' })).toBe(0);
    const deployRequest = { method: 'POST', route: '/api/deployments', status: '201' };

    const deployed = await call('POST', '/deployments', { agentId: AGENT, name: 'Metered', config: { telegramToken: 'tg', plan: 'solo' } });
    expect(deployed.status).toBe(201);
    await host.waitUntilReady(AGENT, { timeoutMs: 15_000 });

    const after = await scrape();
    expect(after.value('aop_agents', { state: 'live', provider: 'local' })).toBe(1);
    expect(after.value('aop_agents', { provider: 'local' })).toBe(1);
    expect(after.value('aop_agent_host_up', { provider: 'local' })).toBe(1);
    expect(after.value('aop_agent_start_duration_seconds_count', { kind: 'provision' })).toBe(
      before.value('aop_agent_start_duration_seconds_count', { kind: 'provision' }) + 1,
    );
    expect(after.value('aop_agent_start_duration_seconds_sum', { kind: 'provision' })).toBeGreaterThan(0);
    expect(after.value('aop_http_requests_total', deployRequest)).toBe(before.value('aop_http_requests_total', deployRequest) + 1);
    expect(after.value('aop_http_request_duration_seconds_count', deployRequest)).toBe(
      before.value('aop_http_request_duration_seconds_count', deployRequest) + 1,
    );
    // The embedded database is one session, a pool of one; on a Postgres server (DATABASE_URL) the pool's size.
    expect(after.value('aop_db_pool_connections', { state: 'max' })).toBe(backend.database.db.pool().max);
    if (!process.env.DATABASE_URL) expect(backend.database.db.pool().max).toBe(1);
    expect(after.has('aop_db_pool_waiting')).toBe(true);
  });

  it('follows the agent into hibernation and times its wake', async () => {
    await host.hibernate(AGENT);
    const asleep = await scrape();
    expect(asleep.value('aop_agents', { state: 'hibernated' })).toBe(1);
    expect(asleep.value('aop_agents', { state: 'live' })).toBe(0);

    const started = await call('POST', `/agents/${AGENT}/start`);
    expect(started.status).toBe(200);
    await host.waitUntilReady(AGENT, { timeoutMs: 15_000 });
    const awake = await scrape();
    expect(awake.value('aop_agents', { state: 'live' })).toBe(1);
    expect(awake.value('aop_agent_start_duration_seconds_count', { kind: 'wake' })).toBe(
      asleep.value('aop_agent_start_duration_seconds_count', { kind: 'wake' }) + 1,
    );
    // The route's pattern, not the agent's id.
    expect(awake.value('aop_http_requests_total', { route: '/api/agents/:id/start', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(awake.text).not.toContain(`/api/agents/${AGENT}`);
  });

  it('counts a gateway call the agent refuses', async () => {
    const before = await scrape();
    // An allowed method the stand-in gateway does not implement: it answers METHOD_NOT_FOUND, the backend 502.
    const refused = await call('POST', `/agents/${AGENT}/rpc`, { method: 'cron.status' });
    expect(refused.status).toBe(502);
    const after = await scrape();
    expect(after.value('aop_gateway_errors_total', { code: 'METHOD_NOT_FOUND' })).toBe(
      before.value('aop_gateway_errors_total', { code: 'METHOD_NOT_FOUND' }) + 1,
    );
  });

  // PGlite's one session makes a second query wait behind an open transaction; a Postgres pool (DATABASE_URL) lends
  // it another connection, so there is nothing to wait for there.
  it.skipIf(Boolean(process.env.DATABASE_URL))('shows the database connection lent out and a query waiting for it', async () => {
    const idle = await scrape();
    expect(idle.value('aop_db_pool_connections', { state: 'in_use' })).toBe(0);
    expect(idle.value('aop_db_pool_waiting')).toBe(0);
    // A transaction holds PGlite's one session across a JavaScript await; a query behind it waits for the session.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const held = backend.database.db.kysely.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      entered();
      await gate;
    });
    await inside;
    const queued = sql`select 2`.execute(backend.database.db.kysely);
    try {
      const busy = await scrape();
      expect(busy.value('aop_db_pool_connections', { state: 'in_use' })).toBe(1);
      expect(busy.value('aop_db_pool_connections', { state: 'idle' })).toBe(0);
      expect(busy.value('aop_db_pool_waiting')).toBe(1);
    } finally {
      release();
      await Promise.all([held, queued]);
    }
    const after = await scrape();
    expect(after.value('aop_db_pool_connections', { state: 'in_use' })).toBe(0);
    expect(after.value('aop_db_pool_waiting')).toBe(0);
  });

  it('counts the 429 of the deployments limit by its rule', async () => {
    const rule = { rule: 'backend-deployments', route: '/api/deployments' };
    const before = await scrape();
    const statuses: number[] = [];
    // One client address: the limit is 5 POSTs a minute; the bodies are refused (400) once counted.
    for (let i = 0; i < 6; i++) statuses.push((await call('POST', '/deployments', {}, '203.0.113.251')).status);
    expect(statuses).toEqual([400, 400, 400, 400, 400, 429]);
    const after = await scrape();
    expect(after.value('aop_rate_limit_refusals_total', rule)).toBe(before.value('aop_rate_limit_refusals_total', rule) + 1);
  });
});
