import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { MAX_SWARM_AGENTS, SWARM_DESCRIPTION_MAX } from '../../services/swarms.js';

export const Swarm = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  size: Type.Integer(),
  agents: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), status: Type.String() })),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

/*
 * Each field answers with the message it had when `parseSwarm` checked it (see `invalidAs` in @aop/core), in the same
 * order. Left to `parseSwarm`: the name's length once trimmed, lengths in UTF-16 units (`maxLength` counts code
 * points, so it never refuses what the service accepts), and the number of distinct agent ids.
 */
export const CreateSwarmBody = Type.Object({
  name: Type.String({
    pattern: '\\S',
    description: 'unique per user; trimmed, at most 100 characters',
    ...invalidAs(refuse('FIELD_REQUIRED', { field: 'name' })),
  }),
  description: Type.Optional(
    orNull(
      Type.String({
        maxLength: SWARM_DESCRIPTION_MAX,
        ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'description' }), {
          maxLength: refuse('FIELD_TOO_LONG', { field: 'description', max: SWARM_DESCRIPTION_MAX }),
        }),
      }),
    ),
  ),
  agentIds: Type.Optional(
    orNull(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
        description: `the caller's agents; at most ${MAX_SWARM_AGENTS} distinct ids`,
        ...invalidAs(refuse('AGENTIDS_ARRAY_AGENT_IDS')),
      }),
    ),
  ),
});
export type CreateSwarmBody = Static<typeof CreateSwarmBody>;
