import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryCounterStore } from './memory.js';
import { RedisCounterStore } from './redis.js';
import type { CounterStore } from './store.js';

const stores: Array<[string, () => CounterStore]> = [['memory', () => new MemoryCounterStore()]];
// Against a Redis server when REDIS_URL is set (CI's second pass).
if (process.env.REDIS_URL)
  stores.push(['redis', () => new RedisCounterStore(process.env.REDIS_URL!, `aop-test:${randomBytes(6).toString('hex')}:`)]);

describe.each(stores)('%s counter store', (_name, make) => {
  const store = make();
  afterAll(() => store.close());

  it('counts hits in a fixed window and resets after it', async () => {
    const first = await store.hit('k1', 300);
    const second = await store.hit('k1', 300);
    expect(first.count).toBe(1);
    expect(second.count).toBe(2);
    expect(second.resetAt).toBeGreaterThan(Date.now());
    expect(second.resetAt).toBeLessThanOrEqual(Date.now() + 300);
    await new Promise((r) => setTimeout(r, 350));
    expect((await store.hit('k1', 300)).count).toBe(1);
  });

  it('counts concurrent hits exactly', async () => {
    const results = await Promise.all(Array.from({ length: 50 }, () => store.hit('k2', 10_000)));
    expect(results.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('putIfAbsent admits one writer; take reads once', async () => {
    const wins = await Promise.all(Array.from({ length: 10 }, (_, i) => store.putIfAbsent('nonce', `v${i}`, 10_000)));
    expect(wins.filter(Boolean)).toHaveLength(1);
    const value = await store.take('nonce');
    expect(value).toMatch(/^v\d$/);
    expect(await store.take('nonce')).toBeNull();
    expect(await store.take('never-set')).toBeNull();
  });

  it('values expire', async () => {
    expect(await store.putIfAbsent('short', 'x', 100)).toBe(true);
    await new Promise((r) => setTimeout(r, 150));
    expect(await store.take('short')).toBeNull();
    expect(await store.putIfAbsent('short', 'y', 100)).toBe(true);
  });
});
