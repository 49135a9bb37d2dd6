import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const ALL = ['apps/*/src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts'];

/**
 * The slow tier: files that drive a browser, a real OpenClaw gateway, child processes (the CLI, the local host's
 * gateways, git) or a whole multi-service provisioning path. Everything else is the fast tier (`npm run test:fast`):
 * unit tests and in-process API tests on an embedded database, under 3 minutes on this 2-core machine.
 */
const SLOW = [
  'test/e2e/**/*.test.ts',
  'apps/web/src/cli.test.ts',
  'apps/backend/src/routes/browse/browse.test.ts',
  'apps/backend/src/routes/logs/logs.test.ts',
  'packages/provisioner/src/local/host.test.ts',
  'packages/provisioner/src/docker/host.test.ts',
  'packages/provisioner/src/kubernetes/host.test.ts',
  'packages/provisioner/src/shared/openclaw-config.test.ts',
  'test/integration/provisioning.test.ts',
  'test/integration/agent-lifecycle.test.ts',
  'test/integration/remote-control.test.ts',
];

/**
 * Fast-tier files that keep module state between their tests and another file's (the payments tests' chain clients),
 * so they run in a fresh module graph of their own; the rest of the fast tier shares one per worker.
 */
const ISOLATED = ['apps/web/src/modules/payments/payments.test.ts', 'apps/web/src/modules/payments/mppx.test.ts'];

/**
 * The slow tier's files start first. Vitest orders projects by name (`fast`, `fast-isolated`, `slow`), so a run of the
 * whole suite dispatched the longest files (a real gateway, a browser: 1–4 minutes each) last, and ended on one of
 * them with the other worker idle; started first, the many short fast-tier files fill in around them. Within a tier
 * the order is Vitest's (longest first once it has timed a run).
 */
class SlowTierFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const slow = (file: TestSpecification) => file.project.name === 'slow';
    return [...sorted.filter(slow), ...sorted.filter((file) => !slow(file))];
  }
}

// AOP_SKIP_BROWSER=1 leaves out the browser tests (test/e2e/*.e2e.test.ts), e.g. on a machine without Chromium.
const skipped = process.env.AOP_SKIP_BROWSER === '1' ? ['test/e2e/*.e2e.test.ts'] : [];

/**
 * Fast-tier files that use neither a database nor Redis: the agent hosts against their fakes, the gateway client, the
 * dashboard's own code. CI's second pass, on the Postgres server and Redis (`AOP_ENGINE_PASS=1 npm run test:fast`),
 * leaves them out: they ran in the first pass, and nothing in them depends on the engine (about 40 s of that pass).
 */
const ENGINE_FREE = ['packages/provisioner/src/**', 'packages/gateway-client/src/**', 'apps/dashboard/src/**'];
const engineFree = process.env.AOP_ENGINE_PASS === '1' ? ENGINE_FREE : [];

export default defineConfig({
  // Workspace packages resolve to their TypeScript sources in tests (package.json "development" condition).
  resolve: { conditions: ['development'] },
  ssr: { resolve: { conditions: ['development'] } },
  test: {
    projects: [
      // Without isolation a worker imports the services once for all its files instead of once per file: the fast
      // tier takes about half the time. Each file still builds its own app, database and counters.
      {
        extends: true,
        test: { name: 'fast', include: ALL, exclude: [...configDefaults.exclude, ...SLOW, ...ISOLATED, ...engineFree], isolate: false },
      },
      { extends: true, test: { name: 'fast-isolated', include: ISOLATED } },
      { extends: true, test: { name: 'slow', include: SLOW, exclude: [...configDefaults.exclude, ...skipped] } },
    ],
    pool: 'forks',
    sequence: { sequencer: SlowTierFirst },
    // Vitest's default is one worker fewer than the cores: on a 2-core machine, one file at a time. Most files wait on
    // sockets, child processes and timers rather than the CPU, so one worker per core roughly halves the suite's time.
    maxWorkers: Math.max(2, availableParallelism()),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 20_000,
  },
});
