/**
 * True when `err` is Postgres' unique violation (SQLSTATE 23505), on PGlite and on
 * a server alike; with `constraint`, only for that index or constraint.
 */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (typeof err !== 'object' || err === null || (err as { code?: unknown }).code !== '23505') return false;
  if (!constraint) return true;
  const e = err as { constraint?: string; message?: string };
  return String(e.constraint ?? e.message).includes(constraint);
}
