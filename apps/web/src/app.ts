import { type App, type CounterStore, createServer, sharedHttpPlugin } from '@aop/core';
import type { Database } from '@aop/db';
import type { FastifyBaseLogger } from 'fastify';
import type { WebConfig } from './config.js';
import { authPlugin } from './plugins/auth.js';
import { dashboardPlugin } from './plugins/dashboard.js';
import { codehostRoutes } from './routes/auth/codehost.js';
import { idpRoutes } from './routes/auth/idp.js';
import { passwordResetRoutes } from './routes/auth/password-reset.js';
import { providerRoutes } from './routes/auth/providers.js';
import { registerRoute } from './routes/auth/register.js';
import { sessionRoutes } from './routes/auth/session.js';
import { socialIdentityRoutes } from './routes/auth/social-identity.js';
import { tokenGatingRoutes } from './routes/auth/token-gating.js';
import { verifyEmailRoutes } from './routes/auth/verify-email.js';
import { walletRoutes } from './routes/auth/wallet.js';
import { agentInteractionRoutes } from './routes/agent/index.js';
import { agentEventRoutes } from './routes/agents/events.js';
import { agentRoutes } from './routes/agents/index.js';
import { agentMessageRoutes } from './routes/agents/messages.js';
import { agentProxyRoutes } from './routes/agents/agent-proxy.js';
import { backendAreaRoutes } from './routes/backend-areas/index.js';
import { billingRoutes } from './routes/billing/index.js';
import { bridgeRoutes } from './routes/bridge/index.js';
import { chatRoutes } from './routes/chat/index.js';
import { configRoutes } from './routes/config/index.js';
import { cronRoutes } from './routes/cron/index.js';
import { dashboardRoutes } from './routes/dashboard/index.js';
import { demoRoutes } from './routes/demo/index.js';
import { deviceRoutes } from './routes/devices/index.js';
import { filesRoutes } from './routes/files/index.js';
import { gatewayDataRoutes } from './routes/gateway-data/index.js';
import { pluginGatewayRoutes } from './routes/gateway/index.js';
import { healthRoutes } from './routes/health/index.js';
import { heartbeatRoutes } from './routes/heartbeat/index.js';
import { instanceRoutes } from './routes/instance/index.js';
import { keysRoutes } from './routes/keys/index.js';
import { memoryRoutes } from './routes/memory/index.js';
import { missionControlRoutes } from './routes/mission-control/index.js';
import { scheduledTasksRoutes } from './routes/scheduled-tasks/index.js';
import { riscRoutes } from './routes/security/risc.js';
import { settingsRoutes } from './routes/settings/index.js';
import { skillsRoutes } from './routes/skills/index.js';
import { tradingRoutes } from './routes/trading/index.js';
import { walletSessionRoutes } from './routes/wallet-sessions/index.js';
import { workflowRoutes } from './routes/workflows/index.js';
import { walletAccountRoutes } from './routes/wallet/index.js';
import { x402Routes } from './routes/x402/index.js';
import { streamingRoutes } from './routes/streaming/index.js';
import { videoRoutes } from './routes/video/index.js';
import { dataFeedRoutes } from './routes/data-feeds/index.js';
import { debugRoutes } from './routes/debug/index.js';
import { inviteRoutes } from './routes/invites/index.js';
import { webhookRoutes } from './routes/webhooks/index.js';
import { BackendClient } from './services/backend-client.js';
import { type Mail, createMailer } from './services/mailer.js';
import { type SystemMetrics, createSystemMetrics } from './services/system-metrics.js';

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
  app.decorate('db', db);
  app.decorate(
    'backend',
    new BackendClient({ baseUrls: config.backendUrls, internalApiKey: config.internalApiKey, userContextSecret: config.userContextSecret }),
  );
  await app.register(sharedHttpPlugin, {
    counters,
    // The dashboard's assets come from this origin: over plain HTTP (no Secure cookies), upgrading them breaks it.
    upgradeInsecureRequests: config.cookieSecure,
    openapi: { path: '/api/openapi.json', title: 'Web API', description: 'Public API of the agent operations platform.' },
  });
  await app.register(authPlugin, { config, clock });

  // Outside production, mail that only lands in the outbox is printed to the log too (its links are credentials, so
  // never in production): under `npm start` that is how a developer follows a verification or reset link.
  const echo = config.production
    ? undefined
    : (mail: Mail) => app.log.info({ to: mail.to, kind: mail.kind }, `mail to the outbox:\n${mail.text}`);
  const mailer = createMailer({ ...config.mail, echo }, db.kysely);
  app.addHook('onClose', async () => mailer.close());

  await app.register(healthRoutes, { metrics: metrics ?? createSystemMetrics() });
  await app.register(registerRoute, { config, mailer });
  await app.register(verifyEmailRoutes, { config, mailer });
  await app.register(sessionRoutes, { config });
  await app.register(providerRoutes, { config });
  await app.register(idpRoutes, { config });
  await app.register(codehostRoutes, { config });
  await app.register(walletRoutes, { config });
  await app.register(walletSessionRoutes, { config });
  await app.register(tokenGatingRoutes, { config });
  await app.register(socialIdentityRoutes, { config });
  await app.register(passwordResetRoutes, { config, mailer });
  await app.register(settingsRoutes, { config, mailer });
  await app.register(keysRoutes, { config });
  await app.register(configRoutes);
  await app.register(workflowRoutes);
  await app.register(bridgeRoutes, { config });
  await app.register(billingRoutes, { config });
  await app.register(walletAccountRoutes, { config });
  await app.register(agentRoutes, { config });
  await app.register(agentEventRoutes);
  await app.register(agentProxyRoutes);
  await app.register(agentMessageRoutes);
  await app.register(chatRoutes, { config });
  await app.register(agentInteractionRoutes, { config });
  await app.register(instanceRoutes);
  await app.register(riscRoutes, { config });
  await app.register(tradingRoutes, { config });
  await app.register(dashboardRoutes, { config });
  await app.register(gatewayDataRoutes, { config });
  await app.register(pluginGatewayRoutes, { config });
  await app.register(demoRoutes, { config });
  await app.register(deviceRoutes, { config });
  await app.register(memoryRoutes);
  await app.register(missionControlRoutes);
  await app.register(filesRoutes);
  await app.register(skillsRoutes);
  await app.register(scheduledTasksRoutes);
  await app.register(cronRoutes, { config });
  await app.register(heartbeatRoutes, { config });
  await app.register(x402Routes, { config });
  await app.register(streamingRoutes, { config });
  await app.register(videoRoutes, { config });
  await app.register(webhookRoutes, { config });
  await app.register(inviteRoutes, { config, mailer });
  await app.register(dataFeedRoutes);
  await app.register(debugRoutes, { config });
  await app.register(backendAreaRoutes);
  await app.register(dashboardPlugin, config.dashboardDir ? { dir: config.dashboardDir } : {});
  return app;
}
