import cookie from '@fastify/cookie';
import { HttpError } from '@aop/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { WebConfig } from '../config.js';
import { SESSION_COOKIE, type SessionUser, findSessionUser } from '../services/sessions.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in user, or null. Resolved lazily: only routes that ask pay for the lookup. */
    sessionUser(): Promise<SessionUser | null>;
  }
}

/** Cookie options of `service-session` (spec §2.1): HttpOnly, SameSite=Lax, path `/`, 30 days. */
export function sessionCookieOptions(config: Pick<WebConfig, 'cookieSecure'>, expires: Date) {
  return { httpOnly: true, sameSite: 'lax' as const, path: '/', secure: config.cookieSecure, expires };
}

async function sessionPlugin(app: FastifyInstance, { config }: { config: WebConfig }): Promise<void> {
  await app.register(cookie, { secret: config.sessionSecret });
  const cache = new WeakMap<FastifyRequest, Promise<SessionUser | null>>();
  app.decorateRequest('sessionUser', function sessionUser(this: FastifyRequest) {
    let pending = cache.get(this);
    if (!pending) {
      const token = this.cookies[SESSION_COOKIE];
      pending = token ? findSessionUser(app.db.kysely, token, config.adminEmails) : Promise.resolve(null);
      cache.set(this, pending);
    }
    return pending;
  });
}

export const sessionsPlugin = fp(sessionPlugin, { name: 'sessions', dependencies: ['shared-http'] });

/** preHandler: a session is required (401 `Unauthorized`). */
export async function requireSession(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  if (!(await request.sessionUser())) throw new HttpError(401, 'Unauthorized');
}

/** preHandler: an admin session is required (401 without a session, 403 `Forbidden` for others). */
export async function requireAdminSession(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const user = await request.sessionUser();
  if (!user) throw new HttpError(401, 'Unauthorized');
  if (!user.isAdmin) throw new HttpError(403, 'Forbidden');
}
