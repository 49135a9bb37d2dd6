import { createCounterStore } from '@aop/core';
import { createDatabase, migrate, pgliteDirFor } from '@aop/db';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { loadWebConfig } from './config.js';

const config = loadWebConfig();
const db = createDatabase({ databaseUrl: config.databaseUrl, pgliteDir: pgliteDirFor(config.dataDir, 'web') });
await migrate(db);
const counters = createCounterStore(config.redisUrl);
const app = await buildApp({ config, db, counters });

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  if (err) app.log.error({ err }, 'closing after an error');
  else app.log.info({ signal }, 'shutting down');
  await app.close();
  await counters.close();
  await db.close();
});

await app.listen({ host: config.host, port: config.port });
