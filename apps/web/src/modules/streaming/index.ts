import type { WebModule } from '../../platform/context.js';
import { streamingRoutes } from './streaming.routes.js';

/** Radio streams: `/api/radio/*`, `/api/webhooks/streaming`. */
export const streamingModule: WebModule = async (app, context) => {
  await app.register(streamingRoutes, context);
};
