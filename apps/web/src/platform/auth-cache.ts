import type { AuthUser } from './sessions.js';

interface Entry {
  user: AuthUser;
  /** Clock time after which the entry is not served (its TTL, or the session's own expiry if sooner). */
  until: number;
}

export interface AuthCacheOptions {
  /** How long an answer is kept; 0 turns the cache off. */
  ttlMs: number;
  maxEntries: number;
  clock: () => number;
}

/**
 * Who a session cookie or API key belongs to, kept for a few seconds so a signed-in read does not start with a
 * database round trip (issue #18). Correctness rests on forgetting: the database announces every change of a user's
 * sign-in facts (sign-out, revoked key, disabled account, new name or address, administrator rights; migration 0020),
 * on this replica before the write's promise settles and on other replicas moments later, and `forgetUser` drops that
 * user's answers. The TTL bounds whatever a lost announcement could leave. Only positive answers are kept: an unknown
 * token costs its lookup every time, and cannot fill the cache.
 */
export class AuthCache {
  readonly #entries = new Map<string, Entry>();
  readonly #keysByUser = new Map<string, Set<string>>();
  /** Bumped by every forget: an answer read before one must not be stored after it (it may be the stale one). */
  #generation = 0;

  constructor(private readonly options: AuthCacheOptions) {}

  get enabled(): boolean {
    return this.options.ttlMs > 0;
  }

  /**
   * The cached answer for `key` (a credential's hash), else `load`'s, stored unless a forget happened meanwhile.
   * `expiresAt` is when the credential itself stops working (a session's expiry), if it does.
   */
  async resolve(key: string, load: () => Promise<{ user: AuthUser; expiresAt?: number } | null>): Promise<AuthUser | null> {
    if (!this.enabled) return (await load())?.user ?? null;
    const now = this.options.clock();
    const hit = this.#entries.get(key);
    if (hit && hit.until > now) {
      // Map order is insertion order: re-inserting keeps the least recently used entry first, for eviction.
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit.user;
    }
    if (hit) this.#drop(key, hit.user.id);
    const generation = this.#generation;
    const loaded = await load();
    if (!loaded) return null;
    // One object may now answer many requests: nobody may change it under the others.
    Object.freeze(loaded.user);
    if (generation === this.#generation) this.#store(key, loaded.user, Math.min(now + this.options.ttlMs, loaded.expiresAt ?? Infinity));
    return loaded.user;
  }

  /** Drops every answer about `userId`; what was being read meanwhile is not stored either. */
  forgetUser(userId: string): void {
    this.#generation += 1;
    const keys = this.#keysByUser.get(userId);
    if (!keys) return;
    for (const key of keys) this.#entries.delete(key);
    this.#keysByUser.delete(userId);
  }

  get size(): number {
    return this.#entries.size;
  }

  #store(key: string, user: AuthUser, until: number): void {
    this.#entries.set(key, { user, until });
    let keys = this.#keysByUser.get(user.id);
    if (!keys) {
      keys = new Set();
      this.#keysByUser.set(user.id, keys);
    }
    keys.add(key);
    while (this.#entries.size > this.options.maxEntries) {
      const [oldestKey, oldest] = this.#entries.entries().next().value as [string, Entry];
      this.#drop(oldestKey, oldest.user.id);
    }
  }

  #drop(key: string, userId: string): void {
    this.#entries.delete(key);
    const keys = this.#keysByUser.get(userId);
    keys?.delete(key);
    if (keys?.size === 0) this.#keysByUser.delete(userId);
  }
}
