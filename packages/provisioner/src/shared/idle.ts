import { isWarmUpSession, sessionIsActive, sessionLastActivityMs } from '@aop/core/agent-state';
import { STANDING_HEARTBEAT_SKIPS, heartbeatReason, isOpenClawHeartbeat, lastRunOutcome } from '@aop/core/cron-run';
import type { GatewayConnection } from '@aop/gateway-client';
import { type ControlCredentials, OWN_GATEWAY_AGENT_ID } from '../host.js';
import { type Exclusive, isBusy } from './registry.js';
import { connectControl } from './gateway-probe.js';

/**
 * Hibernation's rules, shared by the hosts that put idle gateways to sleep (local, docker, kubernetes): what a gateway
 * says of its activity, which agents never sleep, and when an idle one may. Each host stops and starts its gateways
 * its own way; what counts as idle is decided here, once.
 */

/** How often a host checks its gateways for idleness and its sleeping ones for a due job, by default. */
export const DEFAULT_IDLE_CHECK_MS = 60_000;

/** A hibernated agent is started this long before its next due job by default: a cold start and its warm-up. */
export const DEFAULT_WAKE_LEAD_MS = 90_000;

const ms = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

/**
 * What one enabled cron job says of the gateway's activity. A skipped run did nothing, though OpenClaw records it as a
 * run (`lastRunAtMs`): not activity, or a heartbeat skipped every 30 minutes would keep an idle agent from ever
 * sleeping. OpenClaw's own heartbeat whose last beat was skipped for a standing reason (`STANDING_HEARTBEAT_SKIPS`) is
 * not worth waking for: its next due time is left out (0), so a sleeping agent is not started every 30 minutes only to
 * skip it again.
 */
export function jobActivity(job: Record<string, unknown>): { lastRanMs: number; running: boolean; nextDueMs: number } {
  const state = (typeof job.state === 'object' && job.state !== null ? job.state : {}) as Record<string, unknown>;
  const outcome = lastRunOutcome(job);
  const standingSkip =
    outcome?.status === 'skipped' &&
    outcome.detail?.startsWith('heartbeat skipped: ') === true &&
    isOpenClawHeartbeat(job) &&
    Object.hasOwn(STANDING_HEARTBEAT_SKIPS, heartbeatReason(outcome.detail));
  return {
    lastRanMs: outcome?.status === 'skipped' ? 0 : Math.max(ms(job.lastRunAtMs), ms(state.lastRunAtMs)),
    running: ms(state.runningAtMs) > 0,
    nextDueMs: standingSkip ? 0 : ms(job.nextRunAtMs) || ms(state.nextRunAtMs),
  };
}

/** What a gateway reports of its own activity (`readGatewayActivity`). */
export interface GatewayActivity {
  /** The latest session activity or cron run (wall clock ms; 0: none). */
  lastActiveMs: number;
  /** A turn or job is running, or a client other than the platform is connected. */
  busy: boolean;
  /**
   * The next due time of its enabled cron jobs (OpenClaw's heartbeat is one of them, unless it is skipped at every beat:
   * `jobActivity`), null when none is due.
   */
  nextDueMs: number | null;
  /**
   * The next due time of each agent's enabled jobs, by OpenClaw agent id (a job naming no agent is its default agent's,
   * `main`): a gateway asleep wakes only for the agents that still want to run in it (`hibernationFor`).
   */
  dueByAgent: Record<string, number>;
}

/**
 * What the gateway itself says of its activity, over a connection with operator read scope: the latest session activity
 * (chat turns, cron and heartbeat runs all land in a session), whether a turn or job is running or a client other than
 * the platform is connected (`system-presence` lists the gateway itself, `reason: self`), and the next due time of its
 * enabled cron jobs (OpenClaw's heartbeat is one of them, `heartbeat-main`), each read by `jobActivity`.
 */
export async function readGatewayActivity(conn: GatewayConnection): Promise<GatewayActivity> {
  const opts = { timeoutMs: 10_000 };
  const sessions = await conn.request<{ sessions?: Record<string, unknown>[] }>('sessions.list', { limit: 20, sortBy: 'activity' }, opts);
  const cron = await conn.request<{ jobs?: Record<string, unknown>[] }>('cron.list', { includeDisabled: false, limit: 200 }, opts);
  const presence = await conn.request<unknown>('system-presence', {}, opts);
  let lastActiveMs = 0;
  let busy = false;
  for (const row of sessions.sessions ?? []) {
    if (typeof row.key === 'string' && isWarmUpSession(row.key)) continue;
    lastActiveMs = Math.max(lastActiveMs, sessionLastActivityMs(row));
    if (sessionIsActive(row)) busy = true;
  }
  let nextDueMs: number | null = null;
  const dueByAgent: Record<string, number> = {};
  for (const job of cron.jobs ?? []) {
    if (job.enabled === false) continue;
    const run = jobActivity(job);
    lastActiveMs = Math.max(lastActiveMs, run.lastRanMs);
    if (run.running) busy = true;
    if (run.nextDueMs <= 0) continue;
    nextDueMs = nextDueMs === null ? run.nextDueMs : Math.min(nextDueMs, run.nextDueMs);
    const agent = typeof job.agentId === 'string' && job.agentId ? job.agentId : OWN_GATEWAY_AGENT_ID;
    dueByAgent[agent] = Math.min(dueByAgent[agent] ?? run.nextDueMs, run.nextDueMs);
  }
  const entries = Array.isArray(presence) ? presence : [];
  if (entries.some((entry) => typeof entry === 'object' && entry !== null && (entry as { reason?: unknown }).reason !== 'self'))
    busy = true;
  return { lastActiveMs, busy, nextDueMs, dueByAgent };
}

/**
 * `readGatewayActivity` over a connection of its own to the gateway at `url` (`http(s)://`, `ws(s)://`) with the
 * platform's credentials: the token on loopback (local), the paired platform device through a published port or a
 * Service (docker, kubernetes).
 */
export async function readActivityAt(url: string, credentials: ControlCredentials): Promise<GatewayActivity> {
  const conn = await connectControl(url, credentials);
  try {
    return await readGatewayActivity(conn);
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/** Messaging channels (Telegram, Discord, WhatsApp) need a live connection to receive anything: never hibernated. */
export function keepsAwake(config: Record<string, unknown>, channelTokens: object | undefined): boolean {
  const channels = config.channels as Record<string, { enabled?: unknown }> | undefined;
  return Object.values(channelTokens ?? {}).some(Boolean) || channels?.whatsapp?.enabled === true;
}

/** Idle long enough to be worth asking the gateway: nothing seen for `idleMs` since it became ready or was last active. */
export function idleLongEnough(readyAt: number, lastActiveAt: number | null, idleMs: number, now = Date.now()): boolean {
  return now - Math.max(readyAt, lastActiveAt ?? 0) >= idleMs;
}

/**
 * Whether a gateway that reported `activity` may sleep now: nothing running, nothing for `idleMs`, and no job due before
 * a sleep would be worth it (a job due within the wake lead plus the idle time, or overdue, keeps it awake).
 */
export function maySleep(
  activity: GatewayActivity,
  at: { readyAt: number; lastActiveAt: number | null },
  options: { idleMs: number; wakeLeadMs: number },
  now = Date.now(),
): boolean {
  if (activity.busy || !idleLongEnough(at.readyAt, Math.max(at.lastActiveAt ?? 0, activity.lastActiveMs), options.idleMs, now))
    return false;
  return activity.nextDueMs === null || activity.nextDueMs - now >= options.wakeLeadMs + options.idleMs;
}

/** What `askIdle` found: the gateway's latest activity as now known, and whether it may sleep (and its next due job). */
export interface IdleVerdict extends Due {
  lastActiveAt: number;
  sleep: boolean;
}

/** When a gateway's jobs are next due: all of them (null: none), and by agent (as `GatewayActivity` reads them). */
export interface Due {
  nextDueMs: number | null;
  dueByAgent?: Record<string, number> | undefined;
}

/**
 * The idle check of one running gateway, the same on every host: asked only once nothing was seen on it for `idleMs`
 * since it became ready (`at`) and only when it is not kept awake; then `read` asks the gateway itself. Null when it
 * was not asked or could not answer — it stays awake; otherwise what it reported and whether it may sleep.
 */
export async function askIdle(
  at: { readyAt: number; lastActiveAt: number | null },
  options: { idleMs: number; wakeLeadMs: number },
  gateway: { keptAwake: () => boolean | Promise<boolean>; read: () => Promise<GatewayActivity> },
  now = () => Date.now(),
): Promise<IdleVerdict | null> {
  if (!idleLongEnough(at.readyAt, at.lastActiveAt, options.idleMs, now()) || (await gateway.keptAwake())) return null;
  const activity = await gateway.read().catch(() => null);
  if (!activity) return null;
  const lastActiveAt = Math.max(at.lastActiveAt ?? 0, activity.lastActiveMs);
  const sleep = maySleep(activity, { readyAt: at.readyAt, lastActiveAt }, options, now());
  return { lastActiveAt, sleep, nextDueMs: activity.nextDueMs, dueByAgent: activity.dueByAgent };
}

/**
 * For a full host that makes room (eviction): of `candidates`, the one whose gateway may sleep and has been idle the
 * longest (since it became ready or was last active), with its next due job; null when none may. `ask` is the host's
 * `askIdle` with the eviction's idle time; a candidate it cannot ask stays awake.
 */
export async function idlestOf<A>(
  candidates: Iterable<A>,
  ask: (candidate: A) => Promise<IdleVerdict | null>,
  readyAtOf: (candidate: A) => number | null,
): Promise<({ candidate: A; since: number } & Due) | null> {
  let idlest: ({ candidate: A; since: number } & Due) | null = null;
  for (const candidate of candidates) {
    const verdict = await ask(candidate).catch(() => null);
    if (!verdict?.sleep) continue;
    const since = Math.max(readyAtOf(candidate) ?? 0, verdict.lastActiveAt);
    if (!idlest || since < idlest.since) idlest = { candidate, since, nextDueMs: verdict.nextDueMs, dueByAgent: verdict.dueByAgent };
  }
  return idlest;
}

/** The log line of an agent hibernated early to make room for `requester`. */
export const evictionLogLine = (since: number, requester: string, now = Date.now()) =>
  `[host] idle for ${((now - since) / 60_000).toFixed(1)} min and agent ${requester} needs the room: hibernating early`;

/** An agent idle this long gives way to one that needs its room (`AGENT_EVICT_IDLE_MINUTES`' default). */
export const DEFAULT_EVICT_IDLE_MS = 120_000;

/** How a host's agents look to `hibernateIdlest`. */
export interface EvictionCandidate extends Exclusive {
  record: { agentId: string };
  readyAt: number | null;
}

/**
 * A full host's last way to make room for `requester`, the same on every host: hibernates the agent idle the longest
 * (`idlestOf`, asked with the eviction's idle time), logging why. An agent with an operation running or waiting is
 * never taken (`isBusy`), when the candidates are chosen nor just before its hibernation: that operation may be a start
 * waiting for this very capacity check, and the hibernation would wait for it. False when nobody may give way.
 */
export async function hibernateIdlest<A extends EvictionCandidate>(
  requester: string,
  agents: Iterable<A>,
  times: { idleMs?: number | undefined; evictIdleMs?: number | undefined },
  host: {
    /** The host's `askIdle` for an agent, with the idle time given. */
    ask: (agent: A, idleMs: number) => Promise<IdleVerdict | null>;
    log: (agent: A, line: string) => void;
    hibernate: (agent: A, due: Due) => Promise<{ status: string }>;
  },
): Promise<boolean> {
  // Only where hibernation is on (`idleMs`), and only agents idle for `evictIdleMs` (0: never).
  const minIdleMs = times.evictIdleMs ?? DEFAULT_EVICT_IDLE_MS;
  if (minIdleMs <= 0 || (times.idleMs ?? 0) <= 0) return false;
  const candidates = [...agents].filter((agent) => agent.record.agentId !== requester && !isBusy(agent));
  const idlest = await idlestOf(
    candidates,
    (agent) => host.ask(agent, minIdleMs),
    (agent) => agent.readyAt,
  );
  if (!idlest || isBusy(idlest.candidate)) return false;
  host.log(idlest.candidate, evictionLogLine(idlest.since, requester));
  return (await host.hibernate(idlest.candidate, idlest)).status === 'hibernated';
}

/** When a hibernated agent is started for its next due job: the wake lead before it (null: no job due). */
export function wakeAtFor(nextDueMs: number | null, wakeLeadMs: number): string | null {
  return nextDueMs === null ? null : new Date(nextDueMs - wakeLeadMs).toISOString();
}

/**
 * A hibernated agent's next due job has come close enough to wake it: its wake time has come, or comes before the
 * host's next check (`checkEveryMs` from now). Woken at the check before it rather than the one after, a gateway gets
 * the whole wake lead to start: one woken late finds its job overdue, and OpenClaw reschedules an agent turn overdue at
 * its start instead of running it.
 */
export function dueToWake(hibernation: { wakeAt: string | null } | null | undefined, now = Date.now(), checkEveryMs = 0): boolean {
  return Boolean(hibernation?.wakeAt && Date.parse(hibernation.wakeAt) <= now + checkEveryMs);
}

/**
 * What a host keeps of a hibernated agent: since when, and when to wake it for its next due job (null: none); in a
 * gateway of several agents, each one's next due time too (OpenClaw agent ids), so an agent stopped while the gateway
 * sleeps no longer wakes it (`hibernationFor`).
 */
export interface Hibernation {
  since: string;
  wakeAt: string | null;
  dueByAgent?: Record<string, number> | undefined;
}

/** How a host's log says when a sleeping gateway wakes (`wakeAt`, null: no job due). */
export const wakeNote = (wakeAt: string | null): string => (wakeAt ? `wakes at ${wakeAt} for its next due job` : 'no job due');

/** What a host's public `hibernate` is given (one due time, or the idle check's `Due`) as a `Due`. */
export const asDue = (due: number | null | Due): Due => (typeof due === 'object' && due !== null ? due : { nextDueMs: due });

/** The record of a gateway falling asleep now, woken `wakeLeadMs` before its next due job. */
export function hibernationOf(due: Due, wakeLeadMs: number, now = Date.now()): Hibernation {
  return {
    since: new Date(now).toISOString(),
    wakeAt: wakeAtFor(due.nextDueMs, wakeLeadMs),
    ...(due.dueByAgent ? { dueByAgent: due.dueByAgent } : {}),
  };
}

/**
 * A sleeping gateway's record once only the agents `wanted` (OpenClaw ids) want to run in it (one was stopped or
 * deleted while it slept): woken for their jobs alone. Without due times by agent (put to sleep with one time) it
 * stands as it was.
 */
export function hibernationFor(hibernation: Hibernation, wanted: ReadonlySet<string>, wakeLeadMs: number): Hibernation {
  if (!hibernation.dueByAgent) return hibernation;
  const dueByAgent = Object.fromEntries(Object.entries(hibernation.dueByAgent).filter(([agent]) => wanted.has(agent)));
  const times = Object.values(dueByAgent);
  return { ...hibernation, dueByAgent, wakeAt: wakeAtFor(times.length > 0 ? Math.min(...times) : null, wakeLeadMs) };
}

/**
 * A host's sleeping gateway whose roster changed (`note`: an agent stopped or deleted): its record woken for the jobs of
 * the agents still `wanted` alone (`hibernationFor`), saved and logged when its wake time moved (local, docker; the
 * kubernetes host keeps it in annotations).
 */
export async function rewakeAsleep(
  record: { hibernation?: Hibernation | null | undefined },
  wanted: ReadonlySet<string>,
  wakeLeadMs: number,
  note: string,
  host: { save: () => Promise<void>; log: (line: string) => void },
): Promise<void> {
  if (!record.hibernation) return;
  const hibernation = hibernationFor(record.hibernation, wanted, wakeLeadMs);
  if (hibernation.wakeAt === record.hibernation.wakeAt) return;
  record.hibernation = hibernation;
  await host.save();
  host.log(`[host] ${note} while asleep: ${wakeNote(hibernation.wakeAt)}`);
}
