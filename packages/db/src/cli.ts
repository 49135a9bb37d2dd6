/**
 * `npm run db:migrate`: applies pending migrations to DATABASE_URL, or to the
 * embedded databases under DATA_DIR when it is unset.
 */
import { resolve } from 'node:path';
import { createDatabase } from './database.js';
import { migrate } from './migrate.js';
import { pgliteDirFor, SERVICE_DATABASES } from './paths.js';

const url = process.env.DATABASE_URL || undefined;
const dataDir = resolve(process.env.DATA_DIR || './.data');
const targets = url
  ? [{ label: 'DATABASE_URL', url, dir: undefined }]
  : SERVICE_DATABASES.map((s) => ({ label: s, url: undefined, dir: pgliteDirFor(dataDir, s) }));

for (const target of targets) {
  const db = createDatabase({ databaseUrl: target.url, pgliteDir: target.dir });
  try {
    const applied = await migrate(db);
    console.log(`${target.label}: ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}`);
  } finally {
    await db.close();
  }
}
