import type { WebModule } from '../../platform/context.js';
import { billingRoutes } from './billing.routes.js';

/** Plans, card checkout and credits: `/api/billing`, `/api/checkout/verify`, `/api/payments/card/*`, `/api/wallet/top-up`. */
export const billingModule: WebModule = async (app, context) => {
  await app.register(billingRoutes, context);
};
