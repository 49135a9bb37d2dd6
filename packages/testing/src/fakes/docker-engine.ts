import { createServer, type Server } from 'node:http';
import { rmSync } from 'node:fs';

/**
 * A Docker engine API on a unix socket, answering what the health check asks:
 * `GET /_ping` → `OK`, as the real engine does.
 */
export async function startFakeDockerEngine(socketPath: string): Promise<{ close(): Promise<void>; pings: () => number }> {
  let pings = 0;
  rmSync(socketPath, { force: true });
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/_ping' || /^\/v[\d.]+\/_ping$/.test(req.url ?? ''))) {
      pings += 1;
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'api-version': '1.47' });
      res.end('OK');
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: 'page not found' }));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    pings: () => pings,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
