import { type App, HttpError, randomHex, sha256Hex } from '@aop/core';
import { writeAudit } from '@aop/db';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { checkPasswordLength, findUserByEmail, isEmail } from './accounts.service.js';
import { checkNotBot } from '../../platform/http/bot-check.js';
import { cancelEmailLinks, markCurrentEmailVerified } from './email-verification.service.js';
import type { Mailer } from '../../platform/clients/mailer.js';
import { hashPassword } from './passwords.js';
import { deleteUserSessions } from '../../platform/sessions.js';
import { accountLimits } from '../sign-in/rate-limits.js';

const FORGOT_ANSWER = { message: 'If an account exists, a reset link has been sent' } as const;
const TOKEN_FORMAT = /^[0-9a-f]{64}$/;

/** Spec §4.1 forgot / reset password. */
export async function passwordResetRoutes(app: App, { config, mailer }: { config: WebConfig; mailer: Mailer }): Promise<void> {
  const limits = accountLimits(config);

  /** Creates a single-use token and mails the link; runs after the answer is sent. */
  async function sendResetLink(email: string, ip: string): Promise<void> {
    const user = await findUserByEmail(app.db.kysely, email);
    if (!user) return;
    const token = randomHex(32);
    await app.db.kysely
      .insertInto('password_reset_tokens')
      .values({ token_hash: sha256Hex(token), user_id: user.id, expires_at: new Date(app.clock() + config.passwordResetTtlMs) })
      .execute();
    await writeAudit(app.db.kysely, { userId: user.id, action: 'password.reset_requested', ip });
    const minutes = Math.round(config.passwordResetTtlMs / 60_000);
    await mailer.send({
      kind: 'password-reset',
      userId: user.id,
      to: user.email,
      subject: 'Reset your password',
      text: [
        `Someone (hopefully you) asked to reset the password of ${user.email}.`,
        '',
        `Choose a new password here (the link works once, for ${minutes} minutes):`,
        `${config.publicUrl}/reset-password?token=${token}`,
        '',
        'If you did not ask for this, ignore this message: your password stays as it is.',
      ].join('\n'),
    });
  }

  app.post(
    '/api/auth/forgot-password',
    {
      onRequest: app.rateLimit(limits.forgotPassword),
      config: { invalidBodyMessage: 'Email is required' },
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
      if (!email) throw new HttpError(400, 'Email is required');
      if (!isEmail(email)) throw new HttpError(400, 'Invalid email format');
      // The answer goes out before any look-up, so its timing says nothing about the account.
      setImmediate(() => {
        sendResetLink(email, request.ip).catch((err) => request.log.error({ err }, 'password reset mail failed'));
      });
      return FORGOT_ANSWER;
    },
  );

  app.post(
    '/api/auth/reset-password',
    {
      onRequest: app.rateLimit(limits.resetPassword),
      config: { invalidBodyMessage: 'Token and password are required' },
      schema: {
        tags: ['accounts'],
        body: Type.Object({ token: Type.Optional(Type.String()), password: Type.Optional(Type.String()) }),
        response: { 200: Type.Object({ message: Type.String() }) },
      },
    },
    async (request) => {
      const { token, password } = request.body ?? {};
      if (!token || !password) throw new HttpError(400, 'Token and password are required');
      checkPasswordLength(password);
      if (!TOKEN_FORMAT.test(token)) throw new HttpError(400, 'Invalid or expired token');
      const passwordHash = await hashPassword(password);
      const now = new Date(app.clock());
      await app.db.kysely.transaction().execute(async (trx) => {
        // Marking the token used is the check: of two concurrent resets only one updates the row.
        const claimed = await trx
          .updateTable('password_reset_tokens')
          .set({ used_at: now })
          .where('token_hash', '=', sha256Hex(token))
          .where('used_at', 'is', null)
          .where('expires_at', '>', now)
          .returning('user_id')
          .executeTakeFirst();
        if (!claimed) throw new HttpError(400, 'Invalid or expired token');
        await trx.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', claimed.user_id).execute();
        // The link went to the account's address, so following it proves that address.
        await markCurrentEmailVerified(trx, claimed.user_id, now);
        // A reset is what people do when they fear someone else is signed in: end every session, and every email
        // change such a person may have started (its link went to their mailbox).
        await deleteUserSessions(trx, claimed.user_id);
        await cancelEmailLinks(trx, claimed.user_id, now);
        // Other outstanding links for this account stop working too.
        await trx
          .updateTable('password_reset_tokens')
          .set({ used_at: now })
          .where('user_id', '=', claimed.user_id)
          .where('used_at', 'is', null)
          .execute();
        await writeAudit(trx, { userId: claimed.user_id, action: 'password.reset', ip: request.ip });
      });
      return { message: 'Password reset successfully' };
    },
  );
}
