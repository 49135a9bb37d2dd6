import { type App, HttpError, newId } from '@aop/core';
import { isUniqueViolation } from '@aop/db';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import {
  SKILL_AGENT_ID_MAX as AGENT_ID_MAX,
  SKILL_COLUMNS as COLUMNS,
  SKILL_NAME,
  skillAgentScope as agentScope,
  checkedSkillConfig as checkedConfig,
  checkedSkillDescription as checkedDescription,
  skillView as view,
  updateSkill,
} from './skills.service.js';
import { requireOwnAgent } from '../../platform/owned-agent.js';

export { SKILL_CONFIG_MAX_BYTES, SKILL_DESCRIPTION_MAX, SKILL_NAME } from './skills.service.js';

const SkillSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  config: Type.Record(Type.String(), Type.Unknown()),
  installedAt: Type.String(),
});

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
      return { skill: await updateSkill(app.db, user.id, request.params.name, request.body ?? {}) };
    },
  );
}
