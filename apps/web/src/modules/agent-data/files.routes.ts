import { refuse } from '@aop/core/request-schema';
import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser, userBeforeBody } from '../../platform/http/auth.js';
import { FileInfo, SaveFileBody } from './files.schemas.js';
import {
  deleteFile,
  FILE_AGENT_ID_MAX as AGENT_ID_MAX,
  FILE_CONTENT_MAX_BYTES,
  getFile,
  isValidFilePath,
  listFiles,
  saveFile,
} from './files.service.js';

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
      preValidation: userBeforeBody,
      config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'agentId' }) },
      schema: {
        tags: ['files'],
        description: 'Creates (201) or replaces (200) a file.',
        body: SaveFileBody,
        response: { 200: Type.Object({ file: FileInfo }), 201: Type.Object({ file: FileInfo }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const { agentId, path, content } = request.body;
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
