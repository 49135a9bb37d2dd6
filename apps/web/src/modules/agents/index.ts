import { createBatchWorker } from '../../platform/batch-worker.js';
import type { WebModule } from '../../platform/context.js';
import { savedHeartbeatCount } from '../schedule/heartbeat.service.js';
import { agentProxyRoutes } from './agent-proxy.routes.js';
import { agentRoutes } from './agents.routes.js';
import { agentEventRoutes } from './events.routes.js';
import { instanceRoutes } from './instance.routes.js';
import { lifecycleRoutes } from './lifecycle.routes.js';

/** Agents and their lifecycle: `/api/agents*`, `/api/provision`, `/api/user/runtime`, `/api/instance/:userId*`, the agent event stream. */
export const agentsModule: WebModule = async (app, context) => {
  await app.register(agentRoutes, context);
  await app.register(agentEventRoutes, context);
  await app.register(agentProxyRoutes, context);
  await app.register(instanceRoutes, context);
  await app.register(lifecycleRoutes, context);

  // A heartbeat saved while its agent's gateway could not take it reaches the gateway after a start the web made
  // (`AfterStart.follow`); this job catches the starts it did not make: a wake for a due job, a restart after a crash.
  const { config, afterStart } = context;
  if (config.savedHeartbeatSweepMs > 0)
    app.jobs.add({
      name: 'saved heartbeats',
      everyMs: config.savedHeartbeatSweepMs,
      catchUp: true,
      worker: createBatchWorker(
        async () => {
          await afterStart.sweep();
          return false;
        },
        (err) => app.log.warn({ err }, 'saved heartbeat sweep failed'),
      ),
      depth: () => savedHeartbeatCount(app.db.kysely),
    });
};
