import type { WebModule } from '../../platform/context.js';
import { bookingSettlementRoutes } from './booking-settlement.routes.js';
import { instantSplitRoutes } from './instant-split.routes.js';
import { skillsRoutes } from './skills.routes.js';

/** Skills: `/api/skills*`. The built-in skills come first, so their paths never reach `POST /api/skills/:name`. */
export const skillsModule: WebModule = async (app, context) => {
  await app.register(bookingSettlementRoutes, context);
  await app.register(instantSplitRoutes, context);
  await app.register(skillsRoutes, context);
};
