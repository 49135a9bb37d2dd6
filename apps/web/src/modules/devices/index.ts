import type { WebModule } from '../../platform/context.js';
import { deviceRoutes } from './devices.routes.js';

/** Device pairing with an agent: `/api/devices*`. */
export const devicesModule: WebModule = async (app, context) => {
  await app.register(deviceRoutes, context);
};
