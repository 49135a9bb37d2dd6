import type { WebModule } from '../../platform/context.js';
import { walletAccountRoutes } from './wallets.routes.js';

/** The user's custodial wallet and names: `/api/wallet`, `/api/wallet/{address,create,provider}`, `/api/wallet-provider`, `/api/basename`. */
export const walletsModule: WebModule = async (app, context) => {
  await app.register(walletAccountRoutes, context);
};
