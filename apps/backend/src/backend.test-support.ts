import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { userContextHeaders } from '@aop/core';
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
import { type AgentHost, LocalAgentHost, type LocalHostOptions } from '@aop/provisioner';
import { type FakeGatewayBehaviour, installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { buildApp } from './app.js';
import { type BackendConfig, loadBackendConfig } from './config.js';

export interface TestBackend extends RunningService {
  config: BackendConfig;
  database: TestDatabase;
}

/** A real backend on 127.0.0.1 with its own database, data dir and counters. */
export async function startBackend(
  env: Record<string, string | undefined> = {},
  options: { devSecrets?: boolean; host?: AgentHost; clock?: () => number } = {},
): Promise<TestBackend> {
  const data = tempDataDir();
  const config = loadBackendConfig(testEnv(data.dir, env), options);
  const database = await createTestDatabase();
  const counters = testCounters();
  const app = await buildApp({
    config,
    db: database.db,
    counters,
    ...(options.host ? { host: options.host } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const running = await listen(app);
  return {
    ...running,
    config,
    database,
    async close() {
      await running.close();
      await counters.close();
      await database.close();
      data.remove();
    },
  };
}

/**
 * A local agent host under `dir` whose one runtime (`1.0.0`) is the stand-in gateway, run on this process's Node:
 * real processes, ports, config and workspaces, started in a fraction of a second (`behaviour`: e.g. a ready delay,
 * to watch an agent pass through `starting`).
 */
export async function fakeRuntimeHost(
  dir: string,
  behaviour: FakeGatewayBehaviour = {},
  options: Partial<LocalHostOptions> = {},
): Promise<LocalAgentHost> {
  return new LocalAgentHost({
    dataDir: join(dir, 'data'),
    encryptionKey: randomBytes(32),
    runtimes: { '1.0.0': await installFakeRuntime(join(dir, 'rt'), '1.0.0', behaviour) },
    nodeBin: process.execPath,
    defaultVersion: '1.0.0',
    readyPollMs: 50,
    stopTimeoutMs: 5_000,
    ...options,
  });
}

/**
 * The headers the web service sends for a user (spec §5): the internal key and the user context signed now (see
 * `userContextHeaders` of @aop/core), so a header set is good for the backend's freshness window only.
 */
export function signedCaller(
  secrets: { internalKey: string; hmacSecret: string },
  userId: string,
  email = `${userId}@example.com`,
  role = 'user',
): Record<string, string> {
  return {
    authorization: `Bearer ${secrets.internalKey}`,
    ...userContextHeaders({ userId, email, role }, secrets.hmacSecret),
  };
}

let clients = 0;
/** A distinct client address per call (the backend trusts `x-forwarded-for` from 127.0.0.1): deployments are limited to 5 per minute per address. */
export const fromAnywhere = (): Record<string, string> => ({ 'x-forwarded-for': `203.0.113.${++clients % 250}` });

/**
 * `call(userId, method, path, json?)`: a request to the backend at `url()` as the web service makes it for that user
 * (`signedCaller`), each from an address of its own (`fromAnywhere`).
 */
export function userCalls(url: () => string, secrets: { internalKey: string; hmacSecret: string }) {
  return (userId: string, method: string, path: string, json?: unknown) =>
    request(`${url()}/api${path}`, {
      method,
      headers: { ...signedCaller(secrets, userId), ...fromAnywhere() },
      ...(json === undefined ? {} : { json }),
    });
}
