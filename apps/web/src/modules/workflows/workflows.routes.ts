import { type App, beforeObjectBody, DomainError, checkJsonText } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebContext } from '../../platform/context.js';
import { requireUser } from '../../platform/http/auth.js';
import { listWorkflowRuns, runWorkflow } from './workflow-runs.service.js';
import {
  CreateWorkflowBody,
  RunWorkflowBody,
  UpdateWorkflowBody,
  WORKFLOW_RUNS_DEFAULT,
  Workflow,
  WorkflowRun,
  WorkflowRunsQuery,
} from './workflows.schemas.js';
import {
  type NodeRow,
  WORKFLOW_NAME_MAX,
  createWorkflow,
  deleteWorkflow,
  getWorkflow,
  listWorkflows,
  updateWorkflow,
} from './workflows.service.js';

type NodeInput = NonNullable<CreateWorkflowBody['nodes']>[number];

/**
 * Objects are stored as the JSON strings the spec returns; strings that hold JSON objects are accepted as they are.
 * The schema has checked the type; what a string holds is only known once it is parsed.
 */
function jsonObjectText(value: NodeInput['config'], fallback: string, field: string): string {
  if (value === undefined || value === null) return fallback;
  let parsed: unknown = value;
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

const nodeRows = (nodes: readonly NodeInput[]): NodeRow[] =>
  nodes.map((node) => ({
    type: node.type,
    config: jsonObjectText(node.config, '{}', 'config'),
    position: jsonObjectText(node.position, '{"x":0,"y":0}', 'position'),
  }));

/** The name trimmed; the schema has refused a blank one, the limit counts what is left once trimmed. */
function checkedName(value: string): string {
  const name = value.trim();
  if (name.length > WORKFLOW_NAME_MAX) throw new DomainError('NAME_TOO_LONG', { max: WORKFLOW_NAME_MAX });
  return name;
}

const Params = Type.Object({ workflowId: Type.String({ maxLength: 100 }) });

/**
 * The user ahead of the body schema (`beforeObjectBody`), except for a path whose id the params schema refuses: that
 * was refused (400) before authentication, and still is.
 */
const userBeforeWorkflowBody = beforeObjectBody(async (request) => {
  if (request.routeOptions.schema?.params && !request.validateInput(request.params, 'params')) return;
  await requireUser(request);
});

/** Spec §4.9 / §2.7: workflows and their nodes, user-scoped; and (issue #19) their runs. */
export async function workflowRoutes(app: App, { config, afterStart }: Pick<WebContext, 'config' | 'afterStart'>): Promise<void> {
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
      preValidation: userBeforeWorkflowBody,
      config: { invalidBody: 'NAME_REQUIRED' },
      schema: { tags: ['workflows'], body: CreateWorkflowBody, response: { 201: Type.Object({ workflow: Workflow }) } },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body = request.body;
      const name = checkedName(body.name);
      const description = body.description ?? null;
      const nodes = nodeRows(body.nodes ?? []);
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
      preValidation: userBeforeWorkflowBody,
      schema: {
        tags: ['workflows'],
        params: Params,
        body: UpdateWorkflowBody,
        response: { 200: Type.Object({ workflow: Workflow }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const body = request.body;
      const changes: { name?: string; description?: string | null; enabled?: boolean } = {};
      if (body.name !== undefined) changes.name = checkedName(body.name);
      if (body.description !== undefined) changes.description = body.description;
      if (body.enabled !== undefined) changes.enabled = body.enabled;
      const nodes = body.nodes === undefined ? undefined : nodeRows(body.nodes);
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

  app.post(
    '/api/workflows/:workflowId/run',
    {
      // A run needs no body: `POST …/run` with none is a run with the trigger's own input.
      preValidation: [
        async (request) => {
          request.body ??= {};
        },
        userBeforeWorkflowBody,
      ],
      schema: {
        tags: ['workflows'],
        description:
          'Runs the workflow against the owner’s agent: from its triggers along `config.next`, actions as agent turns, conditions ' +
          'on the previous result, outputs collected as the result. Answers when the run ends (at most 50 steps and 5 minutes); ' +
          'a failed step fails the run, which is still recorded and answered (status `failed`). 409 while disabled or already running.',
        params: Params,
        body: RunWorkflowBody,
        response: { 201: Type.Object({ run: WorkflowRun }) },
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const deps = { db: app.db, backend: app.backend, config, clock: app.clock, afterStart, log: request.log };
      const run = await runWorkflow(deps, user, request.params.workflowId, request.body?.input);
      return reply.code(201).send({ run });
    },
  );

  app.get(
    '/api/workflows/:workflowId/runs',
    {
      schema: {
        tags: ['workflows'],
        params: Params,
        querystring: WorkflowRunsQuery,
        response: { 200: Type.Object({ runs: Type.Array(WorkflowRun) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const runs = await listWorkflowRuns(app.db, user.id, request.params.workflowId, request.query.limit ?? WORKFLOW_RUNS_DEFAULT);
      if (!runs) throw new DomainError('WORKFLOW_NOT_FOUND');
      return { runs };
    },
  );
}
