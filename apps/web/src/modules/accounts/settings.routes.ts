import { type App, DomainError, isPublicError } from '@aop/core';
import { isUniqueViolation } from '@aop/db';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireSessionUser, requireUser, userBeforeBody } from '../../platform/http/auth.js';
import { PatchSettingsBody, Settings, UpdateSettingsBody } from './accounts.schemas.js';
import { checkNotReserved, checkPasswordLength, isEmail, normalizeEmail } from './accounts.service.js';
import type { Mailer } from '../../platform/clients/mailer.js';
import { changePassword, getSettings, patchSettings, requestEmailChange, updateSettings } from './settings.service.js';

/** Runs `fn`, turning anything but a public error into a 500 with the spec's message. */
async function orFail<T>(
  request: FastifyRequest,
  failure: 'SETTINGS_FETCH_FAILED' | 'SETTINGS_UPDATE_FAILED',
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isPublicError(err)) throw err;
    if (isUniqueViolation(err)) throw new DomainError('EMAIL_ALREADY_IN_USE');
    const answer = new DomainError(failure);
    request.log.error({ err }, answer.message);
    throw answer;
  }
}

const NAME_MAX = 100;

function checkedName(name: unknown): string | undefined {
  if (name === undefined) return undefined;
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (!trimmed) throw new DomainError('NAME_NOT_EMPTY');
  if (trimmed.length > NAME_MAX) throw new DomainError('NAME_TOO_LONG', { max: NAME_MAX });
  return trimmed;
}

/** Spec §4.1 settings and password change; shapes from the reference (research/not-shown-facts.md). */
export async function settingsRoutes(app: App, { config, mailer }: { config: WebConfig; mailer: Mailer }): Promise<void> {
  const schema = { tags: ['settings'], response: { 200: Settings } };

  app.get('/api/settings', { schema }, async (request) => {
    const user = await requireUser(request);
    return orFail(request, 'SETTINGS_FETCH_FAILED', () => getSettings(app.db, user.id, app.clock));
  });

  app.post(
    '/api/settings',
    {
      schema: {
        ...schema,
        description:
          'Updates the name, or asks to change the sign-in email (signed-in session and `currentPassword`): a link goes to the new address and a notice to the current one; the change takes effect when the link is followed (`pendingEmail` until then).',
        body: UpdateSettingsBody,
      },
      // The caller before the fields (an anonymous caller gets 401 whatever it sent); the email change's stricter
      // session rule stays in the handler.
      preValidation: userBeforeBody,
    },
    async (request) => {
      const body = request.body ?? {};
      // Changing the sign-in email is an account takeover step: never with an API key.
      const user = body.email === undefined ? await requireUser(request) : await requireSessionUser(request);
      const name = checkedName(body.name);
      let newEmail: string | undefined;
      if (body.email !== undefined) {
        const email = normalizeEmail(body.email);
        if (!isEmail(email)) throw new DomainError('INVALID_EMAIL_FORMAT');
        checkNotReserved(email, config.productName);
        if (email !== user.email.toLowerCase()) newEmail = email;
      }
      return orFail(request, 'SETTINGS_UPDATE_FAILED', async () => {
        if (newEmail) {
          await requestEmailChange(app.db, mailer, config, { user, newEmail, currentPassword: body.currentPassword, clock: app.clock });
        }
        return updateSettings(app.db, {
          userId: user.id,
          name,
          newEmail,
          fields: Object.keys(body).filter((field) => field !== 'currentPassword'),
          ip: request.ip,
          clock: app.clock,
        });
      });
    },
  );

  app.patch(
    '/api/settings',
    {
      schema: {
        ...schema,
        body: PatchSettingsBody,
      },
      preValidation: userBeforeBody,
    },
    async (request) => {
      const user = await requireUser(request);
      const name = checkedName(request.body?.name);
      const notifications = request.body?.notifications;
      return orFail(request, 'SETTINGS_UPDATE_FAILED', () => patchSettings(app.db, user.id, { name, notifications }, app.clock));
    },
  );

  app.post(
    '/api/settings/password',
    {
      config: { invalidBody: 'CURRENT_NEW_PASSWORD_REQUIRED' },
      schema: {
        tags: ['settings'],
        body: Type.Object({ currentPassword: Type.Optional(Type.String()), newPassword: Type.Optional(Type.String()) }),
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
    },
    async (request) => {
      const user = await requireSessionUser(request, 'NOT_AUTHENTICATED');
      const { currentPassword, newPassword } = request.body ?? {};
      if (!currentPassword || !newPassword) throw new DomainError('CURRENT_NEW_PASSWORD_REQUIRED');
      checkPasswordLength(newPassword);
      await changePassword(app.db, {
        userId: user.id,
        sessionId: user.sessionId,
        currentPassword,
        newPassword,
        ip: request.ip,
        clock: app.clock,
      });
      return { success: true as const };
    },
  );
}
