import { type App, HttpError, checkJsonText, newId } from '@aop/core';
import type { Tx } from '@aop/db';
import { type Static, Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';

const NODE_TYPES = ['trigger', 'action', 'condition', 'output'] as const;
type NodeType = (typeof NODE_TYPES)[number];

const WorkflowBodySchema = Type.Object({
  name: Type.Optional(Type.Unknown()),
  description: Type.Optional(Type.Unknown()),
  enabled: Type.Optional(Type.Unknown()),
  nodes: Type.Optional(Type.Unknown()),
});
type WorkflowBody = Static<typeof WorkflowBodySchema>;

const NodeSchema = Type.Object({
  id: Type.String(),
  type: Type.String(),
  config: Type.String({ description: 'JSON-encoded' }),
  position: Type.String({ description: 'JSON-encoded {x, y}' }),
  createdAt: Type.String(),
});
const WorkflowSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  nodes: Type.Array(NodeSchema),
});
type Workflow = Static<typeof WorkflowSchema>;

const NAME_MAX = 200;
const MAX_NODES = 500;

interface NodeRow {
  type: NodeType;
  config: string;
  position: string;
}

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
      throw new HttpError(400, `Invalid node ${field}`);
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new HttpError(400, `Invalid node ${field}`);
  return JSON.stringify(parsed);
}

function parseNodes(value: unknown): NodeRow[] {
  if (!Array.isArray(value)) throw new HttpError(400, 'nodes must be an array');
  if (value.length > MAX_NODES) throw new HttpError(400, `At most ${MAX_NODES} nodes`);
  return value.map((node) => {
    const type = (node as { type?: unknown } | null)?.type;
    if (typeof type !== 'string' || !NODE_TYPES.includes(type as NodeType)) {
      throw new HttpError(400, `Invalid node type: use ${NODE_TYPES.join(', ')}`);
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
  if (typeof value !== 'string' || value.trim() === '') throw new HttpError(400, 'Name required');
  if (value.trim().length > NAME_MAX) throw new HttpError(400, `Name must be at most ${NAME_MAX} characters`);
  return value.trim();
}

function checkedDescription(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') throw new HttpError(400, 'description must be a string');
  return value;
}

async function insertNodes(trx: Tx, userId: string, workflowId: string, nodes: NodeRow[], now: Date): Promise<void> {
  if (nodes.length === 0) return;
  await trx
    .insertInto('workflow_nodes')
    .values(nodes.map((n, seq) => ({ id: newId('workflowNode'), workflow_id: workflowId, user_id: userId, ...n, seq, created_at: now })))
    .execute();
}

/** Workflows with their nodes: two queries however many workflows there are. */
async function loadWorkflows(trx: Tx, ids?: string[]): Promise<Workflow[]> {
  let query = trx.selectFrom('workflows').selectAll().orderBy('updated_at', 'desc').orderBy('id');
  if (ids) query = query.where('id', 'in', ids);
  const workflows = await query.execute();
  if (workflows.length === 0) return [];
  const nodes = await trx
    .selectFrom('workflow_nodes')
    .select(['id', 'workflow_id', 'type', 'config', 'position', 'created_at'])
    .where(
      'workflow_id',
      'in',
      workflows.map((w) => w.id),
    )
    .orderBy('workflow_id')
    .orderBy('seq')
    .execute();
  const byWorkflow = new Map<string, Workflow['nodes']>();
  for (const n of nodes) {
    const list = byWorkflow.get(n.workflow_id) ?? [];
    list.push({ id: n.id, type: n.type, config: n.config, position: n.position, createdAt: n.created_at.toISOString() });
    byWorkflow.set(n.workflow_id, list);
  }
  return workflows.map((w) => ({
    id: w.id,
    name: w.name,
    description: w.description,
    enabled: w.enabled,
    createdAt: w.created_at.toISOString(),
    updatedAt: w.updated_at.toISOString(),
    nodes: byWorkflow.get(w.id) ?? [],
  }));
}

async function loadOne(trx: Tx, id: string): Promise<Workflow> {
  const [workflow] = await loadWorkflows(trx, [id]);
  if (!workflow) throw new HttpError(404, 'Workflow not found');
  return workflow;
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
          200: Type.Object({ workflows: Type.Array(WorkflowSchema) }),
          401: Type.Object({ error: Type.String(), workflows: Type.Array(Type.Never()) }),
        },
      },
    },
    async (request, reply) => {
      const user = await request.currentUser();
      // The spec's 401 for this list carries an empty list.
      if (!user) return reply.code(401).send({ error: 'Unauthorized', workflows: [] });
      return { workflows: await app.db.withUser(user.id, (trx) => loadWorkflows(trx)) };
    },
  );

  app.post(
    '/api/workflows',
    {
      config: { invalidBodyMessage: 'Name required' },
      schema: { tags: ['workflows'], body: WorkflowBodySchema, response: { 201: Type.Object({ workflow: WorkflowSchema }) } },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body: WorkflowBody = request.body ?? {};
      const name = checkedName(body.name);
      const description = checkedDescription(body.description);
      const nodes = body.nodes === undefined ? [] : parseNodes(body.nodes);
      const enabled = body.enabled === undefined ? true : body.enabled === true;
      const now = new Date(app.clock());
      const workflow = await app.db.withUser(user.id, async (trx) => {
        const id = newId('workflow');
        await trx
          .insertInto('workflows')
          .values({ id, user_id: user.id, name, description, enabled, created_at: now, updated_at: now })
          .execute();
        await insertNodes(trx, user.id, id, nodes, now);
        return loadOne(trx, id);
      });
      return reply.code(201).send({ workflow });
    },
  );

  app.get(
    '/api/workflows/:workflowId',
    { schema: { tags: ['workflows'], params: Params, response: { 200: Type.Object({ workflow: WorkflowSchema }) } } },
    async (request) => {
      const user = await requireUser(request);
      return { workflow: await app.db.withUser(user.id, (trx) => loadOne(trx, request.params.workflowId)) };
    },
  );

  app.put(
    '/api/workflows/:workflowId',
    {
      schema: {
        tags: ['workflows'],
        params: Params,
        body: WorkflowBodySchema,
        response: { 200: Type.Object({ workflow: WorkflowSchema }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const body: WorkflowBody = request.body ?? {};
      const changes: { name?: string; description?: string | null; enabled?: boolean } = {};
      if (body.name !== undefined) changes.name = checkedName(body.name);
      if (body.description !== undefined) changes.description = checkedDescription(body.description);
      if (body.enabled !== undefined) {
        if (typeof body.enabled !== 'boolean') throw new HttpError(400, 'enabled must be a boolean');
        changes.enabled = body.enabled;
      }
      const nodes = body.nodes === undefined ? undefined : parseNodes(body.nodes);
      const now = new Date(app.clock());
      const workflow = await app.db.withUser(user.id, async (trx) => {
        const updated = await trx
          .updateTable('workflows')
          .set({ ...changes, updated_at: now })
          .where('id', '=', request.params.workflowId)
          .executeTakeFirst();
        if (Number(updated.numUpdatedRows) === 0) throw new HttpError(404, 'Workflow not found');
        if (nodes) {
          // Replacing the nodes is one step: the transaction never shows a workflow half-rebuilt.
          await trx.deleteFrom('workflow_nodes').where('workflow_id', '=', request.params.workflowId).execute();
          await insertNodes(trx, user.id, request.params.workflowId, nodes, now);
        }
        return loadOne(trx, request.params.workflowId);
      });
      return { workflow };
    },
  );

  app.delete(
    '/api/workflows/:workflowId',
    { schema: { tags: ['workflows'], params: Params, response: { 200: Type.Object({ deleted: Type.Literal(true) }) } } },
    async (request) => {
      const user = await requireUser(request);
      const deleted = await app.db.withUser(user.id, (trx) =>
        trx.deleteFrom('workflows').where('id', '=', request.params.workflowId).executeTakeFirst(),
      );
      if (Number(deleted.numDeletedRows) === 0) throw new HttpError(404, 'Workflow not found');
      return { deleted: true as const };
    },
  );
}
