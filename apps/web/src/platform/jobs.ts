import { type App, registerQueueDepths } from '@aop/core';
import type { BatchWorker } from './batch-worker.js';

/** One background job of the web process: a queue worker run on an interval. */
export interface Job {
  /** Names the job in the log (and in docs/architecture.md's list). */
  name: string;
  everyMs: number;
  worker: BatchWorker;
  /** One pass as soon as the service is ready: work that fell due while it was down. */
  catchUp: boolean;
  /** How many items wait for the job now (rows due in its queue), read at each /metrics scrape. */
  depth?: () => Promise<number>;
}

/**
 * Every background job of the web process is added here by its module while the app is built, started once the app
 * is ready and stopped (waiting for a pass in progress) when it closes, so one place shows what runs in the
 * background. Jobs run in every replica: each pass claims its rows in the database, so replicas share the work.
 */
export class Jobs {
  readonly #jobs: Job[] = [];
  #started = false;

  /** Registers a job; its worker is returned so the module can also kick it (e.g. right after a webhook). */
  add(job: Job): BatchWorker {
    if (this.#started) throw new Error(`Job ${job.name} added after the jobs started`);
    this.#jobs.push(job);
    return job.worker;
  }

  /** Each job's queue depth, for those that can tell. */
  async depths(): Promise<Array<{ name: string; depth: number }>> {
    const measured = this.#jobs.filter((job) => job.depth !== undefined);
    return Promise.all(measured.map(async (job) => ({ name: job.name, depth: await (job.depth as () => Promise<number>)() })));
  }

  list(): ReadonlyArray<Pick<Job, 'name' | 'everyMs'>> {
    return this.#jobs.map(({ name, everyMs }) => ({ name, everyMs }));
  }

  start(): void {
    this.#started = true;
    for (const job of this.#jobs) {
      job.worker.start(job.everyMs);
      if (job.catchUp) setImmediate(() => void job.worker.kick());
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.#jobs.map((job) => job.worker.stop()));
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    jobs: Jobs;
  }
}

/**
 * Decorates the app with its job list, started on `onReady` and stopped on `onClose`; `aop_queue_depth{queue}` in the
 * app's metrics says how much waits for each job (registered after `metricsPlugin`).
 */
export function registerJobs(app: App): Jobs {
  const jobs = new Jobs();
  app.decorate('jobs', jobs);
  registerQueueDepths(app.metrics.registry, async () => (await jobs.depths()).map(({ name, depth }) => ({ queue: name, depth })));
  app.addHook('onReady', async () => {
    jobs.start();
    app.log.debug({ jobs: jobs.list() }, 'background jobs started');
  });
  app.addHook('onClose', async () => jobs.stop());
  return jobs;
}
