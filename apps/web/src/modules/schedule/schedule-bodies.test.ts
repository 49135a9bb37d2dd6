import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// The request bodies of /api/scheduled-tasks, /api/cron and /api/heartbeat as TypeBox schemas: each field answers with
// the message the handlers gave it, in the order they checked the fields, and only after authentication. (The
// gateway-backed answers are test/integration/cron-heartbeat.test.ts'.)
describe('schedule request bodies', () => {
  let web: TestWeb;
  let cookie: string;
  beforeAll(async () => {
    web = await startWeb({});
    ({ cookie } = await web.signIn());
  });
  afterAll(async () => {
    await web?.close();
  });

  const send = (method: string, path: string, json: unknown, headers: Record<string, string> = { cookie }) =>
    request(`${web.url}${path}`, { method, headers, json });
  const expectAnswers = async (method: string, path: string, cases: [unknown, string][]) => {
    for (const [json, error] of cases) {
      const res = await send(method, path, json);
      expect({ json, status: res.status, body: res.body }).toEqual({ json, status: 400, body: { error } });
    }
  };

  const task = { name: 'Report', schedule: '0 9 * * *', prompt: 'Summarise' };
  const cron = { name: 'n', schedule: { kind: 'every', everyMs: 60_000 }, payload: { kind: 'systemEvent', text: 'hi' } };
  const CRON_REQUIRED = 'name, schedule, and payload required';
  const FREQUENCY = 'frequency must be one of 30m, 1h, 2h, 3h, 6h, 12h';

  it('POST /api/scheduled-tasks: fields in order name, schedule, prompt, agentId, enabled, whichever are missing', async () => {
    await expectAnswers('POST', '/api/scheduled-tasks', [
      [{ name: '' }, 'name is required'],
      [{ name: 5, prompt: 5 }, 'name is required'],
      [{ name: 'x' }, 'Invalid schedule'],
      [{ name: 'x', schedule: 's'.repeat(201), prompt: 'p' }, 'Invalid schedule'],
      [{ name: 'x', schedule: null, prompt: 5 }, 'Invalid schedule'],
      [{ name: 'x', schedule: '0 9 * * *' }, 'prompt is required'],
      [{ ...task, prompt: null, enabled: 'yes' }, 'prompt is required'],
      [{ ...task, agentId: '' }, 'agentId must be a string'],
      [{ ...task, agentId: 'a'.repeat(201) }, 'agentId must be a string'],
      [{ ...task, agentId: 3, enabled: 'yes' }, 'agentId must be a string'],
      [{ ...task, enabled: null }, 'enabled must be a boolean'],
      [{ ...task, enabled: 'true' }, 'enabled must be a boolean'],
      // Lengths count UTF-16 units, as String.length: 101 emoji are 202.
      [{ ...task, name: '😀'.repeat(101) }, 'name must be at most 200 characters'],
    ]);
    for (const agentId of [null, 'all']) {
      const res = await send('POST', '/api/scheduled-tasks', { ...task, agentId, id: 42 });
      expect(res.status).toBe(201);
      expect(res.body.task).toMatchObject({ agentId: null, name: 'Report', enabled: true });
    }
  });

  it('PUT /api/scheduled-tasks: id first, then the fields given', async () => {
    await expectAnswers('PUT', '/api/scheduled-tasks', [
      [{ id: 5, name: '' }, 'id is required'],
      [{ id: '  ' }, 'id is required'],
      [{ id: 'task_x', name: null }, 'name is required'],
      [{ id: 'task_x', schedule: 5 }, 'Invalid schedule'],
      [{ id: 'task_x', prompt: 'p'.repeat(10_001) }, 'prompt must be at most 10000 characters'],
      [{ id: 'task_x', agentId: false }, 'agentId must be a string'],
      [{ id: 'task_x', enabled: 0 }, 'enabled must be a boolean'],
    ]);
  });

  it('POST /api/cron: schedule and payload must be objects before the name’s length counts', async () => {
    await expectAnswers('POST', '/api/cron', [
      [{ ...cron, name: 'x'.repeat(201), schedule: 'hourly' }, CRON_REQUIRED],
      [{ ...cron, name: 'x'.repeat(201), payload: undefined }, CRON_REQUIRED],
      [{ ...cron, name: null }, CRON_REQUIRED],
      [{ ...cron, name: 'x'.repeat(201), enabled: 'yes' }, 'name must be at most 200 characters'],
      [{ ...cron, enabled: null }, 'enabled must be a boolean'],
      [{ ...cron, enabled: 'true', schedule: { kind: 'never' } }, 'enabled must be a boolean'],
    ]);
  });

  it('PUT, POST /api/heartbeat: frequency, then enabled, then agentId', async () => {
    for (const method of ['PUT', 'POST']) {
      await expectAnswers(method, '/api/heartbeat', [
        [{ frequency: null }, FREQUENCY],
        [{ frequency: '45m', enabled: 'no', agentId: 5 }, FREQUENCY],
        [{ enabled: null, agentId: 5 }, 'enabled must be a boolean'],
        [{ agentId: '   ' }, 'agentId must be a string'],
        [{ agentId: 'a'.repeat(201) }, 'agentId must be a string'],
        [{ agentId: ['agt'] }, 'agentId must be a string'],
      ]);
    }
  });

  it('DELETE /api/heartbeat: agentId required, then its length', async () => {
    await expectAnswers('DELETE', '/api/heartbeat', [
      [{ agentId: null }, 'agentId required'],
      [{ agentId: '' }, 'agentId required'],
      [{ agentId: 'a'.repeat(201) }, 'agentId must be a string'],
    ]);
  });

  it('401 without a session whatever the fields; a body that is not an object is still 400 first', async () => {
    for (const [method, path, json] of [
      ['POST', '/api/scheduled-tasks', { name: 5 }],
      ['PUT', '/api/scheduled-tasks', { id: 5 }],
      ['POST', '/api/cron', { name: 5 }],
      ['PUT', '/api/heartbeat', { frequency: 'never' }],
      ['POST', '/api/heartbeat', { enabled: 'no' }],
      ['DELETE', '/api/heartbeat', { agentId: 5 }],
    ] as const) {
      const res = await send(method, path, json, {});
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 401, body: { error: 'Unauthorized' } });
    }
    for (const [method, path, error] of [
      ['POST', '/api/scheduled-tasks', 'name is required'],
      ['PUT', '/api/scheduled-tasks', 'id is required'],
      ['POST', '/api/cron', CRON_REQUIRED],
      ['DELETE', '/api/heartbeat', 'agentId required'],
    ] as const) {
      const res = await send(method, path, [1], {});
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 400, body: { error } });
    }
  });
});
