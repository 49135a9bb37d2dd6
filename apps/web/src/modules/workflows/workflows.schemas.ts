import { type Static, Type } from '@sinclair/typebox';

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
