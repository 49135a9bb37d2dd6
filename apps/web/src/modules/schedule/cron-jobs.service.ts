import { DomainError } from '@aop/core';
import { type CronRunOutcome, lastRunOutcome } from '@aop/core/cron-run';
import { CRON_EXPRESSION_MAX, cronExpressionProblem, timeZoneProblem } from '@aop/core/schedule-expression';
import { type CronJob, type CronJobInput, type GatewayConnection, GatewayError, cronList } from '@aop/gateway-client';
import type { AuthUser } from '../../platform/sessions.js';
import {
  type GatewayTarget,
  GatewayUnavailableError,
  isFurtherAgent,
  namesTargetAgent,
  scopedSessionKey,
} from '../../platform/clients/user-gateway.js';
import { type LifecycleDeps, isWakeFailure, readAgentState } from '../agents/lifecycle.service.js';

/**
 * Cron jobs in the spec's words (§2.4) and in OpenClaw's (`cron.add` params, `cron.list` jobs), and the rules that keep
 * users apart on a shared gateway.
 *
 * On a shared gateway every job a user creates carries their owner tag as a token of its `description` (users never set
 * the description, so they cannot forge it), and every read keeps only jobs with that token. The gateway's own `main`
 * session is common to everyone there, so a `systemEvent` job runs instead as an `agentTurn` in the user's own session
 * (`session:<owner>:main`) and is marked so that it reads back as the `systemEvent` it was created as.
 */

export type CronSchedule = { kind: 'every'; everyMs: number } | { kind: 'cron'; expr: string; tz?: string };

/** A schedule or payload as the gateway has it: a `kind` and that kind's fields. */
export interface OpenKind {
  kind: string;
  [k: string]: unknown;
}
export type CronPayload = OpenKind;

/**
 * A job the caller did not write: OpenClaw's own (its heartbeat monitor, memory-core's dreaming sweep, the Skill
 * Workshop review…) or the platform heartbeat that `PUT /api/heartbeat` keeps. `description` says in words what it does.
 */
export interface SystemJob {
  kind: 'heartbeat' | 'memory' | 'skill-review' | 'openclaw' | 'platform-heartbeat';
  description: string;
  /** Whether `DELETE /api/cron` removes it (only the platform heartbeat; OpenClaw would put its own back anyway). */
  deletable: boolean;
}

/** Spec §2.4, plus `system` for jobs the caller did not write and `lastOutcome` for jobs that ran. */
export interface CronJobView {
  id: string;
  name: string;
  enabled: boolean;
  schedule: CronSchedule | OpenKind;
  payload: CronPayload;
  lastRun: string | null;
  nextRun: string | null;
  lastOutcome?: CronRunOutcome;
  system?: SystemJob;
}

/** A validated `POST /api/cron` body. */
export interface NewCronJob {
  name: string;
  schedule: CronSchedule;
  payload: CronPayload;
  enabled: boolean;
}

export const NAME_MAX = 200;
const EXPR_MAX = CRON_EXPRESSION_MAX;
const TEXT_MAX = 10_000;

/** `description` token of the platform's heartbeat job (see `heartbeat.ts`). */
export const HEARTBEAT_MARK = 'aop-heartbeat';
/** `description` token of a `systemEvent` job stored as an `agentTurn` on a shared gateway. */
const SYSTEM_EVENT_MARK = 'aop-payload:systemEvent';

/** cron.list pages: OpenClaw's maximum page, and a bound on pages so a misbehaving gateway cannot keep us looping. */
const PAGE_SIZE = 200;
const MAX_PAGES = 50;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const nonEmpty = (value: unknown, max: number): value is string => typeof value === 'string' && value.trim() !== '' && value.length <= max;

/** Spec §2.4 schedules: `every` with a positive integer `everyMs`, or `cron` with a non-empty `expr` (and optional `tz`). */
export function checkedSchedule(value: Record<string, unknown>): CronSchedule {
  if (value.kind === 'every') {
    const everyMs = value.everyMs;
    if (typeof everyMs !== 'number' || !Number.isSafeInteger(everyMs) || everyMs <= 0) {
      throw new DomainError('INVALID_SCHEDULE_EVERYMS_POSITIVE_INTEGER');
    }
    return { kind: 'every', everyMs };
  }
  if (value.kind === 'cron') {
    if (!nonEmpty(value.expr, EXPR_MAX)) throw new DomainError('INVALID_SCHEDULE_EXPR_NON_EMPTY');
    // The gateway's own refusal (`invalid cron.add params: CronPattern: …`) names no field: the shared parser says
    // which field is wrong and what it allows, and the dashboard says the same before sending.
    const problem = cronExpressionProblem(value.expr);
    if (problem) throw new DomainError('INVALID_SCHEDULE_PROBLEM', { problem });
    if (value.tz !== undefined && !nonEmpty(value.tz, 100)) throw new DomainError('INVALID_SCHEDULE_TZ_TIME_ZONE');
    const tzProblem = value.tz === undefined ? null : timeZoneProblem(value.tz);
    if (tzProblem) throw new DomainError('INVALID_SCHEDULE_PROBLEM', { problem: tzProblem });
    return { kind: 'cron', expr: value.expr.trim(), ...(value.tz !== undefined ? { tz: (value.tz as string).trim() } : {}) };
  }
  throw new DomainError('INVALID_SCHEDULE_KIND_EVERY_CRON');
}

/**
 * Payloads users may schedule: `systemEvent` (text into the agent's session) and `agentTurn` (a prompt run in a fresh
 * session). OpenClaw's `command` and `script` payloads run programs on the gateway's host, which is not a tenant sandbox
 * (and is everyone's on a shared gateway), so they are refused.
 */
export function checkedPayload(value: Record<string, unknown>): CronPayload {
  if (value.kind === 'systemEvent') {
    if (!nonEmpty(value.text, TEXT_MAX)) throw new DomainError('INVALID_PAYLOAD_SYSTEMEVENT_NEEDS_TEXT', { max: TEXT_MAX });
    return { kind: 'systemEvent', text: value.text };
  }
  if (value.kind === 'agentTurn') {
    if (!nonEmpty(value.message, TEXT_MAX)) {
      throw new DomainError('INVALID_PAYLOAD_AGENTTURN_NEEDS_MESSAGE', { max: TEXT_MAX });
    }
    const payload: CronPayload = { kind: 'agentTurn', message: value.message };
    for (const key of ['model', 'thinking'] as const) {
      if (value[key] === undefined) continue;
      if (!nonEmpty(value[key], 200)) throw new DomainError('INVALID_PAYLOAD_FIELD_TYPE', { key });
      payload[key] = value[key];
    }
    if (value.timeoutSeconds !== undefined) {
      const t = value.timeoutSeconds;
      if (typeof t !== 'number' || !Number.isFinite(t) || t < 0) throw new DomainError('INVALID_PAYLOAD_TIMEOUTSECONDS_NUMBER_0');
      payload.timeoutSeconds = t;
    }
    return payload;
  }
  throw new DomainError('INVALID_PAYLOAD_KIND_SYSTEMEVENT_AGENTTURN');
}

/** A `POST /api/cron` body as its schema (`CreateCronJobBody`) has checked it: the types, a non-blank name of at most 200 characters. */
export interface CronJobBody {
  name: string;
  schedule: Record<string, unknown>;
  payload: Record<string, unknown>;
  enabled?: boolean;
}

/**
 * The job a `POST /api/cron` body asks for: the name trimmed, the schedule and payload checked for their kind (each
 * kind has its own message, so they are checked here rather than by the schema).
 */
export function checkedCronJob(body: CronJobBody): NewCronJob {
  const { name, schedule, payload, enabled } = body;
  return { name: name.trim(), schedule: checkedSchedule(schedule), payload: checkedPayload(payload), enabled: enabled ?? true };
}

const tokens = (job: Pick<CronJob, 'description'>) => (typeof job.description === 'string' ? job.description.split(/\s+/) : []);

/** Whether `job` carries the `description` token `mark`. */
export const hasMark = (job: Pick<CronJob, 'description'>, mark: string) => tokens(job).includes(mark);

/**
 * Whether the caller may see and change `job` on `target`: their agent's jobs on its gateway (a job names its agent,
 * else it is OpenClaw's default agent's, `main`), only their tagged jobs on a shared one.
 */
export const ownsJob = (target: GatewayTarget, job: Pick<CronJob, 'description' | 'agentId'>) =>
  target.ownerTag ? hasMark(job, target.ownerTag) : namesTargetAgent(target, job.agentId);

/**
 * `cron.add` params for `job` on `target` (research: `systemEvent` needs `sessionTarget: 'main'`, `agentTurn` an
 * isolated or `session:` target). Runs are not delivered to a channel (`delivery: none`): OpenClaw's default for
 * isolated runs is an announcement, which fails without a configured channel. `marks` are extra `description` tokens.
 */
export function cronAddParams(target: GatewayTarget, job: NewCronJob, marks: string[] = []): CronJobInput {
  const description = [...(target.ownerTag ? [target.ownerTag] : []), ...marks];
  let payload: CronPayload;
  let sessionTarget: string;
  // A message in the main session is a system event there, but OpenClaw runs a main-session job only for a gateway's
  // default agent ("sessionTarget main is only valid for the default agent"): on the shared gateway (the user's jobs
  // live in sessions of their own) and for a further agent of a customer's gateway, it is a turn in that main session.
  if (job.payload.kind === 'systemEvent' && (target.ownerTag || isFurtherAgent(target))) {
    payload = { kind: 'agentTurn', message: job.payload.text };
    sessionTarget = `session:${scopedSessionKey(target, 'main')}`;
    description.push(SYSTEM_EVENT_MARK);
  } else if (job.payload.kind === 'systemEvent') {
    payload = job.payload;
    sessionTarget = 'main';
  } else {
    payload = job.payload;
    sessionTarget = 'isolated';
  }
  return {
    name: job.name,
    ...(target.openclawAgentId ? { agentId: target.openclawAgentId } : {}),
    ...(description.length > 0 ? { description: description.join(' ') } : {}),
    schedule: job.schedule,
    sessionTarget,
    wakeMode: 'now',
    payload,
    ...(payload.kind === 'agentTurn' ? { delivery: { mode: 'none' } } : {}),
    enabled: job.enabled,
  };
}

/** The raw token OpenClaw's plugins put in their jobs' messages, e.g. `__openclaw_memory_core_short_term_promotion_dream__`. */
const OPENCLAW_TOKEN = /^__openclaw_[a-z0-9_]+__$/;
/** `[managed-by=memory-core.short-term-promotion]`: how OpenClaw's plugins tag the jobs they keep, in the description. */
const MANAGED_BY = /\[managed-by=([^\]\s]+)\]/;

/**
 * Whether OpenClaw or the platform keeps `job`, and what it is. OpenClaw marks its own jobs (openclaw@2026.9.6,
 * `dist/system-owned-declaration-*.mjs`, `extensions/memory-core`): a `declarationKey` (`heartbeat:<agent>`,
 * `heartbeat-task:…`, `skill-collection-review:…`, `memory-core:memory-dreaming-promotion`), the payload kind
 * `heartbeat`, a `[managed-by=…]` tag in the description, or a message that is one of its `__openclaw_…__` tokens.
 * Clients of the platform can set none of these (`cronAddParams` writes no declaration key, and a description only
 * of the platform's marks).
 */
export function systemJob(job: CronJob): SystemJob | null {
  if (hasMark(job, HEARTBEAT_MARK)) {
    return {
      kind: 'platform-heartbeat',
      description: 'The platform heartbeat: it asks the agent to check in. Change or switch it off under Heartbeat.',
      deletable: true,
    };
  }
  const key = typeof job.declarationKey === 'string' ? job.declarationKey : '';
  const payload: Record<string, unknown> = isObject(job.payload) ? job.payload : {};
  const message = [payload.message, payload.text].find((v): v is string => typeof v === 'string') ?? '';
  const managedBy = typeof job.description === 'string' ? MANAGED_BY.exec(job.description)?.[1] : undefined;
  if (key.startsWith('heartbeat:') || payload.kind === 'heartbeat') {
    const agent = key.startsWith('heartbeat:') ? key.slice('heartbeat:'.length) : 'main';
    return {
      kind: 'heartbeat',
      description: `OpenClaw's own heartbeat for agent “${agent}”: a periodic check-in turn in the agent's main session. It follows the agent's configuration (agents.defaults.heartbeat).`,
      deletable: false,
    };
  }
  if (key.startsWith('memory-core:') || managedBy?.startsWith('memory-core.') || message.startsWith('__openclaw_memory_core_')) {
    return {
      kind: 'memory',
      description:
        'OpenClaw memory maintenance (“dreaming”): promotes notes the agent keeps recalling into its long-term memory (MEMORY.md). Kept by the memory-core plugin; it follows the dreaming settings of the agent configuration.',
      deletable: false,
    };
  }
  if (key.startsWith('skill-collection-review:')) {
    return {
      kind: 'skill-review',
      description: "OpenClaw's Skill Workshop review of the agent's skills. It follows skills.workshop in the agent configuration.",
      deletable: false,
    };
  }
  if (key !== '' || managedBy !== undefined || OPENCLAW_TOKEN.test(message.trim())) {
    const owner = managedBy ?? (key || 'OpenClaw');
    return { kind: 'openclaw', description: `Kept by OpenClaw (${owner}); it follows the agent configuration.`, deletable: false };
  }
  return null;
}

const iso = (ms: unknown) => (typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null);

/** A gateway job in the spec's shape (§2.4); schedule and payload kinds the spec does not name pass through unchanged. */
export function cronJobView(job: CronJob): CronJobView {
  const state = isObject(job.state) ? job.state : {};
  const raw: OpenKind = isObject(job.schedule) && typeof job.schedule.kind === 'string' ? job.schedule : { kind: 'unknown' };
  let schedule: CronJobView['schedule'] = raw;
  if (raw.kind === 'every') schedule = { kind: 'every', everyMs: raw.everyMs as number };
  else if (raw.kind === 'cron')
    schedule = { kind: 'cron', expr: raw.expr as string, ...(typeof raw.tz === 'string' ? { tz: raw.tz } : {}) };
  const rawPayload: CronPayload = isObject(job.payload) && typeof job.payload.kind === 'string' ? job.payload : { kind: 'unknown' };
  let payload = rawPayload;
  if (rawPayload.kind === 'systemEvent') payload = { kind: 'systemEvent', text: rawPayload.text };
  else if (rawPayload.kind === 'agentTurn' && hasMark(job, SYSTEM_EVENT_MARK)) payload = { kind: 'systemEvent', text: rawPayload.message };
  const system = systemJob(job);
  // A skipped run has a run time like one that ran: the time alone would say it ran.
  const outcome = lastRunOutcome(job);
  return {
    id: job.id,
    name: typeof job.name === 'string' ? job.name : '',
    enabled: job.enabled !== false,
    schedule,
    payload,
    lastRun: iso(job.lastRunAtMs ?? state.lastRunAtMs),
    nextRun: iso(job.nextRunAtMs ?? state.nextRunAtMs),
    ...(outcome ? { lastOutcome: outcome } : {}),
    ...(system ? { system } : {}),
  };
}

/**
 * Every job on `target` the caller owns, disabled ones included, across all `cron.list` pages. On a shared gateway the
 * list is narrowed on the gateway by `query` (a substring match), then exactly by owner tag here.
 */
export async function listOwnJobs(conn: GatewayConnection, target: GatewayTarget, query?: string): Promise<CronJob[]> {
  const search = query ?? target.ownerTag ?? undefined;
  const jobs: CronJob[] = [];
  let offset = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await cronList(conn, {
      includeDisabled: true,
      enabled: 'all',
      limit: PAGE_SIZE,
      offset,
      ...(search ? { query: search } : {}),
    });
    jobs.push(...(Array.isArray(result.jobs) ? result.jobs : []));
    const next = result.nextOffset;
    if (result.hasMore !== true || typeof next !== 'number' || next <= offset) break;
    offset = next;
  }
  return jobs.filter((job) => ownsJob(target, job));
}

/** The job `jobId` if the caller owns it on `target`, else null (`cron.get`). */
export async function getOwnJob(conn: GatewayConnection, target: GatewayTarget, jobId: string): Promise<CronJob | null> {
  try {
    const job = await conn.request<CronJob>('cron.get', { id: jobId });
    return ownsJob(target, job) ? job : null;
  } catch (err) {
    if (isJobNotFound(err)) return null;
    throw err;
  }
}

/** OpenClaw's answer to an unknown job id (`details.code: CRON_JOB_NOT_FOUND`). */
export function isJobNotFound(err: unknown): boolean {
  return err instanceof GatewayError && isObject(err.details) && err.details.code === 'CRON_JOB_NOT_FOUND';
}

/** Codes our client raises itself when the gateway cannot be reached or talked to (the rest are the gateway's answers). */
const UNREACHABLE_WORDS: Record<string, string> = {
  CONNECT_FAILED: 'connection failed',
  CLOSED: 'connection closed',
  TIMEOUT: 'timed out',
  PROTOCOL_ERROR: 'unexpected answer',
};
const UNREACHABLE_CODES = new Set(Object.keys(UNREACHABLE_WORDS));

/**
 * What to tell the caller when a gateway call failed: there is no gateway, it cannot be reached (or its sleeping agent
 * could not be woken for it), or it refused. Null for
 * anything else (a bug, a database error), which must surface as a 500.
 */
export function gatewayFailureMessage(err: unknown): string | null {
  // A sleeping agent that could not be woken for the call (no room on its host, still starting): said as such.
  if (isWakeFailure(err)) return err.message;
  if (err instanceof GatewayUnavailableError) return `No gateway available: ${err.message}`;
  if (err instanceof GatewayError) {
    // Connection details (addresses, ports of the platform's gateways) stay out of answers; the gateway's own
    // refusal (e.g. an invalid cron expression) is what the user needs to fix the request.
    return UNREACHABLE_CODES.has(err.code)
      ? `Gateway unreachable: ${UNREACHABLE_WORDS[err.code]}`
      : `Gateway rejected the request: ${err.message}`;
  }
  return null;
}

const ASLEEP_JOBS_MESSAGE = 'The agent is asleep (hibernated after being idle): its jobs are kept, and the next due one wakes it';
const STOPPED_JOBS_MESSAGE = 'The agent is stopped: its jobs are kept, and run again once it is started';

/**
 * Why an agent's gateway did not answer, when the reason is the agent's state: stopped, or asleep (the platform's own
 * calls do not wake it: they would keep every agent a dashboard shows awake). "Unreachable" would be true but
 * misleading. Null otherwise, or when its state cannot be read.
 */
export async function downMessage(deps: LifecycleDeps, user: AuthUser, target: GatewayTarget): Promise<string | null> {
  if (target.stopped) return STOPPED_JOBS_MESSAGE;
  if (!target.agentId) return null;
  const state = await readAgentState(deps, user, target.agentId).catch(() => null);
  return state?.state === 'hibernated' ? ASLEEP_JOBS_MESSAGE : null;
}

/** 502 with `gatewayFailureMessage`, or `err` itself when it is not a gateway failure. */
export function gatewayFailure(err: unknown): unknown {
  const message = gatewayFailureMessage(err);
  return message === null ? err : new DomainError('GATEWAY_CALL_FAILED', { detail: message });
}
