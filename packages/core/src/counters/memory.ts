import type { CounterStore } from './store.js';

interface Entry {
  count: number;
  value: string | null;
  expiresAt: number;
}

/**
 * A single-process CounterStore. Expired entries are swept once a minute. Times are the wall clock (`Date.now()`):
 * `resetAt` is an epoch time by the CounterStore contract, as the Redis store computes it, and no clock is injected
 * into counter stores (they are built before the app that holds one).
 */
export class MemoryCounterStore implements CounterStore {
  readonly #entries = new Map<string, Entry>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs = 60_000) {
    this.#sweeper = setInterval(() => this.#sweep(), sweepEveryMs);
    this.#sweeper.unref();
  }

  #live(key: string, now: number): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry && entry.expiresAt <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  #sweep(): void {
    const now = Date.now();
    for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key);
  }

  async hit(key: string, windowMs: number) {
    const now = Date.now();
    const entry = this.#live(key, now);
    if (entry) {
      entry.count += 1;
      return { count: entry.count, resetAt: entry.expiresAt };
    }
    const fresh = { count: 1, value: null, expiresAt: now + windowMs };
    this.#entries.set(key, fresh);
    return { count: 1, resetAt: fresh.expiresAt };
  }

  async putIfAbsent(key: string, value: string, ttlMs: number) {
    const now = Date.now();
    if (this.#live(key, now)) return false;
    this.#entries.set(key, { count: 0, value, expiresAt: now + ttlMs });
    return true;
  }

  async take(key: string) {
    const entry = this.#live(key, Date.now());
    if (!entry) return null;
    this.#entries.delete(key);
    return entry.value;
  }

  async close() {
    clearInterval(this.#sweeper);
    this.#entries.clear();
  }
}
