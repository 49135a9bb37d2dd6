import type { WebModule } from '../../platform/context.js';
import { dashboardRoutes } from './dashboard.routes.js';

/** The usage ledger read back: `/api/dashboard/stats`, `/api/dashboard/cost`. */
export const usageModule: WebModule = async (app, context) => {
  await app.register(dashboardRoutes, context);
};
