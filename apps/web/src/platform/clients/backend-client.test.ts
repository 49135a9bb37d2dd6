import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendClient, BackendUnavailableError, signedUserHeaders } from './backend-client.js';

interface Seen {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage['headers'];
  body: string;
}

async function server(
  handler: (seen: Seen, res: import('node:http').ServerResponse) => void,
): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const srv: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const s = { method: req.method, url: req.url, headers: req.headers, body };
      seen.push(s);
      handler(s, res);
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((r) => srv.close(() => r())) };
}

const json = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

// Spec §5 (user-context headers) as the backend will check them, computed independently here.
describe('BackendClient', () => {
  let ok: Awaited<ReturnType<typeof server>>;
  let html: Awaited<ReturnType<typeof server>>;
  let slow: Awaited<ReturnType<typeof server>>;
  let closedUrl: string;

  beforeAll(async () => {
    ok = await server((s, res) => json(res, 201, { echoed: s.body ? JSON.parse(s.body) : null }));
    html = await server((_s, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>Bad gateway</html>');
    });
    slow = await server((_s, res) => setTimeout(() => json(res, 200, {}), 2_000));
    const closed = await server(() => {});
    closedUrl = closed.url;
    await closed.close();
  });
  afterAll(async () => {
    await ok.close();
    await html.close();
    await slow.close();
  });

  it('sends the bearer key and signs x-user-* with HMAC-SHA256 over id:email:role:ts in lowercase hex, ts = now', async () => {
    const client = new BackendClient({ baseUrls: [ok.url], internalApiKey: 'ik', userContextSecret: 'hs' });
    const before = Math.floor(Date.now() / 1000);
    const answer = await client.request('/api/deployments', { body: { agentId: 'a1' }, caller: { id: 'usr_1', email: 'a@example.com' } });
    const after = Math.floor(Date.now() / 1000);
    expect(answer).toEqual({ status: 201, body: { echoed: { agentId: 'a1' } }, baseUrl: ok.url });
    const h = ok.seen.at(-1)!.headers;
    expect(h.authorization).toBe('Bearer ik');
    expect(h['x-user-id']).toBe('usr_1');
    expect(h['x-user-email']).toBe('a@example.com');
    expect(h['x-user-role']).toBe('user');
    expect(h['x-user-ts']).toMatch(/^[0-9]+$/);
    expect(Number(h['x-user-ts'])).toBeGreaterThanOrEqual(before);
    expect(Number(h['x-user-ts'])).toBeLessThanOrEqual(after);
    const payload = `usr_1:a@example.com:user:${h['x-user-ts']}`;
    expect(h['x-user-signature']).toBe(createHmac('sha256', 'hs').update(payload).digest('hex'));
    expect(ok.seen.at(-1)!.method).toBe('POST');
  });

  it('spec §5 "User-context headers": signedUserHeaders dates the context (x-user-ts, Unix seconds) and signs the date', () => {
    const at = Date.UTC(2026, 0, 15, 12, 0, 0, 999);
    expect(signedUserHeaders({ id: 'usr_1', email: 'a@example.com', role: 'admin' }, 'hs', at)).toEqual({
      'x-user-id': 'usr_1',
      'x-user-email': 'a@example.com',
      'x-user-role': 'admin',
      'x-user-ts': '1768478400',
      'x-user-signature': createHmac('sha256', 'hs').update('usr_1:a@example.com:admin:1768478400').digest('hex'),
    });
    // No secret, no signature: the backend then checks none, and a date nothing covers would mean nothing.
    expect(signedUserHeaders({ id: 'usr_1' }, undefined, at)).toEqual({ 'x-user-id': 'usr_1', 'x-user-role': 'user' });
  });

  it('falls back to the second URL when the first gives no JSON, or is down', async () => {
    const viaHtml = new BackendClient({ baseUrls: [html.url, ok.url], internalApiKey: 'ik', userContextSecret: undefined });
    expect((await viaHtml.request('/x')).baseUrl).toBe(ok.url);
    const viaClosed = new BackendClient({ baseUrls: [closedUrl, ok.url], internalApiKey: 'ik', userContextSecret: undefined });
    expect((await viaClosed.request('/x', { query: { a: 1, b: undefined } })).baseUrl).toBe(ok.url);
    expect(ok.seen.at(-1)!.url).toBe('/x?a=1');
  });

  it('gives up with BackendUnavailableError after the timeout on every URL', async () => {
    const client = new BackendClient({ baseUrls: [slow.url, closedUrl], internalApiKey: undefined, userContextSecret: undefined });
    const started = Date.now();
    const err = await client.request('/x', { timeoutMs: 200 }).catch((e) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect(err.attempts.map((a: { reason: string }) => a.reason)[0]).toBe('timed out');
    expect(Date.now() - started).toBeLessThan(1_500);
  });
});
