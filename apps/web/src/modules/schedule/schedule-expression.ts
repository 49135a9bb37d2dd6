/** Scheduled tasks' schedules: a 5-field cron expression (UTC) or `every:<n>m` / `every:<n>h`, and their next run. */

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
