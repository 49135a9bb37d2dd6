import { type App, type CounterStore, createServer, metricsPlugin, sharedHttpPlugin } from '@aop/core';
import { tracingPlugin } from '@aop/core/tracing';
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
  // First, so every request and every later hook runs in its span; adds nothing when OTEL_EXPORTER_OTLP_ENDPOINT is unset.
  // Anyone may call it: a caller's `traceparent` is not continued.
  await app.register(tracingPlugin, { ...config.tracing, acceptIncomingContext: false });
  // Before every route, so its hooks count and time each request; GET /metrics needs METRICS_TOKEN (else loopback only).
  await app.register(metricsPlugin, { config });
  await app.register(sharedHttpPlugin, {
    counters,
    openapi: { path: '/openapi.json', title: 'Web summarizer', description: 'Summaries and extracts of public web pages.' },
  });
  await app.register(summarizerRoutes, { config });
  return app;
}
