import type { WebModule } from '../../platform/context.js';
import { webhookRoutes } from './webhooks.routes.js';

/** Inbound provider webhooks: `/api/webhooks/email`, `/api/webhooks/hosting-status`. */
export const webhooksModule: WebModule = async (app, context) => {
  await app.register(webhookRoutes, context);
};
