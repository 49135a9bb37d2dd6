import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { SKILL_AGENT_ID_MAX, SKILL_DESCRIPTION_MAX, SKILL_NAME } from './skills.service.js';

export const Skill = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  config: Type.Record(Type.String(), Type.Unknown()),
  installedAt: Type.String(),
});
export type Skill = Static<typeof Skill>;

// Each field answers with the message spec §4.18 gives it (see `invalidAs` in @aop/core).
const agentId = orNull(
  Type.String({
    minLength: 1,
    maxLength: SKILL_AGENT_ID_MAX,
    description: 'the agent the skill is for; absent, null or `all`: every agent of the user',
    ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'agentId' })),
  }),
);
const description = orNull(
  Type.String({
    maxLength: SKILL_DESCRIPTION_MAX,
    ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'description' }), {
      maxLength: refuse('FIELD_TOO_LONG', { field: 'description', max: SKILL_DESCRIPTION_MAX }),
    }),
  }),
);
const config = Type.Record(Type.String(), Type.Unknown(), {
  description: 'at most 64 KiB as JSON',
  ...invalidAs(refuse('CONFIG_OBJECT')),
});
const enabled = Type.Boolean(invalidAs(refuse('FIELD_NOT_BOOLEAN', { field: 'enabled' })));

export const InstallSkillBody = Type.Object({
  name: Type.String({ pattern: SKILL_NAME.source, ...invalidAs(refuse('INVALID_SKILL_NAME')) }),
  agentId: Type.Optional(agentId),
  description: Type.Optional(description),
  config: Type.Optional(orNull(config)),
  enabled: Type.Optional(enabled),
});
export type InstallSkillBody = Static<typeof InstallSkillBody>;

export const UpdateSkillBody = Type.Object({
  agentId: Type.Optional(agentId),
  enabled: Type.Optional(enabled),
  config: Type.Optional(config),
  description: Type.Optional(description),
});
export type UpdateSkillBody = Static<typeof UpdateSkillBody>;

// ---------------------------------------------------------------------------
// Built-in skills: booking-settlement and instant-split (docs/decisions.md "Booking settlement and instant splits")

const USDC_PATTERN = '^\\d{1,14}(\\.\\d{1,6})?$';
/** A USDC amount as text: exact, at most 6 decimals (USDC's own precision). */
const usdc = (description: string) => Type.String({ pattern: USDC_PATTERN, description, examples: ['250.00'] });
/** Booking ids are bus message ids (`[A-Za-z0-9._:-]`, up to 128 characters). */
const BOOKING_ID_MAX = 128;
const bookingId = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: BOOKING_ID_MAX,
    description,
    ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'bookingId' }), {
      required: refuse('FIELD_REQUIRED', { field: 'bookingId' }),
      minLength: refuse('FIELD_REQUIRED', { field: 'bookingId' }),
      maxLength: refuse('FIELD_TOO_LONG', { field: 'bookingId', max: BOOKING_ID_MAX }),
    }),
  });

export const BookingSettlement = Type.Object({
  bookingId: Type.String(),
  payerAgentId: Type.String(),
  payeeAgentId: Type.String(),
  amount: usdc('the fee settled'),
  currency: Type.Literal('USDC'),
  settledAt: Type.String({ format: 'date-time' }),
});
export type BookingSettlement = Static<typeof BookingSettlement>;

export const SettleableBooking = Type.Object({
  bookingId: Type.String(),
  role: Type.Union([Type.Literal('payer'), Type.Literal('payee')], {
    description: '`payer`: the caller owns the requesting agent (and settles); `payee`: the responding agent',
  }),
  payerAgentId: Type.String(),
  payeeAgentId: Type.String(),
  payerAddress: Type.Union([Type.String(), Type.Null()], { description: 'the payer agent’s underground wallet' }),
  payeeAddress: Type.Union([Type.String(), Type.Null()], { description: 'the payee agent’s underground wallet: where the fee goes' }),
  fee: usdc('the agreed fee'),
  currency: Type.Literal('USDC'),
  date: Type.Union([Type.String(), Type.Null()]),
  eventId: Type.Union([Type.Integer(), Type.Null()]),
  venue: Type.Union([Type.String(), Type.Null()]),
  acceptedAt: Type.String({ format: 'date-time' }),
  settlement: Type.Union([BookingSettlement, Type.Null()]),
});
export type SettleableBooking = Static<typeof SettleableBooking>;

/** `limit`: 1-100, 50 when absent. */
const limit = Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 }));

export const BookingQuery = Type.Object({
  status: Type.Optional(Type.Union([Type.Literal('settled'), Type.Literal('unsettled')])),
  agentId: Type.Optional(Type.String({ minLength: 1, maxLength: SKILL_AGENT_ID_MAX })),
  limit,
});

export const SettleBookingBody = Type.Object({
  bookingId: bookingId('the booking: the `messageId` of the `BOOKING_REQUEST` that opened it'),
  amount: Type.String({
    pattern: USDC_PATTERN,
    description: 'the agreed fee in USDC, as a decimal string: must equal the booking’s fee',
    ...invalidAs(refuse('AMOUNT_USDC_DECIMAL_STRING'), { required: refuse('FIELD_REQUIRED', { field: 'amount' }) }),
  }),
});
export type SettleBookingBody = Static<typeof SettleBookingBody>;

export const InstantSplit = Type.Object({
  id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  agentId: Type.Union([Type.String(), Type.Null()]),
  bookingId: Type.Union([Type.String(), Type.Null()]),
  amount: usdc('the amount split'),
  currency: Type.Literal('USDC'),
  recipients: Type.Array(
    Type.Object({
      address: Type.String({ description: 'lower-case' }),
      share: Type.Number({ description: 'percent' }),
      amount: usdc('this recipient’s part; the parts add up to the amount exactly'),
    }),
  ),
  createdAt: Type.String({ format: 'date-time' }),
});
export type InstantSplit = Static<typeof InstantSplit>;

export const InstantSplitQuery = Type.Object({
  agentId: Type.Optional(Type.String({ minLength: 1, maxLength: SKILL_AGENT_ID_MAX })),
  bookingId: Type.Optional(Type.String({ minLength: 1, maxLength: BOOKING_ID_MAX })),
  limit,
});

/** Spec §8: split names. */
export const SPLIT_NAME_MAX = 200;
export const SPLIT_RECIPIENTS_MAX = 100;
/** Spec §8 split shares; the recipients are checked in code so each error names its entry. */
export const InstantSplitBody = Type.Object({
  amount: Type.Optional(
    Type.String({
      pattern: USDC_PATTERN,
      description: 'USDC to split, a positive decimal string; or send `bookingId` instead',
      ...invalidAs(refuse('AMOUNT_USDC_DECIMAL_STRING')),
    }),
  ),
  bookingId: Type.Optional(bookingId('a settled booking whose fee your agent received (split once); or send `amount` instead')),
  agentId: Type.Optional(agentId),
  name: Type.Optional(
    orNull(
      Type.String({
        description: `at most ${SPLIT_NAME_MAX} characters once trimmed`,
        ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'name' })),
      }),
    ),
  ),
  recipients: Type.Array(
    Type.Unknown({
      description:
        '`{ address, share }`: `address` 0x and 40 hex characters, listed once; `share` a percentage from 0 to 100 with at most 2 decimal places. The shares add up to exactly 100.',
    }),
    {
      minItems: 1,
      maxItems: SPLIT_RECIPIENTS_MAX,
      ...invalidAs(refuse('RECIPIENTS_NON_EMPTY_ARRAY'), { maxItems: refuse('TOO_MANY_RECIPIENTS', { max: SPLIT_RECIPIENTS_MAX }) }),
    },
  ),
});
export type InstantSplitBody = Static<typeof InstantSplitBody>;
