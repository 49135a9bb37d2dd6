import cookie from '@fastify/cookie';
import { DomainError, beforeObjectBody, sha256Hex } from '@aop/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { WebConfig } from '../../config.js';
import { findKeyOwner } from '../../modules/api-keys/api-keys.service.js';
import { AuthCache } from '../auth-cache.js';
import { type AuthUser, SESSION_COOKIE, findSessionUser } from '../sessions.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The time every session and token decision is made at (tests move it). */
    clock: () => number;
  }
  interface FastifyRequest {
    /**
     * The signed-in user from the `service-session` cookie or `Authorization:
     * Bearer sk_…`, or null. Resolved once per request, only when a route asks.
     */
    currentUser(): Promise<AuthUser | null>;
  }
}

/** Cookie options of `service-session` (spec §2.1): HttpOnly, SameSite=Lax, path `/`, 30 days. */
export function sessionCookieOptions(config: Pick<WebConfig, 'cookieSecure'>, expires: Date) {
  return { httpOnly: true, sameSite: 'lax' as const, path: '/', secure: config.cookieSecure, expires };
}

function bearerKey(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return header?.startsWith('Bearer sk_') ? header.slice('Bearer '.length).trim() : undefined;
}

/**
 * Cookie values URL-encoded only when they hold a character that is not a cookie octet, as `cookie@2` writes them (the
 * CSRF cookie keeps its `:`, spec §4.1). The installed `cookie@1.1` (`cookie@2` needs Node 22; docs/decisions.md)
 * URL-encodes every value by default.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is matched
const NOT_COOKIE_OCTET = /[\u0000-\u0020\u007F-\uFFFF",;\\%]/;
const encodeCookieValue = (value: string) => (NOT_COOKIE_OCTET.test(value) ? encodeURIComponent(value) : value);

async function auth(app: FastifyInstance, { config, clock }: { config: WebConfig; clock: () => number }): Promise<void> {
  await app.register(cookie, { secret: config.sessionSecret, parseOptions: { encode: encodeCookieValue } });
  app.decorate('clock', clock);
  const resolved = new WeakMap<FastifyRequest, Promise<AuthUser | null>>();
  const cache = new AuthCache({ ...config.authCache, clock });
  const stopListening = app.db.onAuthChange((userId) => cache.forgetUser(userId));
  app.addHook('onClose', async () => stopListening());

  // Keyed by the credential's hash: the raw secret is not kept beyond the request.
  async function resolve(request: FastifyRequest): Promise<AuthUser | null> {
    const key = bearerKey(request);
    if (key) {
      return cache.resolve(`key:${sha256Hex(key)}`, async () => {
        const owner = await findKeyOwner(app.db.kysely, key, config.adminEmails, clock());
        return owner && { user: owner.user };
      });
    }
    const token = request.cookies[SESSION_COOKIE];
    if (!token) return null;
    return cache.resolve(`session:${sha256Hex(token)}`, () => findSessionUser(app.db.kysely, token, config.adminEmails, clock()));
  }

  app.decorateRequest('currentUser', function currentUser(this: FastifyRequest) {
    let pending = resolved.get(this);
    if (!pending) {
      pending = resolve(this);
      resolved.set(this, pending);
    }
    return pending;
  });
}

export const authPlugin = fp(auth, { name: 'auth', dependencies: ['shared-http'] });

/** The 401 answers the spec names for a missing sign-in, route by route. */
type UnauthorizedCode = 'UNAUTHORIZED' | 'UNAUTHORIZED_LOWERCASE' | 'NOT_AUTHENTICATED';

/** The signed-in user, or 401 (`Unauthorized` unless the spec names another message). */
export async function requireUser(request: FastifyRequest, code: UnauthorizedCode = 'UNAUTHORIZED'): Promise<AuthUser> {
  const user = await request.currentUser();
  if (!user) throw new DomainError(code);
  return user;
}

/**
 * A signed-in person, not an API key: for what a leaked key must never do
 * (mint keys, change the sign-in email or the password), 403 otherwise.
 */
export async function requireSessionUser(request: FastifyRequest, code: UnauthorizedCode = 'UNAUTHORIZED'): Promise<AuthUser> {
  const user = await requireUser(request, code);
  if (user.via !== 'session') throw new DomainError('SESSION_REQUIRED_NOT_API_KEY');
  return user;
}

/** preHandler: an admin is required (401 without a session, 403 `Forbidden` for others). */
export async function requireAdmin(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const user = await requireUser(request);
  if (!user.isAdmin) throw new DomainError('FORBIDDEN');
}

/** `preValidation`: the signed-in user ahead of the body schema (see `beforeObjectBody`). */
export const userBeforeBody = beforeObjectBody((request) => requireUser(request));
/** `preValidation`: a signed-in session (not an API key) ahead of the body schema. */
export const sessionUserBeforeBody = beforeObjectBody((request) => requireSessionUser(request));
