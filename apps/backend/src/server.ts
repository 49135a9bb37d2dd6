import { createCounterStore } from '@aop/core';
import { createDatabase, migrate, pgliteDirFor } from '@aop/db';
import { LocalAgentHost } from '@aop/provisioner';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { loadBackendConfig } from './config.js';

const config = loadBackendConfig();
const db = createDatabase({ databaseUrl: config.databaseUrl, pgliteDir: pgliteDirFor(config.dataDir, 'backend') });
await migrate(db);
const counters = createCounterStore(config.redisUrl);
// Only the local provisioner has an agent host so far; the others report `provisioning: disabled`.
const host =
  config.provisioner === 'local'
    ? new LocalAgentHost({
        dataDir: config.dataDir,
        encryptionKey: config.encryptionKey,
        readyTimeoutMs: config.agents.readyTimeoutMs,
        memoryPerAgentBytes: config.agents.memoryPerAgentBytes,
        ...(config.agents.maxAgents !== undefined ? { maxAgents: config.agents.maxAgents } : {}),
      })
    : undefined;
const app = await buildApp({ config, db, counters, ...(host ? { host } : {}) });
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
