import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { userContextHeaders } from '@aop/core';
import { connectGateway, createDeviceIdentity } from '@aop/gateway-client';
import { DockerAgentHost, dockerContainerName } from '@aop/provisioner';
import { type DockerEngineEmulator, startDockerEngine } from '@aop/provisioner/docker-engine.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../backend.test-support.js';

const KEY = 'internal-key-for-rpc-tests';
const HMAC = 'hmac-secret-for-rpc-tests';
const IMAGE = 'ghcr.io/openclaw/openclaw:1.0.0';

function as(userId: string, email = `${userId}@example.com`) {
  return {
    authorization: `Bearer ${KEY}`,
    ...userContextHeaders({ userId, email }, HMAC),
  };
}

// Issue #8 "Pairing": a container's gateway, reached through its published port, gives the token alone no scopes. The
// backend holds the platform device the docker host paired, and performs the web service's gateway calls itself.
// Docker is the emulated engine; each container runs a protocol-v4 gateway that treats the published port as remote.
describe('POST /api/agents/:id/rpc', () => {
  let work: string;
  let engine: DockerEngineEmulator;
  let host: DockerAgentHost;
  let backend: TestBackend;
  const identity = createDeviceIdentity();
  const agentId = 'agt_rpc';
  let agentUrl: string;
  let token: string;

  let client = 0;
  const rpc = (body: unknown, userId = 'usr_owner', headers: Record<string, string> = {}) =>
    request(`${backend.url}/api/agents/${agentId}/rpc`, {
      headers: { ...as(userId), 'x-forwarded-for': `198.51.100.${++client % 250}`, ...headers },
      json: body,
    });
  const gateway = () => engine.gateway(dockerContainerName(agentId));

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-rpc-'));
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
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, TRUST_PROXY: '127.0.0.1' }, { host });
    const deployed = await request(`${backend.url}/api/deployments`, {
      headers: as('usr_owner'),
      json: { agentId, name: 'Remote', config: { telegramToken: 'tg-token', plan: 'solo' } },
    });
    expect(deployed.status).toBe(201);
    agentUrl = deployed.body.url;
    await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
    const answer = await request(`${backend.url}/api/agents/${agentId}/token`, { headers: as('usr_owner') });
    // The agent has a gateway of its own: it is OpenClaw's default agent there, `main`.
    expect(answer.body).toEqual({ agentId, token: expect.any(String), control: 'backend', openclawAgentId: 'main', status: 'running' });
    token = answer.body.token;
  });
  afterAll(async () => {
    await backend.close();
    await host.shutdown();
    await engine.close();
    await rm(work, { recursive: true, force: true });
  });

  it('needs the internal key, a signed user context, and the caller’s own agent', async () => {
    const noKey = await rpc({ method: 'cron.list' }, 'usr_owner', { authorization: '' });
    expect(noKey.status).toBe(401);
    const forged = await rpc({ method: 'cron.list' }, 'usr_owner', { 'x-user-id': 'usr_other' });
    expect(forged.status).toBe(401);
    const stranger = await rpc({ method: 'cron.list' }, 'usr_other');
    expect(stranger.status).toBe(404);
    expect(stranger.body).toEqual({ error: 'Agent not found' });
    const missing = await request(`${backend.url}/api/agents/agt_none/rpc`, { headers: as('usr_owner'), json: { method: 'health' } });
    expect(missing.status).toBe(404);
  });

  it('validates the body and refuses methods off the list', async () => {
    expect((await rpc({})).body).toEqual({ error: 'method is required' });
    expect((await rpc({ method: 42 })).status).toBe(400);
    expect((await rpc({ method: 'cron.list', params: [1] })).body).toEqual({ error: 'params must be an object' });
    expect((await rpc({ method: 'cron.list', params: 'x' })).status).toBe(400);
    expect((await rpc({ method: 'cron.list', timeoutMs: 5 })).body).toEqual({ error: 'timeoutMs must be an integer from 1000 to 120000' });
    for (const method of ['config.apply', 'config.get', 'device.token.rotate', 'exec.approvals.set', 'connect', 'update.run']) {
      const refused = await rpc({ method, params: {} });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ error: `Method not allowed: ${method}` });
    }
    expect(gateway()?.received.some((f) => f.method.startsWith('config.'))).toBe(false);
  });

  it('performs the call with the paired platform device, where the token alone gets no scopes', async () => {
    // What the web service would get on its own: admitted, but with nothing it may do.
    const direct = await connectGateway({ url: `${agentUrl.replace(/^http/, 'ws')}/`, token, retryDeadlineMs: 0 });
    expect(direct.hello.auth?.scopes).toEqual([]);
    expect(await direct.request('cron.list', {}).catch((e: Error) => e.message)).toBe('missing scope: operator.read');
    await direct.close();

    const added = await rpc({
      method: 'cron.add',
      params: {
        name: 'daily',
        schedule: { kind: 'every', everyMs: 60_000 },
        sessionTarget: 'main',
        wakeMode: 'now',
        payload: { kind: 'systemEvent', text: 'hi' },
      },
    });
    expect(added.status).toBe(200);
    expect(added.body.payload).toMatchObject({ id: expect.any(String), name: 'daily', enabled: true });
    const listed = await rpc({ method: 'cron.list', params: { includeDisabled: true } });
    expect(listed.status).toBe(200);
    expect(listed.body.payload.jobs.map((j: { id: string }) => j.id)).toEqual([added.body.payload.id]);

    // The backend connected as the platform device through the published (remote) port.
    const connects = gateway()?.received.filter((f) => f.method === 'connect') ?? [];
    expect(connects.at(-1)?.params.device.id).toBe(identity.deviceId);
  });

  it('relays the gateway’s refusals with their code and details', async () => {
    const res = await rpc({ method: 'cron.remove', params: { id: 'no-such-job' } });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({
      error: 'Agent gateway failed',
      gatewayError: { code: 'INVALID_REQUEST', message: 'cron job not found: no-such-job', details: { code: 'CRON_JOB_NOT_FOUND' } },
    });
  });

  it('keeps the platform device out of the user’s device list and out of their reach', async () => {
    const list = await rpc({ method: 'device.pair.list' });
    expect(list.status).toBe(200);
    expect(list.body.payload).toEqual({ pending: [], paired: [] });
    expect(gateway()?.pairing.paired.has(identity.deviceId)).toBe(true);

    const remove = await rpc({ method: 'device.pair.remove', params: { deviceId: identity.deviceId } });
    expect(remove.status).toBe(502);
    expect(remove.body.gatewayError).toEqual({ code: 'INVALID_REQUEST', message: 'unknown deviceId' });
    expect(gateway()?.pairing.paired.has(identity.deviceId)).toBe(true);
  });

  it('runs chat.send to its end and answers the run’s events with it', async () => {
    const res = await rpc({ method: 'chat.send', params: { sessionKey: 'main', message: 'hello', idempotencyKey: 'k-1' } });
    expect(res.status).toBe(200);
    expect(res.body.payload).toEqual({ runId: expect.any(String), status: 'started' });
    const states = res.body.events.map((e: { event: string; payload: { state: string; runId: string } }) => [e.event, e.payload.state]);
    expect(states).toEqual([
      ['chat', 'status'],
      ['chat', 'final'],
    ]);
    expect(res.body.events.at(-1).payload).toMatchObject({ runId: res.body.payload.runId, message: { role: 'assistant' } });
  });

  it('pairs the device again when someone removed it on the gateway', async () => {
    const admin = await connectGateway({ url: gateway()?.url as string, token, retryDeadlineMs: 0 });
    await admin.request('device.pair.remove', { deviceId: identity.deviceId });
    await admin.close();
    const before = engine.execs().length;

    const res = await rpc({ method: 'health' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ payload: { ok: true } });
    expect(engine.execs()).toHaveLength(before + 1);
    expect(gateway()?.pairing.paired.has(identity.deviceId)).toBe(true);
  });

  it('answers 503 for an agent that is not running', async () => {
    await host.stop(agentId);
    const res = await rpc({ method: 'cron.list' });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'Agent is not running (stopped)' });
  });
});
