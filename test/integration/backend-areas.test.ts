import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { openSse, request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { SESSION_COOKIE, createSession } from '../../apps/web/src/platform/sessions.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const ADMIN_EMAIL = 'ops@backend-areas.example.com';
const SHARED = {
  INTERNAL_API_KEY: 'internal-key-for-backend-areas-e2e',
  HMAC_SECRET: 'hmac-secret-for-backend-areas-e2e',
  TRUST_PROXY: '127.0.0.1',
  ADMIN_EMAILS: ADMIN_EMAIL,
};

let ip = 0;
const from = () => ({ 'x-forwarded-for': `198.18.1.${(++ip % 250) + 1}` });

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** A GET with `path` sent exactly as written (fetch would normalise it), JSON answer. */
function rawGet(base: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port: Number(port), path, headers }, (res) => {
      let text = '';
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

// Issue #10: the backend's user areas (spec §4.11 underground; §4.18 installations, metrics, coordination, tool host,
// logs, workspace browse) through the web for the signed-in user: web → backend (signed user context) → agent host.
describe('backend user areas through the web', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let offlineWeb: TestWeb;
  let owner: { userId: string; cookie: string };
  let other: { userId: string; cookie: string };
  let agentId: string;

  const call = (path: string, options: { cookie?: string; key?: string; method?: string; json?: unknown; target?: TestWeb } = {}) =>
    request(`${(options.target ?? web).url}${path}`, {
      ...(options.method ? { method: options.method } : {}),
      ...(options.json === undefined ? {} : { json: options.json }),
      headers: {
        ...from(),
        ...(options.cookie ? { cookie: options.cookie } : {}),
        ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      },
    });

  const customer = (email?: string) => web.signIn({ plan: 'solo', ...(email ? { email } : {}) });

  async function apiKey(cookie: string): Promise<string> {
    const created = await call('/api/keys', { cookie, json: { name: 'areas' } });
    expect(created.status).toBe(201);
    return created.body.key;
  }

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-backend-areas-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      // The stand-in runtime is plain Node: it runs on this process's Node, whatever Node 24 install the machine has.
      nodeBin: process.execPath,
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend(SHARED, { host });
    [web, offlineWeb] = await Promise.all([
      startWeb({ ...SHARED, BACKEND_API_URL: backend.url }),
      startWeb({ ...SHARED, BACKEND_API_URL: `http://127.0.0.1:${await closedPort()}` }),
    ]);
    owner = await customer();
    other = await customer();
    const res = await call('/api/provision', { cookie: owner.cookie, json: { name: 'Areas', telegramToken: 'tg-token' } });
    expect(res.status).toBe(200);
    agentId = res.body.agentId;
    await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([web?.close(), offlineWeb?.close()]);
    await backend?.close();
    await host?.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('answers 401 Unauthorized without a session, before reaching the backend', async () => {
    const paths: [string, string][] = [
      ['GET', '/api/underground/events'],
      ['POST', '/api/underground/events'],
      ['POST', '/api/underground/splits'],
      ['GET', `/api/browse/tree?agentId=${agentId}`],
      ['GET', `/api/logs/${agentId}/stream`],
      ['GET', `/api/logs/${agentId}/history`],
      ['GET', '/api/installations'],
      ['POST', '/api/register-link'],
      ['GET', `/api/metrics/${owner.userId}/summary`],
      ['GET', '/api/swarms'],
      ['GET', '/api/colony/status'],
      ['GET', '/api/tool-host/examples'],
    ];
    for (const [method, path] of paths) {
      const res = await call(path, { method, ...(method === 'POST' ? { json: {} } : {}) });
      expect([path, res.status, res.body]).toEqual([path, 401, { error: 'Unauthorized' }]);
    }
    // The same on a web whose backend is down: authentication comes first.
    const offline = await call('/api/underground/events', { target: offlineWeb });
    expect([offline.status, offline.body]).toEqual([401, { error: 'Unauthorized' }]);
    // A cookie that names no session is no session.
    const bogus = await call('/api/swarms', { cookie: 'service-session=not-a-session' });
    expect(bogus.status).toBe(401);
  });

  it('creates and lists underground events as the session user; a user id in the body is ignored', async () => {
    const created = await call('/api/underground/events', {
      cookie: owner.cookie,
      json: { agentId, name: 'Launch party', venue: 'Warehouse', ticketPriceUsdc: 12.5, userId: other.userId, user_id: other.userId },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ agent_id: agentId, name: 'Launch party', venue: 'Warehouse', ticket_price_usdc: 12.5 });
    expect(created.body).toEqual(expect.objectContaining({ total_tickets: 100, event_date: null }));

    const mine = await call('/api/underground/events', { cookie: owner.cookie });
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual([created.body]);
    // The user named in the body got nothing: the event is the caller's.
    const theirs = await call('/api/underground/events', { cookie: other.cookie });
    expect([theirs.status, theirs.body]).toEqual([200, []]);
    // A query naming another user changes nothing either.
    const queried = await call(`/api/underground/events?userId=${owner.userId}`, { cookie: other.cookie });
    expect(queried.body).toEqual([]);

    // Another user cannot create an event for the owner's agent (spec §4.11: 403), and bad input is the backend's 400.
    const foreign = await call('/api/underground/events', { cookie: other.cookie, json: { agentId, name: 'Hijack' } });
    expect([foreign.status, foreign.body]).toEqual([403, { error: 'Agent not owned' }]);
    const noName = await call('/api/underground/events', { cookie: owner.cookie, json: { agentId } });
    expect(noName.status).toBe(400);
    expect(noName.body.error).toMatch(/name/);
    const noBody = await call('/api/underground/events', { cookie: owner.cookie, method: 'POST' });
    expect([noBody.status, noBody.body]).toEqual([400, { error: 'agentId is required' }]);
    const notJson = await request(`${web.url}/api/underground/events`, {
      body: 'agentId=x',
      headers: { ...from(), cookie: owner.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(notJson.status).toBe(400);
  });

  it('needs a cookie session for wallets, splits, bus webhooks and home linking (an API key gets 403)', async () => {
    const key = await apiKey(owner.cookie);
    const refused = { error: 'This action needs a signed-in session, not an API key' };
    for (const [method, path, json] of [
      ['POST', '/api/underground/wallets', { agentId }],
      ['POST', '/api/underground/splits', { agentId, name: 'Royalties', totalAmount: 10, recipients: [] }],
      ['PUT', `/api/underground/agents/${agentId}/webhook`, { url: 'https://hooks.example.com/bus' }],
      ['POST', '/api/register-link', { installationId: 'ins_x', signature: 'sig' }],
    ] as const) {
      const res = await call(path, { key, method, json });
      expect([path, res.status, res.body]).toEqual([path, 403, refused]);
    }
    // Reading works with the key.
    const events = await call('/api/underground/events', { key });
    expect(events.status).toBe(200);
    expect(events.body).toHaveLength(1);

    // With the session: one wallet per agent (201, then 200 with the same wallet), splits recorded exactly.
    const wallet = await call('/api/underground/wallets', { cookie: owner.cookie, json: { agentId } });
    expect(wallet.status).toBe(201);
    const again = await call('/api/underground/wallets', { cookie: owner.cookie, json: { agentId } });
    expect([again.status, again.body]).toEqual([200, wallet.body]);
    const foreignWallet = await call('/api/underground/wallets', { cookie: other.cookie, json: { agentId } });
    expect([foreignWallet.status, foreignWallet.body]).toEqual([403, { error: 'Agent not owned' }]);
    const split = await call('/api/underground/splits', {
      cookie: owner.cookie,
      json: {
        agentId,
        name: 'Royalties',
        totalAmount: 10,
        recipients: [
          { address: `0x${'1'.repeat(40)}`, share: 60 },
          { address: `0x${'2'.repeat(40)}`, share: 40 },
        ],
      },
    });
    expect(split.status).toBe(200);
    expect(split.body).toEqual({ success: true, splitId: expect.anything(), status: 'completed' });
    // The bus itself is the backend's alone.
    const bus = await call('/api/underground/bus/send', {
      cookie: owner.cookie,
      json: { messageId: 'm', action: 'PING', signature: '0x' },
    });
    expect([bus.status, bus.body]).toEqual([404, { error: 'Not found' }]);
  });

  it("answers metrics for the caller's own id only (403 for another id, administrators excepted)", async () => {
    const own = await call(`/api/metrics/${owner.userId}/summary`, { cookie: owner.cookie });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ userId: owner.userId, agents: { total: 1 }, currency: 'USD' });
    const historical = await call(`/api/metrics/${owner.userId}/historical?days=3`, { cookie: owner.cookie });
    expect(historical.status).toBe(200);
    expect(historical.body).toMatchObject({ userId: owner.userId, currency: 'USD' });
    const badDays = await call(`/api/metrics/${owner.userId}/performance?days=soon`, { cookie: owner.cookie });
    expect([badDays.status, badDays.body]).toEqual([400, { error: 'days must be an integer' }]);

    for (const what of ['historical', 'performance', 'summary']) {
      const foreign = await call(`/api/metrics/${owner.userId}/${what}`, { cookie: other.cookie });
      expect([foreign.status, foreign.body]).toEqual([403, { error: 'Forbidden' }]);
    }
    const admin = await customer(ADMIN_EMAIL);
    const seen = await call(`/api/metrics/${owner.userId}/summary`, { cookie: admin.cookie });
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ userId: owner.userId, agents: { total: 1 } });

    // The web's own gateway metrics are still its own.
    const gatewayMetrics = await call('/api/metrics', { cookie: owner.cookie });
    expect(gatewayMetrics.status).toBe(200);
    expect(gatewayMetrics.body).toMatchObject({ days: 7, totals: expect.any(Object), daily: expect.any(Array) });
    expect(gatewayMetrics.body).not.toHaveProperty('userId');
  });

  it("browses the workspace of the user's agent; another user's agent is 404", async () => {
    const tree = await call(`/api/browse/tree?agentId=${agentId}&depth=1`, { cookie: owner.cookie });
    expect(tree.status).toBe(200);
    expect(tree.body).toMatchObject({ agentId, path: '', depth: 1 });
    expect(tree.body.entries).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'AGENTS.md', type: 'file' })]));

    const read = await call(`/api/browse/read?agentId=${agentId}&path=AGENTS.md`, { cookie: owner.cookie });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ agentId, path: 'AGENTS.md', encoding: 'utf8', content: '# AGENTS.md\n' });

    const written = await call('/api/browse/write', {
      cookie: owner.cookie,
      json: { agentId, path: 'notes/today.md', content: 'written through the web\n' },
    });
    expect(written.status).toBe(200);
    expect(written.body).toMatchObject({ success: true, agentId });
    const back = await call(`/api/browse/read?agentId=${agentId}&path=notes%2Ftoday.md`, { cookie: owner.cookie });
    expect(back.body.content).toBe('written through the web\n');

    for (const path of [`/api/browse/tree?agentId=${agentId}`, `/api/browse/read?agentId=${agentId}&path=AGENTS.md`]) {
      const foreign = await call(path, { cookie: other.cookie });
      expect([foreign.status, foreign.body]).toEqual([404, { error: 'Agent not found' }]);
    }
    const outside = await call(`/api/browse/read?agentId=${agentId}&path=..%2F..%2Fetc%2Fpasswd`, { cookie: owner.cookie });
    expect(outside.status).toBe(400);
    const missing = await call('/api/browse/tree', { cookie: owner.cookie });
    expect([missing.status, missing.body]).toEqual([400, { error: 'agentId is required' }]);
  });

  it('relays the log stream unbuffered: ready, new lines, and the upstream closes when the browser leaves', async () => {
    const url = `${web.url}/api/logs/${agentId}/stream?tail=0`;
    const active = async () => (await call('/api/logs/active', { cookie: owner.cookie })).body.count as number;

    const sse = await openSse(url, { ...from(), cookie: owner.cookie });
    expect(sse.res.status).toBe(200);
    expect(sse.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(sse.res.headers.get('x-accel-buffering')).toBe('no');
    expect(sse.res.headers.get('x-request-id')).toBeTruthy();
    await until(() => sse.events.length > 0, 'the ready event');
    expect(sse.events[0]).toEqual({
      event: 'ready',
      data: { streamId: expect.stringMatching(/^lgs_/), agentId, startedAt: expect.any(String) },
    });
    expect(await active()).toBe(1);

    // A line written now reaches the browser while the stream stays open.
    await appendFile(join(host.paths(agentId).logs, 'gateway.log'), 'relayed through the web\n');
    await until(() => sse.events.some((e) => e.event === 'log' && e.data.line === 'relayed through the web'), 'the new line');

    // The browser leaves: the web closes its upstream, so the backend ends and forgets the stream.
    sse.close();
    await until(async () => (await active()) === 0, 'the backend to drop the stream');

    // Ended from the other side, the stream closes cleanly with the backend's `end` event.
    const second = await openSse(url, { ...from(), cookie: owner.cookie });
    await until(() => second.events.length > 0, 'the second ready event');
    const stop = await call(`/api/logs/${agentId}/stop`, { cookie: owner.cookie, method: 'POST' });
    expect(stop.body).toEqual({ success: true, agentId, stopped: 1 });
    await until(() => second.ended, 'the stream to end');
    expect(second.events.at(-1)).toEqual({ event: 'end', data: { reason: 'stopped' } });

    // Refusals are the backend's JSON: another user's agent is 404, a bad tail 400.
    const foreign = await call(`/api/logs/${agentId}/stream`, { cookie: other.cookie });
    expect([foreign.status, foreign.body]).toEqual([404, { error: 'Agent not found' }]);
    const badTail = await call(`/api/logs/${agentId}/stream?tail=lots`, { cookie: owner.cookie });
    expect([badTail.status, badTail.body]).toEqual([400, { error: 'Invalid tail: use 0 to 1000' }]);
    const history = await call(`/api/logs/${agentId}/history?limit=5`, { cookie: owner.cookie });
    expect(history.status).toBe(200);
    expect(history.body).toMatchObject({ agentId, provider: 'local', limit: 5 });
    // A dot segment would reach another backend route once the URL is parsed: refused on the web.
    // (Sent with node:http: fetch would resolve the dot segment itself.)
    const dots = await rawGet(web.url, '/api/logs/%2e%2e/history', { ...from(), cookie: owner.cookie });
    expect([dots.status, dots.body]).toEqual([400, { error: 'Invalid agentId' }]);
  });

  it('proxies swarms, colony, installations and the tool host for the user', async () => {
    const created = await call('/api/swarms', { cookie: owner.cookie, json: { name: 'Crew', agentIds: [agentId] } });
    expect(created.status).toBe(201);
    expect(created.body.swarm).toMatchObject({ name: 'Crew', size: 1, agents: [{ id: agentId }] });
    expect((await call('/api/swarms', { cookie: owner.cookie })).body.swarms).toHaveLength(1);
    expect((await call('/api/swarms', { cookie: other.cookie })).body).toEqual({ swarms: [] });
    const foreignDelete = await call(`/api/swarms/${created.body.swarm.id}`, { cookie: other.cookie, method: 'DELETE' });
    expect([foreignDelete.status, foreignDelete.body]).toEqual([404, { error: 'Swarm not found' }]);

    const colony = await call('/api/colony/status', { cookie: owner.cookie });
    expect(colony.status).toBe(200);
    expect(colony.body).toMatchObject({ provider: 'local', counts: { total: 1 }, swarms: [{ name: 'Crew', size: 1 }] });

    const deleted = await call(`/api/swarms/${created.body.swarm.id}`, { cookie: owner.cookie, method: 'DELETE' });
    expect(deleted.body).toEqual({ id: created.body.swarm.id, deleted: true });

    const installations = await call('/api/installations', { cookie: owner.cookie });
    expect([installations.status, installations.body]).toEqual([200, { installations: [] }]);
    const noKey = await call('/api/register-home', { cookie: owner.cookie, json: { name: 'Home' } });
    expect([noKey.status, noKey.body]).toEqual([400, { error: 'publicKey is required' }]);

    const examples = await call('/api/tool-host/examples', { cookie: owner.cookie });
    expect(examples.status).toBe(200);
    expect(Array.isArray(examples.body.examples)).toBe(true);

    // Documented in the web's OpenAPI document; the bus is not among them.
    const paths = Object.keys((await call('/api/openapi.json')).body.paths);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/api/underground/events',
        '/api/underground/agents/{agentId}/webhook',
        '/api/browse/git-sync',
        '/api/logs/{agentId}/stream',
        '/api/metrics/{userId}/summary',
        '/api/metrics',
        '/api/swarms/{id}',
        '/api/tool-host/validate-config',
      ]),
    );
    expect(paths).not.toContain('/api/underground/bus/send');
  });

  it('refuses a relayed body nested 10,000 levels deep or holding U+0000 with 400 at the web (§7), not a 500', async () => {
    const deep = `{"name":"Crew","agentIds":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    for (const path of ['/api/swarms', '/api/underground/events', '/api/tool-host/validate-config', '/api/register-home']) {
      const res = await request(`${web.url}${path}`, {
        method: 'POST',
        body: deep,
        headers: { ...from(), cookie: owner.cookie, 'content-type': 'application/json' },
      });
      expect({ path, status: res.status, body: res.body }).toEqual({
        path,
        status: 400,
        body: { error: 'Request body nested too deeply' },
      });
    }
    const nul = await call('/api/swarms', { cookie: owner.cookie, json: { name: 'a\u0000b', agentIds: [agentId] } });
    expect({ status: nul.status, body: nul.body }).toEqual({ status: 400, body: { error: 'Invalid characters in request' } });
  });

  it('falls back past a proxy error page to the stream; ends relayed streams when the web shuts down', async () => {
    // A second web instance whose primary backend URL answers a proxy's HTML error page; the fallback is the backend.
    const errorPage = createHttpServer((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>Bad gateway</html>');
    });
    await new Promise<void>((r) => errorPage.listen(0, '127.0.0.1', r));
    const primary = `http://127.0.0.1:${(errorPage.address() as AddressInfo).port}`;
    const closing = await startWeb({ ...SHARED, BACKEND_API_URL: primary, BACKEND_API_FALLBACK_URL: backend.url });
    onTestFinished(() => new Promise<void>((r) => errorPage.close(() => r())));
    let closed = false;
    try {
      await closing.database.db.kysely
        .insertInto('users')
        .values({ id: owner.userId, email: `${owner.userId}@example.com`, name: 'Owner' })
        .execute();
      const { token } = await createSession(closing.database.db.kysely, owner.userId);
      const sse = await openSse(`${closing.url}/api/logs/${agentId}/stream?tail=0`, { ...from(), cookie: `${SESSION_COOKIE}=${token}` });
      await until(() => sse.events.length > 0, 'the ready event');
      await closing.close();
      closed = true;
      await until(() => sse.ended, 'the stream to end');
      await until(async () => (await call('/api/logs/active', { cookie: owner.cookie })).body.count === 0, 'the backend to drop it');
    } finally {
      if (!closed) await closing.close();
    }
  });

  it('answers 502 Backend unreachable when the backend is down', async () => {
    const user = await offlineWeb.signIn();
    for (const [method, path] of [
      ['GET', '/api/underground/events'],
      ['POST', '/api/underground/events'],
      ['GET', '/api/browse/tree?agentId=agt_x'],
      ['GET', `/api/metrics/${user.userId}/summary`],
      ['GET', '/api/logs/agt_x/stream'],
      ['GET', '/api/swarms'],
    ] as const) {
      const res = await call(path, { target: offlineWeb, cookie: user.cookie, method, ...(method === 'POST' ? { json: {} } : {}) });
      expect([path, res.status, res.body]).toEqual([path, 502, { error: 'Backend unreachable' }]);
    }
  });
});
