import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalAgentHost } from '@aop/provisioner';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { LOG_LEVEL, startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

// Issue #19, "Many agents per customer" and "Status that is true": web → backend → the local host running the stand-in
// OpenClaw CLI (its /readyz answers 503 for the first 400 ms of each start). Every lifecycle action names its agent;
// the state comes from the one state machine (host process state + /readyz); a call answers once its state is reached.

const SHARED = {
  INTERNAL_API_KEY: 'internal-key-for-lifecycle-tests',
  HMAC_SECRET: 'hmac-secret-for-lifecycle-tests',
  TRUST_PROXY: '127.0.0.1',
};
let ip = 0;
const from = () => ({ 'x-forwarded-for': `198.51.100.${++ip % 250}` });

describe('two agents of one customer, each with its own lifecycle', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let cookie: string;
  let userId: string;
  let first: string;
  let second: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-lifecycle-'));
    host = await fakeRuntimeHost(work, { readyDelayMs: 400 });
    backend = await startBackend(SHARED, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });
    ({ cookie, userId } = await web.signIn({ plan: 'collective' }));
    const provision = async (name: string) => {
      const res = await request(`${web.url}/api/provision`, { json: { name, autoProvision: true }, headers: { ...from(), cookie } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      await host.waitUntilReady(res.body.agentId, { timeoutMs: 10_000 });
      return res.body.agentId as string;
    };
    first = await provision('First');
    second = await provision('Second');
  }, 60_000);
  afterAll(async () => {
    await web?.close();
    await backend?.close();
    await host?.shutdown();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const call = (method: string, path: string, as = cookie) => request(`${web.url}${path}`, { method, headers: { ...from(), cookie: as } });
  const health = async (id: string) => (await call('GET', `/api/agents/${id}/health`)).body;

  it('both are live; the second provisioned is the primary one until the user chooses', async () => {
    expect(await health(first)).toMatchObject({ agentId: first, state: 'live', host: 'running', ready: true, source: 'host' });
    expect(await health(second)).toMatchObject({ agentId: second, state: 'live' });
    const agents = (await call('GET', '/api/agents')).body.agents as { id: string; primary: boolean }[];
    expect(agents.map((a) => [a.id, a.primary])).toEqual([
      [second, true],
      [first, false],
    ]);
  });

  it('stopping the first leaves the second live; the stop answers once it is stopped, and says so', async () => {
    const stop = await call('POST', `/api/agents/${first}/stop`);
    expect(stop.status).toBe(200);
    expect(stop.body).toEqual({
      success: true,
      status: 'stopped',
      agentId: first,
      action: 'stop',
      state: 'stopped',
      reason: 'the agent was stopped',
      actions: ['start', 'update', 'repair'],
      live: false,
      ready: null,
      pending: false,
      events: `/api/agents/${first}/events?follow=1`,
    });
    // Not "degraded fetch failed": stopped.
    expect(await health(first)).toMatchObject({ state: 'stopped', host: 'stopped', live: false, ready: null });
    expect(await health(second)).toMatchObject({ state: 'live', actions: ['stop', 'restart', 'update', 'repair', 'reset-memory'] });
    expect((await host.status(second)).status).toBe('running');
    // The records follow the states.
    const agents = (await call('GET', '/api/agents')).body.agents as { id: string; status: string }[];
    expect(Object.fromEntries(agents.map((a) => [a.id, a.status]))).toEqual({ [first]: 'stopped', [second]: 'running' });
  });

  it('start and restart answer only once the gateway is ready (live), never on the spawn', async () => {
    const start = await call('POST', `/api/agents/${first}/start`);
    expect(start.status).toBe(200);
    expect(start.body).toMatchObject({ success: true, state: 'live', live: true, ready: true, pending: false, status: 'active' });
    // The gateway really answers /readyz at that moment (the stand-in waits 400 ms after each start).
    const state = await host.status(first);
    expect((await fetch(`${state.url}/readyz`)).status).toBe(200);

    const before = (await host.status(second)).startedAt;
    const restart = await call('POST', `/api/agents/${second}/restart`);
    expect(restart.body).toMatchObject({ success: true, agentId: second, state: 'live', pending: false, openclawVersion: '1.0.0' });
    const after = await host.status(second);
    expect(after.startedAt).not.toBe(before);
    expect((await fetch(`${after.url}/readyz`)).status).toBe(200);
    // The first was not touched by the second's restart.
    expect((await host.status(first)).startedAt).toBe(state.startedAt);
  });

  it("a restart whose gateway's scheduler will not start answers degraded at once, with why; the next restart is live", async () => {
    // The stand-in prints OpenClaw's `[cron] failed to start: …` at every start while `<state>/scheduler-fails` exists:
    // the host starts it again twice (the agent stays starting meanwhile), then leaves it running without its scheduler.
    const marker = join(host.paths(second).state, 'scheduler-fails');
    await writeFile(marker, '');
    try {
      const restart = await call('POST', `/api/agents/${second}/restart`);
      expect(restart.status).toBe(200);
      expect(restart.body).toMatchObject({
        success: true,
        agentId: second,
        state: 'degraded',
        reason:
          "the gateway answers, but OpenClaw's scheduler did not start: scheduled jobs and heartbeats do not run until the agent is restarted",
        actions: ['stop', 'restart', 'update', 'repair', 'reset-memory'],
        live: true,
        ready: true,
        pending: false,
      });
      expect(await health(second)).toMatchObject({ state: 'degraded', host: 'running', ready: true });
    } finally {
      await rm(marker, { force: true });
    }
    const again = await call('POST', `/api/agents/${second}/restart`);
    expect(again.body).toMatchObject({ success: true, state: 'live', pending: false });
  });

  it('the event stream pushes each state: stopping the agent shows stopping/stopped, starting it starting then live', async () => {
    const controller = new AbortController();
    const res = await fetch(`${web.url}/api/agents/${first}/events?follow=1`, { headers: { cookie }, signal: controller.signal });
    expect(res.status).toBe(200);
    const states: string[] = [];
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    /** Reads events until `state` arrives after the first `after` states. */
    const waitFor = async (state: string, after = 0) => {
      while (!states.slice(after).includes(state)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${state}; saw ${states.join(', ')}`);
        buffer += value;
        let cut = buffer.indexOf('\n\n');
        while (cut !== -1) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (frame.startsWith('event: status')) states.push(JSON.parse(frame.split('data: ')[1]!).state);
          cut = buffer.indexOf('\n\n');
        }
      }
    };
    await waitFor('live');
    await call('POST', `/api/agents/${first}/stop`);
    await waitFor('stopped');
    const stoppedAt = states.lastIndexOf('stopped');
    await call('POST', `/api/agents/${first}/start`);
    await waitFor('live', stoppedAt);
    controller.abort();
    // Nothing between stopped and live claimed live early: the states in order, each change once.
    const fromStop = states.slice(states.indexOf('stopped'));
    expect(fromStop[0]).toBe('stopped');
    expect(fromStop.at(-1)).toBe('live');
    for (const s of fromStop.slice(1, -1)) expect(['starting', 'degraded']).toContain(s);
  });

  it('the primary agent is the user’s choice; /api/instance/:userId and /api/user/runtime follow it', async () => {
    expect((await call('PUT', `/api/agents/${first}/primary`)).body).toMatchObject({ success: true, primaryAgentId: first });
    expect((await call('GET', '/api/user/runtime')).body).toMatchObject({ instanceId: first, url: (await host.status(first)).url });
    const stats = await call('GET', `/api/instance/${userId}/stats`);
    expect(stats.body).toMatchObject({ status: 'ok', agentId: first });
    // The instance route acts on the primary (the first) and answers in the same shape as the per-agent route.
    const stop = await call('POST', `/api/instance/${userId}/stop`);
    expect(stop.body).toMatchObject({ success: true, agentId: first, state: 'stopped' });
    expect(await health(second)).toMatchObject({ state: 'live' });
    expect((await call('POST', `/api/instance/${userId}/start`)).body).toMatchObject({ agentId: first, state: 'live' });
  });

  it('another user cannot see or act on these agents: 404 like a missing one, and nothing happens', async () => {
    const other = await web.signIn();
    for (const [method, path] of [
      ['POST', `/api/agents/${first}/stop`],
      ['POST', `/api/agents/${second}/restart`],
      ['GET', `/api/agents/${first}/health`],
      ['PUT', `/api/agents/${first}/primary`],
      ['GET', `/api/agents/${first}/events`],
    ] as const) {
      const res = await call(method, path, other.cookie);
      expect([res.status, res.body], `${method} ${path}`).toEqual([404, { error: 'Agent not found' }]);
    }
    expect((await call('POST', '/api/agents/agt_missing/stop')).status).toBe(404);
    expect((await call('POST', `/api/agents/${first}/stop`, '')).status).toBe(401);
    expect((await host.status(first)).status).toBe('running');
    expect((await host.status(second)).status).toBe('running');
  });

  it('an API key acts like the session, on its owner’s agents only', async () => {
    const key = await request(`${web.url}/api/keys`, { json: { name: 'lifecycle' }, headers: { ...from(), cookie } });
    expect(key.status, JSON.stringify(key.body)).toBeLessThan(300);
    const secret = (key.body.key ?? key.body.apiKey?.key) as string;
    const withKey = (path: string, method = 'POST') =>
      request(`${web.url}${path}`, { method, headers: { ...from(), authorization: `Bearer ${secret}` } });
    expect((await withKey(`/api/agents/${second}/health`, 'GET')).body).toMatchObject({ state: 'live' });
    expect((await withKey(`/api/agents/${second}/stop`)).body).toMatchObject({ state: 'stopped' });
    expect(await health(first)).toMatchObject({ state: 'live' });
    expect((await withKey(`/api/agents/${second}/start`)).body).toMatchObject({ state: 'live' });
  });

  it('a call that outlasts its wait answers 202 with the state on the way and the stream to follow (AGENT_LIFECYCLE_WAIT_MS)', async () => {
    const impatient = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, AGENT_LIFECYCLE_WAIT_MS: '0' });
    try {
      const signed = await impatient.signIn({ plan: 'solo' });
      const made = await request(`${impatient.url}/api/provision`, {
        json: { autoProvision: true },
        headers: { ...from(), cookie: signed.cookie },
      });
      const id = made.body.agentId as string;
      await host.waitUntilReady(id, { timeoutMs: 10_000 });
      const restart = await request(`${impatient.url}/api/agents/${id}/restart`, {
        method: 'POST',
        headers: { ...from(), cookie: signed.cookie },
      });
      expect(restart.status).toBe(202);
      // Not the backend's "active": where the agent is now (the stand-in is not ready for 400 ms after each start).
      expect(restart.body).toMatchObject({
        success: true,
        agentId: id,
        status: 'starting',
        state: 'starting',
        pending: true,
        actions: ['stop'],
      });
      expect(restart.body.events).toBe(`/api/agents/${id}/events?follow=1`);
      // The stream it names reaches live.
      const events = await fetch(`${impatient.url}/api/agents/${id}/events`, { headers: { cookie: signed.cookie } });
      const text = await events.text();
      expect(text).toContain('"state":"live"');
      expect(text.trim().split('\n\n').at(-1)).toBe('event: done\ndata: {"status":"running","ready":true}');
    } finally {
      await impatient.close();
    }
  });
});

// Issue #20: an agent hibernated for being idle shows `hibernated`, and a message wakes it and is answered.
describe('a hibernated agent, woken by a message', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let cookie: string;
  let agentId: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-hibernation-'));
    // Room for one gateway: a second agent can take the room a nap freed.
    host = await fakeRuntimeHost(work, { gatewayProtocol: true }, { maxAgents: 1 });
    backend = await startBackend(SHARED, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url }, { logs: true });
    ({ cookie } = await web.signIn({ plan: 'pro' }));
    const res = await request(`${web.url}/api/provision`, {
      json: { name: 'Sleeper', autoProvision: true },
      headers: { ...from(), cookie },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    agentId = res.body.agentId;
    await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
  }, 60_000);
  afterAll(async () => {
    await web?.close();
    await backend?.close();
    await host?.shutdown();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const call = (method: string, path: string, json?: unknown) =>
    request(`${web.url}${path}`, { method, headers: { ...from(), cookie }, ...(json === undefined ? {} : { json }) });

  it('shows hibernated with what wakes it; the next message wakes it, waits, and is answered; nothing was lost', async () => {
    const first = await call('POST', '/api/chat', { message: 'before the nap' });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.reply).toBe('fake reply: before the nap');
    const { pid } = await host.status(agentId);

    await host.hibernate(agentId);
    expect((await call('GET', `/api/agents/${agentId}/health`)).body).toMatchObject({
      state: 'hibernated',
      reason: 'asleep after being idle: the next message or its next scheduled job wakes it',
      actions: ['start', 'stop'],
      host: 'hibernated',
      live: false,
      wakesAt: null, // no job due
    });
    // The agent list and record keep the record's `running` and say beside it what the host says: asleep.
    expect((await call('GET', '/api/agents')).body.agents).toMatchObject([{ id: agentId, status: 'running', hostStatus: 'hibernated' }]);
    expect((await call('GET', `/api/agents/${agentId}`)).body.agent).toMatchObject({ status: 'running', hostStatus: 'hibernated' });
    // The dashboard's "running now" counts what the host says, not the agent's record (still `running`).
    expect((await call('GET', '/api/dashboard/stats')).body.agents).toMatchObject({ active: 0, total: 1 });
    expect((await call('GET', '/api/dashboard/cost')).body).toMatchObject({ activeAgents: 0, agentCount: 1 });
    // Its scheduled jobs are not "unreachable": the platform's own look does not wake it, and says it sleeps.
    expect((await call('GET', `/api/cron?agentId=${agentId}`)).body).toEqual({
      jobs: [],
      error: 'The agent is asleep (hibernated after being idle): its jobs are kept, and the next due one wakes it',
      source: 'gateway-error',
    });
    expect((await host.status(agentId)).status).toBe('hibernated');

    const woken = await call('POST', '/api/chat', { message: 'after the nap' });
    expect(woken.status, JSON.stringify(woken.body)).toBe(200);
    expect(woken.body.reply).toBe('fake reply: after the nap');
    const now = await host.status(agentId);
    expect(now.status).toBe('running');
    expect(now.pid).not.toBe(pid);
    expect((await call('GET', `/api/agents/${agentId}/health`)).body).toMatchObject({ state: 'live' });
    expect((await call('GET', '/api/agents')).body.agents).toMatchObject([{ id: agentId, status: 'running', hostStatus: 'running' }]);
    expect((await call('GET', '/api/dashboard/stats')).body.agents).toMatchObject({ active: 1, total: 1 });
    expect((await call('GET', '/api/dashboard/cost')).body).toMatchObject({ activeAgents: 1, agentCount: 1 });
    // The conversation is the one from before the nap: both turns, in order.
    const history = await call('GET', '/api/chat');
    expect(history.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'before the nap'],
      ['assistant', 'fake reply: before the nap'],
      ['user', 'after the nap'],
      ['assistant', 'fake reply: after the nap'],
    ]);
  });

  it('a change to its jobs, heartbeat, devices or sessions wakes it and is made on its gateway; a look wakes nothing', async () => {
    const state = host.paths(agentId).state;
    const readState = async (name: string) => JSON.parse(await readFile(join(state, name), 'utf8'));
    await writeFile(
      join(state, 'devices.json'),
      JSON.stringify({ pending: [], paired: [{ deviceId: 'dev-lost-phone', displayName: 'Lost phone', createdAtMs: Date.now() }] }),
    );
    // The platform saw the paired device while the agent was awake.
    expect((await call('GET', `/api/devices?agentId=${agentId}`)).body.approved).toMatchObject([{ id: 'dev-lost-phone' }]);
    /** Puts the agent to sleep, runs the change, and says it was woken for it. */
    const whileAsleep = async (change: () => Promise<{ status: number; body: any }>) => {
      await host.hibernate(agentId);
      const answer = await change();
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect((await host.status(agentId)).status).toBe('running');
      return answer.body;
    };

    // Asleep with a job due in an hour: its state says when the host wakes it (90 s ahead, the default wake lead).
    const dueAt = Date.now() + 3_600_000;
    await host.hibernate(agentId, dueAt);
    expect((await call('GET', `/api/agents/${agentId}/health`)).body).toMatchObject({
      state: 'hibernated',
      wakesAt: new Date(dueAt - 90_000).toISOString(),
    });
    await host.start(agentId);
    await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
    expect((await call('GET', `/api/agents/${agentId}/health`)).body).toMatchObject({ state: 'live', wakesAt: null });

    // Looking wakes nothing: its heartbeat read is the database's, its jobs say it sleeps, its devices are as last seen.
    await host.hibernate(agentId);
    expect((await call('GET', `/api/heartbeat?agentId=${agentId}`)).body).toMatchObject({ source: 'db' });
    expect((await call('GET', `/api/cron?agentId=${agentId}`)).body).toMatchObject({ jobs: [], source: 'gateway-error' });
    expect((await call('GET', `/api/devices?agentId=${agentId}`)).body.approved).toMatchObject([{ id: 'dev-lost-phone' }]);
    expect((await host.status(agentId)).status).toBe('hibernated');
    // Its gateway not answering is what its state says: no warning at each look (the Devices tab reads every 10 s).
    const deviceLines = web.logs.filter((line) => line.msg.startsWith('device list: agent gateway unavailable'));
    expect(deviceLines.at(-1)).toMatchObject({ level: LOG_LEVEL.debug, agentId, state: 'hibernated' });
    expect(deviceLines.filter((line) => line.level >= LOG_LEVEL.warn)).toEqual([]);

    const added = await whileAsleep(() =>
      call('POST', '/api/cron', {
        agentId,
        name: 'weekly report',
        schedule: { kind: 'every', everyMs: 7 * 86_400_000 },
        payload: { kind: 'systemEvent', text: 'write the weekly report' },
      }),
    );
    expect(added).toMatchObject({ success: true, source: 'gateway', job: { name: 'weekly report', enabled: true } });
    expect((await readState('cron-jobs.json')).map((job: { name: string }) => job.name)).toEqual(['weekly report']);

    const beat = await whileAsleep(() => call('PUT', '/api/heartbeat', { agentId, frequency: '2h' }));
    // On its gateway, not only saved in the database for a gateway that would never hear of it.
    expect(beat).toEqual({ success: true, source: 'gateway', enabled: true, frequency: '2h' });
    expect((await readState('cron-jobs.json')).map((job: { name: string }) => job.name)).toEqual(['weekly report', 'platform-heartbeat']);

    expect(await whileAsleep(() => call('DELETE', `/api/cron?agentId=${agentId}&jobId=${added.job.id}`))).toEqual({
      success: true,
      source: 'gateway',
    });
    expect((await readState('cron-jobs.json')).map((job: { name: string }) => job.name)).toEqual(['platform-heartbeat']);

    const revoked = await whileAsleep(() => call('POST', '/api/devices', { agentId, deviceId: 'dev-lost-phone', action: 'revoke' }));
    expect(revoked.approved).toEqual([]);
    expect((await readState('devices.json')).paired).toEqual([]);

    const created = await whileAsleep(() =>
      call('POST', '/api/agent', { action: 'create-session', agentId, sessionKey: 'later', label: 'Later' }),
    );
    expect(created).toMatchObject({ success: true, sessionKey: 'later', agentId });
    expect(Object.keys(await readState('fake-sessions.json')).some((key) => key.endsWith(':later'))).toBe(true);

    // A message by the gateway's own protocol (spec §4.4's WebSocket chat), and a workflow's agent turn, wake it too.
    expect(await whileAsleep(() => call('POST', '/api/gateway/chat', { message: 'up yet?' }))).toMatchObject({
      success: true,
      reply: 'fake reply: up yet?',
      agentId,
    });
    const config = (key: string, type: string, settings: object) => ({ key, label: `${type} ${key}`, ...settings });
    const flow = await call('POST', '/api/workflows', {
      name: 'Morning',
      nodes: [
        { type: 'trigger', config: config('t', 'trigger', { event: 'manual', next: ['a'] }), position: { x: 0, y: 0 } },
        { type: 'action', config: config('a', 'action', { action: 'Summarise', next: ['o'] }), position: { x: 200, y: 0 } },
        { type: 'output', config: config('o', 'output', { destination: 'email' }), position: { x: 400, y: 0 } },
      ],
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(201);
    await host.hibernate(agentId);
    const ran = await call('POST', `/api/workflows/${flow.body.workflow.id}/run`, { input: 'the news' });
    expect(ran.status, JSON.stringify(ran.body)).toBe(201);
    expect(ran.body.run).toMatchObject({ status: 'succeeded', result: expect.stringMatching(/^fake reply: Summarise/) });
    expect((await host.status(agentId)).status).toBe('running');
  });

  it('the WebSocket chat keeps its bound with a wake in it (spec §4.4: 30 s): one that outlasts it is 500, the agent wakes on', async () => {
    // The same service with a 100 ms bound: shorter than any wake.
    const hasty = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, GATEWAY_CHAT_TIMEOUT_MS: '100' }, { database: web.database });
    try {
      await host.hibernate(agentId);
      const res = await request(`${hasty.url}/api/gateway/chat`, { json: { message: 'quick?' }, headers: { ...from(), cookie } });
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Chat failed' } });
      // The message woke it: it is live for the next one.
      expect((await host.waitUntilReady(agentId, { timeoutMs: 10_000 })).status).toBe('running');
    } finally {
      await hasty.close();
    }
  });

  it('a wake the host has no room for is said in words, and the agent stays asleep until there is room', async () => {
    // A device the platform saw while the agent was awake.
    await writeFile(
      join(host.paths(agentId).state, 'devices.json'),
      JSON.stringify({ pending: [], paired: [{ deviceId: 'dev-tablet', displayName: 'Tablet', createdAtMs: Date.now() }] }),
    );
    expect((await call('GET', `/api/devices?agentId=${agentId}`)).body.approved).toMatchObject([{ id: 'dev-tablet' }]);
    await host.hibernate(agentId);
    // Another agent takes the room the nap freed (the host has room for one gateway).
    const other = await call('POST', '/api/provision', { name: 'Busy one', autoProvision: true });
    expect(other.status, JSON.stringify(other.body)).toBe(200);
    await host.waitUntilReady(other.body.agentId, { timeoutMs: 10_000 });

    const refused = await call('POST', '/api/chat', { message: 'are you there?', agentId });
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.error).toMatch(/^The agent is asleep and could not be woken: Host is at capacity: 1 of 1 agents running/);
    expect((await host.status(agentId)).status).toBe('hibernated');
    // A change to its jobs is refused in the same words (spec §4.3: 502), its heartbeat kept in the database (§4.10).
    const job = { name: 'x', schedule: { kind: 'every', everyMs: 3_600_000 }, payload: { kind: 'systemEvent', text: 'x' } };
    const cron = await call('POST', '/api/cron', { agentId, ...job });
    expect(cron.status).toBe(502);
    expect(cron.body.error).toMatch(/^The agent is asleep and could not be woken: Host is at capacity/);
    expect((await call('PUT', '/api/heartbeat', { agentId, frequency: '6h' })).body).toEqual({
      success: true,
      source: 'db',
      enabled: true,
      frequency: '6h',
    });
    // So are a device's revocation (nothing recorded that the gateway did not do) and a new session.
    const revoke = await call('POST', '/api/devices', { agentId, deviceId: 'dev-tablet', action: 'revoke' });
    expect(revoke.status).toBe(502);
    expect(revoke.body.error).toMatch(/^Agent gateway error: The agent is asleep and could not be woken: Host is at capacity/);
    expect((await call('GET', `/api/devices?agentId=${agentId}`)).body.approved).toMatchObject([{ id: 'dev-tablet' }]);
    const session = await call('POST', '/api/agent', { action: 'create-session', agentId, sessionKey: 'later-still' });
    expect(session.status).toBe(503);
    expect(session.body.error).toMatch(/^The agent is asleep and could not be woken: Host is at capacity/);
    expect((await host.status(agentId)).status).toBe('hibernated');

    // Once the room is free again (the other agent stopped), the next message wakes it and is answered.
    expect((await call('POST', `/api/agents/${other.body.agentId}/stop`)).body).toMatchObject({ state: 'stopped' });
    const woken = await call('POST', '/api/chat', { message: 'are you there now?', agentId });
    expect(woken.status, JSON.stringify(woken.body)).toBe(200);
    expect(woken.body.reply).toBe('fake reply: are you there now?');
  });
});

// Spec §4.10: a heartbeat set while the agent is stopped can only be saved in the database (`source: 'db'`). Starting
// the agent puts it on its gateway once it is live, after the start has answered; the saved copy is then forgotten.
const NO_SWEEP = { SAVED_HEARTBEAT_SWEEP_MS: '0' };
describe('a heartbeat saved while the agent was stopped', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let cookie: string;
  let userId: string;
  let agentId: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-stopped-heartbeat-'));
    host = await fakeRuntimeHost(work, { gatewayProtocol: true, readyDelayMs: 400 });
    backend = await startBackend(SHARED, { host });
    // Without its sweep: these tests follow what the starts the web makes do; the last one, the sweep.
    web = await startWeb({ ...SHARED, ...NO_SWEEP, BACKEND_API_URL: backend.url }, { logs: true });
    ({ cookie, userId } = await web.signIn({ plan: 'pro' }));
    const res = await request(`${web.url}/api/provision`, {
      json: { name: 'Beater', autoProvision: true },
      headers: { ...from(), cookie },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    agentId = res.body.agentId;
    await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
  }, 60_000);
  afterAll(async () => {
    await web?.close();
    await backend?.close();
    await host?.shutdown();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const call = (base: string, method: string, path: string, json?: unknown) =>
    request(`${base}${path}`, { method, headers: { ...from(), cookie }, ...(json === undefined ? {} : { json }) });
  const heartbeat = async () => (await call(web.url, 'GET', `/api/heartbeat?agentId=${agentId}`)).body;
  /** The platform heartbeat job on the agent's gateway (the stand-in keeps its jobs in `cron-jobs.json`), if any. */
  const gatewayJob = async () => {
    const file = join(host.paths(agentId).state, 'cron-jobs.json');
    const jobs = JSON.parse(await readFile(file, 'utf8').catch(() => '[]')) as { name: string; enabled: boolean; schedule: unknown }[];
    return jobs.find((job) => job.name === 'platform-heartbeat');
  };
  const saved = () => web.database.db.kysely.selectFrom('heartbeat_settings').selectAll().where('agent_id', '=', agentId).execute();
  const stop = async () => {
    expect((await call(web.url, 'POST', `/api/agents/${agentId}/stop`)).body).toMatchObject({ state: 'stopped' });
  };

  it('is put on its gateway once a start has the agent live, and the saved copy is forgotten', async () => {
    await stop();
    const put = await call(web.url, 'PUT', '/api/heartbeat', { agentId, frequency: '2h' });
    expect(put.body).toEqual({ success: true, source: 'db', enabled: true, frequency: '2h' });
    expect(await heartbeat()).toEqual({ source: 'db', enabled: true, frequency: '2h' });
    expect(await gatewayJob()).toBeUndefined();
    // A stopped agent's devices are read from the record, quietly: its state says why its gateway does not answer.
    expect((await call(web.url, 'GET', `/api/devices?agentId=${agentId}`)).status).toBe(200);
    expect(web.logs.filter((line) => line.msg.startsWith('device list: agent gateway unavailable'))).toMatchObject([
      { level: LOG_LEVEL.debug, agentId, state: 'stopped' },
    ]);

    const start = await call(web.url, 'POST', `/api/agents/${agentId}/start`);
    expect(start.body).toMatchObject({ state: 'live', pending: false });
    // After the start's answer: the job is on the gateway, GET reads it there, and the database keeps no copy of it.
    await expect.poll(heartbeat, { timeout: 10_000 }).toMatchObject({ source: 'gateway', enabled: true, frequency: '2h' });
    expect(await gatewayJob()).toMatchObject({ enabled: true, schedule: { kind: 'every', everyMs: 7_200_000 } });
    await expect.poll(saved).toEqual([]);
    expect(
      web.logs.some((line) =>
        line.msg.startsWith('heartbeat: the settings saved while its gateway could not take them are on its gateway now'),
      ),
    ).toBe(true);
  });

  it('a start whose agent is not live in time keeps the saved settings and says so; the next start puts them there', async () => {
    // The same service with no patience: its start answers 202 at once, and follows the agent for no time at all.
    const hasty = await startWeb(
      { ...SHARED, ...NO_SWEEP, BACKEND_API_URL: backend.url, AGENT_LIFECYCLE_WAIT_MS: '0', AGENT_START_WAIT_MS: '0' },
      { database: web.database, logs: true },
    );
    try {
      await stop();
      expect((await call(hasty.url, 'PUT', '/api/heartbeat', { agentId, frequency: '6h', enabled: false })).body).toMatchObject({
        source: 'db',
      });
      const start = await call(hasty.url, 'POST', `/api/agents/${agentId}/start`);
      expect(start.status).toBe(202);
      await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
      await expect
        .poll(() => hasty.logs.find((line) => line.msg.startsWith('heartbeat: the agent is not live') && line.level === LOG_LEVEL.warn), {
          timeout: 10_000,
        })
        .toMatchObject({ level: LOG_LEVEL.warn, agentId });
      // Not lost: still saved, for the next start (the gateway's job is still the one from before the stop).
      expect(await saved()).toMatchObject([{ enabled: false, frequency: '6h' }]);
      expect(await gatewayJob()).toMatchObject({ enabled: true, schedule: { everyMs: 7_200_000 } });
    } finally {
      await hasty.close();
    }
    // Its next start puts them on the gateway, over the older job.
    await stop();
    expect((await call(web.url, 'POST', `/api/agents/${agentId}/start`)).body).toMatchObject({ state: 'live' });
    await expect.poll(heartbeat, { timeout: 10_000 }).toMatchObject({ source: 'gateway', enabled: false, frequency: '6h' });
    await expect.poll(saved).toEqual([]);
  });

  it('a heartbeat set on the gateway replaces a saved copy, so a later start does not put the older one back', async () => {
    await stop();
    expect((await call(web.url, 'PUT', '/api/heartbeat', { agentId, frequency: '3h' })).body).toMatchObject({ source: 'db' });
    // Running again without a lifecycle action of the platform (nothing applies the saved copy), and set anew there.
    await host.start(agentId);
    await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
    expect((await call(web.url, 'PUT', '/api/heartbeat', { agentId, frequency: '12h' })).body).toMatchObject({ source: 'gateway' });
    expect(await saved()).toEqual([]);
    await stop();
    expect((await call(web.url, 'POST', `/api/agents/${agentId}/start`)).body).toMatchObject({ state: 'live' });
    // What follows the start has had time to run (a saved copy is applied within milliseconds of it).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await heartbeat()).toMatchObject({ source: 'gateway', frequency: '12h' });
    expect(await gatewayJob()).toMatchObject({ schedule: { everyMs: 12 * 3_600_000 } });
  });

  // A wake is a start (issue #20): what a start is owed follows a wake the web makes for a message or a change too.
  it('a wake by a message puts a copy saved while the agent could not be woken on its gateway', async () => {
    await host.hibernate(agentId);
    // As `PUT /api/heartbeat` leaves it when the sleeping agent's wake is refused (a full host: see above).
    await web.database.db.kysely
      .insertInto('heartbeat_settings')
      .values({ user_id: userId, agent_id: agentId, enabled: true, frequency: '3h' })
      .execute();
    const chat = await call(web.url, 'POST', '/api/chat', { message: 'wake up', agentId });
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    await expect.poll(gatewayJob, { timeout: 10_000 }).toMatchObject({ schedule: { everyMs: 3 * 3_600_000 } });
    await expect.poll(saved).toEqual([]);
    expect(await heartbeat()).toMatchObject({ source: 'gateway', frequency: '3h' });
  });

  it('a heartbeat saved because the woken agent was still starting when the wait ran out is put on its gateway once it is live', async () => {
    const behaviour = join(work, 'rt', 'node_modules', 'openclaw', 'behaviour.json');
    const readyAfter = (readyDelayMs: number) => writeFile(behaviour, JSON.stringify({ gatewayProtocol: true, readyDelayMs }));
    const patient = await startWeb(
      { ...SHARED, ...NO_SWEEP, BACKEND_API_URL: backend.url, AGENT_START_WAIT_MS: '5000' },
      { database: web.database, logs: true },
    );
    try {
      // Its next start is ready no sooner than 6 s after it began: past the PUT's 5 s wait, within the 5 s followed after.
      await readyAfter(6_000);
      await host.hibernate(agentId);
      const put = await call(patient.url, 'PUT', '/api/heartbeat', { agentId, frequency: '6h' });
      expect(put.body).toEqual({ success: true, source: 'db', enabled: true, frequency: '6h' });
      expect(await gatewayJob()).toMatchObject({ schedule: { everyMs: 3 * 3_600_000 } });
      await expect.poll(gatewayJob, { timeout: 20_000 }).toMatchObject({ schedule: { everyMs: 6 * 3_600_000 } });
      await expect.poll(saved).toEqual([]);
    } finally {
      await patient.close();
      await readyAfter(400);
    }
  }, 40_000);

  // A start the web did not make (the host's own wake for a due job, a restart after a crash) is caught by the web's
  // sweep (`SAVED_HEARTBEAT_SWEEP_MS`), which reads each agent's state and wakes none.
  it('the sweep puts a saved heartbeat on an agent the host started by itself, and wakes none that sleeps', async () => {
    const sweeping = await startWeb(
      { ...SHARED, BACKEND_API_URL: backend.url, SAVED_HEARTBEAT_SWEEP_MS: '100' },
      { database: web.database, logs: true },
    );
    try {
      await host.hibernate(agentId);
      // As `PUT /api/heartbeat` leaves it when the sleeping agent's wake is refused (a full host: see above).
      await web.database.db.kysely
        .insertInto('heartbeat_settings')
        .values({ user_id: userId, agent_id: agentId, enabled: true, frequency: '12h' })
        .execute();
      // Passes go by (every 100 ms) and it sleeps on, its copy saved and not held by anyone.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect((await host.status(agentId)).status).toBe('hibernated');
      expect(await saved()).toMatchObject([{ frequency: '12h', claimed_until: null }]);

      // Woken by the host, as for a due job: a pass puts the copy on its gateway once it is live, and drops it.
      await host.start(agentId);
      await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
      await expect.poll(gatewayJob, { timeout: 10_000 }).toMatchObject({ schedule: { everyMs: 12 * 3_600_000 } });
      await expect.poll(saved).toEqual([]);
      expect(await heartbeat()).toMatchObject({ source: 'gateway', frequency: '12h' });
      expect(
        sweeping.logs.filter((line) =>
          line.msg.startsWith('heartbeat: the settings saved while its gateway could not take them are on its gateway now'),
        ),
      ).toMatchObject([{ agentId, frequency: '12h' }]);
    } finally {
      await sweeping.close();
    }
  });
});
