import type { WebModule } from '../../platform/context.js';
import { backendAreaRoutes } from './fleet.routes.js';

/** The backend's fleet areas relayed for the user: swarms, colony, logs, installations, underground, browse, tool host. */
export const fleetModule: WebModule = async (app, context) => {
  await app.register(backendAreaRoutes, context);
};
