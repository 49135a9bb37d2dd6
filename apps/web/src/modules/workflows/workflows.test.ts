import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWeb, type TestWeb } from '../../web.test-support.js';

// Spec §4.9 workflows, §2.7 workflow and node, §3.4 (enabled toggled by PUT).
describe('workflows', () => {
  let web: TestWeb;
  let now = Date.parse('2026-11-01T10:00:00Z');
  beforeAll(async () => {
    web = await startWeb({}, { clock: () => now });
  });
  afterAll(() => web.close());

  const call = (cookie: string | undefined, method: string, path = '', json?: unknown) =>
    request(`${web.url}/api/workflows${path}`, { method, headers: cookie ? { cookie } : {}, ...(json === undefined ? {} : { json }) });
  const create = (cookie: string, json: unknown) => call(cookie, 'POST', '', json);

  it('401: the list answers { workflows: [] } with the error; the others the plain error', async () => {
    const list = await call(undefined, 'GET');
    expect(list.status).toBe(401);
    expect(list.body).toEqual({ error: 'Unauthorized', workflows: [] });
    for (const [method, path] of [
      ['POST', ''],
      ['GET', '/wf_x'],
      ['PUT', '/wf_x'],
      ['DELETE', '/wf_x'],
    ] as const) {
      const res = await call(undefined, method, path, method === 'POST' || method === 'PUT' ? { name: 'x' } : undefined);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    }
  });

  it('creates a workflow with nodes: config and position come back as JSON strings, in creation order', async () => {
    const { cookie } = await web.signIn();
    const res = await create(cookie, {
      name: 'Daily digest',
      description: 'collects and posts',
      nodes: [
        { type: 'trigger', config: { label: 'Every morning' }, position: { x: 10, y: 20 } },
        { type: 'action' },
        { type: 'output', config: { label: 'Post' } },
      ],
    });
    expect(res.status).toBe(201);
    const wf = res.body.workflow;
    expect(wf).toMatchObject({ id: expect.stringMatching(/^wf_/), name: 'Daily digest', description: 'collects and posts', enabled: true });
    expect(wf.createdAt).toBe(new Date(now).toISOString());
    expect(wf.nodes.map((n: { type: string }) => n.type)).toEqual(['trigger', 'action', 'output']);
    expect(wf.nodes[0]).toMatchObject({ config: '{"label":"Every morning"}', position: '{"x":10,"y":20}' });
    expect(wf.nodes[1]).toMatchObject({ config: '{}', position: '{"x":0,"y":0}' });
    const got = await call(cookie, 'GET', `/${wf.id}`);
    expect(got.body.workflow).toEqual(wf);
  });

  it('400 Name required; 400 for bad nodes; nothing is created', async () => {
    const { cookie } = await web.signIn();
    for (const body of [{}, { name: '' }, { name: '   ' }, { name: 42 }]) {
      const res = await create(cookie, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Name required' });
    }
    expect((await create(cookie, { name: 'x', nodes: [{ type: 'loop' }] })).status).toBe(400);
    expect((await create(cookie, { name: 'x', nodes: [{}] })).status).toBe(400);
    expect((await create(cookie, { name: 'x', nodes: 'not-an-array' })).status).toBe(400);
    expect((await create(cookie, { name: 'x', nodes: [{ type: 'action', config: [1] }] })).status).toBe(400);
    expect((await call(cookie, 'GET')).body.workflows).toEqual([]);
  });

  it('each field answers with its own message; a JSON body is taken as sent (no coercion)', async () => {
    const { cookie } = await web.signIn();
    const wf = (await create(cookie, { name: 'Fields' })).body.workflow;
    const cases: [string, string, unknown, string][] = [
      ['POST', '', { name: 'x', description: 5 }, 'description must be a string'],
      ['POST', '', { name: 'x', nodes: 'not-an-array' }, 'nodes must be an array'],
      ['POST', '', { name: 'x', nodes: null }, 'nodes must be an array'],
      ['POST', '', { name: 'x', nodes: [{ type: 'loop' }] }, 'Invalid node type: use trigger, action, condition, output'],
      ['POST', '', { name: 'x', nodes: [{}] }, 'Invalid node type: use trigger, action, condition, output'],
      ['POST', '', { name: 'x', nodes: [5] }, 'Invalid node type: use trigger, action, condition, output'],
      ['POST', '', { name: 'x', nodes: [{ type: 'action', config: [1] }] }, 'Invalid node config'],
      ['POST', '', { name: 'x', nodes: [{ type: 'action', config: 7 }] }, 'Invalid node config'],
      ['POST', '', { name: 'x', nodes: [{ type: 'action', config: '[1]' }] }, 'Invalid node config'],
      ['POST', '', { name: 'x', nodes: [{ type: 'action', position: false }] }, 'Invalid node position'],
      ['POST', '', { name: 'x', nodes: Array.from({ length: 501 }, () => ({ type: 'action' })) }, 'At most 500 nodes'],
      ['POST', '', { name: 'n'.repeat(201) }, 'Name must be at most 200 characters'],
      // Checked in the order they always were: name, description, nodes.
      ['POST', '', { name: ' ', description: 5, nodes: 'x' }, 'Name required'],
      ['POST', '', { name: 'x', description: 5, nodes: 'x' }, 'description must be a string'],
      ['PUT', `/${wf.id}`, { name: null }, 'Name required'],
      ['PUT', `/${wf.id}`, { enabled: 'false' }, 'enabled must be a boolean'],
      ['PUT', `/${wf.id}`, { enabled: null }, 'enabled must be a boolean'],
      ['PUT', `/${wf.id}`, { enabled: false, nodes: [{ type: 'nope' }] }, 'Invalid node type: use trigger, action, condition, output'],
    ];
    for (const [method, path, json, error] of cases) {
      const res = await call(cookie, method, path, json);
      expect({ method, json, status: res.status, body: res.body }).toEqual({ method, json, status: 400, body: { error } });
    }
    expect((await call(cookie, 'GET', `/${wf.id}`)).body.workflow).toEqual(wf);
    // The name's limit counts what is left once trimmed; on create any `enabled` but true disables, as it always has.
    const padded = await create(cookie, { name: `  ${'n'.repeat(200)}  `, enabled: 'yes', description: null });
    expect(padded.status).toBe(201);
    expect(padded.body.workflow).toMatchObject({ name: 'n'.repeat(200), enabled: false, description: null });
  });

  it('401 comes before any field check; a body that is not an object, or a bad id, is 400 first', async () => {
    for (const [method, path, json] of [
      ['POST', '', { name: 42, nodes: 'x' }],
      ['PUT', '/wf_x', { enabled: 'no' }],
    ] as const) {
      const res = await call(undefined, method, path, json);
      expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'Unauthorized' } });
    }
    expect((await call(undefined, 'POST', '', [1])).body).toEqual({ error: 'Name required' });
    expect((await call(undefined, 'PUT', `/${'w'.repeat(101)}`, { name: 'x' })).status).toBe(400);
  });

  it('lists newest updated first, each with its nodes', async () => {
    const { cookie } = await web.signIn();
    now += 1000;
    const a = (await create(cookie, { name: 'A', nodes: [{ type: 'trigger' }] })).body.workflow;
    now += 1000;
    const b = (await create(cookie, { name: 'B' })).body.workflow;
    now += 1000;
    await call(cookie, 'PUT', `/${a.id}`, { description: 'touched' });
    const list = (await call(cookie, 'GET')).body.workflows;
    expect(list.map((w: { name: string }) => w.name)).toEqual(['A', 'B']);
    expect(list[0].nodes).toHaveLength(1);
    expect(list[1].id).toBe(b.id);
  });

  it('PUT toggles enabled, updates fields, and replaces all nodes when nodes are given', async () => {
    const { cookie } = await web.signIn();
    const wf = (await create(cookie, { name: 'W', nodes: [{ type: 'trigger' }, { type: 'action' }] })).body.workflow;
    now += 1000;
    const off = await call(cookie, 'PUT', `/${wf.id}`, { enabled: false });
    expect(off.body.workflow.enabled).toBe(false);
    expect(off.body.workflow.nodes.map((n: { id: string }) => n.id)).toEqual(wf.nodes.map((n: { id: string }) => n.id));
    expect(off.body.workflow.updatedAt).toBe(new Date(now).toISOString());
    const replaced = await call(cookie, 'PUT', `/${wf.id}`, { name: 'W2', nodes: [{ type: 'condition', config: { label: 'if' } }] });
    expect(replaced.body.workflow.name).toBe('W2');
    expect(replaced.body.workflow.nodes).toEqual([expect.objectContaining({ type: 'condition', config: '{"label":"if"}' })]);
    const rows = await web.database.db.kysely.selectFrom('workflow_nodes').select('id').where('workflow_id', '=', wf.id).execute();
    expect(rows).toHaveLength(1);
  });

  it('a PUT with a bad node changes nothing', async () => {
    const { cookie } = await web.signIn();
    const wf = (await create(cookie, { name: 'Keep', nodes: [{ type: 'trigger' }] })).body.workflow;
    const bad = await call(cookie, 'PUT', `/${wf.id}`, { name: 'Changed', nodes: [{ type: 'action' }, { type: 'bogus' }] });
    expect(bad.status).toBe(400);
    const after = (await call(cookie, 'GET', `/${wf.id}`)).body.workflow;
    expect(after.name).toBe('Keep');
    expect(after.nodes).toHaveLength(1);
  });

  it('DELETE removes the workflow and its nodes', async () => {
    const { cookie } = await web.signIn();
    const wf = (await create(cookie, { name: 'Gone', nodes: [{ type: 'trigger' }] })).body.workflow;
    const res = await call(cookie, 'DELETE', `/${wf.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: true });
    expect((await call(cookie, 'GET', `/${wf.id}`)).status).toBe(404);
    expect(await web.database.db.kysely.selectFrom('workflow_nodes').select('id').where('workflow_id', '=', wf.id).execute()).toEqual([]);
    expect((await call(cookie, 'DELETE', `/${wf.id}`)).status).toBe(404);
  });

  it('U+0000 (which Postgres refuses) in an id or a JSON string: 400 Invalid characters in request, nothing created (§7)', async () => {
    const { cookie } = await web.signIn();
    const refused = { status: 400, body: { error: 'Invalid characters in request' } };
    for (const [method, path, json] of [
      ['DELETE', '/%00', undefined],
      ['PUT', '/wf_%00', { name: 'x' }],
      ['GET', '/wf_x%00', undefined],
      ['POST', '', { name: 'a\u0000b' }],
      ['POST', '', { name: 'ok', nodes: [{ type: 'trigger', config: { 'label\u0000': 'x' } }] }],
      // A node config sent as a JSON string is parsed by the route, past the body parser: the same rules apply.
      ['POST', '', { name: 'ok', nodes: [{ type: 'trigger', config: '{"label": "\\u0000"}' }] }],
    ] as const) {
      const res = await call(cookie, method, path, json);
      expect({ status: res.status, body: res.body }).toEqual(refused);
    }
    expect((await call(cookie, 'GET')).body.workflows).toEqual([]);
  });

  it('a node config sent as a JSON string nested 10,000 levels deep: 400 Request body nested too deeply (§7)', async () => {
    const { cookie } = await web.signIn();
    const config = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    const res = await create(cookie, { name: 'deep', nodes: [{ type: 'trigger', config }] });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'Request body nested too deeply' } });
  });

  it('another user’s workflow is 404 to read, change or delete, and never listed', async () => {
    const a = await web.signIn();
    const b = await web.signIn();
    const wf = (await create(a.cookie, { name: 'Private' })).body.workflow;
    for (const [method, json] of [
      ['GET', undefined],
      ['PUT', { name: 'stolen' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await call(b.cookie, method, `/${wf.id}`, json);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Workflow not found' });
    }
    expect((await call(b.cookie, 'GET')).body.workflows).toEqual([]);
    expect((await call(a.cookie, 'GET', `/${wf.id}`)).body.workflow.name).toBe('Private');
  });
});
