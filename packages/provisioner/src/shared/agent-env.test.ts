import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { type Server, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeHostingApi, startFakeHostingApi } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDockerEngine } from '../docker/docker-engine.test-support.js';
import { DockerAgentHost, dockerContainerName, dockerStateVolumeName } from '../docker/host.js';
import { installFakeRuntime } from './fake-gateway.test-support.js';
import type { AgentSpec } from '../host.js';
import { HostingApi } from '../hosting/hosting-api.js';
import { HostingAgentHost } from '../hosting/host.js';
import { startKubeApi } from '../kubernetes/kube-api.test-support.js';
import { KubernetesAgentHost, kubeAgentName } from '../kubernetes/host.js';
import { LocalAgentHost } from '../local/host.js';
import { checkAgentEnv } from './openclaw-config.js';

// `AgentSpec.agentEnv` (the agent's own secret variables, e.g. its underground wallet key) through every provider:
// it reaches the gateway's process / container / pod / hosted service environment, is sealed in the host's registry,
// never appears in openclaw.json or the logs, survives restart, update, repair and a new host, and a change restarts
// the gateway like a token change does.

const WALLET_KEY = 'AOP_AGENT_WALLET_KEY';
const newKey = () => `0x${randomBytes(32).toString('hex')}`;
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const envOf = (env: string[]) => Object.fromEntries(env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const decode = (data: Record<string, string>) =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));

let work: string;
const sealKey = randomBytes(32);
const cleanups: Array<() => Promise<unknown>> = [];

let n = 0;
function spec(prefix: string, overrides: Partial<AgentSpec> = {}): AgentSpec {
  n += 1;
  return {
    agentId: `agt_${prefix}env${n}`,
    userId: 'usr_1',
    plan: 'solo',
    config: { gateway: { auth: { mode: 'token' } } },
    gatewayToken: `gw-token-${n}-${randomBytes(8).toString('hex')}`,
    ...overrides,
  };
}

async function filesUnder(dir: string): Promise<string> {
  const names = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((d) => d.isFile());
  const texts = await Promise.all(names.map((d) => readFile(join(d.parentPath, d.name), 'utf8').catch(() => '')));
  return texts.join('\n');
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-agent-env-'));
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await rm(work, { recursive: true, force: true });
});

describe('agentEnv checks', () => {
  it('accepts AOP_AGENT_* names only, non-empty values without NUL, within bounds; errors never repeat a value', () => {
    expect(checkAgentEnv(undefined)).toEqual({});
    expect(checkAgentEnv({ AOP_AGENT_WALLET_KEY: 'k', AOP_AGENT_BUS_URL: 'http://x' })).toEqual({
      AOP_AGENT_WALLET_KEY: 'k',
      AOP_AGENT_BUS_URL: 'http://x',
    });
    for (const name of [
      'PATH',
      'OPENCLAW_GATEWAY_TOKEN',
      'AOP_LLM_API_KEY',
      'TELEGRAM_BOT_TOKEN',
      'aop_agent_x',
      'AOP_AGENT_',
      'AOP_AGENT_A-B',
    ]) {
      expect(() => checkAgentEnv({ [name]: 'secret-value-1' }), name).toThrow(/is not an AOP_AGENT_\* name/);
    }
    for (const value of ['', 'a\0b', 'x'.repeat(4097), 5 as unknown as string]) {
      let message = '';
      try {
        checkAgentEnv({ AOP_AGENT_WALLET_KEY: value });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toBe('agentEnv: invalid value for AOP_AGENT_WALLET_KEY');
    }
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`AOP_AGENT_V${i}`, 'v']));
    expect(() => checkAgentEnv(many)).toThrow('agentEnv has more than 16 variables');
  });
});

describe('local provider', () => {
  let runtimes: Record<string, string>;
  const hosts: LocalAgentHost[] = [];
  const newHost = (dataDir: string) => {
    const host = new LocalAgentHost({
      dataDir,
      encryptionKey: sealKey,
      runtimes,
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    hosts.push(host);
    return host;
  };
  /** What the running gateway says about the variable (set, digest): never the value. */
  const probe = async (host: LocalAgentHost, agentId: string) => {
    const { url } = await host.waitUntilReady(agentId, { timeoutMs: 15_000 });
    return (await fetch(`${url}/env/${WALLET_KEY}`)).json() as Promise<{ set: boolean; sha256: string | null }>;
  };

  beforeAll(async () => {
    runtimes = {
      '1.0.0': await installFakeRuntime(join(work, 'rt-1.0.0'), '1.0.0'),
      '1.1.0': await installFakeRuntime(join(work, 'rt-1.1.0'), '1.1.0'),
    };
    cleanups.push(() => Promise.all(hosts.map((host) => host.shutdown())));
  });

  it('the child process gets the variable, sealed in agent.json, never in openclaw.json or the logs; kept across restart, update, repair and a new host', async () => {
    const dataDir = join(work, 'local-data');
    const host = newHost(dataDir);
    const first = newKey();
    const s = spec('local', { agentEnv: { [WALLET_KEY]: first, AOP_AGENT_WALLET_ADDRESS: '0xabc' } });
    await host.create(s);
    expect(await probe(host, s.agentId)).toEqual({ name: WALLET_KEY, set: true, sha256: sha256(first) });
    expect(await host.spec(s.agentId)).toMatchObject({ agentEnv: { [WALLET_KEY]: first, AOP_AGENT_WALLET_ADDRESS: '0xabc' } });

    const paths = host.paths(s.agentId);
    const registry = await readFile(paths.registry, 'utf8');
    expect(registry).not.toContain(first.slice(2));
    expect(Object.keys(JSON.parse(registry).secrets.env).sort()).toEqual(['AOP_AGENT_WALLET_ADDRESS', WALLET_KEY]);
    expect(await readFile(paths.config, 'utf8')).not.toContain(WALLET_KEY);

    // A new key: the gateway restarts with it (a new process), like a token change.
    const pid = (await host.status(s.agentId)).pid;
    const second = newKey();
    await host.configure(s.agentId, { agentEnv: { [WALLET_KEY]: second } });
    expect((await host.status(s.agentId)).pid).not.toBe(pid);
    expect(await probe(host, s.agentId)).toMatchObject({ set: true, sha256: sha256(second) });
    expect((await host.spec(s.agentId)).agentEnv).toEqual({ [WALLET_KEY]: second });

    // A config-only change leaves the process (and its variable) as it was.
    const before = (await host.status(s.agentId)).pid;
    await host.configure(s.agentId, { config: { ...s.config, tools: { profile: 'messaging' } } });
    expect((await host.status(s.agentId)).pid).toBe(before);

    await host.restart(s.agentId);
    expect(await probe(host, s.agentId)).toMatchObject({ sha256: sha256(second) });
    await host.update(s.agentId, { version: '1.1.0' });
    expect(await probe(host, s.agentId)).toMatchObject({ sha256: sha256(second) });
    await host.repair(s.agentId);
    expect(await probe(host, s.agentId)).toMatchObject({ sha256: sha256(second) });

    // A bad variable is refused and changes nothing.
    await expect(host.configure(s.agentId, { agentEnv: { PATH: '/evil' } })).rejects.toThrow(/AOP_AGENT_/);
    expect((await host.spec(s.agentId)).agentEnv).toEqual({ [WALLET_KEY]: second });

    // The platform restarts: a new host on the same data directory brings the agent back with its variable.
    await host.shutdown();
    const again = newHost(dataDir);
    await again.restore();
    expect(await probe(again, s.agentId)).toMatchObject({ set: true, sha256: sha256(second) });

    const logs = (await again.logs(s.agentId, { tail: 1000 })).join('\n') + (await filesUnder(paths.logs));
    for (const secret of [first, second]) expect(logs).not.toContain(secret.slice(2));

    // Removing the variables: the gateway comes back without them.
    await again.configure(s.agentId, { agentEnv: {} });
    expect(await probe(again, s.agentId)).toEqual({ name: WALLET_KEY, set: false, sha256: null });
    expect((await again.spec(s.agentId)).agentEnv).toBeUndefined();
  }, 60_000);
});

describe('docker provider', () => {
  it('the container is created with the variable in Env; not in the config archive or the registry; kept by update and repair', async () => {
    const dir = await mkdtemp(join(work, 'engine-'));
    const repo = 'ghcr.io/openclaw/openclaw';
    const engine = await startDockerEngine({
      socketPath: join(dir, 'docker.sock'),
      dir,
      images: { [`${repo}:1.0.0`]: {} },
      registry: { [`${repo}:1.1.0`]: {} },
    });
    const host = new DockerAgentHost({
      dataDir: join(dir, 'data'),
      encryptionKey: sealKey,
      socketPath: engine.socketPath,
      image: `${repo}:1.0.0`,
      user: `${process.getuid?.() ?? 1000}:${process.getgid?.() ?? 1000}`,
      readyPollMs: 25,
      stopTimeoutMs: 5_000,
    });
    cleanups.push(
      () => host.shutdown(),
      () => engine.close(),
    );
    const s = spec('docker');
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const name = dockerContainerName(s.agentId);
    const firstId = engine.container(name)?.Id;
    expect(envOf(engine.container(name)?.config.Env)[WALLET_KEY]).toBeUndefined();

    // The wallet comes later (as the backend hands it): a new container, on the same state volume.
    const key = newKey();
    await host.configure(s.agentId, { agentEnv: { [WALLET_KEY]: key } });
    const recreated = engine.container(name);
    expect(recreated?.Id).not.toBe(firstId);
    // The agent's variables are its environment's; the gateway's own secrets are in its volume's secret file instead.
    expect(envOf(recreated?.config.Env)).toMatchObject({ [WALLET_KEY]: key });
    expect(envOf(recreated?.config.Env)).not.toHaveProperty('OPENCLAW_GATEWAY_TOKEN');
    expect((await host.waitUntilReady(s.agentId)).status).toBe('running');

    // Setting the same value again is no change: the container stays.
    await host.configure(s.agentId, { agentEnv: { [WALLET_KEY]: key } });
    expect(engine.container(name)?.Id).toBe(recreated?.Id);

    await host.update(s.agentId, { version: '1.1.0' });
    expect(envOf(engine.container(name)?.config.Env)[WALLET_KEY]).toBe(key);
    await host.repair(s.agentId);
    expect(envOf(engine.container(name)?.config.Env)[WALLET_KEY]).toBe(key);
    await host.restart(s.agentId);
    expect(envOf(engine.container(name)?.config.Env)[WALLET_KEY]).toBe(key);

    // Never in the config written into the volume, nor in the host's registry.
    const archives = engine.containers().flatMap((c) => c.archives.flat().map((entry) => entry.content));
    expect(archives.some((content) => content.includes('"gateway"'))).toBe(true);
    for (const content of archives) expect(content).not.toContain(key.slice(2));
    expect(await readFile(join(engine.volumeDir(dockerStateVolumeName(s.agentId)), 'openclaw.json'), 'utf8')).not.toContain(key.slice(2));
    expect(await filesUnder(host.registryDir)).not.toContain(key.slice(2));
    expect((await host.logs(s.agentId)).join('\n')).not.toContain(key.slice(2));

    // A new host on the same registry (a backend restart) still has it.
    const next = new DockerAgentHost({
      dataDir: join(dir, 'data'),
      encryptionKey: sealKey,
      socketPath: engine.socketPath,
      image: `${repo}:1.0.0`,
    });
    cleanups.push(() => next.shutdown());
    expect((await next.spec(s.agentId)).agentEnv).toEqual({ [WALLET_KEY]: key });
  }, 60_000);
});

describe('kubernetes provider', () => {
  it('the value lives in the agent Secret, the pod reads it by secretKeyRef; not in the ConfigMap; kept by restart, update and repair', async () => {
    const api = await startKubeApi({ autoReady: () => true });
    cleanups.push(() => api.close());
    const host = new KubernetesAgentHost({
      kubeconfig: api.kubeConfig(),
      pollMs: 5,
      readyTimeoutMs: 2_000,
      stopTimeoutMs: 2_000,
      jobTimeoutMs: 2_000,
    });
    const NS = 'aop-agents';
    const first = newKey();
    const s = spec('kube', { agentEnv: { [WALLET_KEY]: first } });
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const refs = () =>
      (api.get('deployments', NS, name)!.spec.template.spec.containers[0].env as any[]).filter((e) => e.name.startsWith('AOP_AGENT_'));

    expect(decode(api.get('secrets', NS, name)!.data)[WALLET_KEY]).toBe(first);
    expect(refs()).toEqual([{ name: WALLET_KEY, valueFrom: { secretKeyRef: { name, key: WALLET_KEY, optional: true } } }]);
    const configMap = api.get('configmaps', NS, name)!.data;
    expect(configMap['openclaw.json']).not.toContain(WALLET_KEY);
    expect(JSON.stringify(configMap)).not.toContain(first.slice(2));
    expect((await host.spec(s.agentId)).agentEnv).toEqual({ [WALLET_KEY]: first });

    // A new variable (the bus URL) and a new key: the Secret changes, the pod env gains the new name, the pod restarts.
    const [pod] = api.podsOf(NS, name);
    const second = newKey();
    await host.configure(s.agentId, { agentEnv: { [WALLET_KEY]: second, AOP_AGENT_BUS_URL: 'http://backend/api/underground/bus/send' } });
    expect(decode(api.get('secrets', NS, name)!.data)).toMatchObject({
      [WALLET_KEY]: second,
      AOP_AGENT_BUS_URL: 'http://backend/api/underground/bus/send',
    });
    expect(refs().map((e) => e.name)).toEqual([WALLET_KEY, 'AOP_AGENT_BUS_URL']);
    const deployment = api.get('deployments', NS, name)!;
    expect(deployment.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt']).toBeDefined();
    expect(api.podsOf(NS, name)[0]!.metadata.name).not.toBe(pod!.metadata.name);
    // The OpenClaw variables are still there (the patch merged, it did not replace the list).
    expect(deployment.spec.template.spec.containers[0].env.map((e: any) => e.name)).toContain('OPENCLAW_CONFIG_PATH');

    await host.restart(s.agentId);
    await host.update(s.agentId, { version: '2026.10.1' });
    expect(decode(api.get('secrets', NS, name)!.data)[WALLET_KEY]).toBe(second);
    expect(refs().map((e) => e.name)).toEqual([WALLET_KEY, 'AOP_AGENT_BUS_URL']);

    // Repair rewrites the Deployment from the stored spec: exactly the agent's names, sorted.
    await host.configure(s.agentId, { agentEnv: { [WALLET_KEY]: second } });
    expect(decode(api.get('secrets', NS, name)!.data).AOP_AGENT_BUS_URL).toBeUndefined();
    await host.repair(s.agentId);
    expect(refs().map((e) => e.name)).toEqual([WALLET_KEY]);
    expect(decode(api.get('secrets', NS, name)!.data)[WALLET_KEY]).toBe(second);
    expect(JSON.stringify(api.get('configmaps', NS, name)!.data)).not.toContain(second.slice(2));

    await expect(host.configure(s.agentId, { agentEnv: { HOME: '/evil' } })).rejects.toThrow(/AOP_AGENT_/);
    expect((await host.spec(s.agentId)).agentEnv).toEqual({ [WALLET_KEY]: second });
  }, 60_000);
});

describe('hosting provider', () => {
  let api: FakeHostingApi;
  let gateway: Server;
  let gatewayUrl: string;

  beforeAll(async () => {
    api = await startFakeHostingApi({ apiKey: 'hosting-api-key' });
    gateway = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(req.url === '/readyz' ? { ready: true, failing: [], uptimeMs: 1 } : { ok: true, status: 'live' }));
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as { port: number }).port}`;
    cleanups.push(
      () => api.close(),
      () => new Promise<void>((resolve) => gateway.close(() => resolve())),
    );
  });

  it("the service's variables carry the value; sealed in the registry; a change redeploys; repair sets it again", async () => {
    const dataDir = await mkdtemp(join(work, 'hosting-'));
    const options = {
      apiUrl: api.url,
      apiKey: 'hosting-api-key',
      projectId: 'proj-1',
      environmentId: 'env-1',
      image: 'ghcr.io/openclaw/openclaw:2026.9.6',
      dataDir,
      encryptionKey: sealKey,
      pollMs: 20,
      readyTimeoutMs: 5_000,
      gatewayUrl: () => gatewayUrl,
    };
    const host = new HostingAgentHost(options);
    cleanups.push(() => host.shutdown());
    const first = newKey();
    const s = spec('hosted', { agentEnv: { [WALLET_KEY]: first } });
    await host.create(s);
    const serviceId = [...api.services.values()].find((service) => service.name === `agent-${s.agentId}`)!.id;
    expect(api.services.get(serviceId)!.variables).toEqual({
      OPENCLAW_GATEWAY_TOKEN: s.gatewayToken,
      OPENCLAW_GATEWAY_PORT: '18789',
      [WALLET_KEY]: first,
    });
    const registry = await filesUnder(dataDir);
    expect(registry).toContain(WALLET_KEY);
    expect(registry).not.toContain(first.slice(2));

    const second = newKey();
    const from = api.calls.length;
    await host.configure(s.agentId, { agentEnv: { [WALLET_KEY]: second } });
    expect(api.calls.slice(from).map((c) => c.operation)).toEqual(['variableCollectionUpsert', 'serviceInstanceDeployV2', 'deployment']);
    expect(api.services.get(serviceId)!.variables[WALLET_KEY]).toBe(second);

    // Someone empties the service's variables at the provider: repair puts them back from the sealed spec.
    api.services.get(serviceId)!.variables = {};
    await host.repair(s.agentId);
    expect(api.services.get(serviceId)!.variables[WALLET_KEY]).toBe(second);

    // A new host on the same registry still has it.
    const again = new HostingAgentHost(options);
    cleanups.push(() => again.shutdown());
    await again.restore();
    expect((await again.spec(s.agentId)).agentEnv).toEqual({ [WALLET_KEY]: second });
  });

  it('the provider API still refuses any variable that is not an agent variable', async () => {
    const client = new HostingApi({ apiUrl: api.url, apiKey: 'hosting-api-key', projectId: 'proj-1', environmentId: 'env-1' });
    await expect(client.upsertVariables('svc-x', { DATABASE_URL: 'postgres://x' })).rejects.toThrow(
      'Refusing to send non-agent variables to an agent container: DATABASE_URL',
    );
  });
});
