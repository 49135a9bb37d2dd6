import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';

/*
 * Each field answers with the message it had when the handler checked it (see `invalidAs` in @aop/core), in the order
 * it was checked: path, content, encoding, agentId (write); message, agentId (git-sync). Null or empty counting as
 * absent, the path's rules, base64 and the agent id's format stay in code, where the same checks serve the queries.
 */

/** `checkedAgentId` refuses a missing or malformed id after the other fields; the schema gives only its type. */
const agentId = orNull(Type.String({ description: 'the agent whose workspace it is', ...invalidAs(refuse('INVALID_AGENTID')) }));

export const WriteFileBody = Type.Object({
  path: Type.Optional(orNull(Type.String({ description: 'relative to the workspace', ...invalidAs(refuse('INVALID_PATH')) }))),
  content: Type.Optional(orNull(Type.String(invalidAs(refuse('FIELD_NOT_STRING', { field: 'content' }))))),
  encoding: Type.Optional(
    Type.Unsafe<'utf8' | 'base64' | null>({
      type: ['string', 'null'],
      enum: ['utf8', 'base64', null],
      description: '`utf8` (default) or `base64`',
      ...invalidAs(refuse('ENCODING_UTF8_BASE64')),
    }),
  ),
  agentId: Type.Optional(agentId),
});
export type WriteFileBody = Static<typeof WriteFileBody>;

export const GitSyncBody = Type.Object({
  message: Type.Optional(
    orNull(
      Type.String({
        description: 'the commit message (at most 1000 characters); absent or empty: `Workspace sync <time>`',
        ...invalidAs(refuse('INVALID_MESSAGE')),
      }),
    ),
  ),
  agentId: Type.Optional(agentId),
});
export type GitSyncBody = Static<typeof GitSyncBody>;
