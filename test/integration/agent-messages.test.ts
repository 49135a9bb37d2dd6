import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chatSend, connectGateway } from '@aop/gateway-client';
import { startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb, pointAgentAt } from '../../apps/web/src/web.test-support.js';

const GATEWAY_TOKEN = 'shared-gateway-token-for-tests';
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-messages-tests', HMAC_SECRET: 'hmac-secret-for-messages-tests' };

// Spec §4.15 GET /api/agents/:id/messages: read from the agent's gateway over its WebSocket protocol
// (here a gateway speaking protocol v4 on 127.0.0.1, reached with the token the backend hands out).
describe('GET /api/agents/:id/messages', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let gateway: Awaited<ReturnType<typeof startFakeGatewayWs>>;
  let owner: { cookie: string; userId: string };
  let agentId: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-messages-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend({ ...SHARED, GATEWAY_SHARED_TOKEN: GATEWAY_TOKEN }, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });
    gateway = await startFakeGatewayWs({ token: GATEWAY_TOKEN, reply: (m) => `echo: ${m}` });

    owner = await web.signIn({ isAdmin: true });
    const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie: owner.cookie } });
    expect(res.status).toBe(200);
    agentId = res.body.agentId;
    // The agent's gateway is the protocol-speaking one; one conversation already happened.
    await pointAgentAt(web, agentId, gateway.port);
    const conn = await connectGateway({ url: gateway.url, token: GATEWAY_TOKEN });
    await chatSend(conn, { sessionKey: 'main', message: 'hello agent', timeoutMs: 5_000 });
    conn.close();
  });
  afterAll(async () => {
    await gateway.close();
    await web.close();
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('returns the history of the main session, oldest first', async () => {
    const res = await request(`${web.url}/api/agents/${agentId}/messages`, { headers: { cookie: owner.cookie } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ agentId, sessionKey: 'agent:main:main', total: 2, hasMore: false });
    expect(res.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'hello agent'],
      ['assistant', 'echo: hello agent'],
    ]);
    const history = gateway.received.filter((f) => f.method === 'chat.history').at(-1);
    expect(history?.params).toMatchObject({ sessionKey: 'agent:main:main', limit: 50 });
  });

  it('clamps the limit and passes another session key', async () => {
    const res = await request(`${web.url}/api/agents/${agentId}/messages?sessionKey=other&limit=5000`, {
      headers: { cookie: owner.cookie },
    });
    expect(res.body).toMatchObject({ sessionKey: 'agent:main:other', messages: [], total: 0 });
    expect(gateway.received.filter((f) => f.method === 'chat.history').at(-1)?.params).toMatchObject({
      sessionKey: 'agent:main:other',
      limit: 200,
    });
  });

  it('401 without a session, 404 for another user, 502 when the gateway refuses', async () => {
    expect((await request(`${web.url}/api/agents/${agentId}/messages`)).status).toBe(401);
    const other = await web.signIn();
    expect((await request(`${web.url}/api/agents/${agentId}/messages`, { headers: { cookie: other.cookie } })).status).toBe(404);
    const closed = await startFakeGatewayWs({ token: 'a-different-token-entirely' });
    try {
      await pointAgentAt(web, agentId, closed.port);
      const res = await request(`${web.url}/api/agents/${agentId}/messages`, { headers: { cookie: owner.cookie } });
      expect(res.status).toBe(502);
      expect(res.body.error).toMatch(/^Agent gateway error/);
    } finally {
      await closed.close();
      await pointAgentAt(web, agentId, gateway.port);
    }
  });

  it('waits for a gateway that is still starting (UNAVAILABLE on connect) instead of failing the read', async () => {
    const starting = await startFakeGatewayWs({ token: GATEWAY_TOKEN, unavailableConnects: 2, retryAfterMs: 100 });
    try {
      await pointAgentAt(web, agentId, starting.port);
      const res = await request(`${web.url}/api/agents/${agentId}/messages`, { headers: { cookie: owner.cookie } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ sessionKey: 'agent:main:main', messages: [], total: 0 });
      expect(starting.connectAttempts.length).toBe(3);
    } finally {
      await starting.close();
      await pointAgentAt(web, agentId, gateway.port);
    }
  });

  it('409 while the agent has no address yet; 502 when the backend has no token for it', async () => {
    const rows = web.database.db.kysely;
    await rows
      .insertInto('agents')
      .values([
        { id: 'agt_messages_pending', user_id: owner.userId, name: 'Pending', status: 'pending', url: null },
        // Recorded with an address, unknown to the backend's host: it has no token to give.
        { id: 'agt_messages_unknown', user_id: owner.userId, name: 'Unknown', status: 'running', url: `http://127.0.0.1:${gateway.port}` },
      ])
      .execute();
    try {
      const pending = await request(`${web.url}/api/agents/agt_messages_pending/messages`, { headers: { cookie: owner.cookie } });
      expect(pending.status).toBe(409);
      expect(pending.body).toEqual({ error: 'Agent is not deployed' });
      const unknown = await request(`${web.url}/api/agents/agt_messages_unknown/messages`, { headers: { cookie: owner.cookie } });
      expect(unknown.status).toBe(502);
      expect(unknown.body).toEqual({ error: 'No gateway token: the backend gave none' });
    } finally {
      await rows.deleteFrom('agents').where('id', 'in', ['agt_messages_pending', 'agt_messages_unknown']).execute();
    }
  });
});
