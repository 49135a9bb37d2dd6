import createFetchClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths } from './schema.js';

/** The HTTP methods the web service's routes answer. */
export type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';

/** The paths (templates such as `/api/agents/{id}`) that answer `method`. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: [NonNullable<paths[P][M]>] extends [never] ? never : P;
}[keyof paths];

type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type SuccessStatus = 200 | 201 | 202 | 203 | 204 | 206;
type JsonOf<R> = R extends { content: { 'application/json': infer T } } ? T : unknown;
type Responses<P extends keyof paths, M extends Method> = Operation<P, M> extends { responses: infer R } ? R : never;

/** The JSON body of a successful answer to `method path` (any of its 2xx answers): `ApiResponse<'/api/agents'>`. */
export type ApiResponse<P extends PathsWith<M>, M extends Method = 'get'> = JsonOf<
  Responses<P, M>[Extract<keyof Responses<P, M>, SuccessStatus>]
>;

/** The JSON body `method path` takes: `ApiRequestBody<'/api/keys', 'post'>`. */
export type ApiRequestBody<P extends PathsWith<M>, M extends Method> =
  Operation<P, M> extends {
    requestBody?: { content: { 'application/json': infer B } };
  }
    ? B
    : never;

/** The parameters of `method path` as a call's `params` takes them (`path`, `query`, `header`): `ApiParams<'/api/cron'>`. */
export type ApiParams<P extends PathsWith<M>, M extends Method = 'get'> = Operation<P, M>['parameters'];

/** Every error answer: `{ "error": message }`, some with more fields (the `error` of a refused request). */
export type ApiErrorBody = components['schemas']['Error'];

/** `GET /api/agents`: the caller's agents. */
export type AgentList = ApiResponse<'/api/agents'>;
export type Agent = AgentList['agents'][number];
/** `GET /api/agents/{id}`: one agent's record and state. */
export type AgentDetails = ApiResponse<'/api/agents/{id}'>;
/** `GET /api/keys`: the caller's API keys (previews, never the secrets). */
export type ApiKey = ApiResponse<'/api/keys'>['keys'][number];
/** `POST /api/keys`: a new key, the only answer that shows its secret. */
export type CreatedApiKey = ApiResponse<'/api/keys', 'post'>;
/** `GET /api/auth/session`: the signed-in user, or `null`. */
export type Session = ApiResponse<'/api/auth/session'>;

/** A typed client of the web service's API: `client.GET('/api/agents')` → `{ data }` or `{ error }`, and `response`. */
export type AopClient = Client<paths>;

/** `include`, `same-origin` or `omit` (the `RequestCredentials` of the DOM, not declared by Node's types). */
type Credentials = NonNullable<RequestInit['credentials']>;

export interface ClientOptions {
  /**
   * Where the web service answers, e.g. `https://agents.example.com` (the paths start with `/api`). In a browser,
   * `''` calls the page's own origin.
   */
  baseUrl: string;
  /**
   * An API key (`sk_…`, created in the dashboard's settings or with `POST /api/keys`), sent as `Authorization: Bearer
   * sk_…`. Without one, requests are signed in by the browser's session cookie.
   */
  apiKey?: string;
  /** The `fetch` to call; the global one by default. */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * Whether requests carry cookies: `include` by default for cookie auth (the session cookie, also across origins),
   * `omit` with an API key (the key alone says who calls).
   */
  credentials?: Credentials;
  /** Headers sent with every request (for instance a `cookie` header outside a browser). */
  headers?: Record<string, string>;
}

const LOGIN_PATH = '/api/auth/login';

/**
 * Sign-in needs a CSRF token (spec §4.1): a login request without an `x-csrf-token` header gets one first from
 * `GET /api/auth/csrf` (which also sets the `service-csrf` cookie a browser sends back). Every other route is
 * protected by the SameSite=Lax session cookie and needs no token.
 */
function csrfForLogin(credentials: Credentials): Middleware {
  return {
    async onRequest({ request, schemaPath, options }) {
      if (schemaPath !== LOGIN_PATH || request.method !== 'POST') return undefined;
      if (request.headers.has('x-csrf-token') || request.headers.has('x-xsrf-token')) return undefined;
      // Called on its own, not as `options.fetch(…)`: a browser's fetch refuses any `this` but the window.
      const { fetch: send } = options;
      const answer = await send(new Request(`${options.baseUrl}/api/auth/csrf`, { credentials, headers: { accept: 'application/json' } }));
      const body = answer.ok ? ((await answer.json()) as ApiResponse<'/api/auth/csrf'>) : undefined;
      // Without a token the login goes ahead and the service refuses it with its own 403: the caller sees why.
      if (body?.csrfToken) request.headers.set('x-csrf-token', body.csrfToken);
      return request;
    },
  };
}

/**
 * A client of the web service's API, typed from its OpenAPI document: paths, parameters, bodies, answers and errors.
 *
 * ```ts
 * const aop = createClient({ baseUrl: 'https://agents.example.com', apiKey: process.env.AOP_API_KEY });
 * const { data, error } = await aop.GET('/api/agents');
 * ```
 */
export function createClient(options: ClientOptions): AopClient {
  const { baseUrl, apiKey, fetch, headers } = options;
  if (apiKey !== undefined && !/^sk_\S+$/.test(apiKey)) throw new TypeError('apiKey must be an API key: sk_…');
  const credentials = options.credentials ?? (apiKey ? 'omit' : 'include');
  const client = createFetchClient<paths>({
    baseUrl,
    credentials,
    headers: { ...headers, ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    ...(fetch ? { fetch } : {}),
  });
  client.use(csrfForLogin(credentials));
  return client;
}
