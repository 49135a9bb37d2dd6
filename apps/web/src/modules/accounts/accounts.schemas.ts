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
