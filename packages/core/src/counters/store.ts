/**
 * Shared counters: rate-limit windows, single-use nonces, `jti` de-duplication.
 * In memory for one instance; Redis when several instances must agree.
 */
export interface CounterStore {
  /** Counts one hit in the fixed window `windowMs` for `key`. */
  hit(key: string, windowMs: number): Promise<{ count: number; resetAt: number }>;
  /** Stores `value` under `key` only if absent; true when this call stored it. */
  putIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Reads and deletes `key` in one step, so a single-use value is used once. */
  take(key: string): Promise<string | null>;
  close(): Promise<void>;
}
