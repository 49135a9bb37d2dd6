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
