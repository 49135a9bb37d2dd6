import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { requireSessionUser } from '../../platform/http/auth.js';
import { confirmEmail, pendingEmailOf, sendVerificationLink, verificationDeps } from './email-verification.service.js';
import type { Mailer } from '../../platform/clients/mailer.js';
import { accountLimits } from '../sign-in/rate-limits.js';

/**
 * Email verification (no spec section: the spec's accounts never prove an address; docs/decisions.md "Email
 * verification"). The mailed link opens the dashboard's `/verify-email`, which posts its token here.
 */
export async function verifyEmailRoutes(app: App, { config, mailer }: { config: WebConfig; mailer: Mailer }): Promise<void> {
  const limits = accountLimits(config);

  app.post(
    '/api/auth/verify-email',
    {
      onRequest: app.rateLimit(limits.verifyEmail),
      config: { invalidBody: 'TOKEN_REQUIRED' },
      schema: {
        tags: ['accounts'],
        description: 'Follows an email verification link: the address counts from now on (an email change takes effect).',
        body: Type.Object({ token: Type.Optional(Type.String()) }),
        response: { 200: Type.Object({ message: Type.String(), email: Type.String() }) },
      },
    },
    async (request) => {
      const token = request.body?.token;
      if (!token) throw new DomainError('TOKEN_REQUIRED');
      const verified = await confirmEmail(app.db.kysely, token, { now: app.clock(), ip: request.ip });
      return { message: verified.previousEmail ? 'Email address changed' : 'Email address verified', email: verified.email };
    },
  );

  app.post(
    '/api/auth/verify-email/resend',
    {
      onRequest: app.rateLimit(limits.resendVerification),
      schema: {
        tags: ['accounts'],
        description:
          'Mails a new verification link: to the address an open email change waits for, else to the unverified sign-in address (signed-in session).',
        response: { 200: Type.Object({ message: Type.String(), email: Type.String() }) },
      },
    },
    async (request) => {
      const user = await requireSessionUser(request);
      const now = app.clock();
      const pending = await pendingEmailOf(app.db.kysely, user, now);
      if (!pending && user.emailVerified) throw new DomainError('EMAIL_ADDRESS_ALREADY_VERIFIED');
      const email = pending ?? user.email.toLowerCase();
      const deps = verificationDeps(app.db.kysely, mailer, config, now);
      await sendVerificationLink(deps, { userId: user.id, email, purpose: pending ? 'change' : 'register' });
      return { message: 'Verification link sent', email };
    },
  );
}
