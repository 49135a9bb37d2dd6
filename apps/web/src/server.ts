import { createCounterStore } from '@aop/core';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDatabase, migrate, pgliteDirFor } from '@aop/db';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { loadWebConfig } from './config.js';

const config = loadWebConfig();
const db = createDatabase({
  databaseUrl: config.databaseUrl,
  poolSize: config.databasePoolSize,
  pgliteDir: pgliteDirFor(config.dataDir, 'web'),
});
await migrate(db);
// Tells `npm run cli` that this process holds the embedded database.
const pidFile = config.databaseUrl ? null : join(config.dataDir, 'web', 'server.pid');
if (pidFile) {
  mkdirSync(join(config.dataDir, 'web'), { recursive: true });
  writeFileSync(pidFile, String(process.pid));
}
const counters = createCounterStore(config.redisUrl);
const app = await buildApp({ config, db, counters });

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  if (err) app.log.error({ err }, 'closing after an error');
  else app.log.info({ signal }, 'shutting down');
  await app.close();
  await counters.close();
  await db.close();
  if (pidFile) rmSync(pidFile, { force: true });
});

await app.listen({ host: config.host, port: config.port });
