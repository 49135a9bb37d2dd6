import { NOT_BLANK, invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { MEMORY_AGENT_ID_MAX, MEMORY_CONTENT_MAX, MEMORY_TAG_LENGTH_MAX, MEMORY_TAGS_MAX } from './memory.service.js';

export const Memory = Type.Object({
  id: Type.String(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  content: Type.String(),
  tags: Type.Array(Type.String()),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type Memory = Static<typeof Memory>;

/**
 * Each field answers with the message the route always gave it (see `invalidAs` in @aop/core), in the order it has
 * always checked them: content, agentId, tags. Ajv checks `not` before `maxLength`, so a blank content is "required"
 * however long it is. Left to the handler: `agentId: "all"`, and the tags' trimmed length and duplicates.
 */
export const AddMemoryBody = Type.Object({
  content: Type.String({
    ...NOT_BLANK,
    maxLength: MEMORY_CONTENT_MAX,
    ...invalidAs(refuse('FIELD_REQUIRED', { field: 'content' }), {
      maxLength: refuse('FIELD_TOO_LONG', { field: 'content', max: MEMORY_CONTENT_MAX }),
    }),
  }),
  agentId: Type.Optional(
    orNull(
      Type.String({
        minLength: 1,
        maxLength: MEMORY_AGENT_ID_MAX,
        description: 'the agent the memory is about; absent, null or `all`: every agent of the user',
        ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'agentId' })),
      }),
    ),
  ),
  tags: Type.Optional(
    orNull(
      Type.Array(Type.String({ description: `at most ${MEMORY_TAG_LENGTH_MAX} characters once trimmed` }), {
        maxItems: MEMORY_TAGS_MAX,
        ...invalidAs(refuse('INVALID_TAGS', { max: MEMORY_TAGS_MAX, length: MEMORY_TAG_LENGTH_MAX })),
      }),
    ),
  ),
});
export type AddMemoryBody = Static<typeof AddMemoryBody>;
