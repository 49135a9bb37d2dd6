import { refuse } from '@aop/core/request-schema';
import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser, userBeforeBody } from '../../platform/http/auth.js';
import { deleteByIdRoute } from '../../platform/http/delete-by-id.js';
import { AddMemoryBody, Memory } from './memory.schemas.js';
import {
  addMemory,
  deleteMemory,
  MEMORY_AGENT_ID_MAX as AGENT_ID_MAX,
  MEMORY_TAG_LENGTH_MAX,
  MEMORY_TAGS_MAX,
  searchMemories,
} from './memory.service.js';

const LIMIT_DEFAULT = 50;
const LIMIT_MAX = 200;

/** `all` or nothing means every agent of the user. */
const agentFilter = (agentId: string | undefined) => (agentId === undefined || agentId === '' || agentId === 'all' ? undefined : agentId);

/** The tags trimmed, blank and repeated ones dropped; the schema has checked the array and its items' type. */
function checkedTags(tags: readonly string[] | null | undefined): string[] {
  const out: string[] = [];
  for (const tag of tags ?? []) {
    const trimmed = tag.trim();
    if (trimmed.length > MEMORY_TAG_LENGTH_MAX)
      throw new DomainError('INVALID_TAGS', { max: MEMORY_TAGS_MAX, length: MEMORY_TAG_LENGTH_MAX });
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
        response: { 200: Type.Object({ memories: Type.Array(Memory), total: Type.Integer() }) },
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
      preValidation: userBeforeBody,
      config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'content' }) },
      schema: {
        tags: ['memory'],
        body: AddMemoryBody,
        response: { 201: Type.Object({ memory: Memory }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const { content, tags: rawTags } = request.body;
      const agentId = request.body.agentId === 'all' ? null : (request.body.agentId ?? null);
      const tags = checkedTags(rawTags);
      const memory = await addMemory(app.db, user.id, { agentId, content, tags });
      return reply.code(201).send({ memory });
    },
  );

  deleteByIdRoute(app, { url: '/api/memory', tag: 'memory', remove: deleteMemory, notFound: 'MEMORY_NOT_FOUND' });
}
