import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentNotFoundError, HostFullError, SharedGatewayError } from '../host.js';
import { agentSpecs } from '../shared/agent-spec.test-support.js';
import { installFakeRuntime, writeCronJobs } from '../shared/fake-gateway.test-support.js';
import { LocalAgentHost, type LocalHostOptions } from './host.js';

// Customer-scoped gateways (issue #20) against the stand-in OpenClaw speaking its protocol: a customer's later agents
// join the first one's gateway, each addressed as its own OpenClaw agent, with the lifecycle OpenClaw allows (stop keeps
// the agent in the roster with its jobs disabled; delete is `agents.delete`). The real gateway: test/e2e/openclaw.real.test.ts.

let work: string;
let runtime: string;
/** A stand-in whose config.apply fails as OpenClaw's does when it cannot apply a reload. */
let refusing: string;
/** A stand-in whose first config.apply writes and applies the config, then fails. */
let applyThenFail: string;
/** A stand-in whose `/readyz` answers ready 1.5 s after it started. */
let slowReady: string;
const key = randomBytes(32);
const hosts: LocalAgentHost[] = [];

async function newHost(dataDir?: string, gatewayRuntime = runtime, options: Partial<LocalHostOptions> = {}): Promise<LocalAgentHost> {
  const host = new LocalAgentHost({
    ...options,
    dataDir: dataDir ?? (await mkdtemp(join(work, 'data-'))),
    encryptionKey: key,
    runtimes: { '1.0.0': gatewayRuntime },
    defaultVersion: '1.0.0',
    readyPollMs: 50,
    stopTimeoutMs: 5_000,
    agentsPerGateway: 3,
  });
  hosts.push(host);
  return host;
}

const spec = agentSpecs('Shared', 'pro');

/** A customer's first agent (ready) and `count` more of theirs, each joined to its gateway and ready. */
async function customerGateway<N extends 1 | 2>(host: LocalAgentHost, userId: string, count: N) {
  const first = await host.waitUntilReady((await host.create(spec(userId))).agentId);
  const members: string[] = [];
  for (let i = 0; i < count; i += 1) members.push((await host.create(spec(userId))).agentId);
  for (const member of members) await host.waitUntilReady(member);
  return { first, members: members as N extends 1 ? [string] : [string, string] };
}

type Json = Record<string, any>;
async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
const readJson = async (file: string): Promise<Json> => JSON.parse(await readFile(file, 'utf8')) as Json;
const stateOf = (host: LocalAgentHost, agentId: string) => host.paths(agentId).state;
const jobsOf = async (host: LocalAgentHost, gatewayId: string) =>
  (await readJson(join(stateOf(host, gatewayId), 'cron-jobs.json'))) as unknown as Array<{
    id: string;
    agentId?: string;
    enabled: boolean;
  }>;

/** A REST turn to one agent of a gateway, as the web sends it; answers the session key the gateway recorded. */
async function chat(url: string, token: string, openclawAgentId: string, text: string): Promise<string> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    // Agent-scoped, as the web sends it: with several agents OpenClaw refuses a session key that names none.
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'x-openclaw-session-key': `agent:${openclawAgentId}:web:chat`,
    },
    body: JSON.stringify({ model: `openclaw/${openclawAgentId}`, messages: [{ role: 'user', content: text }] }),
  });
  expect(res.status).toBe(200);
  return `agent:${openclawAgentId}:web:chat`;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-shared-gw-'));
  runtime = await installFakeRuntime(join(work, 'rt'), '1.0.0', { gatewayProtocol: true });
  refusing = await installFakeRuntime(join(work, 'rt-refusing'), '1.0.0', { gatewayProtocol: true, refuseConfigApply: true });
  slowReady = await installFakeRuntime(join(work, 'rt-slow-ready'), '1.0.0', { gatewayProtocol: true, readyDelayMs: 1_500 });
  applyThenFail = await installFakeRuntime(join(work, 'rt-apply-then-fail'), '1.0.0', {
    gatewayProtocol: true,
    failConfigApplyAfterWrite: 1,
  });
});

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.shutdown()));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('customer-scoped gateways (local host)', () => {
  it("joins a customer's later agent to its running gateway, as an agent of its own; never another customer's", async () => {
    const host = await newHost();
    const first = await host.create(spec('usr_a'));
    const ready = await host.waitUntilReady(first.agentId);
    expect(ready.openclawAgentId).toBe('main');

    const second = await host.create(spec('usr_a', { llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-second', model: 'm2' } }));
    expect(second.status).toBe('running'); // create answers once the gateway knows it: a message sent now finds it
    const joined = await host.waitUntilReady(second.agentId, { timeoutMs: 10_000 });
    // One process: the same gateway, addressed as its own OpenClaw agent.
    // OpenClaw's agent ids are lowercase: the platform id lowercased.
    const inGateway = second.agentId.toLowerCase();
    expect(inGateway).not.toBe(second.agentId);
    expect(joined).toMatchObject({ status: 'running', openclawAgentId: inGateway, pid: ready.pid, url: ready.url });
    expect(existsSync(join(host.paths(second.agentId).dir, 'state', 'openclaw.json'))).toBe(false);

    // The gateway's config, as applied (config.apply writes it): an explicit roster, its own workspace, model and key.
    const config = await readJson(host.paths(first.agentId).config);
    expect(config.agents.ownership).toBe('explicit');
    expect(Object.keys(config.agents.entries)).toEqual(['main', inGateway]);
    expect(config.agents.entries[inGateway]).toMatchObject({
      workspace: host.paths(second.agentId).workspace,
      model: { primary: `platform-${inGateway}/m2` },
      heartbeat: { every: '30m' },
      tools: { profile: 'coding' },
    });
    expect(config.models.providers[`platform-${inGateway}`].apiKey).toMatchObject({
      source: 'file',
      id: `/members/${inGateway}/llmApiKey`,
    });
    expect(config.tools).toMatchObject({ agentToAgent: { enabled: false }, sessions: { visibility: 'agent' } });
    expect(JSON.stringify(config)).not.toContain('sk-second');
    const applies = (await readFile(join(stateOf(host, first.agentId), 'config-applies.jsonl'), 'utf8')).trim().split('\n');
    expect(applies).toHaveLength(1);

    // The owner reaches the new agent with the token the platform hands out for it (the gateway's), in its own sessions.
    const token = (await host.spec(second.agentId)).gatewayToken;
    expect(token).toBe((await host.spec(first.agentId)).gatewayToken);
    const key = await chat(joined.url as string, token, joined.openclawAgentId, 'hello second');
    const sessions = await readJson(join(stateOf(host, first.agentId), 'fake-sessions.json'));
    expect(Object.keys(sessions)).toEqual([key]);

    // Another customer's agent, and one with variables of its own, get gateways of their own.
    const other = await host.waitUntilReady((await host.create(spec('usr_b'))).agentId);
    const withEnv = await host.waitUntilReady((await host.create(spec('usr_a', { agentEnv: { AOP_AGENT_WALLET_KEY: '0xabc' } }))).agentId);
    expect(other.openclawAgentId).toBe('main');
    expect(withEnv.openclawAgentId).toBe('main');
    expect(new Set([ready.pid, other.pid, withEnv.pid]).size).toBe(3);
    // Each says whom it shares its gateway with; the others share with nobody.
    expect((await host.status(first.agentId)).sharesGatewayWith).toEqual([second.agentId]);
    expect((await host.status(second.agentId)).sharesGatewayWith).toEqual([first.agentId]);
    expect(other.sharesGatewayWith).toEqual([]);
    expect((await host.list()).map((agent) => agent.agentId).sort()).toEqual(
      [first.agentId, second.agentId, other.agentId, withEnv.agentId].sort(),
    );
  });

  it("a customer's agents created in a burst share the first one's start: a later one joins the gateway still starting", async () => {
    const slow = await installFakeRuntime(join(work, 'rt-slow'), '1.0.0', { gatewayProtocol: true, readyDelayMs: 1_500 });
    const host = await newHost(undefined, slow);
    const llm = { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-first', model: 'm1' };
    const first = await host.create(spec('usr_burst', { llm }));
    expect(first.status).toBe('starting');
    // Its process has read its config (the stand-in prints this line as it starts): what the join writes now reaches
    // it only by the apply at ready.
    for (let i = 0; !(await host.logs(first.agentId)).some((line) => line.includes('fake openclaw 1.0.0 starting')); i++) {
      if (i > 200) throw new Error('the stand-in did not start');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const second = await host.create(spec('usr_burst', { llm: { ...llm, apiKey: 'sk-burst-second' } }));
    // In its roster at once, and as starting as the gateway it joined.
    expect(second).toMatchObject({ status: 'starting', openclawAgentId: second.agentId.toLowerCase(), pid: first.pid });
    const [a, b] = await Promise.all([host.waitUntilReady(first.agentId), host.waitUntilReady(second.agentId, { timeoutMs: 10_000 })]);
    expect(b).toMatchObject({ status: 'running', pid: a.pid, url: a.url, sharesGatewayWith: [first.agentId] });
    // Written while it started, then applied once it answered (`config.apply` re-reads the secret file with its key).
    const applies = (await readFile(join(stateOf(host, first.agentId), 'config-applies.jsonl'), 'utf8')).trim().split('\n');
    expect(applies).toHaveLength(1);
    expect(Object.keys((await readJson(host.paths(first.agentId).config)).agents.entries)).toEqual(['main', b.openclawAgentId]);
    expect((await host.logs(first.agentId)).join('\n')).toContain('the agents that joined or changed while it started are applied');
    await chat(b.url as string, (await host.spec(second.agentId)).gatewayToken, b.openclawAgentId, 'hello from the burst');
  });

  it("a gateway with members still prepares its first agent's turn when it restarts: the warm-up's session key names it", async () => {
    // The stand-in refuses a session key that names no agent once several are configured, as OpenClaw does (a bare 500).
    const warming = await installFakeRuntime(join(work, 'rt-warming'), '1.0.0', { gatewayProtocol: true, warmUpMs: 100 });
    const host = await newHost(undefined, warming);
    const llm = { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-first', model: 'm1' };
    const first = await host.create(spec('usr_w', { llm }));
    await host.waitUntilReady(first.agentId);
    const second = await host.create(spec('usr_w', { llm: { ...llm, apiKey: 'sk-second' } }));
    expect(second).toMatchObject({ status: 'running', openclawAgentId: second.agentId.toLowerCase() });
    await host.restart(first.agentId);
    expect((await host.waitUntilReady(second.agentId, { timeoutMs: 10_000 })).status).toBe('running');
    const warmUps = (await readFile(join(stateOf(host, first.agentId), 'warm-ups.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(warmUps.map((turn) => [turn.target, turn.sessionKey])).toEqual([
      ['openclaw/main', 'agent:main:aop-warm-up'],
      ['openclaw/main', 'agent:main:aop-warm-up'],
    ]);
    const log = (await host.logs(first.agentId)).join('\n');
    expect(log.match(/\[host\] first turn prepared in/g)).toHaveLength(2);
    expect(log).not.toContain('first turn not prepared');
  });

  it('stops a member by disabling its jobs and heartbeat (the gateway runs on), and starts it by enabling them again', async () => {
    const host = await newHost();
    const {
      first,
      members: [member],
    } = await customerGateway(host, 'usr_c', 1);
    const inGateway = member.toLowerCase();
    await writeCronJobs(stateOf(host, first.agentId), [
      { id: 'j-main', agentId: 'main', enabled: true },
      { id: 'j-member', agentId: inGateway, enabled: true },
      { id: 'j-member-off', agentId: inGateway, enabled: false },
      { id: `skill-collection-review-${inGateway}`, agentId: inGateway, enabled: true, system: true },
    ]);

    const stopped = await host.stop(member);
    expect(stopped.status).toBe('stopped');
    expect(await host.status(first.agentId)).toMatchObject({ status: 'running', pid: first.pid });
    expect(Object.fromEntries((await jobsOf(host, first.agentId)).map((job) => [job.id, job.enabled]))).toEqual({
      'j-main': true,
      'j-member': false,
      'j-member-off': false,
      [`skill-collection-review-${inGateway}`]: true, // system-owned: OpenClaw refuses changes
    });
    expect((await readJson(host.paths(first.agentId).config)).agents.entries[inGateway].heartbeat).toEqual({ every: '0m' });
    expect(await host.health(member)).toMatchObject({ live: false, ready: false });
    expect(await host.logs(member)).toEqual(
      expect.arrayContaining([expect.stringContaining(`agent ${inGateway} is stopped: 1 job(s) disabled`)]),
    );

    const started = await host.start(member);
    expect(started).toMatchObject({ status: 'running', pid: first.pid });
    // Only what the stop disabled is enabled again.
    expect(Object.fromEntries((await jobsOf(host, first.agentId)).map((job) => [job.id, job.enabled]))).toMatchObject({
      'j-member': true,
      'j-member-off': false,
    });
    expect((await readJson(host.paths(first.agentId).config)).agents.entries[inGateway].heartbeat).toEqual({ every: '30m' });
  });

  it('keeps the gateway for its members when the first agent stops; stops it when nobody wants it; restores it all', async () => {
    const host = await newHost();
    const {
      first,
      members: [member],
    } = await customerGateway(host, 'usr_d', 1);
    await writeCronJobs(stateOf(host, first.agentId), [{ id: 'j-main', enabled: true }]);

    expect((await host.stop(first.agentId)).status).toBe('stopped');
    expect(await host.status(member)).toMatchObject({ status: 'running', pid: first.pid });
    expect((await jobsOf(host, first.agentId))[0]?.enabled).toBe(false);
    expect((await readJson(host.paths(first.agentId).config)).agents.entries.main.heartbeat).toEqual({ every: '0m' });

    // The last agent that wanted it stops: the process goes; the member's start brings it back, the first stays stopped.
    await host.stop(member);
    expect((await host.status(first.agentId)).pid).toBeNull();
    const woken = await host.start(member);
    expect(woken.status).toBe('starting');
    const back = await host.waitUntilReady(member);
    expect(back.pid).not.toBe(first.pid);
    expect((await host.status(first.agentId)).status).toBe('stopped');

    // A new host on the same data (a platform restart): the gateway, its member and the first agent's stop come back.
    const dataDir = join(host.agentsDir, '..');
    await host.shutdown();
    const again = await newHost(dataDir);
    await again.restore();
    const restored = await again.waitUntilReady(member);
    expect(restored).toMatchObject({ status: 'running', openclawAgentId: member.toLowerCase() });
    expect((await again.status(first.agentId)).status).toBe('stopped');
    expect(Object.keys((await readJson(again.paths(first.agentId).config)).agents.entries)).toEqual(['main', member.toLowerCase()]);
    await again.start(first.agentId);
    expect(await again.status(first.agentId)).toMatchObject({ status: 'running', pid: restored.pid });
    await new Promise((resolve) => setTimeout(resolve, 200)); // the start enables its jobs once the roster is applied
    expect((await jobsOf(again, first.agentId))[0]?.enabled).toBe(true);
  });

  it('deletes a member with agents.delete; a deleted first agent leaves the gateway to its members until the last goes', async () => {
    const host = await newHost();
    const {
      first,
      members: [a, b],
    } = await customerGateway(host, 'usr_e', 2);
    const gatewayState = stateOf(host, first.agentId);
    // An agent-less system job, as OpenClaw keeps them: its owner is the first agent (the roster says so).
    await writeCronJobs(gatewayState, [{ id: 'system', enabled: true, system: true }]);
    expect((await readJson(host.paths(first.agentId).config)).agents.defaults.systemAgent).toEqual({ agentId: 'main' });

    await host.delete(a);
    expect((await readFile(join(gatewayState, 'agents-deleted.jsonl'), 'utf8')).trim()).toBe(
      JSON.stringify({ agentId: a.toLowerCase(), deleteFiles: true }),
    );
    expect(existsSync(host.paths(a).dir)).toBe(false);
    await expect(host.status(a)).rejects.toBeInstanceOf(AgentNotFoundError);
    expect((await host.status(b)).status).toBe('running');

    // The first agent is deleted: its memory goes (a restart of the gateway), the gateway stays for b.
    await writeFile(join(host.paths(first.agentId).workspace, 'MEMORY.md'), 'first agent notes');
    await host.delete(first.agentId);
    await expect(host.status(first.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
    expect((await host.list()).map((agent) => agent.agentId)).toEqual([b]);
    expect(existsSync(join(host.paths(first.agentId).workspace, 'MEMORY.md'))).toBe(false);
    expect((await host.waitUntilReady(b)).status).toBe('running');

    await host.delete(b);
    expect(existsSync(host.paths(first.agentId).dir)).toBe(false);
    expect(await host.list()).toEqual([]);
  });

  it('a member deleted while its gateway is down leaves no jobs behind: they are removed when it is up again', async () => {
    const host = await newHost();
    const {
      first,
      members: [member],
    } = await customerGateway(host, 'usr_g', 1);
    const inGateway = member.toLowerCase();
    await writeCronJobs(stateOf(host, first.agentId), [
      { id: 'j-main', agentId: 'main', enabled: true },
      { id: 'j-member', agentId: inGateway, enabled: true },
    ]);
    await host.stop(first.agentId);
    await host.stop(member);
    expect((await host.status(first.agentId)).pid).toBeNull(); // nobody wants the gateway: it is down
    await host.delete(member);
    expect(await host.start(first.agentId)).toMatchObject({ status: 'starting' });
    await host.waitUntilReady(first.agentId);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the settle runs once the gateway is ready
    expect((await jobsOf(host, first.agentId)).map((job) => job.id)).toEqual(['j-main']);
    expect(await host.logs(first.agentId)).toEqual(
      expect.arrayContaining([expect.stringContaining(`agent ${inGateway} left while the gateway was down: 1 job(s) of it removed`)]),
    );
  });

  it("joins a sleeping gateway of the customer's, waking it, when no warm gateway is ready; a warm one is taken otherwise", async () => {
    const host = await newHost();
    const first = await host.waitUntilReady((await host.create(spec('usr_i'))).agentId);
    await host.hibernate(first.agentId);
    const second = await host.create(spec('usr_i'));
    // Woken with the new agent in its roster: one cold start, and one process for both.
    expect(second.openclawAgentId).toBe(second.agentId.toLowerCase());
    const ready = await host.waitUntilReady(second.agentId);
    expect(ready.pid).not.toBe(first.pid);
    expect(await host.status(first.agentId)).toMatchObject({ status: 'running', pid: ready.pid });
    expect(Object.keys((await readJson(host.paths(first.agentId).config)).agents.entries)).toEqual(['main', second.agentId.toLowerCase()]);

    const pooled = await newHost(undefined, runtime, { warmPool: 1 });
    await pooled.restore();
    const alone = await pooled.waitUntilReady((await pooled.create(spec('usr_j'))).agentId);
    await pooled.hibernate(alone.agentId);
    await until(() => pooled.warmPoolStatus().ready === 1);
    const adopted = await pooled.create(spec('usr_j'));
    // A warm gateway answers sooner than waking the sleeping one: the new agent takes it.
    expect(adopted.openclawAgentId).toBe('main');
    expect((await pooled.status(alone.agentId)).status).toBe('hibernated');

    // No room to wake the sleeping gateway (another customer holds the host's one gateway): refused, nothing left behind.
    const full = await newHost(undefined, runtime, { maxAgents: 1 });
    const sleeper = await full.waitUntilReady((await full.create(spec('usr_k'))).agentId);
    await full.hibernate(sleeper.agentId);
    await full.waitUntilReady((await full.create(spec('usr_l'))).agentId);
    const refused = spec('usr_k');
    await expect(full.create(refused)).rejects.toBeInstanceOf(HostFullError);
    await expect(full.status(refused.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
    expect(existsSync(full.paths(refused.agentId).dir)).toBe(false);
    expect((await full.status(sleeper.agentId)).status).toBe('hibernated');
  });

  it("never wakes a sleeping gateway for a stop or a deletion; its next wake quiets the stopped agent's jobs", async () => {
    const host = await newHost();
    const {
      first,
      members: [member, other],
    } = await customerGateway(host, 'usr_s', 2);
    await writeCronJobs(stateOf(host, first.agentId), [{ id: 'j-member', agentId: member.toLowerCase(), enabled: true }]);
    const starts = async () => (await readFile(join(stateOf(host, first.agentId), 'starts.txt'), 'utf8')).trim().split('\n').length;
    const jobEnabled = async () => (await jobsOf(host, first.agentId)).find((job) => job.id === 'j-member')?.enabled;
    await host.hibernate(first.agentId);
    const before = await starts();

    expect(await host.stop(member)).toMatchObject({ status: 'stopped' });
    await host.delete(other);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await host.status(first.agentId)).status).toBe('hibernated');
    expect(await starts()).toBe(before);

    // Woken by its first agent's Start: the member stopped while it slept has its job disabled once it is ready.
    await host.start(first.agentId);
    await host.waitUntilReady(first.agentId);
    await until(async () => (await jobEnabled()) === false);
    expect(Object.keys((await readJson(host.paths(first.agentId).config)).agents.entries)).toEqual(['main', member.toLowerCase()]);

    // A member's Start wakes its sleeping gateway, and its job runs again.
    await host.hibernate(first.agentId);
    expect(await host.start(member)).toMatchObject({ status: 'starting' });
    expect((await host.waitUntilReady(member)).status).toBe('running');
    await until(async () => (await jobEnabled()) === true);
    expect(await starts()).toBe(before + 2);
  });

  it('a gateway asleep wakes for the jobs of the agents that still want to run: one stopped or deleted meanwhile does not wake it', async () => {
    const host = await newHost(undefined, runtime, { idleMs: 500, idleCheckMs: 100, wakeLeadMs: 1_000 });
    const {
      first,
      members: [member, other],
    } = await customerGateway(host, 'usr_w', 2);
    const now = Date.now();
    const due = { member: now + 60_000, other: now + 90_000, main: now + 120_000 };
    await writeCronJobs(stateOf(host, first.agentId), [
      { id: 'j-member', agentId: member.toLowerCase(), enabled: true, nextRunAtMs: due.member },
      { id: 'j-other', agentId: other.toLowerCase(), enabled: true, state: { nextRunAtMs: due.other } },
      { id: 'j-main', enabled: true, nextRunAtMs: due.main }, // no agent named: its default agent's (`main`)
    ]);
    // Started again with its jobs written: on a busy machine its idle check may have put it to sleep before they were.
    await host.restart(first.agentId);
    const wakesAt = async (agentId: string) => (await host.status(agentId)).wakesAt;
    const ahead = (ms: number) => new Date(ms - 1_000).toISOString();
    await until(async () => (await host.status(first.agentId)).status === 'hibernated', 10_000);
    expect(await wakesAt(first.agentId)).toBe(ahead(due.member));
    const starts = async () => (await readFile(join(stateOf(host, first.agentId), 'starts.txt'), 'utf8')).trim().split('\n').length;
    const before = await starts();

    // Its member stopped while it sleeps: the member's job no longer wakes it, the next one of the others does.
    await host.stop(member);
    expect(await wakesAt(first.agentId)).toBe(ahead(due.other));
    expect((await host.status(member)).status).toBe('stopped');
    expect((await host.status(other)).wakesAt).toBe(ahead(due.other));
    await host.delete(other);
    expect(await wakesAt(first.agentId)).toBe(ahead(due.main));
    // Kept across a restart of the host, and nothing of it started a process.
    await host.shutdown();
    const again = await newHost(join(host.agentsDir, '..'), runtime, { idleMs: 500, idleCheckMs: 100, wakeLeadMs: 1_000 });
    await again.restore();
    expect(await again.status(first.agentId)).toMatchObject({ status: 'hibernated', wakesAt: ahead(due.main) });
    expect(await starts()).toBe(before);
    // Its member started again wakes it now: a start asks for a process.
    expect(await again.start(member)).toMatchObject({ status: 'starting' });
    expect((await again.waitUntilReady(member)).status).toBe('running');
  });

  it('a member deleted while its gateway starts is out of the roster that gateway runs: a later agent still joins it', async () => {
    const host = await newHost(undefined, slowReady);
    const {
      first,
      members: [member],
    } = await customerGateway(host, 'usr_ds', 1);
    await host.restart(first.agentId);
    expect((await host.status(first.agentId)).status).toBe('starting');
    await host.delete(member);
    await host.waitUntilReady(first.agentId);
    // Without it in the files, the join's config.apply drops no entry (OpenClaw would refuse it, and the agent would get
    // a gateway of its own).
    const later = await host.create(spec('usr_ds'));
    expect(later.sharesGatewayWith).toEqual([first.agentId]);
    expect(Object.keys((await readJson(host.paths(first.agentId).config)).agents.entries)).toEqual(['main', later.agentId.toLowerCase()]);
  });

  it('gives an agent that could not join a gateway of its own', async () => {
    const host = await newHost(undefined, refusing);
    const first = await host.waitUntilReady((await host.create(spec('usr_h'))).agentId);
    const second = await host.create(spec('usr_h'));
    expect(second).toMatchObject({ status: 'starting', openclawAgentId: 'main' });
    const ready = await host.waitUntilReady(second.agentId);
    expect(ready.pid).not.toBe(first.pid);
    expect(ready.sharesGatewayWith).toEqual([]);
    expect(await host.logs(first.agentId)).toEqual(
      expect.arrayContaining([expect.stringContaining(`agent ${second.agentId} could not join`)]),
    );
  });

  it('takes an agent whose join failed after its config was applied out of the gateway at once', async () => {
    const host = await newHost(undefined, applyThenFail);
    const first = await host.waitUntilReady((await host.create(spec('usr_w'))).agentId);
    const second = await host.create(spec('usr_w'));
    const ready = await host.waitUntilReady(second.agentId);
    expect(ready.pid).not.toBe(first.pid);
    expect(ready.sharesGatewayWith).toEqual([]);
    // The join's config.apply was written and applied, then failed; the agent was then deleted from the roster the only
    // way OpenClaw allows, with the files OpenClaw made for it.
    const memberId = second.agentId.toLowerCase();
    const deleted = (await readFile(join(stateOf(host, first.agentId), 'agents-deleted.jsonl'), 'utf8')).trim().split('\n');
    expect(deleted.map((line) => JSON.parse(line))).toEqual([{ agentId: memberId, deleteFiles: true }]);
    expect(Object.keys((await readJson(host.paths(first.agentId).config)).agents.entries)).toEqual(['main']);
    expect((await host.status(first.agentId)).sharesGatewayWith).toEqual([]);
  });

  it("applies a member's configuration to its entry at once; refuses what needs a process of its own", async () => {
    const host = await newHost();
    const {
      first,
      members: [member],
    } = await customerGateway(host, 'usr_f', 1);
    await host.configure(member, {
      llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-new', model: 'm3' },
      config: { agents: { defaults: { heartbeat: { every: '2h' } } }, tools: { profile: 'messaging' } },
    });
    const entry = (await readJson(host.paths(first.agentId).config)).agents.entries[member.toLowerCase()];
    expect(entry).toMatchObject({
      model: { primary: `platform-${member.toLowerCase()}/m3` },
      heartbeat: { every: '2h' },
      tools: { profile: 'messaging' },
    });
    expect((await host.status(first.agentId)).pid).toBe(first.pid); // hot: no restart
    await expect(host.configure(member, { agentEnv: { AOP_AGENT_WALLET_KEY: '0x1' } })).rejects.toBeInstanceOf(SharedGatewayError);
    await expect(host.configure(member, { channelTokens: { telegram: '1:x' } })).rejects.toBeInstanceOf(SharedGatewayError);
  });
});
