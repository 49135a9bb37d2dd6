import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import { deleteFile, getFile, listFiles, saveFile } from './files.service.js';

export const FILE_PATH_MAX = 512;
/** UTF-8 bytes of one file; the whole request body is at most 1 MiB anyway (spec §8). */
export const FILE_CONTENT_MAX_BYTES = 1_000_000;
const AGENT_ID_MAX = 200;

/**
 * A workspace path: relative, `/`-separated, at most 512 characters, without
 * empty, `.` or `..` segments, backslashes or control characters.
 */
export function isValidFilePath(path: unknown): path is string {
  if (typeof path !== 'string' || path.length === 0 || path.length > FILE_PATH_MAX) return false;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  if (path.startsWith('/') || path.includes('\\') || /[\u0000-\u001f\u007f]/.test(path)) return false;
  return path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

const FileInfoSchema = Type.Object({ path: Type.String(), size: Type.Integer({ description: 'UTF-8 bytes' }), updatedAt: Type.String() });

function requiredAgentId(agentId: unknown): string {
  if (typeof agentId !== 'string' || agentId.trim() === '') throw new DomainError('FIELD_REQUIRED', { field: 'agentId' });
  if (agentId.length > AGENT_ID_MAX) throw new DomainError('INVALID_AGENTID');
  return agentId;
}

function checkedPath(path: unknown): string {
  if (!isValidFilePath(path)) throw new DomainError('INVALID_PATH');
  return path;
}

/** Spec §4.18 agent interaction files: a small workspace per agent of the user. */
export async function filesRoutes(app: App): Promise<void> {
  const Query = Type.Object({
    agentId: Type.Optional(Type.String({ description: 'required' })),
    path: Type.Optional(Type.String({ description: 'one file; omitted: the list' })),
  });

  app.get(
    '/api/files',
    { schema: { tags: ['files'], description: '`{ files: [{ path, size, updatedAt }] }`, or `{ file }` with `path`', querystring: Query } },
    async (request) => {
      const user = await requireUser(request);
      const agentId = requiredAgentId(request.query.agentId);
      if (request.query.path === undefined) {
        return { files: await listFiles(app.db, user.id, agentId) };
      }
      const path = checkedPath(request.query.path);
      const file = await getFile(app.db, user.id, agentId, path);
      if (!file) throw new DomainError('FILE_NOT_FOUND');
      return { file };
    },
  );

  app.post(
    '/api/files',
    {
      config: { invalidBodyMessage: 'agentId is required' },
      schema: {
        tags: ['files'],
        description: 'Creates (201) or replaces (200) a file.',
        body: Type.Object({
          agentId: Type.Optional(Type.Unknown()),
          path: Type.Optional(Type.Unknown()),
          content: Type.Optional(Type.Unknown()),
        }),
        response: { 200: Type.Object({ file: FileInfoSchema }), 201: Type.Object({ file: FileInfoSchema }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body = request.body ?? {};
      const agentId = requiredAgentId(body.agentId);
      const path = checkedPath(body.path);
      const { content } = body;
      if (typeof content !== 'string') throw new DomainError('FIELD_REQUIRED', { field: 'content' });
      const size = Buffer.byteLength(content, 'utf8');
      if (size > FILE_CONTENT_MAX_BYTES) throw new DomainError('CONTENT_TOO_LARGE', { max: FILE_CONTENT_MAX_BYTES });
      const { file, created } = await saveFile(app.db, user.id, { agentId, path, content, size });
      return reply.code(created ? 201 : 200).send({ file });
    },
  );

  app.delete(
    '/api/files',
    { schema: { tags: ['files'], querystring: Query, response: { 200: Type.Object({ success: Type.Literal(true) }) } } },
    async (request) => {
      const user = await requireUser(request);
      const agentId = requiredAgentId(request.query.agentId);
      if (request.query.path === undefined || request.query.path === '') throw new DomainError('FIELD_REQUIRED', { field: 'path' });
      const path = checkedPath(request.query.path);
      if (!(await deleteFile(app.db, user.id, agentId, path))) throw new DomainError('FILE_NOT_FOUND');
      return { success: true as const };
    },
  );
}
