import { DomainError } from '@aop/core';

/**
 * An integer query value: absent or empty → `fallback`; not an integer → 400 `<name> must be an integer`; outside
 * `[min, max]` → clamped (as `limit` is on the list endpoints).
 */
export function intQuery(raw: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\s*[-+]?\d{1,15}\s*$/.test(raw)) throw new DomainError('FIELD_NOT_INTEGER', { name });
  return Math.min(max, Math.max(min, Number(raw)));
}
