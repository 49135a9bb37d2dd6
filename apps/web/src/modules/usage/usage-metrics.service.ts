import {
  LEDGER_SUMS,
  type LedgerSums,
  ledgerByDay,
  ledgerFigures,
  roundMoney,
  type Tx,
  type UsageTotals,
  sql,
  usageTotalsOf,
} from '@aop/db';
import { NO_AGENT_NAME } from './usage.service.js';

export { type UsageTotals, utcDayStart } from '@aop/db';

/**
 * Usage figures from the usage ledger for `GET /api/metrics`, `/api/daily-brief` and `/api/credits`. Every query
 * filters on `user_id` and a `created_at` range, so it runs on `usage_events_user_created_idx`; grouping happens in
 * the database (one row per day or per agent), never one query per row.
 */

/** The 1st of the month `ms` falls in, midnight UTC. */
export const utcMonthStart = (ms: number) => {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
};

/**
 * The ledger's totals from `since`, up to `until` (exclusive) when given. Windows ending "now" pass none: rows are
 * stamped by the database's clock, which may run slightly ahead of this process's.
 */
export async function usageTotals(trx: Tx, userId: string, since: Date, until?: Date): Promise<UsageTotals> {
  const result = await sql<LedgerSums>`
    select ${LEDGER_SUMS}
    from usage_events
    where user_id = ${userId} and created_at >= ${since} ${until ? sql`and created_at < ${until}` : sql``}`.execute(trx);
  return usageTotalsOf(ledgerFigures(result.rows[0]));
}

export interface UsageMetrics {
  days: number;
  /** ISO 8601: midnight UTC of the first day, and of the day after the last (exclusive). */
  since: string;
  until: string;
  totals: UsageTotals;
  /** One entry per UTC day, oldest first, days without usage included. */
  daily: ({ date: string } & UsageTotals)[];
  /** By cost, descending; usage without an agent is grouped by the name it was recorded with. */
  byAgent: ({ agentId: string | null; name: string } & UsageTotals)[];
}

/** The last `days` UTC days including today: totals, per day, per agent (two grouped queries). */
export async function usageMetrics(trx: Tx, userId: string, days: number, now: number): Promise<UsageMetrics> {
  const { since, until, daily, totals } = await ledgerByDay(trx, userId, days, now);

  // The agent's current name when it still exists, else the newest name the ledger recorded.
  const perAgent = await sql<LedgerSums & { agent_id: string | null; current_name: string | null; recorded_name: string | null }>`
    select u.agent_id,
           max(a.name) as current_name,
           (array_agg(u.agent_name order by u.created_at desc) filter (where u.agent_name is not null))[1] as recorded_name,
           count(*)::int as calls,
           sum(u.total_tokens)::bigint as tokens,
           sum(u.prompt_tokens)::bigint as prompt,
           sum(u.completion_tokens)::bigint as completion,
           sum(u.cost_usd) as cost
    from usage_events u
    left join agents a on a.id = u.agent_id and a.user_id = u.user_id
    where u.user_id = ${userId} and u.created_at >= ${since} and u.created_at < ${until}
    group by u.agent_id, case when u.agent_id is null then u.agent_name end`.execute(trx);

  const byAgent = perAgent.rows
    .map((r) => {
      const { cost, ...counts } = ledgerFigures(r);
      return { agentId: r.agent_id, name: r.current_name ?? r.recorded_name ?? r.agent_id ?? NO_AGENT_NAME, ...counts, cost };
    })
    .sort((a, b) => b.cost - a.cost || b.calls - a.calls || a.name.localeCompare(b.name))
    .map(({ cost, ...rest }) => ({ ...rest, costUsd: roundMoney(cost) }));

  return {
    days,
    since: since.toISOString(),
    until: until.toISOString(),
    totals: usageTotalsOf(totals),
    daily: daily.map(({ date, ...day }) => ({ date, ...usageTotalsOf(day) })),
    byAgent,
  };
}
