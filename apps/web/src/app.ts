import { type App, type CounterStore, createServer, metricsPlugin, sharedHttpPlugin } from '@aop/core';
import { tracingPlugin } from '@aop/core/tracing';
import { clientAddressPlugin } from './platform/http/client-address.js';
import type { Database } from '@aop/db';
import type { FastifyBaseLogger } from 'fastify';
import type { WebConfig } from './config.js';
import { authPlugin } from './platform/http/auth.js';
import { dashboardPlugin } from './platform/http/dashboard-assets.js';
import { MODULES } from './modules/index.js';
import type { WebContext } from './platform/context.js';
import { registerJobs } from './platform/jobs.js';
import { registerGatewayErrorMetrics } from '@aop/gateway-client';
import { registerUsageMetrics } from './modules/usage/usage.metrics.js';
import { BackendClient } from './platform/clients/backend-client.js';
import { type Mail, createMailer } from './platform/clients/mailer.js';
import { type SystemMetrics, createSystemMetrics } from './platform/clients/system-metrics.js';
import { AfterStart } from './modules/agents/after-start.service.js';

export interface WebDeps {
  config: WebConfig;
  db: Database;
  counters: CounterStore;
  logger?: FastifyBaseLogger;
  /** The machine's CPU and memory readings; the operating system's by default. */
  metrics?: SystemMetrics;
  /** Milliseconds since the epoch; `Date.now` by default. */
  clock?: () => number;
}

declare module 'fastify' {
  interface FastifyInstance {
    db: Database;
    backend: BackendClient;
  }
}

/** The public web API as a Fastify instance; `server.ts` listens. */
export async function buildApp({ config, db, counters, logger, metrics, clock = Date.now }: WebDeps): Promise<App> {
  const app = createServer({ config, ...(logger ? { logger } : {}) });
  // First, so every request and every later hook runs in its span; adds nothing when OTEL_EXPORTER_OTLP_ENDPOINT is unset.
  // A public edge: a caller's `traceparent` is not continued (it could pick our trace ids or unsample itself).
  await app.register(tracingPlugin, { ...config.tracing, acceptIncomingContext: false });
  // Every backend call made while serving a request names its client, so the backend's per-client limits count it.
  await app.register(clientAddressPlugin);
  app.decorate('db', db);
  app.decorate(
    'backend',
    new BackendClient({ baseUrls: config.backendUrls, internalApiKey: config.internalApiKey, userContextSecret: config.userContextSecret }),
  );
  // Before every route, so its hooks count and time each request; GET /metrics needs METRICS_TOKEN (else loopback only).
  await app.register(metricsPlugin, { config, pool: () => db.pool() });
  const unobserve = [registerGatewayErrorMetrics(app.metrics.registry), registerUsageMetrics(app.metrics.registry)];
  app.addHook('onClose', async () => {
    for (const stop of unobserve) stop();
  });
  await app.register(sharedHttpPlugin, {
    counters,
    // The dashboard's assets come from this origin: over plain HTTP (no Secure cookies), upgrading them breaks it.
    upgradeInsecureRequests: config.cookieSecure,
    openapi: { path: '/api/openapi.json', title: 'Web API', description: 'Public API of the agent operations platform.' },
  });
  await app.register(authPlugin, { config, clock });
  registerJobs(app);

  // Outside production, mail that only lands in the outbox is printed to the log too (its links are credentials, so
  // never in production): under `npm start` that is how a developer follows a verification or reset link.
  const echo = config.production
    ? undefined
    : (mail: Mail) => app.log.info({ to: mail.to, kind: mail.kind }, `mail to the outbox:\n${mail.text}`);
  const mailer = createMailer({ ...config.mail, echo }, db.kysely);
  app.addHook('onClose', async () => mailer.close());

  const afterStart = new AfterStart(
    { db, backend: app.backend, clock },
    { waitMs: config.gateway.startWaitMs, requestTimeoutMs: config.gateway.requestTimeoutMs },
    app.log,
  );
  app.addHook('onClose', async () => afterStart.close());

  const context: WebContext = { config, mailer, metrics: metrics ?? createSystemMetrics(), afterStart };
  for (const module of MODULES) await app.register(module, context);
  await app.register(dashboardPlugin, config.dashboardDir ? { dir: config.dashboardDir } : {});
  return app;
}
