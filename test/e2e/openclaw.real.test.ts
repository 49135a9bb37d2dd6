import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DeviceIdentity, GatewayError, connectGateway, createDeviceIdentity } from '@aop/gateway-client';
import {
  LocalAgentHost,
  PINNED_OPENCLAW_VERSION,
  UpdateFailedError,
  isAlive,
  openClawRuntime,
  processTree,
  runtimeProblem,
} from '@aop/provisioner';
import { FAKE_LLM_REPLY, type FakeLlm, request, startFakeLlm } from '@aop/testing';
import { readGatewayActivity } from '../../packages/provisioner/src/shared/idle.js';
import { dreamingSchedule } from '../../packages/provisioner/src/shared/openclaw-config.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

// ONE real OpenClaw agent (the pinned runtime on Node 24) for the whole file, provisioned over HTTP through the web
// service and the backend by adopting the host's warm gateway (issue #20: started and warmed up before anyone asked),
// then used the way a customer uses it: chat over REST and WebSocket and through the official `openai` client, cron,
// heartbeat, device pairing; then it hibernates and a message wakes it; then the host's lifecycle (restart, stop,
// failed update roll-back, delete). Each gateway start costs ~20 s of CPU and 30–45 s here, so everything shares as few
// as it can: the host has room for one gateway (the pool's refill is refused for room, and the one a nap lets start is
// given up for the wake). The runtime comes with `npm install`; without it this file fails, on purpose.

const PLATFORM_SECRETS = ['DATABASE_URL', 'INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY', 'REDIS_URL'];
const READY_MS = 150_000;
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-real-gateway', HMAC_SECRET: 'hmac-secret-for-real-gateway' };

/** An address of this machine that is not loopback: remote operator connections need device pairing there. */
function lanAddress(): string {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  throw new Error('device pairing needs a non-loopback IPv4 address on this machine');
}

let work: string;
let llm: FakeLlm;
let host: LocalAgentHost;
let backend: TestBackend;
let web: TestWeb;
let owner: { cookie: string; userId: string };
let agentId: string;
let gatewayToken: string;
let firstChatSentAt: number;
let firstChat: Promise<{ res: Awaited<ReturnType<typeof request>>; ms: number }>;
/** The warm gateway the agent adopted, and how long provisioning took to answer. */
let slot: { dir: string; pid: number };
let provisionMs: number;

const api = (path: string, init: { method?: string; json?: unknown } = {}) =>
  request(`${web.url}${path}`, { ...init, headers: { cookie: owner.cookie } });

async function gatewayLog(): Promise<string> {
  return agentId ? (await host.logs(agentId, { tail: 80 }).catch(() => [])).join('\n') : '';
}

beforeAll(async () => {
  if (skipReal) return;
  const problem = runtimeProblem(openClawRuntime(PINNED_OPENCLAW_VERSION));
  if (problem) throw new Error(`The real OpenClaw runtime is required by this test file: ${problem} (\`npm install\` runs it too).`);
  work = await mkdtemp(join(tmpdir(), 'aop-openclaw-real-'));
  llm = await startFakeLlm();
  // `lan`: the gateway also listens on this machine's other addresses, where device pairing applies.
  host = new LocalAgentHost({
    dataDir: join(work, 'data'),
    encryptionKey: randomBytes(32),
    readyTimeoutMs: READY_MS,
    bind: 'lan',
    warmPool: 1,
    maxAgents: 1,
    refillQuietMs: 1_000,
    // Never asleep on its own here (the tests put it to sleep), but a sleeping agent's due job is checked every 2 s,
    // and woken 100 s ahead: a cold start beside the rest of the suite can take a minute.
    idleMs: 3_600_000,
    idleCheckMs: 2_000,
    wakeLeadMs: 100_000,
    agentsPerGateway: 2,
  });
  backend = await startBackend({ ...SHARED, OPENAI_BASE_URL: llm.url }, { host });
  // A first turn on a real gateway can pass the spec's 30 s on a loaded 2-core CI machine; the tests bound it instead.
  // A message sent while the agent starts waits for it up to AGENT_START_WAIT_MS (here as long as a start may take).
  web = await startWeb({
    ...SHARED,
    BACKEND_API_URL: backend.url,
    GATEWAY_CHAT_TIMEOUT_MS: '100000',
    AGENT_START_WAIT_MS: String(READY_MS),
  });
  owner = await web.signIn({ isAdmin: true });
  // The platform's secrets are in this process's environment (set after the services started, so their test
  // database and counters are unaffected); none may reach the gateway, which is spawned from here on.
  for (const name of PLATFORM_SECRETS) process.env[name] ??= `platform-${name.toLowerCase()}-value`;

  await host.restore(); // starts the warm gateway
  const deadline = Date.now() + READY_MS;
  while (host.warmPoolStatus().ready < 1) {
    if (Date.now() > deadline) throw new Error(`no warm gateway within ${READY_MS / 1000} s: ${host.warmPoolStatus().lastError}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const [dir] = (await readdir(join(work, 'data', 'agents'))).filter((name) => name.startsWith('warm-'));
  slot = { dir: dir!, pid: JSON.parse(await readFile(join(work, 'data', 'agents', dir!, 'agent.json'), 'utf8')).pid };

  const started = performance.now();
  const provisioned = await api('/api/provision', {
    json: { name: 'Real agent', autoProvision: true, aiProvider: 'openai', apiKey: 'sk-local' },
  });
  provisionMs = performance.now() - started;
  expect(provisioned.status).toBe(200);
  expect(provisioned.body).toMatchObject({ success: true, status: 'running', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
  agentId = provisioned.body.agentId;
  // Issue #19: the first message goes the moment provisioning answers, long before the gateway is up; it waits.
  firstChatSentAt = performance.now();
  firstChat = api('/api/chat', { json: { message: 'ping over REST' } }).then((res) => ({ res, ms: performance.now() - firstChatSentAt }));
  try {
    await host.waitUntilReady(agentId, { timeoutMs: READY_MS });
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- gateway log ---\n${await gatewayLog()}`);
  }
  gatewayToken = (await host.spec(agentId)).gatewayToken;
}, 200_000);

afterAll(async () => {
  await web?.close();
  await backend?.close();
  await host?.shutdown();
  await llm?.close();
  if (work) await rm(work, { recursive: true, force: true });
}, 60_000);

// CI runs the suite twice (PGlite, then Postgres + Redis); one real gateway run is enough, so its second pass sets
// AOP_SKIP_REAL_GATEWAY=1. Everything the gateway touches in the database is covered on both engines by the fast tests.
const skipReal = process.env.AOP_SKIP_REAL_GATEWAY === '1';

describe.skipIf(skipReal)('a real OpenClaw gateway provisioned over HTTP', () => {
  it('runs the pinned version, live and ready, with its token out of the config file', async () => {
    const state = await host.status(agentId);
    expect(state).toMatchObject({ status: 'running', version: PINNED_OPENCLAW_VERSION, restarts: 0, lastError: null });
    expect(await host.health(agentId)).toMatchObject({ live: true, ready: true, failing: [] });
    const stats = await host.stats(agentId);
    expect(stats.pids).toBeGreaterThanOrEqual(2); // gateway + helper processes
    expect(stats.memoryBytes).toBeGreaterThan(200 * 1024 * 1024);
    const config = JSON.parse(await readFile(host.paths(agentId).config, 'utf8'));
    expect(config.gateway).toMatchObject({ mode: 'local', bind: 'lan', port: state.port });
    expect(JSON.stringify(config)).not.toContain(gatewayToken);
    expect(JSON.stringify(config)).not.toContain('sk-local');
  });

  it('runs with none of the platform secrets in its environment (gateway and helpers), nor its own tokens', async () => {
    const { pid } = await host.status(agentId);
    const tree = await processTree(pid!);
    expect(tree.length).toBeGreaterThanOrEqual(2);
    for (const p of tree) {
      const environ = (await readFile(`/proc/${p}/environ`, 'utf8').catch(() => '')).split('\0');
      if (p === pid) expect(environ).toContain(`OPENCLAW_STATE_DIR=${host.paths(agentId).state}`);
      // The gateway token and the model key reach it through its secret file (SecretRefs), not its environment.
      expect(environ.some((entry) => entry.includes(gatewayToken) || entry.includes('sk-local'))).toBe(false);
      for (const name of PLATFORM_SECRETS) {
        expect(process.env[name]).toBeTruthy();
        expect(environ.some((entry) => entry.startsWith(`${name}=`))).toBe(false);
      }
    }
  });

  it('chats over REST (POST /api/chat): a message sent while the agent started waited for it and was answered by its LLM', async () => {
    const { res, ms } = await firstChat;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ success: true, reply: FAKE_LLM_REPLY, agentId, sessionKey: 'main' });
    console.info(`first message, sent as provisioning answered: answered after ${(ms / 1000).toFixed(1)} s`);
    // The platform's warm-up turn called no model: the LLM's first request is the customer's message.
    const seen = llm.chatRequests();
    expect(seen[0]?.headers.authorization).toBe('Bearer sk-local'); // the agent's own key, from its secret file
    expect(JSON.stringify(seen[0]?.body)).toContain('ping over REST');
    const log = (await host.logs(agentId, { tail: 1_000 })).join('\n');
    expect(log).toMatch(/\[host\] first turn prepared in [\d.]+ s/);
    // …and its session is gone.
    const conn = await connectGateway({ url: (await host.status(agentId)).url!.replace(/^http/, 'ws'), token: gatewayToken });
    try {
      const sessions = await conn.request<{ sessions: { key: string }[] }>('sessions.list', {});
      expect(sessions.sessions.map((x) => x.key).filter((key) => key.includes('aop-warm-up'))).toEqual([]);
    } finally {
      await conn.close();
    }

    const history = await api('/api/chat');
    expect(history.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'ping over REST'],
      ['assistant', FAKE_LLM_REPLY],
    ]);
    const usage = await web.database.db.kysely.selectFrom('usage_events').selectAll().where('user_id', '=', owner.userId).execute();
    expect(usage.some((u) => u.kind === 'chat' && u.agent_id === agentId)).toBe(true);
  }, 120_000);

  it("is the warm gateway's process and directory, with the customer's config and secrets; the pool's refill finds no room", async () => {
    const { ms } = await firstChat;
    console.info(
      `warm pool: provision answered in ${(provisionMs / 1000).toFixed(2)} s, first answer ${((ms + provisionMs) / 1000).toFixed(2)} s after provisioning began`,
    );
    // Far below a cold start (30–45 s with its warm-up on this machine; the benchmark has the figures).
    expect(ms + provisionMs).toBeLessThan(15_000);
    expect(await host.status(agentId)).toMatchObject({ status: 'running', pid: slot.pid });
    expect(host.paths(agentId).dir).toBe(join(work, 'data', 'agents', slot.dir));
    const log = (await host.logs(agentId, { tail: 1_000 })).join('\n');
    expect(log).toMatch(/\[host\] warm gateway adopted in [\d.]+ s/);
    console.info(
      log
        .split('\n')
        .filter((line) => line.startsWith('[host]'))
        .slice(-3)
        .join('\n'),
    );
    // Its config is the agent's: its model, its key by reference; the pool's token is gone from the secret file.
    const config = JSON.parse(await readFile(host.paths(agentId).config, 'utf8'));
    expect(config.agents.defaults.model.primary).toMatch(/^platform\//);
    const secrets = JSON.parse(await readFile(config.secrets.providers.aop.path, 'utf8'));
    expect(secrets).toEqual({ gatewayToken, llmApiKey: 'sk-local' });
    // The pool tries a replacement once nothing else is starting: this host has room for one gateway, so it says why not.
    const deadline = Date.now() + 30_000;
    while (host.warmPoolStatus().lastError === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
    expect(host.warmPoolStatus()).toMatchObject({ target: 1, ready: 0, starting: 0, lastError: expect.stringMatching(/capacity/) });
  }, 60_000);

  it('chats over the WebSocket (POST /api/gateway/chat) and reads the conversation back', async () => {
    const res = await api('/api/gateway/chat', { json: { message: 'hello over the socket' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ success: true, reply: FAKE_LLM_REPLY, agentId, agentName: 'Real agent' });
    const messages = await api(`/api/agents/${agentId}/messages`);
    expect(messages.body.messages.map((m: { content: string }) => m.content)).toEqual(['hello over the socket', FAKE_LLM_REPLY]);
  }, 120_000);

  // Issue #22: the official `openai` client, pointed at the web's /v1 with a user API key, names the agent as its model.
  it('answers the official openai client at /v1 (plain and streamed) with its LLM’s reply, usage in the ledger', async () => {
    const key = await api('/api/keys', { json: { name: 'openai sdk' } });
    expect(key.status).toBe(201);
    const openai = new OpenAI({ apiKey: key.body.key, baseURL: `${web.url}/v1`, maxRetries: 0 });
    expect((await openai.models.list()).data.map((m) => m.id)).toEqual([agentId]);

    const completion = await openai.chat.completions.create({
      model: agentId,
      messages: [{ role: 'user', content: 'hello from the openai client' }],
      user: 'sdk-conversation',
    });
    expect(completion.choices[0]?.message.content).toBe(FAKE_LLM_REPLY);
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
    expect(JSON.stringify(llm.chatRequests().at(-1)?.body)).toContain('hello from the openai client');

    const stream = await openai.chat.completions.create({
      model: 'Real agent',
      messages: [{ role: 'user', content: 'stream it to me' }],
      user: 'sdk-conversation',
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta.content;
      if (piece) pieces.push(piece);
      usage = chunk.usage ?? usage;
    }
    console.info(`openai client: the streamed answer came in ${pieces.length} pieces: ${JSON.stringify(pieces)}`);
    expect(pieces.join('')).toBe(FAKE_LLM_REPLY);
    // The fake LLM sends its reply in two deltas ('FAKE-LLM rep', 'ly'); OpenClaw relays each, and so does the web.
    expect(pieces.length).toBeGreaterThan(1);
    expect(usage?.total_tokens).toBeGreaterThan(0);
    const ledger = await web.database.db.kysely
      .selectFrom('usage_events')
      .selectAll()
      .where('user_id', '=', owner.userId)
      .orderBy('created_at', 'desc')
      .limit(2)
      .execute();
    expect(ledger.map((row) => [row.kind, row.agent_id, row.total_tokens])).toEqual([
      ['chat', agentId, usage?.total_tokens],
      ['chat', agentId, completion.usage?.total_tokens],
    ]);
  }, 120_000);

  it('refuses a WebSocket with the wrong token', async () => {
    const { url } = await host.status(agentId);
    const refused = await connectGateway({ url: url!.replace(/^http/, 'ws'), token: 'not-the-token', retryDeadlineMs: 0 }).then(
      async (c) => {
        await c.close();
        return null;
      },
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(GatewayError);
  });

  it('schedules, lists and deletes a cron job (§4.3)', async () => {
    const created = await api('/api/cron', {
      json: {
        name: 'daily-summary',
        schedule: { kind: 'cron', expr: '0 9 * * *' },
        payload: { kind: 'systemEvent', text: 'Summarize yesterday.' },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ success: true, source: 'gateway' });
    const listed = await api('/api/cron');
    expect(listed.body.source).toBe('gateway');
    const job = listed.body.jobs.find((j: { name: string }) => j.name === 'daily-summary');
    expect(job).toMatchObject({
      enabled: true,
      schedule: { kind: 'cron', expr: '0 9 * * *' },
      payload: { kind: 'systemEvent', text: 'Summarize yesterday.' },
      nextRun: expect.stringMatching(/T09:00:00/),
    });
    expect((await api(`/api/cron?jobId=${job.id}`, { method: 'DELETE' })).body).toEqual({ success: true, source: 'gateway' });
    expect((await api('/api/cron')).body.jobs.map((j: { id: string }) => j.id)).not.toContain(job.id);
  });

  it('sets the heartbeat on the gateway (§4.10) and reads it back in hours', async () => {
    const put = await api('/api/heartbeat', { method: 'PUT', json: { frequency: '2h' } });
    expect(put.body).toEqual({ success: true, source: 'gateway', enabled: true, frequency: '2h' });
    const got = await api(`/api/heartbeat?agentId=${agentId}`);
    expect(got.body).toMatchObject({ source: 'gateway', enabled: true, frequency: '2h', nextRun: expect.any(String) });
    const status = await api('/api/gateway/status');
    expect(status.body).toMatchObject({ health: 'healthy', healthDetail: { ok: true } });
    expect(status.body.cron.jobs.map((j: { name: string }) => j.name)).toContain('platform-heartbeat');
  });

  it('pairs devices (§4.12): a remote device waits, is approved, connects, is revoked; another is denied', async () => {
    const { port } = await host.status(agentId);
    const remote = `ws://${lanAddress()}:${port}`;
    const connectAs = (device: DeviceIdentity) =>
      connectGateway({ url: remote, token: gatewayToken, device, retryDeadlineMs: 0, handshakeTimeoutMs: 15_000 }).then(
        async (c) => {
          const deviceToken = c.hello.auth?.deviceToken ?? null;
          await c.close();
          return { ok: true as const, deviceToken };
        },
        (error: unknown) => ({ ok: false as const, code: (error as GatewayError).code }),
      );

    const laptop = createDeviceIdentity();
    expect(await connectAs(laptop)).toEqual({ ok: false, code: 'NOT_PAIRED' });
    const listed = await api('/api/devices');
    expect(listed.status).toBe(200);
    const pending = listed.body.pending.find((d: { id: string }) => d.id === laptop.deviceId);
    expect(pending).toMatchObject({ status: 'pending', ip: expect.any(String), firstSeen: expect.any(String) });

    const approved = await api('/api/devices', { json: { deviceId: laptop.deviceId, action: 'approve' } });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body.approved.map((d: { id: string }) => d.id)).toContain(laptop.deviceId);
    expect(await connectAs(laptop)).toMatchObject({ ok: true, deviceToken: expect.any(String) });
    const again = await api('/api/devices', { json: { deviceId: laptop.deviceId, action: 'approve' } });
    expect(again.body).toEqual({ error: 'Device is not pending' });

    const revoked = await api('/api/devices', { json: { deviceId: laptop.deviceId, action: 'revoke' } });
    expect(revoked.status).toBe(200);
    expect(revoked.body.approved.map((d: { id: string }) => d.id)).not.toContain(laptop.deviceId);
    expect(await connectAs(laptop)).toMatchObject({ ok: false });

    const phone = createDeviceIdentity();
    expect(await connectAs(phone)).toEqual({ ok: false, code: 'NOT_PAIRED' });
    const denied = await api('/api/devices', { json: { deviceId: phone.deviceId, action: 'deny' } });
    expect(denied.status).toBe(200);
    expect(denied.body.pending.map((d: { id: string }) => d.id)).not.toContain(phone.deviceId);
    expect((await api('/api/devices', { json: { deviceId: phone.deviceId, action: 'approve' } })).body).toEqual({
      error: 'Device is not pending',
    });
  }, 60_000);
});

describe.skipIf(skipReal)('hibernation', () => {
  // Issue #20: with the platform's default configuration (heartbeat every 30 minutes) and no messaging channel, OpenClaw
  // skips every heartbeat for lack of a destination. Read as activity and as a due job, those beats kept an idle agent
  // from ever sleeping, or would wake a sleeping one every 30 minutes for nothing.
  it("reads OpenClaw's heartbeat, skipped for want of a destination, as neither activity nor a reason to wake", async () => {
    const { config } = await host.spec(agentId);
    const defaults = (config.agents as { defaults?: Record<string, unknown> } | undefined)?.defaults ?? {};
    // Every 15 s (OpenClaw takes a duration in seconds too): its first beat comes within 15 s of the change.
    const beating = { ...config, agents: { ...(config.agents as object), defaults: { ...defaults, heartbeat: { every: '15s' } } } };
    const calls = llm.chatRequests().length;
    await host.configure(agentId, { config: beating });
    const { url } = await host.status(agentId);
    const conn = await connectGateway({ url: url!.replace(/^http/, 'ws'), token: gatewayToken });
    try {
      type Job = {
        declarationKey?: string;
        state?: { lastRunStatus?: string; lastError?: string; lastRunAtMs?: number; nextRunAtMs?: number };
      };
      const heartbeat = async () =>
        (await conn.request<{ jobs: Job[] }>('cron.list', { includeDisabled: false, limit: 200 })).jobs.find(
          (job) => job.declarationKey === 'heartbeat:main',
        );
      const deadline = Date.now() + 90_000;
      while ((await heartbeat())?.state?.lastRunStatus === undefined) {
        if (Date.now() > deadline) throw new Error(`no heartbeat ran within 90 s\n${await gatewayLog()}`);
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      }
      const beat = await heartbeat();
      expect(beat?.state).toMatchObject({ lastRunStatus: 'skipped', lastError: 'heartbeat skipped: no-route' });
      expect(llm.chatRequests().length).toBe(calls); // a skipped beat calls no model
      const activity = await readGatewayActivity(conn);
      expect(activity.lastActiveMs).toBeLessThan(beat?.state?.lastRunAtMs ?? 0); // the beat is not activity
      // Its next beat is due within seconds, but the next due time is that of OpenClaw's other jobs (memory dreaming,
      // skill review), whenever the test runs (dreaming may be due within the hour at night).
      expect(beat?.state?.nextRunAtMs).toBeLessThan(Date.now() + 120_000);
      const { jobs } = await conn.request<{
        jobs: Array<Job & { enabled?: boolean; nextRunAtMs?: number; schedule?: { kind?: string; expr?: string } }>;
      }>('cron.list', { includeDisabled: false, limit: 200 });
      const othersDue = jobs
        .filter((job) => job.enabled !== false && job.declarationKey !== 'heartbeat:main')
        .map((job) => job.nextRunAtMs || job.state?.nextRunAtMs || 0)
        .filter((ms) => ms > 0);
      expect(activity.nextDueMs).toBe(othersDue.length > 0 ? Math.min(...othersDue) : null);
      // That nightly memory maintenance is at this agent's own minute of 01:00–04:59, not at 03:00 for every agent.
      const dreaming = jobs.find((job) => job.declarationKey === 'memory-core:memory-dreaming-promotion');
      expect(dreaming?.schedule).toMatchObject({ kind: 'cron', expr: dreamingSchedule(agentId) });
    } finally {
      await conn.close();
      await host.configure(agentId, { config });
    }
  }, 200_000);

  it('hibernates, and the next message wakes it and is answered, in the conversation it had', async () => {
    const { pid } = await host.status(agentId);
    await host.hibernate(agentId);
    expect((await api(`/api/agents/${agentId}/health`)).body).toMatchObject({ state: 'hibernated', live: false });
    // The room the nap freed goes to a warm gateway… until the wake needs it back.
    expect(host.warmPoolStatus().ready + host.warmPoolStatus().starting).toBeLessThanOrEqual(1);
    const started = performance.now();
    const chat = await api('/api/chat', { json: { message: 'ping after a nap' } });
    console.info(`hibernation: the first message after a nap was answered in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    expect(chat.status, `${JSON.stringify(chat.body)}\n${await gatewayLog()}`).toBe(200);
    expect(chat.body.reply).toBe(FAKE_LLM_REPLY);
    const state = await host.status(agentId);
    expect(state.status).toBe('running');
    expect(state.pid).not.toBe(pid);
    // The warm gateway the nap let start was given up for the wake: one gateway on the host, the agent's.
    expect(host.gatewayPids()).toEqual([state.pid]);
    // The gateway's own record of the conversation survived the nap: the turn before it and the one after, one session.
    const conn = await connectGateway({ url: state.url!.replace(/^http/, 'ws'), token: gatewayToken });
    try {
      const { sessions } = await conn.request<{ sessions: { key: string }[] }>('sessions.list', {});
      const texts = await Promise.all(
        sessions.map(async (s) => JSON.stringify(await conn.request('chat.history', { sessionKey: s.key, limit: 50 }))),
      );
      expect(texts.filter((text) => text.includes('ping over REST') && text.includes('ping after a nap'))).toHaveLength(1);
    } finally {
      await conn.close();
    }
  }, 180_000);

  it('sleeps until its next due job: the host wakes it ahead of time, and the job runs with nothing lost', async () => {
    const created = await api('/api/cron', {
      json: {
        name: 'after-a-nap',
        // Due in 120 s, woken 100 s before (`wakeLeadMs`): a start that takes longer finds it overdue and OpenClaw runs
        // it 2 minutes later instead (within the wait below), so the test still sees it run.
        schedule: { kind: 'every', everyMs: 120_000 },
        payload: { kind: 'agentTurn', message: 'cron after a nap' },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const job = (await api('/api/cron')).body.jobs.find((j: { name: string }) => j.name === 'after-a-nap');
    const dueMs = Date.parse(job.nextRun);
    expect(dueMs - Date.now()).toBeGreaterThan(100_000);
    const { pid } = await host.status(agentId);
    await host.hibernate(agentId, dueMs);
    expect((await api(`/api/agents/${agentId}/health`)).body).toMatchObject({ state: 'hibernated', live: false });
    const asleepAt = performance.now();
    // Nobody sends anything: the job's own turn reaching the model is the proof it ran.
    const ran = () => llm.chatRequests().some((r) => JSON.stringify(r.body).includes('cron after a nap'));
    while (!ran()) {
      if (performance.now() - asleepAt > 280_000) throw new Error(`the due job did not run\n${await gatewayLog()}`);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    console.info(
      `hibernation: woken for its job; the job ran ${((Date.now() - dueMs) / 1000).toFixed(1)} s after it was due (${((performance.now() - asleepAt) / 1000).toFixed(1)} s after the nap began)`,
    );
    const state = await host.status(agentId);
    expect(state).toMatchObject({ status: 'running' });
    expect(state.pid).not.toBe(pid);
    expect((await host.logs(agentId, { tail: 200 })).join('\n')).toContain('wakes at');
    expect((await api(`/api/cron?jobId=${job.id}`, { method: 'DELETE' })).body).toEqual({ success: true, source: 'gateway' });
  }, 300_000);

  // Issue #20, customer-scoped gateways: the customer's second agent is a further OpenClaw agent in the first one's
  // gateway (config.apply, no new process), with sessions, workspace and model key of its own.
  it("a customer's second agent joins its gateway: no new process, its own sessions and memory, its own lifecycle", async () => {
    const before = await host.status(agentId);
    const started = performance.now();
    const provisioned = await api('/api/provision', {
      json: { name: 'Second agent', autoProvision: true, aiProvider: 'openai', apiKey: 'sk-second' },
    });
    expect(provisioned.status, JSON.stringify(provisioned.body)).toBe(200);
    const second = provisioned.body.agentId as string;
    const joined = await host.waitUntilReady(second, { timeoutMs: 60_000 });
    const joinedMs = performance.now() - started;
    const inGateway = second.toLowerCase(); // OpenClaw lowercases agent ids
    expect(joined).toMatchObject({ status: 'running', openclawAgentId: inGateway, pid: before.pid, url: before.url });
    const chat = await api('/api/chat', { json: { message: 'hello second agent', agentId: second } });
    expect(chat.status, `${JSON.stringify(chat.body)}\n${await gatewayLog()}`).toBe(200);
    expect(chat.body).toMatchObject({ reply: FAKE_LLM_REPLY, agentId: second });
    console.info(
      `customer-scoped gateway: the second agent joined in ${(joinedMs / 1000).toFixed(1)} s; its first answer ${((performance.now() - started) / 1000).toFixed(1)} s after provisioning began`,
    );
    // Its turns went to its own model key.
    const turn = llm.chatRequests().findLast((r) => JSON.stringify(r.body).includes('hello second agent'));
    expect(turn?.headers.authorization).toBe('Bearer sk-second');

    // Separate sessions: what the gateway lists for each agent is its own, and the conversation is only in the second's.
    const conn = await connectGateway({ url: before.url!.replace(/^http/, 'ws'), token: gatewayToken });
    try {
      const listed = async (id: string) => (await conn.request<{ sessions: { key: string }[] }>('sessions.list', { agentId: id })).sessions;
      const holding = async (sessions: { key: string }[]) => {
        const texts = await Promise.all(
          sessions.map(async (x) => JSON.stringify(await conn.request('chat.history', { sessionKey: x.key, limit: 50 }))),
        );
        return texts.filter((text) => text.includes('hello second agent')).length;
      };
      const own = await listed(inGateway);
      const firsts = await listed('main');
      expect(own.length).toBeGreaterThan(0);
      expect(own.every((x) => x.key.startsWith(`agent:${inGateway}:`))).toBe(true);
      expect(firsts.some((x) => x.key.includes(inGateway))).toBe(false);
      expect(await holding(own)).toBe(1);
      expect(await holding(firsts)).toBe(0);
    } finally {
      await conn.close();
    }
    // Separate memory: its session store in the gateway's state under its id, its workspace its own (seeded by OpenClaw).
    expect(existsSync(join(host.paths(agentId).state, 'agents', inGateway, 'agent'))).toBe(true);
    expect(existsSync(join(host.paths(second).workspace, 'AGENTS.md'))).toBe(true);
    expect(host.paths(second).workspace).not.toBe(host.paths(agentId).workspace);

    // Its own lifecycle: stopped, it is refused while the first answers on in the same process; deleted, it is gone.
    const stopped = await api(`/api/agents/${second}/stop`, { method: 'POST' });
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(200);
    expect(stopped.body).toMatchObject({ state: 'stopped' });
    const refused = await api('/api/chat', { json: { message: 'are you there?', agentId: second } });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ error: 'The agent is stopped: start it to chat' });
    expect((await api('/api/chat', { json: { message: 'first still here', agentId } })).status).toBe(200);
    await host.delete(second);
    expect(existsSync(join(host.paths(agentId).state, 'agents', inGateway))).toBe(false);
    expect(existsSync(host.paths(second).dir)).toBe(false);
    expect(await host.status(agentId)).toMatchObject({ status: 'running', pid: before.pid });
  }, 180_000);

  it(
    "an agent provisioned while its customer's gateway is still starting joins that start: its roster applied once it answers",
    async () => {
      await host.restart(agentId); // a cold start, as a customer's first agent's is
      expect((await host.status(agentId)).status).toBe('starting');
      const provisioned = await api('/api/provision', {
        json: { name: 'Burst agent', autoProvision: true, aiProvider: 'openai', apiKey: 'sk-burst' },
      });
      expect(provisioned.status, JSON.stringify(provisioned.body)).toBe(200);
      const burst = provisioned.body.agentId as string;
      // A message sent at once waits for the start they share, and is answered by the agent that joined it.
      const chat = await api('/api/chat', { json: { message: 'hello burst agent', agentId: burst } });
      expect(chat.status, `${JSON.stringify(chat.body)}\n${await gatewayLog()}`).toBe(200);
      expect(chat.body).toMatchObject({ reply: FAKE_LLM_REPLY, agentId: burst });
      const [gateway, joined] = await Promise.all([host.status(agentId), host.status(burst)]);
      expect(joined).toMatchObject({ status: 'running', openclawAgentId: burst.toLowerCase(), pid: gateway.pid });
      // Its key reached the process (the secret file is read as a gateway starts, and by a config.apply).
      const turn = llm.chatRequests().findLast((r) => JSON.stringify(r.body).includes('hello burst agent'));
      expect(turn?.headers.authorization).toBe('Bearer sk-burst');
      // Applied at ready, or read by the process as it started when the join came first (then not applied again: a
      // needless config.apply at start was seen held 31 s and refused).
      expect((await host.logs(agentId, { tail: 5_000 })).join('\n')).toMatch(
        /the agents that joined or changed while it started (are applied|were read by the process as it started)/,
      );
      await host.delete(burst);
    },
    READY_MS + 60_000,
  );
});

describe.skipIf(skipReal)('the host lifecycle on the same gateway', () => {
  it('stops: not live any more, no process left', async () => {
    const { pid } = await host.status(agentId);
    const tree = await processTree(pid!);
    expect(await host.stop(agentId)).toMatchObject({ status: 'stopped', pid: null });
    expect(await host.health(agentId)).toEqual({ live: false, ready: false, failing: [], uptimeMs: null });
    for (const p of tree) expect(isAlive(p)).toBe(false);
  }, 60_000);

  // Restarting on the real runtime is this rollback's start of a new process, and the hibernation test's wake (the
  // host's restart itself is tested on the stand-in runtime in host.test.ts): one cold start fewer in CI.
  it('rolls back a failed update: UpdateFailedError with a backup, and the previous version runs again on the same state', async () => {
    const agentsMd = join(host.paths(agentId).workspace, 'AGENTS.md');
    const updatedAt = Date.now();
    const error = await host.update(agentId, { version: '0.0.0-not-installed' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpdateFailedError);
    const failure = error as UpdateFailedError;
    expect(failure.previousVersion).toBe(PINNED_OPENCLAW_VERSION);
    expect(failure.message).toContain('OpenClaw 0.0.0-not-installed is not installed');
    expect(existsSync(join(failure.backupPath, 'state', 'workspace', 'AGENTS.md'))).toBe(true);
    expect(existsSync(join(failure.backupPath, 'state', 'openclaw.json'))).toBe(true);
    const state = await host.waitUntilReady(agentId, { timeoutMs: READY_MS });
    expect(state).toMatchObject({ status: 'running', version: PINNED_OPENCLAW_VERSION });
    expect(await host.health(agentId)).toMatchObject({ live: true, ready: true });
    // Not re-seeded: the state survived (the rollback puts the backup back with its times, give or take the
    // millisecond a copy's timestamps may round to; a new seed would be written after the update began).
    expect((await stat(agentsMd)).mtimeMs).toBeLessThan(updatedAt - 1_000);
  }, 180_000);

  it('delete stops the gateway and removes its state', async () => {
    const { pid } = await host.status(agentId);
    await host.delete(agentId);
    expect(isAlive(pid!)).toBe(false);
    expect(existsSync(host.paths(agentId).dir)).toBe(false);
    await expect(host.status(agentId)).rejects.toThrow(`Agent not found: ${agentId}`);
  }, 60_000);
});
