import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installFakeRuntime, writeCronJobs } from '../shared/fake-gateway.test-support.js';
import { PLATFORM_USER_AGENT, connectGateway } from '@aop/gateway-client';
import { AgentNotFoundError, type AgentSpec, HostFullError, UpdateFailedError } from '../host.js';
import { LocalAgentHost, type LocalHostOptions } from './host.js';
import { isAlive, processTree } from './proc.js';

// Host behaviour (supervision, capacity, update roll-back, memory reset, secrets) against a fake OpenClaw CLI that
// starts in milliseconds. The real gateway is exercised in test/e2e/openclaw.real.test.ts.

const PLATFORM_SECRETS = ['DATABASE_URL', 'INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY', 'REDIS_URL'];

let work: string;
let runtimes: Record<string, string>;
const key = randomBytes(32);
const hosts: LocalAgentHost[] = [];

async function newHost(options: Partial<LocalHostOptions> = {}): Promise<LocalAgentHost> {
  const host = new LocalAgentHost({
    dataDir: await mkdtemp(join(work, 'data-')),
    encryptionKey: key,
    runtimes,
    defaultVersion: '1.0.0',
    readyPollMs: 50,
    stopTimeoutMs: 5_000,
    backoff: { initialMs: 100, maxMs: 400, resetAfterMs: 60_000 },
    ...options,
  });
  hosts.push(host);
  return host;
}

let n = 0;
function spec(overrides: Partial<AgentSpec> = {}): AgentSpec {
  n += 1;
  return {
    agentId: `agt_test${n}`,
    userId: 'usr_1',
    plan: 'solo',
    config: { gateway: { bind: 'lan', auth: { mode: 'token' } }, cron: { enabled: true, maxConcurrentRuns: 2 } },
    gatewayToken: `gw-token-${n}-${randomBytes(8).toString('hex')}`,
    ...overrides,
  };
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-local-host-'));
  runtimes = {
    '1.0.0': await installFakeRuntime(join(work, 'rt-1.0.0'), '1.0.0'),
    '1.1.0': await installFakeRuntime(join(work, 'rt-1.1.0'), '1.1.0'),
    broken: await installFakeRuntime(join(work, 'rt-broken'), 'broken', { exitImmediately: true }),
    crashy: await installFakeRuntime(join(work, 'rt-crashy'), 'crashy', { crashAfterMs: 300 }),
    stubborn: await installFakeRuntime(join(work, 'rt-stubborn'), 'stubborn', { ignoreSigterm: true }),
    stray: await installFakeRuntime(join(work, 'rt-stray'), 'stray', { strayHelper: true }),
    slow: await installFakeRuntime(join(work, 'rt-slow'), 'slow', { readyDelayMs: 60_000 }),
    warming: await installFakeRuntime(join(work, 'rt-warming'), 'warming', { warmUpMs: 700 }),
    protocol: await installFakeRuntime(join(work, 'rt-protocol'), 'protocol', { warmUpMs: 100, gatewayProtocol: true }),
    deaf: await installFakeRuntime(join(work, 'rt-deaf'), 'deaf', { warmUpMs: 100, gatewayProtocol: true, ignoreSigterm: true }),
    sluggish: await installFakeRuntime(join(work, 'rt-sluggish'), 'sluggish', {
      readyDelayMs: 1_500,
      warmUpMs: 100,
      gatewayProtocol: true,
    }),
    // OpenClaw's scheduler fails to start (shared/scheduler-start.ts): during the first start's warm-up, or after the
    // gateway is running on its first three starts.
    'cron-race': await installFakeRuntime(join(work, 'rt-cron-race'), 'cron-race', {
      warmUpMs: 600,
      schedulerFailsStarts: 1,
      schedulerFailsAfterMs: 100,
    }),
    'cron-broken': await installFakeRuntime(join(work, 'rt-cron-broken'), 'cron-broken', {
      schedulerFailsStarts: 3,
      schedulerFailsAfterMs: 400,
    }),
    refusing: await installFakeRuntime(join(work, 'rt-refusing'), 'refusing', {
      warmUpMs: 100,
      gatewayProtocol: true,
      refuseConfigApply: true,
    }),
  };
  for (const name of PLATFORM_SECRETS) process.env[name] ??= `platform-${name.toLowerCase()}-value`;
});

afterAll(async () => {
  await Promise.all(hosts.map((host) => host.shutdown()));
  await rm(work, { recursive: true, force: true });
});

describe('LocalAgentHost (fake OpenClaw)', () => {
  it('creates an agent: starting → running, healthy, with its state, logs, stats and sealed secrets', async () => {
    const host = await newHost();
    const s = spec({
      channelTokens: { telegram: 'tg-secret-token' },
      llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-llm-secret', model: 'm' },
    });
    const created = await host.create(s);
    expect(created.status).toBe('starting');
    expect(created.url).toBe(`http://127.0.0.1:${created.port}`);
    const running = await host.waitUntilReady(s.agentId);
    expect(running).toMatchObject({ status: 'running', version: '1.0.0', restarts: 0, lastError: null });
    expect(await host.health(s.agentId)).toEqual({ live: true, ready: true, failing: [], uptimeMs: expect.any(Number) });

    const stats = await host.stats(s.agentId);
    expect(stats.pids).toBeGreaterThanOrEqual(2); // the gateway and its helper
    expect(stats.memoryBytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(stats.uptimeMs).toBeGreaterThanOrEqual(0);
    expect(stats.cpuPercent).toBeGreaterThanOrEqual(0);
    expect((await host.logs(s.agentId, { tail: 50 })).join('\n')).toContain('http server listening');

    const paths = host.paths(s.agentId);
    const registry = await readFile(paths.registry, 'utf8');
    for (const secret of [s.gatewayToken, 'tg-secret-token', 'sk-llm-secret']) expect(registry).not.toContain(secret);
    expect(JSON.parse(registry)).toMatchObject({ agentId: s.agentId, version: '1.0.0', desired: 'running', config: s.config });
    expect((await stat(paths.registry)).mode & 0o777).toBe(0o600);
    expect((await stat(paths.dir)).mode & 0o777).toBe(0o700);
    const config = await readFile(paths.config, 'utf8');
    for (const secret of [s.gatewayToken, 'tg-secret-token', 'sk-llm-secret']) expect(config).not.toContain(secret);
    expect(JSON.parse(config)).toMatchObject({ gateway: { mode: 'local', bind: 'loopback', port: created.port }, cron: { enabled: true } });
    expect(await host.spec(s.agentId)).toMatchObject({ gatewayToken: s.gatewayToken, channelTokens: { telegram: 'tg-secret-token' } });

    // The secrets reach the gateway through SecretRefs into a 0600 file outside the data directory (memory-backed),
    // which only lives as long as the gateway.
    const parsed = JSON.parse(config);
    const secretFile = parsed.secrets.providers.aop.path as string;
    expect(parsed.secrets.providers.aop).toEqual({ source: 'file', path: secretFile, mode: 'json' });
    expect(parsed.gateway.auth).toEqual({ mode: 'token', token: { source: 'file', provider: 'aop', id: '/gatewayToken' } });
    expect(parsed.channels.telegram.botToken).toEqual({ source: 'file', provider: 'aop', id: '/telegramBotToken' });
    expect(parsed.models.providers.platform.apiKey).toEqual({ source: 'file', provider: 'aop', id: '/llmApiKey' });
    expect(secretFile.startsWith(host.agentsDir)).toBe(false);
    expect(JSON.parse(await readFile(secretFile, 'utf8'))).toEqual({
      gatewayToken: s.gatewayToken,
      telegramBotToken: 'tg-secret-token',
      llmApiKey: 'sk-llm-secret',
    });
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
    expect((await stat(join(secretFile, '..'))).mode & 0o777).toBe(0o700);

    // The environment is built from scratch: none of the platform's secrets, and no token either (they are in the file).
    const environ = (await readFile(`/proc/${running.pid}/environ`, 'utf8')).split('\0');
    expect(environ.some((entry) => /^(OPENCLAW_GATEWAY_TOKEN|TELEGRAM_BOT_TOKEN|AOP_LLM_API_KEY)=/.test(entry))).toBe(false);
    expect(environ).toContain(`OPENCLAW_STATE_DIR=${paths.state}`);
    for (const name of PLATFORM_SECRETS) {
      expect(process.env[name]).toBeTruthy();
      expect(environ.some((entry) => entry.startsWith(`${name}=`))).toBe(false);
    }
    await host.stop(s.agentId);
    expect(existsSync(secretFile)).toBe(false);
  });

  it('gives every gateway the host’s NODE_OPTIONS (AGENT_MAX_HEAP_MB), and none by default', async () => {
    const capped = await newHost({ nodeOptions: '--max-old-space-size=512' });
    const s = spec();
    const { pid } = await capped.waitUntilReady((await capped.create(s)).agentId);
    expect((await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0')).toContain('NODE_OPTIONS=--max-old-space-size=512');
    const plain = await newHost();
    const t = spec();
    const ready = await plain.waitUntilReady((await plain.create(t)).agentId);
    expect((await readFile(`/proc/${ready.pid}/environ`, 'utf8')).split('\0').some((entry) => entry.startsWith('NODE_OPTIONS='))).toBe(
      false,
    );
  });

  it("is running only after its warm-up turn: the platform model on the gateway itself, never the agent's own", async () => {
    // Issue #19 "ready means answers a chat" (shared/warm-up.ts): /readyz alone is not ready.
    const host = await newHost({ defaultVersion: 'warming' });
    const s = spec({ llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-llm-secret', model: 'm' } });
    const created = await host.create(s);
    const warmUps = join(host.paths(s.agentId).state, 'warm-ups.jsonl');
    await until(() => existsSync(warmUps));
    // The gateway answers /readyz and its warm-up turn is under way: still starting.
    expect(await host.health(s.agentId)).toMatchObject({ live: true, ready: true });
    expect((await host.status(s.agentId)).status).toBe('starting');
    const running = await host.waitUntilReady(s.agentId);
    expect(running.status).toBe('running');
    const [turn, ...more] = (await readFile(warmUps, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(more).toEqual([]);
    expect(turn).toMatchObject({
      model: 'aop-warm-up/openclaw/aop-warm-up-no-such-agent',
      sessionKey: 'agent:main:aop-warm-up',
      tokenOk: true,
    });
    expect(Date.parse(running.readyAt!) - Date.parse(running.startedAt!)).toBeGreaterThanOrEqual(700);
    const log = (await host.logs(s.agentId, { tail: 50 })).join('\n');
    expect(log).toMatch(/\[host\] \/readyz after [\d.]+ s; preparing the first turn/);
    expect(log).toMatch(/\[host\] first turn prepared in [\d.]+ s: refused model call as planned \(HTTP 400\)/);
    // The warm-up's provider asks the gateway's own port with a reference to its token: no secret in the file, and
    // the agent's model stays its primary.
    const config = JSON.parse(await readFile(host.paths(s.agentId).config, 'utf8'));
    expect(config.models.providers['aop-warm-up']).toMatchObject({
      baseUrl: `http://127.0.0.1:${created.port}/v1`,
      apiKey: { source: 'file', provider: 'aop', id: '/gatewayToken' },
    });
    expect(config.agents.defaults.model.primary).toBe('platform/m');
  });

  it('stop ends the whole process tree; start brings the same state back', async () => {
    const host = await newHost();
    const s = spec();
    await host.create(s);
    const { pid } = await host.waitUntilReady(s.agentId);
    const tree = await processTree(pid!);
    expect(tree.length).toBeGreaterThanOrEqual(2);
    expect(await host.stop(s.agentId)).toMatchObject({ status: 'stopped', pid: null });
    for (const p of tree) expect(isAlive(p)).toBe(false);
    expect(await host.health(s.agentId)).toMatchObject({ live: false, ready: false });
    expect(JSON.parse(await readFile(host.paths(s.agentId).registry, 'utf8')).desired).toBe('stopped');

    await host.start(s.agentId);
    await host.waitUntilReady(s.agentId);
    expect(await readFile(join(host.paths(s.agentId).state, 'starts.txt'), 'utf8')).toBe('1.0.0\n1.0.0\n');
  });

  it("stop ends the gateway's whole process group: a helper re-parented away from its tree goes too", async () => {
    const host = await newHost();
    const s = spec({ version: 'stray' });
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const strayFile = join(host.paths(s.agentId).state, 'stray.pid');
    await until(() => existsSync(strayFile));
    const stray = Number(await readFile(strayFile, 'utf8'));
    await until(() => isAlive(stray));
    const { pid } = await host.status(s.agentId);
    expect(await processTree(pid!)).not.toContain(stray); // not the gateway's descendant any more
    await host.stop(s.agentId);
    await until(() => !isAlive(stray), 5_000);
  });

  it('restarts a crashed gateway with back-off', async () => {
    const host = await newHost();
    const s = spec({ version: 'crashy' });
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    await until(async () => (await host.status(s.agentId)).restarts >= 2);
    const state = await host.status(s.agentId);
    expect(state.lastError).toBe('Gateway exited with code 1');
    expect((await host.logs(s.agentId)).join('\n')).toMatch(/restarting in 100 ms[\s\S]*restarting in 200 ms/);
    await host.stop(s.agentId);
    const stopped = await host.status(s.agentId);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await host.status(s.agentId)).toMatchObject({ status: 'stopped', restarts: stopped.restarts });
  });

  it("starts a gateway again when OpenClaw's scheduler did not start (its jobs would never run), before calling it running", async () => {
    const host = await newHost({ defaultVersion: 'cron-race' });
    const s = spec({ llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-llm-secret', model: 'm' } });
    await host.create(s);
    const running = await host.waitUntilReady(s.agentId);
    expect(running).toMatchObject({ status: 'running', restarts: 0, lastError: null, schedulerDown: null });
    // The first process printed the failure during its warm-up; the second is the one that runs.
    expect(await readFile(join(host.paths(s.agentId).state, 'starts.txt'), 'utf8')).toBe('cron-race\ncron-race\n');
    const log = (await host.logs(s.agentId, { tail: 100 })).join('\n');
    expect(log).toContain(
      "[host] OpenClaw's scheduler did not start (failed to start: StateDatabaseCoordinatorContentionError: another OpenClaw process owns state-lifecycle); starting the gateway again so its jobs run (1 of 2)",
    );
    expect(log.match(/\[host\] ready after/g)).toHaveLength(1);
  });

  it('a running gateway whose scheduler fails is started again twice, then reported as running without it until a restart', async () => {
    const host = await newHost({ defaultVersion: 'cron-broken' });
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    await until(async () => Boolean((await host.status(s.agentId)).schedulerDown), 15_000);
    const down = await host.status(s.agentId);
    expect(down).toMatchObject({
      status: 'running',
      schedulerDown: "OpenClaw's scheduler did not start: scheduled jobs and heartbeats do not run until the agent is restarted",
    });
    const starts = join(host.paths(s.agentId).state, 'starts.txt');
    expect((await readFile(starts, 'utf8')).trim().split('\n')).toHaveLength(3);
    const log = (await host.logs(s.agentId, { tail: 200 })).join('\n');
    expect(log).toMatch(
      /starting the gateway again so its jobs run \(1 of 2\)[\s\S]*\(2 of 2\)[\s\S]*\[host\] OpenClaw's scheduler did not start \(failed to start: StateDatabaseCoordinatorContentionError: another OpenClaw process owns state-lifecycle\) 3 times in a row; the gateway runs on without it: scheduled jobs and heartbeats do not run until the agent is restarted/,
    );
    // A restart by request is a new start: its scheduler comes up (the fake fails only its first three), nothing is down.
    await host.restart(s.agentId);
    const restarted = await host.waitUntilReady(s.agentId);
    await new Promise((resolve) => setTimeout(resolve, 700)); // past when the failure would have been printed
    expect(await host.status(s.agentId)).toMatchObject({ status: 'running', pid: restarted.pid, schedulerDown: null });
    expect((await readFile(starts, 'utf8')).trim().split('\n')).toHaveLength(4);
  });

  it('SIGKILLs a gateway that ignores SIGTERM after the stop timeout', async () => {
    const host = await newHost({ stopTimeoutMs: 400 });
    const s = spec({ version: 'stubborn' });
    await host.create(s);
    const { pid } = await host.waitUntilReady(s.agentId);
    const started = Date.now();
    await host.stop(s.agentId);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(isAlive(pid!)).toBe(false);
    expect((await host.logs(s.agentId)).join('\n')).toContain('SIGKILL');
  });

  it('marks a gateway that does not become ready in time as error', async () => {
    const host = await newHost({ readyTimeoutMs: 600 });
    const s = spec({ version: 'slow' });
    await host.create(s);
    await expect(host.waitUntilReady(s.agentId)).rejects.toThrow('Gateway did not become ready within 1 s');
    expect(await host.status(s.agentId)).toMatchObject({ status: 'error', lastError: 'Gateway did not become ready within 1 s' });
    expect(await host.health(s.agentId)).toMatchObject({ live: true, ready: false, failing: ['startup-sidecars'] });
  });

  it('refuses agents beyond capacity with HostFullError', async () => {
    const capped = await newHost({ maxAgents: 1 });
    const first = spec();
    await capped.create(first);
    const second = spec();
    await expect(capped.create(second)).rejects.toThrow(HostFullError);
    await expect(capped.create(second)).rejects.toThrow(/^Host is at capacity: 1 of 1 agents running/);
    expect(existsSync(capped.paths(second.agentId).dir)).toBe(false);
    await capped.stop(first.agentId);
    await capped.create(second); // room again
    await expect(capped.start(first.agentId)).rejects.toThrow(HostFullError);
    // Two starts at once for the last room: one gets it (the checks run one at a time and hold what they gave).
    await capped.stop(second.agentId);
    const starts = await Promise.allSettled([capped.start(first.agentId), capped.start(second.agentId)]);
    expect(starts.map((start) => start.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(capped.gatewayPids()).toHaveLength(1);

    const tiny = await newHost({ memoryPerAgentBytes: 2 ** 50 });
    await expect(tiny.create(spec())).rejects.toThrow(/Host is at capacity: 0 of 0 agents running \(1048576\.0 GiB budgeted per agent/);
  });

  it('budgets gateways from their measured memory (peak PSS, kept with the agent), not a flat figure', async () => {
    // Issue #20 "memory measured, not assumed": a margin so large that one measured gateway fills the host.
    const measured = await newHost({ memoryMargin: 1e6, memorySampleMs: 600 });
    const first = spec();
    await measured.create(first);
    await measured.waitUntilReady(first.agentId);
    const registry = async () => JSON.parse(await readFile(measured.paths(first.agentId).registry, 'utf8'));
    // Sampled at every poll while it started: its start's peak is kept with the agent.
    const { startPeakPssBytes } = await registry();
    expect(startPeakPssBytes).toBeGreaterThan(5 * 1024 * 1024); // the stand-in gateway and its helper
    expect(startPeakPssBytes).toBeLessThan(2 * 1024 ** 3);
    // Once ready, the sampler (here every 100 ms while the gateway is young) keeps its peak too.
    await until(async () => ((await registry()).peakPssBytes ?? 0) > 5 * 1024 * 1024, 5_000);
    await expect(measured.create(spec())).rejects.toThrow(
      /Host is at capacity: 1 of \d+ agents running \([\d.]+ GiB budgeted per agent from measured memory/,
    );
    // With the default margin the same measurement leaves room: the stand-in holds megabytes, not the flat 1.5 GiB.
    const roomy = await newHost({ maxAgents: 3 });
    for (let i = 0; i < 3; i++) await roomy.create(spec());
  });

  it('update: moves to a new version, or rolls back to the previous one with a backup', async () => {
    const host = await newHost();
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);

    expect(await host.update(s.agentId, { version: '1.1.0' })).toMatchObject({ status: 'running', version: '1.1.0' });
    expect(await readFile(join(host.paths(s.agentId).state, 'starts.txt'), 'utf8')).toBe('1.0.0\n1.1.0\n');

    for (const bad of ['broken', '9.9.9']) {
      const error = await host.update(s.agentId, { version: bad }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UpdateFailedError);
      const failure = error as UpdateFailedError;
      expect(failure.previousVersion).toBe('1.1.0');
      expect(failure.targetVersion).toBe(bad);
      expect(failure.message).toMatch(new RegExp(`^Update to OpenClaw ${bad} failed: .+\\. Rolled back to 1\\.1\\.0\\.$`));
      expect(existsSync(join(failure.backupPath, 'state', 'workspace', 'AGENTS.md'))).toBe(true);
      await expect(host.waitUntilReady(s.agentId)).resolves.toMatchObject({ status: 'running', version: '1.1.0' });
    }
    expect((await host.status(s.agentId)).version).toBe('1.1.0');
    expect(JSON.parse(await readFile(host.paths(s.agentId).registry, 'utf8')).version).toBe('1.1.0');
  });

  it('a shutdown does not wait out an update to a gateway that is still starting (the update held the agent)', async () => {
    const host = await newHost({ readyTimeoutMs: 60_000 });
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const updating = host.update(s.agentId, { version: 'slow' }).catch((error: unknown) => error);
    await until(async () => (await host.status(s.agentId)).version === 'slow' && (await host.status(s.agentId)).status === 'starting');
    const { pid } = await host.status(s.agentId);
    const started = performance.now();
    await host.shutdown();
    expect(performance.now() - started).toBeLessThan(8_000); // the stop timeout (5 s), not the 60 s wait for readiness
    expect(isAlive(pid as number)).toBe(false);
    expect(await updating).toBeInstanceOf(Error);
  });

  it('resetMemory clears sessions and memory but keeps the workspace seed files', async () => {
    const host = await newHost();
    const s = spec();
    await host.create(s);
    const { url } = await host.waitUntilReady(s.agentId);
    const { state, workspace } = host.paths(s.agentId);
    await fetch(`${url}/remember`, { method: 'POST' });
    const session = join(state, 'agents', 'main', 'agent', 'openclaw-agent.sqlite');
    expect([session, join(workspace, 'MEMORY.md'), join(workspace, 'memory', '2026-01-01.md')].map((f) => existsSync(f))).toEqual([
      true,
      true,
      true,
    ]);
    await writeFile(join(workspace, 'AGENTS.md'), '# edited by the user\n');

    await host.resetMemory(s.agentId);
    await host.waitUntilReady(s.agentId);
    expect([session, join(workspace, 'MEMORY.md'), join(workspace, 'memory', '2026-01-01.md')].map((f) => existsSync(f))).toEqual([
      false,
      false,
      false,
    ]);
    expect(await readFile(join(workspace, 'AGENTS.md'), 'utf8')).toBe('# edited by the user\n');
    expect(await readdir(workspace)).toEqual(expect.arrayContaining(['AGENTS.md', 'SOUL.md', 'IDENTITY.md', 'USER.md', 'BOOTSTRAP.md']));
    expect(await readFile(join(state, 'starts.txt'), 'utf8')).toBe('1.0.0\n1.0.0\n');
  });

  it('repair re-writes a lost config and fixes the state directory', async () => {
    const host = await newHost();
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    await host.stop(s.agentId);
    const paths = host.paths(s.agentId);
    await rm(paths.config);
    await chmod(paths.state, 0o755);
    await host.repair(s.agentId);
    expect((await stat(paths.state)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(paths.config, 'utf8')).gateway.mode).toBe('local');
    await expect(host.waitUntilReady(s.agentId)).resolves.toMatchObject({ status: 'running' });
  });

  it('restore: a new host over the same data directory restarts what was running, not what was stopped', async () => {
    const host = await newHost();
    const running = spec();
    const stopped = spec();
    await host.create(running);
    await host.create(stopped);
    await host.waitUntilReady(running.agentId);
    await host.stop(stopped.agentId);
    await host.shutdown();
    await expect(host.status(running.agentId)).rejects.toThrow('The agent host is shut down');

    const again = await newHost({ dataDir: host.agentsDir.replace(/\/agents$/, '') });
    const states = await again.restore();
    expect(states.map((a) => [a.agentId, a.status]).sort()).toEqual(
      [
        [running.agentId, 'starting'],
        [stopped.agentId, 'stopped'],
      ].sort(),
    );
    await again.waitUntilReady(running.agentId);
    expect(await again.spec(running.agentId)).toMatchObject({ gatewayToken: running.gatewayToken });
  });

  it('restore stops the gateway a previous host left running (a backend killed with SIGKILL), its whole process group', async () => {
    // The first host's own restart of the gateway the second one stops is a minute away: the second one's start is the only one.
    const first = await newHost({ backoff: { initialMs: 60_000, maxMs: 60_000, resetAfterMs: 60_000 } });
    const s = spec({ version: 'stray' });
    await first.create(s);
    const { pid } = await first.waitUntilReady(s.agentId);
    const strayFile = join(first.paths(s.agentId).state, 'stray.pid');
    await until(() => existsSync(strayFile));
    const stray = Number(await readFile(strayFile, 'utf8'));
    await rm(strayFile);

    const again = await newHost({ dataDir: first.agentsDir.replace(/\/agents$/, '') });
    await again.restore();
    expect(isAlive(pid!)).toBe(false);
    await until(() => !isAlive(stray), 5_000);
    const restarted = await again.waitUntilReady(s.agentId);
    expect(restarted.pid).not.toBe(pid);
  });

  it('configure: a config change is written for hot reload, a token change restarts with the new secrets', async () => {
    const host = await newHost();
    const s = spec();
    await host.create(s);
    const { pid } = await host.waitUntilReady(s.agentId);
    const paths = host.paths(s.agentId);

    const config = { ...s.config, logging: { level: 'debug' } };
    expect(await host.configure(s.agentId, { config })).toMatchObject({ status: 'running', pid });
    expect(JSON.parse(await readFile(paths.config, 'utf8')).logging).toEqual({ level: 'debug', file: join(paths.logs, 'openclaw.log') });

    const restarted = await host.configure(s.agentId, { channelTokens: { discord: 'new-discord-token' } });
    expect(restarted.pid).not.toBe(pid);
    const written = JSON.parse(await readFile(paths.config, 'utf8'));
    expect(written.channels.discord).toMatchObject({ enabled: true, token: { source: 'file', provider: 'aop', id: '/discordBotToken' } });
    expect(JSON.parse(await readFile(written.secrets.providers.aop.path, 'utf8')).discordBotToken).toBe('new-discord-token');
    expect(await readFile(paths.registry, 'utf8')).not.toContain('new-discord-token');
    expect(JSON.parse(await readFile(paths.registry, 'utf8')).config.logging).toEqual({ level: 'debug' });
  });

  it('a start after a ready timeout replaces the gateway that never became ready', async () => {
    const host = await newHost({ readyTimeoutMs: 300 });
    const s = spec({ version: 'slow' });
    await host.create(s);
    await expect(host.waitUntilReady(s.agentId)).rejects.toThrow('did not become ready');
    const { pid } = await host.status(s.agentId);
    expect(isAlive(pid!)).toBe(true);
    const again = await host.start(s.agentId);
    expect(again.pid).not.toBe(pid);
    expect(isAlive(pid!)).toBe(false);
    await host.stop(s.agentId);
  });

  it('delete removes the agent and everything it had', async () => {
    const host = await newHost();
    const s = spec();
    await host.create(s);
    const { pid } = await host.waitUntilReady(s.agentId);
    await host.delete(s.agentId);
    expect(existsSync(host.paths(s.agentId).dir)).toBe(false);
    expect(isAlive(pid!)).toBe(false);
    await expect(host.status(s.agentId)).rejects.toThrow(AgentNotFoundError);
    await expect(host.logs('agt_missing')).rejects.toThrow('Agent not found: agt_missing');
  });
});

describe('LocalAgentHost warm pool (fake OpenClaw speaking the gateway protocol)', () => {
  const llm = { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-llm-secret', model: 'm' };
  /** The warm gateway's directory, its pid and the pool token (read back from its secret file, as a test may). */
  async function warmSlot(host: LocalAgentHost) {
    await until(() => host.warmPoolStatus().ready === 1);
    const names = (await readdir(host.agentsDir)).filter((name) => name.startsWith('warm-'));
    const unadopted = await Promise.all(
      names.map(async (name) => JSON.parse(await readFile(join(host.agentsDir, name, 'agent.json'), 'utf8')).warmSlot === true),
    );
    const dir = names.find((_, i) => unadopted[i]);
    const config = JSON.parse(await readFile(join(host.agentsDir, dir!, 'state', 'openclaw.json'), 'utf8'));
    const token = JSON.parse(await readFile(config.secrets.providers.aop.path, 'utf8')).gatewayToken as string;
    const pid = Number(JSON.parse(await readFile(join(host.agentsDir, dir!, 'agent.json'), 'utf8')).pid);
    return { dir: dir!, pid, token, port: config.gateway.port as number };
  }
  const modelsStatus = async (port: number, token: string) =>
    (await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${token}` } })).status;

  it("the next agent adopts the warm gateway: the same process, warmed, given the agent's config and token; the pool refills", async () => {
    const host = await newHost({ defaultVersion: 'protocol', warmPool: 1, refillQuietMs: 200 });
    await host.restore();
    const slot = await warmSlot(host);
    expect(host.warmPoolStatus()).toEqual({ target: 1, ready: 1, starting: 0, lastError: null });
    expect(await host.list()).toEqual([]); // a warm gateway is nobody's agent
    // The platform's skills are in its workspace before anyone adopts it (the first turn finds them there).
    const skill = join(host.agentsDir, slot.dir, 'state', 'workspace', '.agents', 'skills', 'underground-bus', 'SKILL.md');
    const skillWritten = (await stat(skill)).mtimeMs;
    expect(await modelsStatus(slot.port, slot.token)).toBe(200);

    const s = spec({ llm, channelTokens: { telegram: 'tg-secret-token' } });
    const created = await host.create(s);
    expect(created).toMatchObject({ status: 'starting', pid: slot.pid, port: slot.port });
    const running = await host.waitUntilReady(s.agentId);
    expect(running).toMatchObject({ status: 'running', pid: slot.pid });
    expect(Date.parse(running.readyAt!) - Date.parse(running.startedAt!)).toBeGreaterThanOrEqual(0);

    // The agent lives in the warm gateway's directory; its config went in through config.apply, its token replaced the pool's.
    const paths = host.paths(s.agentId);
    expect(paths.dir).toBe(join(host.agentsDir, slot.dir));
    const applies = (await readFile(join(paths.state, 'config-applies.jsonl'), 'utf8')).trim().split('\n');
    expect(applies.map((line) => JSON.parse(line).model)).toEqual([{ primary: 'platform/m' }]);
    expect(await modelsStatus(slot.port, s.gatewayToken)).toBe(200);
    expect(await modelsStatus(slot.port, slot.token)).toBe(401);
    const config = JSON.parse(await readFile(paths.config, 'utf8'));
    expect(config.channels.telegram).toMatchObject({
      enabled: true,
      botToken: { source: 'file', provider: 'aop', id: '/telegramBotToken' },
    });
    expect(JSON.parse(await readFile(config.secrets.providers.aop.path, 'utf8'))).toEqual({
      gatewayToken: s.gatewayToken,
      llmApiKey: 'sk-llm-secret',
      telegramBotToken: 'tg-secret-token',
    });
    const registry = JSON.parse(await readFile(paths.registry, 'utf8'));
    expect(registry).toMatchObject({ agentId: s.agentId, desired: 'running' });
    expect(registry.warmSlot).toBeUndefined();
    const log = (await host.logs(s.agentId, { tail: 100 })).join('\n');
    expect(log).toContain(`[host] warm gateway ${slot.dir} taken by agent ${s.agentId}`);
    // Over the connection opened while it waited; the skills were not written again.
    expect(log).toMatch(/\[host\] warm gateway adopted in [\d.]+ s: the agent's configuration is live \(connected before, applied/);
    expect((await stat(skill)).mtimeMs).toBe(skillWritten);

    // A new warm gateway takes the adopted one's place.
    await until(() => host.warmPoolStatus().ready === 1);
    expect(host.gatewayPids()).toHaveLength(2);
    expect((await host.list()).map((agent) => agent.agentId)).toEqual([s.agentId]);

    // Stop and start: a gateway of its own, from the same directory, with the same secrets and the agent's config —
    // which keeps the `meta` block config.apply left (without it, OpenClaw would restore its backup: the pool's config).
    await host.stop(s.agentId);
    expect(isAlive(slot.pid)).toBe(false);
    const again = await host.start(s.agentId);
    await host.waitUntilReady(s.agentId);
    expect(again.pid).not.toBe(slot.pid);
    expect(await modelsStatus(again.port!, s.gatewayToken)).toBe(200);
    const rewritten = JSON.parse(await readFile(paths.config, 'utf8'));
    expect(rewritten.meta).toEqual({ lastTouchedVersion: 'protocol' });
    expect(rewritten.agents.defaults.model.primary).toBe('platform/m');

    // A new host over the same data: the agent comes back from the adopted directory; the old pool is cleared.
    const dataDir = join(host.agentsDir, '..');
    await host.shutdown();
    const next = await newHost({ dataDir, defaultVersion: 'protocol', warmPool: 1, refillQuietMs: 200 });
    await next.restore();
    expect((await next.list()).map((agent) => agent.agentId)).toEqual([s.agentId]);
    expect(next.paths(s.agentId).dir).toBe(join(next.agentsDir, slot.dir));
    await next.waitUntilReady(s.agentId);
    const refilled = await warmSlot(next);
    expect((await readdir(next.agentsDir)).filter((name) => name.startsWith('warm-')).sort()).toEqual([slot.dir, refilled.dir].sort());
    await next.delete(s.agentId);
    expect(existsSync(join(next.agentsDir, slot.dir))).toBe(false);
  });

  it('agents with variables of their own start cold; an agent that needs the room takes it from the pool', async () => {
    const host = await newHost({ defaultVersion: 'protocol', warmPool: 1, maxAgents: 1, refillQuietMs: 200 });
    await host.restore();
    const slot = await warmSlot(host);
    const s = spec({ agentEnv: { AOP_AGENT_WALLET_KEY: 'k' } });
    const created = await host.create(s);
    expect(created.pid).not.toBe(slot.pid);
    expect(isAlive(slot.pid)).toBe(false); // given up for the agent: the host holds one gateway
    await host.waitUntilReady(s.agentId);
    await until(() => host.warmPoolStatus().lastError !== null);
    expect(host.warmPoolStatus()).toMatchObject({ target: 1, ready: 0, starting: 0 });
    expect(host.warmPoolStatus().lastError).toMatch(/capacity|full|room/i);
    expect((await readdir(host.agentsDir)).filter((name) => name.startsWith('warm-'))).toEqual([]);
  });

  it('a warm gateway nobody adopted is killed at once at shutdown, even one that ignores SIGTERM', async () => {
    const host = await newHost({ defaultVersion: 'deaf', warmPool: 1 });
    await host.restore();
    const slot = await warmSlot(host);
    const started = performance.now();
    await host.shutdown();
    expect(performance.now() - started).toBeLessThan(3_000); // not the 5 s stop timeout
    expect(isAlive(slot.pid)).toBe(false);
    expect(existsSync(join(host.agentsDir, slot.dir))).toBe(false);
  });

  it('a warm gateway that refuses the configuration is replaced by a gateway of its own', async () => {
    const host = await newHost({ defaultVersion: 'refusing', warmPool: 1, refillQuietMs: 200 });
    await host.restore();
    const slot = await warmSlot(host);
    const s = spec({ llm });
    await host.create(s);
    const running = await host.waitUntilReady(s.agentId);
    expect(running.pid).not.toBe(slot.pid);
    expect(isAlive(slot.pid)).toBe(false);
    expect(await modelsStatus(running.port!, s.gatewayToken)).toBe(200);
    expect((await host.logs(s.agentId, { tail: 100 })).join('\n')).toMatch(
      /adopting the warm gateway failed \(config reload failed[^)]*\); starting a gateway of its own/,
    );
  });
});

describe('LocalAgentHost hibernation (fake OpenClaw speaking the gateway protocol)', () => {
  const llm = { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-llm-secret', model: 'm' };
  const chat = async (port: number, token: string, content: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-openclaw-session-key': 'talk' },
      body: JSON.stringify({ model: 'openclaw', messages: [{ role: 'user', content }] }),
    });
    return res.json() as Promise<{ choices: { message: { content: string } }[] }>;
  };

  it('an idle agent hibernates with its state kept, stays asleep across a restore, and wakes when something comes to its address', async () => {
    const host = await newHost({ defaultVersion: 'protocol', idleMs: 1_500, idleCheckMs: 100 });
    const s = spec({ llm });
    await host.create(s);
    const { pid, port } = await host.waitUntilReady(s.agentId);
    // Activity (chat turns, as the gateway reports them in its sessions) keeps it awake past the idle time.
    for (let i = 0; i < 6; i++) {
      expect((await chat(port!, s.gatewayToken, `turn ${i}`)).choices[0]?.message.content).toBe(`fake reply: turn ${i}`);
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    expect((await host.status(s.agentId)).status).toBe('running');
    await until(async () => (await host.status(s.agentId)).status === 'hibernated', 8_000);
    expect(isAlive(pid!)).toBe(false);
    const paths = host.paths(s.agentId);
    const record = JSON.parse(await readFile(paths.registry, 'utf8'));
    expect(record).toMatchObject({ desired: 'running', hibernation: { since: expect.any(String), wakeAt: null } });
    expect((await host.status(s.agentId)).wakesAt).toBeNull(); // no job due: only a message or Start wakes it
    expect((await host.logs(s.agentId, { tail: 20 })).join('\n')).toContain('[host] hibernating after being idle; no job due');
    const secretFile = JSON.parse(await readFile(paths.config, 'utf8')).secrets.providers.aop.path;
    expect(existsSync(secretFile)).toBe(false);
    // Its address answers 503 while it sleeps; the platform's own requests (a session list, a probe) do not wake it.
    const platformRead = await fetch(`http://127.0.0.1:${port}/readyz`, { headers: { 'user-agent': PLATFORM_USER_AGENT } });
    expect(platformRead.status).toBe(503);
    expect(platformRead.headers.get('retry-after')).toBe('30');
    await expect(connectGateway({ url: `ws://127.0.0.1:${port}`, token: s.gatewayToken, retryDeadlineMs: 0 })).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await host.status(s.agentId)).status).toBe('hibernated');

    // A new host over the same data leaves it asleep.
    const dataDir = join(host.agentsDir, '..');
    await host.shutdown();
    const next = await newHost({ dataDir, defaultVersion: 'protocol', idleMs: 60_000, idleCheckMs: 100 });
    await next.restore();
    expect(await next.status(s.agentId)).toMatchObject({ status: 'hibernated', pid: null });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await next.status(s.agentId)).status).toBe('hibernated');

    // Anything else that comes to its address (a webhook here) is told to retry, and wakes it: the same state
    // directory, the same port, the conversation still there.
    const hook = await fetch(`http://127.0.0.1:${port}/hooks/agent?token=x`, { method: 'POST', body: '{}' });
    expect(hook.status).toBe(503);
    expect(await hook.json()).toEqual({ error: 'The agent is waking up from hibernation: retry shortly' });
    const woken = await next.waitUntilReady(s.agentId);
    expect(woken.port).toBe(port);
    expect(woken.status).toBe('running');
    expect(JSON.parse(await readFile(next.paths(s.agentId).registry, 'utf8')).hibernation).toBeNull();
    const sessions = JSON.parse(await readFile(join(next.paths(s.agentId).state, 'fake-sessions.json'), 'utf8'));
    expect(sessions['agent:main:talk'].messages).toEqual(['turn 0', 'turn 1', 'turn 2', 'turn 3', 'turn 4', 'turn 5']);
    expect((await chat(woken.port!, s.gatewayToken, 'after the nap')).choices[0]?.message.content).toBe('fake reply: after the nap');
    const log = (await next.logs(s.agentId, { tail: 50 })).join('\n');
    expect(log).toContain('[host] waking: POST /hooks/agent came to its address');
    expect(log).toMatch(/\[host\] waking from hibernation \(asleep since /);
    // Stopped, it has no doorbell: nothing listens on its port.
    await next.stop(s.agentId);
    await expect(fetch(`http://127.0.0.1:${port}/readyz`)).rejects.toThrow();
  });

  it('a hibernated agent is woken before its next due job; one whose job is due soon stays awake', async () => {
    const host = await newHost({ defaultVersion: 'protocol', idleMs: 500, idleCheckMs: 100, wakeLeadMs: 1_000 });
    const s = spec({ llm });
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const state = host.paths(s.agentId).state;
    // Due within the idle time plus the lead: not worth a sleep.
    await writeCronJobs(state, [{ id: 'soon', enabled: true, nextRunAtMs: Date.now() + 1_200 }]);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect((await host.status(s.agentId)).status).toBe('running');
    // Due in 5 s (a disabled job sooner does not count): it sleeps, and wakes a second before.
    const dueAt = Date.now() + 5_000;
    await writeCronJobs(state, [
      { id: 'off', enabled: false, nextRunAtMs: Date.now() + 1_000 },
      { id: 'daily', enabled: true, state: { nextRunAtMs: dueAt } },
    ]);
    await until(async () => (await host.status(s.agentId)).status === 'hibernated', 5_000);
    const { hibernation } = JSON.parse(await readFile(host.paths(s.agentId).registry, 'utf8'));
    expect(Date.parse(hibernation.wakeAt)).toBe(dueAt - 1_000);
    // Its state says when.
    expect((await host.status(s.agentId)).wakesAt).toBe(new Date(dueAt - 1_000).toISOString());
    await until(async () => (await host.status(s.agentId)).status !== 'hibernated', 8_000);
    // At the last idle check (every 100 ms) before its wake time, not one after it.
    expect(Date.now()).toBeGreaterThanOrEqual(dueAt - 1_000 - 100);
    const awake = await host.waitUntilReady(s.agentId);
    expect(awake.status).toBe('running');
    expect(awake).not.toHaveProperty('wakesAt');
  });

  it('a wake on a full host takes back the room from the warm gateway its nap let start', async () => {
    const host = await newHost({ defaultVersion: 'sluggish', warmPool: 1, maxAgents: 1, refillQuietMs: 0 });
    const s = spec({ llm });
    await host.create(s);
    await host.waitUntilReady(s.agentId, { timeoutMs: 15_000 });
    for (const wait of [false, true]) {
      await host.hibernate(s.agentId);
      // The room the nap freed goes to a warm gateway (at once, or within the refill's 1 s check if a refill still runs).
      await until(() => host.warmPoolStatus().starting === 1, 5_000);
      // The wake comes while that gateway is being set up, or once it is spawned and starting.
      if (wait) await until(() => host.gatewayPids().length === 1, 5_000);
      expect((await host.start(s.agentId)).status).toBe('starting');
      const woken = await host.waitUntilReady(s.agentId, { timeoutMs: 15_000 });
      expect(host.gatewayPids()).toEqual([woken.pid]);
      expect((await readdir(host.agentsDir)).filter((name) => name.startsWith('warm-'))).toEqual([]);
    }
  });

  it('a full host hibernates the agent idle the longest to make room, and refuses when none has been idle long enough', async () => {
    // 1.5 s of idleness is "long enough" here: wide enough that a loaded machine's slow steps below stay under it.
    const host = await newHost({ defaultVersion: 'protocol', maxAgents: 2, idleMs: 3_600_000, idleCheckMs: 60_000, evictIdleMs: 1_500 });
    const [a, b, c, d] = [spec({ llm }), spec({ llm }), spec({ llm }), spec({ llm })];
    for (const s of [a, b]) {
      await host.create(s);
      await host.waitUntilReady(s.agentId);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    const { port } = await host.status(a.agentId);
    await chat(port!, a.gatewayToken, 'still here'); // a was active a moment ago, b not since it started
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    await host.create(c);
    expect((await host.status(b.agentId)).status).toBe('hibernated');
    expect((await host.status(a.agentId)).status).toBe('running');
    expect((await host.waitUntilReady(c.agentId)).status).toBe('running');
    expect((await host.logs(b.agentId, { tail: 20 })).join('\n')).toMatch(
      new RegExp(`\\[host\\] idle for \\d+\\.\\d min and agent ${c.agentId} needs the room: hibernating early`),
    );
    // Nobody has been idle for 1.5 s now (a just talked, c just started): the next agent is refused, nothing sleeps.
    await chat(port!, a.gatewayToken, 'busy again');
    await expect(host.create(d)).rejects.toBeInstanceOf(HostFullError);
    expect((await host.list()).map((state) => state.status).sort()).toEqual(['hibernated', 'running', 'running']);
  });

  it('an agent with a messaging channel stays awake', async () => {
    const host = await newHost({ defaultVersion: 'protocol', idleMs: 300, idleCheckMs: 100 });
    const s = spec({ llm, channelTokens: { telegram: 'tg-token' } });
    await host.create(s);
    const { pid } = await host.waitUntilReady(s.agentId);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(await host.status(s.agentId)).toMatchObject({ status: 'running', pid });
  });
});
