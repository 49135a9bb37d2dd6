import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PLAN_NAMES, newId, toolsProfileFor } from '@aop/core';
import { connectGateway } from '@aop/gateway-client';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { type AgentState, HostingAgentHost, LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { type FakeHostingApi, request, startFakeHostingApi } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend, signedCaller, fromAnywhere } from '../../backend.test-support.js';
import { IDLE_AFTER_MS, agentRole, gatewayReadings, nodeStatus, sessionTrace } from '../../services/mission-control.js';

const KEY = 'internal-key-for-mission-control';
const HMAC = 'hmac-secret-for-mission-control';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Spec §4.17: the one node shown when no agent is reachable. */
const ATLAS = { id: 'atlas', name: 'atlas', role: 'orchestrator', status: 'offline', x: 400, y: 300, load: 0, memory: 0 };

/** Headers the web service sends for a user (spec §5). */
/** Headers the web service sends for a user (spec §5). */
const as = (userId: string, email?: string, role?: string) => signedCaller({ internalKey: KEY, hmacSecret: HMAC }, userId, email, role);

/** GET /api/mission-control/fleet/<what>?userId=<userId>, with the user's signed context unless `headers` replaces it. */
function fleet(backend: TestBackend, what: string, userId: string | null, headers: Record<string, string> = as(userId ?? 'x')) {
  const query = userId === null ? '' : `?userId=${encodeURIComponent(userId)}`;
  return request(`${backend.url}/api/mission-control/fleet/${what}${query}`, { headers: { ...headers, ...fromAnywhere() } });
}

function deploy(backend: TestBackend, userId: string, agentId: string, name: string, plan: string) {
  return request(`${backend.url}/api/deployments`, {
    headers: { ...as(userId), ...fromAnywhere() },
    json: { agentId, name, config: { autoProvision: true, plan } },
  });
}

/** A usage-ledger row, as the web service (chat turns) or the backend (AI calls) writes them in the shared database. */
async function ledger(
  backend: TestBackend,
  row: { userId: string; agentId?: string; kind: string; tokens?: number; costUsd: number | string; at?: Date },
) {
  await backend.database.db.kysely
    .insertInto('usage_events')
    .values({
      id: newId('usage'),
      user_id: row.userId,
      agent_id: row.agentId ?? null,
      agent_name: null,
      kind: row.kind,
      model: 'openrouter/anthropic/claude-sonnet-4.5',
      total_tokens: row.tokens ?? 0,
      cost_usd: row.costUsd,
      ...(row.at ? { created_at: row.at } : {}),
    })
    .execute();
}

/** A message the underground bus delivered (or failed to deliver) from one agent to another, as the bus records it. */
async function busMessage(backend: TestBackend, from: string, to: string, status: 'delivered' | 'failed' = 'delivered') {
  const messageId = newId('message');
  await backend.database.db.kysely
    .insertInto('underground_bus_messages')
    .values({
      message_id: messageId,
      action: 'HELLO',
      kind: 'direct',
      from_agent_id: from,
      from_address: `0x${'1'.repeat(40)}`,
      to_agent_id: to,
      message: JSON.stringify({ messageId, action: 'HELLO' }),
      status,
    })
    .execute();
  await backend.database.db.kysely
    .insertInto('underground_bus_deliveries')
    .values({ message_id: messageId, agent_id: to, status })
    .execute();
}

// Spec §4.17 mission control (backend), §2.10 shapes, §3.4 node statuses, §5 internal key. The agent host is the real
// local provider running a stand-in OpenClaw CLI that serves /healthz and /readyz.
describe('backend mission control: graph, costs, bookings, auth', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-mission-control-'));
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
  });
  afterAll(async () => {
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('needs the internal key and a userId; a user context must name the same user', async () => {
    const url = `${backend.url}/api/mission-control/fleet/graph?userId=usr_a`;
    const none = await request(url);
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: 'Unauthorized' });
    const notBearer = await request(url, { headers: { authorization: KEY } });
    expect(notBearer.status).toBe(401);
    const wrong = await request(url, { headers: { authorization: 'Bearer not-the-internal-key' } });
    expect(wrong.status).toBe(403);
    expect(wrong.body).toEqual({ error: 'Forbidden' });

    for (const what of ['graph', 'traces', 'costs', 'bookings']) {
      const missing = await fleet(backend, what, null, { authorization: `Bearer ${KEY}` });
      expect(missing.status, what).toBe(401);
      expect(missing.body).toEqual({ error: 'Unauthorized' });
      const empty = await fleet(backend, what, '', { authorization: `Bearer ${KEY}` });
      expect(empty.status, what).toBe(401);
    }
    for (const bad of ['bad id!', 'x'.repeat(65), '-leading-dash']) {
      const res = await fleet(backend, 'graph', bad, { authorization: `Bearer ${KEY}` });
      expect(res.status, bad).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid userId' });
    }
    const twice = await request(`${backend.url}/api/mission-control/fleet/costs?userId=usr_a&userId=usr_b`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(twice.status).toBe(400);
    expect(twice.body).toEqual({ error: 'Invalid userId' });

    // The key and the userId are enough (an operator); a user context the web adds is verified and must agree.
    expect((await fleet(backend, 'bookings', 'usr_a', { authorization: `Bearer ${KEY}` })).status).toBe(200);
    expect((await fleet(backend, 'bookings', '42', { authorization: `Bearer ${KEY}` })).status).toBe(200);
    const otherUser = await fleet(backend, 'costs', 'usr_a', as('usr_b'));
    expect(otherUser.status).toBe(403);
    expect(otherUser.body).toEqual({ error: 'Forbidden' });
    const forged = await fleet(backend, 'costs', 'usr_b', { ...as('usr_a'), 'x-user-id': 'usr_b' });
    expect(forged.status).toBe(401);
    expect(forged.body).toEqual({ error: 'INVALID_SIGNATURE' });
    const unsigned = await fleet(backend, 'costs', 'usr_a', { authorization: `Bearer ${KEY}`, 'x-user-id': 'usr_a' });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body).toEqual({ error: 'SIGNATURE_REQUIRED' });
  });

  it('a user without agents gets exactly the fallback node, no traces, zero costs and no bookings', async () => {
    const graph = await fleet(backend, 'graph', 'usr_nobody');
    expect(graph.status).toBe(200);
    expect(graph.body).toEqual({ nodes: [ATLAS], edges: [], timestamp: expect.stringMatching(ISO), source: 'fallback' });
    expect(graph.body).not.toHaveProperty('nodeCount');
    expect((await fleet(backend, 'traces', 'usr_nobody')).body).toEqual([]);
    expect((await fleet(backend, 'costs', 'usr_nobody')).body).toEqual({
      costs: [],
      totalSpend: 0,
      managedAiCost: 0,
      coordinationRevenue: 0,
    });
    expect((await fleet(backend, 'bookings', 'usr_nobody')).body).toEqual({ bookings: [] });
  });

  it("builds the graph live from the user's agents: roles, ring layout, statuses, load, memory, edges", async () => {
    // The first agent made is the orchestrator; a coding-profile plan makes a specialist, a messaging one a worker.
    for (const [id, name, plan] of [
      ['agt_mc_lead', 'Lead', 'collective'],
      ['agt_mc_research', 'Research', 'label'],
      ['agt_mc_inbox', 'Inbox', 'solo'],
    ] as const) {
      const res = await deploy(backend, 'usr_fleet', id, name, plan);
      expect(res.status).toBe(201);
      await host.waitUntilReady(id, { timeoutMs: 10_000 });
    }
    // Traffic of the last 7 days sets the edge strengths (relative to the busiest agent); older rows do not count.
    await ledger(backend, { userId: 'usr_fleet', agentId: 'agt_mc_research', kind: 'chat', tokens: 1000, costUsd: 0 });
    await ledger(backend, { userId: 'usr_fleet', agentId: 'agt_mc_inbox', kind: 'chat', tokens: 250, costUsd: 0 });
    await ledger(backend, {
      userId: 'usr_fleet',
      agentId: 'agt_mc_inbox',
      kind: 'chat',
      tokens: 90_000,
      costUsd: 0,
      at: new Date(Date.now() - 8 * 86_400_000),
    });

    const res = await fleet(backend, 'graph', 'usr_fleet');
    expect(res.status).toBe(200);
    const lead = (await host.status('agt_mc_lead')) as AgentState;
    expect(res.body).toEqual({
      nodes: [
        {
          id: 'agt_mc_lead',
          name: 'Lead',
          role: 'orchestrator',
          status: 'active',
          x: 400,
          y: 300,
          load: expect.any(Number),
          memory: expect.any(Number),
          children: 2,
          url: lead.url,
        },
        // Two others: straight above and straight below the orchestrator, 200 away.
        {
          id: 'agt_mc_research',
          name: 'Research',
          role: 'specialist',
          status: 'active',
          x: 400,
          y: 100,
          load: expect.any(Number),
          memory: expect.any(Number),
        },
        {
          id: 'agt_mc_inbox',
          name: 'Inbox',
          role: 'worker',
          status: 'active',
          x: 400,
          y: 500,
          load: expect.any(Number),
          memory: expect.any(Number),
        },
      ],
      edges: [
        { id: 'agt_mc_lead->agt_mc_research', from: 'agt_mc_lead', to: 'agt_mc_research', strength: 1, basis: 'work' },
        { id: 'agt_mc_lead->agt_mc_inbox', from: 'agt_mc_lead', to: 'agt_mc_inbox', strength: 0.25, basis: 'work' },
      ],
      timestamp: expect.stringMatching(ISO),
      source: 'soul',
      nodeCount: 3,
    });
    for (const node of res.body.nodes) {
      expect(node.load).toBeGreaterThanOrEqual(0);
      expect(node.load).toBeLessThanOrEqual(100);
      // A running gateway holds some memory of its plan's limit (2 GiB for solo, 4 GiB collective, 8 GiB label).
      expect(node.memory).toBeGreaterThanOrEqual(0);
      expect(node.memory).toBeLessThanOrEqual(100);
    }

    // Another user sees none of it.
    expect((await fleet(backend, 'graph', 'usr_stranger')).body).toMatchObject({ nodes: [ATLAS], source: 'fallback' });
  });

  it('agent-to-agent bus traffic inside the fleet makes the edges; a wallet shows on its agent', async () => {
    await busMessage(backend, 'agt_mc_research', 'agt_mc_inbox');
    await busMessage(backend, 'agt_mc_research', 'agt_mc_inbox');
    await busMessage(backend, 'agt_mc_lead', 'agt_mc_research');
    // Not fleet traffic: undelivered, or with an agent of someone else.
    await busMessage(backend, 'agt_mc_lead', 'agt_mc_inbox', 'failed');
    await busMessage(backend, 'agt_mc_lead', 'agt_someone_elses');
    const address = `0x${'ab'.repeat(20)}`;
    await backend.database.db.kysely
      .insertInto('underground_wallets')
      .values({ address, agent_id: 'agt_mc_research', user_id: 'usr_fleet', private_key_enc: 'sealed-by-the-wallet-endpoint' })
      .execute();

    const res = await fleet(backend, 'graph', 'usr_fleet');
    expect(res.body.edges).toEqual([
      { id: 'agt_mc_lead->agt_mc_research', from: 'agt_mc_lead', to: 'agt_mc_research', strength: 0.5, basis: 'messages' },
      { id: 'agt_mc_research->agt_mc_inbox', from: 'agt_mc_research', to: 'agt_mc_inbox', strength: 1, basis: 'messages' },
    ]);
    expect(res.body.nodes.map((n: { walletAddress?: string }) => n.walletAddress)).toEqual([undefined, address, undefined]);
  });

  it("bookings are the negotiations the user's agents take part in, most recently moved first", async () => {
    const negotiation = (id: string, requester: string, responder: string, status: string, updatedAt: Date) =>
      backend.database.db.kysely
        .insertInto('underground_negotiations')
        .values({
          id,
          requester_agent_id: requester,
          responder_agent_id: responder,
          status: status as 'open',
          terms: JSON.stringify({ fee: 150, date: '2026-06-01T20:00:00.000Z', venue: 'Basement' }),
          round: 2,
          last_offer_by: responder,
          last_message_id: `${id}-2`,
          created_at: new Date(updatedAt.getTime() - 60_000),
          updated_at: updatedAt,
        })
        .execute();
    await negotiation('msg_booking_old', 'agt_mc_research', 'agt_other_venue', 'accepted', new Date('2026-02-01T10:00:00Z'));
    await negotiation('msg_booking_new', 'agt_other_dj', 'agt_mc_inbox', 'open', new Date('2026-02-02T10:00:00Z'));
    await negotiation('msg_booking_foreign', 'agt_other_dj', 'agt_other_venue', 'open', new Date('2026-02-03T10:00:00Z'));

    const res = await fleet(backend, 'bookings', 'usr_fleet');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      bookings: [
        {
          id: 'msg_booking_new',
          status: 'open',
          round: 2,
          requesterAgentId: 'agt_other_dj',
          responderAgentId: 'agt_mc_inbox',
          terms: { fee: 150, date: '2026-06-01T20:00:00.000Z', venue: 'Basement' },
          lastOfferBy: 'agt_mc_inbox',
          createdAt: '2026-02-02T09:59:00.000Z',
          updatedAt: '2026-02-02T10:00:00.000Z',
        },
        expect.objectContaining({ id: 'msg_booking_old', status: 'accepted', requesterAgentId: 'agt_mc_research' }),
      ],
    });
    expect((await fleet(backend, 'bookings', 'usr_stranger')).body).toEqual({ bookings: [] });
  });

  it('a stopped agent is offline; when none answers, the graph is the fallback node again', async () => {
    const stop = async (id: string) => {
      const res = await request(`${backend.url}/api/agents/${id}/stop`, { method: 'POST', headers: as('usr_fleet') });
      expect(res.body).toEqual({ success: true, status: 'stopped' });
    };
    await stop('agt_mc_inbox');
    const one = await fleet(backend, 'graph', 'usr_fleet');
    expect(one.body.source).toBe('soul');
    expect(one.body.nodeCount).toBe(3);
    expect(one.body.nodes.map((n: { id: string; status: string }) => [n.id, n.status])).toEqual([
      ['agt_mc_lead', 'active'],
      ['agt_mc_research', 'active'],
      ['agt_mc_inbox', 'offline'],
    ]);
    expect(one.body.nodes[2]).toMatchObject({ role: 'worker', load: 0, memory: 0, x: 400, y: 500 });
    expect(one.body.edges).toHaveLength(2);

    // The orchestrator itself may be the one that is down: the others still make a live graph.
    await stop('agt_mc_lead');
    const two = await fleet(backend, 'graph', 'usr_fleet');
    expect(two.body.source).toBe('soul');
    expect(two.body.nodes[0]).toMatchObject({ id: 'agt_mc_lead', role: 'orchestrator', status: 'offline', load: 0, memory: 0 });

    await stop('agt_mc_research');
    const none = await fleet(backend, 'graph', 'usr_fleet');
    expect(none.body).toEqual({ nodes: [ATLAS], edges: [], timestamp: expect.stringMatching(ISO), source: 'fallback' });
    // No instance is reachable: no traces.
    expect((await fleet(backend, 'traces', 'usr_fleet')).body).toEqual([]);
  });

  it('a fleet that is all asleep is still its own agents: the sleeping one idle and asleep, with no load or memory', async () => {
    // Continues from the stopped fleet above: one agent started again, then put to sleep as the idle check does.
    const start = await request(`${backend.url}/api/agents/agt_mc_research/start`, { method: 'POST', headers: as('usr_fleet') });
    expect(start.status, JSON.stringify(start.body)).toBe(200);
    await host.waitUntilReady('agt_mc_research', { timeoutMs: 10_000 });
    expect((await host.hibernate('agt_mc_research')).status).toBe('hibernated');

    const asleep = await fleet(backend, 'graph', 'usr_fleet');
    expect(asleep.body.source).toBe('soul');
    expect(asleep.body.nodeCount).toBe(3);
    expect(asleep.body.nodes.map((n: { id: string; status: string; asleep?: boolean }) => [n.id, n.status, n.asleep])).toEqual([
      ['agt_mc_lead', 'offline', undefined],
      ['agt_mc_research', 'idle', true],
      ['agt_mc_inbox', 'offline', undefined],
    ]);
    expect(asleep.body.nodes[1]).toMatchObject({ load: 0, memory: 0 });
  });

  it("costs come from the user's usage ledger: all spend, and the part run on the platform's AI keys", async () => {
    await ledger(backend, { userId: 'usr_spend', kind: 'ai-chat', costUsd: '0.5' });
    await ledger(backend, { userId: 'usr_spend', kind: 'plugin', costUsd: '0.25' });
    await ledger(backend, { userId: 'usr_spend', agentId: 'agt_x', kind: 'chat', costUsd: '1.125' });
    await ledger(backend, { userId: 'usr_spend', kind: 'chat', costUsd: '0.00004' });
    await ledger(backend, { userId: 'usr_other_spender', kind: 'ai-chat', costUsd: '10' });
    const res = await fleet(backend, 'costs', 'usr_spend');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ costs: [], totalSpend: 1.875, managedAiCost: 0.75, coordinationRevenue: 0 });
    expect((await fleet(backend, 'bookings', 'usr_spend')).body).toEqual({ bookings: [] });
  });
});

// Traces are the sessions of the user's agents, read over each gateway's WebSocket protocol with the agent's token.
// Here the agent runs on the hosting provider (a local GraphQL server) behind a domain served by a protocol-speaking
// gateway on 127.0.0.1.
describe('backend mission control: traces from the agents’ gateways', () => {
  const TOKEN = 'shared-gateway-token-for-mission-control';
  let work: string;
  let api: FakeHostingApi;
  let gateway: FakeGatewayWs;
  let host: HostingAgentHost;
  let backend: TestBackend;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-mission-traces-'));
    api = await startFakeHostingApi({ apiKey: 'hosting-key' });
    gateway = await startFakeGatewayWs({ token: TOKEN, reply: (m) => `done: ${m}`, stallChatMessage: 'keep working' });
    host = new HostingAgentHost({
      apiUrl: api.url,
      apiKey: 'hosting-key',
      projectId: 'proj-1',
      environmentId: 'env-1',
      image: 'ghcr.io/openclaw/openclaw:2026.9.6',
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      pollMs: 20,
      readyTimeoutMs: 5_000,
      gatewayUrl: () => gateway.httpUrl,
    });
    backend = await startBackend(
      { INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, TRUST_PROXY: '127.0.0.1', GATEWAY_SHARED_TOKEN: TOKEN },
      { host },
    );
    expect((await deploy(backend, 'usr_traces', 'agt_mc_hosted', 'Hosted', 'collective')).status).toBe(201);
    await host.waitUntilReady('agt_mc_hosted', { timeoutMs: 5_000 });
  });
  afterAll(async () => {
    await backend.close();
    await host.shutdown();
    await gateway.close();
    await api.close();
    await rm(work, { recursive: true, force: true });
  });

  const pause = () => new Promise((r) => setTimeout(r, 15));

  it('lists the sessions as traces, newest first: completed, idle and running', async () => {
    // A finished REST turn, then a session nothing ran in yet, then a run that is still going.
    const chat = await fetch(`${gateway.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openclaw', user: 'alice', messages: [{ role: 'user', content: 'plan the launch' }] }),
    });
    const usage = ((await chat.json()) as { usage: { total_tokens: number } }).usage;
    await pause();
    const conn = await connectGateway({ url: gateway.url, token: TOKEN });
    await conn.request('sessions.create', { key: 'weekly-report', label: 'Weekly report' });
    await conn.close();
    await pause();
    await fetch(`${gateway.httpUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openclaw', user: 'bob', messages: [{ role: 'user', content: 'keep working' }] }),
      signal: AbortSignal.timeout(200),
    }).catch(() => undefined);

    const sessionId = (key: string) => gateway.sessions.get(key)?.sessionId;
    const res = await fleet(backend, 'traces', 'usr_traces');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        id: `agt_mc_hosted:${sessionId('agent:main:openai-user:bob')}`,
        status: 'running',
        description: 'Hosted: agent:main:openai-user:bob',
        startedAt: expect.stringMatching(ISO),
        completedAt: null,
        tokensUsed: 0,
        costUSD: 0,
        model: 'fake/fake-1',
      },
      {
        id: `agt_mc_hosted:${sessionId('agent:main:weekly-report')}`,
        status: 'idle',
        description: 'Hosted: Weekly report',
        startedAt: expect.stringMatching(ISO),
        completedAt: null,
        tokensUsed: 0,
        costUSD: 0,
        model: 'fake/fake-1',
      },
      {
        id: `agt_mc_hosted:${sessionId('agent:main:openai-user:alice')}`,
        status: 'completed',
        description: 'Hosted: agent:main:openai-user:alice',
        startedAt: expect.stringMatching(ISO),
        completedAt: expect.stringMatching(ISO),
        tokensUsed: usage.total_tokens,
        costUSD: 0,
        model: 'fake/fake-1',
      },
    ]);
    // Asked over the protocol with the agent's token, for at most 20 sessions.
    const listed = gateway.received.filter((f) => f.method === 'sessions.list').at(-1);
    expect(listed?.params).toMatchObject({ limit: 20 });

    // The graph of this fleet is live too (the hosting provider reports no process figures: load and memory 0).
    const graph = await fleet(backend, 'graph', 'usr_traces');
    expect(graph.body).toMatchObject({
      source: 'soul',
      nodeCount: 1,
      edges: [],
      nodes: [{ id: 'agt_mc_hosted', role: 'orchestrator', status: 'active', x: 400, y: 300, load: 0, memory: 0, children: 0 }],
    });
  });

  it('lists at most 20 traces', async () => {
    const conn = await connectGateway({ url: gateway.url, token: TOKEN });
    for (let i = 0; i < 22; i++) {
      await conn.request('sessions.create', { key: `batch-${i}` });
      await pause();
    }
    await conn.close();
    const res = await fleet(backend, 'traces', 'usr_traces');
    expect(res.body).toHaveLength(20);
    expect(res.body[0].description).toBe('Hosted: agent:main:batch-21');
  });

  it('a gateway that refuses the agent token gives no traces, not an error', async () => {
    const other = await startFakeGatewayWs({ token: 'a-different-token-for-this-gateway' });
    const previous = gateway;
    try {
      gateway = other;
      const res = await fleet(backend, 'traces', 'usr_traces');
      expect(res.status).toBe(200);
      expect(res.body).toEqual([]);
      expect(other.connectAttempts).toEqual([{ ok: false, code: 'UNAUTHORIZED' }]);
    } finally {
      gateway = previous;
      await other.close();
    }
  });
});

// The status rules of spec §3.4 that depend on time or on a gateway in between states.
describe('fleet node status and session traces', () => {
  const now = Date.parse('2026-03-01T12:00:00.000Z');
  const running = (readyAt: string | null) =>
    ({
      agentId: 'a',
      userId: 'u',
      openclawAgentId: 'main',
      status: 'running',
      version: '1',
      url: null,
      port: null,
      pid: 1,
      startedAt: null,
      readyAt,
      restarts: 0,
      lastError: null,
    }) as const;
  const ready = { live: true, ready: true, failing: [], uptimeMs: 1 };

  it('agents sharing a gateway show one reading of it (two reads of one process a moment apart differ)', () => {
    const stats = (cpuPercent: number) => ({ cpuPercent, memoryBytes: cpuPercent * 1e6, pids: 1, uptimeMs: 1 });
    const at = running(null);
    const probes = [
      { state: { ...at, sharesGatewayWith: ['b'] }, health: ready, stats: stats(3) },
      { state: { ...at, sharesGatewayWith: ['a'] }, health: ready, stats: stats(4) },
      { state: at, health: ready, stats: stats(9) },
      { state: at, health: null, stats: null },
    ];
    const readings = gatewayReadings(['a', 'b', 'c', 'd'], probes);
    expect([...readings]).toEqual([
      ['a', stats(3)],
      ['b', stats(3)],
      ['c', stats(9)],
      ['d', null],
    ]);
    // The first companion without a reading leaves it to the next one that has one.
    expect(gatewayReadings(['a', 'b'], [{ ...probes[0]!, stats: null }, probes[1]!]).get('a')).toEqual(stats(4));
  });

  it('active, idle, stale and offline', () => {
    const justReady = new Date(now - 60_000).toISOString();
    const longAgo = new Date(now - IDLE_AFTER_MS - 1).toISOString();
    expect(nodeStatus({ state: running(justReady), health: ready, stats: null }, null, now)).toBe('active');
    expect(nodeStatus({ state: running(longAgo), health: ready, stats: null }, null, now)).toBe('idle');
    expect(nodeStatus({ state: running(longAgo), health: ready, stats: null }, now - 5_000, now)).toBe('active');
    const notReady = { live: true, ready: false, failing: ['startup-sidecars'], uptimeMs: 1 };
    expect(nodeStatus({ state: running(justReady), health: notReady, stats: null }, null, now)).toBe('stale');
    expect(nodeStatus({ state: { ...running(null), status: 'starting' }, health: null, stats: null }, null, now)).toBe('stale');
    expect(nodeStatus({ state: { ...running(null), status: 'restarting' }, health: null, stats: null }, null, now)).toBe('stale');
    const down = { live: false, ready: false, failing: [], uptimeMs: null };
    expect(nodeStatus({ state: running(justReady), health: down, stats: null }, null, now)).toBe('offline');
    expect(nodeStatus({ state: running(justReady), health: null, stats: null }, null, now)).toBe('offline');
    for (const status of ['stopping', 'stopped', 'error'] as const) {
      expect(nodeStatus({ state: { ...running(justReady), status }, health: null, stats: null }, null, now)).toBe('offline');
    }
    expect(nodeStatus({ state: null, health: null, stats: null }, now, now)).toBe('offline');
  });

  it('an agent without a tool profile takes its plan’s from the plan catalogue: coding → specialist, else worker', () => {
    for (const plan of [...PLAN_NAMES, 'mystery']) {
      expect(agentRole({ plan, config: {} }), plan).toBe(toolsProfileFor(plan) === 'coding' ? 'specialist' : 'worker');
    }
    expect(agentRole({ plan: 'solo', config: { tools: { profile: 'full' } } })).toBe('specialist');
    expect(agentRole({ plan: 'network', config: { tools: { profile: 'minimal' } } })).toBe('worker');
  });

  it('a session row as a trace', () => {
    const agent = { id: 'agt_1', name: 'Scout' };
    const finished = sessionTrace(
      agent,
      {
        key: 'agent:main:cron:job-1:run:r1',
        sessionId: 'sess-1',
        derivedTitle: 'Summarize yesterday',
        status: 'failed',
        inputTokens: 120,
        outputTokens: 30,
        model: 'claude-sonnet-4.5',
        modelProvider: 'anthropic',
        startedAt: now - 10_000,
        endedAt: now - 4_000,
        updatedAt: now - 3_000,
      },
      null,
    );
    expect(finished).toEqual({
      at: now - 3_000,
      trace: {
        id: 'agt_1:sess-1',
        status: 'completed',
        description: 'Scout: Summarize yesterday',
        startedAt: new Date(now - 10_000).toISOString(),
        completedAt: new Date(now - 4_000).toISOString(),
        tokensUsed: 150,
        costUSD: 0,
        model: 'anthropic/claude-sonnet-4.5',
      },
    });
    // An agent sharing its customer's gateway runs the platform's LLM through a provider of its own: named as the platform's.
    const shared = { key: 'agent:agt_x:main', updatedAt: now, totalTokens: 5, model: 'gpt-4.1-mini', modelProvider: 'platform-agt_x' };
    expect(sessionTrace(agent, shared, null)?.trace.model).toBe('platform/gpt-4.1-mini');
    expect(sessionTrace(agent, { key: 'agent:agt_x:main', updatedAt: now, totalTokens: 5 }, 'platform-agt_x/m')?.trace.model).toBe(
      'platform/m',
    );
    expect(sessionTrace(agent, { key: 'k', updatedAt: now, hasActiveRun: true, totalTokens: 9 }, 'fake/fake-1')?.trace).toMatchObject({
      status: 'running',
      completedAt: null,
      tokensUsed: 9,
      model: 'fake/fake-1',
      description: 'Scout: k',
    });
    // Rows without a key or any time are skipped; a long title is cut.
    expect(sessionTrace(agent, { updatedAt: now }, null)).toBeNull();
    expect(sessionTrace(agent, { key: 'k' }, null)).toBeNull();
    expect(sessionTrace(agent, { key: 'k', label: 'x'.repeat(500), updatedAt: now }, null)?.trace.description).toHaveLength(200);
  });
});
