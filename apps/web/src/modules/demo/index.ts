import type { WebModule } from '../../platform/context.js';
import { demoRoutes } from './demo.routes.js';

/** The public demo chat: `/api/demo/chat`. */
export const demoModule: WebModule = async (app, context) => {
  await app.register(demoRoutes, context);
};
