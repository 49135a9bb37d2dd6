import type { WebModule } from '../../platform/context.js';
import { dashboardRoutes } from './dashboard.routes.js';

/** The usage ledger read back, and what the dashboard shows before a new agent: `/api/dashboard/{stats,cost,new-agent}`. */
export const usageModule: WebModule = async (app, context) => {
  await app.register(dashboardRoutes, context);
};
