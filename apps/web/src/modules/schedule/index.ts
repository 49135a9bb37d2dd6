import type { WebModule } from '../../platform/context.js';
import { cronRoutes } from './cron.routes.js';
import { heartbeatRoutes } from './heartbeat.routes.js';
import { scheduledTasksRoutes } from './scheduled-tasks.routes.js';

/** Scheduling an agent: `/api/scheduled-tasks*`, `/api/cron`, `/api/heartbeat`. */
export const scheduleModule: WebModule = async (app, context) => {
  await app.register(scheduledTasksRoutes, context);
  await app.register(cronRoutes, context);
  await app.register(heartbeatRoutes, context);
};
