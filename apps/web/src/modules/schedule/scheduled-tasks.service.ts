import { newId } from '@aop/core';
import type { Database } from '@aop/db';
import { requireOwnAgent } from '../../platform/owned-agent.js';
import { type Schedule, nextRunAt, parseSchedule } from '@aop/core/schedule-expression';

/** Limits of a task as `POST`/`PUT /api/scheduled-tasks` take it. */
export const TASK_NAME_MAX = 200;
export const TASK_PROMPT_MAX = 10_000;
export const TASK_SCHEDULE_MAX = 200;
export const TASK_AGENT_ID_MAX = 200;

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

export interface ScheduledTaskView {
  id: string;
  agentId: string | null;
  name: string;
  schedule: string;
  prompt: string;
  enabled: boolean;
  lastRun: string | null;
  nextRun: string | null;
  createdAt: string;
  updatedAt: string;
}

const view = (row: TaskRow): ScheduledTaskView => ({
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

/** A schedule as the user wrote it (normalised) and parsed. */
export interface CheckedSchedule {
  text: string;
  schedule: Schedule;
}

/** The caller's tasks, oldest first; `agentId` omitted, '' or `all` lists every task. */
export async function listScheduledTasks(db: Database, userId: string, agentId: string | undefined): Promise<ScheduledTaskView[]> {
  const rows = await db.withUser(userId, (trx) => {
    let query = trx.selectFrom('scheduled_tasks').select(COLUMNS).where('user_id', '=', userId);
    if (agentId !== undefined && agentId !== '' && agentId !== 'all') query = query.where('agent_id', '=', agentId);
    return query.orderBy('created_at').orderBy('id').execute();
  });
  return rows.map(view);
}

/** Creates a task; a disabled one has no next run. 404 `Agent not found` when `agentId` is not the caller's. */
export async function createScheduledTask(
  db: Database,
  clock: () => number,
  userId: string,
  task: { name: string; schedule: CheckedSchedule; prompt: string; agentId: string | null; enabled: boolean },
): Promise<ScheduledTaskView> {
  const { name, prompt, agentId, enabled } = task;
  const nextRun = enabled ? nextRunAt(task.schedule.schedule, new Date(clock())) : null;
  const row = await db.withUser(userId, async (trx) => {
    if (agentId !== null) await requireOwnAgent(trx, agentId);
    return trx
      .insertInto('scheduled_tasks')
      .values({
        id: newId('task'),
        user_id: userId,
        agent_id: agentId,
        name,
        schedule: task.schedule.text,
        prompt,
        enabled,
        next_run_at: nextRun,
      })
      .returning(COLUMNS)
      .executeTakeFirstOrThrow();
  });
  return view(row);
}

/**
 * Changes the given fields of a task (undefined leaves a field as it is); null when the caller has no such task.
 * 404 `Agent not found` when `agentId` is not the caller's.
 */
export async function updateScheduledTask(
  db: Database,
  clock: () => number,
  userId: string,
  id: string,
  patch: {
    name: string | undefined;
    schedule: CheckedSchedule | undefined;
    prompt: string | undefined;
    agentId: string | null | undefined;
    enabled: boolean | undefined;
  },
): Promise<ScheduledTaskView | null> {
  const { name, schedule: newSchedule, prompt, agentId, enabled } = patch;
  const row = await db.withUser(userId, async (trx) => {
    const current = await trx
      .selectFrom('scheduled_tasks')
      .select(['enabled', 'schedule', 'next_run_at'])
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst();
    if (!current) return null;
    if (agentId) await requireOwnAgent(trx, agentId);
    const willRun = enabled ?? current.enabled;
    let nextRun = current.next_run_at;
    // A new schedule or a switch on/off recounts the next run from now.
    if (newSchedule !== undefined || enabled !== undefined) {
      const schedule = newSchedule?.schedule ?? parseSchedule(current.schedule);
      nextRun = willRun && schedule ? nextRunAt(schedule, new Date(clock())) : null;
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
  return row ? view(row) : null;
}

/** Deletes one of the caller's tasks; false when they have no such task. */
export async function deleteScheduledTask(db: Database, userId: string, id: string): Promise<boolean> {
  const result = await db.withUser(userId, (trx) => trx.deleteFrom('scheduled_tasks').where('id', '=', id).executeTakeFirst());
  return Number(result.numDeletedRows) !== 0;
}
