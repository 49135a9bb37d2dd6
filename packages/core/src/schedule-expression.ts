/**
 * Schedules: a 5-field cron expression (minute hour day-of-month month day-of-week, Vixie semantics) or, for scheduled
 * tasks, `every:<n>m` / `every:<n>h`; their next run; and, when one is wrong, what is wrong in words.
 *
 * One parser for the web service and the dashboard (`@aop/core/schedule-expression`, bundled into the UI), so the form
 * refuses exactly what the server would refuse and says it the same way. It imports nothing.
 *
 * Only the 5-field form is accepted: it is what the platform's own scheduler runs and the common ground with OpenClaw's
 * cron (croner), which would also take seconds, `L`, `W`, `#` and nicknames that the platform does not.
 */

interface CronField {
  /** How the field is named in messages. */
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** What the field allows, in words. */
  allowed: string;
}

const MINUTE: CronField = { name: 'minute', min: 0, max: 59, allowed: '0-59' };
const HOUR: CronField = { name: 'hour', min: 0, max: 23, allowed: '0-23' };
const DAY_OF_MONTH: CronField = { name: 'day-of-month', min: 1, max: 31, allowed: '1-31' };
const MONTH: CronField = {
  name: 'month',
  min: 1,
  max: 12,
  names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
  allowed: '1-12 or jan-dec',
};
// 0 and 7 are both Sunday.
const DAY_OF_WEEK: CronField = {
  name: 'day-of-week',
  min: 0,
  max: 7,
  names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'],
  allowed: '0-7 (0 and 7 are Sunday) or sun-sat',
};
const FIELDS = [MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK] as const;

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

/** The longest cron expression taken. */
export const CRON_EXPRESSION_MAX = 200;

type Parsed<T> = { ok: T } | { problem: string };

function fieldValue(text: string, field: CronField): Parsed<number> {
  let value: number;
  if (/^\d+$/.test(text)) value = Number(text);
  else {
    const index = field.names?.indexOf(text.toLowerCase()) ?? -1;
    if (index === -1) return { problem: `“${text}” is not a ${field.name} (use ${field.allowed})` };
    value = index + (field === MONTH ? 1 : 0);
  }
  if (value < field.min || value > field.max) return { problem: `${text} is out of range (use ${field.allowed})` };
  return { ok: value };
}

/** One cron field (`*`, `5`, `1-5`, `*\/15`, `10-50/10`, `5/20`, lists of them) as a table of allowed values. */
function parseField(text: string, field: CronField): Parsed<boolean[]> {
  const allowed = new Array<boolean>(field.max + 1).fill(false);
  for (const part of text.split(',')) {
    if (part === '') return { problem: 'has an empty item in its list (two commas, or a comma at an end)' };
    const match = /^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:\/(\d+))?$/i.exec(part);
    if (!match) {
      return { problem: `cannot read “${part}”: use a number, a range like 1-5, a step like */15, or a list like 1,15` };
    }
    const [, startText = '', endText, stepText] = match;
    let start: number;
    let end: number;
    if (startText === '*') {
      if (endText !== undefined) return { problem: `cannot read “${part}”: * is already the whole range` };
      start = field.min;
      end = field.max;
    } else {
      const first = fieldValue(startText, field);
      if ('problem' in first) return first;
      start = first.ok;
      if (endText !== undefined) {
        const last = fieldValue(endText, field);
        if ('problem' in last) return last;
        if (last.ok < start) return { problem: `range ${part} runs backwards (write the lower value first)` };
        end = last.ok;
      } else {
        // `5/20` runs from 5 to the end of the range; a bare `5` is just 5.
        end = stepText !== undefined ? field.max : start;
      }
    }
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1) return { problem: `step /${stepText} must be at least 1` };
    for (let v = start; v <= end; v += step) allowed[v] = true;
  }
  return { ok: allowed };
}

/** A 5-field cron expression read, or what is wrong with it. */
function readCron(text: string): Parsed<CronExpression> {
  const trimmed = text.trim();
  if (trimmed === '') return { problem: 'the cron expression is empty' };
  if (trimmed.length > CRON_EXPRESSION_MAX) return { problem: `the cron expression is longer than ${CRON_EXPRESSION_MAX} characters` };
  if (trimmed.startsWith('@')) {
    return { problem: `nicknames like ${trimmed.split(/\s/)[0]} are not supported: write the 5 fields, for example 0 0 * * * for daily` };
  }
  const parts = trimmed.split(/\s+/);
  if (parts.length !== 5) {
    return {
      problem: `a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one has ${parts.length}`,
    };
  }
  const tables: boolean[][] = [];
  for (const [i, field] of FIELDS.entries()) {
    const parsed = parseField(parts[i] as string, field);
    if ('problem' in parsed) return { problem: `the ${field.name} field ${parsed.problem}` };
    tables.push(parsed.ok);
  }
  const [minutes = [], hours = [], days = [], months = [], weekdays = []] = tables;
  if (weekdays[7]) weekdays[0] = true;
  const cron: CronExpression = {
    kind: 'cron',
    minutes,
    hours,
    days,
    months,
    weekdays,
    daysRestricted: !(parts[2] as string).startsWith('*'),
    weekdaysRestricted: !(parts[4] as string).startsWith('*'),
  };
  // `0 0 30 2 *` is well formed but never fires.
  if (!nextCronRun(cron, new Date(Date.UTC(2000, 0, 1)))) {
    return { problem: 'it never runs: no month in it has that day (for example 30 2 is 30 February)' };
  }
  return { ok: cron };
}

/** What is wrong with a 5-field cron expression, in words; null when it is valid and runs. */
export function cronExpressionProblem(text: string): string | null {
  const parsed = readCron(text);
  return 'problem' in parsed ? parsed.problem : null;
}

/** A 5-field cron expression, or null when it is not valid or never fires. */
export function parseCronExpression(text: string): CronExpression | null {
  const parsed = readCron(text);
  return 'ok' in parsed ? parsed.ok : null;
}

/** What is wrong with an IANA time zone name (as `Intl` knows them, in Node and in browsers); null when it is one. */
export function timeZoneProblem(tz: string): string | null {
  const name = tz.trim();
  if (name === '' || name.length > 100) return 'the time zone must be a name like Europe/London';
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return null;
  } catch {
    return `“${name}” is not a time zone: use a name like Europe/London or UTC`;
  }
}

/** Reads a scheduled task's schedule (`every:<n>m|h` or 5-field cron); null when it is not valid or never fires. */
export function parseSchedule(text: string): Schedule | null {
  const trimmed = text.trim();
  const every = EVERY.exec(trimmed);
  if (every) {
    const ms = Number(every[1]) * (every[2] === 'h' ? 3_600_000 : 60_000);
    return ms >= 60_000 && ms <= EVERY_MAX_MS ? { kind: 'every', ms } : null;
  }
  return parseCronExpression(trimmed);
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
