import { CARD_PLANS, DomainError, PLANS, agentLimitFor, newId, planTitle, provisioningBlock, shownAgentLimitFor } from '@aop/core';
import { DAY_MS, type DB, ledgerSpend, roundMoney, type Tx, sql, utcDayStart } from '@aop/db';
import { isRunningNow } from '@aop/core/agent-state';
import type { Kysely } from 'kysely';
import type { AuthUser } from '../../platform/sessions.js';
import { type LifecycleDeps, readAgentState } from '../agents/lifecycle.service.js';
import { type BillingCatalog, monthlyPriceGbp } from '../billing/billing-catalog.js';

/** One billable call: an LLM completion, a plugin call, an agent run. */
export interface UsageEvent {
  userId: string;
  agentId?: string | null;
  /** The agent's name at the time of the call (kept when the agent is later deleted). */
  agentName?: string | null;
  /** `llm`, `plugin`, `agent`, `demo` … */
  kind: string;
  model?: string | null;
  promptTokens?: number;
  completionTokens?: number;
  /** Defaults to prompt + completion tokens. */
  totalTokens?: number;
  /** USD; stored with 6 decimals. A string keeps an exact decimal. */
  costUsd: number | string;
  /** When the call happened; the database's clock by default. */
  at?: Date;
}

const recordedListeners = new Set<(event: UsageEvent) => void>();

/**
 * Calls `listener` with each usage event once its row is written, for /metrics (`usage.metrics.ts`). Process-wide: the
 * ledger is written from deep inside services (chat, workflows, plugins, demo) that have no app at hand. Returns the
 * unsubscribe function.
 */
export function onUsageRecorded(listener: (event: UsageEvent) => void): () => void {
  recordedListeners.add(listener);
  return () => void recordedListeners.delete(listener);
}

/**
 * Appends one row to the usage ledger and returns its id. `db` is the owner
 * connection or a transaction of `withUser(event.userId, …)` (row-level
 * security lets a user write only their own rows).
 */
export async function recordUsage(db: Kysely<DB>, event: UsageEvent): Promise<string> {
  const id = newId('usage');
  const promptTokens = Math.max(0, Math.trunc(event.promptTokens ?? 0));
  const completionTokens = Math.max(0, Math.trunc(event.completionTokens ?? 0));
  await db
    .insertInto('usage_events')
    .values({
      id,
      user_id: event.userId,
      agent_id: event.agentId ?? null,
      agent_name: event.agentName ?? null,
      kind: event.kind,
      model: event.model ?? null,
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: Math.max(0, Math.trunc(event.totalTokens ?? promptTokens + completionTokens)),
      cost_usd: event.costUsd,
      ...(event.at ? { created_at: event.at } : {}),
    })
    .execute();
  // Counted once the insert succeeded: every writer makes it the last statement of its transaction, so only a failed
  // COMMIT could still undo it.
  for (const listener of recordedListeners) listener(event);
  return id;
}

export const COST_PERIODS = ['7d', '30d', 'mtd'] as const;
export type CostPeriod = (typeof COST_PERIODS)[number];
export const isCostPeriod = (value: string): value is CostPeriod => (COST_PERIODS as readonly string[]).includes(value);

/**
 * The UTC days a period covers: `7d` the last 7 days including today, `30d`
 * the last 30, `mtd` from the 1st of the current month. `until` is the end of
 * today, so today's bucket is a whole day.
 */
export function periodRange(period: CostPeriod, now: number): { since: Date; until: Date; days: number } {
  const today = utcDayStart(now);
  const d = new Date(now);
  const since =
    period === '7d' ? today - 6 * DAY_MS : period === '30d' ? today - 29 * DAY_MS : Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return { since: new Date(since), until: new Date(today + DAY_MS), days: Math.round((today - since) / DAY_MS) + 1 };
}

const roundPercent = (value: number) => Math.round((value + Number.EPSILON) * 10) / 10;

const DAY_LABEL = new Intl.DateTimeFormat('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
/** `Nov 22` */
export const dayLabel = (ms: number) => DAY_LABEL.format(new Date(ms));

/** The name of a ledger row without a model. */
export const UNKNOWN_MODEL = 'unknown';
/** The name of usage not tied to any agent. */
export const NO_AGENT_NAME = 'No agent';

export interface CostReport {
  period: CostPeriod;
  summary: { totalCost: number; totalTokens: number; totalCalls: number; avgCostPerCall: number };
  agents: { name: string; tokens: number; cost: number; calls: number; avgCostPerCall: number; model: string }[];
  daily: { date: string; cost: number; tokens: number }[];
  modelBreakdown: { model: string; percent: number; cost: number }[];
  isMockData: false;
  plan: string;
  planMonthlyCost: number;
  agentCount: number;
  activeAgents: number;
}

interface Bucket {
  name: string;
  tokens: number;
  cost: number;
  calls: number;
  models: Map<string, { calls: number; cost: number }>;
}

/**
 * Spec §4.14 cost dashboard for the user of `trx`, from the usage ledger:
 * one query grouped by agent and model (summary, agents, models), one grouped
 * by UTC day, one for the plan and the agent counts.
 */
export async function costReport(
  trx: Tx,
  userId: string,
  period: CostPeriod,
  now: number,
  prices: BillingCatalog['plans'],
): Promise<CostReport> {
  const { since, until, days } = periodRange(period, now);

  const account = await sql<{ plan: string | null; agent_count: number; active_agents: number }>`
    select (select plan from users where id = ${userId}) as plan,
           count(*)::int as agent_count,
           (count(*) filter (where status in ('active', 'running')))::int as active_agents
    from agents where user_id = ${userId}`.execute(trx);

  // Usage without an agent id is grouped by the name it was recorded with.
  const groups = await sql<{
    agent_id: string | null;
    current_name: string | null;
    recorded_name: string | null;
    model: string | null;
    calls: number;
    tokens: number | null;
    cost: string | null;
  }>`
    select u.agent_id,
           max(a.name) as current_name,
           (array_agg(u.agent_name order by u.created_at desc) filter (where u.agent_name is not null))[1] as recorded_name,
           u.model,
           count(*)::int as calls,
           sum(u.total_tokens)::bigint as tokens,
           sum(u.cost_usd) as cost
    from usage_events u
    left join agents a on a.id = u.agent_id and a.user_id = u.user_id
    where u.user_id = ${userId} and u.created_at >= ${since} and u.created_at < ${until}
    group by u.agent_id, case when u.agent_id is null then u.agent_name end, u.model`.execute(trx);

  const perDay = await sql<{ day: string; cost: string | null; tokens: number | null }>`
    select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day,
           sum(cost_usd) as cost,
           sum(total_tokens)::bigint as tokens
    from usage_events
    where user_id = ${userId} and created_at >= ${since} and created_at < ${until}
    group by 1`.execute(trx);

  // The period's total is the ledger sum mission control's spend reads too (`ledgerSpend`), not a sum of the groups.
  const totalCost = (await ledgerSpend(trx, userId, { since, until })).total;
  const agents = new Map<string, Bucket>();
  const models = new Map<string, number>();
  let totalTokens = 0;
  let totalCalls = 0;
  for (const row of groups.rows) {
    const cost = Number(row.cost ?? 0);
    const tokens = Number(row.tokens ?? 0);
    const model = row.model ?? UNKNOWN_MODEL;
    const key = row.agent_id !== null ? `id:${row.agent_id}` : `name:${row.recorded_name ?? ''}`;
    let bucket = agents.get(key);
    if (!bucket) {
      bucket = {
        name: row.current_name ?? row.recorded_name ?? row.agent_id ?? NO_AGENT_NAME,
        tokens: 0,
        cost: 0,
        calls: 0,
        models: new Map(),
      };
      agents.set(key, bucket);
    }
    bucket.tokens += tokens;
    bucket.cost += cost;
    bucket.calls += row.calls;
    const used = bucket.models.get(model) ?? { calls: 0, cost: 0 };
    bucket.models.set(model, { calls: used.calls + row.calls, cost: used.cost + cost });
    models.set(model, (models.get(model) ?? 0) + cost);
    totalTokens += tokens;
    totalCalls += row.calls;
  }

  /** An agent's model is the one it called most (then the costlier, then by name). */
  const mostUsed = (bucket: Bucket) =>
    [...bucket.models.entries()].sort(([a, x], [b, y]) => y.calls - x.calls || y.cost - x.cost || a.localeCompare(b))[0]?.[0] ??
    UNKNOWN_MODEL;

  const byDay = new Map(perDay.rows.map((r) => [r.day, r]));
  const daily: CostReport['daily'] = [];
  for (let i = 0; i < days; i++) {
    const ms = since.getTime() + i * DAY_MS;
    const row = byDay.get(new Date(ms).toISOString().slice(0, 10));
    daily.push({ date: dayLabel(ms), cost: roundMoney(Number(row?.cost ?? 0)), tokens: Number(row?.tokens ?? 0) });
  }

  const plan = account.rows[0]?.plan ?? 'free';
  return {
    period,
    summary: {
      totalCost: roundMoney(totalCost),
      totalTokens,
      totalCalls,
      avgCostPerCall: totalCalls > 0 ? roundMoney(totalCost / totalCalls) : 0,
    },
    agents: [...agents.values()]
      .sort((a, b) => b.cost - a.cost || b.calls - a.calls || a.name.localeCompare(b.name))
      .map((b) => ({
        name: b.name,
        tokens: b.tokens,
        cost: roundMoney(b.cost),
        calls: b.calls,
        avgCostPerCall: b.calls > 0 ? roundMoney(b.cost / b.calls) : 0,
        model: mostUsed(b),
      })),
    daily,
    modelBreakdown: [...models.entries()]
      .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
      .map(([model, cost]) => ({ model, percent: totalCost > 0 ? roundPercent((cost / totalCost) * 100) : 0, cost: roundMoney(cost) })),
    isMockData: false,
    plan,
    planMonthlyCost: monthlyPriceGbp(prices, plan),
    agentCount: account.rows[0]?.agent_count ?? 0,
    activeAgents: account.rows[0]?.active_agents ?? 0,
  };
}

export interface DashboardStats {
  agents: { active: number; total: number; limit: number; newToday: number };
  skills: { installed: number };
  tasks: { total: number };
}

/** What `GET /api/dashboard/stats` answers when anything fails (spec §4.14): zeros, and the free plan's limit. */
export const EMPTY_STATS: DashboardStats = Object.freeze({
  agents: { active: 0, total: 0, limit: PLANS.free.agentLimit, newToday: 0 },
  skills: { installed: 0 },
  tasks: { total: 0 },
});

/** Spec §4.14 stats in one query; null when the user row is gone. */
export async function dashboardStats(trx: Tx, userId: string, now: number): Promise<DashboardStats | null> {
  const todayStart = new Date(utcDayStart(now));
  const result = await sql<{ plan: string; total: number; active: number; new_today: number; skills: number; tasks: number }>`
    select u.plan,
           (select count(*)::int from agents where user_id = u.id) as total,
           (select count(*)::int from agents where user_id = u.id and status in ('active', 'running')) as active,
           (select count(*)::int from agents where user_id = u.id and created_at >= ${todayStart}) as new_today,
           (select count(*)::int from skills where user_id = u.id) as skills,
           (select count(*)::int from scheduled_tasks where user_id = u.id) as tasks
    from users u where u.id = ${userId}`.execute(trx);
  const row = result.rows[0];
  if (!row) return null;
  return {
    agents: { active: row.active, total: row.total, limit: shownAgentLimitFor(row.plan), newToday: row.new_today },
    skills: { installed: row.skills },
    tasks: { total: row.tasks },
  };
}

/**
 * "Running now" as the agents' hosts say, not as their records do: an agent that fell asleep (hibernated, issue #20) or
 * stopped since its record was written is not running. One state read per agent recorded as running; one whose state
 * cannot be read at all keeps its record's word.
 */
export async function agentsRunningNow(deps: LifecycleDeps, user: AuthUser): Promise<number> {
  const ids = await deps.db.withUser(user.id, (trx) =>
    trx.selectFrom('agents').select('id').where('user_id', '=', user.id).where('status', 'in', ['active', 'running']).execute(),
  );
  const states = await Promise.all(ids.map(({ id }) => readAgentState(deps, user, id).catch(() => null)));
  return states.filter((state) => state === null || isRunningNow(state.state)).length;
}

export type NewAgentBlock = 'paid-plan' | 'subscription' | 'agent-limit';

export interface NewAgentGate {
  allowed: boolean;
  reason: NewAgentBlock | null;
  message: string | null;
  plan: string;
  planTitle: string;
  subscriptionStatus: string;
  admin: boolean;
  agents: { count: number; limit: number | null };
  cardPayments: boolean;
  operatorCommand: string | null;
  platformKeyProviders: string[];
}

/**
 * Whether the user may create another agent, and if not why, in the words `POST /api/provision` would answer (the
 * same rule, `provisioningBlock` of the plan catalogue): read before the new-agent wizard opens, so nobody goes through
 * its steps to be refused at the end. Where a plan cannot be bought here (no card payments), `operatorCommand` is how
 * an operator puts the account on one. Null when the user row is gone.
 */
export async function newAgentGate(
  trx: Tx,
  user: { id: string; email: string; isAdmin: boolean },
  options: { cardPayments: boolean; platformKeyProviders: readonly string[] },
): Promise<NewAgentGate | null> {
  const result = await sql<{ plan: string; subscription_status: string; agents: number }>`
    select u.plan, u.subscription_status,
           (select count(*)::int from agents where user_id = u.id and status <> 'error') as agents
    from users u where u.id = ${user.id}`.execute(trx);
  const row = result.rows[0];
  if (!row) return null;
  const block = provisioningBlock({
    plan: row.plan,
    subscriptionStatus: row.subscription_status,
    agents: row.agents,
    isAdmin: user.isAdmin,
  });
  const message =
    block === null
      ? null
      : block.reason === 'paid-plan'
        ? new DomainError('PAID_PLAN_TO_PROVISION').message
        : block.reason === 'subscription'
          ? new DomainError('ACTIVE_SUBSCRIPTION_REQUIRED').message
          : new DomainError('AGENT_LIMIT_REACHED', { plan: row.plan, limit: block.limit }).message;
  const limit = agentLimitFor(row.plan);
  // A bigger plan or a subscription is bought on the billing page; without card payments only an operator can set one.
  const needsPlan = block !== null && !options.cardPayments;
  const suggested =
    block?.reason === 'subscription'
      ? row.plan
      : block?.reason === 'agent-limit'
        ? (CARD_PLANS.find((p) => agentLimitFor(p) > limit) ?? row.plan)
        : CARD_PLANS[0];
  return {
    allowed: block === null,
    reason: block?.reason ?? null,
    message,
    plan: row.plan,
    planTitle: planTitle(row.plan),
    subscriptionStatus: row.subscription_status,
    admin: user.isAdmin,
    agents: { count: row.agents, limit: user.isAdmin || !Number.isFinite(limit) ? null : limit },
    cardPayments: options.cardPayments,
    operatorCommand: needsPlan ? `npm run cli -- plan set ${user.email} ${suggested}` : null,
    platformKeyProviders: [...options.platformKeyProviders],
  };
}
