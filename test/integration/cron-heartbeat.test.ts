import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@aop/core';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { frequencyOf } from '../../apps/web/src/modules/schedule/heartbeat.service.js';
import { startWeb, type TestWeb, pointAgentAt } from '../../apps/web/src/web.test-support.js';

const AGENT_TOKEN = 'agent-gateway-token-for-cron-tests';
const PLATFORM_TOKEN = 'platform-gateway-token-for-cron-tests';
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-cron-tests', HMAC_SECRET: 'hmac-secret-for-cron-tests' };
const REQUIRED = 'name, schedule, and payload required';
const FREQUENCY_MESSAGE = 'frequency must be one of 30m, 1h, 2h, 3h, 6h, 12h';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

type User = { cookie: string; userId: string };

const call = (base: string, path: string, user?: User, init: Parameters<typeof request>[1] = {}) =>
  request(`${base}${path}`, { ...init, headers: { ...init.headers, ...(user ? { cookie: user.cookie } : {}) } });

const received = (gateway: FakeGatewayWs, method: string) => gateway.received.filter((f) => f.method === method);

/** A job as OpenClaw keeps one it made itself: the system-owned heartbeat monitor. */
function seedHeartbeatMain(gateway: FakeGatewayWs) {
  const now = Date.now();
  gateway.jobs.set('hb-main', {
    id: 'hb-main',
    name: 'heartbeat-main',
    declarationKey: 'heartbeat:main',
    enabled: true,
    createdAtMs: now,
    updatedAtMs: now,
    schedule: { kind: 'every', everyMs: 1_800_000, anchorMs: 12_345 },
    payload: { kind: 'heartbeat' },
    sessionTarget: 'main',
    wakeMode: 'next-heartbeat',
    state: { nextRunAtMs: now + 1_800_000 },
  });
}

/** memory-core's dreaming sweep as OpenClaw keeps it: an ordinary agentTurn job with a declaration key and a raw token. */
function seedMemoryDreaming(gateway: FakeGatewayWs) {
  const now = Date.now();
  gateway.jobs.set('dream', {
    id: 'dream',
    name: 'Memory Dreaming Promotion',
    declarationKey: 'memory-core:memory-dreaming-promotion',
    description: '[managed-by=memory-core.short-term-promotion] Promote weighted short-term recalls into MEMORY.md (limit=10).',
    enabled: true,
    createdAtMs: now,
    updatedAtMs: now,
    schedule: { kind: 'cron', expr: '0 3 * * *' },
    payload: { kind: 'agentTurn', message: '__openclaw_memory_core_short_term_promotion_dream__', lightContext: true },
    sessionTarget: 'isolated',
    wakeMode: 'now',
    delivery: { mode: 'none' },
    state: {},
  });
}

// Spec §4.3 (cron) and §4.10 (heartbeat) end to end: web → backend (gateway tokens) → gateways speaking OpenClaw's
// protocol v4 on 127.0.0.1. Users without an agent of their own share the platform gateway (GATEWAY_URL).
describe('cron and heartbeat', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  /** A web service with no shared gateway configured. */
  let bare: TestWeb;
  let shared: FakeGatewayWs;
  let agentGw: FakeGatewayWs;
  let owner: User;
  let agentId: string;

  const agentUrl = (url: string) => web.database.db.kysely.updateTable('agents').set({ url }).where('id', '=', agentId).execute();

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-cron-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend({ ...SHARED, GATEWAY_SHARED_TOKEN: AGENT_TOKEN, PLATFORM_GATEWAY_TOKEN: PLATFORM_TOKEN }, { host });
    shared = await startFakeGatewayWs({ token: PLATFORM_TOKEN });
    agentGw = await startFakeGatewayWs({ token: AGENT_TOKEN });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, GATEWAY_URL: `http://127.0.0.1:${shared.port}` });
    bare = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });

    owner = await web.signIn({ isAdmin: true });
    const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie: owner.cookie } });
    expect(res.status).toBe(200);
    agentId = res.body.agentId;
    await agentUrl(`http://127.0.0.1:${agentGw.port}`);
    seedHeartbeatMain(agentGw);
    seedHeartbeatMain(shared);
    seedMemoryDreaming(agentGw);
  });
  afterAll(async () => {
    await shared.close();
    await agentGw.close();
    await bare.close();
    await web.close();
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  describe('cron on the shared gateway', () => {
    let alice: User;
    let bob: User;
    beforeAll(async () => {
      alice = await web.signIn();
      bob = await web.signIn();
    });

    it('401 Unauthorized without a session', async () => {
      for (const [method, path] of [
        ['GET', '/api/cron'],
        ['POST', '/api/cron'],
        ['DELETE', '/api/cron?jobId=x'],
      ] as const) {
        const res = await call(web.url, path, undefined, {
          method,
          ...(method === 'POST'
            ? { json: { name: 'n', schedule: { kind: 'every', everyMs: 1000 }, payload: { kind: 'systemEvent', text: 't' } } }
            : {}),
        });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.body).toEqual({ error: 'Unauthorized' });
      }
    });

    it('POST creates an enabled job carrying the owner tag; GET lists it in the §2.4 shape', async () => {
      const res = await call(web.url, '/api/cron', alice, {
        json: { name: 'hourly check', schedule: { kind: 'every', everyMs: 3_600_000 }, payload: { kind: 'systemEvent', text: 'check in' } },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ success: true, source: 'gateway', job: { name: 'hourly check', enabled: true } });
      // The shared `main` session is everyone's: the event runs as a turn in alice's own session instead.
      const add = received(shared, 'cron.add').at(-1)?.params;
      expect(add).toEqual({
        name: 'hourly check',
        description: `aop-owner:${alice.userId} aop-payload:systemEvent`,
        schedule: { kind: 'every', everyMs: 3_600_000 },
        sessionTarget: `session:aop-owner:${alice.userId}:main`,
        wakeMode: 'now',
        payload: { kind: 'agentTurn', message: 'check in' },
        delivery: { mode: 'none' },
        enabled: true,
      });

      const list = await call(web.url, '/api/cron', alice);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({
        jobs: [
          {
            id: res.body.job.id,
            name: 'hourly check',
            enabled: true,
            schedule: { kind: 'every', everyMs: 3_600_000 },
            payload: { kind: 'systemEvent', text: 'check in' },
            lastRun: null,
            nextRun: expect.stringMatching(ISO),
          },
        ],
        total: 1,
        source: 'gateway',
      });
      const listParams = received(shared, 'cron.list').at(-1)?.params;
      expect(listParams).toEqual({ includeDisabled: true, enabled: 'all', limit: 200, offset: 0, query: `aop-owner:${alice.userId}` });

      // lastRun/nextRun come from the gateway's milliseconds as ISO 8601.
      const stored = shared.jobs.get(res.body.job.id) as unknown as { state: Record<string, number> };
      stored.state = { lastRunAtMs: Date.UTC(2030, 0, 2, 3, 4, 5), nextRunAtMs: Date.UTC(2030, 0, 2, 4, 4, 5) };
      const again = await call(web.url, '/api/cron', alice);
      expect(again.body.jobs[0]).toMatchObject({ lastRun: '2030-01-02T03:04:05.000Z', nextRun: '2030-01-02T04:04:05.000Z' });
    });

    it('lists disabled jobs too; agentTurn jobs run isolated; cron schedules keep their expression', async () => {
      const res = await call(web.url, '/api/cron', alice, {
        json: {
          name: 'nightly',
          schedule: { kind: 'cron', expr: '0 3 * * *', tz: 'UTC' },
          payload: { kind: 'agentTurn', message: 'Summarize the day.' },
          enabled: false,
        },
      });
      expect(res.status).toBe(200);
      expect(received(shared, 'cron.add').at(-1)?.params).toMatchObject({
        description: `aop-owner:${alice.userId}`,
        sessionTarget: 'isolated',
        payload: { kind: 'agentTurn', message: 'Summarize the day.' },
        delivery: { mode: 'none' },
        enabled: false,
      });
      const list = await call(web.url, '/api/cron', alice);
      expect(list.body.total).toBe(2);
      expect(list.body.jobs.find((j: { name: string }) => j.name === 'nightly')).toEqual({
        id: res.body.job.id,
        name: 'nightly',
        enabled: false,
        schedule: { kind: 'cron', expr: '0 3 * * *', tz: 'UTC' },
        payload: { kind: 'agentTurn', message: 'Summarize the day.' },
        lastRun: null,
        nextRun: null,
      });
    });

    it("keeps users apart: bob sees none of alice's jobs nor the gateway's own, and cannot delete hers", async () => {
      const mine = await call(web.url, '/api/cron', bob);
      expect(mine.body).toEqual({ jobs: [], total: 0, source: 'gateway' });
      const aliceJobs = (await call(web.url, '/api/cron', alice)).body.jobs as { id: string }[];
      expect(aliceJobs.map((j) => j.id)).not.toContain('hb-main');
      for (const job of [...aliceJobs, { id: 'hb-main' }]) {
        const del = await call(web.url, `/api/cron?jobId=${job.id}`, bob, { method: 'DELETE' });
        expect(del.status).toBe(404);
        expect(del.body).toEqual({ error: 'Job not found' });
        expect(shared.jobs.has(job.id)).toBe(true);
      }
      expect(received(shared, 'cron.remove')).toHaveLength(0);

      const bobs = await call(web.url, '/api/cron', bob, {
        json: { name: 'bob job', schedule: { kind: 'every', everyMs: 60_000 }, payload: { kind: 'systemEvent', text: 'hi' } },
      });
      expect(bobs.status).toBe(200);
      expect((await call(web.url, '/api/cron', alice)).body.jobs.map((j: { name: string }) => j.name)).not.toContain('bob job');
      expect((await call(web.url, '/api/cron', bob)).body.jobs.map((j: { name: string }) => j.name)).toEqual(['bob job']);
    });

    it('DELETE: 400 jobId required, 404 for an unknown job, removes an own job', async () => {
      for (const query of ['', '?jobId=', '?jobId=%20%20']) {
        const res = await call(web.url, `/api/cron${query}`, alice, { method: 'DELETE' });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'jobId required' });
      }
      const unknown = await call(web.url, '/api/cron?jobId=no-such-job', alice, { method: 'DELETE' });
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ error: 'Job not found' });

      const created = await call(web.url, '/api/cron', alice, {
        json: { name: 'short-lived', schedule: { kind: 'every', everyMs: 60_000 }, payload: { kind: 'systemEvent', text: 'x' } },
      });
      const res = await call(web.url, `/api/cron?jobId=${created.body.job.id}`, alice, { method: 'DELETE' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, source: 'gateway' });
      expect(shared.jobs.has(created.body.job.id)).toBe(false);
    });

    it('400 for missing, mistyped or invalid fields, and nothing reaches the gateway', async () => {
      const adds = received(shared, 'cron.add').length;
      const schedule = { kind: 'every', everyMs: 60_000 };
      const payload = { kind: 'systemEvent', text: 'hello' };
      const cases: [unknown, string][] = [
        [{}, REQUIRED],
        [{ schedule, payload }, REQUIRED],
        [{ name: 'n', payload }, REQUIRED],
        [{ name: 'n', schedule }, REQUIRED],
        [{ name: 42, schedule, payload }, REQUIRED],
        [{ name: '   ', schedule, payload }, REQUIRED],
        [{ name: 'n', schedule: 'every hour', payload }, REQUIRED],
        [{ name: 'n', schedule: null, payload }, REQUIRED],
        [{ name: 'n', schedule, payload: [payload] }, REQUIRED],
        [{ name: 'n', schedule, payload: 'hello' }, REQUIRED],
        [[], REQUIRED],
        [{ name: 'x'.repeat(201), schedule, payload }, 'name must be at most 200 characters'],
        [{ name: 'n', schedule, payload, enabled: 'yes' }, 'enabled must be a boolean'],
        [
          { name: 'n', schedule: { kind: 'every', everyMs: 0 }, payload },
          'Invalid schedule: everyMs must be a positive integer (milliseconds)',
        ],
        [
          { name: 'n', schedule: { kind: 'every', everyMs: 1.5 }, payload },
          'Invalid schedule: everyMs must be a positive integer (milliseconds)',
        ],
        [
          { name: 'n', schedule: { kind: 'every', everyMs: '60000' }, payload },
          'Invalid schedule: everyMs must be a positive integer (milliseconds)',
        ],
        [{ name: 'n', schedule: { kind: 'cron', expr: '' }, payload }, 'Invalid schedule: expr must be a non-empty cron expression'],
        [{ name: 'n', schedule: { kind: 'cron', expr: 5 }, payload }, 'Invalid schedule: expr must be a non-empty cron expression'],
        [{ name: 'n', schedule: { kind: 'at', at: '2030-01-01T00:00:00Z' }, payload }, "Invalid schedule: kind must be 'every' or 'cron'"],
        [{ name: 'n', schedule: {}, payload }, "Invalid schedule: kind must be 'every' or 'cron'"],
        [
          { name: 'n', schedule, payload: { kind: 'command', argv: ['rm', '-rf', '/'] } },
          "Invalid payload: kind must be 'systemEvent' or 'agentTurn'",
        ],
        [{ name: 'n', schedule, payload: { text: 'no kind' } }, "Invalid payload: kind must be 'systemEvent' or 'agentTurn'"],
        [{ name: 'n', schedule, payload: { kind: 'systemEvent' } }, 'Invalid payload: systemEvent needs a text of 1 to 10000 characters'],
        [
          { name: 'n', schedule, payload: { kind: 'agentTurn', message: '' } },
          'Invalid payload: agentTurn needs a message of 1 to 10000 characters',
        ],
        [
          { name: 'n', schedule, payload: { kind: 'agentTurn', message: 'm', timeoutSeconds: -1 } },
          'Invalid payload: timeoutSeconds must be a number >= 0',
        ],
      ];
      for (const [json, error] of cases) {
        const res = await call(web.url, '/api/cron', alice, { json });
        expect(res.status, JSON.stringify(json)).toBe(400);
        expect(res.body).toEqual({ error });
      }
      for (const [body, type] of [
        ['name=n', 'text/plain'],
        ['{"name":', 'application/json'],
        ['name=n&schedule=x', 'application/x-www-form-urlencoded'],
      ] as const) {
        const res = await call(web.url, '/api/cron', alice, { method: 'POST', body, headers: { 'content-type': type } });
        expect(res.status, type).toBe(400);
        expect(res.body).toEqual({ error: REQUIRED });
      }
      expect(received(shared, 'cron.add').length).toBe(adds);
    });

    it('reads every page of a long list', async () => {
      const carol = await web.signIn();
      const now = Date.now();
      for (let i = 0; i < 450; i++) {
        const id = `carol-${i}`;
        shared.jobs.set(id, {
          id,
          name: `job ${i}`,
          description: `aop-owner:${carol.userId}`,
          enabled: i % 3 !== 0,
          createdAtMs: now,
          updatedAtMs: now,
          schedule: { kind: 'every', everyMs: 60_000 },
          payload: { kind: 'systemEvent', text: 't' },
          sessionTarget: 'main',
          wakeMode: 'now',
          state: {},
        });
      }
      const before = received(shared, 'cron.list').length;
      const res = await call(web.url, '/api/cron', carol);
      expect(res.body.total).toBe(450);
      expect(new Set(res.body.jobs.map((j: { id: string }) => j.id)).size).toBe(450);
      expect(res.body.jobs.filter((j: { enabled: boolean }) => !j.enabled)).toHaveLength(150);
      expect(
        received(shared, 'cron.list')
          .slice(before)
          .map((f) => f.params.offset),
      ).toEqual([0, 200, 400]);
    });
  });

  describe("cron on the user's own agent gateway", () => {
    it('lists every job on it, the gateway’s own and disabled ones included, without an owner filter', async () => {
      const res = await call(web.url, '/api/cron', owner);
      expect(res.status).toBe(200);
      expect(res.body.source).toBe('gateway');
      expect(res.body.jobs).toContainEqual({
        id: 'hb-main',
        name: 'heartbeat-main',
        enabled: true,
        schedule: { kind: 'every', everyMs: 1_800_000 },
        payload: { kind: 'heartbeat' },
        lastRun: null,
        nextRun: expect.stringMatching(ISO),
        system: { kind: 'heartbeat', description: expect.stringMatching(/^OpenClaw's own heartbeat for agent “main”/), deletable: false },
      });
      expect(received(agentGw, 'cron.list').at(-1)?.params).toEqual({ includeDisabled: true, enabled: 'all', limit: 200, offset: 0 });
      expect(received(shared, 'cron.list').every((f) => f.params.query !== undefined)).toBe(true);
    });

    it('says how a job’s last run ended: a heartbeat OpenClaw skipped has a run time, and says it was skipped and why', async () => {
      const heartbeat = agentGw.jobs.get('hb-main') as Record<string, unknown>;
      const dream = agentGw.jobs.get('dream') as Record<string, unknown>;
      const [heartbeatState, dreamState] = [heartbeat.state, dream.state];
      const at = Date.now() - 60_000;
      // As openclaw@2026.9.6 records a beat of a channel-less agent, and a dream that ran.
      heartbeat.state = {
        nextRunAtMs: at + 1_800_000,
        lastRunAtMs: at,
        lastRunStatus: 'skipped',
        lastStatus: 'skipped',
        lastError: 'heartbeat skipped: no-route',
        consecutiveSkipped: 1,
      };
      dream.state = { nextRunAtMs: at + 86_400_000, lastRunAtMs: at, lastRunStatus: 'ok', lastStatus: 'ok' };
      try {
        const { jobs } = (await call(web.url, '/api/cron', owner)).body as { jobs: Array<Record<string, unknown>> };
        expect(jobs.find((j) => j.id === 'hb-main')).toMatchObject({
          lastRun: new Date(at).toISOString(),
          lastOutcome: { status: 'skipped', detail: 'heartbeat skipped: no-route' },
        });
        expect(jobs.find((j) => j.id === 'dream')).toMatchObject({ lastRun: new Date(at).toISOString(), lastOutcome: { status: 'ok' } });
        // A job that never ran has no outcome.
        dream.state = { nextRunAtMs: at + 86_400_000 };
        const again = (await call(web.url, '/api/cron', owner)).body as { jobs: Array<Record<string, unknown>> };
        expect(again.jobs.find((j) => j.id === 'dream')).toMatchObject({ lastRun: null });
        expect(again.jobs.find((j) => j.id === 'dream')).not.toHaveProperty('lastOutcome');
      } finally {
        heartbeat.state = heartbeatState;
        dream.state = dreamState;
      }
    });

    it('POST sends systemEvent jobs to the main session and wakes the agent now', async () => {
      const res = await call(web.url, '/api/cron', owner, {
        json: {
          name: 'standup',
          schedule: { kind: 'cron', expr: '0 9 * * 1-5' },
          payload: { kind: 'systemEvent', text: 'Time for standup.' },
        },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: true,
        source: 'gateway',
        job: {
          id: expect.any(String),
          name: 'standup',
          enabled: true,
          schedule: { kind: 'cron', expr: '0 9 * * 1-5' },
          payload: { kind: 'systemEvent', text: 'Time for standup.' },
          lastRun: null,
          nextRun: expect.stringMatching(ISO),
        },
      });
      expect(received(agentGw, 'cron.add').at(-1)?.params).toEqual({
        name: 'standup',
        agentId: 'main',
        schedule: { kind: 'cron', expr: '0 9 * * 1-5' },
        sessionTarget: 'main',
        wakeMode: 'now',
        payload: { kind: 'systemEvent', text: 'Time for standup.' },
        enabled: true,
      });
      expect(agentGw.jobs.has(res.body.job.id)).toBe(true);
      expect(shared.jobs.has(res.body.job.id)).toBe(false);
    });

    it('DELETE: 404 for an unknown job; 403 in words for OpenClaw’s own jobs, which stay', async () => {
      const unknown = await call(web.url, '/api/cron?jobId=nope', owner, { method: 'DELETE' });
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ error: 'Job not found' });
      const removes = received(agentGw, 'cron.remove').length;
      for (const id of ['hb-main', 'dream']) {
        const refused = await call(web.url, `/api/cron?jobId=${id}`, owner, { method: 'DELETE' });
        expect(refused.status, id).toBe(403);
        expect(refused.body).toEqual({
          error: 'This is a system job kept by OpenClaw; it cannot be deleted here (change it through the agent configuration)',
        });
        expect(agentGw.jobs.has(id)).toBe(true);
      }
      // Refused before the gateway is asked: memory-core's job is not system-owned to OpenClaw, which would remove it.
      expect(received(agentGw, 'cron.remove')).toHaveLength(removes);
    });

    it('marks OpenClaw’s memory job as a system job with a readable description instead of its raw token', async () => {
      const list = await call(web.url, '/api/cron', owner);
      const dream = list.body.jobs.find((j: { id: string }) => j.id === 'dream');
      expect(dream).toMatchObject({
        name: 'Memory Dreaming Promotion',
        schedule: { kind: 'cron', expr: '0 3 * * *' },
        system: { kind: 'memory', description: expect.stringContaining('MEMORY.md'), deletable: false },
      });
      expect(dream.system.description).not.toContain('__openclaw');
      // The user's own jobs carry no system mark.
      expect(list.body.jobs.find((j: { name: string }) => j.name === 'standup')).not.toHaveProperty('system');
    });

    it('400 in words for a cron expression or time zone the shared parser refuses; nothing reaches the gateway', async () => {
      const adds = received(agentGw, 'cron.add').length;
      const payload = { kind: 'systemEvent', text: 'hello' };
      const cases: [Record<string, unknown>, string][] = [
        [{ expr: '61 * * * *' }, 'Invalid schedule: the minute field 61 is out of range (use 0-59)'],
        [{ expr: '0 24 * * *' }, 'Invalid schedule: the hour field 24 is out of range (use 0-23)'],
        [
          { expr: '0 9 * *' },
          'Invalid schedule: a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one has 4',
        ],
        [
          { expr: '0 9 * * funday' },
          'Invalid schedule: the day-of-week field “funday” is not a day-of-week (use 0-7 (0 and 7 are Sunday) or sun-sat)',
        ],
        [{ expr: '0 0 30 2 *' }, 'Invalid schedule: it never runs: no month in it has that day (for example 30 2 is 30 February)'],
        [
          { expr: '0 9 * * *', tz: 'Mars/Olympus' },
          'Invalid schedule: “Mars/Olympus” is not a time zone: use a name like Europe/London or UTC',
        ],
      ];
      for (const [schedule, error] of cases) {
        const res = await call(web.url, '/api/cron', owner, { json: { name: 'bad', schedule: { kind: 'cron', ...schedule }, payload } });
        expect({ schedule, status: res.status, body: res.body }).toEqual({ schedule, status: 400, body: { error } });
      }
      expect(received(agentGw, 'cron.add')).toHaveLength(adds);
      const good = await call(web.url, '/api/cron', owner, {
        json: { name: 'weekday mornings', schedule: { kind: 'cron', expr: '30 8 * * mon-fri', tz: 'Europe/London' }, payload },
      });
      expect(good.status).toBe(200);
    });

    it('gateway down: GET answers 200 gateway-error, POST and DELETE 502; a wrong token is a refusal', async () => {
      const gone = await startFakeGatewayWs({ token: AGENT_TOKEN });
      await gone.close();
      const wrongToken = await startFakeGatewayWs({ token: 'a-different-token-entirely' });
      try {
        await agentUrl(`http://127.0.0.1:${gone.port}`);
        const list = await call(web.url, '/api/cron', owner);
        expect(list.status).toBe(200);
        expect(list.body).toEqual({ jobs: [], error: expect.stringMatching(/^Gateway unreachable: /), source: 'gateway-error' });
        const add = await call(web.url, '/api/cron', owner, {
          json: { name: 'n', schedule: { kind: 'every', everyMs: 60_000 }, payload: { kind: 'systemEvent', text: 't' } },
        });
        expect(add.status).toBe(502);
        expect(add.body).toEqual({ error: expect.stringMatching(/^Gateway unreachable: /) });
        const del = await call(web.url, '/api/cron?jobId=hb-main', owner, { method: 'DELETE' });
        expect(del.status).toBe(502);
        expect(del.body.error).toMatch(/^Gateway unreachable: /);

        await agentUrl(`http://127.0.0.1:${wrongToken.port}`);
        const refused = await call(web.url, '/api/cron', owner);
        expect(refused.body).toEqual({
          jobs: [],
          error: 'Gateway rejected the request: unauthorized: gateway token mismatch',
          source: 'gateway-error',
        });
      } finally {
        await wrongToken.close();
        await agentUrl(`http://127.0.0.1:${agentGw.port}`);
      }
    });

    it('no gateway at all (no agent, no shared gateway): gateway-error and 502', async () => {
      const lone = await bare.signIn();
      const list = await call(bare.url, '/api/cron', lone);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({ jobs: [], error: 'No gateway available: No agent found', source: 'gateway-error' });
      const add = await call(bare.url, '/api/cron', lone, {
        json: { name: 'n', schedule: { kind: 'every', everyMs: 60_000 }, payload: { kind: 'systemEvent', text: 't' } },
      });
      expect(add.status).toBe(502);
      expect(add.body).toEqual({ error: 'No gateway available: No agent found' });
      const del = await call(bare.url, '/api/cron?jobId=x', lone, { method: 'DELETE' });
      expect(del.status).toBe(502);
    });
  });

  describe('heartbeat', () => {
    it('converts millisecond schedules to hours (or minutes)', () => {
      expect(frequencyOf({ kind: 'every', everyMs: 3_600_000 })).toBe('1h');
      expect(frequencyOf({ kind: 'every', everyMs: 1_800_000 })).toBe('30m');
      expect(frequencyOf({ kind: 'every', everyMs: 43_200_000 })).toBe('12h');
      expect(frequencyOf({ kind: 'every', everyMs: 5_400_000 })).toBe('90m');
      expect(frequencyOf({ kind: 'every', everyMs: 90_000 })).toBe('90s');
      expect(frequencyOf({ kind: 'cron', expr: '0 * * * *' })).toBe('0 * * * *');
    });

    it('401 Unauthorized without a session', async () => {
      for (const method of ['GET', 'PUT', 'POST', 'DELETE']) {
        const res = await call(web.url, '/api/heartbeat', undefined, { method, ...(method === 'GET' ? {} : { json: { agentId: 'a' } }) });
        expect(res.status, method).toBe(401);
        expect(res.body).toEqual({ error: 'Unauthorized' });
      }
    });

    describe('on the shared gateway', () => {
      let dana: User;
      let erin: User;
      beforeAll(async () => {
        dana = await web.signIn();
        erin = await web.signIn();
      });

      it('GET without a job of ours and without agentId: db, disabled, with a message (the gateway’s own heartbeat is not ours)', async () => {
        const res = await call(web.url, '/api/heartbeat', dana);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ source: 'db', enabled: false, message: expect.any(String) });
      });

      it('PUT writes the gateway job, GET reads it back; later PUTs update the same job', async () => {
        const put = await call(web.url, '/api/heartbeat', dana, { method: 'PUT', json: { frequency: '2h' } });
        expect(put.status).toBe(200);
        expect(put.body).toEqual({ success: true, source: 'gateway', enabled: true, frequency: '2h' });
        const mine = [...shared.jobs.values()].filter((j) => String(j.description).includes(`aop-owner:${dana.userId}`));
        expect(mine).toHaveLength(1);
        expect(mine[0]).toMatchObject({
          name: 'platform-heartbeat',
          description: `aop-owner:${dana.userId} aop-heartbeat aop-payload:systemEvent`,
          schedule: { kind: 'every', everyMs: 7_200_000 },
          sessionTarget: `session:aop-owner:${dana.userId}:main`,
          enabled: true,
        });

        const get = await call(web.url, '/api/heartbeat', dana);
        expect(get.body).toEqual({ source: 'gateway', enabled: true, frequency: '2h', nextRun: expect.stringMatching(ISO), lastRun: null });

        // Off without a frequency keeps the schedule.
        const off = await call(web.url, '/api/heartbeat', dana, { method: 'PUT', json: { enabled: false } });
        expect(off.body).toEqual({ success: true, source: 'gateway', enabled: false, frequency: '2h' });
        expect(received(shared, 'cron.update').at(-1)?.params).toEqual({ id: mine[0]?.id, patch: { enabled: false } });
        expect((await call(web.url, '/api/heartbeat', dana)).body).toEqual({
          source: 'gateway',
          enabled: false,
          frequency: '2h',
          nextRun: null,
          lastRun: null,
        });

        // `enabled` defaults to true.
        const on = await call(web.url, '/api/heartbeat', dana, { method: 'PUT', json: { frequency: '30m' } });
        expect(on.body).toEqual({ success: true, source: 'gateway', enabled: true, frequency: '30m' });
        expect([...shared.jobs.values()].filter((j) => String(j.description).includes(`aop-owner:${dana.userId}`))).toHaveLength(1);

        // A schedule changed elsewhere reads back in hours.
        const job = shared.jobs.get(mine[0]?.id as string) as unknown as { schedule: unknown };
        job.schedule = { kind: 'every', everyMs: 3_600_000 };
        expect((await call(web.url, '/api/heartbeat', dana)).body.frequency).toBe('1h');
      });

      it("another user's heartbeat job is not theirs", async () => {
        const res = await call(web.url, '/api/heartbeat', erin);
        expect(res.body).toMatchObject({ source: 'db', enabled: false });
        const jobs = await call(web.url, '/api/cron', erin);
        expect(jobs.body.jobs).toEqual([]);
      });

      it('the deprecated POST behaves like PUT and says it is deprecated', async () => {
        const res = await call(web.url, '/api/heartbeat', erin, { method: 'POST', json: { frequency: '6h', enabled: true } });
        expect(res.status).toBe(200);
        expect(res.headers.get('deprecation')).toBe('true');
        expect(res.body).toEqual({ success: true, source: 'gateway', enabled: true, frequency: '6h' });
        expect((await call(web.url, '/api/heartbeat', erin)).body).toMatchObject({ source: 'gateway', frequency: '6h' });
        expect((await call(web.url, '/api/heartbeat', erin, { method: 'PUT', json: {} })).headers.get('deprecation')).toBeNull();
      });

      it('400 for a bad frequency, enabled or agentId, or a body that is not JSON', async () => {
        const cases: [unknown, string][] = [
          [{ frequency: '45m' }, FREQUENCY_MESSAGE],
          [{ frequency: 2 }, FREQUENCY_MESSAGE],
          [{ frequency: '' }, FREQUENCY_MESSAGE],
          [{ frequency: 'toString' }, FREQUENCY_MESSAGE],
          [{ enabled: 'no' }, 'enabled must be a boolean'],
          [{ agentId: 5 }, 'agentId must be a string'],
        ];
        for (const method of ['PUT', 'POST']) {
          for (const [json, error] of cases) {
            const res = await call(web.url, '/api/heartbeat', erin, { method, json });
            expect(res.status, `${method} ${JSON.stringify(json)}`).toBe(400);
            expect(res.body).toEqual({ error });
          }
          const text = await call(web.url, '/api/heartbeat', erin, {
            method,
            body: 'frequency=1h',
            headers: { 'content-type': 'text/plain' },
          });
          expect(text.status).toBe(400);
          expect(text.body).toEqual({ error: 'Invalid request body' });
        }
      });
    });

    describe('in the database when there is no gateway', () => {
      let frank: User;
      let gina: User;
      let frankAgent: string;
      beforeAll(async () => {
        frank = await bare.signIn();
        gina = await bare.signIn();
        frankAgent = newId('agent');
        await bare.database.db.kysely
          .insertInto('agents')
          .values({ id: frankAgent, user_id: frank.userId, name: 'frank agent', status: 'provisioning' })
          .execute();
      });

      it('GET: no agentId → disabled with a message; nothing saved → the defaults with a message', async () => {
        expect((await call(bare.url, '/api/heartbeat', frank)).body).toEqual({ source: 'db', enabled: false, message: expect.any(String) });
        const res = await call(bare.url, `/api/heartbeat?agentId=${frankAgent}`, frank);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ source: 'db', enabled: true, frequency: '30m', message: expect.any(String) });
      });

      it('PUT: agentId required, must be one of the caller’s agents; saves and GET reads the stored values', async () => {
        const missing = await call(bare.url, '/api/heartbeat', frank, { method: 'PUT', json: { frequency: '1h' } });
        expect(missing.status).toBe(400);
        expect(missing.body).toEqual({ error: 'agentId required' });
        const empty = await call(bare.url, '/api/heartbeat', frank, { method: 'PUT', json: { agentId: '', frequency: '1h' } });
        expect(empty.body).toEqual({ error: 'agentId required' });
        for (const [who, id] of [
          [gina, frankAgent],
          [frank, 'agt_unknown'],
        ] as const) {
          const res = await call(bare.url, '/api/heartbeat', who, { method: 'PUT', json: { agentId: id, frequency: '1h' } });
          expect(res.status).toBe(404);
          expect(res.body).toEqual({ error: 'Agent not found' });
        }

        const put = await call(bare.url, '/api/heartbeat', frank, {
          method: 'PUT',
          json: { agentId: frankAgent, frequency: '6h', enabled: false },
        });
        expect(put.status).toBe(200);
        expect(put.body).toEqual({ success: true, source: 'db', enabled: false, frequency: '6h' });
        expect((await call(bare.url, `/api/heartbeat?agentId=${frankAgent}`, frank)).body).toEqual({
          source: 'db',
          enabled: false,
          frequency: '6h',
        });

        // Without a frequency the stored one stays; enabled defaults to true.
        const on = await call(bare.url, '/api/heartbeat', frank, { method: 'PUT', json: { agentId: frankAgent } });
        expect(on.body).toEqual({ success: true, source: 'db', enabled: true, frequency: '6h' });

        // Gina cannot read Frank's settings: she gets the defaults.
        expect((await call(bare.url, `/api/heartbeat?agentId=${frankAgent}`, gina)).body).toMatchObject({ source: 'db', frequency: '30m' });
      });

      it('the deprecated DELETE needs agentId and removes the stored settings', async () => {
        for (const init of [
          { method: 'DELETE' },
          { method: 'DELETE', json: {} },
          { method: 'DELETE', json: { agentId: 3 } },
          { method: 'DELETE', json: { agentId: '  ' } },
          { method: 'DELETE', body: 'agentId=x', headers: { 'content-type': 'text/plain' } },
        ]) {
          const res = await call(bare.url, '/api/heartbeat', frank, init);
          expect(res.status, JSON.stringify(init)).toBe(400);
          expect(res.body).toEqual({ error: 'agentId required' });
        }
        const res = await call(bare.url, '/api/heartbeat', frank, { method: 'DELETE', json: { agentId: frankAgent } });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ success: true });
        expect(res.headers.get('deprecation')).toBe('true');
        expect((await call(bare.url, `/api/heartbeat?agentId=${frankAgent}`, frank)).body).toMatchObject({
          source: 'db',
          frequency: '30m',
        });
      });
    });

    describe("on the user's own agent gateway", () => {
      let otherAgent: string;
      beforeAll(async () => {
        otherAgent = newId('agent');
        await web.database.db.kysely
          .insertInto('agents')
          .values({ id: otherAgent, user_id: owner.userId, name: 'second agent', status: 'provisioning' })
          .execute();
      });

      it('PUT adds a main-session job; GET reads it for that agent; another agent of the user uses the database', async () => {
        expect((await call(web.url, `/api/heartbeat?agentId=${agentId}`, owner)).body).toMatchObject({ source: 'db', frequency: '30m' });
        const put = await call(web.url, '/api/heartbeat', owner, { method: 'PUT', json: { agentId, frequency: '1h' } });
        expect(put.body).toEqual({ success: true, source: 'gateway', enabled: true, frequency: '1h' });
        const add = received(agentGw, 'cron.add').at(-1)?.params;
        expect(add).toMatchObject({
          name: 'platform-heartbeat',
          description: 'aop-heartbeat',
          schedule: { kind: 'every', everyMs: 3_600_000 },
          sessionTarget: 'main',
          wakeMode: 'now',
          payload: { kind: 'systemEvent', text: expect.stringContaining('HEARTBEAT.md') },
        });
        expect((await call(web.url, `/api/heartbeat?agentId=${agentId}`, owner)).body).toMatchObject({
          source: 'gateway',
          frequency: '1h',
        });
        expect((await call(web.url, '/api/heartbeat', owner)).body).toMatchObject({ source: 'gateway', frequency: '1h' });
        // The job list shows it as the platform heartbeat (set through this endpoint), beside OpenClaw's own.
        const jobs = (await call(web.url, '/api/cron', owner)).body.jobs as { name: string; system?: { kind: string } }[];
        expect(jobs.find((j) => j.name === 'platform-heartbeat')?.system).toMatchObject({ kind: 'platform-heartbeat', deletable: true });
        expect(jobs.find((j) => j.name === 'heartbeat-main')?.system).toMatchObject({ kind: 'heartbeat', deletable: false });

        const other = await call(web.url, '/api/heartbeat', owner, { method: 'PUT', json: { agentId: otherAgent, frequency: '12h' } });
        expect(other.body).toEqual({ success: true, source: 'db', enabled: true, frequency: '12h' });
        expect((await call(web.url, `/api/heartbeat?agentId=${otherAgent}`, owner)).body).toEqual({
          source: 'db',
          enabled: true,
          frequency: '12h',
        });
      });

      it('falls back to the database while the gateway is down', async () => {
        const gone = await startFakeGatewayWs({ token: AGENT_TOKEN });
        await gone.close();
        try {
          await agentUrl(`http://127.0.0.1:${gone.port}`);
          const missing = await call(web.url, '/api/heartbeat', owner, { method: 'PUT', json: { frequency: '3h' } });
          expect(missing.status).toBe(400);
          expect(missing.body).toEqual({ error: 'agentId required' });
          const put = await call(web.url, '/api/heartbeat', owner, { method: 'PUT', json: { agentId, frequency: '3h' } });
          expect(put.body).toEqual({ success: true, source: 'db', enabled: true, frequency: '3h' });
          expect((await call(web.url, `/api/heartbeat?agentId=${agentId}`, owner)).body).toEqual({
            source: 'db',
            enabled: true,
            frequency: '3h',
          });
        } finally {
          await agentUrl(`http://127.0.0.1:${agentGw.port}`);
        }
      });

      it('the deprecated DELETE also removes the gateway job', async () => {
        const ours = () => [...agentGw.jobs.values()].filter((j) => j.name === 'platform-heartbeat');
        expect(ours()).toHaveLength(1);
        const res = await call(web.url, '/api/heartbeat', owner, { method: 'DELETE', json: { agentId } });
        expect(res.body).toEqual({ success: true });
        expect(ours()).toHaveLength(0);
        expect(agentGw.jobs.has('hb-main')).toBe(true);
        expect((await call(web.url, `/api/heartbeat?agentId=${agentId}`, owner)).body).toMatchObject({ source: 'db', frequency: '30m' });
      });
    });
  });
  // Issue #19: every agent of a customer is addressed by its own id. Two agents of one user, each behind its own
  // gateway: the Schedule tab of each acts on that agent's gateway, whichever is primary (the newest).
  describe('cron and heartbeat of one named agent', () => {
    let pat: User;
    let first: string;
    let second: string;
    let firstGw: FakeGatewayWs;
    let secondGw: FakeGatewayWs;

    beforeAll(async () => {
      firstGw = await startFakeGatewayWs({ token: AGENT_TOKEN });
      secondGw = await startFakeGatewayWs({ token: AGENT_TOKEN });
      pat = await web.signIn({ isAdmin: true, name: 'Pat' });
      const ids: string[] = [];
      for (const gw of [firstGw, secondGw]) {
        const res = await call(web.url, '/api/provision', pat, { json: { autoProvision: true } });
        expect(res.status).toBe(200);
        ids.push(res.body.agentId);
        await pointAgentAt(web, res.body.agentId, gw.port);
      }
      [first, second] = ids as [string, string];
    });
    afterAll(async () => {
      await firstGw.close();
      await secondGw.close();
    });

    it('lists, adds and removes the jobs of the agent it names; without agentId the primary agent’s', async () => {
      const job = { name: 'first only', schedule: { kind: 'every', everyMs: 3_600_000 }, payload: { kind: 'systemEvent', text: 'hi' } };
      const added = await call(web.url, '/api/cron', pat, { json: { ...job, agentId: first } });
      expect(added.status).toBe(200);
      expect([...firstGw.jobs.values()].map((j) => j.name)).toEqual(['first only']);
      expect(secondGw.jobs.size).toBe(0);

      const named = await call(web.url, `/api/cron?agentId=${first}`, pat);
      expect(named.body).toMatchObject({ total: 1, source: 'gateway', jobs: [{ id: added.body.job.id, name: 'first only' }] });
      // No agent named: the primary agent, the newest.
      expect((await call(web.url, '/api/cron', pat)).body).toEqual({ jobs: [], total: 0, source: 'gateway' });
      expect((await call(web.url, `/api/cron?agentId=${second}`, pat)).body).toEqual({ jobs: [], total: 0, source: 'gateway' });

      // Removing through the other agent does not find it; through its own agent does.
      const wrong = await call(web.url, `/api/cron?jobId=${added.body.job.id}&agentId=${second}`, pat, { method: 'DELETE' });
      expect([wrong.status, wrong.body]).toEqual([404, { error: 'Job not found' }]);
      const removed = await call(web.url, `/api/cron?jobId=${added.body.job.id}&agentId=${first}`, pat, { method: 'DELETE' });
      expect(removed.body).toEqual({ success: true, source: 'gateway' });
      expect(firstGw.jobs.size).toBe(0);
    });

    it('another user’s agent, or none, is 404; a wrongly typed agentId is refused in words', async () => {
      for (const path of [`/api/cron?agentId=${agentId}`, '/api/cron?agentId=agt_nobody']) {
        const res = await call(web.url, path, pat);
        expect([path, res.status, res.body]).toEqual([path, 404, { error: 'Agent not found' }]);
      }
      const job = { name: 'x', schedule: { kind: 'every', everyMs: 60_000 }, payload: { kind: 'systemEvent', text: 'x' } };
      const other = await call(web.url, '/api/cron', pat, { json: { ...job, agentId } });
      expect([other.status, other.body]).toEqual([404, { error: 'Agent not found' }]);
      const typed = await call(web.url, '/api/cron', pat, { json: { ...job, agentId: 7 } });
      expect([typed.status, typed.body]).toEqual([400, { error: 'agentId must be a string' }]);
      expect(received(agentGw, 'cron.add').filter((f) => f.params?.name === 'x')).toHaveLength(0);
    });

    it('the heartbeat of a named agent that is not primary is set on its own gateway', async () => {
      const put = await call(web.url, '/api/heartbeat', pat, { method: 'PUT', json: { agentId: first, frequency: '2h' } });
      expect(put.status).toBe(200);
      expect([...firstGw.jobs.values()].map((j) => j.name)).toEqual(['platform-heartbeat']);
      expect(secondGw.jobs.size).toBe(0);
      expect((await call(web.url, `/api/heartbeat?agentId=${first}`, pat)).body).toMatchObject({ source: 'gateway', frequency: '2h' });
    });
  });
});
