/**
 * Operator commands for manual plans (paid plans normally arrive through the payment webhook, docs/operations.md "Billing"):
 *   npm run cli -- plan set <email> <plan> [subscription-status]   (status defaults to active; free → none)
 *   npm run cli -- plan show <email>
 * Works on DATABASE_URL, or on the embedded database when the web service is stopped
 * (PGlite is one process's at a time).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDatabase, migrate, pgliteDirFor } from '@aop/db';
import { loadWebConfig } from './config.js';
import { PLAN_AGENT_LIMITS } from './services/plans.js';

const STATUSES = new Set(['none', 'active', 'past_due', 'canceled']);

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

function pgliteInUse(dataDir: string): number | null {
  const file = join(dataDir, 'web', 'server.pid');
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8'));
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

const [area, verb, email, plan, status] = process.argv.slice(2);
if (area !== 'plan' || !verb || !email || (verb === 'set' && !plan) || !['set', 'show'].includes(verb)) {
  fail('usage: npm run cli -- plan set <email> <plan> [none|active|past_due|canceled]\n       npm run cli -- plan show <email>');
}
if (verb === 'set' && !(plan! in PLAN_AGENT_LIMITS)) fail(`Unknown plan ${plan}; plans: ${Object.keys(PLAN_AGENT_LIMITS).join(', ')}`);
const subscription = status ?? (plan === 'free' ? 'none' : 'active');
if (!STATUSES.has(subscription)) fail(`Unknown subscription status ${subscription}`);

const config = loadWebConfig();
if (!config.databaseUrl) {
  const pid = pgliteInUse(config.dataDir);
  if (pid) fail(`The web service (pid ${pid}) has the embedded database open; stop it first, or use DATABASE_URL.`);
}
const db = createDatabase({ databaseUrl: config.databaseUrl, pgliteDir: pgliteDirFor(config.dataDir, 'web') });
try {
  await migrate(db);
  const user = await db.kysely
    .selectFrom('users')
    .select(['id', 'email', 'plan', 'subscription_status'])
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email!.toLowerCase()))
    .executeTakeFirst();
  if (!user) fail(`No user with email ${email}`);
  if (verb === 'set') {
    await db.kysely
      .updateTable('users')
      .set({ plan: plan!, subscription_status: subscription, updated_at: new Date() })
      .where('id', '=', user.id)
      .execute();
    console.log(`${user.email}: plan ${plan}, subscription ${subscription}`);
  } else {
    console.log(`${user.email}: plan ${user.plan}, subscription ${user.subscription_status}`);
  }
} finally {
  await db.close();
}
