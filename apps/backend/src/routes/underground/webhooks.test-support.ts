import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A recipient agent's webhook: records every POST; `failuresLeft` answers fail with `failStatus` first. */
export interface Hook {
  seen: { headers: IncomingHttpHeaders; raw: string }[];
  delivered: { headers: IncomingHttpHeaders; raw: string; body: any }[];
  failuresLeft: number;
  failStatus: number;
}

/** Recipient webhooks on 127.0.0.1, one path per name (`/hooks/<name>`), standing in for agents' bus endpoints. */
export async function startWebhookServer() {
  const hooks = new Map<string, Hook>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const hook = hooks.get((req.url ?? '').replace(/^\/hooks\//, ''));
      if (!hook) return res.writeHead(404).end();
      hook.seen.push({ headers: req.headers, raw });
      if (hook.failuresLeft > 0) {
        hook.failuresLeft -= 1;
        return res.writeHead(hook.failStatus, { 'content-type': 'text/plain' }).end('not now');
      }
      hook.delivered.push({ headers: req.headers, raw, body: JSON.parse(raw) });
      return res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    hook(name: string, failuresLeft = 0, failStatus = 503) {
      const hook: Hook = { seen: [], delivered: [], failuresLeft, failStatus };
      hooks.set(name, hook);
      return { url: `${base}/${name}`, hook };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
