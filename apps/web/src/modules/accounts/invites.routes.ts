import { refuse } from '@aop/core/request-schema';
import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { requireSessionUser, type requireUser, sessionUserBeforeBody } from '../../platform/http/auth.js';
import { AdminInviteBody, CreatedInvite, InviteBody, VerifyInviteBody } from './accounts.schemas.js';
import { checkNotReserved, isEmail, normalizeEmail } from './accounts.service.js';
import { type InviteStatus, inviteEmail, inviteMail, listAllInvites, revokeInvite, verifyInvite } from './invites.service.js';
import type { Mailer } from '../../platform/clients/mailer.js';
import type { AuthUser } from '../../platform/sessions.js';
import { intQuery } from '../../platform/http/query.js';

const tags = ['invites'];
const STATUSES: readonly InviteStatus[] = ['pending', 'accepted', 'expired', 'revoked'];

/**
 * Spec §4.18 Coordination: `POST /api/invite` (session), `POST /api/invites/verify` (no auth, limited per client),
 * `GET`/`POST /api/admin/invites` (administrators: list; create without the pending cap; revoke).
 */
export async function inviteRoutes(app: App, { config, mailer }: { config: WebConfig; mailer: Mailer }): Promise<void> {
  /**
   * Checks the address, creates the invite and mails the code; the mail failing does not undo the invite. The address
   * is checked whole here: `POST /api/invite`'s schema has already refused a wrong type, but the administrators' body
   * cannot type it (see AdminInviteBody).
   */
  async function invite(inviter: AuthUser, rawEmail: unknown, ip: string, maxOutstanding: number | undefined) {
    if (rawEmail === undefined || rawEmail === null || rawEmail === '') throw new DomainError('EMAIL_REQUIRED');
    if (typeof rawEmail !== 'string' || !isEmail(rawEmail.trim())) throw new DomainError('INVALID_EMAIL_FORMAT');
    const email = normalizeEmail(rawEmail);
    checkNotReserved(email, config.productName);
    const created = await inviteEmail(app.db, {
      userId: inviter.id,
      email,
      ttlMs: config.invites.ttlMs,
      maxOutstanding,
      ip,
      clock: app.clock,
    });
    const mail = inviteMail({
      productName: config.productName,
      publicUrl: config.publicUrl,
      inviter: inviter.name || inviter.email,
      code: created.code,
      expiresAt: created.invite.expiresAt,
    });
    let emailSent = false;
    try {
      emailSent = (await mailer.send({ kind: 'invite', userId: inviter.id, to: email, ...mail })) === 'sent';
    } catch (err) {
      app.log.error({ err, invite: created.invite.id }, 'invite mail failed');
    }
    return { ...created, emailSent };
  }

  app.post(
    '/api/invite',
    {
      preValidation: sessionUserBeforeBody,
      config: { invalidBody: 'EMAIL_REQUIRED' },
      schema: {
        tags,
        description: `Invites an email address (signed-in session; at most ${config.invites.maxOutstanding} pending invites per user).`,
        body: InviteBody,
        response: { 201: CreatedInvite },
      },
    },
    async (request, reply) => {
      // Invites send mail in the platform's name: a signed-in person, never a leaked API key.
      const user = await requireSessionUser(request);
      // The invite mail names its sender: an address nobody proved would let anyone write in someone else's name.
      if (!user.emailVerified) throw new DomainError('EMAIL_VERIFICATION_REQUIRED');
      const created = await invite(user, request.body.email, request.ip, user.isAdmin ? undefined : config.invites.maxOutstanding);
      return reply.code(201).send(created);
    },
  );

  app.post(
    '/api/invites/verify',
    {
      onRequest: app.rateLimit({
        name: 'invite-verify',
        max: config.invites.verifyPerMinute,
        windowMs: 60_000,
        message: 'Too many requests',
      }),
      config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'code' }) },
      schema: {
        tags,
        description: 'Whether an invite code can be used (no authentication; limited per client address).',
        body: VerifyInviteBody,
        response: {
          200: Type.Object({
            valid: Type.Boolean(),
            email: Type.Optional(Type.String()),
            expiresAt: Type.Union([Type.String(), Type.Null()]),
            reason: Type.Optional(Type.String({ description: '`unknown`, `expired`, `revoked` or `accepted` when not valid' })),
          }),
        },
      },
    },
    async (request) => verifyInvite(app.db.kysely, request.body.code.trim(), app.clock()),
  );

  app.get(
    '/api/admin/invites',
    {
      schema: {
        tags,
        description: 'Every invite, newest first, with its sender (administrators). `status` filters; `limit` (50, ≤ 200), `offset`.',
        querystring: Type.Object({
          status: Type.Optional(Type.String()),
          limit: Type.Optional(Type.String()),
          offset: Type.Optional(Type.String()),
        }),
      },
    },
    async (request) => {
      await requireAdminUser(request);
      const { status } = request.query;
      if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) {
        throw new DomainError('INVALID_STATUS_FILTER', { allowed: STATUSES.join(', ') });
      }
      const limit = intQuery(request.query.limit, 'limit', 50, 1, 200);
      const offset = intQuery(request.query.offset, 'offset', 0, 0, 1_000_000);
      const page = await listAllInvites(app.db.kysely, app.clock(), { status: status as InviteStatus | undefined, limit, offset });
      return { ...page, limit, offset };
    },
  );

  app.post(
    '/api/admin/invites',
    {
      preValidation: sessionUserBeforeBody,
      schema: {
        tags,
        description:
          'Administrators: `{ action: "create", email }` (the default action; no pending cap) answers 201 like `POST /api/invite`; `{ action: "revoke", id }` revokes a pending invite.',
        body: AdminInviteBody,
      },
    },
    async (request, reply) => {
      const admin = await requireAdminUser(request);
      const body = request.body;
      const action = body.action ?? 'create';
      if (action === 'create') return reply.code(201).send(await invite(admin, body.email, request.ip, undefined));
      if (typeof body.id !== 'string' || body.id === '' || body.id.length > 100) throw new DomainError('FIELD_REQUIRED', { field: 'id' });
      const revoked = await revokeInvite(app.db.kysely, body.id, admin.id, app.clock(), request.ip);
      return { success: true, invite: revoked };
    },
  );
}

/** Administrators only: 401 without a signed-in session, 403 for others (an API key is not enough here). */
async function requireAdminUser(request: Parameters<typeof requireUser>[0]): Promise<AuthUser> {
  const user = await requireSessionUser(request);
  if (!user.isAdmin) throw new DomainError('FORBIDDEN');
  return user;
}
