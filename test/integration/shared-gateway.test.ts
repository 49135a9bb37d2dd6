import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalAgentHost } from '@aop/provisioner';
import { type FakeLlm, request, startFakeLlm } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const SHARED = { INTERNAL_API_KEY: 'internal-key-for-shared-gateways', HMAC_SECRET: 'hmac-secret-for-shared-gateways' };

// Issue #20, customer-scoped gateways through the web (spec §4.4 chat, §4.15 lifecycle): a customer's two agents in one
// gateway (the stand-in OpenClaw, which routes a turn by its `model: openclaw/<id>` and answers with that agent's own
// model), each chatted with by its own id, each with its own key; a stopped one is refused in words although its
// gateway runs on for the other. The real gateway: test/e2e/openclaw.real.test.ts.
describe("a customer's agents sharing one gateway, through the web", () => {
  let work: string;
  let llm: FakeLlm;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let owner: { cookie: string; userId: string };
  let first: string;
  let second: string;
  const api = (path: string, init: { method?: string; json?: unknown } = {}) =>
    request(`${web.url}${path}`, { ...init, headers: { cookie: owner.cookie } });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-shared-gateway-'));
    llm = await startFakeLlm();
    host = await fakeRuntimeHost(work, { gatewayProtocol: true, callModel: true }, { agentsPerGateway: 4 });
    backend = await startBackend({ ...SHARED, OPENAI_BASE_URL: llm.url }, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });
    owner = await web.signIn({ isAdmin: true });
    const provision = async (name: string, apiKey: string) => {
      const res = await api('/api/provision', { json: { name, autoProvision: true, aiProvider: 'openai', apiKey } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.agentId as string;
    };
    first = await provision('First', 'sk-first');
    await host.waitUntilReady(first);
    second = await provision('Second', 'sk-second');
    // No wait: a message sent the moment provisioning answers is answered by the agent that joined.
    const hello = await api('/api/chat', { json: { message: 'hello at once', agentId: second } });
    expect(hello.status, JSON.stringify(hello.body)).toBe(200);
  });
  afterAll(async () => {
    await web?.close();
    await backend?.close();
    await host?.shutdown();
    await llm?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('provisions the second agent into the first one’s gateway', async () => {
    const [a, b] = await Promise.all([host.status(first), host.status(second)]);
    expect(b).toMatchObject({ status: 'running', pid: a.pid, url: a.url, openclawAgentId: second.toLowerCase() });
    const agents = (await api('/api/agents')).body.agents as { id: string; url?: string }[];
    expect(agents.map((agent) => agent.id).sort()).toEqual([first, second].sort());
    // The agent's state says whom it shares its gateway with (the dashboard's Lifecycle tab names them).
    expect((await api(`/api/agents/${first}/health`)).body).toMatchObject({ state: 'live', sharesGatewayWith: [second] });
    expect((await api(`/api/agents/${second}/health`)).body).toMatchObject({ state: 'live', sharesGatewayWith: [first] });
    // Mission control says each node's load and memory are the shared gateway's (spec §2.10 node, one optional field).
    const graph = await api('/api/mission-control/fleet/graph');
    const nodes = graph.body.nodes as { id: string; sharesGatewayWith?: string[] }[];
    expect(nodes.find((node) => node.id === first)?.sharesGatewayWith).toEqual([second]);
    expect(nodes.find((node) => node.id === second)?.sharesGatewayWith).toEqual([first]);
  });

  it('chats with each agent by its id, each turn in its own sessions and on its own key', async () => {
    for (const [agentId, text, key] of [
      [first, 'to the first', 'sk-first'],
      [second, 'to the second', 'sk-second'],
    ] as const) {
      const res = await api('/api/chat', { json: { message: text, agentId } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ success: true, agentId });
      const turn = llm.chatRequests().findLast((r) => JSON.stringify(r.body).includes(text));
      expect(turn?.headers.authorization).toBe(`Bearer ${key}`);
    }
    // The gateway recorded each turn under its agent (`agent:<id>:…`).
    const sessions = JSON.parse(await readFile(join(host.paths(first).state, 'fake-sessions.json'), 'utf8')) as Record<
      string,
      { messages: string[] }
    >;
    const keysWith = (text: string) => Object.keys(sessions).filter((key) => sessions[key]?.messages.includes(text));
    expect(keysWith('to the first').every((key) => key.startsWith('agent:main:'))).toBe(true);
    expect(keysWith('to the second').every((key) => key.startsWith(`agent:${second.toLowerCase()}:`))).toBe(true);
    expect(keysWith('to the second')).toHaveLength(1);
  });

  it("puts each agent's heartbeat and main-session jobs on the gateway as its own (OpenClaw runs a main-session job only for its default agent)", async () => {
    const jobs = async () => JSON.parse(await readFile(join(host.paths(first).state, 'cron-jobs.json'), 'utf8')) as Record<string, any>[];
    for (const agentId of [first, second]) {
      const heartbeat = await api('/api/heartbeat', { method: 'PUT', json: { agentId, frequency: '2h', enabled: true } });
      expect(heartbeat.status, JSON.stringify(heartbeat.body)).toBe(200);
      expect(heartbeat.body).toMatchObject({ source: 'gateway', frequency: '2h' });
      const job = await api('/api/cron', {
        method: 'POST',
        json: {
          agentId,
          name: `standup ${agentId}`,
          schedule: { kind: 'every', everyMs: 3_600_000 },
          payload: { kind: 'systemEvent', text: 'stand up' },
        },
      });
      expect(job.status, JSON.stringify(job.body)).toBe(200);
      // Listed back as it was asked for: a message in the agent's main session.
      const listed = (await api(`/api/cron?agentId=${agentId}`)).body.jobs as { name: string; payload: unknown }[];
      expect(listed.find((j) => j.name === `standup ${agentId}`)?.payload).toEqual({ kind: 'systemEvent', text: 'stand up' });
    }
    // On the gateway: the first agent's in its main session, the further agent's a turn in its own main session.
    const standup = (agentId: string) => jobs().then((all) => all.find((j) => j.name === `standup ${agentId}`));
    expect(await standup(first)).toMatchObject({ agentId: 'main', sessionTarget: 'main', payload: { kind: 'systemEvent' } });
    expect(await standup(second)).toMatchObject({
      agentId: second.toLowerCase(),
      sessionTarget: `session:agent:${second.toLowerCase()}:main`,
      payload: { kind: 'agentTurn', message: 'stand up' },
    });
    expect((await api(`/api/heartbeat?agentId=${second}`)).body).toMatchObject({ source: 'gateway', frequency: '2h' });
  });

  it('refuses a stopped agent’s chat in words while its gateway runs on for the other', async () => {
    const { pid } = await host.status(first);
    const stopped = await api(`/api/agents/${second}/stop`, { method: 'POST' });
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(200);
    expect(stopped.body).toMatchObject({ state: 'stopped' });
    const refused = await api('/api/chat', { json: { message: 'are you there?', agentId: second } });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ error: 'The agent is stopped: start it to chat' });
    // The WebSocket chat goes to the primary agent (the second, the newest): spec §4.4 answers its failures 500.
    const overSocket = await api('/api/gateway/chat', { json: { message: 'over the socket?' } });
    expect(overSocket.status).toBe(500);
    expect(overSocket.body).toEqual({ error: 'Chat failed' });
    expect(llm.chatRequests().some((r) => JSON.stringify(r.body).includes('are you there?'))).toBe(false);
    // The other agent answers in the same process; the stopped one's jobs can still be read.
    expect((await api('/api/chat', { json: { message: 'still here?', agentId: first } })).status).toBe(200);
    expect((await host.status(first)).pid).toBe(pid);
    expect(await host.status(second)).toMatchObject({ status: 'stopped', pid: null });
    expect((await api(`/api/cron?agentId=${second}`)).status).toBe(200);

    // Its gateway answers, yet takes no new job for it (spec §4.3's 502), and a heartbeat change is saved for its start
    // (spec §4.10 `source: 'db'`), as for an agent whose gateway is down: either would run while it is stopped.
    const jobsFile = async () =>
      JSON.parse(await readFile(join(host.paths(first).state, 'cron-jobs.json'), 'utf8')) as Record<string, any>[];
    const before = await jobsFile();
    const job = await api('/api/cron', {
      method: 'POST',
      json: {
        agentId: second,
        name: 'while stopped',
        schedule: { kind: 'every', everyMs: 60_000 },
        payload: { kind: 'agentTurn', message: 'hi' },
      },
    });
    expect(job.status).toBe(502);
    expect(job.body).toEqual({ error: 'The agent is stopped: start it to add jobs (its jobs are kept meanwhile)' });
    const heartbeat = await api('/api/heartbeat', { method: 'PUT', json: { agentId: second, frequency: '6h', enabled: true } });
    expect(heartbeat.body).toEqual({ success: true, source: 'db', enabled: true, frequency: '6h' });
    expect(await jobsFile()).toEqual(before);
    const secondsJobs = (all: Record<string, any>[]) => all.filter((j) => j.agentId === second.toLowerCase());
    expect(secondsJobs(before).length).toBeGreaterThan(0);
    expect(secondsJobs(before).every((j) => j.enabled === false)).toBe(true);
    // Read back as saved, not as the gateway's job its stop disabled.
    expect((await api(`/api/heartbeat?agentId=${second}`)).body).toEqual({ source: 'db', enabled: true, frequency: '6h' });

    const started = await api(`/api/agents/${second}/start`, { method: 'POST' });
    expect(started.body).toMatchObject({ state: 'live' });
    expect((await api('/api/chat', { json: { message: 'back again', agentId: second } })).status).toBe(200);
    // The start resumed its jobs and put the saved heartbeat on the gateway (`AfterStart`, after the action answered).
    await expect
      .poll(async () => (await api(`/api/heartbeat?agentId=${second}`)).body, { timeout: 10_000 })
      .toMatchObject({ source: 'gateway', enabled: true, frequency: '6h' });
    expect(secondsJobs(await jobsFile()).every((j) => j.enabled === true)).toBe(true);
  });
});
