import type { App } from '@aop/core';
import type { FastifyRequest } from 'fastify';
import * as oidc from 'openid-client';
import type { WebConfig } from '../../config.js';
import { type ProviderProfile, saveAuthorizationState, usableEmail } from './oauth-accounts.service.js';
import { type CallbackGrant, oauthSignIn } from './oauth-sign-in.js';

/** Binds an authorization request to the browser that started it (login CSRF). */
export const IDP_STATE_COOKIE = 'service-idp-state';
const CALLBACK_PATH = '/api/auth/idp/callback';
const TIMEOUT_SECONDS = 10;

const isLoopback = (host: string) => host === '127.0.0.1' || host === 'localhost' || host === '[::1]';

/**
 * The provider's OpenID configuration, discovered once from `IDP_ISSUER` and kept; a failed
 * discovery is retried on the next sign-in. Client authentication uses the client secret:
 * HTTP Basic (the OAuth default), or the form body when the provider only offers that.
 */
function discoveredConfiguration(config: WebConfig, issuer: string, clientId: string, clientSecret: string) {
  let pending: Promise<oidc.Configuration> | undefined;
  const basic = oidc.ClientSecretBasic(clientSecret);
  const post = oidc.ClientSecretPost(clientSecret);
  const clientAuth: oidc.ClientAuth = (as, client, body, headers) => {
    const methods = as.token_endpoint_auth_methods_supported;
    const usePost = Array.isArray(methods) && !methods.includes('client_secret_basic') && methods.includes('client_secret_post');
    (usePost ? post : basic)(as, client, body, headers);
  };
  const url = new URL(issuer);
  // Plain HTTP only for a provider on this machine or outside production (development, tests).
  const insecure = url.protocol === 'http:' && (isLoopback(url.hostname) || !config.production);
  return () => {
    pending ??= oidc
      .discovery(url, clientId, undefined, clientAuth, {
        timeout: TIMEOUT_SECONDS,
        ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
      })
      .catch((err: unknown) => {
        pending = undefined;
        throw err;
      });
    return pending;
  };
}

/** Spec §4.1: sign-in with the OIDC identity provider (`GET /api/auth/idp` and its callback). */
export async function idpRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const { clientId, clientSecret, issuer } = config.idp;
  const configuration = clientId && clientSecret && issuer ? discoveredConfiguration(config, issuer, clientId, clientSecret) : undefined;
  const redirectUri = `${config.publicUrl}${CALLBACK_PATH}`;

  const flow = oauthSignIn(app, config, {
    provider: 'idp',
    logName: 'identity provider',
    errorPrefix: 'Idp',
    stateCookie: IDP_STATE_COOKIE,
    callbackPath: CALLBACK_PATH,
    configured: configuration !== undefined,
    async authorize() {
      const server = await configuration!();
      const codeVerifier = oidc.randomPKCECodeVerifier();
      const nonce = oidc.randomNonce();
      const state = await saveAuthorizationState(app.counters, 'idp', { codeVerifier, nonce });
      const url = oidc.buildAuthorizationUrl(server, {
        redirect_uri: redirectUri,
        scope: 'openid email profile',
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
        prompt: 'select_account',
        access_type: 'offline',
      });
      return { url, state };
    },
    profile: providerProfile,
  });

  app.get(
    '/api/auth/idp',
    {
      schema: {
        tags: ['accounts'],
        summary: "Redirects to the identity provider's account selector",
        description:
          'Scopes `openid email profile`, offline access, `prompt=select_account`, PKCE S256, state and nonce. ' +
          'Not configured: 302 `/login?error=IdpNotConfigured`.',
      },
    },
    flow.start,
  );

  app.get(
    CALLBACK_PATH,
    {
      schema: {
        tags: ['accounts'],
        summary: 'Identity provider callback',
        description:
          'Exchanges the code, links or creates the user, sets `service-session` and redirects to `/dashboard`; ' +
          'failures redirect to `/login?error=AccessDenied|IdpAuthFailed|IdpNotConfigured|IdpTokenFailed|IdpNoEmail|IdpAuthError`.',
      },
    },
    flow.callback,
  );

  async function providerProfile(request: FastifyRequest, { state, query, saved }: CallbackGrant): Promise<ProviderProfile | string> {
    // Every OIDC authorization request saved its nonce: a state without one is not ours.
    if (!saved.nonce) return 'IdpAuthFailed';
    const server = await configuration!();
    const currentUrl = new URL(redirectUri);
    for (const [name, value] of query) currentUrl.searchParams.append(name, value);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(server, currentUrl, {
        pkceCodeVerifier: saved.codeVerifier,
        expectedState: state,
        expectedNonce: saved.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      request.log.warn({ err }, 'identity provider code exchange failed');
      return 'IdpTokenFailed';
    }

    const claims = tokens.claims();
    if (!claims) return 'IdpTokenFailed';
    let info: oidc.UserInfoResponse | undefined;
    try {
      info = await oidc.fetchUserInfo(server, tokens.access_token, claims.sub);
    } catch (err) {
      // The ID token's claims stand in for an unreachable or refusing user-info endpoint.
      request.log.warn({ err }, 'identity provider user-info failed; using the ID token claims');
    }
    const profile = { ...claims, ...info };
    const email = usableEmail(profile.email);
    if (!email) return 'IdpNoEmail';

    const expiresIn = tokens.expiresIn();
    const name = [profile.name, [profile.given_name, profile.family_name].filter(Boolean).join(' ')].find(
      (n): n is string => typeof n === 'string' && n.trim() !== '',
    );
    return {
      provider: 'idp',
      subject: claims.sub,
      email,
      // Some providers send the claim as the string "true".
      emailVerified: String(profile.email_verified) === 'true',
      name,
      metadata: {
        ...(typeof profile.name === 'string' ? { name: profile.name } : {}),
        ...(typeof profile.picture === 'string' ? { picture: profile.picture } : {}),
      },
      tokens: {
        accessToken: tokens.access_token,
        refreshToken: tokens.refresh_token,
        idToken: tokens.id_token,
        expiresAt: expiresIn === undefined ? undefined : new Date(app.clock() + expiresIn * 1000),
        scope: tokens.scope,
      },
    };
  }
}
