import { userContextHeaders } from '@aop/core';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerAgentHost, HostingAgentHost, KubernetesAgentHost, LocalAgentHost, kubeAgentName } from '@aop/provisioner';
import { startDockerEngine } from '@aop/provisioner/docker-engine.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBackend } from '../backend.test-support.js';
import { loadBackendConfig } from '../config.js';
import { ProvisionerConfigError, createAgentHost } from './agent-host.js';

const KEY = 'internal-key-for-provider-tests';
const HMAC = 'hmac-secret-for-provider-tests';
const IMAGE = 'ghcr.io/openclaw/openclaw:1.0.0';

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-providers-'));
});
afterAll(() => rm(work, { recursive: true, force: true }));

const configOf = (env: Record<string, string>) =>
  loadBackendConfig({ NODE_ENV: 'test', DATA_DIR: join(work, 'data'), INTERNAL_API_KEY: KEY, LOG_LEVEL: 'silent', ...env });

// Issue #7: PROVISIONER picks the agent host; `/health` reports the real provider's reachability (spec §4.10).
describe('createAgentHost', () => {
  it('builds the host PROVISIONER names', async () => {
    expect(createAgentHost(configOf({}))).toBeInstanceOf(LocalAgentHost);
    const docker = createAgentHost(configOf({ PROVISIONER: 'docker', DOCKER_SOCKET: join(work, 'none.sock') }));
    expect(docker).toBeInstanceOf(DockerAgentHost);
    expect(docker.provider).toBe('docker');
    const hosting = createAgentHost(
      configOf({
        PROVISIONER: 'hosting',
        HOSTING_API_URL: 'http://127.0.0.1:9/graphql',
        HOSTING_API_KEY: 'hosting-key',
        HOSTING_PROJECT_ID: 'prj',
        HOSTING_ENVIRONMENT_ID: 'env',
      }),
    );
    expect(hosting).toBeInstanceOf(HostingAgentHost);
  });

  it('AGENT_WARM_POOL: a number or auto; unset, 1 on the embedded database and auto on a Postgres server', async () => {
    expect(configOf({}).agents.warmPool).toBe(1);
    expect(configOf({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' }).agents.warmPool).toBe('auto');
    expect(configOf({ AGENT_WARM_POOL: '0' }).agents.warmPool).toBe(0);
    expect(configOf({ AGENT_WARM_POOL: '3' }).agents.warmPool).toBe(3);
    expect(configOf({ AGENT_WARM_POOL: 'auto' }).agents.warmPool).toBe('auto');
    for (const bad of ['-1', 'many', '1.5', '33']) expect(() => configOf({ AGENT_WARM_POOL: bad }), bad).toThrow(/AGENT_WARM_POOL/);
    // The local host gets it, and reports it on the backend's /health (nothing warm until restore() fills it).
    const host = createAgentHost(configOf({ AGENT_WARM_POOL: '2' })) as LocalAgentHost;
    expect(host.warmPoolStatus()).toEqual({ target: 2, ready: 0, starting: 0, lastError: null });
    const backend = await startBackend({ INTERNAL_API_KEY: KEY }, { host });
    try {
      expect((await request(`${backend.url}/health`)).body).toMatchObject({
        provisioner: 'local',
        warmPool: { target: 2, ready: 0, starting: 0, lastError: null },
      });
    } finally {
      await backend.close();
      await host.shutdown();
    }
  });

  it('AGENT_IDLE_MINUTES, AGENT_EVICT_IDLE_MINUTES, AGENT_MAX_HEAP_MB and AGENTS_PER_GATEWAY: whole numbers, defaults 15, 2, none (a cap is 512 MB or more) and 8', () => {
    expect(configOf({}).agents).toMatchObject({ idleMs: 15 * 60_000, evictIdleMs: 2 * 60_000, maxHeapMb: 0, agentsPerGateway: 8 });
    expect(
      configOf({ AGENT_IDLE_MINUTES: '0', AGENT_EVICT_IDLE_MINUTES: '5', AGENT_MAX_HEAP_MB: '512', AGENTS_PER_GATEWAY: '1' }).agents,
    ).toMatchObject({
      idleMs: 0,
      evictIdleMs: 5 * 60_000,
      maxHeapMb: 512,
      agentsPerGateway: 1,
    });
    for (const [name, bad] of [
      ['AGENTS_PER_GATEWAY', '0'],
      ['AGENTS_PER_GATEWAY', 'all'],
      ['AGENT_EVICT_IDLE_MINUTES', '-1'],
      ['AGENT_EVICT_IDLE_MINUTES', 'soon'],
      ['AGENT_MAX_HEAP_MB', '1.5'],
      ['AGENT_MAX_HEAP_MB', '256'],
      ['AGENT_MAX_HEAP_MB', '384'],
    ] as const) {
      expect(() => configOf({ [name]: bad }), `${name}=${bad}`).toThrow(new RegExp(name));
    }
  });

  it('refuses a hosting provisioner without its project settings', () => {
    expect(() => createAgentHost(configOf({ PROVISIONER: 'hosting', HOSTING_API_URL: 'http://127.0.0.1:9/graphql' }))).toThrow(
      ProvisionerConfigError,
    );
  });

  it('reaches Kubernetes agents through KUBE_AGENT_URL when set, in-cluster DNS otherwise', async () => {
    const kubeconfig = join(work, 'kubeconfig.yaml');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{ name: c, cluster: { server: "http://127.0.0.1:9" } }]',
        'users: [{ name: u, user: { token: t } }]',
        'contexts: [{ name: x, context: { cluster: c, user: u } }]',
        'current-context: x',
      ].join('\n'),
    );
    const plain = createAgentHost(configOf({ PROVISIONER: 'kubernetes', KUBECONFIG: kubeconfig, KUBE_NAMESPACE: 'tenants' }));
    expect(plain).toBeInstanceOf(KubernetesAgentHost);
    expect((plain as KubernetesAgentHost).serviceUrl(kubeAgentName('agt_a1'), 'agt_a1')).toBe(
      `http://${kubeAgentName('agt_a1')}.tenants.svc:18789`,
    );
    // AGENT_WARM_POOL reaches the kubernetes host too (`auto`: one warm pod).
    expect((plain as KubernetesAgentHost).warmPoolStatus().target).toBe(1);
    const pooled = createAgentHost(
      configOf({ PROVISIONER: 'kubernetes', KUBECONFIG: kubeconfig, AGENT_WARM_POOL: 'auto', DATABASE_URL: 'postgres://x@127.0.0.1:9/x' }),
    );
    expect((pooled as KubernetesAgentHost).warmPoolStatus().target).toBe(1);
    const none = createAgentHost(configOf({ PROVISIONER: 'kubernetes', KUBECONFIG: kubeconfig, AGENT_WARM_POOL: '0' }));
    expect((none as KubernetesAgentHost).warmPoolStatus().target).toBe(0);
    const templated = createAgentHost(
      configOf({ PROVISIONER: 'kubernetes', KUBECONFIG: kubeconfig, KUBE_AGENT_URL: 'https://{name}.agents.example.com/{agentId}' }),
    );
    expect((templated as KubernetesAgentHost).serviceUrl(kubeAgentName('agt_a1'), 'agt_a1')).toBe(
      `https://${kubeAgentName('agt_a1')}.agents.example.com/agt_a1`,
    );
    // The API server is not there: the cluster is reported unreachable, not an exception.
    const backend = await startBackend({ INTERNAL_API_KEY: KEY, PROVISIONER: 'kubernetes', KUBECONFIG: kubeconfig }, { host: plain });
    try {
      expect((await request(`${backend.url}/health`)).body).toMatchObject({ provisioning: 'disabled', provider: 'kubernetes' });
    } finally {
      await backend.close();
    }
  });
});

describe('backend on the docker provisioner', () => {
  it('deploys into the Docker engine from its warm pool (AGENT_WARM_POOL) and reports both in /health', async () => {
    const dir = await mkdtemp(join(work, 'engine-'));
    const engine = await startDockerEngine({ socketPath: join(dir, 'docker.sock'), dir, images: { [IMAGE]: {} } });
    const env = {
      INTERNAL_API_KEY: KEY,
      HMAC_SECRET: HMAC,
      PROVISIONER: 'docker',
      DOCKER_SOCKET: engine.socketPath,
      DOCKER_AGENT_IMAGE: IMAGE,
      AGENT_WARM_POOL: '1',
    };
    const host = createAgentHost(configOf(env));
    const backend = await startBackend(env, { host });
    try {
      await host.restore(); // as the backend's server does at start: fills the pool
      await vi.waitFor(async () => expect((await request(`${backend.url}/health`)).body.warmPool).toMatchObject({ target: 1, ready: 1 }), {
        timeout: 15_000,
        interval: 50,
      });
      expect((await request(`${backend.url}/health`)).body).toMatchObject({ docker: 'available', provisioning: 'enabled' });
      const warm = engine.calls.find((c) => c.method === 'POST' && c.path === '/containers/create');
      expect(warm?.body.Labels).toMatchObject({ 'aop.warm-pool': 'true' });
      const warmId = engine.container(warm?.query.name as string)?.Id;
      expect(warmId).toEqual(expect.any(String));
      const email = 'dock@example.com';
      const res = await request(`${backend.url}/api/deployments`, {
        headers: {
          authorization: `Bearer ${KEY}`,
          ...userContextHeaders({ userId: 'usr_dock', email }, HMAC),
        },
        json: { agentId: 'agt_dock', name: 'Dock', config: { telegramToken: 'tg-token', plan: 'solo' } },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ agentId: 'agt_dock', status: expect.any(String) });
      // The warm container became the agent's: renamed, not created.
      expect(engine.container('aop-agent-agt_dock')?.Id).toBe(warmId);
      expect(engine.calls.filter((c) => c.path === '/containers/create' && c.query.name === 'aop-agent-agt_dock')).toEqual([]);
      expect(engine.calls.filter((c) => c.path.endsWith('/rename')).map((c) => c.query)).toEqual([{ name: 'aop-agent-agt_dock' }]);
      expect((await host.waitUntilReady('agt_dock', { timeoutMs: 10_000 })).status).toBe('running');
    } finally {
      await backend.close();
      await host.shutdown();
      await engine.close();
    }
  });

  it("puts a customer's later agents into its first agent's container (AGENTS_PER_GATEWAY, default 8), never another customer's", async () => {
    const dir = await mkdtemp(join(work, 'engine-'));
    const engine = await startDockerEngine({ socketPath: join(dir, 'docker.sock'), dir, images: { [IMAGE]: {} } });
    const env = {
      INTERNAL_API_KEY: KEY,
      HMAC_SECRET: HMAC,
      PROVISIONER: 'docker',
      DOCKER_SOCKET: engine.socketPath,
      DOCKER_AGENT_IMAGE: IMAGE,
    };
    const host = createAgentHost(configOf(env));
    const backend = await startBackend(env, { host });
    const deploy = (userId: string, agentId: string) =>
      request(`${backend.url}/api/deployments`, {
        headers: { authorization: `Bearer ${KEY}`, ...userContextHeaders({ userId, email: `${userId}@example.com` }, HMAC) },
        json: { agentId, name: agentId, config: { autoProvision: true, plan: 'solo' } },
      });
    const gatewayContainers = () => engine.containers().filter((c) => c.config.Labels?.['aop.role'] === 'gateway');
    try {
      expect((await deploy('usr_team', 'agt_team1')).status).toBe(201);
      await host.waitUntilReady('agt_team1', { timeoutMs: 10_000 });
      expect((await deploy('usr_team', 'agt_team2')).status).toBe(201);
      expect(await host.waitUntilReady('agt_team2', { timeoutMs: 10_000 })).toMatchObject({
        status: 'running',
        openclawAgentId: 'agt_team2',
        sharesGatewayWith: ['agt_team1'],
      });
      expect(gatewayContainers().map((c) => c.Name)).toEqual(['aop-agent-agt_team1']);
      expect((await deploy('usr_other', 'agt_other1')).status).toBe(201);
      expect(gatewayContainers()).toHaveLength(2);
      expect((await host.status('agt_other1')).sharesGatewayWith).toEqual([]);
    } finally {
      await backend.close();
      await host.shutdown();
      await engine.close();
    }
  });
});
