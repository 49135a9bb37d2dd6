import type { WebModule } from '../../platform/context.js';
import { filesRoutes } from './files.routes.js';
import { gatewayDataRoutes } from './gateway-data.routes.js';
import { memoryRoutes } from './memory.routes.js';

/** What an agent holds and reports: `/api/memory`, `/api/files`, `/api/channels`, `/api/credits`, `/api/daily-brief`, `/api/metrics`, `/api/models`, `/api/sessions`. */
export const agentDataModule: WebModule = async (app, context) => {
  await app.register(gatewayDataRoutes, context);
  await app.register(memoryRoutes, context);
  await app.register(filesRoutes, context);
};
