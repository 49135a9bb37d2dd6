import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { SKILL_AGENT_ID_MAX, SKILL_DESCRIPTION_MAX, SKILL_NAME } from './skills.service.js';

export const Skill = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  config: Type.Record(Type.String(), Type.Unknown()),
  installedAt: Type.String(),
});
export type Skill = Static<typeof Skill>;

// Each field answers with the message spec §4.18 gives it (see `invalidAs` in @aop/core).
const agentId = orNull(
  Type.String({
    minLength: 1,
    maxLength: SKILL_AGENT_ID_MAX,
    description: 'the agent the skill is for; absent, null or `all`: every agent of the user',
    ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'agentId' })),
  }),
);
const description = orNull(
  Type.String({
    maxLength: SKILL_DESCRIPTION_MAX,
    ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'description' }), {
      maxLength: refuse('FIELD_TOO_LONG', { field: 'description', max: SKILL_DESCRIPTION_MAX }),
    }),
  }),
);
const config = Type.Record(Type.String(), Type.Unknown(), {
  description: 'at most 64 KiB as JSON',
  ...invalidAs(refuse('CONFIG_OBJECT')),
});
const enabled = Type.Boolean(invalidAs(refuse('FIELD_NOT_BOOLEAN', { field: 'enabled' })));

export const InstallSkillBody = Type.Object({
  name: Type.String({ pattern: SKILL_NAME.source, ...invalidAs(refuse('INVALID_SKILL_NAME')) }),
  agentId: Type.Optional(agentId),
  description: Type.Optional(description),
  config: Type.Optional(orNull(config)),
  enabled: Type.Optional(enabled),
});
export type InstallSkillBody = Static<typeof InstallSkillBody>;

export const UpdateSkillBody = Type.Object({
  agentId: Type.Optional(agentId),
  enabled: Type.Optional(enabled),
  config: Type.Optional(config),
  description: Type.Optional(description),
});
export type UpdateSkillBody = Static<typeof UpdateSkillBody>;
