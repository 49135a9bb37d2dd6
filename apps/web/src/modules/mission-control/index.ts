import type { WebModule } from '../../platform/context.js';
import { missionControlRoutes } from './mission-control.routes.js';

/** Mission control's fleet views: `/api/mission-control/fleet/*`. */
export const missionControlModule: WebModule = async (app, context) => {
  await app.register(missionControlRoutes, context);
};
