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

// ---------------------------------------------------------------------------------------------------------------------
// Runs (issue #19): `POST /api/workflows/:workflowId/run`, `GET /api/workflows/:workflowId/runs`.

/** Longest input a run takes. */
export const WORKFLOW_RUN_INPUT_MAX = 10_000;
/** Runs `GET …/runs` lists by default, and at most. */
export const WORKFLOW_RUNS_DEFAULT = 10;
export const WORKFLOW_RUNS_MAX = 50;

const NullableIso = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const NullableText = Type.Union([Type.String(), Type.Null()]);

export const WorkflowRunStep = Type.Object({
  key: Type.String({ description: 'the node’s `config.key`' }),
  type: Type.Union([Type.Literal('trigger'), Type.Literal('action'), Type.Literal('condition'), Type.Literal('output')]),
  label: Type.String(),
  status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('stopped')], {
    description: '`stopped`: a condition that did not hold; its branch went no further',
  }),
  input: Type.String({ description: 'the previous step’s result (the run’s input for a trigger)' }),
  output: NullableText,
  error: NullableText,
  startedAt: Type.String({ format: 'date-time' }),
  finishedAt: Type.String({ format: 'date-time' }),
});
export type WorkflowRunStep = Static<typeof WorkflowRunStep>;

export const WorkflowRun = Type.Object({
  id: Type.String(),
  workflowId: Type.String(),
  status: Type.Union([Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')]),
  input: Type.String(),
  result: Type.Union([Type.String(), Type.Null()], { description: 'what the output steps received; null when none was reached' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'the failed step and why, in words' }),
  steps: Type.Array(WorkflowRunStep, { description: 'in the order they ran' }),
  startedAt: Type.String({ format: 'date-time' }),
  finishedAt: NullableIso,
});
export type WorkflowRun = Static<typeof WorkflowRun>;

export const RunWorkflowBody = Type.Object({
  input: Type.Optional(
    Type.String({
      maxLength: WORKFLOW_RUN_INPUT_MAX,
      description: 'what the trigger passes on; default: the trigger’s own setting, else “Manual run”',
      ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'input' }), {
        maxLength: refuse('FIELD_TOO_LONG', { field: 'input', max: WORKFLOW_RUN_INPUT_MAX }),
      }),
    }),
  ),
});
export type RunWorkflowBody = Static<typeof RunWorkflowBody>;

export const WorkflowRunsQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: WORKFLOW_RUNS_MAX, default: WORKFLOW_RUNS_DEFAULT, description: 'newest first' }),
  ),
});
