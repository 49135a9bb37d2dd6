import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AgentHost,
  HostingAgentHost,
  KubernetesAgentHost,
  dockerContainerName,
  dockerStateVolumeName,
  kubeAgentName,
} from '@aop/provisioner';
import { type DockerEngineEmulator, startDockerEngine } from '@aop/provisioner/docker-engine.test-support';
import { type KubeApiEmulator, startKubeApi } from '@aop/provisioner/kube-api.test-support';
import { type FakeHostingApi, type TestResponse, request, startFakeHostingApi, testEnv } from '@aop/testing';
import { type TestBackend, startBackend } from '../backend.test-support.js';
import { loadBackendConfig } from '../config.js';
import { TEST_HMAC, TEST_KEY, userHeaders } from './agent-access.test-support.js';
import { createAgentHost } from './agent-host.js';

/**
 * A backend whose agents run on a container or hosting provider, each against its local stand-in speaking the real
 * protocol: the Docker Engine emulator (a unix socket; exec'd commands run on this machine against the volume's
 * directory), the Kubernetes API emulator (`pods/exec` and pod logs, volumes as directories), the hosting provider's
 * GraphQL endpoint.
 */
export interface ContainerAgents {
  provider: 'docker' | 'kubernetes' | 'hosting';
  work: string;
  host: AgentHost;
  backend: TestBackend;
  /** A request as `userId` (each from its own address, so the per-IP limits stay out of the way). */
  call<T = any>(userId: string, method: string, path: string, json?: unknown): Promise<TestResponse<T>>;
  /** Deploys an agent for `userId` and waits until it runs. */
  deploy(userId: string, agentId: string): Promise<void>;
  /** Where the agent's workspace is on this machine (the volume's directory), for the test's own setup and checks. */
  workspaceDir(agentId: string): string;
  /** Adds lines to the agent's output as its gateway would print them. */
  writeLog(agentId: string, lines: string[]): void;
  close(): Promise<void>;
}

const NAMESPACE = 'aop-agents';

function caller(backend: TestBackend) {
  let client = 0;
  return <T>(userId: string, method: string, path: string, json?: unknown) =>
    request<T>(`${backend.url}/api${path}`, {
      method,
      headers: { ...userHeaders(userId), 'x-forwarded-for': `203.0.113.${(++client % 250) + 1}` },
      ...(json === undefined ? {} : { json }),
    });
}

async function deployWith(call: ReturnType<typeof caller>, host: AgentHost, userId: string, agentId: string): Promise<void> {
  const res = await call(userId, 'POST', '/deployments', { agentId, name: agentId, config: { autoProvision: true, plan: 'collective' } });
  if (res.status !== 201) throw new Error(`deploy ${agentId}: ${res.status} ${res.text}`);
  await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
}

/** The docker provider on the Docker Engine emulator; the emulated gateway seeds the workspace like OpenClaw. */
export async function startDockerAgents(prefix: string): Promise<ContainerAgents & { engine: DockerEngineEmulator }> {
  const work = await mkdtemp(join(tmpdir(), prefix));
  const image = 'ghcr.io/openclaw/openclaw:1.0.0';
  const engine = await startDockerEngine({ socketPath: join(work, 'docker.sock'), dir: work, images: { [image]: { readyDelayMs: 20 } } });
  const vars = {
    INTERNAL_API_KEY: TEST_KEY,
    HMAC_SECRET: TEST_HMAC,
    TRUST_PROXY: '127.0.0.1',
    PROVISIONER: 'docker',
    DOCKER_SOCKET: engine.socketPath,
    DOCKER_AGENT_IMAGE: image,
  };
  const host = createAgentHost(loadBackendConfig(testEnv(join(work, 'data'), vars)));
  const backend = await startBackend(vars, { host });
  const call = caller(backend);
  return {
    provider: 'docker',
    work,
    host,
    backend,
    engine,
    call,
    async deploy(userId, agentId) {
      await deployWith(call, host, userId, agentId);
      // The host pairs the platform device once the gateway is ready (exec in the container); let that settle.
      await host.controlCredentials?.(agentId);
    },
    workspaceDir: (agentId) => join(engine.volumeDir(dockerStateVolumeName(agentId)), 'workspace'),
    writeLog: (agentId, lines) => {
      for (const line of lines) engine.writeLog(dockerContainerName(agentId), 'stdout', line);
    },
    async close() {
      await backend.close();
      await host.shutdown();
      await engine.close();
      await rm(work, { recursive: true, force: true });
    },
  };
}

/**
 * The kubernetes provider on the Kubernetes API emulator. Pods become ready at once; nothing runs OpenClaw in them,
 * so `deploy` seeds the workspace on the claim's directory as the gateway would on its first start.
 */
export async function startKubeAgents(prefix: string): Promise<ContainerAgents & { api: KubeApiEmulator }> {
  const work = await mkdtemp(join(tmpdir(), prefix));
  const api = await startKubeApi({ volumesDir: join(work, 'volumes'), autoReady: () => true });
  const host = new KubernetesAgentHost({
    kubeconfig: api.kubeConfig(),
    namespace: NAMESPACE,
    pollMs: 10,
    readyTimeoutMs: 5_000,
    stopTimeoutMs: 5_000,
    jobTimeoutMs: 5_000,
  });
  const backend = await startBackend({ INTERNAL_API_KEY: TEST_KEY, HMAC_SECRET: TEST_HMAC, TRUST_PROXY: '127.0.0.1' }, { host });
  const call = caller(backend);
  const workspaceDir = (agentId: string) => join(api.pvcDir(NAMESPACE, kubeAgentName(agentId)), 'state', 'workspace');
  return {
    provider: 'kubernetes',
    work,
    host,
    backend,
    api,
    call,
    async deploy(userId, agentId) {
      await deployWith(call, host, userId, agentId);
      const ws = workspaceDir(agentId);
      await mkdir(join(ws, 'memory'), { recursive: true });
      for (const name of ['AGENTS.md', 'SOUL.md', 'IDENTITY.md', 'USER.md', 'BOOTSTRAP.md']) await writeFile(join(ws, name), `# ${name}\n`);
    },
    workspaceDir,
    writeLog(agentId, lines) {
      const pods = api.podsOf(NAMESPACE, kubeAgentName(agentId));
      const pod = pods.at(-1)?.metadata.name;
      if (!pod) throw new Error(`no pod of ${agentId}`);
      api.appendLogs(NAMESPACE, pod, lines);
    },
    async close() {
      await backend.close();
      await host.shutdown();
      await api.close();
      await rm(work, { recursive: true, force: true });
    },
  };
}

/** The hosting provider on its GraphQL stand-in; the gateway's `/readyz` is a small HTTP server on 127.0.0.1. */
export async function startHostedAgents(prefix: string): Promise<ContainerAgents & { api: FakeHostingApi }> {
  const work = await mkdtemp(join(tmpdir(), prefix));
  const api = await startFakeHostingApi({ apiKey: 'hosting-key' });
  const { createServer } = await import('node:http');
  const gateway = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(req.url === '/readyz' ? { ready: true, failing: [], uptimeMs: 1 } : { ok: true }));
  });
  await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
  const port = (gateway.address() as { port: number }).port;
  const host = new HostingAgentHost({
    apiUrl: api.url,
    apiKey: 'hosting-key',
    projectId: 'proj-1',
    environmentId: 'env-1',
    image: 'ghcr.io/openclaw/openclaw:2026.9.6',
    dataDir: join(work, 'data'),
    encryptionKey: randomBytes(32),
    pollMs: 20,
    readyTimeoutMs: 5_000,
    gatewayUrl: () => `http://127.0.0.1:${port}`,
  });
  const backend = await startBackend({ INTERNAL_API_KEY: TEST_KEY, HMAC_SECRET: TEST_HMAC, TRUST_PROXY: '127.0.0.1' }, { host });
  const call = caller(backend);
  const deploymentOf = (agentId: string) => {
    const service = [...api.services.values()].find((s) => s.name === `agent-${agentId}`);
    const deployment = [...api.deployments.values()].filter((d) => d.serviceId === service?.id).at(-1);
    if (!deployment) throw new Error(`no deployment of ${agentId}`);
    return deployment;
  };
  return {
    provider: 'hosting',
    work,
    host,
    backend,
    api,
    call,
    deploy: (userId, agentId) => deployWith(call, host, userId, agentId),
    workspaceDir: () => {
      throw new Error('a hosted agent has no workspace on this machine');
    },
    writeLog(agentId, lines) {
      deploymentOf(agentId).logs.push(...lines);
    },
    async close() {
      await backend.close();
      await host.shutdown();
      await api.close();
      await new Promise((resolve) => gateway.close(resolve));
      await rm(work, { recursive: true, force: true });
    },
  };
}
