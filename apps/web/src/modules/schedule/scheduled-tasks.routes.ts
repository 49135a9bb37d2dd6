import { requireOwnAgent } from '../../platform/owned-agent.js';
import { type App, HttpError, newId } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';

// ---------------------------------------------------------------------------
// Schedules: a 5-field cron expression (UTC) or `every:<n>m` / `every:<n>h`.
// ---------------------------------------------------------------------------

interface CronField {
  min: number;
  max: number;
  names?: readonly string[];
}

const MINUTE: CronField = { min: 0, max: 59 };
const HOUR: CronField = { min: 0, max: 23 };
const DAY_OF_MONTH: CronField = { min: 1, max: 31 };
const MONTH: CronField = { min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] };
// 0 and 7 are both Sunday.
const DAY_OF_WEEK: CronField = { min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] };

export interface CronExpression {
  kind: 'cron';
  minutes: boolean[];
  hours: boolean[];
  days: boolean[];
  months: boolean[];
  weekdays: boolean[];
  /** Vixie cron: when both day fields are restricted (not starting with `*`), either one matching is enough. */
  daysRestricted: boolean;
  weekdaysRestricted: boolean;
}

export type Schedule = CronExpression | { kind: 'every'; ms: number };

/** `every:<n>m` / `every:<n>h`, between one minute and one year. */
const EVERY = /^every:(\d{1,6})([mh])$/;
const EVERY_MAX_MS = 366 * 86_400_000;

function fieldValue(text: string, field: CronField): number | null {
  let value: number;
  if (/^\d{1,2}$/.test(text)) value = Number(text);
  else {
    const index = field.names?.indexOf(text.toLowerCase()) ?? -1;
    if (index === -1) return null;
    value = index + (field === MONTH ? 1 : 0);
  }
  return value >= field.min && value <= field.max ? value : null;
}

/** One cron field (`*`, `5`, `1-5`, `*\/15`, `10-50/10`, `5/20`, lists of them) as a table of allowed values. */
function parseField(text: string, field: CronField): boolean[] | null {
  const allowed = new Array<boolean>(field.max + 1).fill(false);
  for (const part of text.split(',')) {
    const match = /^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:\/(\d{1,2}))?$/i.exec(part);
    if (!match) return null;
    const [, startText = '', endText, stepText] = match;
    let start: number;
    let end: number;
    if (startText === '*') {
      if (endText !== undefined) return null;
      start = field.min;
      end = field.max;
    } else {
      const first = fieldValue(startText, field);
      if (first === null) return null;
      start = first;
      if (endText !== undefined) {
        const last = fieldValue(endText, field);
        if (last === null || last < start) return null;
        end = last;
      } else {
        // `5/20` runs from 5 to the end of the range; a bare `5` is just 5.
        end = stepText !== undefined ? field.max : start;
      }
    }
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1) return null;
    for (let v = start; v <= end; v += step) allowed[v] = true;
  }
  return allowed;
}

/** Reads a schedule; null when it is not valid or a cron expression that never fires. */
export function parseSchedule(text: string): Schedule | null {
  const trimmed = text.trim();
  const every = EVERY.exec(trimmed);
  if (every) {
    const ms = Number(every[1]) * (every[2] === 'h' ? 3_600_000 : 60_000);
    return ms >= 60_000 && ms <= EVERY_MAX_MS ? { kind: 'every', ms } : null;
  }
  const parts = trimmed.split(/\s+/);
  if (parts.length !== 5) return null;
  const [m = '', h = '', dom = '', mon = '', dow = ''] = parts;
  const minutes = parseField(m, MINUTE);
  const hours = parseField(h, HOUR);
  const days = parseField(dom, DAY_OF_MONTH);
  const months = parseField(mon, MONTH);
  const weekdays = parseField(dow, DAY_OF_WEEK);
  if (!minutes || !hours || !days || !months || !weekdays) return null;
  if (weekdays[7]) weekdays[0] = true;
  const cron: CronExpression = {
    kind: 'cron',
    minutes,
    hours,
    days,
    months,
    weekdays,
    daysRestricted: !dom.startsWith('*'),
    weekdaysRestricted: !dow.startsWith('*'),
  };
  // `0 0 30 2 *` is well formed but never fires.
  return nextCronRun(cron, new Date(Date.UTC(2000, 0, 1))) ? cron : null;
}

function dayMatches(cron: CronExpression, t: Date): boolean {
  const dom = cron.days[t.getUTCDate()] === true;
  const dow = cron.weekdays[t.getUTCDay()] === true;
  if (cron.daysRestricted && cron.weekdaysRestricted) return dom || dow;
  return dom && dow;
}

/**
 * The first minute strictly after `after` (UTC) the expression matches, or
 * null when none does within 9 years (a leap day is at most 8 years away).
 */
export function nextCronRun(cron: CronExpression, after: Date): Date | null {
  let t = Math.floor(after.getTime() / 60_000) * 60_000 + 60_000;
  const limit = Date.UTC(new Date(t).getUTCFullYear() + 9, 0, 1);
  while (t < limit) {
    const d = new Date(t);
    const [y, mo, day, h] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours()];
    if (!cron.months[mo + 1]) t = Date.UTC(y, mo + 1, 1);
    else if (!dayMatches(cron, d)) t = Date.UTC(y, mo, day + 1);
    else if (!cron.hours[h]) t = Date.UTC(y, mo, day, h + 1);
    else if (!cron.minutes[d.getUTCMinutes()]) t += 60_000;
    else return d;
  }
  return null;
}

/** When a task with this schedule runs next, counted from `now`. */
export function nextRunAt(schedule: Schedule, now: Date): Date | null {
  return schedule.kind === 'every' ? new Date(now.getTime() + schedule.ms) : nextCronRun(schedule, now);
}

// ---------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------

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
