import { type App, HttpError, newId } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import { requireOwnAgent } from '../../platform/owned-agent.js';
import { type Schedule, nextRunAt, parseSchedule } from './schedule-expression.js';

export const TASK_NAME_MAX = 200;
export const TASK_PROMPT_MAX = 10_000;
const AGENT_ID_MAX = 200;

const TaskSchema = Type.Object({
  id: Type.String(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  name: Type.String(),
  schedule: Type.String({ description: 'a 5-field cron expression (UTC) or `every:<n>m|h`' }),
  prompt: Type.String(),
  enabled: Type.Boolean(),
  lastRun: Type.Union([Type.String(), Type.Null()]),
  nextRun: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

const COLUMNS = [
  'id',
  'agent_id',
  'name',
  'schedule',
  'prompt',
  'enabled',
  'last_run_at',
  'next_run_at',
  'created_at',
  'updated_at',
] as const;

interface TaskRow {
  id: string;
  agent_id: string | null;
  name: string;
  schedule: string;
  prompt: string;
  enabled: boolean;
  last_run_at: Date | null;
  next_run_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const view = (row: TaskRow) => ({
  id: row.id,
  agentId: row.agent_id,
  name: row.name,
  schedule: row.schedule,
  prompt: row.prompt,
  enabled: row.enabled,
  lastRun: row.last_run_at?.toISOString() ?? null,
  nextRun: row.next_run_at?.toISOString() ?? null,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

function checkedText(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value.trim() === '') throw new HttpError(400, `${field} is required`);
  if (value.length > max) throw new HttpError(400, `${field} must be at most ${max} characters`);
  return value.trim();
}

function checkedSchedule(value: unknown): { text: string; schedule: Schedule } {
  const schedule = typeof value === 'string' && value.length <= 200 ? parseSchedule(value) : null;
  if (!schedule) throw new HttpError(400, 'Invalid schedule');
  return { text: (value as string).trim().split(/\s+/).join(' '), schedule };
}

function checkedEnabled(value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new HttpError(400, 'enabled must be a boolean');
  return value;
}

/** absent → undefined (unchanged), null or `all` → no agent, else an agent id. */
function checkedAgentId(value: unknown): string | null | undefined {
  if (value === undefined) return undefined;
  if (value === null || value === 'all') return null;
  if (typeof value !== 'string' || value === '' || value.length > AGENT_ID_MAX) throw new HttpError(400, 'agentId must be a string');
  return value;
}

const TaskBody = Type.Object({
  id: Type.Optional(Type.Unknown()),
  name: Type.Optional(Type.Unknown()),
  schedule: Type.Optional(Type.Unknown()),
  prompt: Type.Optional(Type.Unknown()),
  agentId: Type.Optional(Type.Unknown()),
  enabled: Type.Optional(Type.Unknown()),
});

/**
 * Spec §4.18 scheduled tasks: a prompt sent to an agent on a schedule. The
 * web keeps the definitions and their next run; a disabled task has none.
 */
export async function scheduledTasksRoutes(app: App): Promise<void> {
  app.get(
    '/api/scheduled-tasks',
    {
      schema: {
        tags: ['scheduled-tasks'],
        querystring: Type.Object({
          agentId: Type.Optional(Type.String({ maxLength: AGENT_ID_MAX, description: 'omitted or `all`: every task' })),
        }),
        response: { 200: Type.Object({ tasks: Type.Array(TaskSchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { agentId } = request.query;
      const rows = await app.db.withUser(user.id, (trx) => {
        let query = trx.selectFrom('scheduled_tasks').select(COLUMNS).where('user_id', '=', user.id);
        if (agentId !== undefined && agentId !== '' && agentId !== 'all') query = query.where('agent_id', '=', agentId);
        return query.orderBy('created_at').orderBy('id').execute();
      });
      return { tasks: rows.map(view) };
    },
  );

  app.post(
    '/api/scheduled-tasks',
    {
      config: { invalidBodyMessage: 'name is required' },
      schema: { tags: ['scheduled-tasks'], body: TaskBody, response: { 201: Type.Object({ task: TaskSchema }) } },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body = request.body ?? {};
      const name = checkedText(body.name, 'name', TASK_NAME_MAX);
      const { text, schedule } = checkedSchedule(body.schedule);
      const prompt = checkedText(body.prompt, 'prompt', TASK_PROMPT_MAX);
      const agentId = checkedAgentId(body.agentId) ?? null;
      const enabled = checkedEnabled(body.enabled) ?? true;
      const nextRun = enabled ? nextRunAt(schedule, new Date(app.clock())) : null;
      const task = await app.db.withUser(user.id, async (trx) => {
        if (agentId !== null) await requireOwnAgent(trx, agentId);
        return trx
          .insertInto('scheduled_tasks')
          .values({ id: newId('task'), user_id: user.id, agent_id: agentId, name, schedule: text, prompt, enabled, next_run_at: nextRun })
          .returning(COLUMNS)
          .executeTakeFirstOrThrow();
      });
      return reply.code(201).send({ task: view(task) });
    },
  );

  app.put(
    '/api/scheduled-tasks',
    {
      config: { invalidBodyMessage: 'id is required' },
      schema: { tags: ['scheduled-tasks'], body: TaskBody, response: { 200: Type.Object({ task: TaskSchema }) } },
    },
    async (request) => {
      const user = await requireUser(request);
      const body = request.body ?? {};
      if (typeof body.id !== 'string' || body.id.trim() === '') throw new HttpError(400, 'id is required');
      const id = body.id.trim();
      const name = body.name === undefined ? undefined : checkedText(body.name, 'name', TASK_NAME_MAX);
      const newSchedule = body.schedule === undefined ? undefined : checkedSchedule(body.schedule);
      const prompt = body.prompt === undefined ? undefined : checkedText(body.prompt, 'prompt', TASK_PROMPT_MAX);
      const agentId = checkedAgentId(body.agentId);
      const enabled = checkedEnabled(body.enabled);
      const task = await app.db.withUser(user.id, async (trx) => {
        const current = await trx
          .selectFrom('scheduled_tasks')
          .select(['enabled', 'schedule', 'next_run_at'])
          .where('id', '=', id)
          .forUpdate()
          .executeTakeFirst();
        if (!current) throw new HttpError(404, 'Task not found');
        if (agentId) await requireOwnAgent(trx, agentId);
        const willRun = enabled ?? current.enabled;
        let nextRun = current.next_run_at;
        // A new schedule or a switch on/off recounts the next run from now.
        if (newSchedule !== undefined || enabled !== undefined) {
          const schedule = newSchedule?.schedule ?? parseSchedule(current.schedule);
          nextRun = willRun && schedule ? nextRunAt(schedule, new Date(app.clock())) : null;
        }
        return trx
          .updateTable('scheduled_tasks')
          .set({
            ...(name !== undefined ? { name } : {}),
            ...(newSchedule !== undefined ? { schedule: newSchedule.text } : {}),
            ...(prompt !== undefined ? { prompt } : {}),
            ...(agentId !== undefined ? { agent_id: agentId } : {}),
            ...(enabled !== undefined ? { enabled } : {}),
            next_run_at: nextRun,
            updated_at: new Date(),
          })
          .where('id', '=', id)
          .returning(COLUMNS)
          .executeTakeFirstOrThrow();
      });
      return { task: view(task) };
    },
  );

  app.delete(
    '/api/scheduled-tasks',
    {
      schema: {
        tags: ['scheduled-tasks'],
        querystring: Type.Object({ id: Type.Optional(Type.String({ maxLength: 200 })) }),
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const id = request.query.id?.trim();
      if (!id) throw new HttpError(400, 'id is required');
      const result = await app.db.withUser(user.id, (trx) => trx.deleteFrom('scheduled_tasks').where('id', '=', id).executeTakeFirst());
      if (Number(result.numDeletedRows) === 0) throw new HttpError(404, 'Task not found');
      return { success: true as const };
    },
  );
}
