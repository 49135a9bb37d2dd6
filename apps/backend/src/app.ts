import { type App, type CounterStore, createServer, metricsPlugin, notFoundHandler, sharedHttpPlugin } from '@aop/core';
import { tracingPlugin } from '@aop/core/tracing';
import type { Database } from '@aop/db';
import type { AgentHost } from '@aop/provisioner';
import type { FastifyBaseLogger } from 'fastify';
import type { BackendConfig } from './config.js';
import { BACKEND_LIMITS } from './plugins/rate-limits.js';
import { aiRoutes } from './routes/ai/index.js';
import { gatewayTokenRoute } from './routes/gateway/index.js';
import { healthRoutes } from './routes/health/index.js';
import { validateKeyRoute } from './routes/keys/index.js';
import { installationRoutes } from './routes/installations/index.js';
import { metricsRoutes } from './routes/metrics/index.js';
import { coordinationRoutes } from './routes/swarms/index.js';
import { missionControlRoutes } from './routes/mission-control/index.js';
import { agentRoutes, deploymentRoutes } from './routes/agents/index.js';
import { agentRpcRoutes } from './routes/agents/rpc.js';
import { unavailableProvisioning } from './routes/agents/unavailable.js';
import { browseRoutes } from './routes/browse/index.js';
import { logRoutes } from './routes/logs/index.js';
import { runtimeRoutes } from './routes/runtime/index.js';
import { runtimeProxyRoutes } from './routes/runtime/proxy.js';
import { toolHostRoutes } from './routes/tool-host/index.js';
import { undergroundRoutes } from './routes/underground/index.js';
import { createHealthProbe } from './services/health.js';
import { registerAgentMetrics } from './services/agent-metrics.js';
import { registerGatewayErrorMetrics } from '@aop/gateway-client';

export interface BackendDeps {
  config: BackendConfig;
  db: Database;
  counters: CounterStore;
  logger?: FastifyBaseLogger;
  /** Where agents run; absent when the configured provisioner is not configured (agent routes answer 500). */
  host?: AgentHost;
  /** Milliseconds since the epoch, as `app.clock`; `Date.now` by default. */
  clock?: () => number;
}

declare module 'fastify' {
  interface FastifyInstance {
    db: Database;
  }
}

/** The backend (internal API) as a Fastify instance; `server.ts` listens. */
export async function buildApp({ config, db, counters, logger, host, clock = Date.now }: BackendDeps): Promise<App> {
  const app = createServer({ config, ...(logger ? { logger } : {}) });
  // First, so every request and every later hook runs in its span; adds nothing when OTEL_EXPORTER_OTLP_ENDPOINT is unset.
  // The web's `traceparent` is continued, so its request and ours are one trace.
  await app.register(tracingPlugin, { ...config.tracing, acceptIncomingContext: true });
  app.decorate('db', db);
  app.decorate('clock', clock);
  // Before every route, so its hooks count and time each request; GET /metrics needs METRICS_TOKEN (else loopback only).
  await app.register(metricsPlugin, { config, pool: () => db.pool() });
  const unobserve = [registerAgentMetrics(app.metrics.registry, host), registerGatewayErrorMetrics(app.metrics.registry)];
  app.addHook('onClose', async () => {
    for (const stop of unobserve) stop();
  });
  await app.register(sharedHttpPlugin, {
    counters,
    openapi: {
      path: '/openapi.json',
      title: 'Backend API',
      description: 'Internal API: deployments, agent lifecycle, underground, mission control, AI.',
    },
  });

  await app.register(healthRoutes, { config, probe: createHealthProbe(config, host), ...(host ? { host } : {}) });

  // Everything under /api counts against the general limit; areas add their own on top.
  await app.register(
    async (api) => {
      api.addHook('onRequest', api.rateLimit(BACKEND_LIMITS.general));
      api.setNotFoundHandler(notFoundHandler);
      await api.register(validateKeyRoute, { config });
      await api.register(gatewayTokenRoute, { config });
      await api.register(installationRoutes, { config });
      await api.register(metricsRoutes, { config, host });
      await api.register(coordinationRoutes, { config, host });
      await api.register(undergroundRoutes, { config, prefix: '/underground', ...(host ? { host } : {}) });
      await api.register(missionControlRoutes, { config, host });
      if (host) {
        await api.register(agentRoutes, { config, host });
        await api.register(agentRpcRoutes, { config, host });
        await api.register(runtimeRoutes, { config, host });
        await api.register(runtimeProxyRoutes, { config, host });
        await api.register(browseRoutes, { config, host });
        await api.register(logRoutes, { config, host });
      } else {
        await api.register(unavailableProvisioning, { config, paths: ['/agents', '/agents/*', '/runtime/*', '/browse/*', '/logs/*'] });
      }
      await api.register(toolHostRoutes, { config, ...(host ? { host } : {}) });
      await api.register(
        async (ai) => {
          ai.addHook('onRequest', ai.rateLimit(BACKEND_LIMITS.ai));
          ai.setNotFoundHandler(notFoundHandler);
          await ai.register(aiRoutes, { config });
        },
        { prefix: '/ai' },
      );
      // Deploying is the expensive call: POST /api/deployments is limited to 5/min on top.
      await api.register(
        async (deployments) => {
          const limit = deployments.rateLimit(BACKEND_LIMITS.deployments);
          deployments.addHook('onRequest', async (request, reply) => {
            if (request.method === 'POST') await limit(request, reply);
          });
          deployments.setNotFoundHandler(notFoundHandler);
          if (host) await deployments.register(deploymentRoutes, { config, host });
          else await deployments.register(unavailableProvisioning, { config, paths: ['/'] });
        },
        { prefix: '/deployments' },
      );
    },
    { prefix: '/api' },
  );

  return app;
}
