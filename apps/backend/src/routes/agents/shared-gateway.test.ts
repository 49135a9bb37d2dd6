import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalAgentHost } from '@aop/provisioner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestBackend, fakeRuntimeHost, startBackend, userCalls } from '../../backend.test-support.js';

const KEY = 'internal-key-for-shared-gateway-tests';
const HMAC = 'hmac-secret-for-shared-gateway-tests';

// Issue #20, customer-scoped gateways through the backend's API (spec §4.15 deployments and lifecycle): a customer's
// second agent lands in the first one's gateway and is still addressed as one agent (its token answer names it); what it
// cannot have in a shared gateway is refused with a 409 and a reason; another customer never shares.
describe('customer-scoped gateways through the backend', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  const call = userCalls(() => backend.url, { internalKey: KEY, hmacSecret: HMAC });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-backend-shared-'));
    host = await fakeRuntimeHost(work, { gatewayProtocol: true }, { agentsPerGateway: 4 });
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, TRUST_PROXY: '127.0.0.1' }, { host });
  });
  afterAll(async () => {
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it("puts a customer's second agent in its first one's gateway, addressed as its own agent", async () => {
    expect((await call('usr_s', 'POST', '/deployments', { agentId: 'agt_s1', config: { autoProvision: true } })).status).toBe(201);
    await host.waitUntilReady('agt_s1');
    expect((await call('usr_s', 'POST', '/deployments', { agentId: 'agt_s2', config: { autoProvision: true } })).status).toBe(201);
    await host.waitUntilReady('agt_s2');
    expect((await call('usr_o', 'POST', '/deployments', { agentId: 'agt_o1', config: { autoProvision: true } })).status).toBe(201);
    await host.waitUntilReady('agt_o1');

    const first = await call('usr_s', 'GET', '/agents/agt_s1/token');
    const second = await call('usr_s', 'GET', '/agents/agt_s2/token');
    const other = await call('usr_o', 'GET', '/agents/agt_o1/token');
    expect(first.body).toMatchObject({ agentId: 'agt_s1', control: 'direct', openclawAgentId: 'main' });
    expect(second.body).toMatchObject({ agentId: 'agt_s2', control: 'direct', openclawAgentId: 'agt_s2', token: first.body.token });
    expect(other.body).toMatchObject({ openclawAgentId: 'main' });
    expect(other.body.token).not.toBe(first.body.token);
    const [s1, s2, o1] = await Promise.all(['agt_s1', 'agt_s2', 'agt_o1'].map((id) => host.status(id)));
    expect(s2?.pid).toBe(s1?.pid);
    expect(o1?.pid).not.toBe(s1?.pid);
    // Another customer cannot reach it through the API either.
    expect((await call('usr_o', 'GET', '/agents/agt_s2/token')).status).toBe(404);

    // Its own lifecycle: stopped, the first agent runs on in the same process.
    expect((await call('usr_s', 'POST', '/agents/agt_s2/stop')).body).toEqual({ success: true, status: 'stopped' });
    expect((await host.status('agt_s2')).status).toBe('stopped');
    // The token answer says so: its gateway runs, and the web refuses the stopped agent's chat.
    expect((await call('usr_s', 'GET', '/agents/agt_s2/token')).body).toMatchObject({ openclawAgentId: 'agt_s2', status: 'stopped' });
    expect(await host.status('agt_s1')).toMatchObject({ status: 'running', pid: s1?.pid });
    expect((await call('usr_s', 'POST', '/agents/agt_s2/start')).body).toEqual({ success: true, status: 'active' });
    expect((await host.status('agt_s2')).status).toBe('running');
  });

  it('refuses a messaging channel for an agent sharing its gateway (409, the reason), and changes nothing', async () => {
    const res = await call('usr_s', 'POST', '/deployments', { agentId: 'agt_s2', config: { telegramToken: '123:abc' } });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: "Agent agt_s2 shares its gateway with the customer's other agents: messaging channels need a gateway of its own",
    });
    expect((await host.spec('agt_s2')).channelTokens ?? {}).toEqual({});
    expect((await host.status('agt_s2')).status).toBe('running');
    const listed = (await call('usr_s', 'GET', '/agents')).body as Array<{ id: string; status: string }>;
    expect(listed.find((agent) => agent.id === 'agt_s2')?.status).not.toBe('error');
  });

  it('deletes the shared agent alone: the first one keeps its gateway', async () => {
    const pid = (await host.status('agt_s1')).pid;
    expect((await call('usr_s', 'DELETE', '/agents/agt_s2')).body).toEqual({ id: 'agt_s2', deleted: true });
    expect((await call('usr_s', 'GET', '/agents/agt_s2/token')).status).toBe(404);
    expect(await host.status('agt_s1')).toMatchObject({ status: 'running', pid });
    expect((await host.list()).map((agent) => agent.agentId).sort()).toEqual(['agt_o1', 'agt_s1']);
  });
});
