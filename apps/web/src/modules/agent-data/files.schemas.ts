import { NOT_BLANK, invalidAs, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { FILE_AGENT_ID_MAX, FILE_CONTENT_MAX_BYTES, FILE_PATH_MAX, FILE_PATH_PATTERN } from './files.service.js';

export const FileInfo = Type.Object({ path: Type.String(), size: Type.Integer({ description: 'UTF-8 bytes' }), updatedAt: Type.String() });
export type FileInfo = Static<typeof FileInfo>;

/**
 * The body of `POST /api/files`: each field answers with the message the route always gave it (see `invalidAs` in
 * @aop/core), checked in the route's order: agentId, path, content. A missing field answers like a wrong one, in that
 * order too, so the body is one object per field under `allOf`: a single object would answer a missing `content`
 * before a bad `path` (Ajv checks `required` before `properties`). Ajv checks `not` before `maxLength`, so a blank
 * agentId is "required" however long it is. Left to the handler: the content's size in UTF-8 bytes.
 */
export const SaveFileBody = Type.Intersect([
  Type.Object({
    agentId: Type.String({
      ...NOT_BLANK,
      maxLength: FILE_AGENT_ID_MAX,
      ...invalidAs(refuse('FIELD_REQUIRED', { field: 'agentId' }), { maxLength: refuse('INVALID_AGENTID') }),
    }),
  }),
  Type.Object({
    path: Type.String({
      minLength: 1,
      maxLength: FILE_PATH_MAX,
      pattern: FILE_PATH_PATTERN,
      description: 'relative, `/`-separated; no empty, `.` or `..` segments, backslashes or control characters',
      ...invalidAs(refuse('INVALID_PATH')),
    }),
  }),
  Type.Object({
    content: Type.String({
      description: `at most ${FILE_CONTENT_MAX_BYTES} bytes as UTF-8`,
      ...invalidAs(refuse('FIELD_REQUIRED', { field: 'content' })),
    }),
  }),
]);
export type SaveFileBody = Static<typeof SaveFileBody>;
