import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import type { LocalAgentHost } from '@aop/provisioner';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { conditionHolds, runWorkflow } from '../../apps/web/src/modules/workflows/workflow-runs.service.js';
import { startWeb, type TestWeb, pointAgentAt } from '../../apps/web/src/web.test-support.js';

const GATEWAY_TOKEN = 'agent-gateway-token-for-workflow-runs';
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-workflow-runs', HMAC_SECRET: 'hmac-secret-for-workflow-runs' };
/** The message an action "explode" sends with the input "boom": the fake gateway fails exactly that turn. */
const FAILING_TURN = 'explode\n\nInput from the previous step:\nboom';
/** A turn the fake gateway starts and never finishes. */
const STALLING_TURN = 'hang\n\nInput from the previous step:\nwait';

type User = { cookie: string; userId: string; agentId: string };
interface NodeSpec {
  key: string;
  type: 'trigger' | 'action' | 'condition' | 'output';
  next?: string[];
  [setting: string]: unknown;
}

/** Nodes as the editor saves them: the key, the connections in `config.next`, the type's setting. */
const nodes = (specs: NodeSpec[]) =>
  specs.map(({ key, type, next, ...settings }, i) => ({
    type,
    config: { label: `${type} ${key}`, key, ...(next ? { next } : {}), ...settings },
    position: { x: i * 200, y: 0 },
  }));

// Issue #19: POST /api/workflows/:id/run executes the nodes against the owner's agent (here a gateway speaking OpenClaw's
// protocol v4 on 127.0.0.1, reached with the token the backend hands out), and GET …/runs lists what was recorded.
describe('workflow runs', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  /** The same, with agent turns bounded to 300 ms. */
  let quick: TestWeb;
  let gateway: FakeGatewayWs;
  let owner: User;
  let quickOwner: User;

  const call = (base: string, path: string, init: Parameters<typeof request>[1] & { cookie?: string } = {}) => {
    const { cookie, ...rest } = init;
    return request(`${base}${path}`, { ...rest, headers: { ...rest.headers, ...(cookie ? { cookie } : {}) } });
  };

  async function userWithAgent(service: TestWeb): Promise<User> {
    const user = await service.signIn({ isAdmin: true });
    const res = await request(`${service.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie: user.cookie } });
    expect(res.status).toBe(200);
    await pointAgentAt(service, res.body.agentId, gateway.port);
    return { ...user, agentId: res.body.agentId };
  }

  async function workflow(service: TestWeb, user: { cookie: string }, specs: NodeSpec[], extra: Record<string, unknown> = {}) {
    const res = await call(service.url, '/api/workflows', { cookie: user.cookie, json: { name: 'Run me', nodes: nodes(specs), ...extra } });
    expect(res.status).toBe(201);
    return res.body.workflow.id as string;
  }

  const run = (service: TestWeb, user: { cookie: string }, id: string, json: unknown = {}) =>
    call(service.url, `/api/workflows/${id}/run`, { cookie: user.cookie, method: 'POST', json });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-workflow-runs-'));
    host = await fakeRuntimeHost(work);
    backend = await startBackend({ ...SHARED, GATEWAY_SHARED_TOKEN: GATEWAY_TOKEN }, { host });
    gateway = await startFakeGatewayWs({
      token: GATEWAY_TOKEN,
      // The agent answers in kind: an urgent input gets an urgent summary.
      reply: (m) =>
        m.toLowerCase().includes('urgent') ? `URGENT summary of: ${m.split('\n').at(-1)}` : `calm summary of: ${m.split('\n').at(-1)}`,
      failChatMessage: FAILING_TURN,
      stallChatMessage: STALLING_TURN,
    });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });
    quick = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, GATEWAY_CHAT_TIMEOUT_MS: '300' });
    owner = await userWithAgent(web);
    quickOwner = await userWithAgent(quick);
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await quick?.close();
    await web?.close();
    await backend?.close();
    await host?.shutdown();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('runs trigger → action → output: the action is an agent turn, its answer the result; the run is recorded', async () => {
    const id = await workflow(web, owner, [
      { key: 't', type: 'trigger', event: 'new mail', next: ['a'] },
      { key: 'a', type: 'action', action: 'Summarise this mail', next: ['o'] },
      { key: 'o', type: 'output', destination: 'email' },
    ]);
    const sends = gateway.received.filter((f) => f.method === 'chat.send').length;
    const res = await run(web, owner, id, { input: 'Quarterly report attached' });
    expect(res.status).toBe(201);
    const result = 'calm summary of: Quarterly report attached';
    expect(res.body.run).toEqual({
      id: expect.stringMatching(/^wfr_/),
      workflowId: id,
      status: 'succeeded',
      input: 'Quarterly report attached',
      result,
      error: null,
      steps: [
        expect.objectContaining({ key: 't', type: 'trigger', status: 'succeeded', output: 'Quarterly report attached' }),
        expect.objectContaining({ key: 'a', type: 'action', label: 'action a', status: 'succeeded', output: result, error: null }),
        expect.objectContaining({ key: 'o', type: 'output', status: 'succeeded', input: result, output: result }),
      ],
      startedAt: expect.any(String),
      finishedAt: expect.any(String),
    });
    // One turn, in the run's own session, with the operation and the trigger's input.
    const turns = gateway.received.filter((f) => f.method === 'chat.send').slice(sends);
    expect(turns).toHaveLength(1);
    expect(turns[0]?.params).toMatchObject({
      sessionKey: `agent:main:workflow-run-${res.body.run.id}`,
      message: 'Summarise this mail\n\nInput from the previous step:\nQuarterly report attached',
    });

    const listed = await call(web.url, `/api/workflows/${id}/runs`, { cookie: owner.cookie });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ runs: [res.body.run] });
    // The turn is in the usage ledger, as the agent reported it.
    const usage = await web.database.db.kysely
      .selectFrom('usage_events')
      .select(['kind', 'agent_id', 'model', 'total_tokens'])
      .where('user_id', '=', owner.userId)
      .execute();
    expect(usage).toEqual([{ kind: 'workflow', agent_id: owner.agentId, model: 'fake/fake-1', total_tokens: expect.any(Number) }]);
    expect(usage[0]?.total_tokens).toBeGreaterThan(0);

    // Without an input the trigger passes on what it starts on; an API key runs it as well as the session.
    const key = await call(web.url, '/api/keys', { cookie: owner.cookie, json: { name: 'runner' } });
    const byKey = await call(web.url, `/api/workflows/${id}/run`, { method: 'POST', headers: { authorization: `Bearer ${key.body.key}` } });
    expect([byKey.status, byKey.body.error]).toEqual([201, undefined]);
    expect(byKey.body.run).toMatchObject({ status: 'succeeded', input: 'Manual run' });
    expect(byKey.body.run.steps[0].output).toBe('Manual run; the trigger is: new mail');
    const newest = await call(web.url, `/api/workflows/${id}/runs?limit=1`, { cookie: owner.cookie });
    expect(newest.body.runs.map((r: { id: string }) => r.id)).toEqual([byKey.body.run.id]);
  });

  it('a condition branches: only the branch whose condition holds goes on', async () => {
    const id = await workflow(web, owner, [
      { key: 't', type: 'trigger', next: ['a'] },
      { key: 'a', type: 'action', action: 'Summarise', next: ['urgent', 'calm'] },
      { key: 'urgent', type: 'condition', expression: 'contains "urgent"', next: ['page'] },
      { key: 'calm', type: 'condition', expression: 'not contains "urgent"', next: ['digest'] },
      { key: 'page', type: 'output', destination: 'pager' },
      { key: 'digest', type: 'output', destination: 'daily digest' },
    ]);
    const urgent = (await run(web, owner, id, { input: 'urgent: the server is down' })).body.run;
    expect(urgent.status).toBe('succeeded');
    expect(urgent.steps.map((s: { key: string; status: string }) => [s.key, s.status])).toEqual([
      ['t', 'succeeded'],
      ['a', 'succeeded'],
      ['urgent', 'succeeded'],
      ['calm', 'stopped'],
      ['page', 'succeeded'],
    ]);
    expect(urgent.result).toBe('URGENT summary of: urgent: the server is down');

    const calm = (await run(web, owner, id, { input: 'lunch menu' })).body.run;
    expect(calm.steps.filter((s: { type: string }) => s.type === 'output').map((s: { key: string }) => s.key)).toEqual(['digest']);
    expect(calm.result).toBe('calm summary of: lunch menu');
  });

  it('a failing step fails the run, recorded with its error; nothing after it runs', async () => {
    const id = await workflow(web, owner, [
      { key: 't', type: 'trigger', next: ['a'] },
      { key: 'a', type: 'action', action: 'explode', next: ['o'] },
      { key: 'o', type: 'output' },
    ]);
    const res = await run(web, owner, id, { input: 'boom' });
    expect(res.status).toBe(201);
    expect(res.body.run).toMatchObject({
      status: 'failed',
      result: null,
      error: "action a: The agent's turn failed: model provider failed",
    });
    expect(res.body.run.steps.map((s: { key: string; status: string; error: string | null }) => [s.key, s.status, s.error])).toEqual([
      ['t', 'succeeded', null],
      ['a', 'failed', "The agent's turn failed: model provider failed"],
    ]);

    // A condition that cannot be read, and an action with nothing to do, fail in words too.
    const unreadable = await workflow(web, owner, [
      { key: 't', type: 'trigger', next: ['c'] },
      { key: 'c', type: 'condition', expression: 'looks important', next: ['o'] },
      { key: 'o', type: 'output' },
    ]);
    const bad = (await run(web, owner, unreadable)).body.run;
    expect(bad.status).toBe('failed');
    expect(bad.error).toMatch(/^condition c: Cannot read the condition “looks important”: use contains/);
    const idle = await workflow(web, owner, [
      { key: 't', type: 'trigger', next: ['a'] },
      { key: 'a', type: 'action' },
    ]);
    expect((await run(web, owner, idle)).body.run.error).toBe('action a: This action has no operation: say what the agent should do');
    // The runs are listed, failed ones included.
    expect((await call(web.url, `/api/workflows/${id}/runs`, { cookie: owner.cookie })).body.runs).toEqual([res.body.run]);
  });

  it("a step whose agent's provider key is refused fails in the chat's words (issue #19)", async () => {
    const refusing = await startFakeGatewayWs({ token: GATEWAY_TOKEN, providerKey: { failure: 'refused', provider: 'openai' } });
    try {
      const user = await userWithAgent(web);
      await web.database.db.kysely.updateTable('agents').set({ url: refusing.httpUrl }).where('id', '=', user.agentId).execute();
      const id = await workflow(web, user, [
        { key: 't', type: 'trigger', next: ['a'] },
        { key: 'a', type: 'action', action: 'summarise' },
      ]);
      const failed = (await run(web, user, id, { input: 'the week' })).body.run;
      expect(failed.status).toBe('failed');
      expect(failed.error).toBe("action a: The agent's AI provider refused its key (openai): check the key in the agent's configuration");
    } finally {
      await refusing.close();
    }
  });

  it("another user's workflow is not found (404) for running and for its runs; 401 without a sign-in", async () => {
    const id = await workflow(web, owner, [{ key: 't', type: 'trigger' }]);
    const other = await web.signIn();
    for (const res of [await run(web, other, id), await call(web.url, `/api/workflows/${id}/runs`, { cookie: other.cookie })]) {
      expect([res.status, res.body]).toEqual([404, { error: 'Workflow not found' }]);
    }
    expect((await run(web, other, 'wf_unknown')).status).toBe(404);
    const anonymous = await call(web.url, `/api/workflows/${id}/run`, { method: 'POST', json: {} });
    expect([anonymous.status, anonymous.body]).toEqual([401, { error: 'Unauthorized' }]);
    expect((await call(web.url, `/api/workflows/${id}/runs`)).status).toBe(401);
    // Row-level security: the other user's database view has none of the owner's runs.
    const seen = await web.database.db.withUser(other.userId, (trx) => trx.selectFrom('workflow_runs').select('id').execute());
    expect(seen).toEqual([]);
  });

  it('refuses what cannot run: no trigger, disabled, bad input', async () => {
    const noTrigger = await workflow(web, owner, [{ key: 'a', type: 'action', action: 'x' }]);
    expect((await run(web, owner, noTrigger)).body).toEqual({ error: 'Workflow has no trigger step to start from' });
    const off = await workflow(web, owner, [{ key: 't', type: 'trigger' }], { enabled: false });
    const disabled = await run(web, owner, off);
    expect([disabled.status, disabled.body]).toEqual([409, { error: 'Workflow is disabled: enable it to run it' }]);
    const id = await workflow(web, owner, [{ key: 't', type: 'trigger' }]);
    for (const [json, error] of [
      [{ input: 5 }, 'input must be a string'],
      [{ input: 'x'.repeat(10_001) }, 'input must be at most 10000 characters'],
    ] as const) {
      const res = await run(web, owner, id, json);
      expect([res.status, res.body]).toEqual([400, { error }]);
    }
    expect((await call(web.url, `/api/workflows/${id}/runs?limit=51`, { cookie: owner.cookie })).status).toBe(400);
    expect((await call(web.url, `/api/workflows/${id}/runs`, { cookie: owner.cookie })).body.runs).toEqual([]);
  });

  it('limits: a loop stops at 50 steps; a slow agent turn fails in words; one run at a time; the run’s own deadline', async () => {
    const loop = await workflow(web, owner, [
      { key: 't', type: 'trigger', next: ['c1'] },
      { key: 'c1', type: 'condition', expression: 'is not empty', next: ['c2'] },
      { key: 'c2', type: 'condition', expression: 'is not empty', next: ['c1'] },
    ]);
    const looped = (await run(web, owner, loop)).body.run;
    expect(looped.status).toBe('failed');
    expect(looped.steps).toHaveLength(51);
    expect(looped.steps.at(-1)).toMatchObject({
      status: 'failed',
      error: 'Step limit reached: a run takes at most 50 steps (is there a loop in the workflow?)',
    });

    const slow = await workflow(quick, quickOwner, [
      { key: 't', type: 'trigger', next: ['a'] },
      { key: 'a', type: 'action', action: 'hang' },
    ]);
    const pending = run(quick, quickOwner, slow, { input: 'wait' });
    // While it runs, a second run of the same workflow is refused.
    await expect.poll(async () => (await run(quick, quickOwner, slow, { input: 'again' })).status, { timeout: 5_000 }).toBe(409);
    const timedOut = (await pending).body.run;
    expect(timedOut).toMatchObject({ status: 'failed', error: 'action a: The agent did not answer within 0.3 s' });
    // Once it has ended, the workflow runs again.
    expect((await run(quick, quickOwner, slow, { input: 'again' })).status).toBe(201);

    // The whole run's deadline: with the clock past it after the trigger, the next step fails as over time.
    const deadline = await workflow(web, owner, [
      { key: 't', type: 'trigger', next: ['o'] },
      { key: 'o', type: 'output' },
    ]);
    let now = Date.now();
    const deps = {
      db: web.database.db,
      backend: web.app.backend,
      config: web.config,
      clock: () => (now += 400),
      log: { warn: () => {}, error: () => {} },
    };
    const user = { id: owner.userId } as Parameters<typeof runWorkflow>[1];
    const late = await runWorkflow(deps, user, deadline, 'x', { maxSteps: 50, timeoutMs: 1_000 });
    expect(late).toMatchObject({ status: 'failed', error: 'output o: Time limit reached: a run takes at most 1 s' });
  });

  it('the OpenAPI document describes both routes with their schemas', async () => {
    const doc = (await request(`${web.url}/api/openapi.json`)).body as {
      paths: Record<
        string,
        Record<string, { requestBody?: unknown; responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>
      >;
    };
    const runPath = doc.paths['/api/workflows/{workflowId}/run']?.post;
    expect(JSON.stringify(runPath?.requestBody)).toContain('"input"');
    const created = JSON.stringify(runPath?.responses['201']?.content?.['application/json']?.schema);
    for (const field of ['"steps"', '"result"', '"status"', '"succeeded"', '"stopped"']) expect(created).toContain(field);
    const list = doc.paths['/api/workflows/{workflowId}/runs']?.get;
    expect(JSON.stringify(list?.responses['200']?.content?.['application/json']?.schema)).toContain('"runs"');
  });

  it('conditions compare text, case-insensitively, and say when they cannot be read', () => {
    expect(conditionHolds('contains "Urgent"', 'an URGENT matter')).toEqual({ holds: true });
    expect(conditionHolds("does not contain 'x'", 'abc')).toEqual({ holds: true });
    expect(conditionHolds('equals done', ' Done ')).toEqual({ holds: true });
    expect(conditionHolds('starts with re:', 'RE: hello')).toEqual({ holds: true });
    expect(conditionHolds('ends with !', 'hello')).toEqual({ holds: false });
    expect(conditionHolds('is empty', '  ')).toEqual({ holds: true });
    expect(conditionHolds('', 'x')).toEqual({ problem: 'The condition is empty: write one, for example contains "urgent"' });
    expect(conditionHolds('contains ""', 'x')).toEqual({ problem: 'The condition “contains ""” has nothing to compare with' });
  });
});
