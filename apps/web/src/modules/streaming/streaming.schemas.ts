import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { DEFAULT_DJ_NAME, DJ_NAME_MAX } from './streaming.service.js';

/**
 * `POST /api/radio/streams`. Surrounding whitespace is not part of a value (the handler trims), so the patterns allow
 * it: `\s` is exactly the set `String.prototype.trim` removes. A blank wallet is a missing one; anything else must
 * be an address once trimmed (viem's `isAddress`, not strict about case), and both come before `name` is looked at.
 */
const wallet = Type.String({
  description: 'the smart-contract wallet that streams: 0x and 40 hex digits',
  allOf: [
    Type.String({ pattern: '\\S', ...invalidAs(refuse('WALLET_ADDRESS_REQUIRED')) }),
    Type.String({ pattern: '^\\s*0x[0-9a-fA-F]{40}\\s*$', ...invalidAs(refuse('INVALID_WALLET_ADDRESS')) }),
  ],
  ...invalidAs(refuse('WALLET_ADDRESS_REQUIRED')),
});

/** The length limit applies to the trimmed name, so it stays with the handler. */
const name = orNull(
  Type.String({
    description: `at most ${DJ_NAME_MAX} characters once trimmed; absent, null or blank: ${DEFAULT_DJ_NAME}`,
    ...invalidAs(refuse('NAME_STRING')),
  }),
);

export const CreateStreamBody = Type.Object({ wallet, name: Type.Optional(name) });
export type CreateStreamBody = Static<typeof CreateStreamBody>;
