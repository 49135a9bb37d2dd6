import type { WebModule } from '../../platform/context.js';
import { agentInteractionRoutes } from './agent.routes.js';
import { chatRoutes } from './chat.routes.js';
import { agentMessageRoutes } from './messages.routes.js';

/** Talking to an agent: `/api/chat`, `/api/gateway/*`, `/api/agent`, `/api/agents/:id/messages`. */
export const chatModule: WebModule = async (app, context) => {
  await app.register(agentMessageRoutes, context);
  await app.register(chatRoutes, context);
  await app.register(agentInteractionRoutes, context);
};
