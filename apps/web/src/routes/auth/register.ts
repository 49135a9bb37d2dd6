import { type App, HttpError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { checkNotReserved, registerUser } from '../../services/accounts.js';
import { checkNotBot } from '../../services/bot-check.js';
import { accountLimits } from './rate-limits.js';

const RegisterBodySchema = Type.Object({
  email: Type.Optional(Type.String()),
  password: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  referralCode: Type.Optional(Type.String({ description: 'letters, digits and hyphens, at most 20; case-insensitive' })),
  website: Type.Optional(Type.String({ description: 'honeypot: leave empty' })),
  botToken: Type.Optional(Type.String({ description: 'challenge response, when bot checks are on' })),
});

/** Spec §4.1 `POST /api/register`: creates an account; no session is created. */
export async function registerRoute(app: App, { config }: { config: WebConfig }): Promise<void> {
  app.post(
    '/api/register',
    {
      onRequest: app.rateLimit(accountLimits(config).register),
      config: { invalidBodyMessage: 'Email and password are required' },
      schema: {
        tags: ['accounts'],
        body: RegisterBodySchema,
        response: { 200: Type.Object({ id: Type.String(), email: Type.String(), name: Type.String() }) },
      },
    },
    async (request) => {
      const body = request.body ?? {};
      await checkNotBot({ honeypot: body.website, challengeToken: body.botToken, ip: request.ip }, config.botCheck);
      if (!body.email?.trim() || !body.password) throw new HttpError(400, 'Email and password are required');
      checkNotReserved(body.email, config.productName);
      return registerUser(
        app.db.kysely,
        { email: body.email, password: body.password, name: body.name, referralCode: body.referralCode, ip: request.ip },
        config.referralCredits,
      );
    },
  );
}
