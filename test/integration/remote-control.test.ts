import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectGateway, createDeviceIdentity } from '@aop/gateway-client';
import { DockerAgentHost, dockerContainerName } from '@aop/provisioner';
import { type DockerEngineEmulator, startDockerEngine } from '@aop/provisioner/docker-engine.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const SHARED = { INTERNAL_API_KEY: 'internal-key-for-remote-tests', HMAC_SECRET: 'hmac-secret-for-remote-tests' };
const IMAGE = 'ghcr.io/openclaw/openclaw:1.0.0';

// Issue #8 "Pairing": an agent in a container is reached through its published port, which OpenClaw sees as a remote
// peer, so the web service's token-only WebSocket gets no scopes there. Web → backend (`POST /api/agents/:id/rpc`) →
// the platform device the docker host paired (approved inside the container) → the gateway. Docker is the emulated
// engine; its containers run a protocol-v4 gateway that treats the published port as non-loopback.
describe('controlling an agent whose gateway requires a paired device', () => {
  let work: string;
  let engine: DockerEngineEmulator;
  let host: DockerAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let owner: { cookie: string; userId: string };
  let agentId: string;
  const identity = createDeviceIdentity();

  const call = (path: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${web.url}${path}`, { ...init, headers: { ...init.headers, cookie: owner.cookie } });
  const gateway = () => engine.gateway(dockerContainerName(agentId));

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-remote-control-'));
    engine = await startDockerEngine({ socketPath: join(work, 'docker.sock'), dir: work, images: { [IMAGE]: {} } });
    host = new DockerAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      socketPath: engine.socketPath,
      image: IMAGE,
      user: `${process.getuid?.() ?? 1000}:${process.getgid?.() ?? 1000}`,
      readyPollMs: 25,
      stopTimeoutMs: 5_000,
      platformDevice: identity,
    });
    backend = await startBackend(SHARED, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, GATEWAY_REQUEST_TIMEOUT_MS: '10000' });
    owner = await web.signIn({ isAdmin: true });
    const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie: owner.cookie } });
    expect(res.status).toBe(200);
    agentId = res.body.agentId;
    await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
  });
  afterAll(async () => {
    await web.close();
    await backend.close();
    await host.shutdown();
    await engine.close();
    await rm(work, { recursive: true, force: true });
  });

  it('lists, adds and removes cron jobs, where the token alone would get no scopes', async () => {
    // The address the web service has for the agent, and what a token-only socket gets there.
    const row = await web.database.db.kysely.selectFrom('agents').select('url').where('id', '=', agentId).executeTakeFirstOrThrow();
    const direct = await connectGateway({
      url: `${(row.url as string).replace(/^http/, 'ws')}/`,
      token: (await host.spec(agentId)).gatewayToken,
      retryDeadlineMs: 0,
    });
    expect(direct.hello.auth?.scopes).toEqual([]);
    await direct.close();

    const empty = await call('/api/cron');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ jobs: [], total: 0, source: 'gateway' });

    const added = await call('/api/cron', {
      json: { name: 'hourly check', schedule: { kind: 'every', everyMs: 3_600_000 }, payload: { kind: 'systemEvent', text: 'check in' } },
    });
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ success: true, source: 'gateway', job: { name: 'hourly check', enabled: true } });
    const listed = await call('/api/cron');
    expect(listed.body.jobs.map((j: { id: string; name: string }) => [j.id, j.name])).toEqual([[added.body.job.id, 'hourly check']]);

    expect((await call('/api/cron?jobId=no-such-job', { method: 'DELETE' })).status).toBe(404);
    const removed = await call(`/api/cron?jobId=${added.body.job.id}`, { method: 'DELETE' });
    expect(removed.body).toEqual({ success: true, source: 'gateway' });
    expect(gateway()?.jobs.size).toBe(0);

    // Every call reached the gateway as the platform device, paired by one approval inside the container.
    const connects = gateway()?.received.filter((f) => f.method === 'connect') ?? [];
    expect(connects.filter((c) => c.params.device?.id === identity.deviceId).length).toBeGreaterThanOrEqual(4);
    expect(engine.execs()).toEqual([expect.objectContaining({ Cmd: expect.arrayContaining(['devices', 'approve']), ExitCode: 0 })]);
  });

  it('chats over the gateway: the run’s events come back with the backend’s answer', async () => {
    const res = await call('/api/gateway/chat', { json: { message: 'hello there' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, reply: 'reply to: hello there', agentId, agentName: expect.any(String) });
  });

  it('shows the gateway status, and the device list without the platform’s own device', async () => {
    const status = await call('/api/gateway/status');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ health: 'healthy', cron: { total: 0 } });

    const devices = await call('/api/devices');
    expect(devices.status).toBe(200);
    expect(devices.body).toEqual({ pending: [], approved: [] });
    expect(gateway()?.pairing.paired.has(identity.deviceId)).toBe(true);
  });

  it('reads the conversation history through the backend', async () => {
    const res = await call(`/api/agents/${agentId}/messages`);
    expect(res.status).toBe(200);
    expect(res.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'hello there'],
      ['assistant', 'reply to: hello there'],
    ]);
  });

  it('a stopped agent is a gateway that cannot be reached, in the route’s own words', async () => {
    await host.stop(agentId);
    // Through the backend's paired device too, a job is listed only from a running gateway; the spec's 200
    // `gateway-error` says why in words (spec §4.3), and a new job is the spec's 502.
    const list = await call('/api/cron');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      jobs: [],
      error: 'The agent is stopped: its jobs are kept, and run again once it is started',
      source: 'gateway-error',
    });
    const add = await call('/api/cron', {
      json: { name: 'n', schedule: { kind: 'every', everyMs: 60_000 }, payload: { kind: 'systemEvent', text: 't' } },
    });
    expect(add.status).toBe(502);
    expect(add.body).toEqual({ error: 'The agent is stopped: start it to add jobs (its jobs are kept meanwhile)' });
  });
});
