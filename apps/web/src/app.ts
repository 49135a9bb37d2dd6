import { type App, type CounterStore, createServer, sharedHttpPlugin } from '@aop/core';
import type { Database } from '@aop/db';
import type { FastifyBaseLogger } from 'fastify';
import type { WebConfig } from './config.js';
import { sessionsPlugin } from './plugins/session.js';
import { healthRoutes } from './routes/health/index.js';
import { BackendClient } from './services/backend-client.js';
import { type SystemMetrics, createSystemMetrics } from './services/system-metrics.js';

export interface WebDeps {
  config: WebConfig;
  db: Database;
  counters: CounterStore;
  logger?: FastifyBaseLogger;
  /** The machine's CPU and memory readings; the operating system's by default. */
  metrics?: SystemMetrics;
}

declare module 'fastify' {
  interface FastifyInstance {
    db: Database;
    backend: BackendClient;
  }
}

/** The public web API as a Fastify instance; `server.ts` listens. */
export async function buildApp({ config, db, counters, logger, metrics }: WebDeps): Promise<App> {
  const app = createServer({ config, ...(logger ? { logger } : {}) });
  app.decorate('db', db);
  app.decorate(
    'backend',
    new BackendClient({ baseUrls: config.backendUrls, internalApiKey: config.internalApiKey, userContextSecret: config.userContextSecret }),
  );
  await app.register(sharedHttpPlugin, {
    counters,
    openapi: { path: '/api/openapi.json', title: 'Web API', description: 'Public API of the agent operations platform.' },
  });
  await app.register(sessionsPlugin, { config });

  await app.register(healthRoutes, { metrics: metrics ?? createSystemMetrics() });
  return app;
}
