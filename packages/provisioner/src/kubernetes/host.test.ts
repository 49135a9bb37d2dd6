import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PLAN_NAMES, PLANS } from '@aop/core';
import { connectGateway, createDeviceIdentity } from '@aop/gateway-client';
import { addRecurringJob, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentExistsError, AgentNotFoundError, type AgentSpec, HostFullError, UpdateFailedError } from '../host.js';
import { type KubeApiEmulatorOptions, startKubeApi } from './kube-api.test-support.js';
import { type KubernetesHostOptions, KubernetesAgentHost, KubernetesApiError, kubeAgentName, parseKubeQuantity } from './host.js';
import { MEMORY_PATHS, SEED_FILES } from '../local/host.js';
import { PINNED_OPENCLAW_VERSION } from '../shared/runtime.js';

// The kubernetes provider against an in-memory Kubernetes API server on 127.0.0.1 that answers the real REST paths
// and shapes (kube-api.test-support.ts); @kubernetes/client-node talks to it through an ordinary kubeconfig.

const NS = 'aop-agents';
const PLATFORM_SECRETS = ['DATABASE_URL', 'INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY', 'REDIS_URL'];
const OWNED = ['deployments', 'services', 'persistentvolumeclaims', 'secrets', 'configmaps'];

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(emulator: KubeApiEmulatorOptions = {}, options: Partial<KubernetesHostOptions> = {}) {
  const api = await startKubeApi(emulator);
  cleanups.push(() => api.close());
  const host = new KubernetesAgentHost({
    kubeconfig: api.kubeConfig(),
    pollMs: 5,
    readyTimeoutMs: 2_000,
    stopTimeoutMs: 2_000,
    jobTimeoutMs: 2_000,
    ...options,
  });
  return { api, host };
}

let n = 0;
function spec(overrides: Partial<AgentSpec> = {}): AgentSpec {
  n += 1;
  return {
    agentId: `agt_Kube${n}`,
    userId: 'usr_Owner1',
    plan: 'solo',
    config: { gateway: { bind: 'loopback' }, tools: { profile: 'messaging' }, cron: { enabled: true, maxConcurrentRuns: 2 } },
    gatewayToken: `gw-${n}-${randomBytes(8).toString('hex')}`,
    ...overrides,
  };
}

const decode = (data: Record<string, string>) =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));

/** What `openclaw devices approve <requestId> --json` does in the pod: a loopback call to its gateway as the CLI. */
async function approveAsCli(url: string, token: string, requestId: string) {
  const admin = await connectGateway({ url, token, clientId: 'cli', clientMode: 'cli', retryDeadlineMs: 0 });
  const result = await admin.request('device.pair.approve', { requestId });
  await admin.close();
  return { stdout: `${JSON.stringify(result, null, 2)}\n`, exitCode: 0 };
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('KubernetesAgentHost', () => {
  it('create makes a Deployment, Service, PVC, Secret and ConfigMap with our labels, plan resources and probes', async () => {
    const { api, host } = await setup();
    const s = spec({ plan: 'label' });
    const state = await host.create(s);
    const name = kubeAgentName(s.agentId);
    expect(name).toMatch(/^aop-agent-agt-kube\d+--[0-9a-f]{16}$/);
    expect(state).toMatchObject({
      agentId: s.agentId,
      userId: 'usr_Owner1',
      status: 'starting',
      version: PINNED_OPENCLAW_VERSION,
      url: `http://${name}.${NS}.svc:18789`,
      port: 18789,
      pid: null,
    });

    for (const plural of OWNED) {
      const object = api.get(plural, NS, name);
      expect(object, plural).toBeDefined();
      expect(object!.metadata.labels).toMatchObject({
        'app.kubernetes.io/managed-by': 'aop',
        'app.kubernetes.io/instance': name,
        'aop/agent-id': s.agentId,
        'aop/user-id': 'usr_Owner1',
      });
      expect(object!.metadata.annotations['aop/agent-id']).toBe(s.agentId);
    }

    const deployment = api.get('deployments', NS, name)!;
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
    const pod = deployment.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
    const gateway = pod.containers[0];
    expect(gateway.image).toBe(`ghcr.io/openclaw/openclaw:${PINNED_OPENCLAW_VERSION}`);
    expect(gateway.command).toEqual(['openclaw', 'gateway', 'run', '--bind', 'lan', '--port', '18789']);
    expect(gateway.resources).toEqual({ requests: { cpu: '1000m', memory: '8Gi' }, limits: { cpu: '4', memory: '8Gi' } });
    expect(gateway.livenessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 18789 }, timeoutSeconds: 5 });
    expect(gateway.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 18789 }, timeoutSeconds: 5 });
    expect(gateway.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    // The config and the secret file are in a memory-backed runtime directory the init container fills from the
    // ConfigMap and the Secret (mounted into the init container only); the state dir is on the PVC.
    const env = Object.fromEntries(gateway.env.filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]));
    expect(env.OPENCLAW_CONFIG_PATH).toBe('/run/openclaw/openclaw.json');
    expect(env.OPENCLAW_STATE_DIR).toBe('/var/lib/openclaw/state');
    expect(gateway.volumeMounts).toEqual([
      { name: 'state', mountPath: '/var/lib/openclaw' },
      { name: 'runtime', mountPath: '/run/openclaw' },
      { name: 'tmp', mountPath: '/tmp' },
    ]);
    const prepare = pod.initContainers[0];
    expect(prepare.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: 'config', mountPath: '/etc/openclaw', readOnly: true },
        { name: 'secrets', mountPath: '/etc/openclaw-secrets', readOnly: true },
        { name: 'runtime', mountPath: '/run/openclaw' },
      ]),
    );
    expect(prepare.command[2]).toContain('cp /etc/openclaw/openclaw.json /run/openclaw/openclaw.json');
    expect(prepare.command[2]).toContain('cp /etc/openclaw-secrets/aop-secrets.json /run/openclaw/aop-secrets.json');
    expect(pod.volumes).toEqual(
      expect.arrayContaining([
        { name: 'state', persistentVolumeClaim: { claimName: name } },
        { name: 'config', configMap: { name, items: [{ key: 'openclaw.json', path: 'openclaw.json' }] } },
        {
          name: 'secrets',
          secret: { secretName: name, items: [{ key: 'aop-secrets.json', path: 'aop-secrets.json' }], defaultMode: 0o440 },
        },
        { name: 'runtime', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
      ]),
    );

    const service = api.get('services', NS, name)!;
    expect(service.spec.type).toBe('ClusterIP');
    expect(service.spec.ports).toEqual([expect.objectContaining({ port: 18789, targetPort: 18789 })]);
    expect(deployment.spec.template.metadata.labels).toMatchObject(service.spec.selector);

    const pvc = api.get('persistentvolumeclaims', NS, name)!;
    expect(pvc.spec).toMatchObject({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '5Gi' } } });

    const config = JSON.parse(api.get('configmaps', NS, name)!.data['openclaw.json']);
    expect(config.gateway).toMatchObject({
      mode: 'local',
      port: 18789,
      bind: 'lan',
      auth: { mode: 'token', token: { source: 'file', provider: 'aop', id: '/gatewayToken' } },
    });
    expect(config.secrets.providers.aop).toEqual({ source: 'file', path: '/run/openclaw/aop-secrets.json', mode: 'json' });
    expect(config.cron.maxConcurrentRuns).toBeUndefined();
    expect(config.agents.defaults.workspace).toBe('/var/lib/openclaw/state/workspace');

    // The Deployment started exactly one pod from its template.
    expect(api.podsOf(NS, name)).toHaveLength(1);
    await expect(host.create({ ...s })).rejects.toBeInstanceOf(AgentExistsError);
  });

  it('sizes gateways per plan: limits from the plan catalogue, memory requested in full, a quarter of the CPU', async () => {
    const { host } = await setup();
    for (const plan of PLAN_NAMES) {
      const { memoryGib, cpus } = PLANS[plan].resources;
      expect(host.resourcesFor(plan), plan).toEqual({
        limits: { memory: `${memoryGib}Gi`, cpu: String(cpus) },
        requests: { memory: `${memoryGib}Gi`, cpu: `${cpus * 250}m` },
      });
    }
    expect(host.resourcesFor('mystery')).toEqual(host.resourcesFor('solo'));
    expect(host.resourcesFor('toString')).toEqual(host.resourcesFor('solo'));
    expect(host.resourcesFor('solo').requests).toEqual({ cpu: '250m', memory: '2Gi' });
    const { host: half } = await setup({}, { memoryRequestRatio: 0.5, cpuRequestRatio: 1 });
    expect(half.resourcesFor('collective').requests).toEqual({ cpu: '2000m', memory: '2048Mi' });
    expect(parseKubeQuantity('250000000n')).toBeCloseTo(0.25);
    expect(parseKubeQuantity('1048576Ki')).toBe(2 ** 30);
    expect(parseKubeQuantity('1.5G')).toBe(1.5e9);
  });

  it('the Secret holds the agent’s own environment only, never a platform secret', async () => {
    const saved = Object.fromEntries(PLATFORM_SECRETS.map((key) => [key, process.env[key]]));
    for (const key of PLATFORM_SECRETS) process.env[key] = `platform-${key}-${randomBytes(6).toString('hex')}`;
    try {
      const { api, host } = await setup();
      const s = spec({
        channelTokens: { telegram: 'tg-token-1', discord: 'dc-token-1', whatsapp: 'wa-link' },
        llm: { baseUrl: 'https://llm.example/v1', apiKey: 'sk-agent-key', model: 'model-a', contextWindow: 64_000 },
      });
      await host.create(s);
      const name = kubeAgentName(s.agentId);
      const secret = api.get('secrets', NS, name)!;
      const values = decode(secret.data);
      expect(Object.keys(values).sort()).toEqual(['aop-secrets.json', 'aop-whatsapp-token']);
      expect(JSON.parse(values['aop-secrets.json']!)).toEqual({
        gatewayToken: s.gatewayToken,
        telegramBotToken: 'tg-token-1',
        discordBotToken: 'dc-token-1',
        llmApiKey: 'sk-agent-key',
      });
      expect(values['aop-whatsapp-token']).toBe('wa-link');
      const everything = JSON.stringify([secret, api.get('deployments', NS, name), api.get('configmaps', NS, name)]);
      for (const key of PLATFORM_SECRETS) {
        expect(everything).not.toContain(key);
        expect(everything).not.toContain(process.env[key]);
      }
      // No secret in the container's environment (nor in what its tools inherit): OpenClaw reads them from the file.
      const env = api.get('deployments', NS, name)!.spec.template.spec.containers[0].env;
      expect(env.filter((e: any) => e.valueFrom)).toEqual([]);
      // No token in the config file: SecretRefs into the secret file.
      const configText = api.get('configmaps', NS, name)!.data['openclaw.json'];
      for (const token of [s.gatewayToken, 'tg-token-1', 'dc-token-1', 'sk-agent-key']) expect(configText).not.toContain(token);
      expect(JSON.parse(configText).channels.telegram.botToken).toEqual({ source: 'file', provider: 'aop', id: '/telegramBotToken' });

      expect(await host.spec(s.agentId)).toEqual({
        ...s,
        channelTokens: { telegram: 'tg-token-1', discord: 'dc-token-1', whatsapp: 'wa-link' },
        version: PINNED_OPENCLAW_VERSION,
      });
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it('status follows the Deployment: starting until the readiness probe passes, then running', async () => {
    const { api, host } = await setup();
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    expect((await host.status(s.agentId)).status).toBe('starting');
    const waiting = host.waitUntilReady(s.agentId);
    setTimeout(() => api.setReady(NS, name, true), 30);
    const ready = await waiting;
    expect(ready.status).toBe('running');
    expect(ready.readyAt).not.toBeNull();
    expect(ready.startedAt).not.toBeNull();
    expect(await host.list()).toEqual([expect.objectContaining({ agentId: s.agentId, status: 'running', userId: s.userId })]);
  });

  it('a pod that cannot pull its image is an error, with the reason', async () => {
    const { host } = await setup({ podProblem: () => ({ reason: 'ImagePullBackOff', message: 'Back-off pulling image "x"' }) });
    const s = spec();
    await host.create(s);
    expect(await host.status(s.agentId)).toMatchObject({
      status: 'error',
      lastError: 'gateway: ImagePullBackOff: Back-off pulling image "x"',
    });
    await expect(host.waitUntilReady(s.agentId)).rejects.toThrow(/ImagePullBackOff/);
  });

  it('stop and start scale the Deployment to 0 and 1 (JSON patch of spec.replicas)', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const stopped = await host.stop(s.agentId);
    expect(stopped.status).toBe('stopped');
    expect(api.get('deployments', NS, name)!.spec.replicas).toBe(0);
    expect(api.podsOf(NS, name)).toHaveLength(0);
    const [scaleDown] = api.callsTo('PATCH', new RegExp(`/deployments/${name}$`)).slice(-1);
    expect(scaleDown).toMatchObject({
      contentType: 'application/json-patch+json',
      body: [{ op: 'replace', path: '/spec/replicas', value: 0 }],
    });
    expect(await host.health(s.agentId)).toEqual({ live: false, ready: false, failing: [], uptimeMs: null });
    expect(await host.stats(s.agentId)).toEqual({ cpuPercent: 0, memoryBytes: 0, pids: 0, uptimeMs: 0 });

    const started = await host.start(s.agentId);
    expect(api.get('deployments', NS, name)!.spec.replicas).toBe(1);
    expect(started.status).toBe('running');
  });

  it('restart sets kubectl.kubernetes.io/restartedAt on the pod template, which replaces the pod', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const [before] = api.podsOf(NS, name);
    const started = Date.now();
    await host.restart(s.agentId);
    const deployment = api.get('deployments', NS, name)!;
    const restartedAt = deployment.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt'];
    expect(Date.parse(restartedAt)).toBeGreaterThanOrEqual(started - 1000);
    const [patch] = api.callsTo('PATCH', new RegExp(`/deployments/${name}$`)).slice(-1);
    expect(patch!.contentType).toBe('application/strategic-merge-patch+json');
    const after = api.podsOf(NS, name);
    expect(after).toHaveLength(1);
    expect(after[0]!.metadata.name).not.toBe(before!.metadata.name);
  });

  it('update clones the state volume, rolls out the new image and keeps the newest backups', async () => {
    const { api, host } = await setup({ autoReady: () => true }, { keepBackups: 1 });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const mark = api.calls.length;
    const updated = await host.update(s.agentId, { version: '2026.10.1' });
    expect(updated).toMatchObject({ status: 'running', version: '2026.10.1' });
    const deployment = api.get('deployments', NS, name)!;
    expect(deployment.spec.template.spec.containers[0].image).toBe('ghcr.io/openclaw/openclaw:2026.10.1');
    expect(deployment.metadata.annotations['aop/openclaw-version']).toBe('2026.10.1');

    const backups = api.list('persistentvolumeclaims', NS, `aop/backup-of=${name}`);
    expect(backups).toHaveLength(1);
    expect(backups[0]!.metadata.name).toMatch(new RegExp(`^${name}-backup-\\d{17}$`));
    expect(backups[0]!.spec.dataSource).toEqual({ kind: 'PersistentVolumeClaim', name });
    expect(backups[0]!.metadata.annotations['aop/openclaw-version']).toBe(PINNED_OPENCLAW_VERSION);
    // The clone was taken with the gateway stopped, and a Job mounted it (so it exists) before the new version ran.
    const steps = api.calls
      .slice(mark)
      .filter((c) => c.method === 'POST' || c.method === 'PATCH')
      .map((c) => {
        if (c.method === 'PATCH') return Array.isArray(c.body) ? `scale ${c.body[0].value}` : 'patch image';
        return `create ${c.path.split('/').pop()}`;
      });
    expect(steps).toEqual(['scale 0', 'create persistentvolumeclaims', 'create jobs', 'patch image']);
    expect(api.callsTo('POST', /\/jobs$/).map((c) => (c.body as any).metadata.labels['aop/job'])).toEqual(['backup-check']);
    expect(api.list('jobs', NS)).toEqual([]);

    await new Promise((resolve) => setTimeout(resolve, 2)); // distinct timestamps
    await host.update(s.agentId, { version: '2026.11.0' });
    const kept = api.list('persistentvolumeclaims', NS, `aop/backup-of=${name}`);
    expect(kept).toHaveLength(1);
    expect(kept[0]!.metadata.annotations['aop/openclaw-version']).toBe('2026.10.1');
  });

  it('a failed update puts the previous image back, restores the state and throws UpdateFailedError with the backup', async () => {
    const { api, host } = await setup({
      autoReady: () => true,
      podProblem: (d) =>
        d.spec.template.spec.containers[0].image.endsWith(':9999.1.1') ? { reason: 'ImagePullBackOff', message: 'manifest unknown' } : null,
    });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    await host.waitUntilReady(s.agentId);

    const error = (await host.update(s.agentId, { version: '9999.1.1' }).catch((e: unknown) => e)) as UpdateFailedError;
    expect(error).toBeInstanceOf(UpdateFailedError);
    expect(error.message).toMatch(/Update to OpenClaw 9999\.1\.1 failed: gateway: ImagePullBackOff: manifest unknown\. Rolled back to /);
    expect(error.previousVersion).toBe(PINNED_OPENCLAW_VERSION);
    expect(error.targetVersion).toBe('9999.1.1');
    expect(error.backupPath).toMatch(new RegExp(`^pvc/${NS}/${name}-backup-\\d{17}$`));
    const backupName = error.backupPath.split('/')[2]!;
    expect(api.get('persistentvolumeclaims', NS, backupName)!.spec.dataSource).toEqual({ kind: 'PersistentVolumeClaim', name });

    const deployment = api.get('deployments', NS, name)!;
    expect(deployment.spec.template.spec.containers[0].image).toBe(`ghcr.io/openclaw/openclaw:${PINNED_OPENCLAW_VERSION}`);
    expect(deployment.spec.template.spec.initContainers[0].image).toBe(`ghcr.io/openclaw/openclaw:${PINNED_OPENCLAW_VERSION}`);
    expect(deployment.metadata.annotations['aop/openclaw-version']).toBe(PINNED_OPENCLAW_VERSION);
    expect(deployment.spec.replicas).toBe(1);
    // The state was copied back from the clone by a Job that mounted both volumes.
    const restore = api.callsTo('POST', /\/jobs$/).find((c) => (c.body as any).metadata.labels['aop/job'] === 'restore')!.body as any;
    expect(restore.spec.template.spec.volumes).toEqual([
      { name: 'state', persistentVolumeClaim: { claimName: name, readOnly: false } },
      { name: 'backup', persistentVolumeClaim: { claimName: backupName, readOnly: true } },
    ]);
    expect(restore.spec.template.spec.containers[0].command.join(' ')).toMatch(/cp -a "\/backup\/\$d"/);
    expect(await host.status(s.agentId)).toMatchObject({ status: 'running', version: PINNED_OPENCLAW_VERSION });
  });

  it('an update that is not ready in time is rolled back too', async () => {
    const { api, host } = await setup(
      { autoReady: (d) => !d.spec.template.spec.containers[0].image.endsWith(':2030.1.1') },
      { readyTimeoutMs: 200 },
    );
    const s = spec();
    await host.create(s);
    const error = (await host.update(s.agentId, { version: '2030.1.1' }).catch((e: unknown) => e)) as UpdateFailedError;
    expect(error).toBeInstanceOf(UpdateFailedError);
    expect(error.message).toMatch(/not ready within 0\.2 s/);
    const name = kubeAgentName(s.agentId);
    expect(api.get('deployments', NS, name)!.spec.template.spec.containers[0].image).toMatch(new RegExp(`:${PINNED_OPENCLAW_VERSION}$`));
  });

  it('an update without a usable backup does not touch the agent', async () => {
    const { api, host } = await setup({
      autoReady: () => true,
      jobOutcome: (job) => (job.metadata.labels['aop/job'] === 'backup-check' ? 'failed' : 'succeeded'),
    });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    await expect(host.update(s.agentId, { version: '2026.10.1' })).rejects.toThrow(
      /Cannot back up the state of agent .*, so it was not updated: Job .* failed: Job has reached the specified backoff limit/,
    );
    const deployment = api.get('deployments', NS, name)!;
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.template.spec.containers[0].image).toMatch(new RegExp(`:${PINNED_OPENCLAW_VERSION}$`));
    expect(api.list('persistentvolumeclaims', NS, `aop/backup-of=${name}`)).toEqual([]);
  });

  it('resetMemory clears sessions and memory with a Job while the agent is scaled to 0, keeping the seed files', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const state = await host.resetMemory(s.agentId);
    expect(state.status).toBe('running');
    const [jobCall] = api.callsTo('POST', /\/jobs$/);
    const job = jobCall!.body as any;
    expect(job.spec.template.spec.volumes).toEqual([{ name: 'state', persistentVolumeClaim: { claimName: name, readOnly: false } }]);
    const script: string = job.spec.template.spec.containers[0].command[2];
    expect(script).toContain('cd /var/lib/openclaw/state');
    for (const path of MEMORY_PATHS) expect(script).toContain(`'${path}'`);
    for (const seed of SEED_FILES) expect(script).not.toContain(seed);
    // Scaled to 0 before the Job, back to 1 after it; the Job is removed.
    const writes = api.calls.filter((c) => c.method === 'PATCH' || (c.method === 'POST' && c.path.endsWith('/jobs')));
    expect(writes.map((c) => (c.method === 'PATCH' ? (c.body as any)[0].value : 'job'))).toEqual([1, 0, 'job', 1]);
    expect(api.list('jobs', NS)).toEqual([]);
    expect(api.get('deployments', NS, name)!.spec.replicas).toBe(1);
  });

  it('resetMemory and repair of a hibernated agent start it awake: no hibernation annotation is left behind', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const annotations = () => api.get('deployments', NS, name)!.metadata.annotations as Record<string, string>;
    for (const act of [() => host.resetMemory(s.agentId), () => host.repair(s.agentId)]) {
      expect((await host.hibernate(s.agentId, Date.now() + 3_600_000)).status).toBe('hibernated');
      expect(annotations()['aop/wake-at']).toEqual(expect.any(String));
      expect((await act()).status).toBe('running');
      expect(annotations()['aop/hibernated-since']).toBeUndefined();
      expect(annotations()['aop/wake-at']).toBeUndefined();
    }
  });

  it('configure: config changes go into the running pod’s openclaw.json without a restart; token and plan changes restart the pod', async () => {
    const volumesDir = await mkdtemp(join(tmpdir(), 'aop-kube-volumes-'));
    cleanups.push(() => rm(volumesDir, { recursive: true, force: true }));
    const { api, host } = await setup({ autoReady: () => true, volumesDir });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const [pod] = api.podsOf(NS, name);
    // What the init container and then OpenClaw left in the pod's runtime directory (OpenClaw adds `meta` when it
    // writes its config itself).
    const runtimeDir = join(volumesDir, NS, 'pod', pod!.metadata.name, 'volumes', 'runtime');
    await mkdir(runtimeDir, { recursive: true });
    const started = JSON.parse(api.get('configmaps', NS, name)!.data['openclaw.json']);
    await writeFile(join(runtimeDir, 'openclaw.json'), JSON.stringify({ ...started, meta: { lastTouchedVersion: 'x' } }));

    await host.configure(s.agentId, { config: { tools: { profile: 'coding' } } });
    expect(JSON.parse(api.get('configmaps', NS, name)!.data['openclaw.json']).tools.profile).toBe('coding');
    expect(api.podsOf(NS, name)[0]!.metadata.name).toBe(pod!.metadata.name);
    const live = JSON.parse(await readFile(join(runtimeDir, 'openclaw.json'), 'utf8'));
    expect(live.tools.profile).toBe('coding');
    expect(live.meta).toEqual({ lastTouchedVersion: 'x' });
    expect((await stat(join(runtimeDir, 'openclaw.json'))).mode & 0o777).toBe(0o600);
    expect(api.execs.at(-1)?.container).toBe('gateway');
    expect((await host.spec(s.agentId)).config).toEqual({ tools: { profile: 'coding' } });

    await host.configure(s.agentId, { channelTokens: { telegram: 'tg-new' } });
    expect(JSON.parse(decode(api.get('secrets', NS, name)!.data)['aop-secrets.json']!).telegramBotToken).toBe('tg-new');
    expect(JSON.parse(api.get('configmaps', NS, name)!.data['openclaw.json']).channels.telegram.enabled).toBe(true);
    const deployment = api.get('deployments', NS, name)!;
    expect(deployment.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt']).toBeDefined();
    expect(api.podsOf(NS, name)[0]!.metadata.name).not.toBe(pod!.metadata.name);

    await host.configure(s.agentId, { plan: 'pro' });
    const resized = api.get('deployments', NS, name)!;
    expect(resized.spec.template.spec.containers[0].resources.limits).toEqual({ memory: '4Gi', cpu: '2' });
    expect(resized.metadata.annotations['aop/plan']).toBe('pro');
    expect((await host.spec(s.agentId)).plan).toBe('pro');
  });

  it('configure moves an agent made before the runtime directory onto it: secret file in the Secret, today’s Deployment, a new pod', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec({ llm: { baseUrl: 'https://llm.example/v1', apiKey: 'sk-old', model: 'model-a' } });
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    // As the host wrote them before: the secrets as variables in the Secret and the container's environment, the
    // config read from the mounted ConfigMap.
    const secret = api.get('secrets', NS, name)!;
    const b64 = (value: string) => Buffer.from(value).toString('base64');
    api.put('secrets', NS, { ...secret, data: { OPENCLAW_GATEWAY_TOKEN: b64(s.gatewayToken), AOP_LLM_API_KEY: b64('sk-old') } });
    const deployment = api.get('deployments', NS, name)!;
    const gateway = deployment.spec.template.spec.containers[0];
    gateway.env = gateway.env
      .map((e: any) => (e.name === 'OPENCLAW_CONFIG_PATH' ? { ...e, value: '/etc/openclaw/openclaw.json' } : e))
      .concat([{ name: 'OPENCLAW_GATEWAY_TOKEN', valueFrom: { secretKeyRef: { name, key: 'OPENCLAW_GATEWAY_TOKEN' } } }]);
    api.put('deployments', NS, deployment);
    const [pod] = api.podsOf(NS, name);
    // Read back from the variables as before.
    expect(await host.spec(s.agentId)).toMatchObject({ gatewayToken: s.gatewayToken, llm: { apiKey: 'sk-old' } });

    await host.configure(s.agentId, { config: { tools: { profile: 'coding' } } });
    const values = decode(api.get('secrets', NS, name)!.data);
    expect(Object.keys(values)).toEqual(['aop-secrets.json']);
    expect(JSON.parse(values['aop-secrets.json']!)).toEqual({ gatewayToken: s.gatewayToken, llmApiKey: 'sk-old' });
    const moved = api.get('deployments', NS, name)!.spec.template.spec.containers[0];
    expect(moved.env.find((e: any) => e.name === 'OPENCLAW_CONFIG_PATH').value).toBe('/run/openclaw/openclaw.json');
    expect(moved.env.filter((e: any) => e.valueFrom)).toEqual([]);
    expect(api.podsOf(NS, name)[0]!.metadata.name).not.toBe(pod!.metadata.name);
    expect(await host.spec(s.agentId)).toMatchObject({
      gatewayToken: s.gatewayToken,
      llm: { apiKey: 'sk-old' },
      config: { tools: { profile: 'coding' } },
    });
  });

  it('repair rebuilds the Secret, ConfigMap, Service and Deployment from the stored spec and restarts', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const configMap = api.get('configmaps', NS, name)!;
    const generated = configMap.data['openclaw.json'];
    api.put('configmaps', NS, { ...configMap, data: { ...configMap.data, 'openclaw.json': '{ broken' } });
    api.remove('services', NS, name);
    const deployment = api.get('deployments', NS, name)!;
    deployment.spec.template.spec.containers[0].command = ['sleep', 'infinity'];
    api.put('deployments', NS, deployment);

    // The Deployment changed between the host's read and its replace (another writer): read again, replaced anyway.
    api.failNext((call) => call.method === 'PUT' && call.path.includes('/deployments/'), 409, 'Conflict', 'the object has been modified');
    const state = await host.repair(s.agentId);
    expect(state.status).toBe('running');
    expect(api.calls.filter((c) => c.method === 'PUT' && c.path.includes('/deployments/')).map((c) => c.status)).toEqual([409, 200]);
    expect(api.get('configmaps', NS, name)!.data['openclaw.json']).toBe(generated);
    expect(api.get('services', NS, name)!.spec.ports[0].port).toBe(18789);
    const repaired = api.get('deployments', NS, name)!;
    expect(repaired.spec.template.spec.containers[0].command).toEqual(['openclaw', 'gateway', 'run', '--bind', 'lan', '--port', '18789']);
    expect(repaired.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt']).toBeDefined();
    expect(JSON.parse(decode(api.get('secrets', NS, name)!.data)['aop-secrets.json']!).gatewayToken).toBe(s.gatewayToken);
    // The init container fixes the state dir at every start: layout, modes, stale locks.
    expect(repaired.spec.template.spec.initContainers[0].command[2]).toMatch(
      /mkdir -p .*chmod 700 .*rm -rf \/var\/lib\/openclaw\/state\/tmp\/openclaw\*/s,
    );
  });

  it('logs come from the pod log API, tail lines of the gateway container', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const [pod] = api.podsOf(NS, name);
    api.appendLogs(NS, pod!.metadata.name, ['line 1', 'line 2', 'line 3']);
    expect(await host.logs(s.agentId, { tail: 2 })).toEqual(['line 2', 'line 3']);
    const [call] = api.callsTo('GET', /\/log$/);
    expect(call!.query).toMatchObject({ container: 'gateway', tailLines: '2' });
    expect(await host.logs(s.agentId)).toEqual(['line 1', 'line 2', 'line 3']);
  });

  it('stats reads PodMetrics (nanocores as percent of one core, memory in bytes) and says when metrics-server is missing', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    await expect(host.stats(s.agentId)).rejects.toThrow(/No metrics for pod .* yet/);
    api.setPodMetrics(NS, api.podsOf(NS, name)[0]!.metadata.name, { cpu: '1250000000n', memory: '1048576Ki' });
    const stats = await host.stats(s.agentId);
    expect(stats).toMatchObject({ cpuPercent: 125, memoryBytes: 2 ** 30, pids: 0 });
    expect(stats.uptimeMs).toBeGreaterThanOrEqual(0);

    const bare = await setup({ autoReady: () => true, metricsApi: false });
    const t = spec();
    await bare.host.create(t);
    await expect(bare.host.stats(t.agentId)).rejects.toThrow(
      'Agent stats need the metrics.k8s.io API, which this cluster does not serve: install metrics-server',
    );
  });

  it('a new pod is starting until its first turn is prepared (the warm-up turn), then running; again after a restart', async () => {
    const s = spec({ llm: { baseUrl: 'https://llm.example/v1', apiKey: 'sk-a', model: 'model-a' } });
    const gw = await startFakeGatewayWs({ token: s.gatewayToken, remoteListener: true });
    cleanups.push(() => gw.close());
    const { api, host } = await setup({ autoReady: () => true }, { serviceUrl: () => gw.remoteHttpUrl as string });
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    expect(api.get('deployments', NS, name)!.metadata.annotations['aop/first-turn']).toBe('prepare');
    const warmUps = () =>
      gw.httpReceived.filter((r) => r.path === '/v1/chat/completions' && /Platform warm-up/.test(r.body?.messages?.[0]?.content ?? ''));
    // Ready, but its first turn not prepared yet: starting; reading the state starts the warm-up.
    expect((await host.status(s.agentId)).status).toBe('starting');
    expect((await host.waitUntilReady(s.agentId)).status).toBe('running');
    expect(warmUps()).toHaveLength(1);
    expect(warmUps()[0]!.authorization).toBe(`Bearer ${s.gatewayToken}`);
    const [pod] = api.podsOf(NS, name);
    expect(api.get('deployments', NS, name)!.metadata.annotations['aop/prepared-pod']).toBe(pod!.metadata.uid);
    expect((await host.status(s.agentId)).status).toBe('running');

    await host.restart(s.agentId);
    expect((await host.waitUntilReady(s.agentId)).status).toBe('running');
    expect(warmUps()).toHaveLength(2);

    // An agent whose config names no model has no first turn to prepare: running once ready.
    const plain = spec();
    await host.create(plain);
    expect(api.get('deployments', NS, kubeAgentName(plain.agentId))!.metadata.annotations['aop/first-turn']).toBeUndefined();
    expect((await host.status(plain.agentId)).status).toBe('running');
  });

  it("asks for a new pod when OpenClaw's scheduler did not start in one, twice in a row at most, then says so while it runs", async () => {
    const FAILED = '[cron] failed to start: StateDatabaseCoordinatorContentionError: another OpenClaw process owns state-lifecycle';
    const llm = { baseUrl: 'https://llm.example/v1', apiKey: 'sk-a', model: 'model-a' };
    const race = spec({ llm });
    const broken = spec({ llm, gatewayToken: race.gatewayToken });
    const gw = await startFakeGatewayWs({ token: race.gatewayToken, remoteListener: true });
    cleanups.push(() => gw.close());
    // The first pod of `race` and the first three of `broken` print OpenClaw's line as they start.
    const failing = new Map([
      [kubeAgentName(race.agentId), 1],
      [kubeAgentName(broken.agentId), 3],
    ]);
    const printed = new Set<string>();
    let emulator: Awaited<ReturnType<typeof setup>>['api'] | undefined;
    const { api, host } = await setup(
      {
        autoReady: (deployment) => {
          const name = deployment.metadata.name as string;
          for (const pod of emulator?.podsOf(NS, name) ?? []) {
            if (printed.has(pod.metadata.uid) || (failing.get(name) ?? 0) <= 0) continue;
            printed.add(pod.metadata.uid);
            failing.set(name, (failing.get(name) ?? 0) - 1);
            emulator?.appendLogs(NS, pod.metadata.name, ['fake openclaw starting', FAILED]);
          }
          return true;
        },
      },
      { serviceUrl: () => gw.remoteHttpUrl as string },
    );
    emulator = api;
    const annotations = (agentId: string) => api.get('deployments', NS, kubeAgentName(agentId))!.metadata.annotations;
    const podUid = (agentId: string) => api.podsOf(NS, kubeAgentName(agentId)).at(-1)!.metadata.uid as string;

    await host.create(race);
    expect(await host.waitUntilReady(race.agentId, { timeoutMs: 20_000 })).toMatchObject({ status: 'running', schedulerDown: null });
    // Its second pod is the one prepared; the count was cleared by it.
    expect(annotations(race.agentId)['aop/prepared-pod']).toBe(podUid(race.agentId));
    expect(printed.has(podUid(race.agentId))).toBe(false);
    expect(annotations(race.agentId)['aop/scheduler-restarts']).toBeUndefined();

    await host.create(broken);
    await vi.waitFor(async () => expect((await host.status(broken.agentId)).status).toBe('running'), { timeout: 20_000, interval: 50 });
    const down = await host.status(broken.agentId);
    expect(down.schedulerDown).toMatch(
      /^OpenClaw's scheduler did not start: scheduled jobs and heartbeats do not run until the agent is restarted$/,
    );
    expect(printed.has(podUid(broken.agentId))).toBe(true);
    expect(annotations(broken.agentId)['aop/scheduler-restarts']).toBe('2');
    // A restart by request: a new pod whose scheduler starts; nothing is down, the count is gone.
    await host.restart(broken.agentId);
    await vi.waitFor(async () => expect(await host.status(broken.agentId)).toMatchObject({ status: 'running', schedulerDown: null }), {
      timeout: 20_000,
      interval: 50,
    });
    expect(printed.has(podUid(broken.agentId))).toBe(false);
    expect(annotations(broken.agentId)['aop/scheduler-restarts']).toBeUndefined();
  });

  it('a pod whose warm-up cannot run is marked prepared all the same (running, not stuck starting)', async () => {
    const { api, host } = await setup({ autoReady: () => true }, { serviceUrl: () => `http://127.0.0.1:${1}` });
    const s = spec({ llm: { baseUrl: 'https://llm.example/v1', apiKey: 'sk-a', model: 'model-a' } });
    await host.create(s);
    expect((await host.waitUntilReady(s.agentId)).status).toBe('running');
    const [pod] = api.podsOf(NS, kubeAgentName(s.agentId));
    expect(api.get('deployments', NS, kubeAgentName(s.agentId))!.metadata.annotations['aop/prepared-pod']).toBe(pod!.metadata.uid);
  });

  it('health probes /healthz and /readyz at the service URL, with the gateway token', async () => {
    const s = spec();
    const seen: string[] = [];
    const gateway: Server = createServer((req, res) => {
      seen.push(`${req.url} ${req.headers.authorization ?? '-'}`);
      if (req.url === '/healthz') return res.writeHead(200).end('{"ok":true,"status":"live"}');
      const authorized = req.headers.authorization === `Bearer ${s.gatewayToken}`;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(authorized ? { ready: true, failing: [], uptimeMs: 4321 } : { ready: true }));
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => gateway.close(() => resolve())));
    const port = (gateway.address() as AddressInfo).port;
    const { host } = await setup(
      {},
      { serviceUrl: ({ agentId }) => (agentId === s.agentId ? `http://127.0.0.1:${port}` : 'http://127.0.0.1:1') },
    );
    await host.create(s);
    expect(await host.health(s.agentId)).toEqual({ live: true, ready: true, failing: [], uptimeMs: 4321 });
    expect(seen).toEqual(['/healthz -', `/readyz Bearer ${s.gatewayToken}`]);
    expect((await host.status(s.agentId)).url).toBe(`http://127.0.0.1:${port}`);

    const other = spec();
    await host.create(other);
    expect(await host.health(other.agentId)).toEqual({ live: false, ready: false, failing: [], uptimeMs: null });
  });

  it('delete removes every object including the state volume and its backups; unknown agents are not found', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec();
    await host.create(s);
    const keep = spec();
    await host.create(keep);
    await host.update(s.agentId, { version: '2026.10.1' });
    const name = kubeAgentName(s.agentId);
    expect(api.list('persistentvolumeclaims', NS, `app.kubernetes.io/instance=${name}`)).toHaveLength(2);

    await host.delete(s.agentId);
    for (const plural of [...OWNED, 'pods', 'jobs']) {
      expect(api.list(plural, NS, `app.kubernetes.io/instance=${name}`), plural).toEqual([]);
    }
    expect((await host.list()).map((state) => state.agentId)).toEqual([keep.agentId]);
    await expect(host.delete(s.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
    await expect(host.delete('agt_NeverWas')).rejects.toBeInstanceOf(AgentNotFoundError);
    await expect(host.status('agt_NeverWas')).rejects.toBeInstanceOf(AgentNotFoundError);
    await expect(host.start('../etc')).rejects.toBeInstanceOf(AgentNotFoundError);
  });

  it('ids that differ only in case get their own objects, and an object made for another id is never used', async () => {
    const { api, host } = await setup();
    await host.create(spec({ agentId: 'abc' }));
    await host.create(spec({ agentId: 'ABC' }));
    expect(kubeAgentName('abc')).toBe('aop-agent-abc');
    expect(kubeAgentName('ABC')).toMatch(/^aop-agent-abc--[0-9a-f]{16}$/);
    expect((await host.status('ABC')).agentId).toBe('ABC');
    expect((await host.list()).map((state) => state.agentId).sort()).toEqual(['ABC', 'abc']);

    const foreign = api.get('deployments', NS, 'aop-agent-abc')!;
    foreign.metadata.name = 'aop-agent-xyz';
    api.put('deployments', NS, foreign); // claims to be agent `abc`
    await expect(host.status('xyz')).rejects.toBeInstanceOf(AgentNotFoundError);
    await expect(host.delete('xyz')).rejects.toBeInstanceOf(AgentNotFoundError);
    expect(api.get('deployments', NS, 'aop-agent-xyz')).toBeDefined();
  });

  it('a ResourceQuota rejection is HostFullError and leaves nothing behind', async () => {
    const { api, host } = await setup();
    api.failNext(
      (call) => call.method === 'POST' && call.path.endsWith('/persistentvolumeclaims'),
      403,
      'Forbidden',
      'persistentvolumeclaims "x" is forbidden: exceeded quota: agents, requested: requests.storage=5Gi, used: requests.storage=100Gi, limited: requests.storage=100Gi',
    );
    const s = spec();
    const error = await host.create(s).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostFullError);
    expect((error as HostFullError).message).toMatch(/^No room for another agent: .*exceeded quota/);
    const name = kubeAgentName(s.agentId);
    for (const plural of OWNED) expect(api.get(plural, NS, name), plural).toBeUndefined();
  });

  it('an unreachable API server or bad credentials are clear errors', async () => {
    const port = await closedPort();
    const kubeconfig = new KubeConfig();
    kubeconfig.loadFromOptions({
      clusters: [{ name: 'gone', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'gone', token: 't' }],
      contexts: [{ name: 'gone', cluster: 'gone', user: 'gone' }],
      currentContext: 'gone',
    });
    const host = new KubernetesAgentHost({ kubeconfig, requestTimeoutMs: 2_000 });
    const error = await host.status('agt_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubernetesApiError);
    expect((error as Error).message).toBe(
      `Kubernetes API at http://127.0.0.1:${port} is unreachable (ECONNREFUSED) while trying to read deployment aop-agent-agt-1--${kubeAgentName('agt_1').split('--')[1]}`,
    );
    await expect(host.list()).rejects.toThrow(/is unreachable \(ECONNREFUSED\) while trying to list/);

    const { api } = await setup();
    const wrong = api.kubeConfig();
    wrong.users[0] = { ...wrong.users[0]!, token: 'not-the-token' };
    const rejected = new KubernetesAgentHost({ kubeconfig: wrong });
    await expect(rejected.create(spec())).rejects.toThrow(
      `Kubernetes API at ${api.url} rejected the credentials (401) while trying to read deployment`,
    );
    expect(() => new KubernetesAgentHost({})).toThrow(/No Kubernetes cluster configured/);
  });
});

// The backend reaches a gateway through its Service, which OpenClaw sees as a non-loopback peer. The host pairs the
// platform device and approves its request with `openclaw devices approve` exec'd in the pod (the API server's exec
// subresource over WebSocket); the exec handler here does what the CLI does inside the pod: a loopback call.
describe('KubernetesAgentHost platform device pairing', () => {
  async function pairingSetup(cli: 'works' | 'fails' = 'works', hostOptions: Partial<KubernetesHostOptions> = {}) {
    const s = spec();
    const gw = await startFakeGatewayWs({ token: s.gatewayToken, remoteListener: true });
    cleanups.push(() => gw.close());
    const identity = createDeviceIdentity();
    const { api, host } = await setup(
      {
        autoReady: () => true,
        exec: async ({ command }) => {
          if (cli === 'fails') {
            return { stderr: `No pending device request matches ${command[3]}. Run \`openclaw devices list\` and retry.\n`, exitCode: 1 };
          }
          return approveAsCli(gw.url, s.gatewayToken, command[3]!);
        },
      },
      { platformDevice: identity, serviceUrl: () => gw.remoteHttpUrl as string, ...hostOptions },
    );
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    return { s, gw, identity, api, host };
  }

  it('pairs through the Service, approving in the gateway container; verified once per pod; `repair` checks again', async () => {
    const { s, gw, identity, api, host } = await pairingSetup();
    const credentials = await host.controlCredentials(s.agentId);
    const paired = gw.pairing.paired.get(identity.deviceId);
    expect(paired).toMatchObject({ remoteIp: '172.17.0.1' });
    expect(credentials).toEqual({ token: s.gatewayToken, device: { identity, deviceToken: paired?.tokens.operator?.token } });
    const [pod] = api.list('pods', NS);
    expect(api.execs).toEqual([
      {
        namespace: NS,
        pod: pod?.metadata.name,
        container: 'gateway',
        command: ['openclaw', 'devices', 'approve', expect.any(String), '--json'],
      },
    ]);
    const exec = api.calls.find((c) => c.path.endsWith('/exec'));
    expect(exec?.query).toMatchObject({ container: 'gateway', stdout: 'true', stderr: 'true', stdin: 'false', tty: 'false' });
    expect(JSON.stringify(exec?.query)).not.toContain(s.gatewayToken);

    // Same pod: nothing to check. `repair`: one signed connect, still paired, no exec.
    const connects = gw.connectAttempts.length;
    expect(await host.controlCredentials(s.agentId)).toEqual(credentials);
    expect(gw.connectAttempts.length).toBe(connects);
    expect(await host.controlCredentials(s.agentId, { repair: true })).toEqual(credentials);
    expect(gw.connectAttempts.slice(connects)).toEqual([{ ok: true }]);
    expect(api.execs).toHaveLength(1);

    // The gateway forgot the device: `repair` approves it again.
    gw.pairing.paired.delete(identity.deviceId);
    const again = await host.controlCredentials(s.agentId, { repair: true });
    expect(api.execs).toHaveLength(2);
    expect(again.device?.deviceToken).toBe(gw.pairing.paired.get(identity.deviceId)?.tokens.operator?.token);
  });

  it('hibernates an idle agent (scaled to 0, annotated, volume kept), seen asleep by every replica, woken by start and before its next due job', async () => {
    const { s, gw, identity, api, host } = await pairingSetup('works', { idleMs: 300, idleCheckMs: 100, wakeLeadMs: 1_000 });
    const name = kubeAgentName(s.agentId);
    const annotations = () => api.get('deployments', NS, name)!.metadata.annotations as Record<string, string>;

    await vi.waitFor(async () => expect((await host.status(s.agentId)).status).toBe('hibernated'), { timeout: 10_000, interval: 50 });
    expect(api.get('deployments', NS, name)!.spec.replicas).toBe(0);
    expect(api.podsOf(NS, name)).toHaveLength(0);
    expect(api.get('persistentvolumeclaims', NS, name)).toBeTruthy();
    expect(annotations()['aop/hibernated-since']).toEqual(expect.any(String));
    expect(annotations()['aop/wake-at']).toBeUndefined();
    // The cluster is the source of truth: another backend replica sees it asleep too, with no job to wake it for.
    const replica = new KubernetesAgentHost({ kubeconfig: api.kubeConfig(), pollMs: 5 });
    expect(await replica.status(s.agentId)).toMatchObject({ status: 'hibernated', wakesAt: null });
    await replica.shutdown();

    // Start (what a message does) wakes it: scaled to 1, its hibernation annotations gone in the same patch.
    await host.start(s.agentId);
    expect(await host.waitUntilReady(s.agentId)).toMatchObject({ status: 'running' });
    expect(annotations()['aop/hibernated-since']).toBeUndefined();

    // With a job due in 6 s it sleeps until 1 s (the wake lead) before the job, then is scaled up by the idle check.
    const conn = await connectGateway({ url: gw.remoteUrl as string, token: s.gatewayToken, device: identity, retryDeadlineMs: 0 });
    const dueAt = await addRecurringJob(conn, 6_000);
    await conn.close();
    await vi.waitFor(async () => expect((await host.status(s.agentId)).status).toBe('hibernated'), { timeout: 5_000, interval: 50 });
    expect(Date.parse(annotations()['aop/wake-at'] as string)).toBe(dueAt - 1_000);
    expect((await host.status(s.agentId)).wakesAt).toBe(new Date(dueAt - 1_000).toISOString());
    await vi.waitFor(async () => expect((await host.status(s.agentId)).status).toBe('running'), { timeout: 10_000, interval: 50 });
    // At the last idle check (every 100 ms) before its wake time, not one after it.
    expect(Date.now()).toBeGreaterThanOrEqual(dueAt - 1_000 - 100);
    expect(Date.now()).toBeLessThan(dueAt);

    // Stop is not sleep.
    expect((await host.stop(s.agentId)).status).toBe('stopped');
    expect(annotations()['aop/hibernated-since']).toBeUndefined();
  });

  it('reports a failed approval with the CLI’s exit code and message; a stopped agent cannot be paired', async () => {
    const { s, gw, host } = await pairingSetup('fails');
    await expect(host.controlCredentials(s.agentId)).rejects.toThrow(
      /^openclaw devices approve <requestId> exited with code 1: No pending device request matches [0-9a-f-]+\. Run/,
    );
    expect(gw.pairing.paired.size).toBe(0);
    await host.stop(s.agentId);
    await expect(host.controlCredentials(s.agentId)).rejects.toThrow(`Agent ${s.agentId} is not running: its gateway cannot be paired`);
  });
});

// Warm pods (issue #20): the pool's objects are an agent's objects under a pool token; an agent adopts one in place.
// Each pod's gateway is a stand-in OpenClaw (fake-gateway-ws) whose config and secret file are the pod's runtime
// directory under `volumesDir`, filled from the ConfigMap and the Secret as the init container fills it; `pods/exec`
// writes land there (the emulator runs `sh`/`head`/`mv` on this machine), and `openclaw devices approve` is the CLI's
// loopback call.
describe('KubernetesAgentHost warm pool', () => {
  async function poolSetup(options: Partial<KubernetesHostOptions> = {}) {
    const volumesDir = await mkdtemp(join(tmpdir(), 'aop-kube-warm-'));
    cleanups.push(() => rm(volumesDir, { recursive: true, force: true }));
    const identity = createDeviceIdentity();
    const gateways: Array<Awaited<ReturnType<typeof startFakeGatewayWs>>> = [];
    const assigned = new Map<string, number>(); // Deployment name → gateway
    let api: Awaited<ReturnType<typeof startKubeApi>> | null = null;
    /** The newest pod's runtime directory, filled as the init container fills it when the pod started. */
    const runtimeOf = (name: string) => {
      const pod = api!.podsOf(NS, name).at(-1)!;
      const dir = join(volumesDir, NS, 'pod', pod.metadata.name, 'volumes', 'runtime');
      if (!existsSync(join(dir, 'openclaw.json'))) {
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'openclaw.json'), api!.get('configmaps', NS, name)!.data['openclaw.json']);
        writeFileSync(join(dir, 'aop-secrets.json'), decode(api!.get('secrets', NS, name)!.data)['aop-secrets.json']!);
      }
      return dir;
    };
    const nameOf = (index: number) => [...assigned].find(([, i]) => i === index)?.[0] ?? '';
    for (let index = 0; index < 4; index += 1) {
      const gw = await startFakeGatewayWs({
        token: '',
        remoteListener: true,
        configFile: {
          read: () => readFileSync(join(runtimeOf(nameOf(index)), 'openclaw.json'), 'utf8'),
          // Like OpenClaw, a config it writes itself carries its own `meta` block.
          write: (raw) =>
            writeFileSync(
              join(runtimeOf(nameOf(index)), 'openclaw.json'),
              JSON.stringify({ ...JSON.parse(raw), meta: { by: 'openclaw' } }),
            ),
          resolveToken: () => JSON.parse(readFileSync(join(runtimeOf(nameOf(index)), 'aop-secrets.json'), 'utf8')).gatewayToken,
        },
      });
      cleanups.push(() => gw.close());
      gateways.push(gw);
    }
    const gatewayOf = (name: string) => {
      if (!assigned.has(name)) assigned.set(name, assigned.size);
      return gateways[assigned.get(name)!]!;
    };
    const hostOptions: Partial<KubernetesHostOptions> = {
      platformDevice: identity,
      warmPool: 1,
      refillQuietMs: 0,
      serviceUrl: ({ name }) => gatewayOf(name).remoteHttpUrl as string,
      ...options,
    };
    const started = await setup(
      {
        autoReady: () => true,
        volumesDir,
        exec: async ({ pod, command }) => {
          if (command[0] !== 'openclaw') return null; // sh, cat: run on this machine in the pod's volumes
          const name = [...assigned.keys()].find((n) => api!.podsOf(NS, n).some((p) => p.metadata.name === pod))!;
          const gw = gatewayOf(name);
          return approveAsCli(gw.url, gw.currentToken(), command[3]!);
        },
      },
      hostOptions,
    );
    api = started.api;
    cleanups.push(() => started.host.shutdown());
    /** Another backend (replica, or a new release) on the same namespace. */
    const another = (overrides: Partial<KubernetesHostOptions>) => {
      const host = new KubernetesAgentHost({
        kubeconfig: api!.kubeConfig(),
        pollMs: 5,
        readyTimeoutMs: 2_000,
        ...hostOptions,
        ...overrides,
      });
      cleanups.push(() => host.shutdown());
      return host;
    };
    const warmDeployments = () => api!.list('deployments', NS).filter((d) => d.metadata.labels['aop/warm-pool'] === 'true');
    const readyWarm = async () => {
      await vi.waitFor(
        () => {
          const [warm] = warmDeployments();
          expect(warm?.metadata.annotations['aop/warm-ready']).toBeDefined();
        },
        { timeout: 10_000, interval: 20 },
      );
      return warmDeployments()[0]!;
    };
    return { ...started, identity, gatewayOf, runtimeOf, readyWarm, warmDeployments, another };
  }

  it('keeps a warm pod warmed up and paired; an agent adopts it in place, its token and config live at once; the pool refills', async () => {
    const { api, host, identity, gatewayOf, runtimeOf, readyWarm, warmDeployments, another } = await poolSetup();
    await host.restore();
    const warm = await readyWarm();
    const name = warm.metadata.name as string;
    expect(name).toMatch(/^aop-agent-warm-[0-9a-f]{12}$/);
    // Nobody's agent: not listed, the smallest plan's resources, its first turn prepared, the platform device paired.
    expect(await host.list()).toEqual([]);
    expect(warm.spec.template.spec.containers[0].resources).toEqual(host.resourcesFor('solo'));
    const gw = gatewayOf(name);
    const poolToken = gw.currentToken();
    expect(gw.httpReceived.some((r) => r.path === '/v1/chat/completions' && r.authorization === `Bearer ${poolToken}`)).toBe(true);
    expect(gw.pairing.paired.has(identity.deviceId)).toBe(true);
    expect(host.warmPoolStatus()).toMatchObject({ target: 1, ready: 1, starting: 0, lastError: null });
    const [pod] = api.podsOf(NS, name);

    const s = spec({ plan: 'solo', llm: { baseUrl: 'https://llm.example/v1', apiKey: 'sk-agent', model: 'model-a' } });
    const state = await host.create(s);
    // The same pod, now the agent's: running with the agent's token (the pool's refused), its config applied live.
    expect(state).toMatchObject({ agentId: s.agentId, userId: s.userId, status: 'running', url: gw.remoteHttpUrl });
    expect(api.podsOf(NS, name).map((p) => p.metadata.name)).toEqual([pod!.metadata.name]);
    expect(gw.currentToken()).toBe(s.gatewayToken);
    const models = (token: string) => fetch(`${gw.remoteHttpUrl}/v1/models`, { headers: { authorization: `Bearer ${token}` } });
    expect((await models(s.gatewayToken)).status).toBe(200);
    expect((await models(poolToken)).status).toBe(401);
    const live = JSON.parse(readFileSync(join(runtimeOf(name), 'openclaw.json'), 'utf8'));
    expect(live.models.providers.platform.models[0].id).toBe('model-a');
    expect(live.meta).toEqual({ by: 'openclaw' });
    const secretFile = join(runtimeOf(name), 'aop-secrets.json');
    expect(JSON.parse(readFileSync(secretFile, 'utf8'))).toEqual({ gatewayToken: s.gatewayToken, llmApiKey: 'sk-agent' });
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    // Its objects are the agent's: found by its id, labelled and annotated as its own; the next pod starts from them.
    const deployment = api.get('deployments', NS, name)!;
    expect(deployment.metadata.labels['aop/warm-pool']).toBeUndefined();
    expect(deployment.metadata.annotations).toMatchObject({ 'aop/agent-id': s.agentId, 'aop/user-id': s.userId, 'aop/plan': 'solo' });
    expect(deployment.metadata.annotations['aop/adopting-since']).toBeUndefined();
    for (const plural of OWNED) expect(api.get(plural, NS, name)!.metadata.annotations['aop/agent-id'], plural).toBe(s.agentId);
    expect(await host.spec(s.agentId)).toMatchObject({ agentId: s.agentId, gatewayToken: s.gatewayToken, llm: { apiKey: 'sk-agent' } });
    expect((await host.list()).map((a) => a.agentId)).toEqual([s.agentId]);
    expect(await host.controlCredentials(s.agentId)).toMatchObject({ token: s.gatewayToken, device: { identity } });
    await expect(host.create({ ...s })).rejects.toBeInstanceOf(AgentExistsError);
    // Also when no warm pod is there to take (the id is known under the pool's name, not only under its own).
    await expect(another({ warmPool: 0 }).create({ ...s })).rejects.toBeInstanceOf(AgentExistsError);
    expect(api.get('deployments', NS, kubeAgentName(s.agentId))).toBeUndefined();

    // The pool refills with a pod of its own.
    await vi.waitFor(() => expect(warmDeployments().map((d) => d.metadata.annotations['aop/warm-ready'])).toEqual([expect.any(String)]), {
      timeout: 10_000,
      interval: 20,
    });
    expect(warmDeployments()[0]!.metadata.name).not.toBe(name);

    // Later life on the pool's objects: a restart is a new pod from the agent's own objects; delete removes them all.
    await host.restart(s.agentId);
    expect(api.podsOf(NS, name)[0]!.metadata.name).not.toBe(pod!.metadata.name);
    await host.delete(s.agentId);
    for (const plural of OWNED) expect(api.get(plural, NS, name), plural).toBeUndefined();
    await expect(host.status(s.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
  });

  it('agents it cannot serve start pods of their own: another plan’s resources, variables of their own', async () => {
    const { api, host, readyWarm } = await poolSetup();
    await host.restore();
    const warm = await readyWarm();
    const big = spec({ plan: 'label' });
    await host.create(big);
    const withEnv = spec({ agentEnv: { AOP_AGENT_WALLET_KEY: 'k' } });
    await host.create(withEnv);
    for (const s of [big, withEnv]) expect(api.get('deployments', NS, kubeAgentName(s.agentId)), s.agentId).toBeDefined();
    expect(api.get('deployments', NS, warm.metadata.name)!.metadata.labels['aop/warm-pool']).toBe('true');
  });

  it('a failed adoption starts the agent in a new pod from its own objects; nothing of the pool is left in its name', async () => {
    const { api, host, readyWarm } = await poolSetup();
    await host.restore();
    const warm = await readyWarm();
    const name = warm.metadata.name as string;
    const [pod] = api.podsOf(NS, name);
    // The pod's runtime directory cannot be written: the secret file's write fails.
    api.options.exec = async ({ command }) => (command[0] === 'sh' ? { stderr: 'sh: read-only file system', exitCode: 1 } : null);
    const s = spec();
    const state = await host.create(s);
    expect(state.agentId).toBe(s.agentId);
    expect(api.podsOf(NS, name)[0]!.metadata.name).not.toBe(pod!.metadata.name);
    const deployment = api.get('deployments', NS, name)!;
    expect(deployment.metadata.annotations['aop/adopting-since']).toBeUndefined();
    expect(deployment.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt']).toBeDefined();
    expect(JSON.parse(decode(api.get('secrets', NS, name)!.data)['aop-secrets.json']!).gatewayToken).toBe(s.gatewayToken);
    expect(JSON.parse(api.get('configmaps', NS, name)!.data['aop-agent.json']).agentId).toBe(s.agentId);
  });

  it('every replica fills toward one target and may adopt a pod another made; a new release replaces a warm pod of the previous OpenClaw version', async () => {
    const { api, host, readyWarm, warmDeployments, another, gatewayOf } = await poolSetup();
    await host.restore();
    const first = (await readyWarm()).metadata.name;
    // A second replica finds the namespace's pool full.
    const replica = another({});
    await replica.restore();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(warmDeployments().map((d) => d.metadata.name)).toEqual([first]);
    expect(replica.warmPoolStatus()).toMatchObject({ target: 1, ready: 1 });
    // A replica that neither fills nor adopts sees the pool change at its next look (a status read starts one).
    const observer = another({});
    expect(observer.warmPoolStatus()).toMatchObject({ target: 1, ready: 0 });
    await vi.waitFor(() => expect(observer.warmPoolStatus()).toMatchObject({ target: 1, ready: 1 }), { timeout: 5_000, interval: 20 });
    // The replica that did not make it adopts it: it pairs under the pool token first, then applies the agent's.
    const s = spec();
    expect(await replica.create(s)).toMatchObject({ agentId: s.agentId, status: 'running' });
    expect(gatewayOf(first).currentToken()).toBe(s.gatewayToken);
    expect(api.get('deployments', NS, first)!.metadata.annotations['aop/agent-id']).toBe(s.agentId);
    await vi.waitFor(() => expect(warmDeployments().map((d) => d.metadata.annotations['aop/warm-ready'])).toEqual([expect.any(String)]), {
      timeout: 10_000,
      interval: 20,
    });
    const second = warmDeployments()[0]!.metadata.name;
    // A release pinning another OpenClaw version removes it and warms one of its own.
    const release = another({ defaultVersion: '2026.10.1' });
    await release.restore();
    await vi.waitFor(
      () => {
        const [warm] = warmDeployments();
        expect(warm?.metadata.name).not.toBe(second);
        expect(warm?.metadata.annotations['aop/openclaw-version']).toBe('2026.10.1');
        expect(warm?.metadata.annotations['aop/warm-ready']).toBeDefined();
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(warmDeployments()).toHaveLength(1);
    for (const plural of OWNED) expect(api.get(plural, NS, second), plural).toBeUndefined();

    // A warm pod whose replica stopped before making it ready (never marked, long past a start) is replaced too.
    const third = warmDeployments()[0]!;
    delete third.metadata.annotations['aop/warm-ready'];
    third.metadata.creationTimestamp = new Date(Date.now() - 3_600_000).toISOString();
    api.put('deployments', NS, third);
    await another({ defaultVersion: '2026.10.1' }).restore();
    await vi.waitFor(
      () => {
        const [warm] = warmDeployments();
        expect(warm?.metadata.name).not.toBe(third.metadata.name);
        expect(warm?.metadata.annotations['aop/warm-ready']).toBeDefined();
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(api.get('deployments', NS, third.metadata.name)).toBeUndefined();
    // The agent on the first one is untouched.
    expect((await release.status(s.agentId)).status).toBe('running');
  });

  it('an adoption cut short (its backend stopped) shows as an error after two minutes; Restart starts the agent from its own objects', async () => {
    const { api, host } = await setup({ autoReady: () => true });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const marked = (since: Date) => {
      const deployment = api.get('deployments', NS, name)!;
      deployment.metadata.annotations['aop/adopting-since'] = since.toISOString();
      api.put('deployments', NS, deployment);
    };
    marked(new Date(Date.now() - 30_000));
    expect((await host.status(s.agentId)).status).toBe('starting');
    marked(new Date(Date.now() - 3 * 60_000));
    expect(await host.status(s.agentId)).toMatchObject({
      status: 'error',
      lastError: 'The adoption of a warm pod was interrupted: Restart starts the agent from its own configuration',
    });
    const [pod] = api.podsOf(NS, name);
    expect((await host.restart(s.agentId)).status).not.toBe('error');
    expect(api.get('deployments', NS, name)!.metadata.annotations['aop/adopting-since']).toBeUndefined();
    expect(api.podsOf(NS, name)[0]!.metadata.name).not.toBe(pod!.metadata.name);
  });

  it('an adoption whose objects cannot be rewritten removes the warm pod and starts the agent in objects of its own', async () => {
    const { api, host, readyWarm } = await poolSetup();
    await host.restore();
    const name = (await readyWarm()).metadata.name as string;
    api.failNext((call) => call.method === 'PUT' && call.path.includes('/configmaps/'), 500, 'InternalError', 'etcd is unhappy');
    const s = spec();
    await host.create(s);
    for (const plural of OWNED) expect(api.get(plural, NS, name), plural).toBeUndefined();
    expect(api.get('deployments', NS, kubeAgentName(s.agentId))!.metadata.annotations['aop/agent-id']).toBe(s.agentId);
    expect(await host.spec(s.agentId)).toMatchObject({ agentId: s.agentId, gatewayToken: s.gatewayToken });
  });

  it('two replicas creating at once with one warm pod: exactly one adopts it, the other agent starts a pod of its own', async () => {
    const { api, host, readyWarm, another } = await poolSetup();
    await host.restore();
    const name = (await readyWarm()).metadata.name as string;
    const replica = another({});
    const [a, b] = [spec(), spec()];
    const states = await Promise.all([host.create(a), replica.create(b)]);
    expect(states.map((state) => state.agentId)).toEqual([a.agentId, b.agentId]);
    const adopter = api.get('deployments', NS, name)!.metadata.annotations['aop/agent-id'];
    expect([a.agentId, b.agentId]).toContain(adopter);
    const other = adopter === a.agentId ? b : a;
    expect(api.get('deployments', NS, kubeAgentName(other.agentId))!.metadata.annotations['aop/agent-id']).toBe(other.agentId);
    expect(api.get('deployments', NS, kubeAgentName(adopter))).toBeUndefined();
    for (const s of [a, b]) expect((await host.spec(s.agentId)).gatewayToken).toBe(s.gatewayToken);
  });
});
