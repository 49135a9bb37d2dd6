import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { checkNotReserved, registerUser } from './accounts.service.js';
import { checkNotBot } from '../../platform/http/bot-check.js';
import { sendVerificationLink, verificationDeps } from './email-verification.service.js';
import type { Mailer } from '../../platform/clients/mailer.js';
import { accountLimits } from '../sign-in/rate-limits.js';

const RegisterBodySchema = Type.Object({
  email: Type.Optional(Type.String()),
  password: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  referralCode: Type.Optional(Type.String({ description: 'letters, digits and hyphens, at most 20; case-insensitive' })),
  website: Type.Optional(Type.String({ description: 'honeypot: leave empty' })),
  botToken: Type.Optional(Type.String({ description: 'challenge response, when bot checks are on' })),
});

/**
 * Spec §4.1 `POST /api/register`: creates an account; no session is created. A verification link goes to the address:
 * until it is followed the address grants nothing (administrator rights, invites), though signing in works.
 */
export async function registerRoute(app: App, { config, mailer }: { config: WebConfig; mailer: Mailer }): Promise<void> {
  app.post(
    '/api/register',
    {
      onRequest: app.rateLimit(accountLimits(config).register),
      config: { invalidBody: 'EMAIL_PASSWORD_ARE_REQUIRED' },
      schema: {
        tags: ['accounts'],
        body: RegisterBodySchema,
        response: { 200: Type.Object({ id: Type.String(), email: Type.String(), name: Type.String() }) },
      },
    },
    async (request) => {
      const body = request.body ?? {};
      await checkNotBot({ honeypot: body.website, challengeToken: body.botToken, ip: request.ip }, config.botCheck);
      if (!body.email?.trim() || !body.password) throw new DomainError('EMAIL_PASSWORD_ARE_REQUIRED');
      checkNotReserved(body.email, config.productName);
      const user = await registerUser(
        app.db.kysely,
        { email: body.email, password: body.password, name: body.name, referralCode: body.referralCode, ip: request.ip },
        config.referralCredits,
      );
      try {
        const deps = verificationDeps(app.db.kysely, mailer, config, app.clock());
        await sendVerificationLink(deps, { userId: user.id, email: user.email, purpose: 'register' });
      } catch (err) {
        // The account exists either way; the link can be sent again from Settings.
        request.log.error({ err }, 'verification mail failed');
      }
      return user;
    },
  );
}
