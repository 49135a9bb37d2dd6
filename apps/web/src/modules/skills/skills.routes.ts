import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser, userBeforeBody } from '../../platform/http/auth.js';
import { InstallSkillBody, Skill, UpdateSkillBody } from './skills.schemas.js';
import {
  SKILL_AGENT_ID_MAX as AGENT_ID_MAX,
  skillAgentScope as agentScope,
  checkedSkillConfig as checkedConfig,
  checkedSkillDescription as checkedDescription,
  installSkill,
  listSkills,
  updateSkill,
} from './skills.service.js';

export { SKILL_CONFIG_MAX_BYTES, SKILL_DESCRIPTION_MAX, SKILL_NAME } from './skills.service.js';

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
        response: { 200: Type.Object({ skills: Type.Array(Skill) }) },
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
      preValidation: userBeforeBody,
      config: { invalidBody: 'INVALID_SKILL_NAME' },
      schema: {
        tags: ['skills'],
        body: InstallSkillBody,
        response: { 201: Type.Object({ skill: Skill }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const { name, agentId, description, config, enabled } = request.body;
      const skill = await installSkill(app.db, user.id, {
        name,
        agentId: agentScope(agentId),
        description: checkedDescription(description),
        config: config ? checkedConfig(config) : {},
        enabled,
      });
      if (!skill) throw new DomainError('SKILL_ALREADY_INSTALLED');
      return reply.code(201).send({ skill });
    },
  );

  app.post(
    '/api/skills/:name',
    {
      preValidation: userBeforeBody,
      config: { invalidBody: 'INVALID_REQUEST_BODY' },
      schema: {
        tags: ['skills'],
        description: 'Updates the skill `name` of the scope `agentId` (absent: the user-wide one).',
        params: Type.Object({ name: Type.String() }),
        body: UpdateSkillBody,
        response: { 200: Type.Object({ skill: Skill }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      return { skill: await updateSkill(app.db, user.id, request.params.name, request.body) };
    },
  );
}
