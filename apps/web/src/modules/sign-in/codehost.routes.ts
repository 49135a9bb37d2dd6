import type { App } from '@aop/core';
import type { FastifyRequest } from 'fastify';
import { calculatePKCECodeChallenge, randomPKCECodeVerifier } from 'openid-client';
import type { WebConfig } from '../../config.js';
import { type ProviderProfile, saveAuthorizationState, usableEmail } from './oauth-accounts.service.js';
import { type CallbackGrant, oauthSignIn } from './oauth-sign-in.js';

/** Binds an authorization request to the browser that started it (login CSRF). */
export const CODEHOST_STATE_COOKIE = 'service-codehost-state';
const CALLBACK_PATH = '/api/auth/codehost/callback';
const SCOPE = 'read:user user:email';
const TIMEOUT_MS = 10_000;

interface CodehostTokens {
  access_token: string;
  refresh_token?: string;
  expires_in?: number;
  scope?: string;
}

interface CodehostUser {
  id: number | string;
  login?: string;
  name?: string | null;
  email?: string | null;
  avatar_url?: string;
}

interface CodehostEmail {
  email: string;
  primary?: boolean;
  verified?: boolean;
}

/** A code-host API failure we did not expect (its user endpoint refused a fresh token…). */
class CodehostApiError extends Error {}

/** Spec §4.1: sign-in with the OAuth 2 code host (GitHub-compatible endpoints), `GET /api/auth/codehost` and its callback. */
export async function codehostRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const { clientId, clientSecret } = config.codehost;
  const redirectUri = `${config.publicUrl}${CALLBACK_PATH}`;
  // The code host's API refuses requests without a User-Agent.
  const userAgent = `${config.productName}-sign-in`;

  const flow = oauthSignIn(app, config, {
    provider: 'codehost',
    logName: 'code host',
    errorPrefix: 'Codehost',
    stateCookie: CODEHOST_STATE_COOKIE,
    callbackPath: CALLBACK_PATH,
    configured: Boolean(clientId && clientSecret),
    async authorize() {
      const codeVerifier = randomPKCECodeVerifier();
      const state = await saveAuthorizationState(app.counters, 'codehost', { codeVerifier });
      const url = new URL(config.codehost.authorizeUrl);
      url.searchParams.set('client_id', clientId!);
      url.searchParams.set('redirect_uri', redirectUri);
      url.searchParams.set('scope', SCOPE);
      url.searchParams.set('state', state);
      url.searchParams.set('code_challenge', await calculatePKCECodeChallenge(codeVerifier));
      url.searchParams.set('code_challenge_method', 'S256');
      return { url, state };
    },
    profile: providerProfile,
  });

  app.get(
    '/api/auth/codehost',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Redirects to the code-hosting identity provider',
        description: `Scope \`${SCOPE}\`, PKCE S256 and state. Not configured: 302 \`/login?error=CodehostNotConfigured\`.`,
      },
    },
    flow.start,
  );

  app.get(
    CALLBACK_PATH,
    {
      schema: {
        tags: ['accounts'],
        summary: 'Code host callback',
        description:
          'Exchanges the code, links or creates the user, sets `service-session` and redirects to `/dashboard`; failures redirect to ' +
          '`/login?error=AccessDenied|CodehostAuthFailed|CodehostNotConfigured|CodehostTokenFailed|CodehostNoEmail|CodehostAuthError`.',
      },
    },
    flow.callback,
  );

  async function providerProfile(request: FastifyRequest, { code, saved }: CallbackGrant): Promise<ProviderProfile | string> {
    const tokens = await exchangeCode(request, code, saved.codeVerifier);
    if (!tokens) return 'CodehostTokenFailed';

    const user = await getJson<CodehostUser>(config.codehost.userUrl, tokens.access_token, userAgent);
    if (!user || (typeof user.id !== 'number' && typeof user.id !== 'string') || String(user.id) === '') {
      throw new CodehostApiError('the user endpoint did not answer a user with an id');
    }
    // A code host lets only a verified address be public; otherwise the primary verified one.
    let email = usableEmail(user.email);
    if (!email) {
      const emails = await getJson<CodehostEmail[]>(config.codehost.emailsUrl, tokens.access_token, userAgent).catch((err: unknown) => {
        request.log.warn({ err }, 'code host email list failed');
        return undefined;
      });
      const verified = Array.isArray(emails) ? emails.filter((e) => e?.verified === true && usableEmail(e.email)) : [];
      email = usableEmail((verified.find((e) => e.primary === true) ?? verified[0])?.email);
    }
    if (!email) return 'CodehostNoEmail';

    return {
      provider: 'codehost',
      subject: String(user.id),
      email,
      emailVerified: true,
      name: user.name?.trim() || user.login,
      metadata: {
        ...(typeof user.login === 'string' ? { login: user.login } : {}),
        ...(typeof user.name === 'string' ? { name: user.name } : {}),
        ...(typeof user.avatar_url === 'string' ? { picture: user.avatar_url } : {}),
      },
      tokens: {
        accessToken: tokens.access_token,
        refreshToken: tokens.refresh_token,
        expiresAt: typeof tokens.expires_in === 'number' ? new Date(app.clock() + tokens.expires_in * 1000) : undefined,
        scope: tokens.scope,
      },
    };
  }

  /**
   * POSTs the code to the token endpoint as a form, asking for JSON. GitHub answers 200 with
   * either `access_token` or `error`; anything else (a refused client, a network failure) is a
   * failed exchange too.
   */
  async function exchangeCode(request: FastifyRequest, code: string, codeVerifier: string): Promise<CodehostTokens | undefined> {
    try {
      const res = await fetch(config.codehost.tokenUrl, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'user-agent': userAgent },
        body: new URLSearchParams({
          client_id: clientId!,
          client_secret: clientSecret!,
          code,
          redirect_uri: redirectUri,
          code_verifier: codeVerifier,
          grant_type: 'authorization_code',
        }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      const body = (await res.json().catch(() => undefined)) as Partial<CodehostTokens> & { error?: string };
      if (!res.ok || !body || typeof body.access_token !== 'string' || body.access_token === '') {
        request.log.warn({ status: res.status, error: body?.error }, 'code host code exchange refused');
        return undefined;
      }
      return {
        access_token: body.access_token,
        ...(typeof body.refresh_token === 'string' && body.refresh_token ? { refresh_token: body.refresh_token } : {}),
        ...(typeof body.expires_in === 'number' ? { expires_in: body.expires_in } : {}),
        ...(typeof body.scope === 'string' ? { scope: body.scope } : {}),
      };
    } catch (err) {
      request.log.warn({ err }, 'code host code exchange failed');
      return undefined;
    }
  }
}

async function getJson<T>(url: string, accessToken: string, userAgent: string): Promise<T> {
  const res = await fetch(url, {
    headers: {
      authorization: `Bearer ${accessToken}`,
      accept: 'application/vnd.github+json',
      'user-agent': userAgent,
      'x-github-api-version': '2022-11-28',
    },
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (!res.ok) throw new CodehostApiError(`${url} answered ${res.status}`);
  return (await res.json()) as T;
}
