import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type App, type CounterStore, createCounterStore } from '@aop/core';

/** A private temporary DATA_DIR, removed by the returned function. */
export function tempDataDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'aop-test-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The environment a test service starts from: quiet logs, its own data dir. */
export function testEnv(dataDir: string, overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return { NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: dataDir, ...overrides };
}

/**
 * Counters for one test file: memory, or Redis (REDIS_URL) under a prefix of
 * its own so parallel test files never share a rate-limit window.
 */
export function testCounters(): CounterStore {
  return createCounterStore(process.env.REDIS_URL || undefined, `aop-test:${randomBytes(6).toString('hex')}:`);
}

export interface RunningService {
  app: App;
  /** `http://127.0.0.1:<port>` */
  url: string;
  close(): Promise<void>;
}

/** Listens on an ephemeral port of 127.0.0.1, as the real server would, and returns its base URL. */
export async function listen(app: App): Promise<RunningService> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('Service did not bind a TCP port');
  return { app, url: `http://127.0.0.1:${address.port}`, close: () => app.close() };
}

/**
 * A test file's clean-up, step by step in the order given (browser before the services it talks to, services before
 * the agent host). Each step gets `limitMs`: one that has not finished by then is named on stderr and left to finish
 * in the background while the next one starts, so one stuck close neither hides which it was (a hook timeout names
 * no step) nor keeps the rest from closing. Steps whose resource was never created are `undefined` and skipped.
 */
export async function closeInOrder(
  steps: Array<[name: string, close: (() => unknown) | undefined]>,
  { limitMs = 20_000 }: { limitMs?: number } = {},
): Promise<void> {
  for (const [name, close] of steps) {
    if (!close) continue;
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      Promise.resolve()
        .then(close)
        .then(() => 'closed' as const),
      new Promise<'stuck'>((resolve) => {
        timer = setTimeout(() => resolve('stuck'), limitMs);
      }),
    ]).finally(() => clearTimeout(timer));
    const ms = Math.round(performance.now() - started);
    if (outcome === 'stuck') console.warn(`clean-up: closing ${name} had not finished after ${ms} ms; going on without it`);
    else if (ms > limitMs / 4) console.warn(`clean-up: closing ${name} took ${ms} ms`);
  }
}
