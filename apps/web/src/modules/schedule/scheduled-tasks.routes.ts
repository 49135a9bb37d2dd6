import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import { deleteByIdRoute } from '../../platform/http/delete-by-id.js';
import { ScheduledTask } from './schedule.schemas.js';
import { parseSchedule } from './schedule-expression.js';
import {
  type CheckedSchedule,
  createScheduledTask,
  deleteScheduledTask,
  listScheduledTasks,
  updateScheduledTask,
} from './scheduled-tasks.service.js';

export const TASK_NAME_MAX = 200;
export const TASK_PROMPT_MAX = 10_000;
const AGENT_ID_MAX = 200;

function checkedText(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value.trim() === '') throw new DomainError('FIELD_REQUIRED', { field });
  if (value.length > max) throw new DomainError('FIELD_TOO_LONG', { field, max });
  return value.trim();
}

function checkedSchedule(value: unknown): CheckedSchedule {
  const schedule = typeof value === 'string' && value.length <= 200 ? parseSchedule(value) : null;
  if (!schedule) throw new DomainError('INVALID_SCHEDULE');
  return { text: (value as string).trim().split(/\s+/).join(' '), schedule };
}

function checkedEnabled(value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new DomainError('FIELD_NOT_BOOLEAN', { field: 'enabled' });
  return value;
}

/** absent → undefined (unchanged), null or `all` → no agent, else an agent id. */
function checkedAgentId(value: unknown): string | null | undefined {
  if (value === undefined) return undefined;
  if (value === null || value === 'all') return null;
  if (typeof value !== 'string' || value === '' || value.length > AGENT_ID_MAX)
    throw new DomainError('FIELD_NOT_STRING', { field: 'agentId' });
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
        response: { 200: Type.Object({ tasks: Type.Array(ScheduledTask) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { agentId } = request.query;
      return { tasks: await listScheduledTasks(app.db, user.id, agentId) };
    },
  );

  app.post(
    '/api/scheduled-tasks',
    {
      config: { invalidBodyMessage: 'name is required' },
      schema: { tags: ['scheduled-tasks'], body: TaskBody, response: { 201: Type.Object({ task: ScheduledTask }) } },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body = request.body ?? {};
      const name = checkedText(body.name, 'name', TASK_NAME_MAX);
      const schedule = checkedSchedule(body.schedule);
      const prompt = checkedText(body.prompt, 'prompt', TASK_PROMPT_MAX);
      const agentId = checkedAgentId(body.agentId) ?? null;
      const enabled = checkedEnabled(body.enabled) ?? true;
      const task = await createScheduledTask(app.db, app.clock, user.id, { name, schedule, prompt, agentId, enabled });
      return reply.code(201).send({ task });
    },
  );

  app.put(
    '/api/scheduled-tasks',
    {
      config: { invalidBodyMessage: 'id is required' },
      schema: { tags: ['scheduled-tasks'], body: TaskBody, response: { 200: Type.Object({ task: ScheduledTask }) } },
    },
    async (request) => {
      const user = await requireUser(request);
      const body = request.body ?? {};
      if (typeof body.id !== 'string' || body.id.trim() === '') throw new DomainError('FIELD_REQUIRED', { field: 'id' });
      const id = body.id.trim();
      const name = body.name === undefined ? undefined : checkedText(body.name, 'name', TASK_NAME_MAX);
      const newSchedule = body.schedule === undefined ? undefined : checkedSchedule(body.schedule);
      const prompt = body.prompt === undefined ? undefined : checkedText(body.prompt, 'prompt', TASK_PROMPT_MAX);
      const agentId = checkedAgentId(body.agentId);
      const enabled = checkedEnabled(body.enabled);
      const task = await updateScheduledTask(app.db, app.clock, user.id, id, { name, schedule: newSchedule, prompt, agentId, enabled });
      if (!task) throw new DomainError('TASK_NOT_FOUND');
      return { task };
    },
  );

  deleteByIdRoute(app, { url: '/api/scheduled-tasks', tag: 'scheduled-tasks', remove: deleteScheduledTask, notFound: 'TASK_NOT_FOUND' });
}
