import { Redis } from 'ioredis';
import type { CounterStore } from './store.js';

// INCR and the first PEXPIRE must happen together, or a crash between them
// would leave a window that never resets.
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return { count, redis.call('PTTL', KEYS[1]) }
`;

/** A CounterStore shared by every instance that points at the same Redis. */
export class RedisCounterStore implements CounterStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(url: string, prefix = 'aop:') {
    this.#redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    this.#prefix = prefix;
    this.#redis.defineCommand('aopHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }

  async hit(key: string, windowMs: number) {
    const hit = (this.#redis as unknown as { aopHit(k: string, ms: number): Promise<[number, number]> }).aopHit;
    const [count, ttl] = await hit.call(this.#redis, this.#prefix + key, windowMs);
    // Wall clock: `resetAt` is an epoch time by the CounterStore contract; the window itself runs on Redis's TTL.
    return { count, resetAt: Date.now() + (ttl > 0 ? ttl : windowMs) };
  }

  async putIfAbsent(key: string, value: string, ttlMs: number) {
    return (await this.#redis.set(this.#prefix + key, value, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async take(key: string) {
    return this.#redis.getdel(this.#prefix + key);
  }

  async ping(): Promise<boolean> {
    return (await this.#redis.ping()) === 'PONG';
  }

  async close() {
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }
}
