import { sql } from 'kysely';
import type { Tx } from './database.js';

/**
 * The usage ledger (`usage_events`: one row per AI call with tokens and cost) read back per UTC day, for the web's
 * `/api/metrics` and the backend's historical metrics alike. Queries filter on `user_id` and a `created_at` range
 * (`usage_events_user_created_idx`) and group in the database.
 */

export const DAY_MS = 86_400_000;
/** Midnight UTC of the day `ms` falls in. */
export const utcDayStart = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
/** USD to 4 decimals, from an unrounded sum (the epsilon keeps a written 0.00005 from rounding down). */
export const roundMoney = (value: number) => Math.round((value + Number.EPSILON) * 10_000) / 10_000;

/** The `days` whole UTC days ending with today: `since` inclusive, `until` (midnight after today) exclusive. */
export function dayWindow(days: number, now: number): { since: Date; until: Date } {
  const until = new Date(utcDayStart(now) + DAY_MS);
  return { since: new Date(until.getTime() - days * DAY_MS), until };
}

/** Counts and the unrounded cost of a set of ledger rows. */
export interface LedgerFigures {
  calls: number;
  tokens: number;
  promptTokens: number;
  completionTokens: number;
  cost: number;
}

/** The same, as answers show it: cost in USD rounded to 4 decimals. */
export interface UsageTotals {
  calls: number;
  tokens: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
}

/** The sums a ledger query selects (`bigint` sums arrive as numbers, `numeric` money as a string). */
export interface LedgerSums {
  calls: number;
  tokens: number | null;
  prompt: number | null;
  completion: number | null;
  cost: string | null;
}

/** The select list of `LedgerSums` over the rows a ledger query groups: one definition of what a ledger sum is. */
export const LEDGER_SUMS = sql<LedgerSums>`count(*)::int as calls,
  sum(total_tokens)::bigint as tokens,
  sum(prompt_tokens)::bigint as prompt,
  sum(completion_tokens)::bigint as completion,
  sum(cost_usd) as cost`;

export const ledgerFigures = (r: LedgerSums | undefined): LedgerFigures => ({
  calls: r?.calls ?? 0,
  tokens: Number(r?.tokens ?? 0),
  promptTokens: Number(r?.prompt ?? 0),
  completionTokens: Number(r?.completion ?? 0),
  cost: Number(r?.cost ?? 0),
});

export const usageTotalsOf = ({ cost, ...counts }: LedgerFigures): UsageTotals => ({ ...counts, costUsd: roundMoney(cost) });

/**
 * The user's ledger in `dayWindow(days, now)`, one entry per UTC day, oldest first (days without usage included),
 * and the window's sums (added up unrounded, rounded once by `usageTotalsOf`).
 */
export async function ledgerByDay(
  trx: Tx,
  userId: string,
  days: number,
  now: number,
): Promise<{ since: Date; until: Date; daily: ({ date: string } & LedgerFigures)[]; totals: LedgerFigures }> {
  const { since, until } = dayWindow(days, now);
  const rows = await sql<LedgerSums & { day: string }>`
    select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, ${LEDGER_SUMS}
    from usage_events
    where user_id = ${userId} and created_at >= ${since} and created_at < ${until}
    group by 1`.execute(trx);
  const byDay = new Map(rows.rows.map((r) => [r.day, r]));
  const totals = ledgerFigures(undefined);
  const daily: ({ date: string } & LedgerFigures)[] = [];
  for (let i = 0; i < days; i++) {
    const date = new Date(since.getTime() + i * DAY_MS).toISOString().slice(0, 10);
    const day = ledgerFigures(byDay.get(date));
    totals.calls += day.calls;
    totals.tokens += day.tokens;
    totals.promptTokens += day.promptTokens;
    totals.completionTokens += day.completionTokens;
    totals.cost += day.cost;
    daily.push({ date, ...day });
  }
  return { since, until, daily, totals };
}
