import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PLAN_NAMES, PLANS } from '@aop/core';
import { connectGateway, createDeviceIdentity } from '@aop/gateway-client';
import { addRecurringJob } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DockerEngineEmulator, type EngineOptions, startDockerEngine } from './docker-engine.test-support.js';
import {
  DockerAgentHost,
  type DockerHostOptions,
  DockerUnavailableError,
  dockerContainerName,
  dockerLimits,
  dockerStateVolumeName,
} from './host.js';
import { demuxLogs, dockerStats, splitLogTimestamp } from './docker-wire.js';
import { AgentNotFoundError, type AgentSpec, HostFullError, UpdateFailedError } from '../host.js';

// The docker provider against an emulated Docker Engine (API v1.47 shapes) on a unix socket: every request the
// host makes is recorded, and containers run an emulated OpenClaw gateway whose /healthz and /readyz are served on
// the published port.

const REPO = 'ghcr.io/openclaw/openclaw';
const GIB = 1024 ** 3;
const PLATFORM_SECRETS = ['DATABASE_URL', 'INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY', 'REDIS_URL'];
const uid = process.getuid?.() ?? 1000;
const gid = process.getgid?.() ?? 1000;

let work: string;
const key = randomBytes(32);
const cleanups: Array<() => Promise<unknown>> = [];

async function setup(engineOptions: Partial<EngineOptions> = {}, hostOptions: Partial<DockerHostOptions> = {}) {
  const dir = await mkdtemp(join(work, 'engine-'));
  const engine = await startDockerEngine({
    socketPath: join(dir, 'docker.sock'),
    dir,
    images: { [`${REPO}:1.0.0`]: {} },
    registry: { [`${REPO}:1.1.0`]: {}, [`${REPO}:broken`]: { exitImmediately: true } },
    ...engineOptions,
  });
  const options: DockerHostOptions = {
    dataDir: join(dir, 'data'),
    encryptionKey: key,
    socketPath: engine.socketPath,
    image: `${REPO}:1.0.0`,
    user: `${uid}:${gid}`, // the helper scripts run here as this user, so the chown of repair is one it may do
    readyPollMs: 25,
    stopTimeoutMs: 5_000,
    ...hostOptions,
  };
  const host = new DockerAgentHost(options);
  cleanups.push(
    () => host.shutdown(),
    () => engine.close(),
  );
  return { engine, host, options };
}

let n = 0;
function spec(overrides: Partial<AgentSpec> = {}): AgentSpec {
  n += 1;
  return {
    agentId: `agt_docker${n}`,
    userId: 'usr_1',
    plan: 'solo',
    config: { gateway: { bind: 'lan', auth: { mode: 'token' } }, cron: { enabled: true, maxConcurrentRuns: 2 } },
    gatewayToken: `gw-token-${n}-${randomBytes(8).toString('hex')}`,
    ...overrides,
  };
}

const envOf = (env: string[]) => Object.fromEntries(env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const createCalls = (engine: DockerEngineEmulator) => engine.callsTo('POST', /^\/containers\/create$/);
const gatewayCreates = (engine: DockerEngineEmulator) => createCalls(engine).filter((call) => call.body.Labels['aop.role'] === 'gateway');

/** A raw Engine API call, as an operator's `docker` CLI would make it behind the host's back. */
function engineRequest(socketPath: string, method: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path: `/v1.47${path}` }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-docker-host-'));
  for (const name of PLATFORM_SECRETS) process.env[name] ??= `platform-${name.toLowerCase()}-value`;
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await rm(work, { recursive: true, force: true });
});

describe('DockerAgentHost (emulated Docker Engine)', () => {
  it('creates the container from the spec: labels, plan limits, loopback port, restart policy, state volume, config written before start', async () => {
    // The gateway takes 3 s to become ready, so `create` is seen answering before readiness even on a loaded machine.
    const { engine, host, options } = await setup({
      images: { [`${REPO}:1.0.0`]: { readyDelayMs: 3_000 } },
    });
    const s = spec({
      plan: 'collective',
      channelTokens: { telegram: 'tg-secret-token' },
      llm: { baseUrl: 'https://llm.example/v1', apiKey: 'sk-llm-secret', model: 'model-1' },
    });
    const created = await host.create(s);
    expect(created).toMatchObject({ agentId: s.agentId, userId: 'usr_1', status: 'starting', version: '1.0.0', lastError: null });

    const [create] = gatewayCreates(engine);
    expect(create?.apiVersion).toBe('1.44');
    expect(create?.query).toEqual({ name: `aop-agent-${s.agentId}` });
    const body = create?.body;
    expect(body.Image).toBe(`${REPO}:1.0.0`);
    expect(body.Cmd).toEqual(['openclaw', 'gateway', 'run', '--bind', 'lan', '--port', '18789']);
    expect(body.User).toBe(`${uid}:${gid}`);
    expect(body.Labels).toMatchObject({
      'aop.managed': 'true',
      'aop.agent-id': s.agentId,
      'aop.user-id': 'usr_1',
      'aop.role': 'gateway',
      'aop.plan': 'collective',
      'aop.openclaw-version': '1.0.0',
    });
    expect(body.ExposedPorts).toEqual({ '18789/tcp': {} });
    expect(body.HostConfig).toMatchObject({
      Memory: 4 * GIB,
      MemorySwap: 4 * GIB,
      NanoCpus: 2_000_000_000,
      PidsLimit: 4096,
      RestartPolicy: { Name: 'unless-stopped' },
      PortBindings: { '18789/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] },
      Mounts: [{ Type: 'volume', Source: `aop-agent-${s.agentId}-state`, Target: '/home/node/.openclaw' }],
      Init: true,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges:true'],
      NetworkMode: 'bridge',
    });
    expect(body.Healthcheck).toMatchObject({
      Test: ['CMD', 'node', '-e', expect.stringContaining('/readyz')],
      StartPeriod: 120_000_000_000,
    });
    expect(engine.volumeLabels(dockerStateVolumeName(s.agentId))).toMatchObject({
      'aop.role': 'state',
      'aop.agent-id': s.agentId,
      'aop.user-id': 'usr_1',
    });

    // The config goes into the volume before the start, with the state dir owned by the gateway's user.
    const order = engine.calls.map((call) => `${call.method} ${call.path}`);
    const name = dockerContainerName(s.agentId);
    expect(order.indexOf(`PUT /containers/${name}/archive`)).toBeGreaterThan(order.indexOf('POST /containers/create'));
    expect(order.indexOf(`POST /containers/${name}/start`)).toBeGreaterThan(order.indexOf(`PUT /containers/${name}/archive`));
    const container = engine.container(name);
    expect(engine.callsTo('PUT', /\/archive$/)[0]?.query).toEqual({ path: '/home/node' });
    // The secret file first, then the config that refers to it, in one archive.
    expect(container?.archives[0]).toMatchObject([
      { path: '/home/node/.openclaw', type: 'directory', mode: 0o700, uid, gid },
      { path: '/home/node/.openclaw/aop-secrets.json', type: 'file', mode: 0o600, uid, gid },
      { path: '/home/node/.openclaw/openclaw.json', type: 'file', mode: 0o600, uid, gid },
    ]);
    const volume = engine.volumeDir(dockerStateVolumeName(s.agentId));
    const file = await readFile(join(volume, 'openclaw.json'), 'utf8');
    const written = JSON.parse(file);
    const ref = (id: string) => ({ source: 'file', provider: 'aop', id });
    expect(written.gateway).toMatchObject({
      mode: 'local',
      bind: 'lan',
      port: 18789,
      auth: { mode: 'token', token: ref('/gatewayToken') },
    });
    expect(written.secrets).toEqual({
      providers: { aop: { source: 'file', path: '/home/node/.openclaw/aop-secrets.json', mode: 'json' } },
    });
    expect(written.agents.defaults.workspace).toBe('/home/node/.openclaw/workspace');
    expect(written.cron).toEqual({ enabled: true });
    expect(written.channels.telegram).toMatchObject({ enabled: true, botToken: ref('/telegramBotToken') });
    expect(written.models.providers.platform.apiKey).toEqual(ref('/llmApiKey'));
    for (const secret of ['tg-secret-token', 'sk-llm-secret', s.gatewayToken]) expect(file).not.toContain(secret);
    expect(JSON.parse(await readFile(join(volume, 'aop-secrets.json'), 'utf8'))).toEqual({
      gatewayToken: s.gatewayToken,
      llmApiKey: 'sk-llm-secret',
      telegramBotToken: 'tg-secret-token',
    });
    expect((await stat(join(volume, 'aop-secrets.json'))).mode & 0o777).toBe(0o600);

    const running = await host.waitUntilReady(s.agentId);
    expect(running).toMatchObject({
      status: 'running',
      url: `http://127.0.0.1:${container?.hostPort}`,
      port: container?.hostPort,
      restarts: 0,
    });
    expect(running.pid).toBeGreaterThan(0);
    expect(Date.parse(running.readyAt ?? '')).toBeGreaterThanOrEqual(Date.parse(running.startedAt ?? ''));
    const health = await host.health(s.agentId);
    expect(health).toMatchObject({ live: true, ready: true, failing: [] });
    expect(health.uptimeMs).toBeGreaterThan(0); // the full /readyz body: the host sends the gateway token

    expect(await host.spec(s.agentId)).toMatchObject({
      gatewayToken: s.gatewayToken,
      channelTokens: { telegram: 'tg-secret-token' },
      llm: { apiKey: 'sk-llm-secret', model: 'model-1' },
      version: '1.0.0',
    });
    const registry = join(options.dataDir, 'docker-agents', `${s.agentId}.json`);
    expect((await stat(registry)).mode & 0o777).toBe(0o600);
    const sealed = await readFile(registry, 'utf8');
    for (const secret of ['tg-secret-token', 'sk-llm-secret', s.gatewayToken]) expect(sealed).not.toContain(secret);
    expect(await host.list()).toEqual([expect.objectContaining({ agentId: s.agentId, status: 'running' })]);
  });

  it('gives the gateway only its own secrets, in its volume: none in its environment, no platform secret, no token in any request URL', async () => {
    const { engine, host } = await setup();
    const s = spec({
      channelTokens: { telegram: 'tg-secret-token', discord: 'dc-secret-token' },
      llm: { baseUrl: 'https://llm.example/v1', apiKey: 'sk-llm-secret', model: 'model-1' },
    });
    await host.create(s);
    const env = envOf(gatewayCreates(engine)[0]?.body.Env);
    // `docker inspect` shows a container's environment to anyone with the engine's socket: no secret goes there.
    expect(Object.keys(env).sort()).toEqual([
      'LANG',
      'MALLOC_ARENA_MAX',
      'OPENCLAW_CONFIG_PATH',
      'OPENCLAW_DISABLE_BONJOUR',
      'OPENCLAW_NO_AUTO_UPDATE',
      'OPENCLAW_OFFLINE',
      'OPENCLAW_STATE_DIR',
    ]);
    expect(env).toMatchObject({ OPENCLAW_STATE_DIR: '/home/node/.openclaw', OPENCLAW_CONFIG_PATH: '/home/node/.openclaw/openclaw.json' });
    const secrets = JSON.parse(await readFile(join(engine.volumeDir(dockerStateVolumeName(s.agentId)), 'aop-secrets.json'), 'utf8'));
    expect(secrets).toEqual({
      gatewayToken: s.gatewayToken,
      llmApiKey: 'sk-llm-secret',
      telegramBotToken: 'tg-secret-token',
      discordBotToken: 'dc-secret-token',
    });
    const values = Object.values(env);
    for (const name of PLATFORM_SECRETS) {
      expect(env).not.toHaveProperty(name);
      expect(values).not.toContain(process.env[name]);
    }
    await host.waitUntilReady(s.agentId);
    for (const call of engine.calls) {
      for (const secret of [s.gatewayToken, 'tg-secret-token', 'dc-secret-token', 'sk-llm-secret']) expect(call.url).not.toContain(secret);
    }
  });

  it('sizes containers from the plan catalogue, every tier; a plan not in it gets the smallest size', async () => {
    for (const plan of PLAN_NAMES) {
      const { memoryGib, cpus } = PLANS[plan].resources;
      expect(dockerLimits(plan), plan).toEqual({ Memory: memoryGib * GIB, MemorySwap: memoryGib * GIB, NanoCpus: cpus * 1e9 });
    }
    expect(dockerLimits('mystery')).toEqual(dockerLimits('solo'));
    expect(dockerLimits('toString')).toEqual(dockerLimits('solo'));

    const { engine, host } = await setup({ memTotal: 128 * GIB });
    await host.create(spec({ plan: 'white_glove' }));
    await host.create(spec({ plan: 'mystery' }));
    const [big, unknown] = gatewayCreates(engine);
    expect(big?.body.HostConfig).toMatchObject({ Memory: 32 * GIB, MemorySwap: 32 * GIB, NanoCpus: 8_000_000_000 });
    expect(unknown?.body.HostConfig).toMatchObject({ Memory: 2 * GIB, NanoCpus: 1_000_000_000 });
  });

  it('stops, starts and restarts the same container; its state stays in the volume', async () => {
    const { engine, host, options } = await setup();
    const s = spec();
    await host.create(s);
    const first = await host.waitUntilReady(s.agentId);
    const name = dockerContainerName(s.agentId);
    const id = engine.container(name)?.Id;

    expect(await host.stop(s.agentId)).toMatchObject({ status: 'stopped', url: null, port: null, pid: null });
    expect(engine.callsTo('POST', /\/stop$/).at(-1)?.query).toEqual({ t: '5' });
    expect(engine.container(name)?.state).toMatchObject({ Status: 'exited', Running: false });
    expect(JSON.parse(await readFile(join(options.dataDir, 'docker-agents', `${s.agentId}.json`), 'utf8')).desired).toBe('stopped');
    expect(await host.health(s.agentId)).toEqual({ live: false, ready: false, failing: [], uptimeMs: null });
    expect(await host.stats(s.agentId)).toEqual({ cpuPercent: 0, memoryBytes: 0, pids: 0, uptimeMs: 0 });

    expect((await host.start(s.agentId)).status).toBe('starting');
    const again = await host.waitUntilReady(s.agentId);
    expect(again.status).toBe('running');
    expect(engine.container(name)?.Id).toBe(id); // same container: nothing in its spec changed
    expect(gatewayCreates(engine)).toHaveLength(1);

    const starts = engine.callsTo('POST', /\/start$/).length;
    expect((await host.start(s.agentId)).status).toBe('running'); // already running: nothing to do
    expect(engine.callsTo('POST', /\/start$/)).toHaveLength(starts);

    await host.restart(s.agentId);
    const restarted = await host.waitUntilReady(s.agentId);
    expect(restarted.startedAt).not.toBe(again.startedAt);
    expect(restarted.startedAt).not.toBe(first.startedAt);
    const volume = engine.volumeDir(dockerStateVolumeName(s.agentId));
    expect((await readFile(join(volume, 'starts.txt'), 'utf8')).trim().split('\n')).toEqual(['1.0.0', '1.0.0', '1.0.0']);
  });

  it('reports a crashed gateway as restarting (Docker restarts it) and an out-of-memory kill with its limit', async () => {
    const { engine, host } = await setup();
    const a = spec();
    const b = spec({ plan: 'pro' });
    await host.create(a);
    await host.create(b);
    await host.waitUntilReady(a.agentId);
    engine.crash(dockerContainerName(a.agentId), { exitCode: 1 });
    expect(await host.status(a.agentId)).toMatchObject({ status: 'restarting', restarts: 1, lastError: 'Gateway exited with code 1' });
    expect(await host.stats(a.agentId)).toEqual({ cpuPercent: 0, memoryBytes: 0, pids: 0, uptimeMs: 0 });
    engine.crash(dockerContainerName(b.agentId), { oomKilled: true });
    expect((await host.status(b.agentId)).lastError).toBe('Gateway was killed: out of memory (limit 4 GiB)');
  });

  it("starts the container again when OpenClaw's scheduler did not start, twice in a row at most, then reports it down while running", async () => {
    const { engine, host } = await setup({
      images: {
        [`${REPO}:1.0.0`]: {},
        [`${REPO}:cron-race`]: { schedulerFailsStarts: 1 },
        [`${REPO}:cron-broken`]: { schedulerFailsStarts: 3 },
      },
    });
    const starts = (name: string) => engine.callsTo('POST', new RegExp(`^/containers/${name}/start$`)).length;
    const race = spec({ version: 'cron-race' });
    await host.create(race);
    expect(await host.waitUntilReady(race.agentId)).toMatchObject({ status: 'running', schedulerDown: null });
    expect(starts(dockerContainerName(race.agentId))).toBe(2);
    expect((await host.logs(race.agentId)).join('\n')).toContain(
      "[host] OpenClaw's scheduler did not start (failed to start: StateDatabaseCoordinatorContentionError: another OpenClaw process owns state-lifecycle); starting the gateway again so its jobs run (1 of 2)",
    );

    const broken = spec({ version: 'cron-broken' });
    await host.create(broken);
    const down = await host.waitUntilReady(broken.agentId);
    expect(starts(dockerContainerName(broken.agentId))).toBe(3);
    expect(down).toMatchObject({
      status: 'running',
      schedulerDown: expect.stringMatching(
        /^OpenClaw's scheduler did not start: scheduled jobs and heartbeats do not run until the agent is restarted$/,
      ),
    });
    // A restart by request is a new run whose scheduler comes up (the image fails only its first three): nothing is down.
    await host.restart(broken.agentId);
    expect(await host.waitUntilReady(broken.agentId)).toMatchObject({ status: 'running', schedulerDown: null });
    expect(starts(dockerContainerName(broken.agentId))).toBe(4);
  });

  it('updates: pulls the new image while the agent runs, backs the state volume up, recreates the container', async () => {
    const { engine, host } = await setup();
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const oldId = engine.container(dockerContainerName(s.agentId))?.Id;
    const firstStop = engine.calls.findIndex((call) => call.method === 'POST' && call.path.endsWith('/stop'));
    expect(firstStop).toBe(-1);

    const updated = await host.update(s.agentId, { version: '1.1.0' });
    expect(updated).toMatchObject({ status: 'running', version: '1.1.0' });
    const pull = engine.callsTo('POST', /^\/images\/create$/).at(-1);
    expect(pull?.query).toEqual({ fromImage: REPO, tag: '1.1.0' });
    const order = engine.calls.map((call) => `${call.method} ${call.path}`);
    expect(order.indexOf('POST /images/create')).toBeLessThan(order.indexOf(`POST /containers/${dockerContainerName(s.agentId)}/stop`));

    const container = engine.container(dockerContainerName(s.agentId));
    expect(container?.config.Image).toBe(`${REPO}:1.1.0`);
    expect(container?.Id).not.toBe(oldId);
    expect(container?.config.Labels['aop.openclaw-version']).toBe('1.1.0');

    const backups = engine.volumeNames().filter((name) => name.startsWith(`aop-agent-${s.agentId}-backup-`));
    expect(backups).toHaveLength(1);
    const backup = backups[0] as string;
    expect(engine.volumeLabels(backup)).toMatchObject({ 'aop.role': 'backup', 'aop.agent-id': s.agentId, 'aop.openclaw-version': '1.0.0' });
    expect(await readFile(join(engine.volumeDir(backup), 'starts.txt'), 'utf8')).toBe('1.0.0\n');
    expect(existsSync(join(engine.volumeDir(backup), 'workspace', 'AGENTS.md'))).toBe(true);
    expect(await readFile(join(engine.volumeDir(dockerStateVolumeName(s.agentId)), 'starts.txt'), 'utf8')).toBe('1.0.0\n1.1.0\n');

    // The backup ran in a helper container of the previous image, with no network, gone afterwards.
    const helper = createCalls(engine).find((call) => call.body.Labels['aop.role'] === 'helper');
    expect(helper?.body).toMatchObject({
      Image: `${REPO}:1.0.0`,
      Entrypoint: ['sh', '-c'],
      User: '0:0',
      HostConfig: { NetworkMode: 'none' },
    });
    expect(helper?.body.HostConfig.Mounts).toEqual([
      { Type: 'volume', Source: dockerStateVolumeName(s.agentId), Target: '/aop/state', ReadOnly: true },
      { Type: 'volume', Source: backup, Target: '/aop/backup', ReadOnly: false },
    ]);
    expect(engine.containers().map((c) => c.config.Labels['aop.role'])).toEqual(['gateway']);
    expect((await host.spec(s.agentId)).version).toBe('1.1.0');
  });

  it('rolls a version that does not start back: previous image, restored state, UpdateFailedError naming the backup volume', async () => {
    const { engine, host } = await setup();
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);

    const error = (await host.update(s.agentId, { version: 'broken' }).catch((e: unknown) => e)) as UpdateFailedError;
    expect(error).toBeInstanceOf(UpdateFailedError);
    expect(error.message).toMatch(/^Update to OpenClaw broken failed: .*Rolled back to 1\.0\.0\.$/);
    expect(error.previousVersion).toBe('1.0.0');
    expect(error.targetVersion).toBe('broken');
    expect(error.backupPath).toMatch(new RegExp(`^aop-agent-${s.agentId}-backup-\\d{8}T\\d{9}Z$`));
    expect(engine.volumeNames()).toContain(error.backupPath);

    const container = engine.container(dockerContainerName(s.agentId));
    expect(container?.config.Image).toBe(`${REPO}:1.0.0`);
    const state = await host.waitUntilReady(s.agentId);
    expect(state).toMatchObject({ status: 'running', version: '1.0.0' });
    // What the broken version wrote is gone: the state is the backup's, then the previous version started again.
    expect(await readFile(join(engine.volumeDir(dockerStateVolumeName(s.agentId)), 'starts.txt'), 'utf8')).toBe('1.0.0\n1.0.0\n');
    const logs = await host.logs(s.agentId);
    expect(logs).toContain('[host] broken: fatal: this version cannot start');
    expect(logs.some((line) => line.startsWith('[host] OpenClaw broken did not start'))).toBe(true);
    expect(engine.containers().map((c) => c.config.Labels['aop.role'])).toEqual(['gateway']);
  });

  it('treats a failed pull as a failed update that changes nothing: no stop, no backup, same container', async () => {
    const { engine, host } = await setup({ failingPulls: { [`${REPO}:1.2.0`]: 'received unexpected HTTP status: 502 Bad Gateway' } });
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const id = engine.container(dockerContainerName(s.agentId))?.Id;

    const missing = (await host.update(s.agentId, { version: '9.9.9' }).catch((e: unknown) => e)) as UpdateFailedError;
    expect(missing).toBeInstanceOf(UpdateFailedError);
    expect(missing.backupPath).toBe('');
    expect(missing.message).toBe(
      `Update to OpenClaw 9.9.9 failed: cannot pull ${REPO}:9.9.9: manifest for ${REPO}:9.9.9 not found: manifest unknown: manifest unknown. The agent still runs 1.0.0.`,
    );

    const midStream = (await host.update(s.agentId, { version: '1.2.0' }).catch((e: unknown) => e)) as UpdateFailedError;
    expect(midStream).toBeInstanceOf(UpdateFailedError);
    expect(midStream.message).toBe(
      `Update to OpenClaw 1.2.0 failed: cannot pull ${REPO}:1.2.0: received unexpected HTTP status: 502 Bad Gateway. The agent still runs 1.0.0.`,
    );

    expect(engine.callsTo('POST', /\/stop$/)).toHaveLength(0);
    expect(engine.volumeNames().filter((name) => name.includes('-backup-'))).toEqual([]);
    expect(engine.container(dockerContainerName(s.agentId))?.Id).toBe(id);
    expect(await host.status(s.agentId)).toMatchObject({ status: 'running', version: '1.0.0' });
  });

  it('reads logs: stdout and stderr frames demultiplexed, merged with the host lines, tail honoured', async () => {
    const { engine, host } = await setup();
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const name = dockerContainerName(s.agentId);
    await new Promise((resolve) => setTimeout(resolve, 5)); // lines are merged by time at millisecond precision
    engine.writeLog(name, 'stderr', 'warn: plugin slow to load');
    engine.writeLog(name, 'stdout', 'ünïcode line ✓');

    const lines = await host.logs(s.agentId);
    expect(engine.callsTo('GET', /\/logs$/).at(-1)?.query).toEqual({
      stdout: 'true',
      stderr: 'true',
      timestamps: 'true',
      tail: '200',
      follow: 'false',
    });
    expect(lines).toContain('fake openclaw 1.0.0 starting');
    expect(lines.some((line) => line.startsWith(`[host] started ${name} (OpenClaw 1.0.0`))).toBe(true);
    expect(lines.some((line) => line.startsWith('[host] ready after'))).toBe(true);
    expect(lines.slice(-2)).toEqual(['warn: plugin slow to load', 'ünïcode line ✓']);
    expect(lines.every((line) => !/^\d{4}-\d\d-\d\dT/.test(line))).toBe(true); // engine timestamps are stripped
    expect(await host.logs(s.agentId, { tail: 2 })).toEqual(['warn: plugin slow to load', 'ünïcode line ✓']);
    expect(await host.logs(s.agentId, { tail: 0 })).toEqual([]);
  });

  it('demultiplexes frames: lines split across frames, interleaved streams, CRLF, TTY output, timestamps', () => {
    const frame = (stream: number, content: string | Buffer) => {
      const payload = Buffer.from(content);
      const header = Buffer.alloc(8);
      header[0] = stream;
      header.writeUInt32BE(payload.length, 4);
      return Buffer.concat([header, payload]);
    };
    const euro = Buffer.from('€'); // three bytes, split between two frames of one long line
    const data = Buffer.concat([
      frame(1, 'out one\n'),
      frame(2, 'err one\r\n'),
      frame(1, Buffer.concat([Buffer.from('a'), euro.subarray(0, 1)])),
      frame(1, Buffer.concat([euro.subarray(1), Buffer.from('\n')])),
      frame(2, 'err without newline'),
    ]);
    expect(demuxLogs(data)).toEqual([
      { stream: 'stdout', text: 'out one' },
      { stream: 'stderr', text: 'err one' },
      { stream: 'stdout', text: 'a€' },
      { stream: 'stderr', text: 'err without newline' },
    ]);
    expect(demuxLogs(Buffer.from('plain tty output\nsecond\n'))).toEqual([
      { stream: 'stdout', text: 'plain tty output' },
      { stream: 'stdout', text: 'second' },
    ]);
    expect(splitLogTimestamp('2026-11-22T16:32:00.123456789Z hello world')).toEqual({
      at: Date.parse('2026-11-22T16:32:00.123Z'),
      text: 'hello world',
    });
    expect(splitLogTimestamp('no timestamp')).toEqual({ at: null, text: 'no timestamp' });
  });

  it('computes stats with the docker CLI arithmetic from the engine’s one-shot sample', async () => {
    const { engine, host } = await setup();
    const s = spec();
    await host.create(s);
    const { startedAt } = await host.waitUntilReady(s.agentId);
    engine.setStats(dockerContainerName(s.agentId), {
      cpu_stats: { cpu_usage: { total_usage: 5_400_000_000 }, system_cpu_usage: 402_000_000_000, online_cpus: 4 },
      precpu_stats: { cpu_usage: { total_usage: 5_000_000_000 }, system_cpu_usage: 400_000_000_000, online_cpus: 4 },
      memory_stats: { usage: 1_250_000_000, stats: { inactive_file: 50_000_000, anon: 1_100_000_000 }, limit: 2 * GIB },
      pids_stats: { current: 23, limit: 4096 },
    });
    const stats = await host.stats(s.agentId);
    expect(engine.callsTo('GET', /\/stats$/).at(-1)?.query).toEqual({ stream: 'false' });
    // (0.4 s of CPU / 2 s of host CPU time) × 4 CPUs = 0.8 of a core
    expect(stats).toMatchObject({ cpuPercent: 80, memoryBytes: 1_200_000_000, pids: 23 });
    expect(stats.uptimeMs).toBeGreaterThan(0);
    expect(stats.uptimeMs).toBeLessThan(Date.now() - Date.parse(startedAt ?? '') + 1_000);

    // cgroup v1 names the page cache total_inactive_file; percpu_usage gives the CPUs when online_cpus is absent.
    const v1 = dockerStats(
      {
        cpu_stats: { cpu_usage: { total_usage: 300, percpu_usage: [1, 1] }, system_cpu_usage: 2_000 },
        precpu_stats: { cpu_usage: { total_usage: 100 }, system_cpu_usage: 1_000 },
        memory_stats: { usage: 1_000, stats: { total_inactive_file: 400 } },
      },
      '2026-01-01T00:00:00.000000000Z',
      Date.parse('2026-01-01T00:01:00Z'),
    );
    expect(v1).toEqual({ cpuPercent: 40, memoryBytes: 600, pids: 0, uptimeMs: 60_000 });
  });

  it('resets memory and repairs the state volume with helper containers, keeping the workspace seed files', async () => {
    const { engine, host } = await setup();
    const s = spec();
    await host.create(s);
    const ready = await host.waitUntilReady(s.agentId);
    const remember = await fetch(`${ready.url}/remember`, { method: 'POST', headers: { authorization: `Bearer ${s.gatewayToken}` } });
    expect(remember.status).toBe(200);
    const volume = engine.volumeDir(dockerStateVolumeName(s.agentId));
    expect(existsSync(join(volume, 'workspace', 'MEMORY.md'))).toBe(true);
    expect(existsSync(join(volume, 'agents', 'main', 'agent', 'openclaw-agent.sqlite'))).toBe(true);

    await host.resetMemory(s.agentId);
    await host.waitUntilReady(s.agentId);
    for (const gone of ['agents', 'workspace/memory/2026-01-01.md', 'workspace/MEMORY.md'])
      expect(existsSync(join(volume, gone))).toBe(false);
    for (const kept of ['workspace/AGENTS.md', 'workspace/SOUL.md', 'openclaw.json']) expect(existsSync(join(volume, kept))).toBe(true);
    const reset = createCalls(engine).find((call) => call.body.Labels['aop.role'] === 'helper');
    expect(reset?.body.Cmd[0]).toContain('rm -rf -- "$STATE/agents" "$STATE/workspace/memory"');

    // A gateway that died hard leaves lock dirs; someone loosened the state dir's mode.
    await mkdir(join(volume, 'tmp', 'openclaw-1000'), { recursive: true });
    await chmod(volume, 0o755);
    const before = engine.container(dockerContainerName(s.agentId))?.Id;
    await host.repair(s.agentId);
    const repaired = await host.waitUntilReady(s.agentId);
    expect(repaired.status).toBe('running');
    expect(engine.container(dockerContainerName(s.agentId))?.Id).not.toBe(before);
    expect(existsSync(join(volume, 'tmp', 'openclaw-1000'))).toBe(false);
    expect((await stat(volume)).mode & 0o777).toBe(0o700);
    expect(existsSync(join(volume, 'workspace', 'AGENTS.md'))).toBe(true);
    expect(engine.containers()).toHaveLength(1);
  });

  it('configures: config changes reach the running gateway without a restart, a plan change updates the limits, a token change recreates the container', async () => {
    const { engine, host } = await setup();
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const name = dockerContainerName(s.agentId);
    const id = engine.container(name)?.Id;
    const volume = engine.volumeDir(dockerStateVolumeName(s.agentId));

    await host.configure(s.agentId, { config: { ...s.config, tools: { profile: 'messaging' } } });
    expect(JSON.parse(await readFile(join(volume, 'openclaw.json'), 'utf8')).tools).toEqual({ profile: 'messaging' });
    expect(engine.callsTo('POST', /\/stop$/)).toHaveLength(0);

    await host.configure(s.agentId, { plan: 'collective' });
    expect(engine.callsTo('POST', /\/update$/).at(-1)?.body).toEqual({ Memory: 4 * GIB, MemorySwap: 4 * GIB, NanoCpus: 2_000_000_000 });
    expect(engine.container(name)?.Id).toBe(id);

    await host.configure(s.agentId, { channelTokens: { discord: 'dc-new-token' } });
    const recreated = engine.container(name);
    expect(recreated?.Id).not.toBe(id);
    expect(JSON.parse(await readFile(join(volume, 'aop-secrets.json'), 'utf8'))).toMatchObject({ discordBotToken: 'dc-new-token' });
    expect(recreated?.hostConfig).toMatchObject({ Memory: 4 * GIB });
    expect((await host.waitUntilReady(s.agentId)).status).toBe('running');
    expect((await host.spec(s.agentId)).channelTokens).toEqual({ discord: 'dc-new-token' });
  });

  it('refuses a start that does not fit: the limits of running agents and the new one against MemTotal less the reserve', async () => {
    const { engine, host } = await setup({ memTotal: 8 * GIB });
    const agents = [spec(), spec(), spec()];
    for (const a of agents) await host.create(a); // 3 × 2 GiB in 8 GiB − 2 GiB reserve
    const error = (await host.create(spec()).catch((e: unknown) => e)) as HostFullError;
    expect(error).toBeInstanceOf(HostFullError);
    expect(error.statusCode).toBe(503);
    expect(error.message).toBe('Host is at capacity: 3 of 3 agents running (2.0 GiB budgeted per agent, 0.0 GiB available)');
    expect(gatewayCreates(engine)).toHaveLength(3);
    expect(await host.list()).toHaveLength(3);

    await host.stop(agents[0]?.agentId as string);
    const bigger = (await host.create(spec({ plan: 'collective' })).catch((e: unknown) => e)) as HostFullError;
    expect(bigger.message).toBe('Host is at capacity: 2 of 2 agents running (4.0 GiB budgeted per agent, 2.0 GiB available)');
    // Two starts at once for the last room: one gets it (the checks run one at a time and hold what they promised).
    const other = spec();
    await host.create(other);
    await host.stop(other.agentId);
    const starts = await Promise.allSettled([host.start(agents[0]?.agentId as string), host.start(other.agentId)]);
    expect(starts.map((start) => start.status).sort()).toEqual(['fulfilled', 'rejected']);
    const statuses = (await host.list()).map((agent) => agent.status);
    expect(statuses.filter((status) => status === 'starting' || status === 'running')).toHaveLength(3);
    expect(statuses.filter((status) => status === 'stopped')).toHaveLength(1); // the refused one, as it was
  });

  it('deletes the container, the state and backup volumes and the registry entry; an unknown agent is AgentNotFoundError', async () => {
    const { engine, host, options } = await setup();
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    await host.update(s.agentId, { version: '1.1.0' });
    expect(engine.volumeNames()).toHaveLength(2);

    await host.delete(s.agentId);
    expect(engine.containers()).toEqual([]);
    expect(engine.volumeNames()).toEqual([]);
    expect(existsSync(join(options.dataDir, 'docker-agents', `${s.agentId}.json`))).toBe(false);
    await expect(host.status(s.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);

    const mutations = engine.calls.filter((call) => call.method !== 'GET').length;
    await expect(host.delete('agt_unknown')).rejects.toBeInstanceOf(AgentNotFoundError);
    expect(engine.calls.filter((call) => call.method !== 'GET')).toHaveLength(mutations);
  });

  it('keeps no runtime state of its own: a new host on the same data directory reads it back from Docker', async () => {
    const { engine, host, options } = await setup();
    const a = spec();
    const b = spec();
    const c = spec();
    for (const x of [a, b, c]) await host.create(x);
    await host.waitUntilReady(a.agentId);
    await host.stop(b.agentId);
    await host.shutdown(); // containers outlive the backend
    expect(engine.container(dockerContainerName(a.agentId))?.state.Running).toBe(true);
    await expect(host.status(a.agentId)).rejects.toThrow('The agent host is shut down');

    // An operator stops a container behind the platform's back; c's registry entry is lost.
    expect(await engineRequest(engine.socketPath, 'POST', `/containers/${dockerContainerName(a.agentId)}/stop`)).toBe(204);
    await rm(join(options.dataDir, 'docker-agents', `${c.agentId}.json`));

    const next = new DockerAgentHost({ ...options });
    cleanups.push(() => next.shutdown());
    expect(await next.orphans()).toEqual([c.agentId]);
    const listed = await next.list();
    expect(listed.map((state) => [state.agentId, state.status])).toEqual([
      [a.agentId, 'error'],
      [b.agentId, 'stopped'],
    ]);
    expect(listed[0]?.lastError).toBe('Gateway exited with code 0');
    expect((await next.spec(a.agentId)).gatewayToken).toBe(a.gatewayToken);

    const restored = await next.restore();
    expect(restored.find((state) => state.agentId === a.agentId)?.status).toMatch(/starting|running/);
    expect(restored.find((state) => state.agentId === b.agentId)?.status).toBe('stopped');
    expect((await next.waitUntilReady(a.agentId)).status).toBe('running');

    // A container removed behind our back: the agent is in error until repair recreates it.
    expect(await engineRequest(engine.socketPath, 'DELETE', `/containers/${dockerContainerName(a.agentId)}?force=true`)).toBe(204);
    expect(await next.status(a.agentId)).toMatchObject({
      status: 'error',
      lastError: 'The agent container is missing; repair recreates it',
    });
    await next.repair(a.agentId);
    expect((await next.waitUntilReady(a.agentId)).status).toBe('running');

    await next.delete(c.agentId); // an orphan is cleaned up too
    expect(await next.orphans()).toEqual([]);
    expect(engine.volumeNames()).not.toContain(dockerStateVolumeName(c.agentId));
  });

  it('names the socket when the engine cannot be reached; ping reports it', async () => {
    const dataDir = await mkdtemp(join(work, 'data-'));
    const missing = join(work, 'no-docker.sock');
    const host = new DockerAgentHost({ dataDir, encryptionKey: key, socketPath: missing });
    expect(await host.ping()).toBe(false);
    const error = (await host.create(spec()).catch((e: unknown) => e)) as DockerUnavailableError;
    expect(error).toBeInstanceOf(DockerUnavailableError);
    expect(error.statusCode).toBe(500);
    expect(error.message).toBe(`Docker engine is not reachable at ${missing} (no socket there)`);

    const notASocket = join(work, 'plain-file.sock');
    await writeFile(notASocket, '');
    const refused = new DockerAgentHost({ dataDir, encryptionKey: key, socketPath: notASocket });
    const refusal = (await refused.create(spec()).catch((e: unknown) => e)) as DockerUnavailableError;
    expect(refusal).toBeInstanceOf(DockerUnavailableError);
    expect(refusal.message).toBe(`Docker engine is not reachable at ${notASocket} (ECONNREFUSED)`);
    expect(await host.list()).toEqual([]);
  });
});

// The backend reaches a container's gateway through the published port, which OpenClaw sees as a non-loopback peer:
// there a token-only connection gets no scopes and a device must be paired. The host pairs the platform device and
// approves it from inside the container with `docker exec` (the emulated CLI talks to the gateway over its loopback).
describe('DockerAgentHost platform device pairing', () => {
  const wsOf = (url: string | null) => `${(url as string).replace(/^http/, 'ws')}/`;
  const execCreates = (engine: DockerEngineEmulator) => engine.callsTo('POST', /^\/containers\/[^/]+\/exec$/);
  const waitFor = async (check: () => boolean, what: string) => {
    const deadline = Date.now() + 10_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it('pairs once the gateway is ready: NOT_PAIRED at the published port, approved by `openclaw devices approve` exec’d in the container, device token stored sealed', async () => {
    const identity = createDeviceIdentity();
    const { engine, host, options } = await setup({}, { platformDevice: identity });
    const s = spec();
    await host.create(s);
    const ready = await host.waitUntilReady(s.agentId);
    const name = dockerContainerName(s.agentId);

    // Before pairing, the token alone gets nothing through the published port.
    const tokenOnly = await connectGateway({ url: wsOf(ready.url), token: s.gatewayToken, retryDeadlineMs: 0 });
    expect(tokenOnly.hello.auth?.scopes).toEqual([]);
    await tokenOnly.close();

    const credentials = await host.controlCredentials(s.agentId);
    const gateway = engine.gateway(name);
    const paired = gateway?.pairing.paired.get(identity.deviceId);
    expect(paired).toMatchObject({ remoteIp: '172.17.0.1', approvedVia: 'owner' });
    expect(credentials).toEqual({ token: s.gatewayToken, device: { identity, deviceToken: paired?.tokens.operator?.token } });

    // One exec: the CLI with the request id only (the container's own environment carries the gateway token).
    const [create] = execCreates(engine);
    const container = engine.container(name);
    expect(create?.path).toBe(`/containers/${container?.Id}/exec`);
    const requestId = create?.body.Cmd[3];
    expect(create?.body).toEqual({
      Cmd: ['openclaw', 'devices', 'approve', requestId, '--json'],
      AttachStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    });
    expect(JSON.stringify(create?.body)).not.toContain(s.gatewayToken);
    expect(engine.execs()).toEqual([expect.objectContaining({ ContainerID: container?.Id, Running: false, ExitCode: 0 })]);
    expect(engine.callsTo('POST', /^\/exec\/[^/]+\/start$/)).toHaveLength(1);
    expect(gateway?.received.filter((f) => f.method === 'device.pair.approve').map((f) => f.params)).toEqual([{ requestId }]);

    // The registry keeps the device token sealed.
    const registry = await readFile(join(options.dataDir, 'docker-agents', `${s.agentId}.json`), 'utf8');
    expect(registry).not.toContain(credentials.device?.deviceToken);
    expect(JSON.parse(registry).platformDevice).toMatchObject({ deviceId: identity.deviceId, deviceToken: expect.stringMatching(/^v1\./) });
    expect((await host.logs(s.agentId)).join('\n')).toContain(
      `[host] platform device ${identity.deviceId.slice(0, 12)} paired (request ${requestId}`,
    );

    // The device now connects through the published port with its full scopes.
    const conn = await connectGateway({ url: wsOf(ready.url), token: s.gatewayToken, device: identity, retryDeadlineMs: 0 });
    expect(conn.hello.auth?.scopes).toEqual(['operator.admin', 'operator.read', 'operator.write']);
    expect((await conn.request<{ jobs: unknown[] }>('cron.list', {})).jobs).toEqual([]);
    await conn.close();

    // Verified for this run of the container: asking again costs no connect and no exec.
    const connects = gateway?.connectAttempts.length;
    expect(await host.controlCredentials(s.agentId)).toEqual(credentials);
    expect(gateway?.connectAttempts.length).toBe(connects);
    expect(engine.execs()).toHaveLength(1);

    // A new host on the same data directory opens the stored token (and verifies it with one signed connect).
    const next = new DockerAgentHost({ ...options });
    cleanups.push(() => next.shutdown());
    expect(await next.controlCredentials(s.agentId)).toEqual(credentials);
    expect(engine.execs()).toHaveLength(1);
  });

  it('checks a re-created container, and pairs again (after a restart, or on request) when the gateway no longer knows the device', async () => {
    const identity = createDeviceIdentity();
    const { engine, host } = await setup({}, { platformDevice: identity });
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const first = await host.controlCredentials(s.agentId);
    const name = dockerContainerName(s.agentId);
    const firstContainer = engine.container(name)?.Id;

    // An update recreates the container on the same state volume, where OpenClaw keeps its paired devices.
    await host.update(s.agentId, { version: '1.1.0' });
    expect(engine.container(name)?.Id).not.toBe(firstContainer);
    await waitFor(() => (engine.gateway(name)?.connectAttempts.length ?? 0) > 0, 'the check after the update');
    expect(await host.controlCredentials(s.agentId)).toEqual(first);
    expect(engine.gateway(name)?.connectAttempts).toEqual([{ ok: true }]); // one signed connect, admitted
    expect(engine.execs()).toHaveLength(1);

    // Someone removes the platform device on the gateway (e.g. from the devices page); a restart pairs it again.
    const forget = async () => {
      const admin = await connectGateway({ url: engine.gateway(name)?.url as string, token: s.gatewayToken, retryDeadlineMs: 0 });
      await admin.request('device.pair.remove', { deviceId: identity.deviceId });
      await admin.close();
    };
    await forget();
    await host.restart(s.agentId);
    await host.waitUntilReady(s.agentId);
    await waitFor(() => engine.execs().length === 2 && engine.execs()[1]?.ExitCode === 0, 'the second approval');
    const second = await host.controlCredentials(s.agentId);
    expect(second.device?.deviceToken).toBe(engine.gateway(name)?.pairing.paired.get(identity.deviceId)?.tokens.operator?.token);
    expect(second.device?.deviceToken).not.toBe(first.device?.deviceToken);

    // Removed while running: a plain call trusts this run's check; `repair` connects again and re-approves.
    await forget();
    expect(await host.controlCredentials(s.agentId)).toEqual(second);
    const third = await host.controlCredentials(s.agentId, { repair: true });
    expect(engine.execs()).toHaveLength(3);
    expect(third.device?.deviceToken).not.toBe(second.device?.deviceToken);
  });

  it('hibernates an idle agent (container stopped, volume and container kept), keeps it asleep across a restore, wakes it on start and before its next due job', async () => {
    const identity = createDeviceIdentity();
    const idle = { platformDevice: identity, idleMs: 300, idleCheckMs: 100, wakeLeadMs: 1_000 };
    const { engine, host, options } = await setup({}, idle);
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const name = dockerContainerName(s.agentId);
    const containerId = engine.container(name)?.Id;
    const registry = join(options.dataDir, 'docker-agents', `${s.agentId}.json`);

    await vi.waitFor(async () => expect((await host.status(s.agentId)).status).toBe('hibernated'), { timeout: 10_000, interval: 50 });
    expect(await host.status(s.agentId)).toMatchObject({ status: 'hibernated', url: null, pid: null });
    expect(engine.container(name)).toMatchObject({ Id: containerId, state: { Running: false } });
    expect(existsSync(engine.volumeDir(dockerStateVolumeName(s.agentId)))).toBe(true);
    expect(JSON.parse(await readFile(registry, 'utf8'))).toMatchObject({
      desired: 'running',
      hibernation: { since: expect.any(String), wakeAt: null },
    });
    expect((await host.logs(s.agentId)).join('\n')).toContain('[host] hibernating after being idle; no job due');

    // A new host (a backend restart) leaves it asleep: it is not a stopped agent that should run.
    const next = new DockerAgentHost({ ...options });
    cleanups.push(() => next.shutdown());
    await next.restore();
    expect((await next.status(s.agentId)).status).toBe('hibernated');
    expect(engine.container(name)?.state.Running).toBe(false);
    await next.shutdown();

    // Start (what a message does) wakes it in the same container.
    await host.start(s.agentId);
    await host.waitUntilReady(s.agentId);
    expect(engine.container(name)?.Id).toBe(containerId);
    expect(JSON.parse(await readFile(registry, 'utf8')).hibernation).toBeNull();
    expect((await host.logs(s.agentId)).join('\n')).toMatch(/\[host\] waking from hibernation \(asleep since /);

    // With a job due in 6 s it sleeps until 1 s (the wake lead) before the job, then starts by itself.
    const credentials = await host.controlCredentials(s.agentId);
    const conn = await connectGateway({
      url: wsOf((await host.status(s.agentId)).url),
      token: credentials.token,
      device: identity,
      retryDeadlineMs: 0,
    });
    const dueAt = await addRecurringJob(conn, 6_000);
    await conn.close();
    expect(dueAt).toBeGreaterThan(Date.now());
    await vi.waitFor(async () => expect((await host.status(s.agentId)).status).toBe('hibernated'), { timeout: 5_000, interval: 50 });
    expect(Date.parse(JSON.parse(await readFile(registry, 'utf8')).hibernation.wakeAt)).toBe(dueAt - 1_000);
    expect((await host.status(s.agentId)).wakesAt).toBe(new Date(dueAt - 1_000).toISOString());
    // Woken: `starting`, never a stopped container read as failed while the wake clears its hibernation.
    const woke = await vi.waitFor(
      async () => {
        const { status } = await host.status(s.agentId);
        expect(status).not.toBe('hibernated');
        return status;
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(['starting', 'running']).toContain(woke);
    // At the last idle check (every 100 ms) before its wake time, not one after it.
    expect(Date.now()).toBeGreaterThanOrEqual(dueAt - 1_000 - 100);
    expect(Date.now()).toBeLessThan(dueAt);
    await host.waitUntilReady(s.agentId);

    // Any start is a wake: a restart of a sleeping agent (here put to sleep by hand) clears its hibernation too.
    await host.hibernate(s.agentId);
    expect(JSON.parse(await readFile(registry, 'utf8')).hibernation).toMatchObject({ wakeAt: null });
    expect((await host.status(s.agentId)).wakesAt).toBeNull();
    await host.restart(s.agentId);
    expect(JSON.parse(await readFile(registry, 'utf8')).hibernation).toBeNull();
    await host.waitUntilReady(s.agentId);

    // Stop is not sleep: a stopped agent is `stopped`, and its hibernation record is gone.
    await host.stop(s.agentId);
    expect(JSON.parse(await readFile(registry, 'utf8'))).toMatchObject({ desired: 'stopped', hibernation: null });
    expect((await host.status(s.agentId)).status).toBe('stopped');
  });

  it('a full host hibernates the agent idle the longest to make room (as the local host does), and refuses with none idle long enough', async () => {
    const identity = createDeviceIdentity();
    const idle = { platformDevice: identity, idleMs: 3_600_000, idleCheckMs: 60_000, evictIdleMs: 400 };
    const { host } = await setup({ memTotal: 6 * GIB }, idle); // room for 2 × 2 GiB beside the 2 GiB reserve
    // c has a messaging channel: never idle (shared/idle.ts `keepsAwake`), so never made to give way.
    const [a, b, c] = [spec(), spec(), spec({ channelTokens: { telegram: 'tg-token' } })];
    await host.create(a);
    await host.waitUntilReady(a.agentId);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await host.create(b);
    await host.waitUntilReady(b.agentId);
    // b became ready a moment ago, a before it: a has been idle the longest (and past 400 ms), b not long enough.
    await host.create(c);
    expect((await host.status(a.agentId)).status).toBe('hibernated');
    expect((await host.waitUntilReady(c.agentId)).status).toBe('running');
    expect((await host.status(b.agentId)).status).toBe('running');
    expect((await host.logs(a.agentId)).join('\n')).toMatch(
      new RegExp(`\\[host\\] idle for \\d+\\.\\d min and agent ${c.agentId} needs the room: hibernating early`),
    );
    // A message to the sleeping one (a start) finds the host full again: now b, idle the longest, gives way.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await host.start(a.agentId);
    expect((await host.status(b.agentId)).status).toBe('hibernated');
    expect((await host.waitUntilReady(a.agentId)).status).toBe('running');
    // Nobody may give way now (a just started, c keeps awake, b asleep): the next start is refused, nothing sleeps.
    await expect(host.start(b.agentId)).rejects.toBeInstanceOf(HostFullError);
    expect((await host.list()).map((state) => state.status).sort()).toEqual(['hibernated', 'running', 'running']);
  });

  it('reports what blocks pairing: a stopped agent, an approval that fails in the container; without an identity only the token', async () => {
    const identity = createDeviceIdentity();
    const { engine, host } = await setup({}, { platformDevice: identity, cliCommand: ['openclaw-missing'] });
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const failure = (await host.controlCredentials(s.agentId).catch((e: unknown) => e)) as Error;
    expect(failure.message).toMatch(
      /^openclaw-missing devices approve <requestId> exited with code 127: OCI runtime exec failed: .*"openclaw-missing": executable file not found in \$PATH/,
    );
    expect(engine.gateway(dockerContainerName(s.agentId))?.pairing.paired.size).toBe(0);
    // Our call joined the attempt started after the start (one at a time per agent), which logged the failure.
    expect(engine.execs()).toEqual([expect.objectContaining({ ExitCode: 127 })]);
    // The background attempt logs in its own rejection handler, which may run just after ours.
    await vi.waitFor(async () =>
      expect((await host.logs(s.agentId)).join('\n')).toContain('[host] platform device not paired yet: openclaw-missing devices approve'),
    );

    await host.stop(s.agentId);
    await expect(host.controlCredentials(s.agentId)).rejects.toThrow(`Agent ${s.agentId} is not running: its gateway cannot be paired`);
    // The engine refuses an exec into a stopped container as Docker does.
    expect(await engineRequest(engine.socketPath, 'POST', `/containers/${dockerContainerName(s.agentId)}/exec`)).toBe(409);

    const plain = await setup();
    const t = spec();
    await plain.host.create(t);
    expect(await plain.host.controlCredentials(t.agentId)).toEqual({ token: t.gatewayToken });
    expect(plain.engine.execs()).toEqual([]);
  });
});

// A warm container is started, warmed up and paired with the platform device before any agent needs it; `create` then
// renames it to the agent's, writes the agent's secrets into its volume and applies the agent's configuration over the
// device's connection (`config.apply`), instead of creating a container and waiting for a cold start.
describe('DockerAgentHost warm pool', () => {
  const warmContainers = (engine: DockerEngineEmulator) => engine.containers().filter((c) => c.config.Labels?.['aop.warm-pool'] === 'true');
  const poolReady = async (host: DockerAgentHost, ready: number) =>
    vi.waitFor(() => expect(host.warmPoolStatus().ready).toBe(ready), { timeout: 15_000, interval: 20 });
  const warmOptions = (identity = createDeviceIdentity()): Partial<DockerHostOptions> => ({
    platformDevice: identity,
    warmPool: 1,
    refillQuietMs: 0,
  });

  it('adopts a warm container: renamed to the agent, its secrets and configuration applied live, the old token refused; the pool refills', async () => {
    const identity = createDeviceIdentity();
    const { engine, host, options } = await setup({}, warmOptions(identity));
    expect(await host.restore()).toEqual([]);
    await poolReady(host, 1);
    const [warm] = warmContainers(engine);
    const warmName = warm?.Name as string;
    expect(warmName).toMatch(/^aop-agent-warm-[0-9a-f]{12}$/);
    const warmVolume = `${warmName}-state`;
    expect(engine.volumeLabels(warmVolume)).toMatchObject({ 'aop.warm-pool': 'true', 'aop.role': 'state' });
    expect(warm?.hostConfig).toMatchObject({ Memory: 2 * GIB }); // the smallest plan until adopted
    const poolToken = JSON.parse(await readFile(join(engine.volumeDir(warmVolume), 'aop-secrets.json'), 'utf8')).gatewayToken;
    expect(engine.gateway(warmName)?.pairing.paired.has(identity.deviceId)).toBe(true);

    const s = spec({
      plan: 'collective',
      channelTokens: { telegram: 'tg-secret-token' },
      llm: { baseUrl: 'https://llm.example/v1', apiKey: 'sk-llm-secret', model: 'model-1' },
    });
    const created = await host.create(s);
    expect(created).toMatchObject({ agentId: s.agentId, status: 'starting' });
    const running = await host.waitUntilReady(s.agentId, { timeoutMs: 10_000 });
    expect(running.status).toBe('running');

    // The same container, under the agent's name; no container was created for the agent.
    const name = dockerContainerName(s.agentId);
    expect(engine.container(name)?.Id).toBe(warm?.Id);
    expect(gatewayCreates(engine).filter((call) => call.query.name === name)).toEqual([]);
    expect(engine.callsTo('POST', /\/rename$/).map((call) => call.query)).toEqual([{ name }]);
    expect(engine.container(name)?.hostConfig).toMatchObject({ Memory: 4 * GIB, NanoCpus: 2_000_000_000 });

    // The agent's secrets in the volume, its configuration applied by OpenClaw itself (with OpenClaw's `meta`).
    const volume = engine.volumeDir(warmVolume);
    expect(JSON.parse(await readFile(join(volume, 'aop-secrets.json'), 'utf8'))).toEqual({
      gatewayToken: s.gatewayToken,
      llmApiKey: 'sk-llm-secret',
      telegramBotToken: 'tg-secret-token',
    });
    const config = JSON.parse(await readFile(join(volume, 'openclaw.json'), 'utf8'));
    expect(config.models.providers.platform).toMatchObject({
      baseUrl: 'https://llm.example/v1',
      apiKey: { source: 'file', id: '/llmApiKey' },
    });
    expect(config.agents.defaults.model.primary).toBe('platform/model-1');
    expect(config.meta).toEqual({ lastTouchedVersion: '1.0.0' });
    const applies = engine.gateway(name)?.received.filter((frame) => frame.method === 'config.apply') ?? [];
    expect(applies).toHaveLength(1);
    expect(JSON.stringify(applies)).not.toContain('sk-llm-secret');

    // The agent's token is the gateway's now; the pool's is refused.
    const models = (token: string) => fetch(`${running.url}/v1/models`, { headers: { authorization: `Bearer ${token}` } });
    expect((await models(s.gatewayToken)).status).toBe(200);
    expect((await models(poolToken)).status).toBe(401);
    const credentials = await host.controlCredentials(s.agentId);
    expect(credentials.token).toBe(s.gatewayToken);
    const conn = await connectGateway({
      url: `${(running.url as string).replace(/^http/, 'ws')}/`,
      token: credentials.token,
      device: credentials.device?.identity,
      retryDeadlineMs: 0,
    });
    expect(conn.hello.auth?.scopes).toContain('operator.admin');
    await conn.close();
    expect(engine.execs()).toHaveLength(1); // paired once, while warm

    // The registry: the agent, with the warm volume as its state volume; the logs tell the adoption.
    const record = JSON.parse(await readFile(join(options.dataDir, 'docker-agents', `${s.agentId}.json`), 'utf8'));
    expect(record).toMatchObject({
      agentId: s.agentId,
      plan: 'collective',
      volume: warmVolume,
      platformDevice: { deviceId: identity.deviceId },
    });
    for (const secret of [s.gatewayToken, 'sk-llm-secret', 'tg-secret-token']) expect(JSON.stringify(record)).not.toContain(secret);
    const logs = (await host.logs(s.agentId)).join('\n');
    expect(logs).toContain(`[host] warm container ${warmName} taken by agent ${s.agentId}`);
    expect(logs).toMatch(/\[host\] warm container adopted in \d+\.\d s: the agent's configuration is live \(connected before, applied/);

    // The pool refills with a new warm container.
    await poolReady(host, 1);
    expect(
      warmContainers(engine)
        .map((c) => c.Name)
        .filter((n) => n !== name),
    ).toHaveLength(1);
    expect(await host.orphans()).toEqual([]);
  });

  it('an adopted agent lives on its volume: config writes keep OpenClaw’s meta, a restart recreates the container as the agent’s, delete removes both', async () => {
    const { engine, host } = await setup({}, warmOptions());
    await host.restore();
    await poolReady(host, 1);
    const s = spec();
    await host.create(s);
    const running = await host.waitUntilReady(s.agentId, { timeoutMs: 10_000 });
    const name = dockerContainerName(s.agentId);
    const warmVolume = engine.container(name)?.hostConfig.Mounts[0].Source as string;
    expect(warmVolume).toMatch(/^aop-agent-warm-[0-9a-f]{12}-state$/);
    const volume = engine.volumeDir(warmVolume);
    // A chat turn's leftovers, which must survive the container's recreation.
    const remembered = await fetch(`${running.url}/remember`, { method: 'POST', headers: { authorization: `Bearer ${s.gatewayToken}` } });
    expect(remembered.status).toBe(200);

    await host.configure(s.agentId, { config: { ...s.config, tools: { profile: 'messaging' } } });
    const written = JSON.parse(await readFile(join(volume, 'openclaw.json'), 'utf8'));
    expect(written.tools).toEqual({ profile: 'messaging' });
    expect(written.meta).toEqual({ lastTouchedVersion: '1.0.0' }); // carried over: OpenClaw would otherwise restore its backup

    await host.restart(s.agentId);
    expect((await host.waitUntilReady(s.agentId)).status).toBe('running');
    const recreated = engine.container(name);
    expect(recreated?.config.Labels).toMatchObject({ 'aop.agent-id': s.agentId, 'aop.user-id': 'usr_1' });
    expect(recreated?.config.Labels).not.toHaveProperty('aop.warm-pool');
    expect(recreated?.hostConfig.Mounts).toEqual([{ Type: 'volume', Source: warmVolume, Target: '/home/node/.openclaw' }]);
    expect(await readFile(join(volume, 'workspace', 'MEMORY.md'), 'utf8')).toBe('remembered');
    expect(existsSync(engine.volumeDir(dockerStateVolumeName(s.agentId)))).toBe(false);

    await host.delete(s.agentId);
    expect(engine.container(name)).toBeUndefined();
    expect(engine.volumeNames()).not.toContain(warmVolume);
  });

  it('a restarted backend removes the warm containers it left and keeps the adopted ones; an agent that needs the room takes it from the pool', async () => {
    const identity = createDeviceIdentity();
    const first = await setup({ memTotal: 8 * GIB }, warmOptions(identity));
    await first.host.restore();
    await poolReady(first.host, 1);
    const adopted = spec();
    await first.host.create(adopted);
    await first.host.waitUntilReady(adopted.agentId, { timeoutMs: 10_000 });
    await poolReady(first.host, 1);
    const left = warmContainers(first.engine).find((c) => c.Name.startsWith('aop-agent-warm-'));
    expect(left).toBeDefined();

    // A new backend on the same engine and data: the unadopted warm container and its volume go, the agent stays.
    const again = new DockerAgentHost({ ...first.options, warmPool: 0 });
    cleanups.push(() => again.shutdown());
    const restored = await again.restore();
    expect(restored).toEqual([expect.objectContaining({ agentId: adopted.agentId, url: expect.any(String) })]);
    expect((await again.waitUntilReady(adopted.agentId)).status).toBe('running');
    expect(first.engine.container(left?.Name as string)).toBeUndefined();
    expect(first.engine.volumeNames()).not.toContain(`${left?.Name}-state`);
    expect(first.engine.container(dockerContainerName(adopted.agentId))).toBeDefined();
    expect(await again.orphans()).toEqual([]);
    await first.host.shutdown();

    // 8 GiB less the 2 GiB reserve: three 2 GiB containers. With two agents and a warm container running, a third
    // agent of its own (its variables need a container of its own) gets the warm container's room.
    const { engine, host } = await setup({ memTotal: 8 * GIB }, warmOptions());
    await host.restore();
    await poolReady(host, 1);
    const a = spec();
    await host.create(a); // adopts the warm container
    await host.waitUntilReady(a.agentId, { timeoutMs: 10_000 });
    await poolReady(host, 1);
    const b = spec({ agentEnv: { AOP_AGENT_WALLET: '0xabc' } });
    await host.create(b);
    expect(engine.container(dockerContainerName(b.agentId))?.config.Env).toContain('AOP_AGENT_WALLET=0xabc');
    await poolReady(host, 1);
    const c = spec({ agentEnv: { AOP_AGENT_WALLET: '0xdef' } });
    await host.create(c);
    expect(warmContainers(engine).filter((x) => x.Name.startsWith('aop-agent-warm-'))).toEqual([]);
    expect(host.warmPoolStatus()).toMatchObject({ target: 1, ready: 0 });
    expect((await host.waitUntilReady(c.agentId)).status).toBe('running');
  });
});
