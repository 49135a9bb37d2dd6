import { createServer } from 'node:http';
import { join } from 'node:path';
import { request, startFakeDockerEngine, tempDataDir } from '@aop/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackend } from '../../backend.test-support.js';

// Spec §4.10: GET {backend_url}/health, no auth, always 200.
describe('GET /health (backend)', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('reports docker unavailable and provisioning disabled when neither is reachable', async () => {
    const dir = tempDataDir();
    cleanups.push(dir.remove);
    const backend = await startBackend({ DOCKER_SOCKET: join(dir.dir, 'no-docker.sock'), PROVISIONER: 'docker' });
    cleanups.push(backend.close);
    const res = await request(`${backend.url}/health`);
    expect(res.status).toBe(200);
    // `provider` is the one in use (issue #21): the spec's `render` is the hosting provider, asserted below.
    expect(res.body).toMatchObject({ status: 'ok', docker: 'unavailable', provisioning: 'disabled', provider: 'docker' });
    expect(new Date(res.body.timestamp).toISOString()).toBe(res.body.timestamp);
  });

  it('reports docker available and provisioning enabled against a Docker engine socket', async () => {
    const dir = tempDataDir();
    cleanups.push(dir.remove);
    const socket = join(dir.dir, 'docker.sock');
    const engine = await startFakeDockerEngine(socket);
    cleanups.push(engine.close);
    const backend = await startBackend({ DOCKER_SOCKET: socket, PROVISIONER: 'docker' });
    cleanups.push(backend.close);
    const res = await request(`${backend.url}/health`);
    expect(res.body).toMatchObject({ docker: 'available', provisioning: 'enabled', provisioner: 'docker' });
    expect(engine.pings()).toBeGreaterThanOrEqual(1);
  });

  it('checks the hosting API for real: enabled when it answers, disabled on a closed port', async () => {
    const hosting = createServer((req, res) => {
      res.writeHead(req.headers.authorization === 'Bearer hosting-key' ? 200 : 401, { 'content-type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((r) => hosting.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => hosting.close(() => r())));
    const port = (hosting.address() as { port: number }).port;

    const up = await startBackend({ PROVISIONER: 'hosting', HOSTING_API_URL: `http://127.0.0.1:${port}/`, HOSTING_API_KEY: 'hosting-key' });
    cleanups.push(up.close);
    expect((await request(`${up.url}/health`)).body).toMatchObject({ provisioning: 'enabled', provider: 'render', provisioner: 'hosting' });

    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const down = await startBackend({ PROVISIONER: 'hosting', HOSTING_API_URL: `http://127.0.0.1:${closedPort}/`, HOSTING_API_KEY: 'k' });
    cleanups.push(down.close);
    const res = await request(`${down.url}/health`);
    expect(res.status).toBe(200);
    expect(res.body.provisioning).toBe('disabled');
  });

  it('serves its OpenAPI document', async () => {
    const backend = await startBackend();
    cleanups.push(backend.close);
    const res = await request(`${backend.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(Object.keys(res.body.paths)).toContain('/health');
  });
});
