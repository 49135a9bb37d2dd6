/**
 * Numbers, money and times the way people read them, in the browser's own locale. Formatters are built once: creating
 * an Intl formatter is costly and tables call these per cell.
 */
const usdWhole = new Intl.NumberFormat(undefined, {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 2,
});
// The API keeps 4 decimals: a call costing $0.0004 should not read as $0.00.
const usdSmall = new Intl.NumberFormat(undefined, {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 4,
});
const gbp = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'GBP', minimumFractionDigits: 2, maximumFractionDigits: 2 });
const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });
const percentFormat = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1 });
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

/**
 * Two currencies, never mixed in one figure: usage (the ledger) is in US dollars, as the AI providers charge it; plans,
 * credit packs and storage are billed in pounds sterling. A view shows its money in one of them and says which; where a
 * plan's price stands beside usage, the price keeps its own currency, named.
 */
export const USD_NOTE = 'Usage is counted in US dollars (USD), at the AI providers’ prices.';
export const GBP_NOTE = 'Plans are billed in pounds sterling (GBP).';

/** US dollars: cents for amounts of a dollar or more, up to four decimals below that. */
export function formatMoney(usd: number): string {
  return Math.abs(usd) >= 1 || usd === 0 ? usdWhole.format(usd) : usdSmall.format(usd);
}

/** Pounds sterling, to the penny: plans are billed in GBP. */
export function formatPounds(pounds: number): string {
  return gbp.format(pounds);
}

export function formatInteger(value: number): string {
  return integer.format(value);
}

/** Short counts for chart axes: 12.3K. */
export function formatCompact(value: number): string {
  return compact.format(value);
}

/** `value` is already a percentage (0-100). */
export function formatPercent(value: number): string {
  return percentFormat.format(value / 100);
}

/** An ISO 8601 timestamp as date and time; anything unparsable is shown as it came. */
export function formatDateTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
}

export function formatTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : timeOnly.format(date);
}

/** A span of milliseconds as `850 ms`, `12 s`, `3 min 5 s` or `2 h 10 min`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/**
 * An agent's model when the record names none: OpenClaw's own default (its configuration names no model), or unknown
 * (its applied configuration could not be read). The same words as the Configuration tab.
 */
export const modelLabel = (source: string) => (source === 'default' ? 'OpenClaw’s default' : 'unknown');
/** Where the model shown comes from, for its tooltip (`modelSource` of `GET /api/agents`). */
export const modelWhy = (source: string) =>
  source === 'platform'
    ? 'Written from the AI provider key you gave: “platform” is what the agent’s configuration calls that provider, and the key is yours'
    : source === 'config'
      ? 'Named in the agent’s configuration'
      : source === 'default'
        ? 'The configuration names no model: OpenClaw uses its default'
        : 'The model could not be read from the agent';
