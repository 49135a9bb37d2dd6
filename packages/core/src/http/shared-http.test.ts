import { listen, request, type RunningService } from '@aop/testing';
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCounterStore } from '../counters/memory.js';
import { HttpError } from '../errors.js';
import { refuse } from '../request-schema.js';
import { createServer } from './server.js';
import { sharedHttpPlugin } from './shared-http.js';

async function start(trustProxy: boolean | string[]): Promise<RunningService> {
  const app = createServer({ config: { logLevel: 'silent', trustProxy } });
  await app.register(sharedHttpPlugin, {
    counters: new MemoryCounterStore(),
    openapi: { path: '/openapi.json', title: 't', description: 'd' },
  });
  app.post(
    '/api/config',
    { config: { invalidBody: 'INVALID_REQUEST_BODY' }, schema: { body: Type.Object({ config: Type.Object({}) }) } },
    async (req) => ({ got: req.body }),
  );
  // A code with values, and one whose own status is not 400: a bad body answers 400 with its message either way.
  const Named = { schema: { body: Type.Object({ agentId: Type.String() }) } };
  app.post('/api/named', { ...Named, config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'agentId' }) } }, async () => ({}));
  app.post('/api/named-401', { ...Named, config: { invalidBody: 'MISSING_SESSION_TOKEN' } }, async () => ({}));
  app.post('/api/echo', async (req) => ({ body: req.body ?? null }));
  app.get('/api/items/:id', async (req) => ({ params: req.params, query: req.query }));
  app.get('/api/ip', async (req) => ({ ip: req.ip }));
  app.get(
    '/api/typed-401',
    { schema: { response: { 401: Type.Object({ valid: Type.Literal(false) }, { required: ['valid'] }) } } },
    async () => {
      throw new HttpError(401, 'Unauthorized');
    },
  );
  app.get('/api/teapot', async () => {
    throw new HttpError(418, 'short and stout', { hint: 'tip me over' });
  });
  app.get('/api/crash', async () => {
    throw new Error('database password is hunter2');
  });
  app.get(
    '/api/limited',
    { onRequest: app.rateLimit({ name: 't', max: 2, windowMs: 60_000, message: 'Too many requests' }) },
    async () => ({ ok: true }),
  );
  return listen(app);
}

// Spec §4 conventions, §7 error shape, §8 body limit and rate headers.
describe('shared HTTP rules', () => {
  let svc: RunningService;
  let proxied: RunningService;
  beforeAll(async () => {
    svc = await start(false);
    proxied = await start(['127.0.0.1']);
  });
  afterAll(async () => {
    await svc.close();
    await proxied.close();
  });

  it('a route’s invalidBody names the catalogue message of a body that is not JSON or not the object it needs, always 400', async () => {
    const text = { body: 'agentId=a', headers: { 'content-type': 'text/plain' } };
    for (const [path, error] of [
      ['/api/named', 'agentId is required'],
      ['/api/named-401', 'Missing session token'],
    ]) {
      for (const init of [text, { json: [1] }, { json: { agentId: 7 } }, { body: '{', headers: { 'content-type': 'application/json' } }]) {
        const res = await request(`${svc.url}${path}`, { method: 'POST', ...init });
        expect([path, init, res.status, res.body]).toEqual([path, init, 400, { error }]);
      }
    }
    // Without one: `Invalid request body` for text that is not JSON, Ajv's own words for a failing keyword.
    const bare = await request(`${svc.url}/api/echo`, { body: '{', headers: { 'content-type': 'application/json' } });
    expect([bare.status, bare.body]).toEqual([400, { error: 'Invalid request body' }]);
  });

  it('413 { error: "Request body too large" } over 1 MB', async () => {
    const big = JSON.stringify({ config: { blob: 'x'.repeat(1_048_576) } });
    const res = await request(`${svc.url}/api/config`, { body: big, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: 'Request body too large' });
  });

  it('accepts a body just under 1 MB', async () => {
    const body = JSON.stringify({ config: { blob: 'x'.repeat(1_048_576 - 100) } });
    const res = await request(`${svc.url}/api/config`, { body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
  });

  it.each([
    ['malformed JSON', '{"config": ', 'application/json'],
    ['text/plain', '{"config": {}}', 'text/plain'],
    ['a form', 'config=1', 'application/x-www-form-urlencoded'],
    ['no content type', '{"config": {}}', undefined],
  ])('400 with the route’s message for %s', async (_name, body, type) => {
    const res = await request(`${svc.url}/api/config`, { body, headers: type ? { 'content-type': type } : {} });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'Invalid request body' });
  });

  it('400 with the route’s message when the JSON has the wrong shape', async () => {
    const res = await request(`${svc.url}/api/config`, { json: { config: 'not an object' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'Invalid request body' });
  });

  it('treats an empty JSON body as no body', async () => {
    const res = await request(`${svc.url}/api/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ body: null });
  });

  it('refuses prototype pollution in JSON bodies', async () => {
    const res = await request(`${svc.url}/api/echo`, {
      body: '{"__proto__": {"admin": true}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
  });

  describe('characters Postgres refuses (U+0000; half a surrogate pair in jsonb): 400 { error: "Invalid characters in request" }, §7 error shape', () => {
    const refused = { status: 400, body: { error: 'Invalid characters in request' } };
    const echo = (body: string) => request(`${svc.url}/api/echo`, { body, headers: { 'content-type': 'application/json' } });

    it.each([
      ['a path parameter', '/api/items/%00'],
      ['the middle of a path parameter', '/api/items/a%00b'],
      ['a query value', '/api/items/1?q=a%00'],
      ['a query key', '/api/items/1?%00=1'],
      ['an unknown path', '/api/nope/%00'],
    ])('in %s', async (_where, path) => {
      const res = await request(`${svc.url}${path}`);
      expect({ status: res.status, body: res.body }).toEqual(refused);
    });

    it.each([
      ['a string value', '{"name": "a\\u0000b"}'],
      ['an object key', '{"a\\u0000": 1}'],
      ['a string deep in arrays and objects', '{"a": [1, {"b": ["ok", "\\u0000"]}]}'],
      ['a string after an escaped backslash', '{"a": "\\\\\\u0000"}'],
      ['a lone high surrogate (jsonb refuses it)', '{"a": "x\\ud800y"}'],
      ['a lone low surrogate', '{"a": "\\udc00"}'],
      ['a high surrogate at the end of a string', '{"a": "\\uD83D"}'],
    ])('in %s of a JSON body', async (_where, body) => {
      const res = await echo(body);
      expect({ status: res.status, body: res.body }).toEqual(refused);
    });

    it('accepts the text \\u0000 after an escaped backslash, surrogate pairs, and ids and queries without NUL', async () => {
      const literal = await echo('{"a": "\\\\u0000"}');
      expect({ status: literal.status, body: literal.body }).toEqual({ status: 200, body: { body: { a: '\\u0000' } } });
      const pair = await echo('{"a": "\\ud83d\\udca5 \\u00e9"}');
      expect({ status: pair.status, body: pair.body }).toEqual({ status: 200, body: { body: { a: '💥 é' } } });
      const plain = await request(`${svc.url}/api/items/a%20b?q=%0a`);
      expect({ status: plain.status, body: plain.body }).toEqual({ status: 200, body: { params: { id: 'a b' }, query: { q: '\n' } } });
    });

    it('malformed JSON that also holds a NUL keeps the route’s body message', async () => {
      const res = await request(`${svc.url}/api/config`, { body: '{"config": "\\u0000', headers: { 'content-type': 'application/json' } });
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'Invalid request body' } });
    });
  });

  describe('JSON nesting: at most 64 levels, else 400 { error: "Request body nested too deeply" }, §7 error shape', () => {
    const nested = (levels: number, open = '[', close = ']') => open.repeat(levels) + close.repeat(levels);
    const echo = (body: string) => request(`${svc.url}/api/echo`, { body, headers: { 'content-type': 'application/json' } });

    it.each([
      ['65 arrays', nested(65)],
      ['65 objects', `${'{"a":'.repeat(65)}1${'}'.repeat(65)}`],
      ['3,000 arrays', nested(3_000)],
      ['3,000 open arrays, never closed', '['.repeat(3_000)],
    ])('refuses %s', async (_name, body) => {
      const res = await echo(body);
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'Request body nested too deeply' } });
    });

    it('accepts 64 levels, and brackets inside strings do not count', async () => {
      const deep = await echo(nested(64));
      expect(deep.status).toBe(200);
      const text = await echo(JSON.stringify({ s: `${'['.repeat(100)}"\\{{{`, t: '{'.repeat(100) }));
      expect(text.status).toBe(200);
    });
  });

  it('400 { error: "Invalid URL" } for a path with broken percent-encoding, §7 error shape', async () => {
    const res = await request(`${svc.url}/api/items/%E0%A4%A`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'Invalid URL' });
  });

  it('404 { error: "Not found" } for unknown routes', async () => {
    const res = await request(`${svc.url}/api/nope`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Not found' });
  });

  it('HttpError becomes { error, ...extra } with its status', async () => {
    const res = await request(`${svc.url}/api/teapot`);
    expect(res.status).toBe(418);
    expect(res.body).toEqual({ error: 'short and stout', hint: 'tip me over' });
  });

  it('an error keeps its { error } body even where the route declares another shape for that status', async () => {
    const res = await request(`${svc.url}/api/typed-401`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'Unauthorized' });
  });

  it('the OpenAPI document gives every operation the error shape as its default answer, keeping the route’s own', async () => {
    const { body: doc } = await request(`${svc.url}/openapi.json`);
    expect(doc.components.schemas.Error).toMatchObject({ required: ['error'], properties: { error: { type: 'string' } } });
    const error = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    expect(doc.paths['/api/teapot'].get.responses.default).toMatchObject(error);
    expect(doc.paths['/api/config'].post.responses.default).toMatchObject(error);
    // A route's declared 401 stays what it says (the document describes it; the error handler still answers `{ error }`).
    expect(doc.paths['/api/typed-401'].get.responses['401'].content['application/json'].schema).toMatchObject({ required: ['valid'] });
    expect(doc.paths['/api/typed-401'].get.responses.default).toMatchObject(error);
  });

  it('an unexpected error is a generic 500: no message, no stack', async () => {
    const res = await request(`${svc.url}/api/crash`);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'Internal server error' });
    expect(res.text).not.toContain('hunter2');
  });

  it('every answer carries a request id, kept from a well-formed incoming one', async () => {
    const fresh = await request(`${svc.url}/api/ip`);
    expect(fresh.headers.get('x-request-id')).toMatch(/^req_/);
    const kept = await request(`${svc.url}/api/ip`, { headers: { 'x-request-id': 'trace-123' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-123');
    const junk = await request(`${svc.url}/api/ip`, { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(junk.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('sends security headers', async () => {
    const res = await request(`${svc.url}/api/ip`);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
  });

  it('ignores X-Forwarded-For unless TRUST_PROXY names the proxy', async () => {
    const spoof = { 'x-forwarded-for': '203.0.113.9' };
    expect((await request(`${svc.url}/api/ip`, { headers: spoof })).body.ip).toBe('127.0.0.1');
    expect((await request(`${proxied.url}/api/ip`, { headers: spoof })).body.ip).toBe('203.0.113.9');
  });

  it('rate limits with RateLimit-* headers only, then 429 with the rule’s message', async () => {
    const a = await request(`${svc.url}/api/limited`);
    expect(a.headers.get('ratelimit-limit')).toBe('2');
    expect(a.headers.get('ratelimit-remaining')).toBe('1');
    expect([...a.headers.keys()].some((k) => k.startsWith('x-ratelimit'))).toBe(false);
    await request(`${svc.url}/api/limited`);
    const c = await request(`${svc.url}/api/limited`);
    expect(c.status).toBe(429);
    expect(c.body).toEqual({ error: 'Too many requests' });
  });
});
