import type { WebModule } from '../../platform/context.js';
import { codehostRoutes } from './codehost.routes.js';
import { idpRoutes } from './idp.routes.js';
import { providerRoutes } from './providers.routes.js';
import { riscRoutes } from './risc.routes.js';
import { sessionRoutes } from './session.routes.js';
import { socialIdentityRoutes } from './social-identity.routes.js';
import { tokenGatingRoutes } from './token-gating.routes.js';
import { walletRoutes } from './wallet-auth.routes.js';

/** Sessions and every way in: `/api/auth/*` (password, identity provider, code host, wallet, social identity, token gating), `/api/wallet-auth`, and RISC security events. */
export const signInModule: WebModule = async (app, context) => {
  await app.register(sessionRoutes, context);
  await app.register(providerRoutes, context);
  await app.register(idpRoutes, context);
  await app.register(codehostRoutes, context);
  await app.register(walletRoutes, context);
  await app.register(tokenGatingRoutes, context);
  await app.register(socialIdentityRoutes, context);
  await app.register(riscRoutes, context);
};
