import type { WebModule } from '../../platform/context.js';
import { inviteRoutes } from './invites.routes.js';
import { passwordResetRoutes } from './password-reset.routes.js';
import { registerRoute } from './register.routes.js';
import { settingsRoutes } from './settings.routes.js';
import { verifyEmailRoutes } from './verify-email.routes.js';

/** Registration, email verification, password reset, settings and invites: `/api/register`, `/api/auth/verify-email*`, `/api/auth/{forgot,reset}-password`, `/api/settings*`, `/api/invite*`, `/api/admin/invites`. */
export const accountsModule: WebModule = async (app, context) => {
  await app.register(registerRoute, context);
  await app.register(verifyEmailRoutes, context);
  await app.register(passwordResetRoutes, context);
  await app.register(settingsRoutes, context);
  await app.register(inviteRoutes, context);
};
