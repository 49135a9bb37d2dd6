import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import { deleteByIdRoute } from '../../platform/http/delete-by-id.js';
import { addMemory, deleteMemory, searchMemories } from './memory.service.js';

export const MEMORY_CONTENT_MAX = 10_000;
export const MEMORY_TAGS_MAX = 50;
export const MEMORY_TAG_LENGTH_MAX = 100;
const LIMIT_DEFAULT = 50;
const LIMIT_MAX = 200;
const AGENT_ID_MAX = 200;

const MemorySchema = Type.Object({
  id: Type.String(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  content: Type.String(),
  tags: Type.Array(Type.String()),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

/** `all` or nothing means every agent of the user. */
const agentFilter = (agentId: string | undefined) => (agentId === undefined || agentId === '' || agentId === 'all' ? undefined : agentId);

function checkedTags(tags: unknown): string[] {
  if (tags === undefined || tags === null) return [];
  const invalid = () => new DomainError('INVALID_TAGS', { max: MEMORY_TAGS_MAX, length: MEMORY_TAG_LENGTH_MAX });
  if (!Array.isArray(tags) || tags.length > MEMORY_TAGS_MAX) throw invalid();
  const out: string[] = [];
  for (const tag of tags) {
    if (typeof tag !== 'string' || tag.trim().length > MEMORY_TAG_LENGTH_MAX) throw invalid();
    const trimmed = tag.trim();
    if (trimmed && !out.includes(trimmed)) out.push(trimmed);
  }
  return out;
}

function checkedLimit(limit: string | undefined): number {
  if (limit === undefined || limit === '') return LIMIT_DEFAULT;
  if (!/^\d+$/.test(limit) || Number(limit) < 1) throw new DomainError('LIMIT_POSITIVE_INTEGER');
  return Math.min(Number(limit), LIMIT_MAX);
}

/** Spec §4.18 memory: notes the user's agents keep, per agent or for all of them. */
export async function memoryRoutes(app: App): Promise<void> {
  app.get(
    '/api/memory',
    {
      schema: {
        tags: ['memory'],
        querystring: Type.Object({
          agentId: Type.Optional(Type.String({ maxLength: AGENT_ID_MAX, description: 'omitted or `all`: every agent' })),
          q: Type.Optional(Type.String({ maxLength: 1000, description: 'case-insensitive substring of the content' })),
          limit: Type.Optional(Type.String({ description: `default ${LIMIT_DEFAULT}, at most ${LIMIT_MAX}` })),
        }),
        response: { 200: Type.Object({ memories: Type.Array(MemorySchema), total: Type.Integer() }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const agentId = agentFilter(request.query.agentId);
      const q = request.query.q?.trim();
      const limit = checkedLimit(request.query.limit);
      return searchMemories(app.db, user.id, { agentId, q, limit });
    },
  );

  app.post(
    '/api/memory',
    {
      config: { invalidBodyMessage: 'content is required' },
      schema: {
        tags: ['memory'],
        body: Type.Object({
          agentId: Type.Optional(Type.Unknown()),
          content: Type.Optional(Type.Unknown()),
          tags: Type.Optional(Type.Unknown()),
        }),
        response: { 201: Type.Object({ memory: MemorySchema }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body = request.body ?? {};
      const { content } = body;
      if (typeof content !== 'string' || content.trim() === '') throw new DomainError('FIELD_REQUIRED', { field: 'content' });
      if (content.length > MEMORY_CONTENT_MAX) throw new DomainError('FIELD_TOO_LONG', { field: 'content', max: MEMORY_CONTENT_MAX });
      const agentId = body.agentId === undefined || body.agentId === null || body.agentId === 'all' ? null : body.agentId;
      if (agentId !== null && (typeof agentId !== 'string' || agentId === '' || agentId.length > AGENT_ID_MAX)) {
        throw new DomainError('FIELD_NOT_STRING', { field: 'agentId' });
      }
      const tags = checkedTags(body.tags);
      const memory = await addMemory(app.db, user.id, { agentId, content, tags });
      return reply.code(201).send({ memory });
    },
  );

  deleteByIdRoute(app, { url: '/api/memory', tag: 'memory', remove: deleteMemory, notFound: 'MEMORY_NOT_FOUND' });
}
