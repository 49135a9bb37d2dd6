import type { WebModule } from '../../platform/context.js';
import { walletSessionRoutes } from './wallet-sessions.routes.js';
import { x402Routes } from './x402.routes.js';

/** Machine payments: payment sessions (`/api/wallet/sessions*`) and x402 (`/api/x402`). */
export const paymentsModule: WebModule = async (app, context) => {
  await app.register(walletSessionRoutes, context);
  await app.register(x402Routes, context);
};
