import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser, userBeforeBody } from '../../platform/http/auth.js';
import { deleteByIdRoute } from '../../platform/http/delete-by-id.js';
import { CreateScheduledTaskBody, ScheduledTask, UpdateScheduledTaskBody } from './schedule.schemas.js';
import { parseSchedule } from '@aop/core/schedule-expression';
import {
  type CheckedSchedule,
  TASK_AGENT_ID_MAX as AGENT_ID_MAX,
  createScheduledTask,
  deleteScheduledTask,
  listScheduledTasks,
  updateScheduledTask,
} from './scheduled-tasks.service.js';

/**
 * A schedule the schema let through (a string of at most 200 characters) parsed: only parsing tells whether it is
 * well formed and ever fires.
 */
function checkedSchedule(value: string): CheckedSchedule {
  const schedule = parseSchedule(value);
  if (!schedule) throw new DomainError('INVALID_SCHEDULE');
  return { text: value.trim().split(/\s+/).join(' '), schedule };
}

/** absent → undefined (unchanged), null or `all` → no agent, else an agent id. */
const agentScope = (value: string | null | undefined): string | null | undefined => (value === 'all' ? null : value);

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
      preValidation: userBeforeBody,
      config: { invalidBody: { code: 'FIELD_REQUIRED', params: { field: 'name' } } },
      schema: {
        tags: ['scheduled-tasks'],
        body: CreateScheduledTaskBody,
        response: { 201: Type.Object({ task: ScheduledTask }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body = request.body;
      const name = body.name.trim();
      const schedule = checkedSchedule(body.schedule);
      const prompt = body.prompt.trim();
      const agentId = agentScope(body.agentId) ?? null;
      const enabled = body.enabled ?? true;
      const task = await createScheduledTask(app.db, app.clock, user.id, { name, schedule, prompt, agentId, enabled });
      return reply.code(201).send({ task });
    },
  );

  app.put(
    '/api/scheduled-tasks',
    {
      preValidation: userBeforeBody,
      config: { invalidBody: { code: 'FIELD_REQUIRED', params: { field: 'id' } } },
      schema: { tags: ['scheduled-tasks'], body: UpdateScheduledTaskBody, response: { 200: Type.Object({ task: ScheduledTask }) } },
    },
    async (request) => {
      const user = await requireUser(request);
      const body = request.body;
      const id = body.id.trim();
      const name = body.name?.trim();
      const newSchedule = body.schedule === undefined ? undefined : checkedSchedule(body.schedule);
      const prompt = body.prompt?.trim();
      const agentId = agentScope(body.agentId);
      const { enabled } = body;
      const task = await updateScheduledTask(app.db, app.clock, user.id, id, { name, schedule: newSchedule, prompt, agentId, enabled });
      if (!task) throw new DomainError('TASK_NOT_FOUND');
      return { task };
    },
  );

  deleteByIdRoute(app, { url: '/api/scheduled-tasks', tag: 'scheduled-tasks', remove: deleteScheduledTask, notFound: 'TASK_NOT_FOUND' });
}
