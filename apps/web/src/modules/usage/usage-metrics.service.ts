import { type Tx, sql } from '@aop/db';
import { NO_AGENT_NAME, roundMoney } from './usage.service.js';

/**
 * Usage figures from the usage ledger for `GET /api/metrics`, `/api/daily-brief` and `/api/credits`. Every query
 * filters on `user_id` and a `created_at` range, so it runs on `usage_events_user_created_idx`; grouping happens in
 * the database (one row per day or per agent), never one query per row.
 */

const DAY_MS = 86_400_000;
/** Midnight UTC of the day `ms` falls in. */
export const utcDayStart = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
/** The 1st of the month `ms` falls in, midnight UTC. */
export const utcMonthStart = (ms: number) => {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
};

export interface UsageTotals {
  calls: number;
  tokens: number;
  promptTokens: number;
  completionTokens: number;
  /** USD, rounded to 4 decimals. */
  costUsd: number;
}

/** The sums each ledger query selects (`bigint` sums arrive as numbers, `numeric` money as a string). */
interface LedgerSums {
  calls: number;
  tokens: number | null;
  prompt: number | null;
  completion: number | null;
  cost: string | null;
}

const ZERO: UsageTotals = Object.freeze({ calls: 0, tokens: 0, promptTokens: 0, completionTokens: 0, costUsd: 0 });

/**
 * The ledger's totals from `since`, up to `until` (exclusive) when given. Windows ending "now" pass none: rows are
 * stamped by the database's clock, which may run slightly ahead of this process's.
 */
export async function usageTotals(trx: Tx, userId: string, since: Date, until?: Date): Promise<UsageTotals> {
  const result = await sql<LedgerSums>`
    select count(*)::int as calls,
           sum(total_tokens)::bigint as tokens,
           sum(prompt_tokens)::bigint as prompt,
           sum(completion_tokens)::bigint as completion,
           sum(cost_usd) as cost
    from usage_events
    where user_id = ${userId} and created_at >= ${since} ${until ? sql`and created_at < ${until}` : sql``}`.execute(trx);
  const row = result.rows[0];
  if (!row) return { ...ZERO };
  return {
    calls: row.calls,
    tokens: Number(row.tokens ?? 0),
    promptTokens: Number(row.prompt ?? 0),
    completionTokens: Number(row.completion ?? 0),
    costUsd: roundMoney(Number(row.cost ?? 0)),
  };
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
  const until = new Date(utcDayStart(now) + DAY_MS);
  const since = new Date(until.getTime() - days * DAY_MS);

  const perDay = await sql<LedgerSums & { day: string }>`
    select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day,
           count(*)::int as calls,
           sum(total_tokens)::bigint as tokens,
           sum(prompt_tokens)::bigint as prompt,
           sum(completion_tokens)::bigint as completion,
           sum(cost_usd) as cost
    from usage_events
    where user_id = ${userId} and created_at >= ${since} and created_at < ${until}
    group by 1`.execute(trx);

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

  const figures = (r: LedgerSums) => ({
    calls: r.calls,
    tokens: Number(r.tokens ?? 0),
    promptTokens: Number(r.prompt ?? 0),
    completionTokens: Number(r.completion ?? 0),
    cost: Number(r.cost ?? 0),
  });

  const byDay = new Map(perDay.rows.map((r) => [r.day, figures(r)]));
  const totals = { calls: 0, tokens: 0, promptTokens: 0, completionTokens: 0, cost: 0 };
  const daily: UsageMetrics['daily'] = [];
  for (let i = 0; i < days; i++) {
    const date = new Date(since.getTime() + i * DAY_MS).toISOString().slice(0, 10);
    const day = byDay.get(date) ?? { calls: 0, tokens: 0, promptTokens: 0, completionTokens: 0, cost: 0 };
    totals.calls += day.calls;
    totals.tokens += day.tokens;
    totals.promptTokens += day.promptTokens;
    totals.completionTokens += day.completionTokens;
    totals.cost += day.cost;
    const { cost, ...counts } = day;
    daily.push({ date, ...counts, costUsd: roundMoney(cost) });
  }

  const byAgent = perAgent.rows
    .map((r) => {
      const { cost, ...counts } = figures(r);
      return { agentId: r.agent_id, name: r.current_name ?? r.recorded_name ?? r.agent_id ?? NO_AGENT_NAME, ...counts, cost };
    })
    .sort((a, b) => b.cost - a.cost || b.calls - a.calls || a.name.localeCompare(b.name))
    .map(({ cost, ...rest }) => ({ ...rest, costUsd: roundMoney(cost) }));

  const { cost, ...counts } = totals;
  return {
    days,
    since: since.toISOString(),
    until: until.toISOString(),
    totals: { ...counts, costUsd: roundMoney(cost) },
    daily,
    byAgent,
  };
}
