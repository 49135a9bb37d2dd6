import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An account of the fake identity provider; leave `email` out for an account without one. */
export interface OidcTestAccount {
  sub: string;
  email?: string;
  emailVerified?: boolean;
  name?: string;
  picture?: string;
}

/** Who the simulated person signs in as at the provider, or that they cancel. */
export type OidcTestChoice = { signInAs: string } | { cancel: true };

export interface FakeOidcProvider {
  /** `http://127.0.0.1:<port>`: the issuer to configure (`IDP_ISSUER`). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Accounts `findAccount` knows, by `sub`; tests add to it at any time. */
  accounts: Map<string, OidcTestAccount>;
  /** The query of every authorization request the provider received, in order. */
  authorizationRequests: URLSearchParams[];
  /** Token endpoint calls: the grant type and whether the provider answered 200. */
  tokenRequests: Array<{ grantType: string | null; status: number }>;
  /**
   * Plays the browser without one: starts at `authorizationUrl` (the client's redirect),
   * follows the provider's redirects keeping its cookies, completes the login and consent
   * interactions as `choice` says, and returns the URL the provider finally sends the
   * browser to (the client's redirect URI with `code` or `error`). Nothing outside the
   * provider is fetched.
   */
  authorize(authorizationUrl: string, choice: OidcTestChoice): Promise<URL>;
  close(): Promise<void>;
}

export interface OidcProviderOptions {
  /** Exact redirect URIs the client may use. */
  redirectUris: string[];
  clientId?: string;
  clientSecret?: string;
}

const LOGIN_HEADER = 'x-fake-oidc-login';
const CANCEL_HEADER = 'x-fake-oidc-cancel';

/** Keeps the cookies a browser would keep across the provider's redirects (names are unique enough here). */
class CookieJar {
  #cookies = new Map<string, string>();

  store(headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq < 1) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attributes.some((a) => {
        const [key = '', val = ''] = a.split('=');
        const k = key.trim().toLowerCase();
        return (k === 'max-age' && Number(val) <= 0) || (k === 'expires' && Date.parse(val) <= Date.now());
      });
      if (expired || value === '') this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

/**
 * A real OpenID Provider (`oidc-provider`) on 127.0.0.1 with one confidential client
 * (authorization code + refresh token, secret sent with HTTP Basic or the form) and
 * accounts from a map. Its interactions are answered by the fake itself: the person
 * `authorize()` names signs in and consents, or cancels (`access_denied`). It honours
 * `prompt=select_account` and issues refresh tokens for offline access. Without `email`
 * an account has no email claim.
 */
export async function startOidcProvider(options: OidcProviderOptions): Promise<FakeOidcProvider> {
  // oidc-provider ships no type declarations: it is loaded untyped and used through the few calls below.
  const moduleName: string = 'oidc-provider';
  const { default: Provider, interactionPolicy } = await import(moduleName);

  const clientId = options.clientId ?? 'web-client';
  const clientSecret = options.clientSecret ?? randomBytes(24).toString('hex');
  const accounts = new Map<string, OidcTestAccount>();
  const authorizationRequests: URLSearchParams[] = [];
  const tokenRequests: FakeOidcProvider['tokenRequests'] = [];

  let provider: any;
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (req.method === 'GET' && /^\/interaction\/[^/]+$/.test(path)) {
      interaction(req, res).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
      return;
    }
    provider.callback()(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const jwk = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig' };
  const policy = interactionPolicy.base();
  // Like the big identity providers: `prompt=select_account` shows the account chooser.
  policy.add(new interactionPolicy.Prompt({ name: 'select_account', requestable: true }), 0);

  provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'picture'],
    },
    features: { devInteractions: { enabled: false } },
    // Explicit lifetimes (seconds), as a production provider would set them.
    ttl: {
      AccessToken: 3600,
      AuthorizationCode: 600,
      Grant: 86_400,
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: 86_400,
      Session: 86_400,
    },
    interactions: { policy, url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    // Offline access the way `access_type=offline` providers grant it: every code grant gets a refresh token.
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
      client.grantTypeAllowed('refresh_token'),
    async findAccount(_ctx: unknown, sub: string) {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return {
        accountId: sub,
        async claims() {
          return {
            sub,
            ...(account.email !== undefined ? { email: account.email, email_verified: account.emailVerified ?? true } : {}),
            ...(account.name !== undefined ? { name: account.name } : {}),
            ...(account.picture !== undefined ? { picture: account.picture } : {}),
          };
        },
      };
    },
  });
  provider.use(async (ctx: any, next: () => Promise<void>) => {
    if (ctx.method === 'GET' && ctx.path === '/auth') authorizationRequests.push(new URLSearchParams(ctx.querystring));
    await next();
    if (ctx.path === '/token')
      tokenRequests.push({ grantType: ctx.oidc?.body?.grant_type ?? ctx.oidc?.params?.grant_type ?? null, status: ctx.status });
  });
  // Details of failures go to the test output, not to a log nobody reads.
  provider.on('server_error', (_ctx: unknown, err: unknown) => console.error('fake OIDC provider error', err));

  async function interaction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    if (req.headers[CANCEL_HEADER]) {
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'End-User aborted interaction' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const sub = req.headers[LOGIN_HEADER];
    if (typeof sub !== 'string' || !accounts.has(sub)) {
      res.statusCode = 400;
      res.end(`unknown test account ${String(sub)}`);
      return;
    }
    if (details.prompt.name === 'consent') {
      const { accountId } = details.session;
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId, clientId: details.params.client_id });
      const missing = details.prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries<string[]>(missing.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
      await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
      return;
    }
    // `select_account` or `login`: the chosen account signs in.
    await provider.interactionFinished(req, res, { select_account: {}, login: { accountId: sub } }, { mergeWithLastSubmission: false });
  }

  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    authorizationRequests,
    tokenRequests,
    async authorize(authorizationUrl, choice) {
      const jar = new CookieJar();
      const person: Record<string, string> = 'cancel' in choice ? { [CANCEL_HEADER]: '1' } : { [LOGIN_HEADER]: choice.signInAs };
      let next = new URL(authorizationUrl);
      for (let hop = 0; hop < 20; hop++) {
        if (next.origin !== issuer) return next;
        const res = await fetch(next, { redirect: 'manual', headers: { cookie: jar.header(), ...person } });
        jar.store(res.headers);
        const body = await res.text();
        const location = res.headers.get('location');
        if (res.status < 300 || res.status >= 400 || !location) {
          throw new Error(`fake OIDC provider stopped at ${next.pathname} with ${res.status}: ${body.slice(0, 500)}`);
        }
        next = new URL(location, next);
      }
      throw new Error('fake OIDC provider: too many redirects');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
