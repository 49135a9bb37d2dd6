import { MemoryCounterStore } from './memory.js';
import { RedisCounterStore } from './redis.js';
import type { CounterStore } from './store.js';

export type { CounterStore } from './store.js';
export { MemoryCounterStore } from './memory.js';
export { RedisCounterStore } from './redis.js';

/** Redis when `redisUrl` is given, otherwise memory. */
export function createCounterStore(redisUrl: string | undefined, prefix?: string): CounterStore {
  return redisUrl ? new RedisCounterStore(redisUrl, prefix) : new MemoryCounterStore();
}
