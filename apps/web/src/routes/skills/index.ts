import { type App, HttpError, newId } from '@aop/core';
import { isUniqueViolation, type Tx } from '@aop/db';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../plugins/auth.js';

export const SKILL_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
export const SKILL_DESCRIPTION_MAX = 1000;
/** The JSON text of a skill's config. */
export const SKILL_CONFIG_MAX_BYTES = 64 * 1024;
const AGENT_ID_MAX = 200;

const SkillSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  config: Type.Record(Type.String(), Type.Unknown()),
  installedAt: Type.String(),
});

interface SkillRow {
  id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  agent_id: string | null;
  config: Record<string, unknown>;
  installed_at: Date;
}

const COLUMNS = ['id', 'name', 'description', 'enabled', 'agent_id', 'config', 'installed_at'] as const;

const view = (row: SkillRow) => ({
  id: row.id,
  name: row.name,
  description: row.description,
  enabled: row.enabled,
  agentId: row.agent_id,
  config: row.config,
  installedAt: row.installed_at.toISOString(),
});

/** `agentId` of a body: absent, null or `all` is the user-wide scope (null). */
function agentScope(agentId: unknown): string | null {
  if (agentId === undefined || agentId === null || agentId === 'all') return null;
  if (typeof agentId !== 'string' || agentId === '' || agentId.length > AGENT_ID_MAX) throw new HttpError(400, 'agentId must be a string');
  return agentId;
}

function checkedConfig(config: unknown): Record<string, unknown> {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new HttpError(400, 'config must be an object');
  if (Buffer.byteLength(JSON.stringify(config)) > SKILL_CONFIG_MAX_BYTES) {
    throw new HttpError(400, `config must be at most ${SKILL_CONFIG_MAX_BYTES} bytes of JSON`);
  }
  return config as Record<string, unknown>;
}

function checkedDescription(description: unknown): string | null {
  if (description === undefined || description === null) return null;
  if (typeof description !== 'string') throw new HttpError(400, 'description must be a string');
  if (description.length > SKILL_DESCRIPTION_MAX)
    throw new HttpError(400, `description must be at most ${SKILL_DESCRIPTION_MAX} characters`);
  return description.trim() || null;
}

async function requireOwnAgent(trx: Tx, agentId: string): Promise<void> {
  const agent = await trx.selectFrom('agents').select('id').where('id', '=', agentId).executeTakeFirst();
  if (!agent) throw new HttpError(404, 'Agent not found');
}

/**
 * Spec §4.18 skills, installed for one agent or for all of the user's agents
 * (`agentId` absent). A name is unique within its scope.
 */
export async function skillsRoutes(app: App): Promise<void> {
  app.get(
    '/api/skills',
    {
      schema: {
        tags: ['skills'],
        querystring: Type.Object({
          agentId: Type.Optional(Type.String({ maxLength: AGENT_ID_MAX, description: 'omitted or `all`: every scope' })),
        }),
        response: { 200: Type.Object({ skills: Type.Array(SkillSchema) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { agentId } = request.query;
      const rows = await app.db.withUser(user.id, (trx) => {
        let query = trx.selectFrom('skills').select(COLUMNS).where('user_id', '=', user.id);
        if (agentId !== undefined && agentId !== '' && agentId !== 'all') query = query.where('agent_id', '=', agentId);
        return query.orderBy('installed_at').orderBy('name').orderBy('id').execute();
      });
      return { skills: rows.map(view) };
    },
  );

  app.post(
    '/api/skills',
    {
      config: { invalidBodyMessage: 'Invalid skill name' },
      schema: {
        tags: ['skills'],
        body: Type.Object({
          name: Type.Optional(Type.Unknown()),
          agentId: Type.Optional(Type.Unknown()),
          description: Type.Optional(Type.Unknown()),
          config: Type.Optional(Type.Unknown()),
          enabled: Type.Optional(Type.Unknown()),
        }),
        response: { 201: Type.Object({ skill: SkillSchema }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body = request.body ?? {};
      if (typeof body.name !== 'string' || !SKILL_NAME.test(body.name)) throw new HttpError(400, 'Invalid skill name');
      const name = body.name;
      const agentId = agentScope(body.agentId);
      const description = checkedDescription(body.description);
      const config = body.config === undefined || body.config === null ? {} : checkedConfig(body.config);
      if (body.enabled !== undefined && typeof body.enabled !== 'boolean') throw new HttpError(400, 'enabled must be a boolean');
      try {
        const skill = await app.db.withUser(user.id, async (trx) => {
          if (agentId !== null) await requireOwnAgent(trx, agentId);
          return trx
            .insertInto('skills')
            .values({
              id: newId('skill'),
              user_id: user.id,
              agent_id: agentId,
              name,
              description,
              config: JSON.stringify(config),
              ...(typeof body.enabled === 'boolean' ? { enabled: body.enabled } : {}),
            })
            .returning(COLUMNS)
            .executeTakeFirstOrThrow();
        });
        return reply.code(201).send({ skill: view(skill) });
      } catch (err) {
        // The unique index (user, scope, name) decides, so two concurrent installs cannot both succeed.
        if (isUniqueViolation(err)) throw new HttpError(409, 'Skill already installed');
        throw err;
      }
    },
  );

  app.post(
    '/api/skills/:name',
    {
      config: { invalidBodyMessage: 'Invalid request body' },
      schema: {
        tags: ['skills'],
        description: 'Updates the skill `name` of the scope `agentId` (absent: the user-wide one).',
        params: Type.Object({ name: Type.String() }),
        body: Type.Object({
          agentId: Type.Optional(Type.Unknown()),
          enabled: Type.Optional(Type.Unknown()),
          config: Type.Optional(Type.Unknown()),
          description: Type.Optional(Type.Unknown()),
        }),
        response: { 200: Type.Object({ skill: SkillSchema }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { name } = request.params;
      if (!SKILL_NAME.test(name)) throw new HttpError(400, 'Invalid skill name');
      const body = request.body ?? {};
      const agentId = agentScope(body.agentId);
      if (body.enabled !== undefined && typeof body.enabled !== 'boolean') throw new HttpError(400, 'enabled must be a boolean');
      const config = body.config === undefined ? undefined : checkedConfig(body.config);
      const description = body.description === undefined ? undefined : checkedDescription(body.description);
      const skill = await app.db.withUser(user.id, async (trx) => {
        let query = trx
          .updateTable('skills')
          .set({
            updated_at: new Date(),
            ...(typeof body.enabled === 'boolean' ? { enabled: body.enabled } : {}),
            ...(config !== undefined ? { config: JSON.stringify(config) } : {}),
            ...(description !== undefined ? { description } : {}),
          })
          .where('user_id', '=', user.id)
          .where('name', '=', name);
        query = agentId === null ? query.where('agent_id', 'is', null) : query.where('agent_id', '=', agentId);
        return query.returning(COLUMNS).executeTakeFirst();
      });
      if (!skill) throw new HttpError(404, 'Skill not found');
      return { skill: view(skill) };
    },
  );
}
