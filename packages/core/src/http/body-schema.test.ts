import { listen, type RunningService, request } from '@aop/testing';
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCounterStore } from '../counters/memory.js';
import { invalidAs, orNull, refuse } from '../request-schema.js';
import { createServer } from './server.js';
import { sharedHttpPlugin } from './shared-http.js';

const SkillBody = Type.Object({
  name: Type.String({ pattern: '^[a-z0-9-]{1,64}$', ...invalidAs(refuse('INVALID_SKILL_NAME')) }),
  description: Type.Optional(
    orNull(
      Type.String({
        maxLength: 10,
        ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'description' }), {
          maxLength: refuse('FIELD_TOO_LONG', { field: 'description', max: 10 }),
        }),
      }),
    ),
  ),
  enabled: Type.Optional(Type.Boolean(invalidAs(refuse('FIELD_NOT_BOOLEAN', { field: 'enabled' })))),
  config: Type.Optional(Type.Object({ depth: Type.Integer() }, invalidAs(refuse('CONFIG_OBJECT')))),
  unnamed: Type.Optional(Type.Integer()),
});

describe('request bodies: TypeBox schemas that answer with the catalogue (spec §7 error shape)', () => {
  let svc: RunningService;
  beforeAll(async () => {
    const app = createServer({ config: { logLevel: 'silent', trustProxy: false } });
    await app.register(sharedHttpPlugin, {
      counters: new MemoryCounterStore(),
      openapi: { path: '/openapi.json', title: 't', description: 'd' },
    });
    app.post('/skills', { config: { invalidBody: 'INVALID_REQUEST_BODY' }, schema: { body: SkillBody } }, async (req) => ({
      got: req.body,
    }));
    app.get('/items', { schema: { querystring: Type.Object({ limit: Type.Integer() }) } }, async (req) => ({ query: req.query }));
    svc = await listen(app);
  });
  afterAll(async () => svc.close());

  const post = (body: unknown) => request(`${svc.url}/skills`, { json: body });

  it('a valid body passes as sent, null where the schema allows it', async () => {
    const res = await post({ name: 'web-search', description: null, enabled: false, config: { depth: 2 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ got: { name: 'web-search', description: null, enabled: false, config: { depth: 2 } } });
  });

  it.each([
    [{ name: 'Not A Name' }, 'Invalid skill name'],
    [{ name: 42 }, 'Invalid skill name'],
    [{}, 'Invalid skill name'],
    [{ name: 'ok', description: 5 }, 'description must be a string'],
    [{ name: 'ok', description: 'x'.repeat(11) }, 'description must be at most 10 characters'],
    // Lengths count UTF-16 units, like String.length: 9 letters and an emoji are 11.
    [{ name: 'ok', description: `${'x'.repeat(9)}😀` }, 'description must be at most 10 characters'],
    [{ name: 'ok', enabled: 'true' }, 'enabled must be a boolean'],
    [{ name: 'ok', enabled: null }, 'enabled must be a boolean'],
    [{ name: 'ok', config: [] }, 'config must be an object'],
    [{ name: 'ok', config: { depth: 'deep' } }, 'config must be an object'],
    [{ name: 'ok', unnamed: 'x' }, 'Invalid request body'],
    [[], 'Invalid request body'],
  ])('%j → 400 with the field’s own message', async (body, message) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: message });
  });

  it('a JSON body is not coerced (a "true" stays a string), a query string still is', async () => {
    expect((await post({ name: 'ok', enabled: 'true' })).status).toBe(400);
    const res = await request(`${svc.url}/items?limit=5`);
    expect(res.body).toEqual({ query: { limit: 5 } });
  });

  it('the OpenAPI document tells clients each field, and the error it answers with', async () => {
    const doc = (await request(`${svc.url}/openapi.json`)).body as {
      paths: Record<string, { post: { requestBody: { content: Record<string, { schema: { properties: Record<string, unknown> } }> } } }>;
    };
    const properties = doc.paths['/skills']?.post.requestBody.content['application/json']?.schema.properties;
    expect(properties?.enabled).toMatchObject({ type: 'boolean', 'x-error': { code: 'FIELD_NOT_BOOLEAN' } });
    expect(properties?.description).toMatchObject({ type: ['string', 'null'], maxLength: 10 });
  });
});
