import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { cookieFrom, startWeb, type TestWeb } from '../../../apps/web/src/web.test-support.js';
import { renderSdk, webOpenApiDocument } from '../../../scripts/generate-sdk.js';
import { type AgentList, type ApiErrorBody, type ApiKey, type CreatedApiKey, createClient } from './index.js';

const PASSWORD = 'correct horse battery staple';

// Issue #22: the typed SDK, against a real web service (its own database) on 127.0.0.1.
describe('@aop/sdk', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(async () => {
    await web.close();
  });

  /** Node's fetch takes any `this`; a browser's refuses all but the window (the dashboard's client runs there). */
  function browserFetch(this: unknown, request: Request): Promise<Response> {
    if (this !== undefined && this !== globalThis) throw new TypeError("Failed to execute 'fetch' on 'Window': Illegal invocation");
    return fetch(request);
  }

  /** Registers and signs in through the API with the SDK, as a script would: the session cookie it answers with. */
  async function signedIn(email = `${randomUUID()}@example.com`): Promise<string> {
    const anonymous = createClient({ baseUrl: web.url, fetch: browserFetch });
    const registered = await anonymous.POST('/api/register', { body: { email, password: PASSWORD } });
    expect(registered.response.status).toBe(200);
    // No CSRF header given: the client fetches a token first (spec §4.1 requires one on login).
    const login = await anonymous.POST('/api/auth/login', { body: { email, password: PASSWORD } });
    expect(login.error).toBeUndefined();
    expect(login.data?.ok).toBe(true);
    const cookie = cookieFrom(login.response.headers, 'service-session');
    if (!cookie) throw new Error('login set no session cookie');
    return cookie;
  }

  it('an API key created through the API lists the agents and keys, typed', async () => {
    const cookie = await signedIn();
    const asPerson = createClient({ baseUrl: web.url, headers: { cookie } });
    const created = await asPerson.POST('/api/keys', { body: { name: 'sdk test' } });
    expect(created.response.status).toBe(201);
    expectTypeOf(created.data).toEqualTypeOf<CreatedApiKey | undefined>();
    const key = created.data!.key;
    expect(key).toMatch(/^sk_/);

    const { data: session } = await asPerson.GET('/api/auth/session');
    const userId = session!.user!.id;
    const agentId = `agt_${randomUUID()}`;
    await web.database.db.kysely.insertInto('agents').values({ id: agentId, user_id: userId, name: 'Scout' }).execute();

    const aop = createClient({ baseUrl: web.url, apiKey: key });
    const agents = await aop.GET('/api/agents');
    expect(agents.error).toBeUndefined();
    expectTypeOf(agents.data).toEqualTypeOf<AgentList | undefined>();
    expect(agents.data).toMatchObject({ status: 'ok', count: 1, agents: [{ id: agentId, name: 'Scout' }] });

    const keys = await aop.GET('/api/keys');
    expectTypeOf(keys.data!.keys).toEqualTypeOf<ApiKey[]>();
    expect(keys.data!.keys.map(({ id, name }) => ({ id, name }))).toEqual([{ id: created.data!.id, name: 'sdk test' }]);
    // The list shows a preview, never the secret.
    expect(JSON.stringify(keys.data)).not.toContain(key);

    // Path parameters are filled in (and encoded) from `params.path`.
    const one = await aop.GET('/api/agents/{id}', { params: { path: { id: agentId } } });
    expect(one.response.status).toBe(200);
    expect(one.data).toMatchObject({ agent: { id: agentId, name: 'Scout' } });
  });

  it('a refused request comes back as a typed `error` with the service’s message', async () => {
    const anonymous = createClient({ baseUrl: web.url });
    const unauthorized = await anonymous.GET('/api/agents');
    expect(unauthorized.data).toBeUndefined();
    expect(unauthorized.response.status).toBe(401);
    expectTypeOf(unauthorized.error).toExtend<ApiErrorBody | undefined>();
    expectTypeOf(unauthorized.error!.error).toEqualTypeOf<string>();
    expect(unauthorized.error).toEqual({ error: 'Unauthorized' });

    // A key may not mint keys (a leaked key must never do that): 403 with the catalogue's words.
    const cookie = await signedIn();
    const { data } = await createClient({ baseUrl: web.url, headers: { cookie } }).POST('/api/keys', { body: { name: 'k' } });
    const withKey = createClient({ baseUrl: web.url, apiKey: data!.key });
    const refused = await withKey.POST('/api/keys', { body: { name: 'another' } });
    expect(refused.response.status).toBe(403);
    expect(refused.error?.error).toBe('This action needs a signed-in session, not an API key');

    const missing = await withKey.GET('/api/agents/{id}', { params: { path: { id: 'agt_nobody' } } });
    expect([missing.response.status, missing.error]).toEqual([404, { error: 'Agent not found' }]);

    // A CSRF header the caller chose is sent as it is, and a forged one is refused (the client fetches none then).
    const forged = await anonymous.POST('/api/auth/login', {
      body: { email: 'a@example.com', password: PASSWORD },
      headers: { 'x-csrf-token': 'forged' },
    });
    expect([forged.response.status, forged.error]).toEqual([403, { error: 'Invalid CSRF token' }]);
  });

  it('takes only an API key as `apiKey`', () => {
    expect(() => createClient({ baseUrl: web.url, apiKey: 'service-session=abc' })).toThrow('apiKey must be an API key: sk_…');
  });

  it('the generator takes the document the service serves and renders it deterministically', async () => {
    const served = (await (await fetch(`${web.url}/api/openapi.json`)).json()) as { paths: Record<string, object> };
    expect(await webOpenApiDocument()).toEqual(served);
    const first = await renderSdk(served);
    const again = await renderSdk(JSON.parse(JSON.stringify(served)));
    expect(again['openapi.json']).toBe(first['openapi.json']);
    expect(again['src/schema.ts']).toBe(first['src/schema.ts']);
    expect(JSON.parse(first['openapi.json'])).toEqual(served);
    // Every operation of the document is typed, its error answer included.
    const operations = Object.values(served.paths).flatMap((item) => Object.keys(item));
    expect(operations.length).toBeGreaterThan(100);
    expect(first['src/schema.ts'].split("'application/json': components['schemas']['Error'];").length - 1).toBe(operations.length);
  });
});
