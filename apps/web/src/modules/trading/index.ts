import type { WebModule } from '../../platform/context.js';
import { tradingRoutes } from './trading.routes.js';

/** Trading: `/api/trading/*`, `/api/user/trading-key`. */
export const tradingModule: WebModule = async (app, context) => {
  await app.register(tradingRoutes, context);
};
