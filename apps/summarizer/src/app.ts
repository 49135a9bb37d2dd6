import { type App, type CounterStore, createServer, sharedHttpPlugin } from '@aop/core';
import type { FastifyBaseLogger } from 'fastify';
import type { SummarizerConfig } from './config.js';
import { summarizerRoutes } from './routes/summarizer.js';

export interface SummarizerDeps {
  config: SummarizerConfig;
  counters: CounterStore;
  logger?: FastifyBaseLogger;
}

/** The web summarizer as a Fastify instance: no auth, no database. */
export async function buildApp({ config, counters, logger }: SummarizerDeps): Promise<App> {
  const app = createServer({ config, ...(logger ? { logger } : {}) });
  await app.register(sharedHttpPlugin, {
    counters,
    openapi: { path: '/openapi.json', title: 'Web summarizer', description: 'Summaries and extracts of public web pages.' },
  });
  await app.register(summarizerRoutes, { config });
  return app;
}
