import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DeviceIdentity, type GatewayConnection, connectGateway, createDeviceIdentity } from '@aop/gateway-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentNotFoundError, SharedGatewayError } from '../host.js';
import { agentSpecs } from '../shared/agent-spec.test-support.js';
import { BUS_SKILL_DIR } from '../shared/bus-skill.js';
import { type DockerEngineEmulator, type ImageBehaviour, startDockerEngine } from './docker-engine.test-support.js';
import { DockerAgentHost, type DockerHostOptions, dockerContainerName, dockerStateVolumeName } from './host.js';

// Customer-scoped gateways on the docker provider (issue #20), against the emulated engine whose containers run a
// gateway speaking OpenClaw's protocol (its roster read from its config, changed by `config.apply` and `agents.delete`
// as OpenClaw checks them): a customer's later agents join the first one's container as agents of their own, with the
// lifecycle the local provider has (src/local/shared-gateway.test.ts). The real gateway: test/e2e/openclaw.real.test.ts.

const REPO = 'ghcr.io/openclaw/openclaw';
const uid = process.getuid?.() ?? 1000;
const gid = process.getgid?.() ?? 1000;
let work: string;
const key = randomBytes(32);
const cleanups: Array<() => Promise<unknown>> = [];

async function setup(hostOptions: Partial<DockerHostOptions> = {}, image: ImageBehaviour = {}) {
  const dir = await mkdtemp(join(work, 'engine-'));
  const engine = await startDockerEngine({ socketPath: join(dir, 'docker.sock'), dir, images: { [`${REPO}:1.0.0`]: image } });
  const identity = createDeviceIdentity();
  const options: DockerHostOptions = {
    dataDir: join(dir, 'data'),
    encryptionKey: key,
    socketPath: engine.socketPath,
    image: `${REPO}:1.0.0`,
    user: `${uid}:${gid}`,
    readyPollMs: 25,
    stopTimeoutMs: 5_000,
    platformDevice: identity,
    agentsPerGateway: 3,
    ...hostOptions,
  };
  const host = new DockerAgentHost(options);
  cleanups.push(
    () => host.shutdown(),
    () => engine.close(),
  );
  return { engine, host, options, identity };
}

const spec = agentSpecs('Shared', 'solo');

type Json = Record<string, any>;
const gatewayCreates = (engine: DockerEngineEmulator) =>
  engine.callsTo('POST', /^\/containers\/create$/).filter((call) => call.body.Labels['aop.role'] === 'gateway');
const volumeOf = (engine: DockerEngineEmulator, agentId: string) => engine.volumeDir(dockerStateVolumeName(agentId));
const configOf = async (engine: DockerEngineEmulator, agentId: string): Promise<Json> =>
  JSON.parse(await readFile(join(volumeOf(engine, agentId), 'openclaw.json'), 'utf8')) as Json;
const running = (engine: DockerEngineEmulator, agentId: string) => engine.container(dockerContainerName(agentId))?.state.Running === true;

/** A control connection to an agent's gateway as the backend makes one (its credentials, through the published port). */
async function control(host: DockerAgentHost, agentId: string, identity: DeviceIdentity): Promise<GatewayConnection> {
  const { url } = await host.status(agentId);
  const credentials = await host.controlCredentials(agentId);
  return connectGateway({
    url: `${(url as string).replace(/^http/, 'ws')}/`,
    token: credentials.token,
    device: identity,
    retryDeadlineMs: 0,
  });
}

async function addJob(conn: GatewayConnection, agentId: string, name: string): Promise<string> {
  const job = await conn.request<{ id: string }>('cron.add', {
    name,
    agentId,
    schedule: { kind: 'every', everyMs: 3_600_000 },
    sessionTarget: 'isolated',
    wakeMode: 'next-heartbeat',
    payload: { kind: 'agentTurn', message: 'report' },
  });
  return job.id;
}

async function jobsOf(conn: GatewayConnection): Promise<Array<{ id: string; agentId?: string; enabled?: boolean }>> {
  return (await conn.request<{ jobs: Array<{ id: string; agentId?: string; enabled?: boolean }> }>('cron.list', { includeDisabled: true }))
    .jobs;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-docker-shared-'));
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await rm(work, { recursive: true, force: true });
});

describe('customer-scoped gateways (docker host)', () => {
  it("joins a customer's later agent to its running container, as an agent of its own; never another customer's", async () => {
    const { engine, host, identity } = await setup();
    const first = spec('usr_a');
    await host.create(first);
    const ready = await host.waitUntilReady(first.agentId);
    const container = engine.container(dockerContainerName(first.agentId))?.Id;

    const second = spec('usr_a', { llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-second', model: 'model-2' } });
    const joined = await host.create(second);
    const secondId = second.agentId.toLowerCase();
    // Joined by the time `create` answers: no container of its own, the first one's process unchanged.
    expect(joined).toMatchObject({
      agentId: second.agentId,
      userId: 'usr_a',
      openclawAgentId: secondId,
      status: 'running',
      url: ready.url,
    });
    expect(joined.sharesGatewayWith).toEqual([first.agentId]);
    expect((await host.status(first.agentId)).sharesGatewayWith).toEqual([second.agentId]);
    expect(gatewayCreates(engine)).toHaveLength(1);
    expect(engine.container(dockerContainerName(first.agentId))?.Id).toBe(container);
    const volume = volumeOf(engine, first.agentId);
    expect((await readFile(join(volume, 'starts.txt'), 'utf8')).trim().split('\n')).toHaveLength(1);

    // Its entry: its workspace in the gateway's volume, its own model and key (a SecretRef into the secret file).
    const config = await configOf(engine, first.agentId);
    expect(config.agents.ownership).toBe('explicit');
    expect(Object.keys(config.agents.entries)).toEqual(['main', secondId]);
    expect(config.agents.entries[secondId]).toMatchObject({
      workspace: `/home/node/.openclaw/workspace-${secondId}`,
      model: { primary: `platform-${secondId}/model-2` },
      heartbeat: { every: '30m' },
      tools: { profile: 'coding' },
    });
    expect(config.models.providers[`platform-${secondId}`].apiKey).toMatchObject({ source: 'file', id: `/members/${secondId}/llmApiKey` });
    expect(config.tools).toMatchObject({ agentToAgent: { enabled: false }, sessions: { visibility: 'agent' } });
    const secrets = JSON.parse(await readFile(join(volume, 'aop-secrets.json'), 'utf8'));
    expect(secrets.members[secondId].llmApiKey).toBe('sk-second');
    expect(existsSync(join(volume, `workspace-${secondId}`, ...BUS_SKILL_DIR, 'SKILL.md'))).toBe(true);

    // The gateway knows it: a job named for it is taken (an unknown agent's is refused).
    const conn = await control(host, second.agentId, identity);
    await addJob(conn, secondId, 'second-report');
    await expect(addJob(conn, 'agt_nobody', 'x')).rejects.toThrow(/unknown agent id/);
    await conn.close();

    // Its workspace is its own directory in the volume.
    const workspace = await host.workspace(second.agentId);
    await workspace.write(['notes.md'], Buffer.from('second agent notes'));
    expect(await readFile(join(volume, `workspace-${secondId}`, 'notes.md'), 'utf8')).toBe('second agent notes');
    expect(existsSync(join(volume, 'workspace', 'notes.md'))).toBe(false);

    // Another customer's agent, or one with variables of its own, gets a container of its own.
    await host.create(spec('usr_b'));
    await host.create(spec('usr_a', { agentEnv: { AOP_AGENT_WALLET_KEY: '0xabc' } }));
    expect(gatewayCreates(engine)).toHaveLength(3);
    expect((await host.list()).map((state) => state.agentId).sort()).toHaveLength(4);
  });

  it("a customer's agents created in a burst share the first one's start: a later one joins the container still starting", async () => {
    const { engine, host } = await setup({}, { readyDelayMs: 1_000 });
    const first = spec('usr_burst');
    expect((await host.create(first)).status).toBe('starting');
    const second = spec('usr_burst', { llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-burst-second', model: 'model-2' } });
    const joined = await host.create(second);
    const secondId = second.agentId.toLowerCase();
    expect(joined).toMatchObject({ status: 'starting', openclawAgentId: secondId });
    const [a, b] = await Promise.all([host.waitUntilReady(first.agentId), host.waitUntilReady(second.agentId, { timeoutMs: 10_000 })]);
    expect(b).toMatchObject({ status: 'running', url: a.url, sharesGatewayWith: [first.agentId] });
    expect(gatewayCreates(engine)).toHaveLength(1);
    // Written while it started, applied once it answered (`config.apply` re-reads the secret file with its key).
    expect(Object.keys((await configOf(engine, first.agentId)).agents.entries)).toEqual(['main', secondId]);
    expect(JSON.parse(await readFile(join(volumeOf(engine, first.agentId), 'aop-secrets.json'), 'utf8')).members[secondId].llmApiKey).toBe(
      'sk-burst-second',
    );
    expect((await host.logs(first.agentId)).join('\n')).toContain('the agents that joined or changed while it started are applied');
  });

  it('stops a member by disabling its jobs and heartbeat (the container runs on); the first agent stopped keeps it for its members', async () => {
    const { engine, host, identity, options } = await setup();
    const first = spec('usr_c');
    await host.create(first);
    await host.waitUntilReady(first.agentId);
    const second = spec('usr_c');
    await host.create(second);
    const secondId = second.agentId.toLowerCase();
    let conn = await control(host, first.agentId, identity);
    const mainJob = await addJob(conn, 'main', 'main-report');
    const secondJob = await addJob(conn, secondId, 'second-report');

    expect(await host.stop(second.agentId)).toMatchObject({ status: 'stopped', pid: null });
    expect(running(engine, first.agentId)).toBe(true);
    expect((await host.status(first.agentId)).status).toBe('running');
    let jobs = await jobsOf(conn);
    expect(jobs.find((job) => job.id === secondJob)?.enabled).toBe(false);
    expect(jobs.find((job) => job.id === mainJob)?.enabled).toBe(true);
    expect((await configOf(engine, first.agentId)).agents.entries[secondId].heartbeat).toEqual({ every: '0m' });
    expect(await host.health(second.agentId)).toMatchObject({ ready: false });

    expect((await host.start(second.agentId)).status).toBe('running');
    jobs = await jobsOf(conn);
    expect(jobs.find((job) => job.id === secondJob)?.enabled).toBe(true);
    expect((await configOf(engine, first.agentId)).agents.entries[secondId].heartbeat).toEqual({ every: '30m' });

    // The first agent stopped: it shows stopped, its jobs go quiet, the container runs on for the member.
    expect((await host.stop(first.agentId)).status).toBe('stopped');
    expect(running(engine, first.agentId)).toBe(true);
    expect((await host.status(second.agentId)).status).toBe('running');
    jobs = await jobsOf(conn);
    expect(jobs.find((job) => job.id === mainJob)?.enabled).toBe(false);
    expect((await configOf(engine, first.agentId)).agents.entries.main.heartbeat).toEqual({ every: '0m' });
    await conn.close();

    // Nobody wants it: the container stops. A new host (a backend restart) reads it all back.
    await host.stop(second.agentId);
    expect(running(engine, first.agentId)).toBe(false);
    const next = new DockerAgentHost(options);
    cleanups.push(() => next.shutdown());
    await next.restore();
    expect(running(engine, first.agentId)).toBe(false);
    const states = Object.fromEntries((await next.list()).map((state) => [state.agentId, state]));
    expect(states[first.agentId]).toMatchObject({ status: 'stopped', sharesGatewayWith: [second.agentId] });
    expect(states[second.agentId]).toMatchObject({ status: 'stopped', openclawAgentId: secondId });

    // Starting the member starts the container for it; the first agent stays stopped.
    await next.start(second.agentId);
    expect((await next.waitUntilReady(second.agentId)).status).toBe('running');
    expect(running(engine, first.agentId)).toBe(true);
    expect((await next.status(first.agentId)).status).toBe('stopped');
    conn = await control(next, second.agentId, identity);
    expect(Object.keys((await conn.request<{ config: Json }>('config.get', {})).config.agents.entries)).toEqual(['main', secondId]);
    await conn.close();
    await next.shutdown();
  });

  it('deletes a member with agents.delete; a deleted first agent leaves the container to its members until the last goes', async () => {
    const { engine, host, identity, options } = await setup();
    const first = spec('usr_d');
    await host.create(first);
    await host.waitUntilReady(first.agentId);
    const volume = volumeOf(engine, first.agentId);
    const second = spec('usr_d');
    await host.create(second);
    const secondId = second.agentId.toLowerCase();
    const conn = await control(host, first.agentId, identity);
    const secondJob = await addJob(conn, secondId, 'second-report');
    await mkdir(join(volume, 'agents', secondId, 'agent'), { recursive: true });
    await writeFile(join(volume, 'agents', secondId, 'agent', 'openclaw-agent.sqlite'), 'sessions');

    await host.delete(second.agentId);
    await expect(host.status(second.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
    expect(Object.keys((await configOf(engine, first.agentId)).agents.entries ?? {})).not.toContain(secondId);
    expect((await jobsOf(conn)).some((job) => job.id === secondJob)).toBe(false);
    await conn.close();
    for (const gone of [`agents/${secondId}`, `workspace-${secondId}`]) expect(existsSync(join(volume, gone))).toBe(false);
    expect(existsSync(join(options.dataDir, 'docker-agents', `${second.agentId}.json`))).toBe(false);
    expect(running(engine, first.agentId)).toBe(true);

    // The first agent deleted while a member remains: its sessions go, the container stays for the member.
    const third = spec('usr_d');
    await host.create(third);
    const ready = await fetch(`${(await host.status(first.agentId)).url}/remember`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.gatewayToken}` },
    });
    expect(ready.status).toBe(200);
    expect(existsSync(join(volume, 'agents', 'main'))).toBe(true);
    await host.delete(first.agentId);
    await expect(host.status(first.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
    expect((await host.list()).map((state) => state.agentId)).toEqual([third.agentId]);
    expect(existsSync(join(volume, 'agents', 'main'))).toBe(false);
    expect(existsSync(join(volume, 'workspace', 'MEMORY.md'))).toBe(false);
    expect(await host.waitUntilReady(third.agentId)).toMatchObject({ status: 'running', sharesGatewayWith: [] });
    await expect(host.delete(first.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);

    // The last member goes: the container, its volume and the first agent's registry entry with it.
    await host.delete(third.agentId);
    expect(engine.container(dockerContainerName(first.agentId))).toBeUndefined();
    expect(existsSync(volume)).toBe(false);
    expect(existsSync(join(options.dataDir, 'docker-agents', `${first.agentId}.json`))).toBe(false);
  });

  it("joins the customer's sleeping container, waking it; resets a member's memory alone", async () => {
    const { engine, host } = await setup();
    const first = spec('usr_e');
    await host.create(first);
    await host.waitUntilReady(first.agentId);
    await host.hibernate(first.agentId);
    expect(running(engine, first.agentId)).toBe(false);

    const second = spec('usr_e');
    const secondId = second.agentId.toLowerCase();
    await host.create(second);
    expect(gatewayCreates(engine)).toHaveLength(1);
    expect(await host.waitUntilReady(second.agentId)).toMatchObject({ status: 'running', openclawAgentId: secondId });
    expect((await host.status(first.agentId)).status).toBe('running');
    expect(Object.keys((await configOf(engine, first.agentId)).agents.entries)).toEqual(['main', secondId]);

    // Asleep with its gateway: a member shows it; its Stop does not wake the container, its Start does.
    await host.hibernate(second.agentId);
    expect((await host.status(second.agentId)).status).toBe('hibernated');
    expect((await host.status(first.agentId)).status).toBe('hibernated');
    expect(await host.stop(second.agentId)).toMatchObject({ status: 'stopped' });
    expect(running(engine, first.agentId)).toBe(false);
    expect((await host.status(first.agentId)).status).toBe('hibernated');
    await host.start(second.agentId);
    await host.waitUntilReady(second.agentId);
    expect(running(engine, first.agentId)).toBe(true);

    const volume = volumeOf(engine, first.agentId);
    await mkdir(join(volume, 'agents', secondId, 'agent'), { recursive: true });
    await writeFile(join(volume, 'agents', secondId, 'agent', 'openclaw-agent.sqlite'), 'sessions');
    await writeFile(join(volume, `workspace-${secondId}`, 'MEMORY.md'), 'remembered');
    await writeFile(join(volume, `workspace-${secondId}`, 'SOUL.md'), 'seed');
    await mkdir(join(volume, 'agents', 'main', 'agent'), { recursive: true });
    await writeFile(join(volume, 'agents', 'main', 'agent', 'openclaw-agent.sqlite'), 'main sessions');

    await host.resetMemory(second.agentId);
    expect((await host.waitUntilReady(second.agentId)).status).toBe('running');
    expect(existsSync(join(volume, 'agents', secondId))).toBe(false);
    expect(existsSync(join(volume, `workspace-${secondId}`, 'MEMORY.md'))).toBe(false);
    expect(existsSync(join(volume, `workspace-${secondId}`, 'SOUL.md'))).toBe(true);
    expect(existsSync(join(volume, 'agents', 'main', 'agent', 'openclaw-agent.sqlite'))).toBe(true);
  });

  it('a container asleep wakes for the jobs of the agents that still want to run: one stopped or deleted meanwhile does not wake it', async () => {
    const { engine, host, options } = await setup({ wakeLeadMs: 1_000 });
    const first = spec('usr_w');
    await host.create(first);
    await host.waitUntilReady(first.agentId);
    const [member, other] = [spec('usr_w'), spec('usr_w')];
    for (const s of [member, other]) await host.create(s);
    for (const s of [member, other]) await host.waitUntilReady(s.agentId);
    const now = Date.now();
    const due = { member: now + 60_000, other: now + 90_000, main: now + 120_000 };
    const ahead = (ms: number) => new Date(ms - 1_000).toISOString();
    // As the idle check reads the gateway's jobs (shared/idle.ts `readGatewayActivity`, tested on the local host).
    await host.hibernate(first.agentId, {
      nextDueMs: due.member,
      dueByAgent: { [member.agentId.toLowerCase()]: due.member, [other.agentId.toLowerCase()]: due.other, main: due.main },
    });
    expect(await host.status(other.agentId)).toMatchObject({ status: 'hibernated', wakesAt: ahead(due.member) });
    const gateway = engine.container(dockerContainerName(first.agentId));
    const starts = () =>
      engine
        .callsTo('POST', /\/containers\/[^/]+\/start$/)
        .filter((call) => [gateway?.Id, gateway?.Name].some((id) => id && call.path.includes(id))).length;
    const before = starts();

    await host.stop(member.agentId);
    expect(await host.status(first.agentId)).toMatchObject({ status: 'hibernated', wakesAt: ahead(due.other) });
    await host.delete(other.agentId);
    expect(await host.status(first.agentId)).toMatchObject({ status: 'hibernated', wakesAt: ahead(due.main) });
    // Kept in the registry: a backend started again reads it back.
    await host.shutdown();
    const again = new DockerAgentHost(options);
    cleanups.push(() => again.shutdown());
    await again.restore();
    expect(await again.status(first.agentId)).toMatchObject({ status: 'hibernated', wakesAt: ahead(due.main) });
    expect(starts()).toBe(before);
    expect(running(engine, first.agentId)).toBe(false);
  });

  it('gives an agent whose join failed after its config was applied a container of its own, and takes it out of the first', async () => {
    const { engine, host } = await setup({}, { failConfigApplyAfterWrite: 1 });
    const first = spec('usr_j');
    await host.create(first);
    await host.waitUntilReady(first.agentId);
    const second = spec('usr_j');
    await host.create(second);
    const own = await host.waitUntilReady(second.agentId);
    expect(own.openclawAgentId).toBe('main');
    expect((await host.status(first.agentId)).sharesGatewayWith).toEqual([]);
    expect(gatewayCreates(engine)).toHaveLength(2);
    // The join's config.apply was written and applied, then failed; the agent was then deleted from the roster the only
    // way OpenClaw allows (a config without it is refused), and its workspace removed.
    expect(Object.keys((await configOf(engine, first.agentId)).agents.entries)).toEqual(['main']);
    expect(existsSync(join(volumeOf(engine, first.agentId), `workspace-${second.agentId.toLowerCase()}`))).toBe(false);
    expect(await host.logs(first.agentId)).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`agent ${second.agentId} was taken out of this gateway again`),
        expect.stringContaining(`agent ${second.agentId} could not join`),
      ]),
    );
  });

  it("applies a member's model to its entry at once; refuses what needs a process of its own", async () => {
    const { engine, host } = await setup();
    const first = spec('usr_f');
    await host.create(first);
    await host.waitUntilReady(first.agentId);
    const second = spec('usr_f');
    const secondId = second.agentId.toLowerCase();
    await host.create(second);

    await host.configure(second.agentId, { llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-new', model: 'model-3' } });
    expect((await configOf(engine, first.agentId)).agents.entries[secondId].model).toEqual({ primary: `platform-${secondId}/model-3` });
    expect(JSON.parse(await readFile(join(volumeOf(engine, first.agentId), 'aop-secrets.json'), 'utf8')).members[secondId]).toEqual({
      llmApiKey: 'sk-new',
    });
    await expect(host.configure(second.agentId, { agentEnv: { AOP_AGENT_X: '1' } })).rejects.toBeInstanceOf(SharedGatewayError);
    await expect(host.configure(second.agentId, { channelTokens: { telegram: 'tg-token' } })).rejects.toBeInstanceOf(SharedGatewayError);
    expect((await host.spec(second.agentId)).agentEnv ?? {}).toEqual({});
    expect(gatewayCreates(engine)).toHaveLength(1);
  });

  it('keeps every agent in a container of its own unless sharing is on', async () => {
    const { engine, host } = await setup({ agentsPerGateway: 1 });
    await host.create(spec('usr_g'));
    const second = await host.create(spec('usr_g'));
    expect(second.sharesGatewayWith).toEqual([]);
    expect(gatewayCreates(engine)).toHaveLength(2);
  });
});
