import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { announceWhenReady } from '../../scripts/ready-banner.mjs';

// Issue #21: `npm start` prints one banner, once all three services answer — the backend included — and names the
// ones that never do.
describe('npm start: the ready banner', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
  });

  async function healthServer(answer: () => number): Promise<string> {
    const server = createServer((_req, res) => {
      res.writeHead(answer(), { 'content-type': 'application/json' }).end('{"status":"ok"}');
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`;
  }

  it('waits for the backend: nothing is printed while it does not answer, the banner once it does', async () => {
    let backendUp = false;
    const checks = {
      web: await healthServer(() => 200),
      backend: await healthServer(() => (backendUp ? 200 : 503)),
      summarizer: await healthServer(() => 200),
    };
    const written: string[] = [];
    const done = announceWhenReady({
      checks,
      rows: async () => [
        ['dashboard', 'http://127.0.0.1:3000/'],
        ['agents', 'OpenClaw installed'],
      ],
      write: (text: string) => written.push(text),
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(written).toEqual([]);
    backendUp = true;
    expect(await done).toBe(true);
    expect(written).toHaveLength(1);
    expect(written[0]).toContain('The platform is ready.');
    expect(written[0]).toContain('  dashboard  http://127.0.0.1:3000/\n');
    expect(written[0]).toContain('  agents     OpenClaw installed\n');
  });

  it('names the service that never answered, and prints no banner', async () => {
    const checks = { web: await healthServer(() => 200), backend: 'http://127.0.0.1:9/health', summarizer: await healthServer(() => 200) };
    const written: string[] = [];
    const shown = await announceWhenReady({ checks, rows: async () => [], timeoutMs: 600, write: (text: string) => written.push(text) });
    expect(shown).toBe(false);
    expect(written.join('')).toMatch(/Still not answering after 1 s: backend \(see the log above\)/);
    expect(written.join('')).not.toContain('ready');
  });
});
