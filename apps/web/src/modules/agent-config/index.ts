import type { WebModule } from '../../platform/context.js';
import { agentConfigRoutes } from './agent-config.routes.js';
import { configRoutes } from './config.routes.js';

/**
 * Configuration and its backups: the account's template (`/api/config*`, spec §4.2) and each agent's own, the one its
 * host applies (`/api/agents/:id/config*`).
 */
export const agentConfigModule: WebModule = async (app, context) => {
  await app.register(configRoutes, context);
  await app.register(agentConfigRoutes, context);
};
