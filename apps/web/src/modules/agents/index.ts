import type { WebModule } from '../../platform/context.js';
import { agentProxyRoutes } from './agent-proxy.routes.js';
import { agentRoutes } from './agents.routes.js';
import { agentEventRoutes } from './events.routes.js';
import { instanceRoutes } from './instance.routes.js';
import { lifecycleRoutes } from './lifecycle.routes.js';

/** Agents and their lifecycle: `/api/agents*`, `/api/provision`, `/api/user/runtime`, `/api/instance/:userId*`, the agent event stream. */
export const agentsModule: WebModule = async (app, context) => {
  await app.register(agentRoutes, context);
  await app.register(agentEventRoutes, context);
  await app.register(agentProxyRoutes, context);
  await app.register(instanceRoutes, context);
  await app.register(lifecycleRoutes, context);
};
