import {
  DAY_MS,
  dayWindow,
  LEDGER_SUMS,
  type LedgerSums,
  ledgerByDay,
  roundMoney,
  type Tx,
  sql,
  type UsageTotals,
  usageTotalsOf,
  utcDayStart,
} from '@aop/db';

/**
 * Backend metrics (spec §4.18 "Metrics (backend)"), from the backend's own records: the usage ledger rows it writes
 * (`usage_events`: AI chat calls with tokens and cost) and its agent records (`agent_deployments`). Every query runs
 * in the user's transaction, filters on `user_id` and groups in the database.
 */

/** The per-call ledger figures the backend answers with (the usage ledger's totals). */
export type UsageFigures = UsageTotals;

export interface HistoricalMetrics {
  days: number;
  since: string;
  until: string;
  /** One entry per UTC day, oldest first; days without activity included. */
  series: ({ date: string; agentsCreated: number } & UsageFigures)[];
  totals: { agentsCreated: number } & UsageFigures;
}

export async function historicalMetrics(trx: Tx, userId: string, days: number, now: number): Promise<HistoricalMetrics> {
  const { since, until, daily, totals } = await ledgerByDay(trx, userId, days, now);
  const created = await sql<{ day: string; n: number }>`
    select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, count(*)::int as n
    from agent_deployments
    where user_id = ${userId} and created_at >= ${since} and created_at < ${until}
    group by 1`.execute(trx);
  const createdByDay = new Map(created.rows.map((r) => [r.day, r.n]));
  const series = daily.map(({ date, ...day }) => ({ date, agentsCreated: createdByDay.get(date) ?? 0, ...usageTotalsOf(day) }));
  return {
    days,
    since: since.toISOString(),
    until: until.toISOString(),
    series,
    totals: { agentsCreated: series.reduce((n, day) => n + day.agentsCreated, 0), ...usageTotalsOf(totals) },
  };
}

export interface ModelPerformance {
  model: string;
  calls: number;
  /** Share of the window's calls, 0–1 (4 decimals). */
  share: number;
  avgPromptTokens: number;
  avgCompletionTokens: number;
  avgTokens: number;
  avgCostUsd: number;
  costUsd: number;
}

/** Per-model call figures over the window, by calls descending. */
export async function callPerformance(trx: Tx, userId: string, days: number, now: number) {
  const { since, until } = dayWindow(days, now);
  const rows = await sql<LedgerSums & { model: string | null }>`
    select model, ${LEDGER_SUMS}
    from usage_events
    where user_id = ${userId} and created_at >= ${since} and created_at < ${until}
    group by model`.execute(trx);
  const total = rows.rows.reduce((n, r) => n + r.calls, 0);
  const avg = (value: number | string | null, calls: number, digits: number) =>
    calls === 0 ? 0 : Math.round((Number(value ?? 0) / calls) * 10 ** digits) / 10 ** digits;
  const byModel: ModelPerformance[] = rows.rows
    .map((r) => ({
      model: r.model ?? 'unknown',
      calls: r.calls,
      share: total === 0 ? 0 : Math.round((r.calls / total) * 10_000) / 10_000,
      avgPromptTokens: avg(r.prompt, r.calls, 1),
      avgCompletionTokens: avg(r.completion, r.calls, 1),
      avgTokens: avg(r.tokens, r.calls, 1),
      avgCostUsd: avg(r.cost, r.calls, 6),
      costUsd: roundMoney(Number(r.cost ?? 0)),
    }))
    .sort((a, b) => b.calls - a.calls || a.model.localeCompare(b.model));
  const all = rows.rows.reduce(
    (acc, r) => ({
      tokens: acc.tokens + Number(r.tokens ?? 0),
      cost: acc.cost + Number(r.cost ?? 0),
    }),
    { tokens: 0, cost: 0 },
  );
  return {
    days,
    since: since.toISOString(),
    until: until.toISOString(),
    calls: total,
    avgTokensPerCall: total === 0 ? 0 : Math.round((all.tokens / total) * 10) / 10,
    avgCostPerCallUsd: total === 0 ? 0 : Math.round((all.cost / total) * 1e6) / 1e6,
    byModel,
  };
}

/** All-time, last-30-days and today's ledger totals in one scan, with the first and latest activity. */
export async function usageSummary(trx: Tx, userId: string, now: number) {
  const today = new Date(utcDayStart(now));
  const month = new Date(utcDayStart(now) - 29 * DAY_MS);
  const result = await sql<{
    calls: number;
    tokens: number | null;
    cost: string | null;
    calls30: number;
    tokens30: number | null;
    cost30: string | null;
    calls1: number;
    tokens1: number | null;
    cost1: string | null;
    first: Date | null;
    last: Date | null;
  }>`
    select count(*)::int as calls,
           sum(total_tokens)::bigint as tokens,
           sum(cost_usd) as cost,
           (count(*) filter (where created_at >= ${month}))::int as calls30,
           (sum(total_tokens) filter (where created_at >= ${month}))::bigint as tokens30,
           sum(cost_usd) filter (where created_at >= ${month}) as cost30,
           (count(*) filter (where created_at >= ${today}))::int as calls1,
           (sum(total_tokens) filter (where created_at >= ${today}))::bigint as tokens1,
           sum(cost_usd) filter (where created_at >= ${today}) as cost1,
           min(created_at) as first,
           max(created_at) as last
    from usage_events
    where user_id = ${userId}`.execute(trx);
  const r = result.rows[0];
  const block = (calls: number | undefined, tokens: number | null | undefined, cost: string | null | undefined) => ({
    calls: calls ?? 0,
    tokens: Number(tokens ?? 0),
    costUsd: roundMoney(Number(cost ?? 0)),
  });
  const iso = (value: Date | string | null | undefined) => (value ? new Date(value).toISOString() : null);
  return {
    allTime: block(r?.calls, r?.tokens, r?.cost),
    last30Days: block(r?.calls30, r?.tokens30, r?.cost30),
    today: block(r?.calls1, r?.tokens1, r?.cost1),
    firstActivityAt: iso(r?.first),
    lastActivityAt: iso(r?.last),
  };
}

/** How many swarms and installations (pending / linked) the user has. */
export async function coordinationCounts(trx: Tx) {
  const swarms = await trx
    .selectFrom('swarms')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const installs = await trx
    .selectFrom('installations')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('status')
    .execute();
  const byStatus = new Map(installs.map((r) => [r.status, Number(r.n)]));
  return {
    swarms: Number(swarms.n),
    installations: { linked: byStatus.get('linked') ?? 0, pending: byStatus.get('pending') ?? 0 },
  };
}
