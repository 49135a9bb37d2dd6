import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestBackend, startBackend, signedCaller } from '../../backend.test-support.js';

// Spec §4.18 Coordination (backend): GET/POST /api/swarms, GET /api/colony/status; §5 identity headers. Agents run on
// the real local host with a stand-in OpenClaw that serves /healthz and /readyz.

const KEY = 'internal-key-for-swarm-tests-0000';
const HMAC = 'hmac-secret-for-swarm-tests-00000';

/** Headers the web service sends for a user (spec §5). */
const as = (userId: string, email?: string, role?: string) => signedCaller({ internalKey: KEY, hmacSecret: HMAC }, userId, email, role);

describe('swarms and colony status', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let client = 0;

  const call = (userId: string, method: string, path: string, json?: unknown, headers: Record<string, string> = as(userId)) =>
    request(`${backend.url}/api${path}`, {
      method,
      headers: { ...headers, 'x-forwarded-for': `198.18.0.${++client % 250}` },
      ...(json === undefined ? {} : { json }),
    });
  const deploy = (userId: string, agentId: string) =>
    call(userId, 'POST', '/deployments', { agentId, name: agentId.replace('agt_', 'Agent '), config: { autoProvision: true } });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-backend-swarms-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      readyTimeoutMs: 10_000,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, TRUST_PROXY: '127.0.0.1' }, { host });
    for (const [user, agent] of [
      ['usr_s', 'agt_s1'],
      ['usr_s', 'agt_s2'],
      ['usr_o', 'agt_o1'],
    ] as const) {
      expect((await deploy(user, agent)).status).toBe(201);
    }
    await Promise.all(['agt_s1', 'agt_s2', 'agt_o1'].map((id) => host.waitUntilReady(id, { timeoutMs: 10_000 })));
  });
  afterAll(async () => {
    await backend?.close();
    await host?.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('needs the identity headers', async () => {
    const { authorization: _, ...noKey } = as('usr_s');
    expect((await call('usr_s', 'GET', '/swarms', undefined, noKey)).status).toBe(401);
    expect((await call('usr_s', 'GET', '/colony/status', undefined, { ...as('usr_s'), 'x-user-signature': '0'.repeat(64) })).body).toEqual({
      error: 'INVALID_SIGNATURE',
    });
  });

  it('POST /api/swarms validates its body', async () => {
    expect((await call('usr_s', 'POST', '/swarms', {})).body).toEqual({ error: 'name is required' });
    expect((await call('usr_s', 'POST', '/swarms', { name: '  ' })).body).toEqual({ error: 'name is required' });
    expect((await call('usr_s', 'POST', '/swarms', { name: 'x', agentIds: 'agt_s1' })).body).toEqual({
      error: 'agentIds must be an array of agent ids',
    });
    expect((await call('usr_s', 'POST', '/swarms', { name: 'x', agentIds: [1] })).status).toBe(400);
    expect((await call('usr_s', 'POST', '/swarms', { name: 'x', description: 5 })).body).toEqual({ error: 'description must be a string' });
    // Typed by the body schema: a wrong type answers the field's own message.
    expect((await call('usr_s', 'POST', '/swarms', { name: 7 })).body).toEqual({ error: 'name is required' });
    expect((await call('usr_s', 'POST', '/swarms', { name: 'x', description: 'd'.repeat(501) })).body).toEqual({
      error: 'description must be at most 500 characters',
    });
    expect((await call('usr_s', 'POST', '/swarms', { name: 'x', agentIds: [''] })).body).toEqual({
      error: 'agentIds must be an array of agent ids',
    });
    const many = Array.from({ length: 51 }, (_, i) => `agt_${i}`);
    expect((await call('usr_s', 'POST', '/swarms', { name: 'x', agentIds: many })).body).toEqual({
      error: 'A swarm holds at most 50 agents',
    });
  });

  let scouts: string;
  it('creates a swarm of the caller’s agents', async () => {
    const res = await call('usr_s', 'POST', '/swarms', {
      name: 'Scouts',
      description: 'find things',
      agentIds: ['agt_s1', 'agt_s2', 'agt_s1'],
    });
    expect(res.status).toBe(201);
    expect(res.body.swarm).toMatchObject({
      name: 'Scouts',
      description: 'find things',
      size: 2,
      agents: [
        { id: 'agt_s1', name: 'Agent s1', status: 'active' },
        { id: 'agt_s2', name: 'Agent s2', status: 'active' },
      ],
    });
    expect(res.body.swarm.id).toMatch(/^swm_/);
    scouts = res.body.swarm.id;
    const dup = await call('usr_s', 'POST', '/swarms', { name: 'SCOUTS' });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ error: 'A swarm with this name already exists' });
    expect((await call('usr_s', 'POST', '/swarms', { name: 'Empty' })).body.swarm).toMatchObject({ size: 0, agents: [] });
  });

  it('never lets a swarm take another user’s agent, and lists only the caller’s swarms', async () => {
    const res = await call('usr_s', 'POST', '/swarms', { name: 'Thieves', agentIds: ['agt_s1', 'agt_o1'] });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Agent not found' });
    const mine = await call('usr_s', 'GET', '/swarms');
    expect(mine.body.swarms.map((s: { name: string }) => s.name)).toEqual(['Empty', 'Scouts']);
    expect((await call('usr_o', 'GET', '/swarms')).body).toEqual({ swarms: [] });
    expect((await call('usr_o', 'DELETE', `/swarms/${scouts}`)).status).toBe(404);
  });

  it('GET /api/colony/status reports the caller’s agents live from the host', async () => {
    const res = await call('usr_s', 'GET', '/colony/status');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'healthy',
      provider: 'local',
      counts: { total: 2, active: 2, stopped: 0, error: 0, ready: 2 },
      swarms: expect.arrayContaining([{ id: scouts, name: 'Scouts', size: 2, active: 2, ready: 2 }]),
    });
    const s1 = res.body.agents.find((a: { id: string }) => a.id === 'agt_s1');
    expect(s1).toMatchObject({ status: 'active', live: true, ready: true, version: '1.0.0', restarts: 0, swarmIds: [scouts] });
    expect(s1.uptimeMs).toBeGreaterThanOrEqual(0);
    expect(s1.startupMs).toBeGreaterThanOrEqual(0);
    expect(res.body.agents.map((a: { id: string }) => a.id)).not.toContain('agt_o1');
  });

  it('a stopped agent is not expected to run; a failed one degrades the colony', async () => {
    expect((await call('usr_s', 'POST', '/agents/agt_s2/stop')).body).toEqual({ success: true, status: 'stopped' });
    const stopped = await call('usr_s', 'GET', '/colony/status');
    expect(stopped.body).toMatchObject({ status: 'healthy', counts: { active: 1, stopped: 1, ready: 1 } });
    expect(stopped.body.agents.find((a: { id: string }) => a.id === 'agt_s2')).toMatchObject({
      status: 'stopped',
      ready: null,
      uptimeMs: null,
    });

    // A deployment that failed: recorded, never came up on the host.
    await backend.database.db.withUser('usr_s', (trx) =>
      trx
        .insertInto('agent_deployments')
        .values({ id: 'agt_s3', user_id: 'usr_s', name: 'Broken', subdomain: 'broken-s3', status: 'error', plan: 'label' })
        .execute(),
    );
    const degraded = await call('usr_s', 'GET', '/colony/status');
    expect(degraded.body).toMatchObject({ status: 'degraded', counts: { total: 3, active: 1, stopped: 1, error: 1 } });

    expect((await call('usr_s', 'POST', '/agents/agt_s1/stop')).status).toBe(200);
    expect((await call('usr_s', 'GET', '/colony/status')).body.status).toBe('down');
    expect((await call('usr_nobody', 'GET', '/colony/status')).body).toMatchObject({ status: 'empty', counts: { total: 0 } });
  });

  it('deleting an agent takes it out of its swarms; deleting a swarm keeps the agents', async () => {
    expect((await call('usr_s', 'DELETE', '/agents/agt_s2')).body).toEqual({ id: 'agt_s2', deleted: true });
    const after = (await call('usr_s', 'GET', '/swarms')).body.swarms.find((s: { id: string }) => s.id === scouts);
    expect(after).toMatchObject({ size: 1, agents: [{ id: 'agt_s1', status: 'stopped' }] });
    expect((await call('usr_s', 'DELETE', `/swarms/${scouts}`)).body).toEqual({ id: scouts, deleted: true });
    expect((await call('usr_s', 'DELETE', `/swarms/${scouts}`)).status).toBe(404);
    expect((await call('usr_s', 'GET', '/agents/agt_s1')).status).toBe(200);
  });

  it('without an agent host, colony status answers 500 and swarms still work', async () => {
    const bare = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC });
    try {
      const colony = await request(`${bare.url}/api/colony/status`, { headers: as('usr_s') });
      expect(colony.status).toBe(500);
      expect(colony.body).toEqual({ error: 'Provisioning is not available: the local provisioner is not configured' });
      const swarm = await request(`${bare.url}/api/swarms`, { json: { name: 'Solo' }, headers: as('usr_s') });
      expect(swarm.status).toBe(201);
    } finally {
      await bare.close();
    }
  });
});
