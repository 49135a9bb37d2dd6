import type { WebModule } from '../../platform/context.js';
import { pluginGatewayRoutes } from './plugin-gateway.routes.js';

/** The paid plugin gateway: `/api/v1/gateway/*`. */
export const pluginGatewayModule: WebModule = async (app, context) => {
  await app.register(pluginGatewayRoutes, context);
};
