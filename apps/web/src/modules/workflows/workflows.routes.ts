import { type App, DomainError, checkJsonText } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import { Workflow } from './workflows.schemas.js';
import {
  NODE_TYPES,
  type NodeRow,
  type NodeType,
  createWorkflow,
  deleteWorkflow,
  getWorkflow,
  listWorkflows,
  updateWorkflow,
} from './workflows.service.js';

const WorkflowBodySchema = Type.Object({
  name: Type.Optional(Type.Unknown()),
  description: Type.Optional(Type.Unknown()),
  enabled: Type.Optional(Type.Unknown()),
  nodes: Type.Optional(Type.Unknown()),
});
type WorkflowBody = Static<typeof WorkflowBodySchema>;

const NAME_MAX = 200;
const MAX_NODES = 500;

/** Objects are stored as the JSON strings the spec returns; strings that hold JSON objects are accepted as they are. */
function jsonObjectText(value: unknown, fallback: string, field: string): string {
  if (value === undefined || value === null) return fallback;
  let parsed = value;
  if (typeof value === 'string') {
    // JSON inside a string gets past the body parser's rules, and it is stringified again below.
    checkJsonText(value);
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new DomainError('INVALID_NODE_FIELD', { field });
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new DomainError('INVALID_NODE_FIELD', { field });
  return JSON.stringify(parsed);
}

function parseNodes(value: unknown): NodeRow[] {
  if (!Array.isArray(value)) throw new DomainError('NODES_ARRAY');
  if (value.length > MAX_NODES) throw new DomainError('TOO_MANY_NODES', { max: MAX_NODES });
  return value.map((node) => {
    const type = (node as { type?: unknown } | null)?.type;
    if (typeof type !== 'string' || !NODE_TYPES.includes(type as NodeType)) {
      throw new DomainError('INVALID_NODE_TYPE', { allowed: NODE_TYPES.join(', ') });
    }
    const n = node as { config?: unknown; position?: unknown };
    return {
      type: type as NodeType,
      config: jsonObjectText(n.config, '{}', 'config'),
      position: jsonObjectText(n.position, '{"x":0,"y":0}', 'position'),
    };
  });
}

function checkedName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new DomainError('NAME_REQUIRED');
  if (value.trim().length > NAME_MAX) throw new DomainError('NAME_TOO_LONG', { max: NAME_MAX });
  return value.trim();
}

function checkedDescription(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') throw new DomainError('FIELD_NOT_STRING', { field: 'description' });
  return value;
}

const Params = Type.Object({ workflowId: Type.String({ maxLength: 100 }) });

/** Spec §4.9 / §2.7: workflows and their nodes, user-scoped. */
export async function workflowRoutes(app: App): Promise<void> {
  app.get(
    '/api/workflows',
    {
      schema: {
        tags: ['workflows'],
        response: {
          200: Type.Object({ workflows: Type.Array(Workflow) }),
          401: Type.Object({ error: Type.String(), workflows: Type.Array(Type.Never()) }),
        },
      },
    },
    async (request, reply) => {
      const user = await request.currentUser();
      // The spec's 401 for this list carries an empty list.
      if (!user) return reply.code(401).send({ error: 'Unauthorized', workflows: [] });
      return { workflows: await listWorkflows(app.db, user.id) };
    },
  );

  app.post(
    '/api/workflows',
    {
      config: { invalidBodyMessage: 'Name required' },
      schema: { tags: ['workflows'], body: WorkflowBodySchema, response: { 201: Type.Object({ workflow: Workflow }) } },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body: WorkflowBody = request.body ?? {};
      const name = checkedName(body.name);
      const description = checkedDescription(body.description);
      const nodes = body.nodes === undefined ? [] : parseNodes(body.nodes);
      const enabled = body.enabled === undefined ? true : body.enabled === true;
      const now = new Date(app.clock());
      const workflow = await createWorkflow(app.db, user.id, { name, description, enabled, nodes }, now);
      return reply.code(201).send({ workflow });
    },
  );

  app.get(
    '/api/workflows/:workflowId',
    { schema: { tags: ['workflows'], params: Params, response: { 200: Type.Object({ workflow: Workflow }) } } },
    async (request) => {
      const user = await requireUser(request);
      const workflow = await getWorkflow(app.db, user.id, request.params.workflowId);
      if (!workflow) throw new DomainError('WORKFLOW_NOT_FOUND');
      return { workflow };
    },
  );

  app.put(
    '/api/workflows/:workflowId',
    {
      schema: {
        tags: ['workflows'],
        params: Params,
        body: WorkflowBodySchema,
        response: { 200: Type.Object({ workflow: Workflow }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const body: WorkflowBody = request.body ?? {};
      const changes: { name?: string; description?: string | null; enabled?: boolean } = {};
      if (body.name !== undefined) changes.name = checkedName(body.name);
      if (body.description !== undefined) changes.description = checkedDescription(body.description);
      if (body.enabled !== undefined) {
        if (typeof body.enabled !== 'boolean') throw new DomainError('FIELD_NOT_BOOLEAN', { field: 'enabled' });
        changes.enabled = body.enabled;
      }
      const nodes = body.nodes === undefined ? undefined : parseNodes(body.nodes);
      const now = new Date(app.clock());
      const workflow = await updateWorkflow(app.db, user.id, request.params.workflowId, changes, nodes, now);
      if (!workflow) throw new DomainError('WORKFLOW_NOT_FOUND');
      return { workflow };
    },
  );

  app.delete(
    '/api/workflows/:workflowId',
    { schema: { tags: ['workflows'], params: Params, response: { 200: Type.Object({ deleted: Type.Literal(true) }) } } },
    async (request) => {
      const user = await requireUser(request);
      if (!(await deleteWorkflow(app.db, user.id, request.params.workflowId))) throw new DomainError('WORKFLOW_NOT_FOUND');
      return { deleted: true as const };
    },
  );
}
