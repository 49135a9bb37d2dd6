import type { WebModule } from '../../platform/context.js';
import { skillsRoutes } from './skills.routes.js';

/** Skills: `/api/skills*`. */
export const skillsModule: WebModule = async (app, context) => {
  await app.register(skillsRoutes, context);
};
