import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { type Server, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectGateway, createDeviceIdentity } from '@aop/gateway-client';
import { startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { type FakeHostingApi, startFakeHostingApi } from '@aop/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentNotFoundError, type AgentSpec, AgentStartError, UpdateFailedError } from '../host.js';
import { GATEWAY_START_COMMAND, HostingApi, HostingApiError } from './hosting-api.js';
import { HostingAgentHost, type HostingHostOptions, StatsUnavailableError, imageTag, imageWithTag } from './host.js';
import { PlatformDeviceNotPairedError } from '../shared/pairing.js';

// The `hosting` provider against a local GraphQL server speaking the provider's API (packages/testing) and a local
// HTTP server standing in for the agents' gateways behind their public domains (/healthz, /readyz with the token).

const PLATFORM_SECRETS = ['DATABASE_URL', 'INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY', 'REDIS_URL'];
const API_KEY = 'hosting-api-key';
const IMAGE = 'ghcr.io/openclaw/openclaw:2026.9.6';

let work: string;
let api: FakeHostingApi;
let gateway: Server;
let gatewayUrl: string;
/** Gateway tokens whose gateway answers `/readyz` ready. */
const ready = new Set<string>();
const key = randomBytes(32);
const hosts: HostingAgentHost[] = [];

async function newHost(options: Partial<HostingHostOptions> = {}): Promise<HostingAgentHost> {
  const host = new HostingAgentHost({
    apiUrl: api.url,
    apiKey: API_KEY,
    projectId: 'proj-1',
    environmentId: 'env-1',
    image: IMAGE,
    dataDir: await mkdtemp(join(work, 'data-')),
    encryptionKey: key,
    pollMs: 20,
    readyTimeoutMs: 5_000,
    gatewayUrl: () => gatewayUrl,
    ...options,
  });
  hosts.push(host);
  return host;
}

let n = 0;
function spec(overrides: Partial<AgentSpec> = {}): AgentSpec {
  n += 1;
  return {
    agentId: `agt_hosted${n}`,
    userId: 'usr_1',
    plan: 'solo',
    config: { gateway: { auth: { mode: 'token' } } },
    gatewayToken: `gw-token-${n}-${randomBytes(8).toString('hex')}`,
    ...overrides,
  };
}

const operations = (from = 0) => api.calls.slice(from).map((c) => c.operation);

const addedSecrets: string[] = [];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-hosting-host-'));
  api = await startFakeHostingApi({ apiKey: API_KEY });
  gateway = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/healthz') return send(200, { ok: true, status: 'live' });
    if (req.url === '/readyz') {
      const token = req.headers.authorization?.replace(/^Bearer /, '') ?? '';
      return ready.has(token)
        ? send(200, { ready: true, failing: [], uptimeMs: 1234 })
        : send(503, { ready: false, failing: ['startup-sidecars'] });
    }
    send(404, { error: 'not found' });
  });
  await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
  gatewayUrl = `http://127.0.0.1:${(gateway.address() as { port: number }).port}`;
  // Restored afterwards: other files of the fast tier share this process (and would read DATABASE_URL from it).
  for (const name of PLATFORM_SECRETS) {
    if (process.env[name] === undefined) {
      process.env[name] = `platform-${name.toLowerCase()}-value`;
      addedSecrets.push(name);
    }
  }
});

afterAll(async () => {
  for (const name of addedSecrets) delete process.env[name];
  await Promise.all(hosts.map((host) => host.shutdown()));
  await new Promise<void>((r) => gateway.close(() => r()));
  await api.close();
  await rm(work, { recursive: true, force: true });
});

beforeEach(() => {
  api.failOn.clear();
  api.nextStatuses.length = 0;
});

describe('HostingAgentHost', () => {
  it('create: the provider calls in order with the agent image, start command and port; only agent variables', async () => {
    const host = await newHost();
    const s = spec({
      channelTokens: { telegram: 'tg-secret-token', discord: 'dc-secret-token' },
      llm: { baseUrl: 'https://llm.example/v1', apiKey: 'sk-llm-secret', model: 'm' },
    });
    const from = api.calls.length;
    const created = await host.create(s);
    expect(created).toMatchObject({ agentId: s.agentId, userId: 'usr_1', status: 'starting', version: '2026.9.6', url: gatewayUrl });

    const calls = api.calls.slice(from);
    expect(calls.map((c) => c.operation)).toEqual([
      'serviceCreate',
      'variableCollectionUpsert',
      'serviceInstanceUpdate',
      'serviceDomainCreate',
      'serviceInstanceDeployV2',
    ]);
    expect(calls.every((c) => c.authorization === `Bearer ${API_KEY}`)).toBe(true);
    const [create, variables, update, domain, deploy] = calls;
    expect(create!.variables.input).toEqual({
      projectId: 'proj-1',
      environmentId: 'env-1',
      name: `agent-${s.agentId}`,
      source: { image: IMAGE },
    });
    const serviceId = variables!.variables.input.serviceId as string;
    expect(api.services.get(serviceId)).toMatchObject({ name: `agent-${s.agentId}`, image: IMAGE });
    expect(variables!.variables.input).toMatchObject({ projectId: 'proj-1', environmentId: 'env-1', serviceId });
    const env = variables!.variables.input.variables as Record<string, string>;
    expect(env).toEqual({
      OPENCLAW_GATEWAY_TOKEN: s.gatewayToken,
      OPENCLAW_GATEWAY_PORT: '18789',
      TELEGRAM_BOT_TOKEN: 'tg-secret-token',
      DISCORD_BOT_TOKEN: 'dc-secret-token',
    });
    for (const name of PLATFORM_SECRETS) {
      expect(env[name]).toBeUndefined();
      expect(JSON.stringify(env)).not.toContain(process.env[name]!);
    }
    expect(JSON.stringify(env)).not.toContain('sk-llm-secret');
    expect(update!.variables).toEqual({
      serviceId,
      environmentId: 'env-1',
      input: { startCommand: 'openclaw gateway run --bind lan --port 18789' },
    });
    expect(domain!.variables.input).toEqual({ environmentId: 'env-1', serviceId, targetPort: 18789 });
    expect(deploy!.variables).toEqual({ serviceId, environmentId: 'env-1' });

    // The registry keeps the provider's ids and sealed tokens only.
    const path = join(host.registryDir, `${s.agentId}.json`);
    const registry = await readFile(path, 'utf8');
    for (const secret of [s.gatewayToken, 'tg-secret-token', 'dc-secret-token', 'sk-llm-secret']) expect(registry).not.toContain(secret);
    expect(JSON.parse(registry)).toMatchObject({
      agentId: s.agentId,
      serviceId,
      deploymentId: expect.stringMatching(/^dep-/),
      domain: `${serviceId}.hosting.test`,
      image: IMAGE,
      desired: 'running',
    });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(host.registryDir)).mode & 0o777).toBe(0o700);
    expect(await host.spec(s.agentId)).toMatchObject({
      gatewayToken: s.gatewayToken,
      channelTokens: { telegram: 'tg-secret-token', discord: 'dc-secret-token' },
      llm: { apiKey: 'sk-llm-secret' },
    });
    await expect(host.create(s)).rejects.toMatchObject({ name: 'AgentExistsError' });
  });

  it('status follows the deployment: BUILDING/DEPLOYING → starting, SUCCESS + /readyz ready → running', async () => {
    const host = await newHost();
    const s = spec();
    api.nextStatuses.push(['BUILDING', 'DEPLOYING', 'SUCCESS']);
    await host.create(s);
    expect((await host.status(s.agentId)).status).toBe('starting'); // BUILDING
    expect((await host.status(s.agentId)).status).toBe('starting'); // DEPLOYING
    expect((await host.status(s.agentId)).status).toBe('starting'); // SUCCESS, gateway still booting
    expect(await host.health(s.agentId)).toEqual({ live: true, ready: false, failing: ['startup-sidecars'], uptimeMs: null });
    const waiting = host.waitUntilReady(s.agentId);
    setTimeout(() => ready.add(s.gatewayToken), 100);
    const running = await waiting;
    expect(running).toMatchObject({ status: 'running', lastError: null, readyAt: expect.any(String) });
    expect(await host.health(s.agentId)).toEqual({ live: true, ready: true, failing: [], uptimeMs: 1234 });
    expect((await host.list()).find((a) => a.agentId === s.agentId)?.status).toBe('running');
    // Ready once, then /readyz fails: the provider is restarting the container.
    ready.delete(s.gatewayToken);
    expect((await host.status(s.agentId)).status).toBe('restarting');
  });

  it('FAILED or CRASHED → error; waitUntilReady rejects with the reason', async () => {
    const host = await newHost();
    const failed = spec();
    api.nextStatuses.push(['DEPLOYING', 'FAILED']);
    await host.create(failed);
    await expect(host.waitUntilReady(failed.agentId)).rejects.toThrow(/is error: Deployment dep-\d+ failed \(FAILED\)/);
    expect(await host.status(failed.agentId)).toMatchObject({ status: 'error', lastError: expect.stringContaining('FAILED') });

    const crashed = spec();
    api.nextStatuses.push(['SUCCESS', 'CRASHED']);
    ready.add(crashed.gatewayToken);
    await host.create(crashed);
    expect((await host.status(crashed.agentId)).status).toBe('running');
    expect(await host.status(crashed.agentId)).toMatchObject({ status: 'error', lastError: expect.stringContaining('crashed') });
  });

  it('SUCCESS but the gateway never ready → error after the ready timeout', async () => {
    const host = await newHost({ readyTimeoutMs: 300 });
    const s = spec();
    api.nextStatuses.push(['SUCCESS']);
    await host.create(s);
    await expect(host.waitUntilReady(s.agentId)).rejects.toBeInstanceOf(AgentStartError);
    expect(await host.status(s.agentId)).toMatchObject({ status: 'error', lastError: expect.stringMatching(/not ready within/) });
  });

  it('stop, start, restart, logs, repair, reset-memory, configure and delete map to the provider API', async () => {
    const host = await newHost();
    const s = spec({ channelTokens: { telegram: 'tg-1' } });
    ready.add(s.gatewayToken);
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const registry = () => JSON.parse(readFileSync(join(host.registryDir, `${s.agentId}.json`), 'utf8'));
    const first = registry();
    const serviceId = first.serviceId as string;

    let from = api.calls.length;
    expect(await host.stop(s.agentId)).toMatchObject({ status: 'stopped', startedAt: null });
    expect(api.calls.slice(from)).toMatchObject([{ operation: 'deploymentStop', variables: { id: first.deploymentId } }]);
    expect(api.deployments.get(first.deploymentId)!.stopped).toBe(true);
    expect(await host.health(s.agentId)).toEqual({ live: false, ready: false, failing: [], uptimeMs: null });
    expect((await host.stop(s.agentId)).status).toBe('stopped'); // already stopped: no second call
    expect(operations(from)).toEqual(['deploymentStop']);

    from = api.calls.length;
    expect((await host.start(s.agentId)).status).toBe('starting');
    expect(operations(from)).toEqual(['serviceInstanceDeployV2']);
    const started = await host.waitUntilReady(s.agentId);
    expect(started.status).toBe('running');

    from = api.calls.length;
    expect((await host.start(s.agentId)).status).toBe('running'); // running already: nothing to do
    expect(operations(from)).toEqual(['deployment']);

    const current = () => registry().deploymentId as string;
    from = api.calls.length;
    const deploymentId = current();
    expect((await host.restart(s.agentId)).status).toBe('starting');
    expect(api.calls.slice(from).at(-1)).toMatchObject({ operation: 'deploymentRestart', variables: { id: deploymentId } });
    expect(api.deployments.get(deploymentId)!.restarts).toBe(1);
    expect(current()).toBe(deploymentId);
    await host.waitUntilReady(s.agentId);

    expect(await host.logs(s.agentId, { tail: 2 })).toEqual([`[gateway] ${GATEWAY_START_COMMAND} (${IMAGE})`, 'Restarting Container']);

    from = api.calls.length;
    await host.repair(s.agentId);
    expect(operations(from)).toEqual(['variableCollectionUpsert', 'serviceInstanceUpdate', 'serviceInstanceDeployV2']);
    expect(api.calls.at(-2)!.variables.input).toEqual({ startCommand: GATEWAY_START_COMMAND, source: { image: IMAGE } });
    expect(current()).not.toBe(deploymentId);

    from = api.calls.length;
    await host.resetMemory(s.agentId);
    expect(operations(from)).toEqual(['serviceInstanceDeployV2']);

    from = api.calls.length;
    await host.configure(s.agentId, { config: { cron: { enabled: false } } });
    expect(operations(from)).toEqual(['deployment']); // config only: stored, nothing redeployed
    from = api.calls.length;
    await host.configure(s.agentId, { channelTokens: { discord: 'dc-2' } });
    expect(operations(from)).toEqual(['variableCollectionUpsert', 'serviceInstanceDeployV2', 'deployment']);
    expect(api.services.get(serviceId)!.variables).toEqual({
      OPENCLAW_GATEWAY_TOKEN: s.gatewayToken,
      OPENCLAW_GATEWAY_PORT: '18789',
      DISCORD_BOT_TOKEN: 'dc-2',
    });
    expect(await host.spec(s.agentId)).toMatchObject({ config: { cron: { enabled: false } }, channelTokens: { discord: 'dc-2' } });

    await expect(host.stats(s.agentId)).rejects.toBeInstanceOf(StatsUnavailableError);

    from = api.calls.length;
    await host.delete(s.agentId);
    expect(api.calls.slice(from)).toMatchObject([{ operation: 'serviceDelete', variables: { id: serviceId, environmentId: 'env-1' } }]);
    expect(api.services.has(serviceId)).toBe(false);
    expect(existsSync(join(host.registryDir, `${s.agentId}.json`))).toBe(false);
    await expect(host.status(s.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
  });

  it('update deploys the image tagged with the version and waits until it is ready', async () => {
    const host = await newHost();
    const s = spec();
    ready.add(s.gatewayToken);
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const from = api.calls.length;
    const updated = await host.update(s.agentId, { version: '2026.10.1' });
    expect(updated).toMatchObject({ status: 'running', version: '2026.10.1' });
    expect(api.calls[from]).toMatchObject({
      operation: 'serviceInstanceUpdate',
      variables: { input: { source: { image: 'ghcr.io/openclaw/openclaw:2026.10.1' } } },
    });
    expect(operations(from).slice(0, 2)).toEqual(['serviceInstanceUpdate', 'serviceInstanceDeployV2']);
    expect([...api.deployments.values()].at(-1)!.image).toBe('ghcr.io/openclaw/openclaw:2026.10.1');
    expect((await host.spec(s.agentId)).version).toBe('2026.10.1');
  });

  it('a failed update redeploys the previous image and throws UpdateFailedError naming the previous deployment', async () => {
    const host = await newHost();
    const s = spec();
    ready.add(s.gatewayToken);
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    const before = JSON.parse(await readFile(join(host.registryDir, `${s.agentId}.json`), 'utf8'));
    api.nextStatuses.push(['BUILDING', 'FAILED']);
    const from = api.calls.length;
    const error = await host.update(s.agentId, { version: 'broken' }).catch((err) => err);
    expect(error).toBeInstanceOf(UpdateFailedError);
    expect(error).toMatchObject({
      backupPath: before.deploymentId,
      previousVersion: '2026.9.6',
      targetVersion: 'broken',
      message: expect.stringMatching(/^Update to OpenClaw broken failed: .*FAILED.*Rolled back to 2026\.9\.6\.$/),
    });
    const images = api.calls
      .slice(from)
      .filter((c) => c.operation === 'serviceInstanceUpdate')
      .map((c) => c.variables.input.source.image);
    expect(images).toEqual(['ghcr.io/openclaw/openclaw:broken', IMAGE]);
    const deployments = [...api.deployments.values()].slice(-2);
    expect(deployments.map((d) => d.image)).toEqual(['ghcr.io/openclaw/openclaw:broken', IMAGE]);
    expect(await host.waitUntilReady(s.agentId)).toMatchObject({ status: 'running', version: '2026.9.6' });
    expect(JSON.parse(await readFile(join(host.registryDir, `${s.agentId}.json`), 'utf8'))).toMatchObject({
      image: IMAGE,
      version: '2026.9.6',
      deploymentId: deployments[1]!.id,
    });
  });

  it('API errors are clear errors; a half-made service is deleted', async () => {
    const host = await newHost();
    api.failOn.add('serviceCreate');
    const a = spec();
    await expect(host.create(a)).rejects.toThrow(
      `Cannot create agent ${a.agentId}: hosting API refused serviceCreate: serviceCreate failed`,
    );
    api.failOn.clear();

    api.failOn.add('serviceDomainCreate');
    const b = spec();
    const from = api.calls.length;
    const err = await host.create(b).catch((e) => e);
    expect(err).toBeInstanceOf(HostingApiError);
    expect(err.message).toBe(`Cannot create agent ${b.agentId}: hosting API refused serviceDomainCreate: serviceDomainCreate failed`);
    expect(operations(from)).toEqual([
      'serviceCreate',
      'variableCollectionUpsert',
      'serviceInstanceUpdate',
      'serviceDomainCreate',
      'serviceDelete',
    ]);
    expect([...api.services.values()].some((svc) => svc.name === `agent-${b.agentId}`)).toBe(false);
    await expect(host.status(b.agentId)).rejects.toBeInstanceOf(AgentNotFoundError);
    api.failOn.clear();

    const c = spec();
    await host.create(c);
    api.failOn.add('deploymentStop');
    await expect(host.stop(c.agentId)).rejects.toThrow(
      `Cannot stop agent ${c.agentId}: hosting API refused deploymentStop: deploymentStop failed`,
    );
    api.failOn.add('deployment');
    await expect(host.status(c.agentId)).rejects.toThrow(
      /^Cannot read the status of agent .*: hosting API refused deployment: deployment failed$/,
    );
    api.failOn.clear();

    const wrongKey = await newHost({ apiKey: 'not-the-key' });
    await expect(wrongKey.create(spec())).rejects.toThrow(/hosting API refused serviceCreate: Not Authorized/);
    const closed = await newHost({ apiUrl: 'http://127.0.0.1:9/graphql/v2' });
    await expect(closed.create(spec())).rejects.toThrow(/hosting API unreachable/);
    await expect(host.update(c.agentId, { version: '../evil' })).rejects.toThrow(/Invalid OpenClaw version/);
  });

  it('a new host on the same data directory finds the agents again (restore)', async () => {
    const host = await newHost();
    const s = spec();
    ready.add(s.gatewayToken);
    await host.create(s);
    await host.waitUntilReady(s.agentId);
    await host.shutdown();
    await expect(host.status(s.agentId)).rejects.toThrow(/shut down/);
    const again = await newHost({ dataDir: join(host.registryDir, '..') });
    expect(await again.restore()).toEqual([expect.objectContaining({ agentId: s.agentId, status: 'running' })]);
    expect((await again.spec(s.agentId)).gatewayToken).toBe(s.gatewayToken);
  });
});

describe('HostingApi', () => {
  it('serviceInstanceRedeploy makes a new deployment; waitForDeployment reports success, failure and timeout', async () => {
    const client = new HostingApi({ apiUrl: api.url, apiKey: API_KEY, projectId: 'proj-1', environmentId: 'env-1' });
    const { serviceId, deploymentId } = await client.deployService({
      name: 'svc',
      image: IMAGE,
      variables: { OPENCLAW_GATEWAY_TOKEN: 't' },
    });
    expect(await client.waitForDeployment(deploymentId, { pollMs: 10, timeoutMs: 2_000 })).toEqual({
      outcome: 'success',
      status: 'SUCCESS',
      error: null,
    });
    const count = api.deployments.size;
    await client.redeployService(serviceId);
    expect(api.deployments.size).toBe(count + 1);
    expect((await client.deployment(deploymentId)).status).toBe('REMOVED'); // replaced by the redeploy
    const next = [...api.deployments.values()].at(-1)!;
    api.setStatuses(next.id, ['DEPLOYING', 'CRASHED']);
    expect(await client.waitForDeployment(next.id, { pollMs: 10, timeoutMs: 2_000 })).toEqual({
      outcome: 'failed',
      status: 'CRASHED',
      error: null,
    });
    api.setStatuses(next.id, ['BUILDING']);
    expect(await client.waitForDeployment(next.id, { pollMs: 10, timeoutMs: 100 })).toMatchObject({
      outcome: 'timeout',
      status: 'BUILDING',
    });
    await expect(client.deployment('dep-missing')).rejects.toThrow('hosting API refused deployment: Deployment not found');
    await expect(client.upsertVariables(serviceId, { OPENCLAW_GATEWAY_TOKEN: 't', DATABASE_URL: 'postgres://x' })).rejects.toThrow(
      /Refusing to send non-agent variables to an agent container: DATABASE_URL/,
    );
  });

  it('image tags', () => {
    expect(imageTag(IMAGE)).toBe('2026.9.6');
    expect(imageTag('registry:5000/openclaw')).toBeNull();
    expect(imageWithTag('registry:5000/openclaw', '1.2.3')).toBe('registry:5000/openclaw:1.2.3');
    expect(imageWithTag(`${IMAGE}@sha256:abc`, 'x')).toBe('ghcr.io/openclaw/openclaw:x');
    expect(() => imageWithTag(IMAGE, 'a b')).toThrow(/Invalid OpenClaw version/);
  });
});

// A hosted gateway is reached over the internet: OpenClaw gives the token alone no scopes there, and nothing lets the
// host into the container to approve its device. The device's pending request waits for a person (Control UI).
describe('HostingAgentHost platform device', () => {
  it('asks for approval, keeps the device token once a person approved it, and asks again when the gateway forgot it', async () => {
    const token = `gw-token-${randomBytes(8).toString('hex')}`;
    const gw = await startFakeGatewayWs({ token, remoteListener: true });
    try {
      const identity = createDeviceIdentity();
      const host = await newHost({ platformDevice: identity, gatewayUrl: () => gw.remoteHttpUrl as string });
      const s = spec({ gatewayToken: token });
      await host.create(s);

      const refused = (await host.controlCredentials(s.agentId).catch((e: unknown) => e)) as PlatformDeviceNotPairedError;
      expect(refused).toBeInstanceOf(PlatformDeviceNotPairedError);
      const [pending] = [...gw.pairing.pending.values()];
      expect(pending).toMatchObject({ deviceId: identity.deviceId, remoteIp: '172.17.0.1' });
      expect(refused.requestId).toBe(pending?.requestId);
      expect(refused.userMessage).toBe(
        `pairing required: approve the platform device ${identity.deviceId.slice(0, 12)} once in the agent's Control UI (Devices)`,
      );

      // A person approves it in the Control UI (a trusted connection on the gateway's side).
      const ui = await connectGateway({ url: gw.url, token, clientId: 'openclaw-control-ui', clientMode: 'ui', retryDeadlineMs: 0 });
      await ui.request('device.pair.approve', { requestId: pending?.requestId });

      const credentials = await host.controlCredentials(s.agentId);
      const deviceToken = gw.pairing.paired.get(identity.deviceId)?.tokens.operator?.token;
      expect(credentials).toEqual({ token, device: { identity, deviceToken } });
      const registry = await readFile(join(host.registryDir, `${s.agentId}.json`), 'utf8');
      expect(registry).not.toContain(deviceToken);
      expect(JSON.parse(registry).platformDevice).toMatchObject({ deviceId: identity.deviceId });

      // Stored: no connect to hand it out again.
      const connects = gw.connectAttempts.length;
      expect(await host.controlCredentials(s.agentId)).toEqual(credentials);
      expect(gw.connectAttempts.length).toBe(connects);

      // A redeploy without a volume forgets the pairing: `repair` checks, and the request is made again.
      await ui.request('device.pair.remove', { deviceId: identity.deviceId });
      await ui.close();
      await expect(host.controlCredentials(s.agentId, { repair: true })).rejects.toBeInstanceOf(PlatformDeviceNotPairedError);
      expect([...gw.pairing.pending.values()].map((r) => r.deviceId)).toEqual([identity.deviceId]);

      // Without an identity the host hands out the token alone.
      const plain = await newHost({ gatewayUrl: () => gw.remoteHttpUrl as string });
      const t = spec();
      await plain.create(t);
      expect(await plain.controlCredentials(t.agentId)).toEqual({ token: t.gatewayToken });
    } finally {
      await gw.close();
    }
  });
});
