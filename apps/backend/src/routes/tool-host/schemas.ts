import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';

/** `POST /api/tool-host/validate-config`: null answers `config is required` (in code), like a missing one. */
export const ValidateConfigBody = Type.Object({
  config: Type.Optional(
    orNull(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'an agent configuration object, as stored',
        ...invalidAs(refuse('INVALID_CONFIG_OBJECT')),
      }),
    ),
  ),
});
export type ValidateConfigBody = Static<typeof ValidateConfigBody>;
