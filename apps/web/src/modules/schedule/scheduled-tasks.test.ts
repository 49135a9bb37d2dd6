import { newId } from '@aop/core';
import { type TestResponse, request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, startWeb } from '../../web.test-support.js';
import { nextRunAt, parseSchedule } from '@aop/core/schedule-expression';

// Spec §4.18 Tasks: GET, POST, PUT, DELETE /api/scheduled-tasks (GET filtered by optional agentId).
// "Now" is Tuesday 10 March 2026, 15:30:20 UTC.
const NOW = Date.UTC(2026, 2, 10, 15, 30, 20);

const next = (schedule: string, from = NOW) => {
  const parsed = parseSchedule(schedule);
  if (!parsed) throw new Error(`not a schedule: ${schedule}`);
  return nextRunAt(parsed, new Date(from))?.toISOString() ?? null;
};

describe('schedules', () => {
  it('computes the next run of 5-field cron expressions in UTC', () => {
    const cases: [string, string][] = [
      ['* * * * *', '2026-03-10T15:31:00.000Z'],
      ['*/15 * * * *', '2026-03-10T15:45:00.000Z'],
      ['0 * * * *', '2026-03-10T16:00:00.000Z'],
      // Strictly after now: 15:30 today has passed.
      ['30 15 * * *', '2026-03-11T15:30:00.000Z'],
      ['0 9 * * 1-5', '2026-03-11T09:00:00.000Z'],
      ['0 9 * * MON', '2026-03-16T09:00:00.000Z'],
      ['0 0 * * 7', '2026-03-15T00:00:00.000Z'],
      ['0 0 * * 0', '2026-03-15T00:00:00.000Z'],
      ['0 0 1 * *', '2026-04-01T00:00:00.000Z'],
      ['0 0 29 2 *', '2028-02-29T00:00:00.000Z'],
      ['59 23 31 12 *', '2026-12-31T23:59:00.000Z'],
      ['5,10-12/2 8 * * *', '2026-03-11T08:05:00.000Z'],
      ['10/20 * * * *', '2026-03-10T15:50:00.000Z'],
      ['0 0 * jan,jul sun', '2026-07-05T00:00:00.000Z'],
      ['0 6-18/6 * * *', '2026-03-10T18:00:00.000Z'],
      // Both day fields restricted: either matches (the 15th, or a Friday: the 13th comes first).
      ['0 12 15 * 5', '2026-03-13T12:00:00.000Z'],
      // A day-of-month starting with `*` is unrestricted: both must match (odd day AND Monday).
      ['0 12 */2 * 1', '2026-03-23T12:00:00.000Z'],
    ];
    for (const [schedule, expected] of cases) expect([schedule, next(schedule)]).toEqual([schedule, expected]);
    expect(next('* * * * *', Date.UTC(2026, 11, 31, 23, 59, 0))).toBe('2027-01-01T00:00:00.000Z');
    expect(next('0 0 29 2 *', Date.UTC(2096, 2, 1))).toBe('2104-02-29T00:00:00.000Z');
  });

  it('every:<n>m and every:<n>h count from now', () => {
    expect(next('every:5m')).toBe('2026-03-10T15:35:20.000Z');
    expect(next('every:2h')).toBe('2026-03-10T17:30:20.000Z');
    expect(next('every:1m')).toBe('2026-03-10T15:31:20.000Z');
  });

  it('refuses malformed or never-firing schedules', () => {
    const bad = [
      '',
      '* * * *',
      '* * * * * *',
      '60 * * * *',
      '* 24 * * *',
      '* * 0 * *',
      '* * 32 * *',
      '* * * 13 *',
      '* * * 0 *',
      '* * * * 8',
      '*/0 * * * *',
      '5-1 * * * *',
      '*-5 * * * *',
      '1,,2 * * * *',
      'a * * * *',
      '0 0 30 2 *',
      '0 0 31 4,6,9,11 *',
      'every:0m',
      'every:5s',
      'every:m',
      'every:-5m',
      'every:600000m',
      'every:9000h',
      'every: 5m',
      '@daily',
    ];
    for (const schedule of bad) expect([schedule, parseSchedule(schedule)]).toEqual([schedule, null]);
  });
});

describe('scheduled tasks', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb({}, { clock: () => NOW });
  });
  afterAll(async () => {
    await web?.close();
  });

  const url = (query = '') => `${web.url}/api/scheduled-tasks${query}`;
  const list = (cookie: string, query = '') => request(url(query), { headers: { cookie } });
  const create = (cookie: string, json: unknown) => request(url(), { method: 'POST', headers: { cookie }, json });
  const put = (cookie: string, json: unknown) => request(url(), { method: 'PUT', headers: { cookie }, json });
  const remove = (cookie: string, query: string) => request(url(query), { method: 'DELETE', headers: { cookie } });
  const expectError = (res: TestResponse, status: number, error: string) => {
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error });
  };
  const valid = { name: 'Morning report', schedule: '0 9 * * *', prompt: 'Summarise my portfolio' };

  async function userWithAgent() {
    const user = await web.signIn();
    const agentId = newId('agent');
    await web.database.db.kysely.insertInto('agents').values({ id: agentId, user_id: user.userId, name: 'Agent' }).execute();
    return { ...user, agentId };
  }

  it('401 without a session on every method', async () => {
    expectError(await request(url()), 401, 'Unauthorized');
    expectError(await request(url(), { method: 'POST', json: valid }), 401, 'Unauthorized');
    expectError(await request(url(), { method: 'PUT', json: { id: 'task_x', name: 'x' } }), 401, 'Unauthorized');
    expectError(await request(url('?id=task_x'), { method: 'DELETE' }), 401, 'Unauthorized');
  });

  describe('POST', () => {
    it('201 { task } with its next run; a disabled task has none', async () => {
      const { cookie, agentId } = await userWithAgent();
      const res = await create(cookie, { ...valid, schedule: '  */15   *  * * * ', agentId });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        task: {
          id: expect.stringMatching(/^task_/),
          agentId,
          name: 'Morning report',
          schedule: '*/15 * * * *',
          prompt: 'Summarise my portfolio',
          enabled: true,
          lastRun: null,
          nextRun: '2026-03-10T15:45:00.000Z',
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      });
      const every = await create(cookie, { ...valid, schedule: 'every:2h' });
      expect(every.body.task).toMatchObject({ agentId: null, schedule: 'every:2h', nextRun: '2026-03-10T17:30:20.000Z' });
      const off = await create(cookie, { ...valid, enabled: false });
      expect(off.body.task).toMatchObject({ enabled: false, nextRun: null });
    });

    it('400 for missing or invalid fields; 404 for an unknown agent', async () => {
      const { cookie } = await web.signIn();
      expectError(await request(url(), { method: 'POST', headers: { cookie } }), 400, 'name is required');
      expectError(await create(cookie, { ...valid, name: undefined }), 400, 'name is required');
      expectError(await create(cookie, { ...valid, name: '  ' }), 400, 'name is required');
      expectError(await create(cookie, { ...valid, name: 'n'.repeat(201) }), 400, 'name must be at most 200 characters');
      for (const schedule of [undefined, '', '61 * * * *', 'every:5s', 'daily', 5, '0 0 30 2 *']) {
        expectError(await create(cookie, { ...valid, schedule }), 400, 'Invalid schedule');
      }
      expectError(await create(cookie, { ...valid, prompt: '' }), 400, 'prompt is required');
      expectError(await create(cookie, { ...valid, prompt: 'p'.repeat(10_001) }), 400, 'prompt must be at most 10000 characters');
      expectError(await create(cookie, { ...valid, enabled: 'true' }), 400, 'enabled must be a boolean');
      expectError(await create(cookie, { ...valid, agentId: 3 }), 400, 'agentId must be a string');
      expectError(await create(cookie, { ...valid, agentId: 'agt_nobody' }), 404, 'Agent not found');
      expect((await list(cookie)).body).toEqual({ tasks: [] });
    });
  });

  describe('GET', () => {
    it('lists in creation order, optionally for one agent', async () => {
      const { cookie, agentId } = await userWithAgent();
      const one = (await create(cookie, { ...valid, name: 'one', agentId })).body.task;
      const two = (await create(cookie, { ...valid, name: 'two' })).body.task;
      const three = (await create(cookie, { ...valid, name: 'three', agentId })).body.task;
      const all = await list(cookie);
      expect(all.status).toBe(200);
      expect(all.body).toEqual({ tasks: [one, two, three] });
      expect((await list(cookie, '?agentId=all')).body).toEqual({ tasks: [one, two, three] });
      expect((await list(cookie, `?agentId=${agentId}`)).body).toEqual({ tasks: [one, three] });
      expect((await list(cookie, '?agentId=agt_other')).body).toEqual({ tasks: [] });
    });
  });

  describe('PUT', () => {
    it('updates fields; a new schedule or a switch recounts the next run, other edits keep it', async () => {
      const { cookie, agentId } = await userWithAgent();
      const task = (await create(cookie, { ...valid, agentId })).body.task;
      expect(task.nextRun).toBe('2026-03-11T09:00:00.000Z');

      const renamed = await put(cookie, { id: task.id, name: 'Renamed', prompt: 'New prompt' });
      expect(renamed.status).toBe(200);
      expect(renamed.body.task).toEqual({ ...task, name: 'Renamed', prompt: 'New prompt', updatedAt: expect.any(String) });

      const rescheduled = await put(cookie, { id: task.id, schedule: '0 16 * * *' });
      expect(rescheduled.body.task).toMatchObject({ schedule: '0 16 * * *', nextRun: '2026-03-10T16:00:00.000Z', enabled: true });
      const disabled = await put(cookie, { id: task.id, enabled: false });
      expect(disabled.body.task).toMatchObject({ enabled: false, nextRun: null });
      const changedWhileOff = await put(cookie, { id: task.id, schedule: 'every:30m' });
      expect(changedWhileOff.body.task).toMatchObject({ enabled: false, nextRun: null, schedule: 'every:30m' });
      const enabled = await put(cookie, { id: task.id, enabled: true });
      expect(enabled.body.task).toMatchObject({ enabled: true, nextRun: '2026-03-10T16:00:20.000Z' });
      const unscoped = await put(cookie, { id: task.id, agentId: null });
      expect(unscoped.body.task.agentId).toBeNull();
      expect((await put(cookie, { id: task.id, agentId })).body.task.agentId).toBe(agentId);

      // An update naming nothing but the id changes nothing else.
      const touched = (await put(cookie, { id: task.id })).body.task;
      expect(touched).toMatchObject({ name: 'Renamed', schedule: 'every:30m', nextRun: '2026-03-10T16:00:20.000Z', agentId });
      expect((await list(cookie)).body.tasks).toEqual([touched]);
    });

    it('400 id is required / invalid fields; 404 Task not found', async () => {
      const { cookie } = await web.signIn();
      const task = (await create(cookie, valid)).body.task;
      expectError(await request(url(), { method: 'PUT', headers: { cookie } }), 400, 'id is required');
      expectError(await put(cookie, { name: 'x' }), 400, 'id is required');
      expectError(await put(cookie, { id: 'task_unknown', name: 'x' }), 404, 'Task not found');
      expectError(await put(cookie, { id: task.id, schedule: '* * *' }), 400, 'Invalid schedule');
      expectError(await put(cookie, { id: task.id, name: '' }), 400, 'name is required');
      expectError(await put(cookie, { id: task.id, enabled: 1 }), 400, 'enabled must be a boolean');
      expectError(await put(cookie, { id: task.id, agentId: 'agt_unknown' }), 404, 'Agent not found');
      expect((await list(cookie)).body.tasks).toEqual([task]);
    });
  });

  describe('DELETE', () => {
    it('{ success: true }; 400 id is required; 404 Task not found', async () => {
      const { cookie } = await web.signIn();
      const keep = (await create(cookie, { ...valid, name: 'keep' })).body.task;
      const drop = (await create(cookie, { ...valid, name: 'drop' })).body.task;
      expectError(await remove(cookie, ''), 400, 'id is required');
      expectError(await remove(cookie, '?id=task_unknown'), 404, 'Task not found');
      const res = await remove(cookie, `?id=${drop.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      expectError(await remove(cookie, `?id=${drop.id}`), 404, 'Task not found');
      expect((await list(cookie)).body).toEqual({ tasks: [keep] });
    });
  });

  it('isolation: another user never lists, changes, deletes or attaches to A’s tasks', async () => {
    const a = await userWithAgent();
    const b = await userWithAgent();
    const task = (await create(a.cookie, { ...valid, agentId: a.agentId })).body.task;
    const bTask = (await create(b.cookie, { ...valid, name: 'B task' })).body.task;

    expect((await list(b.cookie)).body).toEqual({ tasks: [bTask] });
    expect((await list(b.cookie, `?agentId=${a.agentId}`)).body).toEqual({ tasks: [] });
    expectError(await put(b.cookie, { id: task.id, prompt: 'hijacked', enabled: false }), 404, 'Task not found');
    expectError(await remove(b.cookie, `?id=${task.id}`), 404, 'Task not found');
    expectError(await create(b.cookie, { ...valid, agentId: a.agentId }), 404, 'Agent not found');
    expectError(await put(b.cookie, { id: bTask.id, agentId: a.agentId }), 404, 'Agent not found');

    expect((await list(a.cookie)).body).toEqual({ tasks: [task] });
  });
});
