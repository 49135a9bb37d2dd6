import type { WebModule } from '../../platform/context.js';
import { keysRoutes } from './keys.routes.js';

/** API keys: `/api/keys*`. */
export const apiKeysModule: WebModule = async (app, context) => {
  await app.register(keysRoutes, context);
};
