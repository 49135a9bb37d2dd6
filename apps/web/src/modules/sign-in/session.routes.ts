import { type App, DomainError, isPublicError, safeEqual } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { sessionCookieOptions } from '../../platform/http/auth.js';
import { findUserByEmail } from '../accounts/accounts.service.js';
import { CSRF_COOKIE, CSRF_TTL_MS, issueCsrfToken, verifyCsrfToken } from '../../platform/http/csrf.js';
import { verifyPassword } from '../accounts/passwords.js';
import { SESSION_COOKIE } from '../../platform/sessions.js';
import { accountLimits } from './rate-limits.js';
import { CsrfToken, Session } from './sign-in.schemas.js';
import { endSession, startSession } from './sign-in.service.js';

const LoginBodySchema = Type.Object({ email: Type.Optional(Type.String()), password: Type.Optional(Type.String()) });

/** Spec §4.1 / §3.3: CSRF token, login, session, sign-out. */
export async function sessionRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const csrfCookie = {
    httpOnly: true,
    sameSite: 'strict' as const,
    path: '/api/auth',
    secure: config.cookieSecure,
    maxAge: CSRF_TTL_MS / 1000,
  };

  app.get('/api/auth/csrf', { schema: { tags: ['accounts'], response: { 200: CsrfToken } } }, async (_request, reply) => {
    const csrfToken = issueCsrfToken(config.sessionSecret, app.clock());
    reply.setCookie(CSRF_COOKIE, csrfToken, csrfCookie);
    return { csrfToken };
  });

  app.post(
    '/api/auth/login',
    {
      onRequest: app.rateLimit(accountLimits(config).login),
      config: { invalidBody: 'EMAIL_PASSWORD_ARE_REQUIRED' },
      schema: {
        tags: ['accounts'],
        body: LoginBodySchema,
        response: { 200: Type.Object({ ok: Type.Literal(true), user: Type.Object({ id: Type.String(), name: Type.String() }) }) },
      },
    },
    async (request, reply) => {
      const header = request.headers['x-csrf-token'] ?? request.headers['x-xsrf-token'];
      const presented = typeof header === 'string' ? header : undefined;
      const token = verifyCsrfToken(config.sessionSecret, presented, app.clock());
      const cookie = request.cookies[CSRF_COOKIE];
      // The cookie, when the browser sent it, must be the same token (double submit).
      if (!token || !presented || (cookie !== undefined && !safeEqual(cookie, presented))) throw new DomainError('INVALID_CSRF_TOKEN');

      const { email, password } = request.body ?? {};
      if (!email?.trim() || !password) throw new DomainError('EMAIL_PASSWORD_ARE_REQUIRED');
      // One sign-in attempt per token: a captured token cannot be replayed.
      if (!(await app.counters.putIfAbsent(`csrf-used:${token}`, '1', CSRF_TTL_MS))) throw new DomainError('INVALID_CSRF_TOKEN');

      try {
        const user = await findUserByEmail(app.db.kysely, email);
        // Unknown email and wrong password take the same time and give the same answer.
        if (!(await verifyPassword(user?.password_hash, password)) || !user) throw new DomainError('INVALID_CREDENTIALS');
        // Account protection disabled it: only after the right password, so this says nothing to a guesser.
        if (user.disabled_at) throw new DomainError('ACCOUNT_DISABLED');
        const session = await startSession(
          app.db.kysely,
          { userId: user.id, ip: request.ip, userAgent: request.headers['user-agent'], metadata: { method: 'password' } },
          app.clock(),
        );
        reply.setCookie(SESSION_COOKIE, session.token, sessionCookieOptions(config, session.expiresAt));
        reply.clearCookie(CSRF_COOKIE, { path: csrfCookie.path });
        return { ok: true as const, user: { id: user.id, name: user.name } };
      } catch (err) {
        if (isPublicError(err)) throw err;
        request.log.error({ err }, 'login failed');
        throw new DomainError('LOGIN_FAILED');
      }
    },
  );

  app.get('/api/auth/session', { schema: { tags: ['accounts'], response: { 200: Session } } }, async (request) => {
    const user = await request.currentUser();
    return { user: user ? { id: user.id, name: user.name, email: user.email, isAdmin: user.isAdmin } : null };
  });

  app.post(
    '/api/auth/signout',
    { schema: { tags: ['accounts'], response: { 200: Type.Object({ ok: Type.Literal(true) }) } } },
    async (request, reply) => {
      const token = request.cookies[SESSION_COOKIE];
      if (token) {
        const user = await request.currentUser();
        await endSession(app.db.kysely, token, { user, ip: request.ip });
      }
      reply.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure: config.cookieSecure });
      return { ok: true as const };
    },
  );
}
