/**
 * Operator commands:
 *   npm run cli -- plan set <email> <plan> [subscription-status]   manual plans (status defaults to active; free → none;
 *                                                                  paid plans normally arrive through the payment
 *                                                                  webhook, docs/operations.md "Billing")
 *   npm run cli -- plan show <email>
 *   npm run cli -- admin grant <email>                             administrator rights by role, whatever the address
 *   npm run cli -- admin revoke <email>
 *   npm run cli -- admin list                                      role holders and verified ADMIN_EMAILS accounts
 * Works on DATABASE_URL, or on the embedded database when the web service is stopped
 * (PGlite is one process's at a time).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PLAN_NAMES, isPlanName } from '@aop/core';
import { createDatabase, migrate, pgliteDirFor, writeAudit } from '@aop/db';
import { loadWebConfig } from './config.js';
import { hasAdminRights } from './platform/sessions.js';

const STATUSES = new Set(['none', 'active', 'past_due', 'canceled']);
const USAGE = [
  'usage: npm run cli -- plan set <email> <plan> [none|active|past_due|canceled]',
  '       npm run cli -- plan show <email>',
  '       npm run cli -- admin grant|revoke <email>',
  '       npm run cli -- admin list',
].join('\n');

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
const valid =
  (area === 'plan' && ((verb === 'set' && email && plan) || (verb === 'show' && email))) ||
  (area === 'admin' && (((verb === 'grant' || verb === 'revoke') && email) || verb === 'list'));
if (!valid) fail(USAGE);
if (area === 'plan' && verb === 'set' && !isPlanName(plan!)) fail(`Unknown plan ${plan}; plans: ${PLAN_NAMES.join(', ')}`);
const subscription = status ?? (plan === 'free' ? 'none' : 'active');
if (area === 'plan' && !STATUSES.has(subscription)) fail(`Unknown subscription status ${subscription}`);

const config = loadWebConfig();
if (!config.databaseUrl) {
  const pid = pgliteInUse(config.dataDir);
  if (pid) fail(`The web service (pid ${pid}) has the embedded database open; stop it first, or use DATABASE_URL.`);
}
const db = createDatabase({ databaseUrl: config.databaseUrl, pgliteDir: pgliteDirFor(config.dataDir, 'web') });
try {
  await migrate(db);
  const users = db.kysely
    .selectFrom('users')
    .select(['id', 'name', 'email', 'plan', 'subscription_status', 'is_admin', 'email_verified_at']);
  if (area === 'admin' && verb === 'list') {
    const rows = await users.orderBy('email').execute();
    for (const row of rows.filter((r) => hasAdminRights(r, config.adminEmails))) {
      console.log(`${row.email}: ${row.is_admin ? 'administrator (role)' : 'administrator (verified address in ADMIN_EMAILS)'}`);
    }
  } else {
    const user = await users.where((eb) => eb(eb.fn('lower', ['email']), '=', email!.toLowerCase())).executeTakeFirst();
    if (!user) fail(`No user with email ${email}`);
    if (area === 'admin') {
      const grant = verb === 'grant';
      await db.kysely.updateTable('users').set({ is_admin: grant, updated_at: new Date() }).where('id', '=', user.id).execute();
      await writeAudit(db.kysely, { userId: user.id, action: grant ? 'admin.grant' : 'admin.revoke', ip: null, metadata: { by: 'cli' } });
      const listed = config.adminEmails.has(user.email.toLowerCase());
      console.log(`${user.email}: administrator role ${grant ? 'granted' : 'revoked'}`);
      if (!grant && listed && user.email_verified_at) {
        console.log(`  (still an administrator: the address is verified and in ADMIN_EMAILS; remove it there too)`);
      }
    } else if (verb === 'set') {
      await db.kysely
        .updateTable('users')
        .set({ plan: plan!, subscription_status: subscription, updated_at: new Date() })
        .where('id', '=', user.id)
        .execute();
      console.log(`${user.email}: plan ${plan}, subscription ${subscription}`);
    } else {
      console.log(`${user.email}: plan ${user.plan}, subscription ${user.subscription_status}`);
    }
  }
} finally {
  await db.close();
}
