import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  // Workspace packages resolve to their TypeScript sources in tests (package.json "development" condition).
  resolve: { conditions: ['development'] },
  ssr: { resolve: { conditions: ['development'] } },
  test: {
    include: ['apps/*/src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    // AOP_SKIP_BROWSER=1 leaves out the browser tests (test/*.e2e.test.ts): CI's second pass, on the Postgres server,
    // where they would drive the same pages again; the API tests cover what the pages do on that database.
    exclude: [...configDefaults.exclude, ...(process.env.AOP_SKIP_BROWSER === '1' ? ['test/*.e2e.test.ts'] : [])],
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: on a 2-core machine, one file at a time. Most files wait on
    // sockets, child processes and timers rather than the CPU, so one worker per core roughly halves the suite's time.
    maxWorkers: Math.max(2, availableParallelism()),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 20_000,
  },
});
