import { NOT_BLANK, invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { AGENT_ID_FORMAT } from '../../services/agents.js';
import { AMOUNT_MAX, DESCRIPTION_MAX, RECIPIENTS_MAX, TOTAL_TICKETS_MAX, VENUE_MAX } from '../../services/underground.js';
import { ACTION_FORMAT, MESSAGE_ID_FORMAT, SIGNATURE_FORMAT } from '../../services/underground-bus.js';
import { WEBHOOK_URL_MAX } from '../../services/underground-delivery.js';

/*
 * Underground request bodies (spec §4.11, §8). Each field answers with the catalogue error the handler answered before
 * the bodies were typed (see `invalidAs` in @aop/core); a body that is not a JSON object answers the route's
 * `invalidBody`. What a schema cannot say stays in the services, each noted where it is left out here:
 * - `agentId: null` counts as absent ("agentId is required") while a number is "Invalid agentId": both fail the same
 *   `type` keyword, so null is let through (`orNull`) and answered by `requiredAgentId`;
 * - `name` is held to 200 characters after trimming (a `maxLength` would count the spaces around it), and a missing
 *   one is answered in code (see `name`);
 * - a date's calendar (no 30 February), a money amount's decimal places (a JSON number is a double: `multipleOf`
 *   0.01 is inexact), a split's shares adding up to 100 and its addresses listed once, a URL's parsing;
 * - errors naming a recipient's index (`recipients[2].share …`): an annotation cannot name the index that failed.
 */

/** `agentId` as `requiredAgentId` reads it: missing or empty is "agentId is required", anything else malformed is "Invalid agentId". */
const agentId = orNull(
  Type.String({
    minLength: 1,
    pattern: AGENT_ID_FORMAT.source,
    description: 'one of the caller’s agents',
    ...invalidAs(refuse('INVALID_AGENTID'), {
      required: refuse('FIELD_REQUIRED', { field: 'agentId' }),
      minLength: refuse('FIELD_REQUIRED', { field: 'agentId' }),
    }),
  }),
);

/**
 * Trimmed, not blank; at most 200 characters once trimmed (checked in code). Required, but a missing one is answered
 * in code: Ajv checks every `required` property before any property's value, so `{ "agentId": "" }` would answer
 * "name is required" instead of the handler's first check, "agentId is required".
 */
const name = Type.Optional(
  Type.String({
    ...NOT_BLANK,
    description: 'required; at most 200 characters once trimmed',
    ...invalidAs(refuse('FIELD_REQUIRED', { field: 'name' })),
  }),
);

const optionalText = (field: string, max: number) =>
  Type.Optional(
    orNull(
      Type.String({
        maxLength: max,
        ...invalidAs(refuse('FIELD_NOT_STRING', { field }), { maxLength: refuse('FIELD_TOO_LONG', { field, max }) }),
      }),
    ),
  );

/**
 * `parseIsoDate`'s shape (`2025-06-01`, `2025-06-01T20:00:00Z`, offsets allowed); the calendar is checked in code.
 * `[Tt]`/`[Zz]` stand for the service's case-insensitive flag, which a JSON Schema pattern cannot carry.
 */
const ISO_DATE_PATTERN = '^\\d{4}-\\d{2}-\\d{2}(?:[Tt]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,9})?)?(?:[Zz]|[+-]\\d{2}:?\\d{2})?)?$';

export const EventBody = Type.Object({
  agentId,
  name,
  description: optionalText('description', DESCRIPTION_MAX),
  venue: optionalText('venue', VENUE_MAX),
  eventDate: Type.Optional(
    orNull(
      Type.String({
        pattern: ISO_DATE_PATTERN,
        description: 'ISO 8601 date or date-time; without an offset it is UTC',
        ...invalidAs(refuse('EVENTDATE_ISO_8601_DATE')),
      }),
    ),
  ),
  ticketPriceUsdc: Type.Optional(
    orNull(
      Type.Number({
        minimum: 0,
        maximum: AMOUNT_MAX,
        description: 'USDC, at most 6 decimal places (checked in code); default 0',
        ...invalidAs(refuse('TICKETPRICEUSDC_NON_NEGATIVE_NUMBER')),
      }),
    ),
  ),
  totalTickets: Type.Optional(
    orNull(
      Type.Integer({
        minimum: 1,
        maximum: TOTAL_TICKETS_MAX,
        description: 'default 100',
        ...invalidAs(refuse('TOTALTICKETS_POSITIVE_INTEGER')),
      }),
    ),
  ),
});
export type EventBody = Static<typeof EventBody>;

export const WalletBody = Type.Object({ agentId });
export type WalletBody = Static<typeof WalletBody>;

export const SplitBody = Type.Object({
  agentId,
  name,
  totalAmount: Type.Number({
    exclusiveMinimum: 0,
    maximum: AMOUNT_MAX,
    description: 'at most 2 decimal places (checked in code)',
    ...invalidAs(refuse('TOTALAMOUNT_POSITIVE_NUMBER')),
  }),
  recipients: Type.Array(
    // Each entry's errors name its index (`recipients[0].address …`), so the entries are checked in code.
    Type.Unknown({
      description:
        '`{ address, share }`: `address` 0x and 40 hex characters, listed once; `share` a percentage from 0 to 100 with at most 2 decimal places. The shares add up to exactly 100.',
    }),
    {
      minItems: 1,
      maxItems: RECIPIENTS_MAX,
      ...invalidAs(refuse('RECIPIENTS_NON_EMPTY_ARRAY'), { maxItems: refuse('TOO_MANY_RECIPIENTS', { max: RECIPIENTS_MAX }) }),
    },
  ),
});
export type SplitBody = Static<typeof SplitBody>;

export const WebhookBody = Type.Object({
  // Parsed as a URL in code (scheme, credentials, public address): `new URL` also accepts what a pattern would refuse.
  url: Type.String({
    minLength: 1,
    maxLength: WEBHOOK_URL_MAX,
    description: 'http(s) URL the bus delivers to',
    ...invalidAs(refuse('URL_NOT_HTTP')),
  }),
});
export type WebhookBody = Static<typeof WebhookBody>;

const REQUIRED = refuse('MESSAGEID_ACTION_SIGNATURE_ARE_REQUIRED');
/** A required non-empty string whose malformed value answers `otherwise`. */
const requiredText = (pattern: RegExp, otherwise: ReturnType<typeof refuse>, description: string) =>
  Type.String({
    minLength: 1,
    pattern: pattern.source,
    description,
    ...invalidAs(otherwise, { type: REQUIRED, minLength: REQUIRED, required: REQUIRED }),
  });
const optionalAgentId = (field: string) =>
  Type.Optional(orNull(Type.String({ pattern: AGENT_ID_FORMAT.source, ...invalidAs(refuse('INVALID_PARAMETER', { name: field })) })));

/**
 * `AgentMessage`. Open to other fields: the signature covers the whole message, so nothing may be removed from it.
 * A signature that is not hex of a signature's length is 401 `Invalid signature`, as a wrong one is.
 */
export const AgentMessageBody = Type.Object({
  messageId: requiredText(MESSAGE_ID_FORMAT, refuse('INVALID_MESSAGEID'), 'unique per message: a replay is 409'),
  action: requiredText(ACTION_FORMAT, refuse('INVALID_ACTION'), '`BOOKING_*` negotiate a booking, `AMPLIFY_*` fan out'),
  fromAgentId: optionalAgentId('fromAgentId'),
  toAgentId: optionalAgentId('toAgentId'),
  payload: Type.Optional(Type.Unknown({ description: 'the action’s data (`terms`, `negotiationId`, `targets`)' })),
  signature: requiredText(
    SIGNATURE_FORMAT,
    refuse('SIGNATURE_VERIFICATION_FAILED'),
    'EIP-191 signature by the sending agent’s wallet over the canonical JSON of the message without `signature`',
  ),
});
export type AgentMessageBody = Static<typeof AgentMessageBody>;
