import { NOT_BLANK, invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';

export const Settings = Type.Object({
  id: Type.String(),
  email: Type.String(),
  emailVerified: Type.Boolean({ description: 'whether the verification link mailed to `email` was followed' }),
  pendingEmail: Type.Union([Type.String(), Type.Null()], {
    description: 'the address an email change waits for: it takes effect when the link mailed there is followed',
  }),
  name: Type.String(),
  plan: Type.String(),
  credits: Type.Number({ description: 'referral credits' }),
  twoFactorEnabled: Type.Boolean(),
  notifications: Type.Record(Type.String(), Type.Unknown()),
  runtime: Type.Object({
    managed: Type.Boolean(),
    instanceId: Type.Union([Type.String(), Type.Null()]),
    url: Type.Union([Type.String(), Type.Null()]),
  }),
});
export type Settings = Static<typeof Settings>;

export const Invite = Type.Object({
  id: Type.String(),
  email: Type.String(),
  status: Type.String({ description: '`pending`, `accepted`, `expired` or `revoked`' }),
  createdAt: Type.String(),
  expiresAt: Type.String(),
  acceptedAt: Type.Union([Type.String(), Type.Null()]),
  revokedAt: Type.Union([Type.String(), Type.Null()]),
});
export type Invite = Static<typeof Invite>;

export const CreatedInvite = Type.Object({
  invite: Invite,
  code: Type.String({ description: 'shown once; also mailed to the address' }),
  emailSent: Type.Boolean({ description: 'false when the mail could not be sent or the address is suppressed' }),
});
export type CreatedInvite = Static<typeof CreatedInvite>;

// Request bodies: each field answers with the message the invite routes have always given it (see `invalidAs` in
// @aop/core). What JSON Schema cannot say stays in the handler: `null` meaning "no address", and the address format,
// which is checked on the trimmed text.

export const InviteBody = Type.Object({
  email: orNull(
    Type.String({
      minLength: 1,
      description: 'the address to invite; `null` or empty answers "Email is required"',
      ...invalidAs(refuse('INVALID_EMAIL_FORMAT'), { required: refuse('EMAIL_REQUIRED'), minLength: refuse('EMAIL_REQUIRED') }),
    }),
  ),
});
export type InviteBody = Static<typeof InviteBody>;

export const VerifyInviteBody = Type.Object({
  code: Type.String({
    ...NOT_BLANK,
    description: 'the invite code (surrounding spaces ignored)',
    ...invalidAs(refuse('FIELD_REQUIRED', { field: 'code' })),
  }),
});
export type VerifyInviteBody = Static<typeof VerifyInviteBody>;

export const ADMIN_INVITE_ACTIONS = ['create', 'revoke'] as const;

export const AdminInviteBody = Type.Object({
  action: Type.Optional(
    Type.Union([...ADMIN_INVITE_ACTIONS.map((action) => Type.Literal(action)), Type.Null()], {
      description: 'absent or null: `create`',
      ...invalidAs(refuse('INVALID_ACTION_CHOICE', { allowed: ADMIN_INVITE_ACTIONS.join(' or ') })),
    }),
  ),
  // Which of these counts depends on `action` (a revoke ignores `email`, a create ignores `id`): typing them here
  // would refuse a body the handler accepts, so the handler checks the one the action uses.
  email: Type.Optional(Type.Unknown({ description: '`create`: the address to invite' })),
  id: Type.Optional(Type.Unknown({ description: '`revoke`: the invite, a string of at most 100 characters' })),
});
export type AdminInviteBody = Static<typeof AdminInviteBody>;

// Settings bodies: a JSON body is not coerced, so a field of the wrong type answers with the word for that field rather
// than being taken as text (`name: 5` was "5"). Emptiness and length stay with the route (they apply once trimmed).
const settingsName = Type.String(invalidAs(refuse('NAME_NOT_EMPTY')));

export const UpdateSettingsBody = Type.Object({
  name: Type.Optional(settingsName),
  email: Type.Optional(Type.String(invalidAs(refuse('INVALID_EMAIL_FORMAT')))),
  currentPassword: Type.Optional(Type.String(invalidAs(refuse('FIELD_NOT_STRING', { field: 'currentPassword' })))),
});
export type UpdateSettingsBody = Static<typeof UpdateSettingsBody>;

export const PatchSettingsBody = Type.Object({
  name: Type.Optional(settingsName),
  notifications: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type PatchSettingsBody = Static<typeof PatchSettingsBody>;
