import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAKE_LLM_REPLY, type FakeLlm, startFakeLlm } from '@aop/testing';
import { GatewayError, connectGateway, cronAdd, cronList, cronRemove } from '@aop/gateway-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentSpec, UpdateFailedError } from './host.js';
import { LocalAgentHost } from './local-host.js';
import { isAlive, processTree } from './proc.js';
import { PINNED_OPENCLAW_VERSION, openClawRuntime, runtimeProblem } from './runtime.js';

// One REAL OpenClaw gateway (the pinned runtime, Node 24) for the whole file: each start costs ~20 s of CPU.
// The runtime is installed by `npm install` (scripts/install-runtime.mjs); without it this file fails, on purpose.

const PLATFORM_SECRETS = ['DATABASE_URL', 'INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY', 'REDIS_URL'];
const READY_MS = 150_000;

/** The §2.2 provisioning template of a solo plan, as the platform stores it. */
const storedConfig = () => ({
  logging: { level: 'info' },
  agents: {
    defaults: {
      workspace: '/home/node/.openclaw/workspace',
      model: { primary: 'openrouter/anthropic/claude-sonnet-4.5' },
      heartbeat: { every: '30m', lightContext: true, isolatedSession: true },
    },
  },
  tools: {
    profile: 'messaging',
    exec: { backgroundMs: 10_000, timeoutSec: 1_800 },
    web: { search: { enabled: true }, fetch: { enabled: true, maxChars: 50_000 } },
  },
  gateway: { bind: 'lan', auth: { mode: 'token' } },
  channels: {
    telegram: { enabled: false, dmPolicy: 'pairing' },
    discord: { enabled: false, dmPolicy: 'pairing' },
    whatsapp: { enabled: false, dmPolicy: 'pairing' },
    webchat: { enabled: true },
  },
  cron: { enabled: true, maxConcurrentRuns: 2, sessionRetention: '24h' },
  session: { scope: 'per-sender', reset: { mode: 'daily', atHour: 4 }, maintenance: { mode: 'warn', pruneAfter: '30d', maxEntries: 500 } },
  skills: { install: { nodeManager: 'npm' } },
});

let dataDir: string;
let llm: FakeLlm;
let host: LocalAgentHost;
let spec: AgentSpec;

async function dumpLogs(): Promise<string> {
  return host ? (await host.logs(spec.agentId, { tail: 80 }).catch(() => [])).join('\n') : '';
}

beforeAll(async () => {
  const problem = runtimeProblem(openClawRuntime(PINNED_OPENCLAW_VERSION));
  if (problem) {
    throw new Error(`The real OpenClaw runtime is required by this test file: ${problem} (\`npm install\` runs it too).`);
  }
  for (const name of PLATFORM_SECRETS) process.env[name] ??= `platform-${name.toLowerCase()}-value`;
  dataDir = await mkdtemp(join(tmpdir(), 'aop-openclaw-real-'));
  llm = await startFakeLlm();
  host = new LocalAgentHost({ dataDir, encryptionKey: randomBytes(32), readyTimeoutMs: READY_MS });
  spec = {
    agentId: 'agt_real1',
    userId: 'usr_real',
    plan: 'solo',
    config: storedConfig(),
    gatewayToken: randomBytes(24).toString('hex'),
    llm: { baseUrl: llm.url, apiKey: 'sk-local', model: 'fake-1' },
  };
  const created = await host.create(spec);
  expect(created.status).toBe('starting');
  try {
    await host.waitUntilReady(spec.agentId, { timeoutMs: READY_MS });
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- gateway log ---\n${await dumpLogs()}`);
  }
}, 180_000);

afterAll(async () => {
  await host?.shutdown();
  await llm?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 60_000);

describe('LocalAgentHost with the real OpenClaw gateway', () => {
  it('is running, live and ready, on the pinned version, bound to loopback', async () => {
    const state = await host.status(spec.agentId);
    expect(state).toMatchObject({ status: 'running', version: PINNED_OPENCLAW_VERSION, restarts: 0, lastError: null });
    expect(state.url).toBe(`http://127.0.0.1:${state.port}`);
    const health = await host.health(spec.agentId);
    expect(health).toMatchObject({ live: true, ready: true, failing: [] });
    expect(health.uptimeMs).toBeGreaterThan(0);
    const stats = await host.stats(spec.agentId);
    expect(stats.pids).toBeGreaterThanOrEqual(2); // gateway + helper processes
    expect(stats.memoryBytes).toBeGreaterThan(200 * 1024 * 1024);
    expect(stats.uptimeMs).toBeGreaterThan(1_000);
    const config = JSON.parse(await readFile(host.paths(spec.agentId).config, 'utf8'));
    expect(config.gateway).toMatchObject({ mode: 'local', bind: 'loopback', port: state.port });
    expect(JSON.stringify(config)).not.toContain(spec.gatewayToken);
  });

  it('answers a chat through /v1/chat/completions with the gateway token, from the fake LLM', async () => {
    const { url } = await host.status(spec.agentId);
    const unauthorized = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openclaw/default', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(unauthorized.status).toBe(401);

    const before = llm.chatRequests().length;
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${spec.gatewayToken}` },
      body: JSON.stringify({
        model: 'openclaw/default',
        user: 'platform-test',
        messages: [{ role: 'user', content: 'ping from the platform' }],
      }),
      signal: AbortSignal.timeout(90_000),
    });
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    expect(res.status).toBe(200);
    expect(body.choices[0]?.message.content).toBe(FAKE_LLM_REPLY);
    const seen = llm.chatRequests().slice(before);
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen[0]?.headers.authorization).toBe('Bearer sk-local');
    expect(seen[0]?.body).toMatchObject({ model: 'fake-1', stream: true });
    expect(JSON.stringify(seen[0]?.body)).toContain('ping from the platform');
  }, 120_000);

  it('speaks the gateway WebSocket protocol with @aop/gateway-client: handshake, cron add/list/remove, bad token refused', async () => {
    const { url } = await host.status(spec.agentId);
    const wsUrl = url!.replace(/^http/, 'ws');
    const refused = await connectGateway({ url: wsUrl, token: 'not-the-token' }).then(
      (c) => {
        c.close();
        return null;
      },
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(GatewayError);

    const conn = await connectGateway({ url: wsUrl, token: spec.gatewayToken });
    try {
      expect(conn.hello.protocol).toBe(4);
      const job = await cronAdd(conn, {
        name: 'platform-check',
        schedule: { kind: 'every', everyMs: 3_600_000 },
        sessionTarget: 'main',
        wakeMode: 'next-heartbeat',
        payload: { kind: 'systemEvent', text: 'hourly check' },
      });
      expect(job.id).toEqual(expect.any(String));
      const listed = await cronList(conn, { includeDisabled: true });
      expect(listed.jobs.map((j) => j.name)).toContain('platform-check');
      expect(await cronRemove(conn, job.id)).toMatchObject({ removed: true });
      const after = await cronList(conn, { includeDisabled: true });
      expect(after.jobs.map((j) => j.id)).not.toContain(job.id);
    } finally {
      conn.close();
    }
  }, 60_000);

  it('runs with none of the platform secrets in its environment (gateway and helpers)', async () => {
    const { pid } = await host.status(spec.agentId);
    const tree = await processTree(pid!);
    expect(tree.length).toBeGreaterThanOrEqual(2);
    for (const p of tree) {
      const environ = (await readFile(`/proc/${p}/environ`, 'utf8').catch(() => '')).split('\0');
      if (p === pid) expect(environ).toContain(`OPENCLAW_GATEWAY_TOKEN=${spec.gatewayToken}`);
      for (const name of PLATFORM_SECRETS) {
        expect(process.env[name]).toBeTruthy();
        expect(environ.some((entry) => entry.startsWith(`${name}=`))).toBe(false);
      }
    }
  });

  it('restarts into a new process with the same state, and is ready again', async () => {
    const before = await host.status(spec.agentId);
    const agentsMd = join(host.paths(spec.agentId).workspace, 'AGENTS.md');
    const seeded = await stat(agentsMd);
    const restarted = await host.restart(spec.agentId);
    expect(restarted.status).toBe('starting');
    expect(restarted.pid).not.toBe(before.pid);
    expect(isAlive(before.pid!)).toBe(false);
    await host.waitUntilReady(spec.agentId, { timeoutMs: READY_MS });
    expect(await host.health(spec.agentId)).toMatchObject({ live: true, ready: true });
    expect((await stat(agentsMd)).mtimeMs).toBe(seeded.mtimeMs); // not re-seeded: the state survived
  }, 180_000);

  it('stops: not live any more, no process left', async () => {
    const { pid } = await host.status(spec.agentId);
    const tree = await processTree(pid!);
    expect(await host.stop(spec.agentId)).toMatchObject({ status: 'stopped', pid: null });
    expect(await host.health(spec.agentId)).toEqual({ live: false, ready: false, failing: [], uptimeMs: null });
    for (const p of tree) expect(isAlive(p)).toBe(false);
  }, 60_000);

  it('rolls back a failed update: UpdateFailedError with a backup, and the previous version runs again', async () => {
    const error = await host.update(spec.agentId, { version: '0.0.0-not-installed' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpdateFailedError);
    const failure = error as UpdateFailedError;
    expect(failure.previousVersion).toBe(PINNED_OPENCLAW_VERSION);
    expect(failure.message).toContain('OpenClaw 0.0.0-not-installed is not installed');
    expect(existsSync(join(failure.backupPath, 'state', 'workspace', 'AGENTS.md'))).toBe(true);
    expect(existsSync(join(failure.backupPath, 'state', 'openclaw.json'))).toBe(true);
    const state = await host.waitUntilReady(spec.agentId, { timeoutMs: READY_MS });
    expect(state).toMatchObject({ status: 'running', version: PINNED_OPENCLAW_VERSION });
    expect(await host.health(spec.agentId)).toMatchObject({ live: true, ready: true });
  }, 180_000);

  it('delete stops the gateway and removes its state', async () => {
    const { pid } = await host.status(spec.agentId);
    await host.delete(spec.agentId);
    expect(isAlive(pid!)).toBe(false);
    expect(existsSync(host.paths(spec.agentId).dir)).toBe(false);
    await expect(host.status(spec.agentId)).rejects.toThrow(`Agent not found: ${spec.agentId}`);
  }, 60_000);
});
