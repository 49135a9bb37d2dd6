import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { userContextHeaders } from '@aop/core';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { type TestResponse, request } from '@aop/testing';
import { type TestBackend, startBackend } from '../backend.test-support.js';

export const TEST_KEY = 'internal-key-for-agent-access-tests';
export const TEST_HMAC = 'hmac-secret-for-agent-access-tests';

/** Headers the web service sends for a user (spec §5). */
export function userHeaders(userId: string, email = `${userId}@example.com`): Record<string, string> {
  return {
    authorization: `Bearer ${TEST_KEY}`,
    ...userContextHeaders({ userId, email }, TEST_HMAC),
  };
}

export interface LocalAgents {
  work: string;
  host: LocalAgentHost;
  backend: TestBackend;
  /** A request as `userId` (each from its own address, so the per-IP limits stay out of the way). */
  call<T = any>(userId: string, method: string, path: string, json?: unknown): Promise<TestResponse<T>>;
  /** Deploys an agent for `userId` (no channel token) and waits until its gateway is ready. */
  deploy(userId: string, agentId: string): Promise<void>;
  close(): Promise<void>;
}

/** A backend on the real local provider, whose gateways are the stand-in OpenClaw of `fake-gateway.test-support`. */
export async function startLocalAgents(prefix: string): Promise<LocalAgents> {
  const work = await mkdtemp(join(tmpdir(), prefix));
  const host = new LocalAgentHost({
    dataDir: join(work, 'data'),
    encryptionKey: randomBytes(32),
    runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt-1.0.0'), '1.0.0') },
    defaultVersion: '1.0.0',
    readyPollMs: 50,
    readyTimeoutMs: 10_000,
    stopTimeoutMs: 5_000,
  });
  const backend = await startBackend({ INTERNAL_API_KEY: TEST_KEY, HMAC_SECRET: TEST_HMAC, TRUST_PROXY: '127.0.0.1' }, { host });
  let client = 0;
  const call = <T>(userId: string, method: string, path: string, json?: unknown) =>
    request<T>(`${backend.url}/api${path}`, {
      method,
      headers: { ...userHeaders(userId), 'x-forwarded-for': `198.51.100.${(++client % 250) + 1}` },
      ...(json === undefined ? {} : { json }),
    });
  return {
    work,
    host,
    backend,
    call,
    async deploy(userId, agentId) {
      const res = await call(userId, 'POST', '/deployments', {
        agentId,
        name: agentId,
        config: { autoProvision: true, plan: 'collective' },
      });
      if (res.status !== 201) throw new Error(`deploy ${agentId}: ${res.status} ${res.text}`);
      await host.waitUntilReady(agentId, { timeoutMs: 10_000 });
    },
    async close() {
      await backend.close();
      await host.shutdown();
      await rm(work, { recursive: true, force: true });
    },
  };
}
