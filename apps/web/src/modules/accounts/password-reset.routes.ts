import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { checkPasswordLength, isEmail } from './accounts.service.js';
import { checkNotBot } from '../../platform/http/bot-check.js';
import type { Mailer } from '../../platform/clients/mailer.js';
import { resetPassword, sendResetLink } from './password-reset.service.js';
import { accountLimits } from '../sign-in/rate-limits.js';

const FORGOT_ANSWER = { message: 'If an account exists, a reset link has been sent' } as const;
const TOKEN_FORMAT = /^[0-9a-f]{64}$/;

/** Spec §4.1 forgot / reset password. */
export async function passwordResetRoutes(app: App, { config, mailer }: { config: WebConfig; mailer: Mailer }): Promise<void> {
  const limits = accountLimits(config);

  app.post(
    '/api/auth/forgot-password',
    {
      onRequest: app.rateLimit(limits.forgotPassword),
      config: { invalidBody: 'EMAIL_REQUIRED' },
      schema: {
        tags: ['accounts'],
        body: Type.Object({
          email: Type.Optional(Type.String()),
          website: Type.Optional(Type.String()),
          botToken: Type.Optional(Type.String()),
        }),
        response: { 200: Type.Object({ message: Type.String() }) },
      },
    },
    async (request) => {
      const body = request.body ?? {};
      await checkNotBot({ honeypot: body.website, challengeToken: body.botToken, ip: request.ip }, config.botCheck);
      const email = body.email?.trim();
      if (!email) throw new DomainError('EMAIL_REQUIRED');
      if (!isEmail(email)) throw new DomainError('INVALID_EMAIL_FORMAT');
      // The answer goes out before any look-up, so its timing says nothing about the account.
      setImmediate(() => {
        sendResetLink(app.db.kysely, mailer, config, { email, ip: request.ip, clock: app.clock }).catch((err) =>
          request.log.error({ err }, 'password reset mail failed'),
        );
      });
      return FORGOT_ANSWER;
    },
  );

  app.post(
    '/api/auth/reset-password',
    {
      onRequest: app.rateLimit(limits.resetPassword),
      config: { invalidBody: 'TOKEN_PASSWORD_ARE_REQUIRED' },
      schema: {
        tags: ['accounts'],
        body: Type.Object({ token: Type.Optional(Type.String()), password: Type.Optional(Type.String()) }),
        response: { 200: Type.Object({ message: Type.String() }) },
      },
    },
    async (request) => {
      const { token, password } = request.body ?? {};
      if (!token || !password) throw new DomainError('TOKEN_PASSWORD_ARE_REQUIRED');
      checkPasswordLength(password);
      if (!TOKEN_FORMAT.test(token)) throw new DomainError('INVALID_EXPIRED_TOKEN');
      if (!(await resetPassword(app.db.kysely, { token, password, ip: request.ip, clock: app.clock }))) {
        throw new DomainError('INVALID_EXPIRED_TOKEN');
      }
      return { message: 'Password reset successfully' };
    },
  );
}
