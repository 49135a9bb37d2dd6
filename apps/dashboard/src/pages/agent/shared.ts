/** Shapes the agent page reads from the public API, and small formatting helpers its tabs share. */

/** `GET /api/agents/:id` → `{ status: 'ok', agent }` (web proxy shape, spec §2.3 / §4.15): the route's response schema. */
export type { AgentAnswer, AgentRecord } from '@aop/web/agents/agents.schemas';

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

const UNITS: readonly [number, string][] = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1_000, 'second'],
];

/** `1800000` → "every 30 minutes"; a value that is no whole unit falls back to milliseconds. */
export function formatEvery(ms: number): string {
  for (const [size, unit] of UNITS) {
    if (ms >= size && ms % size === 0) {
      const n = ms / size;
      return n === 1 ? `every ${unit}` : `every ${n} ${unit}s`;
    }
  }
  return `every ${ms} ms`;
}

export const agentPath = (agentId: string) => `/api/agents/${encodeURIComponent(agentId)}`;
