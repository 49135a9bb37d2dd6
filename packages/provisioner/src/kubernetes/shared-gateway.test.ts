import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DeviceIdentity, type GatewayConnection, connectGateway, createDeviceIdentity } from '@aop/gateway-client';
import { type FakeGatewayOptions, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentNotFoundError, type AgentSpec, SharedGatewayError } from '../host.js';
import { agentSpecs } from '../shared/agent-spec.test-support.js';
import { BUS_SKILL_DIR } from '../shared/bus-skill.js';
import { type KubernetesHostOptions, KubernetesAgentHost, kubeAgentName } from './host.js';
import { startKubeApi } from './kube-api.test-support.js';

// Customer-scoped gateways on the kubernetes provider (issue #20), against the in-memory API server: each Deployment's
// pod runs a stand-in OpenClaw (fake-gateway-ws) whose config and secret file are the pod's runtime directory under
// `volumesDir` (filled from the ConfigMap and the Secret as the init container fills it), its roster read from that
// config and changed by `config.apply` and `agents.delete` as OpenClaw checks them; `pods/exec` commands (mkdir, the
// file writes, rm) run on this machine in the pod's volumes. The other providers: src/local and src/docker
// shared-gateway tests.

const NS = 'aop-agents';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

const decode = (data: Record<string, string>) =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));

async function setup(options: Partial<KubernetesHostOptions> = {}, gatewayOptions: Partial<FakeGatewayOptions> = {}) {
  const volumesDir = await mkdtemp(join(tmpdir(), 'aop-kube-shared-'));
  cleanups.push(() => rm(volumesDir, { recursive: true, force: true }));
  const identity = createDeviceIdentity();
  let api: Awaited<ReturnType<typeof startKubeApi>> | null = null;
  const gateways = new Map<string, Awaited<ReturnType<typeof startFakeGatewayWs>>>();
  const podDir = (name: string, volume: string) => {
    const pod = api!.podsOf(NS, name).at(-1)!;
    return join(volumesDir, NS, 'pod', pod.metadata.name, 'volumes', volume);
  };
  /** The newest pod's runtime directory, filled as the init container fills it when the pod started. */
  const runtimeOf = (name: string) => {
    const dir = podDir(name, 'runtime');
    if (!existsSync(join(dir, 'openclaw.json'))) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'openclaw.json'), api!.get('configmaps', NS, name)!.data['openclaw.json']);
      writeFileSync(join(dir, 'aop-secrets.json'), decode(api!.get('secrets', NS, name)!.data)['aop-secrets.json']!);
    }
    return dir;
  };
  const gatewayOf = async (name: string) => {
    let gw = gateways.get(name);
    if (!gw) {
      gw = await startFakeGatewayWs({
        ...gatewayOptions,
        token: '',
        remoteListener: true,
        configFile: {
          read: () => readFileSync(join(runtimeOf(name), 'openclaw.json'), 'utf8'),
          write: (raw) => writeFileSync(join(runtimeOf(name), 'openclaw.json'), raw),
          resolveToken: () => JSON.parse(readFileSync(join(runtimeOf(name), 'aop-secrets.json'), 'utf8')).gatewayToken,
        },
      });
      gateways.set(name, gw);
      cleanups.push(() => gw!.close());
    }
    return gw;
  };
  // Every Deployment's gateway is listening before the host asks for its address.
  const urls = new Map<string, string>();
  api = await startKubeApi({
    autoReady: () => true,
    volumesDir,
    exec: async ({ pod, command }) => {
      if (command[0] !== 'openclaw') return null; // sh, mkdir, rm: run on this machine in the pod's volumes
      const name = [...gateways.keys()].find((n) => api!.podsOf(NS, n).some((p) => p.metadata.name === pod))!;
      const gw = gateways.get(name)!;
      const admin = await connectGateway({ url: gw.url, token: gw.currentToken(), clientId: 'cli', clientMode: 'cli', retryDeadlineMs: 0 });
      const result = await admin.request('device.pair.approve', { requestId: command[3] });
      await admin.close();
      return { stdout: `${JSON.stringify(result)}\n`, exitCode: 0 };
    },
  });
  cleanups.push(() => api!.close());
  const host = new KubernetesAgentHost({
    kubeconfig: api.kubeConfig(),
    pollMs: 5,
    readyTimeoutMs: 2_000,
    stopTimeoutMs: 2_000,
    jobTimeoutMs: 2_000,
    platformDevice: identity,
    agentsPerGateway: 3,
    serviceUrl: ({ name }) => urls.get(name) ?? 'http://127.0.0.1:9',
    ...options,
  });
  cleanups.push(() => host.shutdown());
  /** Creates an agent, its gateway's stand-in listening first when it gets a Deployment of its own. */
  const create = async (s: AgentSpec) => {
    const gw = await gatewayOf(kubeAgentName(s.agentId));
    urls.set(kubeAgentName(s.agentId), gw.remoteHttpUrl as string);
    return host.create(s);
  };
  return { api: api!, host, identity, create, gatewayOf, runtimeOf, stateDir: (name: string) => join(api!.pvcDir(NS, name), 'state') };
}

const spec = agentSpecs('Kshared', 'solo');

type Json = Record<string, any>;

async function control(url: string, token: string, identity: DeviceIdentity): Promise<GatewayConnection> {
  return connectGateway({ url: `${url.replace(/^http/, 'ws')}/`, token, device: identity, retryDeadlineMs: 0 });
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

const jobsOf = async (conn: GatewayConnection) =>
  (await conn.request<{ jobs: Array<{ id: string; enabled?: boolean }> }>('cron.list', { includeDisabled: true })).jobs;

describe('customer-scoped gateways (kubernetes host)', () => {
  it("joins a customer's later agent to its running pod, as an agent of its own with objects of its own; never another customer's", async () => {
    const { api, host, identity, create, runtimeOf, stateDir } = await setup();
    const first = spec('usr_ka');
    await create(first);
    const ready = await host.waitUntilReady(first.agentId);
    const gatewayName = kubeAgentName(first.agentId);
    const pod = api.podsOf(NS, gatewayName)[0]!.metadata.name;

    const second = spec('usr_ka', { llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-second', model: 'model-2' } });
    const secondId = second.agentId.toLowerCase();
    const joined = await create(second);
    expect(joined).toMatchObject({ agentId: second.agentId, openclawAgentId: secondId, status: 'running', url: ready.url });
    expect(joined.sharesGatewayWith).toEqual([first.agentId]);
    expect((await host.status(first.agentId)).sharesGatewayWith).toEqual([second.agentId]);
    // No Deployment of its own, the same pod; its objects are a ConfigMap and a Secret owned by the gateway's Deployment.
    expect(api.list('deployments', NS)).toHaveLength(1);
    expect(api.podsOf(NS, gatewayName).map((p) => p.metadata.name)).toEqual([pod]);
    const own = api.get('configmaps', NS, kubeAgentName(second.agentId))!;
    expect(own.metadata.labels).toMatchObject({ 'app.kubernetes.io/component': 'member', 'aop/gateway-of': gatewayName });
    expect(own.metadata.ownerReferences[0]).toMatchObject({ kind: 'Deployment', name: gatewayName });
    expect(decode(api.get('secrets', NS, kubeAgentName(second.agentId))!.data)['llm-api-key']).toBe('sk-second');

    // The gateway's objects (what its next pod starts from) and the running pod's config carry it.
    for (const raw of [
      api.get('configmaps', NS, gatewayName)!.data['openclaw.json'],
      readFileSync(join(runtimeOf(gatewayName), 'openclaw.json'), 'utf8'),
    ]) {
      const config = JSON.parse(raw) as Json;
      expect(config.agents.ownership).toBe('explicit');
      expect(config.agents.entries[secondId]).toMatchObject({
        workspace: `/var/lib/openclaw/state/workspace-${secondId}`,
        model: { primary: `platform-${secondId}/model-2` },
      });
    }
    expect(JSON.parse(decode(api.get('secrets', NS, gatewayName)!.data)['aop-secrets.json']!).members[secondId].llmApiKey).toBe(
      'sk-second',
    );
    expect(JSON.parse(readFileSync(join(runtimeOf(gatewayName), 'aop-secrets.json'), 'utf8')).members[secondId].llmApiKey).toBe(
      'sk-second',
    );
    expect(existsSync(join(stateDir(gatewayName), `workspace-${secondId}`, ...BUS_SKILL_DIR, 'SKILL.md'))).toBe(true);

    // Its spec answers the gateway's token; the gateway knows it; its workspace is its own directory.
    expect((await host.spec(second.agentId)).gatewayToken).toBe(first.gatewayToken);
    const credentials = await host.controlCredentials(second.agentId);
    const conn = await control(ready.url as string, credentials.token, identity);
    await addJob(conn, secondId, 'second-report');
    await conn.close();
    const workspace = await host.workspace(second.agentId);
    await workspace.write(['notes.md'], Buffer.from('second notes'));
    expect(readFileSync(join(stateDir(gatewayName), `workspace-${secondId}`, 'notes.md'), 'utf8')).toBe('second notes');

    // Another customer's agent, or one with variables of its own, gets a Deployment of its own.
    await create(spec('usr_kb'));
    await create(spec('usr_ka', { agentEnv: { AOP_AGENT_WALLET_KEY: '0xabc' } }));
    expect(api.list('deployments', NS)).toHaveLength(3);
    expect(await host.list()).toHaveLength(4);
  });

  it("a customer's agents created in a burst share the first one's start: a later one joins the pod still starting", async () => {
    const { api, host, create, gatewayOf } = await setup();
    const first = spec('usr_kburst');
    const gatewayName = kubeAgentName(first.agentId);
    api.setReady(NS, gatewayName, false); // its gateway runs, and answers ready once the test says so
    await create(first);
    expect((await host.status(first.agentId)).status).toBe('starting');
    // Its process has read its config, as OpenClaw does as it starts (the stand-in reads it at its first config call):
    // what the join writes now reaches it only by the apply at ready.
    const early = await connectGateway({ url: (await gatewayOf(gatewayName)).url, token: first.gatewayToken, retryDeadlineMs: 0 });
    await early.request('config.get', {});
    await early.close();
    const second = spec('usr_kburst', { llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-burst-second', model: 'model-2' } });
    const secondId = second.agentId.toLowerCase();
    expect(await create(second)).toMatchObject({ openclawAgentId: secondId, status: 'starting' });
    expect(api.list('deployments', NS)).toHaveLength(1);

    api.setReady(NS, gatewayName, true);
    const joined = await host.waitUntilReady(second.agentId);
    expect(joined).toMatchObject({ status: 'running', sharesGatewayWith: [first.agentId] });
    // Applied to the process once it answered ready (`config.apply` re-reads the secret file with its key), not only
    // written into the pod's files while it started.
    const applies = (await gatewayOf(gatewayName)).received.filter((frame) => frame.method === 'config.apply');
    expect(applies.some((frame) => JSON.parse((frame.params as { raw: string }).raw).agents.entries[secondId])).toBe(true);
  });

  it('stops a member by disabling its jobs and heartbeat (the pod runs on); the first agent stopped keeps the pod for its members', async () => {
    const { api, host, identity, create, runtimeOf } = await setup();
    const first = spec('usr_kc');
    await create(first);
    const ready = await host.waitUntilReady(first.agentId);
    const gatewayName = kubeAgentName(first.agentId);
    const second = spec('usr_kc');
    const secondId = second.agentId.toLowerCase();
    await create(second);
    const credentials = await host.controlCredentials(first.agentId);
    const conn = await control(ready.url as string, credentials.token, identity);
    const mainJob = await addJob(conn, 'main', 'main-report');
    const secondJob = await addJob(conn, secondId, 'second-report');
    const live = () => JSON.parse(readFileSync(join(runtimeOf(gatewayName), 'openclaw.json'), 'utf8')) as Json;

    expect(await host.stop(second.agentId)).toMatchObject({ status: 'stopped', readyAt: null });
    expect(api.get('deployments', NS, gatewayName)!.spec.replicas).toBe(1);
    expect((await host.status(first.agentId)).status).toBe('running');
    expect((await jobsOf(conn)).find((job) => job.id === secondJob)?.enabled).toBe(false);
    expect(live().agents.entries[secondId].heartbeat).toEqual({ every: '0m' });
    expect(api.get('configmaps', NS, kubeAgentName(second.agentId))!.metadata.annotations['aop/quiet-jobs']).toBe(
      JSON.stringify([secondJob]),
    );
    expect(await host.health(second.agentId)).toMatchObject({ ready: false });

    expect((await host.start(second.agentId)).status).toBe('running');
    expect((await jobsOf(conn)).find((job) => job.id === secondJob)?.enabled).toBe(true);
    expect(live().agents.entries[secondId].heartbeat).toEqual({ every: '30m' });

    // The first agent stopped: it shows stopped, its jobs go quiet, the pod runs on for the member.
    expect((await host.stop(first.agentId)).status).toBe('stopped');
    expect(api.get('deployments', NS, gatewayName)!.spec.replicas).toBe(1);
    expect((await host.status(second.agentId)).status).toBe('running');
    expect((await jobsOf(conn)).find((job) => job.id === mainJob)?.enabled).toBe(false);
    expect(live().agents.entries.main.heartbeat).toEqual({ every: '0m' });
    await conn.close();

    // Nobody wants it: scaled to 0. Starting the member starts it again; the first agent stays stopped.
    await host.stop(second.agentId);
    expect(api.get('deployments', NS, gatewayName)!.spec.replicas).toBe(0);
    expect((await host.status(first.agentId)).status).toBe('stopped');
    await host.start(second.agentId);
    expect((await host.waitUntilReady(second.agentId)).status).toBe('running');
    expect(api.get('deployments', NS, gatewayName)!.spec.replicas).toBe(1);
    expect((await host.status(first.agentId)).status).toBe('stopped');
    // A second replica of the backend sees the same: everything is in the cluster's objects.
    const other = new KubernetesAgentHost({ kubeconfig: api.kubeConfig(), pollMs: 5, serviceUrl: () => ready.url as string });
    cleanups.push(() => other.shutdown());
    const states = Object.fromEntries((await other.list()).map((state) => [state.agentId, state]));
    expect(states[first.agentId]).toMatchObject({ status: 'stopped', sharesGatewayWith: [second.agentId] });
    expect(states[second.agentId]).toMatchObject({ status: 'running', openclawAgentId: secondId, sharesGatewayWith: [first.agentId] });
  });

  it("never scales a sleeping gateway up for a member's stop, configuration or deletion, nor for their jobs; a member's Start does", async () => {
    const { api, host, create } = await setup({ wakeLeadMs: 1_000 });
    const first = spec('usr_kz');
    await create(first);
    await host.waitUntilReady(first.agentId);
    const gatewayName = kubeAgentName(first.agentId);
    const [second, third] = [spec('usr_kz'), spec('usr_kz')];
    await create(second);
    await create(third);
    expect(api.list('deployments', NS)).toHaveLength(1);
    // Each agent's next due job, as the idle check reads them from the gateway (shared/idle.ts `readGatewayActivity`).
    const now = Date.now();
    const due = { second: now + 60_000, third: now + 90_000, main: now + 120_000 };
    const [secondId, thirdId] = [second.agentId.toLowerCase(), third.agentId.toLowerCase()];
    await host.hibernate(first.agentId, {
      nextDueMs: due.second,
      dueByAgent: { [secondId]: due.second, [thirdId]: due.third, main: due.main },
    });
    const replicas = () => api.get('deployments', NS, gatewayName)!.spec.replicas;
    const wakesAt = async () => (await host.status(first.agentId)).wakesAt;
    const ahead = (ms: number) => new Date(ms - 1_000).toISOString();
    expect(replicas()).toBe(0);
    expect(await wakesAt()).toBe(ahead(due.second));

    // Stopped while it sleeps: the second's job no longer wakes it, the third's does.
    expect(await host.stop(second.agentId)).toMatchObject({ status: 'stopped' });
    expect(await wakesAt()).toBe(ahead(due.third));
    await host.configure(third.agentId, { config: { agents: { defaults: { heartbeat: { every: '2h' } } } } });
    await host.delete(second.agentId);
    expect(replicas()).toBe(0);
    expect(await host.status(first.agentId)).toMatchObject({ status: 'hibernated', wakesAt: ahead(due.third) });
    // What changed is in the objects its next pod starts from.
    const entries = JSON.parse(api.get('configmaps', NS, gatewayName)!.data['openclaw.json']).agents.entries;
    expect(Object.keys(entries)).toEqual(['main', third.agentId.toLowerCase()]);
    expect(entries[third.agentId.toLowerCase()].heartbeat).toEqual({ every: '2h' });

    await host.stop(third.agentId);
    expect(replicas()).toBe(0);
    expect(await wakesAt()).toBe(ahead(due.main));
    await host.start(third.agentId);
    expect(replicas()).toBe(1);
    expect((await host.waitUntilReady(third.agentId)).status).toBe('running');
  });

  it('deletes a member with agents.delete; a deleted first agent leaves the gateway to its members until the last goes', async () => {
    const { api, host, identity, create, stateDir, runtimeOf } = await setup();
    const first = spec('usr_kd');
    await create(first);
    const ready = await host.waitUntilReady(first.agentId);
    const gatewayName = kubeAgentName(first.agentId);
    const second = spec('usr_kd');
    const secondId = second.agentId.toLowerCase();
    await create(second);
    const credentials = await host.controlCredentials(first.agentId);
    const conn = await control(ready.url as string, credentials.token, identity);
    const secondJob = await addJob(conn, secondId, 'second-report');
    await mkdir(join(stateDir(gatewayName), 'agents', secondId), { recursive: true });
    await writeFile(join(stateDir(gatewayName), 'agents', secondId, 'sessions.sqlite'), 'sessions');

    await host.delete(second.agentId);
    await expect(host.status(second.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
    expect(api.get('configmaps', NS, kubeAgentName(second.agentId))).toBeUndefined();
    expect(api.get('secrets', NS, kubeAgentName(second.agentId))).toBeUndefined();
    expect((await jobsOf(conn)).some((job) => job.id === secondJob)).toBe(false);
    expect(Object.keys(JSON.parse(readFileSync(join(runtimeOf(gatewayName), 'openclaw.json'), 'utf8')).agents.entries ?? {})).not.toContain(
      secondId,
    );
    for (const gone of [`agents/${secondId}`, `workspace-${secondId}`]) expect(existsSync(join(stateDir(gatewayName), gone))).toBe(false);
    await conn.close();

    // The first agent deleted while a member remains: hidden, its sessions removed (a Job on the volume), the gateway
    // kept for the member.
    const third = spec('usr_kd');
    await create(third);
    await host.delete(first.agentId);
    await expect(host.status(first.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
    await expect(host.delete(first.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
    expect((await host.list()).map((state) => state.agentId)).toEqual([third.agentId]);
    const deployment = api.get('deployments', NS, gatewayName)!;
    expect(deployment.metadata.annotations).toMatchObject({ 'aop/retired': 'true', 'aop/agent-stopped': 'true' });
    expect(deployment.spec.replicas).toBe(1);
    const retireJob = api.calls.find(
      (c) => c.method === 'POST' && c.path.endsWith('/jobs') && (c.body as Json).metadata.labels['aop/job'] === 'retire',
    );
    expect((retireJob?.body as Json | undefined)?.spec.template.spec.containers[0].command[2]).toContain(
      "rm -rf -- 'agents/main' 'workspace/memory'",
    );
    expect(await host.waitUntilReady(third.agentId)).toMatchObject({ status: 'running', sharesGatewayWith: [] });

    // Its last member goes: the gateway's objects with it.
    await host.delete(third.agentId);
    expect(api.get('deployments', NS, gatewayName)).toBeUndefined();
    expect(api.get('configmaps', NS, gatewayName)).toBeUndefined();
    expect(api.list('configmaps', NS)).toEqual([]);
  });

  it('gives an agent whose join failed after its config was applied a pod of its own, and takes it out of the first', async () => {
    const { api, host, create, runtimeOf } = await setup({}, { failConfigApplyAfterWrite: 1 });
    const first = spec('usr_kj');
    await create(first);
    await host.waitUntilReady(first.agentId);
    const gatewayName = kubeAgentName(first.agentId);
    const second = spec('usr_kj');
    expect(await create(second)).toMatchObject({ openclawAgentId: 'main', sharesGatewayWith: [] });
    expect(api.list('deployments', NS)).toHaveLength(2);
    // The join's config.apply was written and applied, then failed; the agent was then deleted from the running pod's
    // roster the only way OpenClaw allows (a config without it is refused), and from the gateway's objects.
    expect(Object.keys(JSON.parse(readFileSync(join(runtimeOf(gatewayName), 'openclaw.json'), 'utf8')).agents.entries)).toEqual(['main']);
    expect(JSON.parse(api.get('configmaps', NS, gatewayName)!.data['openclaw.json']).agents.entries).toBeUndefined();
    expect((await host.status(first.agentId)).sharesGatewayWith).toEqual([]);
  });

  it("applies a member's model to its entry at once; refuses what needs a pod of its own; resets its memory alone", async () => {
    const { api, host, create, runtimeOf, stateDir } = await setup();
    const first = spec('usr_ke');
    await create(first);
    await host.waitUntilReady(first.agentId);
    const gatewayName = kubeAgentName(first.agentId);
    const second = spec('usr_ke');
    const secondId = second.agentId.toLowerCase();
    await create(second);

    await host.configure(second.agentId, { llm: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-new', model: 'model-3' } });
    const live = JSON.parse(readFileSync(join(runtimeOf(gatewayName), 'openclaw.json'), 'utf8')) as Json;
    expect(live.agents.entries[secondId].model).toEqual({ primary: `platform-${secondId}/model-3` });
    expect(JSON.parse(readFileSync(join(runtimeOf(gatewayName), 'aop-secrets.json'), 'utf8')).members[secondId]).toEqual({
      llmApiKey: 'sk-new',
    });
    expect((await host.spec(second.agentId)).llm).toMatchObject({ model: 'model-3', apiKey: 'sk-new' });
    await expect(host.configure(second.agentId, { agentEnv: { AOP_AGENT_X: '1' } })).rejects.toBeInstanceOf(SharedGatewayError);
    await expect(host.configure(second.agentId, { channelTokens: { telegram: 'tg' } })).rejects.toBeInstanceOf(SharedGatewayError);

    await writeFile(join(stateDir(gatewayName), `workspace-${secondId}`, 'MEMORY.md'), 'remembered');
    await host.resetMemory(second.agentId);
    const reset = api.calls.find(
      (c) => c.method === 'POST' && c.path.endsWith('/jobs') && (c.body as Json).metadata.labels['aop/job'] === 'reset-memory',
    );
    expect((reset?.body as Json | undefined)?.spec.template.spec.containers[0].command[2]).toContain(
      `rm -rf -- 'agents/${secondId}' 'workspace-${secondId}/memory' 'workspace-${secondId}/MEMORY.md'`,
    );
    expect((await host.waitUntilReady(second.agentId)).status).toBe('running');
    expect(api.list('deployments', NS)).toHaveLength(1);
  });

  it("copies the platform's skills into every workspace of the volume at each pod start, the members' too (the init container's script)", async () => {
    const { api, create } = await setup();
    const s = spec('usr_kh');
    await create(s);
    const script: string = api.get('deployments', NS, kubeAgentName(s.agentId))!.spec.template.spec.initContainers[0].command[2];
    // The script as the init container runs it, its absolute paths moved under a directory of this machine.
    const root = await mkdtemp(join(tmpdir(), 'aop-kube-prepare-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const moved = script.replace(/(\/var\/lib\/openclaw|\/etc\/openclaw|\/run\/openclaw)/g, `${root}$1`);
    await mkdir(join(root, 'etc/openclaw'), { recursive: true });
    await writeFile(join(root, 'etc/openclaw/openclaw.json'), '{}');
    await mkdir(join(root, 'etc/openclaw-secrets'), { recursive: true });
    await writeFile(join(root, 'etc/openclaw-secrets/aop-secrets.json'), '{}');
    await mkdir(join(root, 'etc/openclaw-skills/underground-bus'), { recursive: true });
    await writeFile(join(root, 'etc/openclaw-skills/underground-bus/SKILL.md'), 'skill v2');
    await mkdir(join(root, 'run/openclaw'), { recursive: true });
    const state = join(root, 'var/lib/openclaw/state');
    await mkdir(join(state, 'workspace-agt_member/.agents/skills/underground-bus'), { recursive: true });
    await writeFile(join(state, 'workspace-agt_member/.agents/skills/underground-bus/SKILL.md'), 'skill v1');
    const run = spawnSync('/bin/sh', ['-c', moved], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    for (const workspace of ['workspace', 'workspace-agt_member']) {
      expect(readFileSync(join(state, workspace, '.agents/skills/underground-bus/SKILL.md'), 'utf8')).toBe('skill v2');
    }
    expect(existsSync(join(state, 'workspace-*'))).toBe(false);
  });

  it('keeps every agent in a pod of its own unless sharing is on (and the platform device is there to apply it)', async () => {
    const off = await setup({ agentsPerGateway: 1 });
    await off.create(spec('usr_kf'));
    await off.host.waitUntilReady((await off.host.list())[0]!.agentId);
    expect((await off.create(spec('usr_kf'))).sharesGatewayWith).toEqual([]);
    expect(off.api.list('deployments', NS)).toHaveLength(2);
    const noDevice = await setup({ platformDevice: undefined });
    const first = spec('usr_kg');
    await noDevice.create(first);
    await noDevice.host.waitUntilReady(first.agentId);
    await noDevice.create(spec('usr_kg'));
    expect(noDevice.api.list('deployments', NS)).toHaveLength(2);
  });
});
