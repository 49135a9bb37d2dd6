import { newId } from '@aop/core';
import { type RunningService, type TestDatabase, createTestDatabase, listen, tempDataDir, testCounters, testEnv } from '@aop/testing';
import { type WebDeps, buildApp } from './app.js';
import { type WebConfig, loadWebConfig } from './config.js';
import { SESSION_COOKIE, createSession } from './services/sessions.js';

export interface TestWeb extends RunningService {
  config: WebConfig;
  database: TestDatabase;
  /** Creates a user with a live session and returns the Cookie header that carries it. */
  signIn(user?: { email?: string; name?: string; isAdmin?: boolean }): Promise<{ userId: string; cookie: string }>;
}

/** A real web service on 127.0.0.1 with its own database, data dir and counters. */
export async function startWeb(env: Record<string, string | undefined> = {}, deps: Pick<WebDeps, 'metrics'> = {}): Promise<TestWeb> {
  const data = tempDataDir();
  const config = loadWebConfig(testEnv(data.dir, env));
  const database = await createTestDatabase();
  const counters = testCounters();
  const app = await buildApp({ config, db: database.db, counters, ...deps });
  const running = await listen(app);
  return {
    ...running,
    config,
    database,
    async signIn(user = {}) {
      const userId = newId('user');
      const email = user.email ?? `${userId}@example.com`;
      await database.db.kysely
        .insertInto('users')
        .values({ id: userId, email, name: user.name ?? email, is_admin: user.isAdmin ?? false })
        .execute();
      const { token } = await createSession(database.db.kysely, userId);
      return { userId, cookie: `${SESSION_COOKIE}=${token}` };
    },
    async close() {
      await running.close();
      await counters.close();
      await database.close();
      data.remove();
    },
  };
}
