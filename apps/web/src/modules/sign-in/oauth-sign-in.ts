import { type App, parseEncryptionKey, safeEqual } from '@aop/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { sessionCookieOptions } from '../../platform/http/auth.js';
import { SESSION_COOKIE } from '../../platform/sessions.js';
import {
  AUTHORIZATION_STATE_TTL_MS,
  type AuthorizationState,
  type OAuthProvider,
  type ProviderProfile,
  signInWithProvider,
  takeAuthorizationState,
} from './oauth-accounts.service.js';

/** What the provider's side of a callback is handed once the shared checks have passed. */
export interface CallbackGrant {
  code: string;
  state: string;
  /** The callback's query parameters, strings only. */
  query: Map<string, string>;
  saved: AuthorizationState;
}

/** What sets one OAuth provider's sign-in apart from another's (spec §4.1). */
export interface OAuthSignInFlow {
  provider: OAuthProvider;
  /** How the logs name the provider. */
  logName: string;
  /** The `/login?error=` values `<prefix>NotConfigured`, `<prefix>AuthFailed` and `<prefix>AuthError`. */
  errorPrefix: 'Idp' | 'Codehost';
  /** Binds an authorization request to the browser that started it (login CSRF). */
  stateCookie: string;
  callbackPath: string;
  configured: boolean;
  /** A fresh authorization request, its state saved: where to send the browser. */
  authorize(): Promise<{ url: URL; state: string }>;
  /** The code exchanged for the person it signs in, or the `/login?error=` value that says why not. */
  profile(request: FastifyRequest, grant: CallbackGrant): Promise<ProviderProfile | string>;
}

/** Every failure ends on the login page with the spec's error value (a relative Location). */
function loginError(reply: FastifyReply, value: string) {
  return reply.header('cache-control', 'no-store').redirect(`/login?error=${value}`, 302);
}

/** A callback's query parameters, strings only (a repeated parameter keeps its first value). */
function callbackQuery(request: FastifyRequest): Map<string, string> {
  const query = new Map<string, string>();
  for (const [name, value] of Object.entries((request.query ?? {}) as Record<string, unknown>)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') query.set(name, first);
  }
  return query;
}

/** The handlers of `GET /api/auth/<provider>` and its callback, the same flow for every provider. */
export function oauthSignIn(app: App, config: WebConfig, flow: OAuthSignInFlow) {
  const stateCookie = { httpOnly: true, sameSite: 'lax' as const, path: flow.callbackPath, secure: config.cookieSecure };
  let encryptionKey: Buffer | undefined;

  async function start(request: FastifyRequest, reply: FastifyReply) {
    if (!flow.configured) return loginError(reply, `${flow.errorPrefix}NotConfigured`);
    try {
      const { url, state } = await flow.authorize();
      reply.setCookie(flow.stateCookie, state, { ...stateCookie, maxAge: AUTHORIZATION_STATE_TTL_MS / 1000 });
      return reply.header('cache-control', 'no-store').redirect(url.href, 302);
    } catch (err) {
      request.log.error({ err }, `${flow.logName} sign-in could not start`);
      return loginError(reply, `${flow.errorPrefix}AuthError`);
    }
  }

  async function callback(request: FastifyRequest, reply: FastifyReply) {
    try {
      return await signIn(request, reply);
    } catch (err) {
      request.log.error({ err }, `${flow.logName} sign-in failed`);
      return loginError(reply, `${flow.errorPrefix}AuthError`);
    }
  }

  async function signIn(request: FastifyRequest, reply: FastifyReply) {
    const query = callbackQuery(request);
    const boundState = request.cookies[flow.stateCookie];
    reply.clearCookie(flow.stateCookie, stateCookie);
    // The state is spent whatever happens next: a callback URL works once.
    const saved = await takeAuthorizationState(app.counters, flow.provider, query.get('state'));

    const error = query.get('error');
    if (error) return loginError(reply, error === 'access_denied' ? 'AccessDenied' : `${flow.errorPrefix}AuthFailed`);
    if (!flow.configured) return loginError(reply, `${flow.errorPrefix}NotConfigured`);
    const code = query.get('code');
    const state = query.get('state');
    if (!code || !state || !saved) return loginError(reply, `${flow.errorPrefix}AuthFailed`);
    if (!boundState || !safeEqual(boundState, state)) return loginError(reply, `${flow.errorPrefix}AuthFailed`);

    const profile = await flow.profile(request, { code, state, query, saved });
    if (typeof profile === 'string') return loginError(reply, profile);

    encryptionKey ??= parseEncryptionKey(config.encryptionKey);
    const result = await signInWithProvider(app.db.kysely, profile, {
      encryptionKey,
      ip: request.ip,
      userAgent: request.headers['user-agent'],
      now: app.clock(),
    });
    if (!result.ok) return loginError(reply, 'AccessDenied');
    reply.setCookie(SESSION_COOKIE, result.session.token, sessionCookieOptions(config, result.session.expiresAt));
    return reply.header('cache-control', 'no-store').redirect('/dashboard', 302);
  }

  return { start, callback };
}
