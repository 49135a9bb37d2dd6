import { loggerOptions, newId } from '@aop/core';
import pino from 'pino';
import {
  type RunningService,
  type TestDatabase,
  createTestDatabase,
  listen,
  request,
  tempDataDir,
  testCounters,
  testEnv,
} from '@aop/testing';
import { type WebDeps, buildApp } from './app.js';
import { type WebConfig, loadWebConfig } from './config.js';
import { SESSION_COOKIE, createSession } from './platform/sessions.js';

export interface TestWeb extends RunningService {
  config: WebConfig;
  database: TestDatabase;
  /** Every line the service logged, parsed (only when started with `logs: true`, which logs at debug level). */
  logs: Array<Record<string, unknown> & { level: number; msg: string }>;
  /**
   * Creates a user with a live session and returns the Cookie header that carries it. The address counts as verified
   * unless `emailVerified: false` (an account that has not followed its verification link yet). `plan`: a paid plan
   * with an active subscription, as the billing webhook leaves it (what provisioning needs).
   */
  signIn(user?: {
    email?: string;
    name?: string;
    isAdmin?: boolean;
    emailVerified?: boolean;
    plan?: string;
  }): Promise<{ userId: string; cookie: string }>;
}

/** Pino's numbers for the levels a test looks for in `TestWeb.logs`. */
export const LOG_LEVEL = { debug: 20, info: 30, warn: 40, error: 50 } as const;

/**
 * A real web service on 127.0.0.1 with its own database, data dir and counters. `database`: another service's, shared
 * as in production (web and backend on one Postgres); its owner closes it. `logs`: keep what it logs, from debug up.
 */
export async function startWeb(
  env: Record<string, string | undefined> = {},
  deps: Pick<WebDeps, 'metrics' | 'clock'> & { database?: TestDatabase; logs?: boolean } = {},
): Promise<TestWeb> {
  const data = tempDataDir();
  const config = loadWebConfig(testEnv(data.dir, env));
  const { database: shared, logs: keepLogs, ...appDeps } = deps;
  const database = shared ?? (await createTestDatabase());
  const counters = testCounters();
  const logs: TestWeb['logs'] = [];
  const logger = keepLogs ? pino(loggerOptions('debug'), { write: (line: string) => void logs.push(JSON.parse(line)) }) : undefined;
  const app = await buildApp({ config, db: database.db, counters, ...appDeps, ...(logger ? { logger } : {}) });
  const running = await listen(app);
  return {
    ...running,
    config,
    database,
    logs,
    async signIn(user = {}) {
      const userId = newId('user');
      const email = user.email ?? `${userId}@example.com`;
      await database.db.kysely
        .insertInto('users')
        .values({
          id: userId,
          email,
          name: user.name ?? email,
          is_admin: user.isAdmin ?? false,
          email_verified_at: user.emailVerified === false ? null : new Date(),
          ...(user.plan ? { plan: user.plan, subscription_status: 'active' } : {}),
        })
        .execute();
      const { token } = await createSession(database.db.kysely, userId);
      return { userId, cookie: `${SESSION_COOKIE}=${token}` };
    },
    async close() {
      await running.close();
      await counters.close();
      if (!shared) await database.close();
      data.remove();
    },
  };
}

/** Cookie header value from a response's Set-Cookie for `name`. */
export function cookieFrom(headers: Headers, name: string): string | undefined {
  for (const line of headers.getSetCookie()) {
    const [pair] = line.split(';');
    if (pair?.startsWith(`${name}=`)) return pair;
  }
  return undefined;
}

/** A distinct client address per caller, for services started with TRUST_PROXY=127.0.0.1. */
let nextIp = 1;
export const freshIp = () => `198.51.100.${nextIp++ % 250}`;

/** Registers through the API (POST /api/register). */
export async function register(
  url: string,
  body: { email: string; password: string; name?: string; referralCode?: string },
  headers: Record<string, string> = {},
) {
  return request(`${url}/api/register`, { json: body, headers });
}

/** Signs in through the API exactly as a browser would: CSRF token first, then login. Returns the session cookie. */
export async function login(
  url: string,
  email: string,
  password: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; cookie: string | undefined; setCookie: string[] }> {
  const csrf = await request(`${url}/api/auth/csrf`, { headers });
  const csrfCookie = cookieFrom(csrf.headers, 'service-csrf');
  const res = await request(`${url}/api/auth/login`, {
    json: { email, password },
    headers: { ...headers, 'x-csrf-token': csrf.body.csrfToken, ...(csrfCookie ? { cookie: csrfCookie } : {}) },
  });
  return { status: res.status, body: res.body, cookie: cookieFrom(res.headers, 'service-session'), setCookie: res.headers.getSetCookie() };
}

/**
 * The newest mail of `kind` (`password-reset`, `email-verification`, …) sent to `to` through the outbox mailer, waiting
 * up to 5 s: some mail goes out after the answer.
 */
export async function mailTo(web: Pick<TestWeb, 'database'>, to: string, kind: string): Promise<{ subject: string; text: string }> {
  for (let i = 0; i < 100; i++) {
    const row = await web.database.db.kysely
      .selectFrom('email_outbox')
      .select(['subject', 'body_text'])
      .where('to_address', '=', to)
      .where('kind', '=', kind)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    if (row) return { subject: row.subject, text: row.body_text };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ${kind} mail to ${to}`);
}

/** The token of the newest `<path>?token=…` link mailed to `to` (e.g. `/verify-email`). */
export async function mailedToken(web: Pick<TestWeb, 'database'>, to: string, kind: string, path: string): Promise<string> {
  const { text } = await mailTo(web, to, kind);
  const token = new RegExp(`${path}\\?token=([0-9a-f]{64})`).exec(text)?.[1];
  if (!token) throw new Error(`no ${path} link in the ${kind} mail to ${to}`);
  return token;
}

/** Follows the verification link mailed to `to` (registration or email change) through the API. */
export async function verifyEmail(web: Pick<TestWeb, 'url' | 'database'>, to: string): Promise<void> {
  const token = await mailedToken(web, to, 'email-verification', '/verify-email');
  const res = await request(`${web.url}/api/auth/verify-email`, { json: { token } });
  if (res.status !== 200) throw new Error(`verify-email answered ${res.status}: ${res.text}`);
}

/**
 * Points an agent's record at a gateway on this machine (a protocol-speaking fake, or a port nobody listens on): the
 * address the web reaches the agent at, whatever its host started.
 */
export async function pointAgentAt(web: Pick<TestWeb, 'database'>, agentId: string, port: number): Promise<void> {
  await web.database.db.kysely
    .updateTable('agents')
    .set({ url: `http://127.0.0.1:${port}` })
    .where('id', '=', agentId)
    .execute();
}
