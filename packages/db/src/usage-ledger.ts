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

/**
 * Ledger kinds the platform pays for on its own AI keys: the backend's `/api/ai/chat` (`ai-chat`) and paid plugin
 * calls (`plugin`). Mission control reports them as `managedAiCost`.
 */
export const MANAGED_AI_KINDS = ['ai-chat', 'plugin'] as const;

/** A user's spend in USD, unrounded: every call, and the calls on the platform's own AI keys. */
export interface LedgerSpend {
  total: number;
  managed: number;
}

/**
 * What the user spent in `[since, until)` (all time when no range is given): the one sum the cost dashboard's total
 * and mission control's spend both read, so the two cannot show different figures for the same rows.
 */
export async function ledgerSpend(trx: Tx, userId: string, range?: { since: Date; until: Date }): Promise<LedgerSpend> {
  const managed = sql.join(MANAGED_AI_KINDS.map((kind) => sql`${kind}`));
  const window = range ? sql`and created_at >= ${range.since} and created_at < ${range.until}` : sql``;
  const result = await sql<{ total: string | null; managed: string | null }>`
    select sum(cost_usd) as total,
           sum(cost_usd) filter (where kind in (${managed})) as managed
    from usage_events
    where user_id = ${userId} ${window}`.execute(trx);
  const row = result.rows[0];
  return { total: Number(row?.total ?? 0), managed: Number(row?.managed ?? 0) };
}
