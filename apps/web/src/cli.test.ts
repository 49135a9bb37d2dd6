import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { newId } from '@aop/core';
import { createDatabase, type Database, migrate, pgliteDirFor } from '@aop/db';
import { createTestDatabase, tempDataDir } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));

/**
 * The operator CLI run as the README says (`npm run cli -- …` runs this file once built), against the embedded database
 * of a stopped service, or against DATABASE_URL when the suite runs on a server.
 */
describe('operator CLI: admin grant | revoke | list (issue #16)', () => {
  const data = tempDataDir();
  let server: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  const env = () => ({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATA_DIR: data.dir,
    ADMIN_EMAILS: 'listed@example.test',
    DATABASE_URL: server?.databaseUrl ?? '',
  });

  /** Opens the database the CLI uses, runs `fn`, closes it again (PGlite is one process's at a time). */
  async function withDb<T>(fn: (db: Database) => Promise<T>): Promise<T> {
    const db = server ? server.db : createDatabase({ pgliteDir: pgliteDirFor(data.dir, 'web') });
    try {
      await migrate(db);
      return await fn(db);
    } finally {
      if (!server) await db.close();
    }
  }

  const cli = async (...args: string[]) => {
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['--conditions=development', '--import', 'tsx', CLI, ...args], {
        env: env(),
      });
      return { code: 0, out: stdout };
    } catch (err) {
      const failed = err as { code: number; stderr: string };
      return { code: failed.code, out: failed.stderr };
    }
  };

  beforeAll(async () => {
    if (process.env.DATABASE_URL) server = await createTestDatabase();
    await withDb(async (db) => {
      await db.kysely
        .insertInto('users')
        .values([
          { id: newId('user'), email: 'ops@example.test', name: 'Ops' },
          { id: newId('user'), email: 'listed@example.test', name: 'Listed', email_verified_at: new Date() },
        ])
        .execute();
    });
  });
  afterAll(async () => {
    await server?.close();
    data.remove();
  });

  it('grant sets the role (case-insensitive address), audited; list shows role holders and verified listed addresses', async () => {
    const granted = await cli('admin', 'grant', 'OPS@example.test');
    expect(granted).toEqual({ code: 0, out: 'ops@example.test: administrator role granted\n' });
    const listed = await cli('admin', 'list');
    expect(listed.out).toBe(
      'listed@example.test: administrator (verified address in ADMIN_EMAILS)\nops@example.test: administrator (role)\n',
    );
    await withDb(async (db) => {
      const row = await db.kysely
        .selectFrom('users')
        .innerJoin('audit_log', 'audit_log.user_id', 'users.id')
        .select(['users.is_admin', 'audit_log.action'])
        .where('users.email', '=', 'ops@example.test')
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ is_admin: true, action: 'admin.grant' });
    });
  }, 120_000);

  it('revoke takes the role away, and says when ADMIN_EMAILS still grants the rights', async () => {
    expect((await cli('admin', 'revoke', 'ops@example.test')).out).toBe('ops@example.test: administrator role revoked\n');
    const listed = await cli('admin', 'revoke', 'listed@example.test');
    expect(listed.out).toContain('still an administrator: the address is verified and in ADMIN_EMAILS');
    await withDb(async (db) => {
      const rows = await db.kysely.selectFrom('users').select(['email', 'is_admin']).orderBy('email').execute();
      expect(rows).toEqual([
        { email: 'listed@example.test', is_admin: false },
        { email: 'ops@example.test', is_admin: false },
      ]);
    });
  }, 120_000);

  it('fails with a message for an unknown address or a wrong verb', async () => {
    expect(await cli('admin', 'grant', 'nobody@example.test')).toEqual({ code: 1, out: 'No user with email nobody@example.test\n' });
    const usage = await cli('admin', 'promote', 'ops@example.test');
    expect(usage.code).toBe(1);
    expect(usage.out).toContain('npm run cli -- admin grant|revoke <email>');
  }, 120_000);
});
