import type { WebModule } from '../../platform/context.js';
import { configRoutes } from './config.routes.js';

/** An agent's OpenClaw configuration and its backups: `/api/config*`. */
export const agentConfigModule: WebModule = async (app, context) => {
  await app.register(configRoutes, context);
};
