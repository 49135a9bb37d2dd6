import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chatSend, connectGateway } from '@aop/gateway-client';
import { startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import type { AgentHost, LocalAgentHost } from '@aop/provisioner';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb, pointAgentAt } from '../../apps/web/src/web.test-support.js';

const GATEWAY_TOKEN = 'gateway-token-of-a-two-agent-gateway';
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-gateway-agents', HMAC_SECRET: 'hmac-secret-for-gateway-agents' };

/**
 * A host that reports the agent as the OpenClaw agent `second` of its gateway (issue #20, customer-scoped gateways:
 * a customer's later agents join the gateway of their first). The rest is the local host as it is.
 */
function asSecondAgent(host: LocalAgentHost): AgentHost {
  return new Proxy(host, {
    get(target, key) {
      if (key === 'status') return async (id: string) => ({ ...(await target.status(id)), openclawAgentId: 'second' });
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

// Every call the platform makes to an agent's gateway names the agent (AgentState.openclawAgentId): REST
// `model: openclaw/<id>`, session keys `agent:<id>:…`, cron jobs' `agentId`; and what it reads back is that agent's
// only. The gateway here holds two agents, `main` (with a conversation and a job of its own) and `second`, the user's.
describe('an agent that shares its gateway with another (issue #20)', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let gateway: Awaited<ReturnType<typeof startFakeGatewayWs>>;
  let owner: { cookie: string; userId: string };
  let agentId: string;
  const call = (path: string, init: { json?: unknown; method?: string } = {}) =>
    request(`${web.url}${path}`, { ...init, headers: { cookie: owner.cookie } });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-gateway-agents-'));
    host = await fakeRuntimeHost(work);
    backend = await startBackend({ ...SHARED, GATEWAY_SHARED_TOKEN: GATEWAY_TOKEN }, { host: asSecondAgent(host) });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });
    gateway = await startFakeGatewayWs({ token: GATEWAY_TOKEN, reply: (m) => `echo: ${m}`, agents: ['main', 'second'] });

    owner = await web.signIn({ isAdmin: true });
    const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie: owner.cookie } });
    expect(res.status).toBe(200);
    agentId = res.body.agentId;
    await pointAgentAt(web, agentId, gateway.port);
    // The other agent of the gateway has a conversation and a scheduled job.
    const conn = await connectGateway({ url: gateway.url, token: GATEWAY_TOKEN });
    await chatSend(conn, { sessionKey: 'agent:main:main', message: 'not for second', timeoutMs: 5_000 });
    await conn.request('cron.add', {
      name: 'main-only',
      agentId: 'main',
      schedule: { kind: 'every', everyMs: 60_000 },
      sessionTarget: 'isolated',
      wakeMode: 'now',
      payload: { kind: 'agentTurn', message: 'tick' },
    });
    conn.close();
  });
  afterAll(async () => {
    await gateway.close();
    await web.close();
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('chats over the WebSocket in its own sessions and reads its own history', async () => {
    const res = await call('/api/gateway/chat', { json: { message: 'hello second' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, reply: 'echo: hello second', agentId });
    expect(gateway.received.filter((f) => f.method === 'chat.send').at(-1)?.params.sessionKey).toBe('agent:second:main');

    const history = await call(`/api/agents/${agentId}/messages`);
    expect(history.status).toBe(200);
    expect(history.body.sessionKey).toBe('agent:second:main');
    expect(history.body.messages.map((m: { content: string }) => m.content)).toEqual(['hello second', 'echo: hello second']);
  });

  it('chats over REST naming the agent (a gateway of two agents refuses a turn that names none)', async () => {
    const res = await call('/api/chat', { json: { message: 'rest turn', sessionKey: 'work' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, reply: 'echo: rest turn', sessionKey: 'work' });
    const sent = gateway.httpReceived.filter((r) => r.path === '/v1/chat/completions').at(-1);
    expect(sent?.body).toMatchObject({ model: 'openclaw/second' });
    // What the gateway does with a turn that names no agent: the reason every platform call names one.
    const unnamed = await fetch(`${gateway.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${GATEWAY_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openclaw/default', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(unnamed.status).toBe(400);
  });

  it('lists only its own sessions, in the session list and the gateway status', async () => {
    const sessions = await call('/api/sessions');
    expect(sessions.status).toBe(200);
    const keys = sessions.body.sessions.map((s: { sessionKey: string }) => s.sessionKey).sort();
    expect(keys).toEqual(['agent:second:main', `agent:second:openai-user:aop-owner:${owner.userId}:work`]);
    expect(gateway.received.filter((f) => f.method === 'sessions.list').at(-1)?.params).toMatchObject({ agentId: 'second' });

    const status = await call(`/api/gateway/status`);
    expect(status.status).toBe(200);
    const listed = status.body.sessions.list.map((s: { sessionKey: string }) => s.sessionKey);
    expect(listed.length).toBe(2);
    expect(listed.every((k: string) => k.startsWith('agent:second:'))).toBe(true);
  });

  it('schedules jobs for its agent and lists only those', async () => {
    const before = await call('/api/cron');
    expect(before.status).toBe(200);
    expect(before.body.jobs.map((j: { name: string }) => j.name)).not.toContain('main-only');

    const created = await call('/api/cron', {
      json: { name: 'second-job', schedule: { kind: 'every', everyMs: 3_600_000 }, payload: { kind: 'agentTurn', message: 'hi' } },
    });
    expect(created.status).toBe(200);
    expect(gateway.received.filter((f) => f.method === 'cron.add').at(-1)?.params).toMatchObject({ agentId: 'second' });
    const after = await call('/api/cron');
    expect(after.body.jobs.map((j: { name: string }) => j.name)).toEqual(['second-job']);
  });
});
