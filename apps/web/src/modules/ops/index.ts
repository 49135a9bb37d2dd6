import type { WebModule } from '../../platform/context.js';
import { debugRoutes } from './debug.routes.js';
import { healthRoutes } from './health.routes.js';

/** Health (`/api/health`, `/api/admin/health`) and the administrators' debug view (`/api/debug`). */
export const opsModule: WebModule = async (app, context) => {
  await app.register(healthRoutes, context);
  await app.register(debugRoutes, context);
};
