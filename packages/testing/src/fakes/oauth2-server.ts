import { createHash, randomBytes } from 'node:crypto';
import { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A user of the fake code host. `email: null` is a user whose address is private. */
export interface CodehostTestUser {
  id: number;
  login: string;
  name?: string | null;
  email?: string | null;
  avatarUrl?: string;
  /** What `GET /user/emails` lists for this user. */
  emails?: Array<{ email: string; primary: boolean; verified: boolean; visibility?: 'public' | 'private' | null }>;
}

/** Who the simulated person signs in as at the code host, or that they refuse. */
export type CodehostTestChoice = { signInAs: string } | { deny: true };

export interface FakeOAuth2Server {
  /** `http://127.0.0.1:<port>` */
  url: string;
  clientId: string;
  clientSecret: string;
  /** Endpoint URLs to configure: `CODEHOST_AUTHORIZE_URL`, `CODEHOST_TOKEN_URL`, `CODEHOST_USER_URL`, `CODEHOST_EMAILS_URL`. */
  authorizeUrl: string;
  tokenUrl: string;
  userUrl: string;
  emailsUrl: string;
  /** Users by login; tests add to it at any time. */
  users: Map<string, CodehostTestUser>;
  /** Every token request: its headers and form parameters, and the `error` answered, if any. */
  tokenRequests: Array<{ headers: IncomingHttpHeaders; params: URLSearchParams; error?: string }>;
  /** Every API request (`/user`, `/user/emails`): path and headers. */
  apiRequests: Array<{ path: string; headers: IncomingHttpHeaders }>;
  /**
   * Plays the browser at the authorize endpoint: the person `choice` names approves (or
   * denies) and the URL the code host redirects back to (`code` or `error`, and `state`) is returned.
   */
  authorize(authorizationUrl: string, choice: CodehostTestChoice): Promise<URL>;
  close(): Promise<void>;
}

export interface OAuth2ServerOptions {
  /** Exact redirect URIs the OAuth app allows. */
  redirectUris: string[];
  clientId?: string;
  clientSecret?: string;
}

const LOGIN_HEADER = 'x-fake-codehost-login';
const DENY_HEADER = 'x-fake-codehost-deny';
const CODE_TTL_MS = 10 * 60_000;

interface IssuedCode {
  login: string;
  redirectUri: string;
  scope: string;
  codeChallenge: string | undefined;
  expiresAt: number;
}

const base64urlSha256 = (value: string) => createHash('sha256').update(value).digest('base64url');

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, body: unknown, contentType = 'application/json; charset=utf-8'): void {
  res.statusCode = status;
  res.setHeader('content-type', contentType);
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/**
 * A GitHub-compatible OAuth 2 server on 127.0.0.1 over node:http: the authorize endpoint
 * (`/login/oauth/authorize`, redirects back with `code` and `state`, or `error=access_denied`),
 * the token endpoint (`/login/oauth/access_token`: checks client id and secret, the code, the
 * redirect URI and the PKCE verifier; answers 200 with `access_token` or `error`, JSON when
 * asked, a form otherwise, as GitHub does) and the API (`/user`, `/user/emails`, bearer token,
 * User-Agent required, the email list only with the `user:email` scope).
 */
export async function startOAuth2Server(options: OAuth2ServerOptions): Promise<FakeOAuth2Server> {
  const clientId = options.clientId ?? 'codehost-client';
  const clientSecret = options.clientSecret ?? randomBytes(20).toString('hex');
  const users = new Map<string, CodehostTestUser>();
  const codes = new Map<string, IssuedCode>();
  const accessTokens = new Map<string, { login: string; scope: string }>();
  const tokenRequests: FakeOAuth2Server['tokenRequests'] = [];
  const apiRequests: FakeOAuth2Server['apiRequests'] = [];

  function authorizeEndpoint(req: IncomingMessage, res: ServerResponse, url: URL) {
    const q = url.searchParams;
    const redirectUri = q.get('redirect_uri') ?? options.redirectUris[0];
    if (q.get('client_id') !== clientId) return send(res, 404, 'unknown OAuth app', 'text/plain');
    if (!redirectUri || !options.redirectUris.includes(redirectUri)) return send(res, 400, 'redirect_uri mismatch', 'text/plain');
    const challenge = q.get('code_challenge') ?? undefined;
    if (challenge && q.get('code_challenge_method') !== 'S256') return send(res, 400, 'unsupported code_challenge_method', 'text/plain');
    const back = new URL(redirectUri);
    const state = q.get('state');
    if (req.headers[DENY_HEADER]) {
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'The user has denied your application access.');
      back.searchParams.set('error_uri', 'https://docs.github.com/apps/troubleshooting-authorization-request-errors/#access-denied');
    } else {
      const login = req.headers[LOGIN_HEADER];
      if (typeof login !== 'string' || !users.has(login)) return send(res, 400, `unknown test user ${String(login)}`, 'text/plain');
      const code = randomBytes(10).toString('hex');
      codes.set(code, { login, redirectUri, scope: q.get('scope') ?? '', codeChallenge: challenge, expiresAt: Date.now() + CODE_TTL_MS });
      back.searchParams.set('code', code);
    }
    if (state !== null) back.searchParams.set('state', state);
    res.statusCode = 302;
    res.setHeader('location', back.href);
    res.end();
  }

  async function tokenEndpoint(req: IncomingMessage, res: ServerResponse) {
    const raw = await readBody(req);
    const params = (req.headers['content-type'] ?? '').includes('json')
      ? new URLSearchParams(Object.entries(JSON.parse(raw || '{}') as Record<string, string>))
      : new URLSearchParams(raw);
    const entry: FakeOAuth2Server['tokenRequests'][number] = { headers: req.headers, params };
    tokenRequests.push(entry);
    const json = (req.headers.accept ?? '').includes('json');
    const answer = (body: Record<string, string>) =>
      json
        ? send(res, 200, body)
        : send(res, 200, new URLSearchParams(body).toString(), 'application/x-www-form-urlencoded; charset=utf-8');
    const fail = (error: string, description: string) => {
      entry.error = error;
      answer({ error, error_description: description, error_uri: 'https://docs.github.com/apps/oauth' });
    };

    if (params.get('client_id') !== clientId || params.get('client_secret') !== clientSecret) {
      return fail('incorrect_client_credentials', 'The client_id and/or client_secret passed are incorrect.');
    }
    const code = params.get('code') ?? '';
    const issued = codes.get(code);
    codes.delete(code);
    if (!issued || issued.expiresAt < Date.now()) return fail('bad_verification_code', 'The code passed is incorrect or expired.');
    const redirectUri = params.get('redirect_uri');
    if (redirectUri !== null && redirectUri !== issued.redirectUri) {
      return fail('redirect_uri_mismatch', 'The redirect_uri MUST match the registered callback URL for this application.');
    }
    if (issued.codeChallenge) {
      const verifier = params.get('code_verifier');
      if (!verifier || base64urlSha256(verifier) !== issued.codeChallenge)
        return fail('bad_verification_code', 'The code_verifier does not match.');
    }
    const accessToken = `gho_${randomBytes(18).toString('hex')}`;
    accessTokens.set(accessToken, { login: issued.login, scope: issued.scope });
    answer({ access_token: accessToken, token_type: 'bearer', scope: issued.scope.split(/\s+/).filter(Boolean).join(',') });
  }

  function apiEndpoint(req: IncomingMessage, res: ServerResponse, path: string) {
    apiRequests.push({ path, headers: req.headers });
    if (!req.headers['user-agent'])
      return send(res, 403, {
        message: 'Request forbidden by administrative rules. Please make sure your request has a User-Agent header',
      });
    const match = /^(?:Bearer|token) (.+)$/i.exec(req.headers.authorization ?? '');
    const grant = match?.[1] ? accessTokens.get(match[1]) : undefined;
    const user = grant ? users.get(grant.login) : undefined;
    if (!grant || !user) return send(res, 401, { message: 'Requires authentication', documentation_url: 'https://docs.github.com/rest' });
    if (path === '/user') {
      return send(res, 200, {
        login: user.login,
        id: user.id,
        avatar_url: user.avatarUrl ?? `https://avatars.example.test/u/${user.id}`,
        type: 'User',
        name: user.name ?? null,
        email: user.email ?? null,
      });
    }
    // GitHub answers 404 to a token without the scope the endpoint needs.
    if (!grant.scope.split(/[\s,]+/).includes('user:email')) return send(res, 404, { message: 'Not Found' });
    return send(
      res,
      200,
      (user.emails ?? []).map((e) => ({ email: e.email, primary: e.primary, verified: e.verified, visibility: e.visibility ?? null })),
    );
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const route = `${req.method} ${url.pathname}`;
    const handle = async () => {
      if (route === 'GET /login/oauth/authorize') return authorizeEndpoint(req, res, url);
      if (route === 'POST /login/oauth/access_token') return tokenEndpoint(req, res);
      if (route === 'GET /user' || route === 'GET /user/emails') return apiEndpoint(req, res, url.pathname);
      return send(res, 404, { message: 'Not Found' });
    };
    handle().catch((err: unknown) => send(res, 500, { message: String(err) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    clientId,
    clientSecret,
    authorizeUrl: `${url}/login/oauth/authorize`,
    tokenUrl: `${url}/login/oauth/access_token`,
    userUrl: `${url}/user`,
    emailsUrl: `${url}/user/emails`,
    users,
    tokenRequests,
    apiRequests,
    async authorize(authorizationUrl, choice) {
      const target = new URL(authorizationUrl);
      if (target.origin !== url) throw new Error(`fake code host: ${authorizationUrl} is not this server`);
      const person: Record<string, string> = 'deny' in choice ? { [DENY_HEADER]: '1' } : { [LOGIN_HEADER]: choice.signInAs };
      const res = await fetch(target, { redirect: 'manual', headers: person });
      const body = await res.text();
      const location = res.headers.get('location');
      if (res.status !== 302 || !location) throw new Error(`fake code host answered ${res.status}: ${body.slice(0, 300)}`);
      return new URL(location);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
