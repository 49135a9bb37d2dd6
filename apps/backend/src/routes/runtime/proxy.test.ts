import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startBackend, type TestBackend, signedCaller } from '../../backend.test-support.js';

const KEY = 'internal-key-for-proxy-tests';
const HMAC = 'hmac-secret-for-proxy-tests';

/** Headers the web service sends for a user (spec §5). */
const as = (userId: string, email?: string, role?: string) => signedCaller({ internalKey: KEY, hmacSecret: HMAC }, userId, email, role);

/** Opens a WebSocket and collects its first `count` messages, or the HTTP status of a refused upgrade. */
function wsExchange(url: string, headers: Record<string, string>, send: string[] = [], count = 1) {
  return new Promise<{ messages: string[] } | { status: number; body: string }>((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const messages: string[] = [];
    ws.on('open', () => {
      for (const m of send) ws.send(m);
    });
    ws.on('message', (data) => {
      messages.push(data.toString());
      if (messages.length === count) {
        ws.close();
        resolve({ messages });
      }
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('error', reject);
  });
}

// Spec §4.18 Runtime (backend): ALL /api/runtime/proxy/:agentId/* for HTTP and WebSocket; §5 internal key + user context.
describe('runtime proxy to an agent gateway', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let token: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-proxy-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, ADMIN_EMAILS: 'ops@example.com' }, { host });
    const res = await request(`${backend.url}/api/deployments`, {
      headers: as('usr_owner'),
      json: { agentId: 'agt_proxy', name: 'Proxy', config: { telegramToken: 'tg-token', plan: 'solo' } },
    });
    expect(res.status).toBe(201);
    await host.waitUntilReady('agt_proxy', { timeoutMs: 10_000 });
    token = (await request(`${backend.url}/api/agents/agt_proxy/token`, { headers: as('usr_owner') })).body.token;
  });
  afterAll(async () => {
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  const proxied = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
    fetch(`${backend.url}/api/runtime/proxy/agt_proxy${path}`, { ...init, headers: { ...as('usr_owner'), ...init.headers } });

  it('forwards method, path, query and body, with the gateway token instead of the caller credentials', async () => {
    const res = await proxied('/echo/deep?x=1&y=two', {
      method: 'POST',
      headers: { 'content-type': 'text/plain', cookie: 'service-session=abc' },
      body: 'raw body, not JSON',
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      method: 'POST',
      url: '/echo/deep?x=1&y=two',
      authorization: `Bearer ${token}`,
      contentType: 'text/plain',
      cookie: null,
      body: 'raw body, not JSON',
    });
  });

  it('passes the gateway answer through: probes and upstream 404s', async () => {
    const ready = await proxied('/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ready: true, failing: [] });
    const missing = await proxied('/no-such-path');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'not found' });
  });

  it('needs the internal key, a signed context, and an owner (or an administrator)', async () => {
    const noKey = await fetch(`${backend.url}/api/runtime/proxy/agt_proxy/healthz`, { headers: { ...as('usr_owner'), authorization: '' } });
    expect(noKey.status).toBe(401);
    const wrongKey = await fetch(`${backend.url}/api/runtime/proxy/agt_proxy/healthz`, {
      headers: { ...as('usr_owner'), authorization: 'Bearer wrong-key-of-some-length' },
    });
    expect(wrongKey.status).toBe(403);
    const forged = await fetch(`${backend.url}/api/runtime/proxy/agt_proxy/healthz`, {
      headers: { ...as('usr_owner'), 'x-user-id': 'usr_x' },
    });
    expect(forged.status).toBe(401);
    expect(await forged.json()).toEqual({ error: 'INVALID_SIGNATURE' });

    const stranger = await fetch(`${backend.url}/api/runtime/proxy/agt_proxy/echo`, { headers: as('usr_other') });
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toEqual({ error: 'Agent not found' });
    const admin = await fetch(`${backend.url}/api/runtime/proxy/agt_proxy/echo`, { headers: as('usr_ops', 'ops@example.com') });
    expect(admin.status).toBe(200);
    const unknown = await fetch(`${backend.url}/api/runtime/proxy/agt_nope/echo`, { headers: as('usr_owner') });
    expect(unknown.status).toBe(404);
  });

  it('refuses bodies over 1 MB', async () => {
    const res = await proxied('/echo', {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: 'x'.repeat(1_100_000),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: 'Request body too large' });
  });

  it('carries WebSocket traffic both ways, with the same authentication', async () => {
    const wsUrl = `${backend.url.replace(/^http/, 'ws')}/api/runtime/proxy/agt_proxy/ws?client=test`;
    const ok = await wsExchange(wsUrl, as('usr_owner'), ['hello'], 2);
    expect(ok).toEqual({
      messages: [JSON.stringify({ url: '/ws?client=test', authorization: `Bearer ${token}` }), 'echo:hello'],
    });

    const stranger = await wsExchange(wsUrl, as('usr_other'));
    expect(stranger).toEqual({ status: 404, body: JSON.stringify({ error: 'Agent not found' }) });
    const noKey = await wsExchange(wsUrl, { ...as('usr_owner'), authorization: '' });
    expect(noKey).toMatchObject({ status: 401 });
  });

  it('answers 503 while the agent is stopped', async () => {
    await host.stop('agt_proxy');
    try {
      const res = await proxied('/healthz');
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toMatch(/^Agent is not running/);
    } finally {
      await host.start('agt_proxy');
      await host.waitUntilReady('agt_proxy', { timeoutMs: 10_000 });
    }
  });
});
