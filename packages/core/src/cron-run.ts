/**
 * How OpenClaw records a cron job's last run (openclaw@2026.9.6 `cron.list` rows: `lastRunStatus` / `lastRunError` on
 * the row, `lastRunStatus` or `lastStatus` / `lastError` in its `state`), read in one place for the hosts' idle check
 * and the platform's job views. A skipped run is recorded with a run time like one that ran.
 */

export interface CronRunOutcome {
  status: 'ok' | 'error' | 'skipped';
  /** OpenClaw's words for an error or a skip (e.g. `heartbeat skipped: no-route`), at most 500 characters. */
  detail?: string;
}

const OUTCOMES = new Set(['ok', 'error', 'skipped']);
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
const firstString = (...values: unknown[]) => values.find((v): v is string => typeof v === 'string' && v !== '');

/** How the job's last run ended; undefined when it has not run (or OpenClaw says nothing known). */
export function lastRunOutcome(job: Record<string, unknown>): CronRunOutcome | undefined {
  const state = isRecord(job.state) ? job.state : {};
  const status = firstString(job.lastRunStatus, state.lastRunStatus, state.lastStatus);
  if (!status || !OUTCOMES.has(status)) return undefined;
  const detail = status === 'ok' ? undefined : firstString(job.lastRunError, state.lastError);
  return { status: status as CronRunOutcome['status'], ...(detail ? { detail: detail.slice(0, 500) } : {}) };
}

/** OpenClaw's own heartbeat job of an agent (`declarationKey` `heartbeat:<agent>`). */
export const isOpenClawHeartbeat = (job: Record<string, unknown>): boolean =>
  typeof job.declarationKey === 'string' && job.declarationKey.startsWith('heartbeat:');

/**
 * Why OpenClaw skips a heartbeat (`heartbeat skipped: <reason>`, its `heartbeat-runner`) when the skip repeats at every
 * beat until the agent's configuration changes, with what each means in words: nowhere to deliver (`no-route`: the
 * default target `owner` on an agent with no messaging channel and no owner set, which is every agent here without a
 * channel), all output switched off, an empty monitor scratch. Measured with the pinned OpenClaw: a channel-less
 * agent's heartbeat is skipped with `no-route` at every beat and calls no model. Skips of the moment
 * (`requests-in-flight`, active hours, a duplicate) are not among them: the next beat may run.
 */
export const STANDING_HEARTBEAT_SKIPS: Readonly<Record<string, string>> = {
  'no-route': 'nowhere to deliver it (no messaging channel or owner); it will be skipped until one is set',
  'alerts-disabled': 'all its output is switched off',
  'empty-heartbeat-file': 'its checklist is empty',
};

/** The reason in OpenClaw's `heartbeat skipped: <reason>` / `heartbeat failed: <reason>`, else the words as they are. */
export const heartbeatReason = (detail: string): string => detail.replace(/^heartbeat (skipped|failed): /, '');
