import type { WebModule } from '../../platform/context.js';
import { workflowRoutes } from './workflows.routes.js';

/** Workflows: `/api/workflows*`. */
export const workflowsModule: WebModule = async (app, context) => {
  await app.register(workflowRoutes, context);
};
