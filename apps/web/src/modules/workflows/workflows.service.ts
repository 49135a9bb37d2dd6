import { DomainError, newId } from '@aop/core';
import { type DB, type Database, prepared, type Tx } from '@aop/db';
import type { Kysely } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';

/** Workflows and their nodes (spec §4.9 / §2.7), read and written as the user so row-level security scopes them. */

export const NODE_TYPES = ['trigger', 'action', 'condition', 'output'] as const;
export type NodeType = (typeof NODE_TYPES)[number];
/** Limits of a workflow as `POST`/`PUT /api/workflows` take it: the name once trimmed, and the nodes. */
export const WORKFLOW_NAME_MAX = 200;
export const WORKFLOW_NODES_MAX = 500;

export interface NodeRow {
  type: NodeType;
  config: string;
  position: string;
}

export interface WorkflowView {
  id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
  nodes: { id: string; type: string; config: string; position: string; createdAt: string }[];
}

async function insertNodes(trx: Tx, userId: string, workflowId: string, nodes: NodeRow[], now: Date): Promise<void> {
  if (nodes.length === 0) return;
  await trx
    .insertInto('workflow_nodes')
    .values(nodes.map((n, seq) => ({ id: newId('workflowNode'), workflow_id: workflowId, user_id: userId, ...n, seq, created_at: now })))
    .execute();
}

/** Workflows with their nodes in one statement: one round trip however many workflows there are. */
const workflowsWithNodes = (db: Kysely<DB>) =>
  db
    .selectFrom('workflows')
    .selectAll('workflows')
    .select((eb) =>
      jsonArrayFrom(
        eb
          .selectFrom('workflow_nodes')
          .select([
            'workflow_nodes.id',
            'workflow_nodes.type',
            'workflow_nodes.config',
            'workflow_nodes.position',
            'workflow_nodes.created_at',
          ])
          .whereRef('workflow_nodes.workflow_id', '=', 'workflows.id')
          .orderBy('workflow_nodes.seq'),
      ).as('nodes'),
    )
    .orderBy('updated_at', 'desc')
    .orderBy('id');
/** The whole list, the dashboard's frequent read: compiled once. */
const allWorkflows = prepared((db) => workflowsWithNodes(db));

async function loadWorkflows(trx: Tx, ids?: string[]): Promise<WorkflowView[]> {
  const workflows = ids ? await workflowsWithNodes(trx).where('id', 'in', ids).execute() : (await allWorkflows(trx)).rows;
  return workflows.map((w) => ({
    id: w.id,
    name: w.name,
    description: w.description,
    enabled: w.enabled,
    createdAt: w.created_at.toISOString(),
    updatedAt: w.updated_at.toISOString(),
    // Inside JSON a timestamp is Postgres's text, not a Date: read it back into ISO form.
    nodes: w.nodes.map((n) => ({
      id: n.id,
      type: n.type,
      config: n.config,
      position: n.position,
      createdAt: new Date(n.created_at).toISOString(),
    })),
  }));
}

/** A workflow just written in `trx`; missing only if something is badly wrong, and then the transaction rolls back. */
async function loadOne(trx: Tx, id: string): Promise<WorkflowView> {
  const [workflow] = await loadWorkflows(trx, [id]);
  if (!workflow) throw new DomainError('WORKFLOW_NOT_FOUND');
  return workflow;
}

/** The user's workflows, most recently updated first. */
export async function listWorkflows(db: Database, userId: string): Promise<WorkflowView[]> {
  return db.readAsUser(userId, (trx) => loadWorkflows(trx));
}

/** One of the user's workflows, or null when they have none of that id. */
export async function getWorkflow(db: Database, userId: string, workflowId: string): Promise<WorkflowView | null> {
  const [workflow] = await db.readAsUser(userId, (trx) => loadWorkflows(trx, [workflowId]));
  return workflow ?? null;
}

/** Creates a workflow with its nodes (in the given order) in one transaction. */
export async function createWorkflow(
  db: Database,
  userId: string,
  workflow: { name: string; description: string | null; enabled: boolean; nodes: NodeRow[] },
  now: Date,
): Promise<WorkflowView> {
  const { name, description, enabled, nodes } = workflow;
  return db.withUser(userId, async (trx) => {
    const id = newId('workflow');
    await trx
      .insertInto('workflows')
      .values({ id, user_id: userId, name, description, enabled, created_at: now, updated_at: now })
      .execute();
    await insertNodes(trx, userId, id, nodes, now);
    return loadOne(trx, id);
  });
}

/** Applies `changes` and, when given, replaces the nodes; null when the user has no workflow of that id. */
export async function updateWorkflow(
  db: Database,
  userId: string,
  workflowId: string,
  changes: { name?: string; description?: string | null; enabled?: boolean },
  nodes: NodeRow[] | undefined,
  now: Date,
): Promise<WorkflowView | null> {
  return db.withUser(userId, async (trx) => {
    const updated = await trx
      .updateTable('workflows')
      .set({ ...changes, updated_at: now })
      .where('id', '=', workflowId)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) return null;
    if (nodes) {
      // Replacing the nodes is one step: the transaction never shows a workflow half-rebuilt.
      await trx.deleteFrom('workflow_nodes').where('workflow_id', '=', workflowId).execute();
      await insertNodes(trx, userId, workflowId, nodes, now);
    }
    return loadOne(trx, workflowId);
  });
}

/** Deletes a workflow (its nodes go with it); false when the user has no workflow of that id. */
export async function deleteWorkflow(db: Database, userId: string, workflowId: string): Promise<boolean> {
  const deleted = await db.withUser(userId, (trx) => trx.deleteFrom('workflows').where('id', '=', workflowId).executeTakeFirst());
  return Number(deleted.numDeletedRows) !== 0;
}
