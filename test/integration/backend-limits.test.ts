import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalAgentHost } from '@aop/provisioner';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

// Spec §8: the backend's general limit is 120 requests a minute per client IP. Nearly every backend call is the web's,
// made for a browser: each carries that browser's address, so one client's busy minute is counted against it alone,
// not against the web service that every user shares (as `npm start` sets it up: the backend trusts the web's address).

const SHARED = {
  INTERNAL_API_KEY: 'internal-key-for-backend-limits',
  HMAC_SECRET: 'hmac-secret-for-backend-limits',
  TRUST_PROXY: '127.0.0.1',
};

describe("the backend's per-client limit, for calls the web makes on a browser's behalf", () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  const users: Array<{ cookie: string; agentId: string; ip: string }> = [];

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-backend-limits-'));
    host = await fakeRuntimeHost(work, { gatewayProtocol: true });
    backend = await startBackend(SHARED, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url });
    for (const ip of ['198.51.100.7', '198.51.100.8']) {
      const { cookie } = await web.signIn({ plan: 'pro' });
      const res = await request(`${web.url}/api/provision`, {
        json: { name: 'Limited', autoProvision: true },
        headers: { cookie, 'x-forwarded-for': ip },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      await host.waitUntilReady(res.body.agentId, { timeoutMs: 10_000 });
      users.push({ cookie, agentId: res.body.agentId, ip });
    }
  }, 60_000);
  afterAll(async () => {
    await web?.close();
    await backend?.close();
    await host?.shutdown();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** One web call that makes one backend call (the agent's gateway token), from the user's address. */
  const listJobs = (user: { cookie: string; agentId: string; ip: string }) =>
    request(`${web.url}/api/cron?agentId=${user.agentId}`, { headers: { cookie: user.cookie, 'x-forwarded-for': user.ip } });

  it("one browser's busy minute uses up its own budget, said as the backend's 429, and nobody else's", async () => {
    const [busy, other] = users as [(typeof users)[0], (typeof users)[0]];
    let refused: { status: number; body: any } | null = null;
    // Provisioning made a few backend calls from that address too: the limit comes within 120 of these.
    for (let i = 0; i < 121 && !refused; i += 1) {
      const res = await listJobs(busy);
      if (res.status !== 200) refused = res;
      else expect(res.body.source).toBe('gateway');
    }
    // Said as what it is, not as "No gateway token available".
    expect(refused).toMatchObject({ status: 429, body: { error: 'Too many requests, please slow down.' } });
    // The other browser's calls are its own: answered from its agent's gateway.
    const theirs = await listJobs(other);
    expect(theirs.status, JSON.stringify(theirs.body)).toBe(200);
    expect(theirs.body).toMatchObject({ source: 'gateway', jobs: [] });
  }, 120_000);
});
