import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import {
  SKILL_AGENT_ID_MAX as AGENT_ID_MAX,
  SKILL_NAME,
  skillAgentScope as agentScope,
  checkedSkillConfig as checkedConfig,
  checkedSkillDescription as checkedDescription,
  installSkill,
  listSkills,
  updateSkill,
} from './skills.service.js';

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
      return { skills: await listSkills(app.db, user.id, agentId) };
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
      if (typeof body.name !== 'string' || !SKILL_NAME.test(body.name)) throw new DomainError('INVALID_SKILL_NAME');
      const name = body.name;
      const agentId = agentScope(body.agentId);
      const description = checkedDescription(body.description);
      const config = body.config === undefined || body.config === null ? {} : checkedConfig(body.config);
      if (body.enabled !== undefined && typeof body.enabled !== 'boolean') throw new DomainError('FIELD_NOT_BOOLEAN', { field: 'enabled' });
      const enabled = body.enabled as boolean | undefined;
      const skill = await installSkill(app.db, user.id, { name, agentId, description, config, enabled });
      if (!skill) throw new DomainError('SKILL_ALREADY_INSTALLED');
      return reply.code(201).send({ skill });
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
