import { NOT_BLANK, invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { NODE_TYPES, type NodeType, WORKFLOW_NAME_MAX, WORKFLOW_NODES_MAX } from './workflows.service.js';

export const WorkflowNode = Type.Object({
  id: Type.String(),
  type: Type.String(),
  config: Type.String({ description: 'JSON-encoded' }),
  position: Type.String({ description: 'JSON-encoded {x, y}' }),
  createdAt: Type.String(),
});
export type WorkflowNode = Static<typeof WorkflowNode>;

export const Workflow = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  nodes: Type.Array(WorkflowNode),
});
export type Workflow = Static<typeof Workflow>;

// Each field answers with the message its handler check gave before (see `invalidAs` in @aop/core/request-schema), in the order the
// routes have always checked them: name, description, nodes, then enabled.
const name = Type.String({
  ...NOT_BLANK,
  description: `at most ${WORKFLOW_NAME_MAX} characters once trimmed`,
  ...invalidAs(refuse('NAME_REQUIRED')),
});
const description = orNull(Type.String(invalidAs(refuse('FIELD_NOT_STRING', { field: 'description' }))));

/** A node's `config` or `position`: an object, or a string holding one as JSON; absent or null is the default. */
const nodeObject = (field: 'config' | 'position', fallback: string) =>
  Type.Unsafe<Record<string, unknown> | string | null>({
    type: ['object', 'string', 'null'],
    description: `an object, or a string holding one as JSON; absent or null: \`${fallback}\``,
    ...invalidAs(refuse('INVALID_NODE_FIELD', { field })),
  });
const invalidNodeType = invalidAs(refuse('INVALID_NODE_TYPE', { allowed: NODE_TYPES.join(', ') }));
const WorkflowNodeInput = Type.Object(
  {
    type: Type.Unsafe<NodeType>({ type: 'string', enum: [...NODE_TYPES], ...invalidNodeType }),
    config: Type.Optional(nodeObject('config', '{}')),
    position: Type.Optional(nodeObject('position', '{"x":0,"y":0}')),
  },
  // A node that is not an object has no type: said as such.
  invalidNodeType,
);
const nodes = Type.Array(WorkflowNodeInput, {
  maxItems: WORKFLOW_NODES_MAX,
  description: 'in order; on PUT they replace every node of the workflow',
  ...invalidAs(refuse('NODES_ARRAY'), { maxItems: refuse('TOO_MANY_NODES', { max: WORKFLOW_NODES_MAX }) }),
});

export const CreateWorkflowBody = Type.Object({
  name,
  description: Type.Optional(description),
  nodes: Type.Optional(nodes),
  // Not typed: on create, `true` (or nothing) enables the workflow and any other value disables it, as it always has.
  enabled: Type.Optional(Type.Unknown({ description: 'boolean, default `true`; any value other than `true` disables' })),
});
export type CreateWorkflowBody = Static<typeof CreateWorkflowBody>;

export const UpdateWorkflowBody = Type.Object({
  name: Type.Optional(name),
  description: Type.Optional(description),
  enabled: Type.Optional(Type.Boolean(invalidAs(refuse('FIELD_NOT_BOOLEAN', { field: 'enabled' })))),
  nodes: Type.Optional(nodes),
});
export type UpdateWorkflowBody = Static<typeof UpdateWorkflowBody>;
