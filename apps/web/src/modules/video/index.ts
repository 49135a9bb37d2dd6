import type { WebModule } from '../../platform/context.js';
import { videoRoutes } from './video.routes.js';

/** Video generation: `/api/generate-video`. */
export const videoModule: WebModule = async (app, context) => {
  await app.register(videoRoutes, context);
};
