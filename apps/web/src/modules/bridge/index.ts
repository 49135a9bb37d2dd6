import type { WebModule } from '../../platform/context.js';
import { bridgeRoutes } from './bridge.routes.js';

/** The message bridge: `/api/bridge/*`. */
export const bridgeModule: WebModule = async (app, context) => {
  await app.register(bridgeRoutes, context);
};
