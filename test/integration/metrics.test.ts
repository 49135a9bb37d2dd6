import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import type { LocalAgentHost } from '@aop/provisioner';
import { request, scrapeMetrics } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { GATEWAY_LIMIT_PER_MINUTE } from '../../apps/web/src/modules/plugin-gateway/plugin-gateway.routes.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

// Issue #21 "Metrics": the web service's /metrics, scraped over HTTP around real requests. The plugin gateway's `agent`
// plugin runs a turn on the shared platform gateway (an OpenClaw-protocol stand-in; its token comes from the real
// backend), paid by card: payments, ledger debits and gateway failures move with it.
const TOKEN = 'metrics-token-for-the-web-test';
const PLATFORM_TOKEN = 'platform-gateway-token-for-metrics-tests';
const SHARED = {
  INTERNAL_API_KEY: 'internal-key-for-metrics-tests',
  HMAC_SECRET: 'hmac-secret-for-metrics-tests',
  TRUST_PROXY: '127.0.0.1',
};
const FAIL = 'this agent turn fails';
const PLUGIN_PATH = '/api/v1/gateway';

let lastIp = 0;
const nextIp = () => `198.18.21.${(++lastIp % 250) + 1}`;

describe('web /metrics (issue #21)', () => {
  let gateway: FakeGatewayWs;
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  const scrape = () => scrapeMetrics(web.url, { authorization: `Bearer ${TOKEN}` });
  const plugin = (json: unknown, headers: Record<string, string> = {}) =>
    request(`${web.url}${PLUGIN_PATH}`, { json, headers: { 'x-forwarded-for': nextIp(), ...headers } });

  beforeAll(async () => {
    gateway = await startFakeGatewayWs({ token: PLATFORM_TOKEN, reply: (m) => `agent says: ${m}`, failChatMessage: FAIL });
    work = await mkdtemp(join(tmpdir(), 'aop-metrics-'));
    // A local agent host (no agent is started on it): the backend then exports its agent families too.
    host = await fakeRuntimeHost(work);
    backend = await startBackend({ ...SHARED, PLATFORM_GATEWAY_TOKEN: PLATFORM_TOKEN }, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, GATEWAY_URL: gateway.httpUrl, METRICS_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await web?.close();
    await backend?.close();
    await host?.shutdown();
    await gateway?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('refuses a scrape without the token or with a wrong one', async () => {
    const missing = await scrapeMetrics(web.url);
    expect(missing.status).toBe(401);
    expect(missing.text).toBe(JSON.stringify({ error: 'Unauthorized' }));
    expect((await scrapeMetrics(web.url, { authorization: `Bearer ${TOKEN.toUpperCase()}` })).status).toBe(401);
    expect((await scrapeMetrics(web.url, { authorization: `Bearer ${SHARED.INTERNAL_API_KEY}` })).status).toBe(401);
    expect((await scrape()).status).toBe(200);
  });

  it('counts a paid plugin call: the request, the card payment and the ledger debit', async () => {
    const alice = await web.signIn();
    const before = await scrape();
    const res = await plugin({ message: 'plan my week' }, { cookie: alice.cookie });
    expect(res.status).toBe(200);
    const after = await scrape();

    const labels = { method: 'POST', route: PLUGIN_PATH, status: '200' };
    expect(after.value('aop_http_requests_total', labels)).toBe(before.value('aop_http_requests_total', labels) + 1);
    expect(after.value('aop_http_request_duration_seconds_count', labels)).toBe(
      before.value('aop_http_request_duration_seconds_count', labels) + 1,
    );
    const charged = { method: 'card', outcome: 'charged' };
    expect(after.value('aop_payments_total', charged)).toBe(before.value('aop_payments_total', charged) + 1);
    // The agent plugin's default price.
    expect(after.value('aop_payments_usd_total', charged) - before.value('aop_payments_usd_total', charged)).toBeCloseTo(0.05, 6);
    expect(after.value('aop_usage_debits_total', { kind: 'plugin' })).toBe(before.value('aop_usage_debits_total', { kind: 'plugin' }) + 1);
    expect(
      after.value('aop_usage_debits_usd_total', { kind: 'plugin' }) - before.value('aop_usage_debits_usd_total', { kind: 'plugin' }),
    ).toBeCloseTo(0.05, 6);
    // The database pool is read at the scrape: PGlite's one session, or the Postgres pool's size (DATABASE_URL).
    expect(after.value('aop_db_pool_connections', { state: 'max' })).toBe(web.database.db.pool().max);
    if (!process.env.DATABASE_URL) expect(web.database.db.pool().max).toBe(1);
  });

  it('counts an anonymous free call apart from paid ones', async () => {
    const free = { method: 'card', outcome: 'free' };
    const before = await scrape();
    expect((await plugin({ message: 'hello' })).status).toBe(200);
    const after = await scrape();
    expect(after.value('aop_payments_total', free)).toBe(before.value('aop_payments_total', free) + 1);
    expect(after.value('aop_payments_total', { outcome: 'charged' })).toBe(before.value('aop_payments_total', { outcome: 'charged' }));
  });

  it('counts a failed gateway turn and the payment it gave back', async () => {
    const dave = await web.signIn();
    const before = await scrape();
    const res = await plugin({ message: FAIL }, { cookie: dave.cookie });
    expect(res.status).toBe(502);
    const after = await scrape();
    // The gateway's chat endpoint answered 500: one GatewayError, by its code.
    expect(after.value('aop_gateway_errors_total', { code: 'HTTP_500' })).toBe(
      before.value('aop_gateway_errors_total', { code: 'HTTP_500' }) + 1,
    );
    const released = { method: 'card', outcome: 'released' };
    expect(after.value('aop_payments_total', released)).toBe(before.value('aop_payments_total', released) + 1);
    expect(after.value('aop_payments_usd_total', released) - before.value('aop_payments_usd_total', released)).toBeCloseTo(0.05, 6);
  });

  it('counts payment refusals by method and status', async () => {
    const refused = { method: 'invalid', status: '400' };
    const before = await scrape();
    const res = await plugin({ message: 'hi' }, { 'x-payment-method': 'barter' });
    expect(res.status).toBe(400);
    const after = await scrape();
    expect(after.value('aop_payment_refusals_total', refused)).toBe(before.value('aop_payment_refusals_total', refused) + 1);
  });

  it('counts the 429 of the plugin gateway limit by its rule', async () => {
    const rule = { rule: 'gateway', route: PLUGIN_PATH };
    const before = await scrape();
    const ip = '198.18.22.1';
    let last = 0;
    // One client address; bodies that are not objects are refused (400) after the limit counted them.
    for (let i = 0; i <= GATEWAY_LIMIT_PER_MINUTE; i++) last = (await plugin([], { 'x-forwarded-for': ip })).status;
    expect(last).toBe(429);
    const after = await scrape();
    expect(after.value('aop_rate_limit_refusals_total', rule)).toBe(before.value('aop_rate_limit_refusals_total', rule) + 1);
  });

  it('reports the queue depth of a background job from its table', async () => {
    const queue = { queue: 'security events (RISC)' };
    const before = await scrape();
    expect(before.has('aop_queue_depth', queue)).toBe(true);
    await web.database.db.kysely
      .insertInto('security_events')
      .values({
        jti: `jti-metrics-${Date.now()}`,
        source: 'risc',
        issuer: null,
        subject: null,
        email: null,
        event_types: JSON.stringify(['https://schemas.openid.net/secevent/risc/event-type/sessions-revoked']),
        payload: JSON.stringify({}),
        received_at: new Date(),
      })
      .execute();
    const after = await scrape();
    expect(after.value('aop_queue_depth', queue)).toBe(before.value('aop_queue_depth', queue) + 1);
  });

  it('exports every family the Grafana dashboard queries', async () => {
    const dashboard = readFileSync(new URL('../../deploy/grafana/aop.json', import.meta.url), 'utf8');
    const exprs: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'expr' && typeof value === 'string') exprs.push(value);
          else walk(value);
        }
      }
    };
    walk(JSON.parse(dashboard));
    expect(exprs.length).toBeGreaterThan(20);
    const queried = new Set(exprs.flatMap((expr) => expr.match(/\b(?:aop|process|nodejs)_[a-z0-9_]+/g) ?? []));
    // Families are listed by their `# TYPE` line, samples or not; a histogram is queried through its _bucket/_count.
    const exported = new Set<string>();
    for (const answer of [await scrape(), await scrapeMetrics(backend.url)]) {
      expect(answer.status).toBe(200);
      for (const [, name, type] of answer.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
        exported.add(name as string);
        if (type === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) exported.add(`${name}${suffix}`);
      }
    }
    expect([...queried].filter((name) => !exported.has(name))).toEqual([]);
  });
});
