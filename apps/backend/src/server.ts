import { createCounterStore } from '@aop/core';
import { createDatabase, migrate, pgliteDirFor } from '@aop/db';
import type { AgentHost } from '@aop/provisioner';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { loadBackendConfig } from './config.js';
import { ProvisionerConfigError, createAgentHost } from './services/agent-host.js';

const config = loadBackendConfig();
const db = createDatabase({
  databaseUrl: config.databaseUrl,
  poolSize: config.databasePoolSize,
  pgliteDir: pgliteDirFor(config.dataDir, 'backend'),
});
await migrate(db);
const counters = createCounterStore(config.redisUrl);
// A provisioner whose settings are incomplete gets no host: agent routes answer 500 and /health says `disabled`.
let host: AgentHost | undefined;
let hostProblem: string | undefined;
try {
  host = createAgentHost(config);
} catch (err) {
  if (!(err instanceof ProvisionerConfigError)) throw err;
  hostProblem = err.message;
}
const app = await buildApp({ config, db, counters, ...(host ? { host } : {}) });
if (hostProblem) app.log.warn(`provisioning disabled: ${hostProblem}`);
// Agents that were running when the backend stopped start again.
if (host) host.restore().catch((err) => app.log.error({ err }, 'restoring agents failed'));

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  if (err) app.log.error({ err }, 'closing after an error');
  else app.log.info({ signal }, 'shutting down');
  await app.close();
  await host?.shutdown();
  await counters.close();
  await db.close();
});

await app.listen({ host: config.host, port: config.port });
