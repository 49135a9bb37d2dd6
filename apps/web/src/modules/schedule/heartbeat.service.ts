import type { DB, Database } from '@aop/db';
import type { Kysely } from 'kysely';
import { type CronJob, type GatewayConnection, cronAdd, cronRemove } from '@aop/gateway-client';
import { requireOwnAgent } from '../../platform/owned-agent.js';
import { HEARTBEAT_MARK, cronAddParams, cronJobView, hasMark, listOwnJobs } from './cron-jobs.service.js';
import { type GatewayDeps, type GatewayTarget, ownAgentGateway, withGateway } from '../../platform/clients/user-gateway.js';
import type { Caller } from '../../platform/sessions.js';

/**
 * The heartbeat the platform manages (spec §4.10): one ordinary cron job per user on their gateway, found by the
 * `aop-heartbeat` token in its `description` (plus the owner tag on a shared gateway).
 *
 * It is not OpenClaw's own `heartbeat-main`: that job is system-owned (`cron.update`/`cron.remove` answer "system-owned
 * monitor jobs cannot be edited/removed by cron clients") and is re-derived from `agents.defaults.heartbeat.every` of the
 * agent's configuration whenever the gateway loads it, so it is governed through `/api/config`, not here.
 */

/** The frequencies `PUT /api/heartbeat` accepts, in milliseconds. */
export const FREQUENCIES: Readonly<Record<string, number>> = {
  '30m': 30 * 60_000,
  '1h': 3_600_000,
  '2h': 2 * 3_600_000,
  '3h': 3 * 3_600_000,
  '6h': 6 * 3_600_000,
  '12h': 12 * 3_600_000,
};
export const DEFAULT_FREQUENCY = '30m';
/** Longest `agentId` a heartbeat write takes. */
export const HEARTBEAT_AGENT_ID_MAX = 200;

export const HEARTBEAT_JOB_NAME = 'platform-heartbeat';
/** What the agent is told on each beat (OpenClaw's heartbeat convention: `HEARTBEAT.md`, `HEARTBEAT_OK`). */
export const HEARTBEAT_TEXT =
  'Heartbeat: read HEARTBEAT.md if it exists and follow it strictly. Do not repeat old tasks from earlier chats. If nothing needs attention, reply HEARTBEAT_OK.';

/** A millisecond schedule as the spec writes frequencies: whole hours `1h`, else whole minutes `30m`, else seconds. */
export function frequencyOf(schedule: CronJob['schedule'] | undefined): string {
  if (schedule?.kind === 'cron' && typeof schedule.expr === 'string') return schedule.expr;
  const ms = schedule?.kind === 'every' ? Number(schedule.everyMs) : Number.NaN;
  if (!Number.isFinite(ms) || ms <= 0) return 'unknown';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/**
 * Whether `target` is where `agentId`'s heartbeat lives. The user's own gateway serves only its agent; without an
 * agent of their own the user's heartbeat is on the shared gateway whatever agent record they name.
 */
export function servesAgent(target: GatewayTarget, agentId: string | undefined): boolean {
  return agentId === undefined || target.kind === 'shared' || target.agentId === agentId;
}

export async function findHeartbeatJob(conn: GatewayConnection, target: GatewayTarget): Promise<CronJob | null> {
  // On a shared gateway narrow by owner (the exact owner check follows); on one's own gateway by the mark.
  const jobs = await listOwnJobs(conn, target, target.ownerTag ?? HEARTBEAT_MARK);
  return jobs.find((job) => hasMark(job, HEARTBEAT_MARK)) ?? null;
}

export interface GatewayHeartbeat {
  enabled: boolean;
  frequency: string;
  nextRun: string | null;
  lastRun: string | null;
}

export function heartbeatView(job: CronJob): GatewayHeartbeat {
  const view = cronJobView(job);
  return { enabled: view.enabled, frequency: frequencyOf(job.schedule), nextRun: view.nextRun, lastRun: view.lastRun };
}

/**
 * Creates the heartbeat job or changes the existing one (`cron.update` with `enabled` and, when a frequency is given,
 * the schedule). Without a frequency an existing job keeps its schedule and a new one beats every 30 minutes.
 */
export async function upsertHeartbeatJob(
  conn: GatewayConnection,
  target: GatewayTarget,
  settings: { enabled: boolean; frequency: string | undefined },
): Promise<GatewayHeartbeat> {
  const existing = await findHeartbeatJob(conn, target);
  const everyMs = settings.frequency === undefined ? undefined : FREQUENCIES[settings.frequency];
  if (existing) {
    const patch = { enabled: settings.enabled, ...(everyMs !== undefined ? { schedule: { kind: 'every', everyMs } } : {}) };
    return heartbeatView(await conn.request<CronJob>('cron.update', { id: existing.id, patch }));
  }
  const params = cronAddParams(
    target,
    {
      name: HEARTBEAT_JOB_NAME,
      schedule: { kind: 'every', everyMs: everyMs ?? (FREQUENCIES[DEFAULT_FREQUENCY] as number) },
      payload: { kind: 'systemEvent', text: HEARTBEAT_TEXT },
      enabled: settings.enabled,
    },
    [HEARTBEAT_MARK],
  );
  return heartbeatView(await cronAdd(conn, params));
}

/** Removes the heartbeat job if there is one; true when one was removed. */
export async function removeHeartbeatJob(conn: GatewayConnection, target: GatewayTarget): Promise<boolean> {
  const existing = await findHeartbeatJob(conn, target);
  if (!existing) return false;
  await cronRemove(conn, existing.id);
  return true;
}

/** Heartbeat settings kept in the database, for when no gateway holds the agent's heartbeat. */
export interface StoredHeartbeat {
  enabled: boolean;
  frequency: string;
}

/** The caller's saved settings for `agentId`, or null when none are saved. */
export async function findHeartbeatSettings(db: Database, userId: string, agentId: string): Promise<StoredHeartbeat | null> {
  const row = await db.withUser(userId, (trx) =>
    trx.selectFrom('heartbeat_settings').select(['enabled', 'frequency']).where('agent_id', '=', agentId).executeTakeFirst(),
  );
  return row ?? null;
}

/** Saves the caller's settings for `agentId`; 404 `Agent not found` unless it is one of theirs. */
export async function saveHeartbeatSettings(
  db: Database,
  userId: string,
  agentId: string,
  settings: { enabled: boolean; frequency: string | undefined },
): Promise<StoredHeartbeat> {
  const { enabled, frequency } = settings;
  return db.withUser(userId, async (trx) => {
    await requireOwnAgent(trx, agentId);
    // Without a frequency, keep the stored one.
    return trx
      .insertInto('heartbeat_settings')
      .values({ user_id: userId, agent_id: agentId, enabled, frequency: frequency ?? DEFAULT_FREQUENCY })
      .onConflict((oc) =>
        oc.columns(['user_id', 'agent_id']).doUpdateSet({ enabled, ...(frequency ? { frequency } : {}), updated_at: new Date() }),
      )
      .returning(['enabled', 'frequency'])
      .executeTakeFirstOrThrow();
  });
}

/** Forgets the caller's saved settings for `agentId`, if any. */
export async function deleteHeartbeatSettings(db: Database, userId: string, agentId: string): Promise<void> {
  await db.withUser(userId, (trx) => trx.deleteFrom('heartbeat_settings').where('agent_id', '=', agentId).execute());
}

/**
 * Puts the heartbeat saved in the database for `agentId` on the agent's own gateway, once the agent has been started
 * and is live. The settings were saved there because its gateway could not take them (`PUT /api/heartbeat` while the
 * agent was stopped), and nothing else ever puts them where they run. Once they are on the gateway the saved copy is
 * forgotten: `GET /api/heartbeat` reads the gateway's job first, and a copy left behind would be what it shows while
 * the gateway is down and would be put back over a newer setting at the next start. A copy saved anew meanwhile, with
 * other values, is kept for the next start. Answers the settings applied (null: none saved); throws what the gateway
 * call threw, with the saved copy kept.
 */
export async function applySavedHeartbeat(
  deps: Pick<GatewayDeps, 'db' | 'backend'>,
  user: Caller,
  agentId: string,
  timeoutMs: number,
): Promise<StoredHeartbeat | null> {
  const saved = await findHeartbeatSettings(deps.db, user.id, agentId);
  if (!saved) return null;
  const target = await ownAgentGateway(deps, user, agentId);
  // A gateway that has just turned live may still answer UNAVAILABLE for a moment (its sidecars starting): retried.
  await withGateway(target, timeoutMs, (conn) => upsertHeartbeatJob(conn, target, saved), { retryDeadlineMs: timeoutMs });
  await deps.db.withUser(user.id, (trx) =>
    trx
      .deleteFrom('heartbeat_settings')
      .where('agent_id', '=', agentId)
      .where('enabled', '=', saved.enabled)
      .where('frequency', '=', saved.frequency)
      .execute(),
  );
  return saved;
}

/**
 * How long one caller holds a saved heartbeat while it puts it on the gateway (`claimSavedHeartbeat`): longer than an
 * apply takes (a gateway call bounded by `GATEWAY_REQUEST_TIMEOUT_MS`, retried as long), so a claim ends by its
 * release, and one left by a process that died ends by itself.
 */
const CLAIM_MS = 120_000;

/**
 * Claims `agentId`'s saved heartbeat for the caller to put on its gateway (`applySavedHeartbeat`, then
 * `releaseSavedHeartbeat`): true when one is saved and nobody else holds it. Another replica's sweep, or a start's
 * follow-up beside the sweep, would otherwise add the job twice. Two claims at once: the row's lock makes the second
 * re-read it, claimed, and match nothing.
 */
export async function claimSavedHeartbeat(db: Database, userId: string, agentId: string, now: number): Promise<boolean> {
  const claimed = await db.withUser(userId, (trx) =>
    trx
      .updateTable('heartbeat_settings')
      .set({ claimed_until: new Date(now + CLAIM_MS) })
      .where('agent_id', '=', agentId)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', new Date(now))]))
      .returning('agent_id')
      .executeTakeFirst(),
  );
  return claimed !== undefined;
}

/** Ends the caller's claim on a saved copy still there (the apply failed, or a newer one was saved meanwhile). */
export async function releaseSavedHeartbeat(db: Database, userId: string, agentId: string): Promise<void> {
  await db.withUser(userId, (trx) =>
    trx.updateTable('heartbeat_settings').set({ claimed_until: null }).where('agent_id', '=', agentId).execute(),
  );
}

/** A saved heartbeat nobody holds, with who its agent belongs to (for the sweep: `AfterStart.sweep`). */
export interface SavedHeartbeatOwner {
  agentId: string;
  owner: Caller;
}

/**
 * Up to `limit` saved heartbeats nobody holds now, of agents after `after` in id order (the sweep's cursor), read over
 * the owner connection: the sweep acts for every user, each call after this one as the agent's owner.
 */
export async function unclaimedSavedHeartbeats(
  kysely: Kysely<DB>,
  options: { now: number; after: string | null; limit: number },
): Promise<SavedHeartbeatOwner[]> {
  const rows = await kysely
    .selectFrom('heartbeat_settings as h')
    .innerJoin('users as u', 'u.id', 'h.user_id')
    .select(['h.agent_id', 'u.id', 'u.email', 'u.email_verified_at'])
    .where((eb) => eb.or([eb('h.claimed_until', 'is', null), eb('h.claimed_until', '<=', new Date(options.now))]))
    .$if(options.after !== null, (qb) => qb.where('h.agent_id', '>', options.after as string))
    .orderBy('h.agent_id')
    .limit(options.limit)
    .execute();
  return rows.map((row) => ({
    agentId: row.agent_id,
    owner: { id: row.id, email: row.email, emailVerified: row.email_verified_at !== null },
  }));
}

/** How many heartbeats wait in the database for their agent's gateway (the sweep's queue depth, /metrics). */
export async function savedHeartbeatCount(kysely: Kysely<DB>): Promise<number> {
  const row = await kysely
    .selectFrom('heartbeat_settings')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
