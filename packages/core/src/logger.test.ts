import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryCounterStore } from './counters/memory.js';
import { DomainError } from './errors.js';
import { createServer } from './http/server.js';
import { sharedHttpPlugin } from './http/shared-http.js';
import { loggerOptions, prettyStream, redactUrl } from './logger.js';

describe('logging', () => {
  it('redacts credentials in query strings', () => {
    expect(redactUrl('/api/auth/idp/callback?code=abc&state=xyz&foo=1')).toBe(
      '/api/auth/idp/callback?code=%5Bredacted%5D&state=%5Bredacted%5D&foo=1',
    );
    expect(redactUrl('/plain')).toBe('/plain');
  });

  it('never writes authorization headers, cookies or passwords', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const log = pino(loggerOptions('info'), sink);
    log.info(
      {
        req: { headers: { authorization: 'Bearer s3cret', cookie: 'service-session=abc' } },
        body: { password: 'hunter2', apiKey: 'sk_x' },
      },
      'hello',
    );
    const out = lines.join('');
    expect(out).toContain('hello');
    for (const secret of ['s3cret', 'service-session=abc', 'hunter2', 'sk_x']) expect(out).not.toContain(secret);
  });
});

// Issue #21: one line per request; what the caller caused is a warning without a stack, our faults are errors; a
// terminal gets readable lines.
describe('request logging', () => {
  async function logged(run: (url: string) => Promise<void>): Promise<Array<Record<string, unknown>>> {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const app = createServer({ config: { logLevel: 'info', trustProxy: false }, logger: pino(loggerOptions('info'), sink) });
    await app.register(sharedHttpPlugin, {
      counters: new MemoryCounterStore(),
      openapi: { path: '/openapi.json', title: 't', description: 'd' },
    });
    app.get('/api/items/:id', async () => ({ ok: true }));
    app.get('/api/refused', async () => {
      throw new DomainError('FIELD_REQUIRED', { field: 'agentId' });
    });
    app.get('/api/not-configured', async () => {
      throw new DomainError('HOST_FULL', { detail: 'no room' });
    });
    app.get('/api/crash', async () => {
      throw new Error('a bug of ours');
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      await run(url);
    } finally {
      await app.close();
    }
    return lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => !String(line.msg).startsWith('Server listening'));
  }

  it('writes one line per answered request: method, path (credentials redacted), status and time', async () => {
    const lines = await logged(async (url) => {
      expect((await fetch(`${url}/api/items/itm_1?token=s3cret&x=1`)).status).toBe(200);
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, res: { statusCode: 200 }, req: { method: 'GET' } });
    expect(lines[0]!.msg).toMatch(/^GET \/api\/items\/itm_1\?token=%5Bredacted%5D&x=1 200 \d+(\.\d)? ms$/);
    expect(JSON.stringify(lines)).not.toContain('s3cret');
  });

  it('logs a refused request and a catalogued 503 at warn without a stack, an unexpected error at error with it', async () => {
    const lines = await logged(async (url) => {
      expect((await fetch(`${url}/api/refused`)).status).toBe(400);
      expect((await fetch(`${url}/api/not-configured`)).status).toBe(503);
      expect((await fetch(`${url}/api/crash`)).status).toBe(500);
    });
    const [refused, notConfigured, crash] = lines.filter((line) => line.msg === 'request refused' || line.msg === 'request failed');
    expect(refused).toMatchObject({ level: 40, status: 400, error: 'agentId is required' });
    expect(notConfigured).toMatchObject({ level: 40, status: 503 });
    for (const line of [refused, notConfigured]) expect(line).not.toHaveProperty('err');
    expect(crash).toMatchObject({ level: 50, err: { message: 'a bug of ours', stack: expect.stringContaining('Error: a bug of ours') } });
  });

  it('pretty: one readable line per event, request fields folded into its message', () => {
    expect(loggerOptions('info', 'pretty').stream).toBeDefined();
    expect(loggerOptions('info', 'json').stream).toBeUndefined();
    const written: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        written.push(String(chunk));
        cb();
      },
    });
    const log = pino(loggerOptions('info'), prettyStream(sink));
    log.info({ req: { method: 'GET', url: '/api/x' }, res: { statusCode: 200 }, responseTime: 3, reqId: 'req_1' }, 'GET /api/x 200 3.0 ms');
    log.warn({ status: 400, error: 'agentId is required' }, 'request refused');
    const lines = written.join('').trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: GET \/api\/x 200 3\.0 ms$/);
    expect(lines[1]).toMatch(/^\[\d\d:\d\d:\d\d\] WARN: request refused \{"status":400,"error":"agentId is required"\}$/);
  });
});
