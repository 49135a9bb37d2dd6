import type { WebModule } from '../../platform/context.js';
import { dataFeedRoutes } from './data-feeds.routes.js';

/** Data feeds from the platform's own records: `/api/data-feeds`. */
export const dataFeedsModule: WebModule = async (app, context) => {
  await app.register(dataFeedRoutes, context);
};
