import { DomainError, newId } from '@aop/core';
import type { Database, WorkflowRunStep } from '@aop/db';
import { type ChatEventPayload, GatewayError, chatSend } from '@aop/gateway-client';
import {
  type GatewayDeps,
  type GatewayTarget,
  GatewayUnavailableError,
  resolveGateway,
  scopedSessionKey,
  withGateway,
  assertTakesTurns,
} from '../../platform/clients/user-gateway.js';
import type { AuthUser } from '../../platform/sessions.js';
import { agentTurnUsage, providerKeyWords, usageOfMessage } from '../chat/agent-chat.service.js';
import { againOnceLive, isWakeFailure } from '../agents/lifecycle.service.js';
import { recordUsage } from '../usage/usage.service.js';

/**
 * Running a workflow (issue #19): its nodes executed against the owner's agent, and each run recorded with its steps.
 *
 * The graph is the editor's (`graph.ts` in the dashboard): every node keeps its key in `config.key` and its outgoing
 * connections as target keys in `config.next`. A run starts at the triggers and follows the connections:
 * - trigger: passes the run's input on;
 * - action: one agent turn in the run's own session: the step's operation (`config.action`), the tool to use if the
 *   step names one (`config.tool`, `config.args`; the agent makes tool calls within its turn), and the previous step's
 *   result; the reply is the step's result;
 * - condition: checks `config.expression` against the previous result (`contains "x"`, `not contains`, `equals`,
 *   `starts with`, `ends with`, `is empty`, `is not empty`); when it does not hold, that branch stops there;
 * - output: the previous result becomes (part of) the run's result (`config.destination` is recorded, not delivered).
 *
 * A run is bounded: at most `MAX_STEPS` steps (a loop in the graph ends there) and `RUN_TIMEOUT_MS` in all, each agent
 * turn within the gateway's chat timeout. The first failing step fails the run; it is recorded with its error.
 */

/** Steps one run may take: enough for any graph the editor draws without a loop. */
export const WORKFLOW_RUN_MAX_STEPS = 50;
/** How long one run may take, agent turns included. */
export const WORKFLOW_RUN_TIMEOUT_MS = 5 * 60_000;
/** A step's input and result are kept up to this many characters (the agent's reply can be long). */
const STEP_TEXT_MAX = 20_000;
/** A run's input when the caller gives none. */
const MANUAL_RUN = 'Manual run';
/** The usage ledger's kind for workflow turns. */
export const WORKFLOW_USAGE_KIND = 'workflow';

type NodeType = WorkflowRunStep['type'];

export interface WorkflowRunView {
  id: string;
  workflowId: string;
  status: 'running' | 'succeeded' | 'failed';
  input: string;
  result: string | null;
  error: string | null;
  steps: WorkflowRunStep[];
  startedAt: string;
  finishedAt: string | null;
}

export interface RunLimits {
  maxSteps: number;
  timeoutMs: number;
}

export interface RunDeps extends GatewayDeps {
  clock: () => number;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

interface RunNode {
  key: string;
  type: NodeType;
  label: string;
  config: Record<string, unknown>;
  next: string[];
}

const TITLES: Record<NodeType, string> = { trigger: 'Trigger', action: 'Action', condition: 'Condition', output: 'Output' };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string => (typeof value === 'string' ? value.trim() : '');
const clip = (value: string) => (value.length > STEP_TEXT_MAX ? `${value.slice(0, STEP_TEXT_MAX)}…` : value);

function parseObject(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

/** The stored nodes as a graph: keys as the editor gave them (else the node's id), connections to known keys only. */
export function runGraph(nodes: readonly { id: string; type: string; config: string }[]): RunNode[] {
  const taken = new Set<string>();
  const graph = nodes.map((node) => {
    const config = parseObject(node.config);
    const own = text(config.key);
    const key = own && !taken.has(own) ? own : node.id;
    taken.add(key);
    const type = (['trigger', 'action', 'condition', 'output'] as const).find((t) => t === node.type) ?? 'action';
    const next = Array.isArray(config.next) ? config.next.filter((k): k is string => typeof k === 'string') : [];
    return { key, type, label: text(config.label) || TITLES[type], config, next };
  });
  for (const node of graph) node.next = [...new Set(node.next)].filter((k) => taken.has(k) && k !== node.key);
  return graph;
}

const OPERATORS = ['not contains', 'does not contain', 'contains', 'not equals', 'equals', 'starts with', 'ends with'] as const;

/**
 * Whether `expression` holds for `value`, case-insensitively; a problem in words when it cannot be read. Only plain
 * text comparisons: a condition is the user's, the text is the agent's, and neither should be able to stall the server
 * (no regular expressions).
 */
export function conditionHolds(expression: string, value: string): { holds: boolean } | { problem: string } {
  const expr = expression.trim();
  const subject = value.trim().toLowerCase();
  const lower = expr.toLowerCase();
  if (expr === '') return { problem: 'The condition is empty: write one, for example contains "urgent"' };
  if (lower === 'is empty' || lower === 'empty') return { holds: subject === '' };
  if (lower === 'is not empty' || lower === 'not empty') return { holds: subject !== '' };
  const operator = OPERATORS.find((op) => lower.startsWith(`${op} `));
  if (operator) {
    let operand = expr.slice(operator.length).trim();
    const quoted = /^(["'“])(.*)(["'”])$/s.exec(operand);
    if (quoted) operand = quoted[2] ?? '';
    const needle = operand.toLowerCase();
    if (needle === '') return { problem: `The condition “${expr}” has nothing to compare with` };
    switch (operator) {
      case 'contains':
        return { holds: subject.includes(needle) };
      case 'not contains':
      case 'does not contain':
        return { holds: !subject.includes(needle) };
      case 'equals':
        return { holds: subject === needle };
      case 'not equals':
        return { holds: subject !== needle };
      case 'starts with':
        return { holds: subject.startsWith(needle) };
      case 'ends with':
        return { holds: subject.endsWith(needle) };
    }
  }
  return {
    problem: `Cannot read the condition “${expr}”: use contains, not contains, equals, not equals, starts with, ends with (each followed by text), is empty or is not empty`,
  };
}

/** What the agent is asked at an action step. */
export function actionMessage(node: RunNode, input: string): string | null {
  const operation = text(node.config.action);
  const tool = text(node.config.tool);
  if (!operation && !tool) return null;
  const parts = [operation || `Use the tool ${tool}.`];
  if (tool && operation) parts.push(`Use the tool ${tool} for this.`);
  if (tool && node.config.args !== undefined) parts.push(`Call it with these arguments: ${JSON.stringify(node.config.args)}`);
  if (input) parts.push(`Input from the previous step:\n${input}`);
  return parts.join('\n\n');
}

/** `300 s`, or `0.3 s` for the short limits of tests. */
const seconds = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`);

/** A failed agent turn in words (never the gateway's address or token). */
function turnFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof GatewayUnavailableError) return `No agent to run on: ${err.message}`;
  // A stopped agent (`assertTakesTurns`), in its words.
  if (err instanceof DomainError && err.code === 'AGENT_NOT_LIVE') return err.message;
  // A sleeping agent the step could not wake (no room on its host, still starting), in its words.
  if (isWakeFailure(err)) return err.message;
  if (err instanceof GatewayError) {
    if (err.code === 'TIMEOUT') return `The agent did not answer within ${seconds(timeoutMs)}`;
    if (err.code === 'CHAT_ERROR') return `The agent's turn failed: ${err.message}`;
    if (err.code === 'CHAT_ABORTED') return "The agent's turn was aborted";
    if (err.code === 'CONNECT_FAILED' || err.code === 'CLOSED') return 'The agent gateway could not be reached';
    return `The agent gateway refused the turn: ${err.message}`;
  }
  throw err;
}

const view = (row: {
  id: string;
  workflow_id: string;
  status: WorkflowRunView['status'];
  input: string;
  result: string | null;
  error: string | null;
  steps: WorkflowRunStep[];
  started_at: Date;
  finished_at: Date | null;
}): WorkflowRunView => ({
  id: row.id,
  workflowId: row.workflow_id,
  status: row.status,
  input: row.input,
  result: row.result,
  error: row.error,
  steps: row.steps,
  startedAt: row.started_at.toISOString(),
  finishedAt: row.finished_at?.toISOString() ?? null,
});

const RUN_COLUMNS = ['id', 'workflow_id', 'status', 'input', 'result', 'error', 'steps', 'started_at', 'finished_at'] as const;

/**
 * Starts a run of the caller's workflow: 404 when it is not theirs, 409 when it is disabled or already running, 400
 * without a trigger. Records the run as running and answers the graph to execute.
 */
async function startRun(
  db: Database,
  userId: string,
  workflowId: string,
  input: string,
  now: Date,
  limits: RunLimits,
): Promise<{ runId: string; graph: RunNode[] }> {
  return db.withUser(userId, async (trx) => {
    // Locked: two runs asked at once cannot both pass the "already running" check.
    const workflow = await trx
      .selectFrom('workflows')
      .select(['id', 'enabled'])
      .where('id', '=', workflowId)
      .forUpdate()
      .executeTakeFirst();
    if (!workflow) throw new DomainError('WORKFLOW_NOT_FOUND');
    if (!workflow.enabled) throw new DomainError('WORKFLOW_DISABLED');
    const nodes = await trx
      .selectFrom('workflow_nodes')
      .select(['id', 'type', 'config'])
      .where('workflow_id', '=', workflowId)
      .orderBy('seq')
      .execute();
    const graph = runGraph(nodes);
    if (!graph.some((n) => n.type === 'trigger')) throw new DomainError('WORKFLOW_NO_TRIGGER');
    // A run left `running` by a stopped process is not in the way once it is past any run's time.
    const stale = new Date(now.getTime() - limits.timeoutMs - 60_000);
    const running = await trx
      .selectFrom('workflow_runs')
      .select('id')
      .where('workflow_id', '=', workflowId)
      .where('status', '=', 'running')
      .where('started_at', '>', stale)
      .executeTakeFirst();
    if (running) throw new DomainError('WORKFLOW_ALREADY_RUNNING');
    const runId = newId('workflowRun');
    await trx
      .insertInto('workflow_runs')
      .values({ id: runId, workflow_id: workflowId, user_id: userId, status: 'running', input, steps: JSON.stringify([]), started_at: now })
      .execute();
    return { runId, graph };
  });
}

/** Runs the caller's workflow to its end (or its first failure, or a limit) and answers the recorded run. */
export async function runWorkflow(
  deps: RunDeps,
  user: AuthUser,
  workflowId: string,
  given: string | undefined,
  limits: RunLimits = { maxSteps: WORKFLOW_RUN_MAX_STEPS, timeoutMs: WORKFLOW_RUN_TIMEOUT_MS },
): Promise<WorkflowRunView> {
  const startedAt = deps.clock();
  const input = given ?? MANUAL_RUN;
  const { runId, graph } = await startRun(deps.db, user.id, workflowId, input, new Date(startedAt), limits);
  const deadline = startedAt + limits.timeoutMs;
  const byKey = new Map(graph.map((n) => [n.key, n]));
  const steps: WorkflowRunStep[] = [];
  const results: string[] = [];
  let failure: string | null = null;
  let target: GatewayTarget | null = null;
  const sessionKey = `workflow-run-${runId}`;

  // Without an input, a trigger passes on what it starts on (its setting), so the first action has something to go by.
  const triggerInput = (node: RunNode) =>
    given ?? (text(node.config.event) ? `${MANUAL_RUN}; the trigger is: ${text(node.config.event)}` : MANUAL_RUN);
  const queue = graph.filter((n) => n.type === 'trigger').map((node) => ({ node, input: triggerInput(node) }));
  while (queue.length > 0 && failure === null) {
    const { node, input: stepInput } = queue.shift()!;
    const begun = new Date(deps.clock()).toISOString();
    const record = (status: WorkflowRunStep['status'], output: string | null, error: string | null = null) => {
      steps.push({
        key: node.key,
        type: node.type,
        label: node.label,
        status,
        input: clip(stepInput),
        output: output === null ? null : clip(output),
        error,
        startedAt: begun,
        finishedAt: new Date(deps.clock()).toISOString(),
      });
      if (status === 'failed') failure = `${node.label}: ${error}`;
    };
    if (steps.length >= limits.maxSteps) {
      record('failed', null, `Step limit reached: a run takes at most ${limits.maxSteps} steps (is there a loop in the workflow?)`);
      break;
    }
    const left = deadline - deps.clock();
    if (left <= 0) {
      record('failed', null, `Time limit reached: a run takes at most ${seconds(limits.timeoutMs)}`);
      break;
    }

    let output: string;
    if (node.type === 'trigger') {
      output = stepInput;
    } else if (node.type === 'output') {
      output = stepInput;
      results.push(stepInput);
    } else if (node.type === 'condition') {
      const check = conditionHolds(text(node.config.expression), stepInput);
      if ('problem' in check) {
        record('failed', null, check.problem);
        break;
      }
      if (!check.holds) {
        record('stopped', 'The condition does not hold: this branch stops here');
        continue;
      }
      output = stepInput;
    } else {
      const message = actionMessage(node, stepInput);
      if (message === null) {
        record('failed', null, 'This action has no operation: say what the agent should do');
        break;
      }
      const turnTimeout = Math.min(deps.config.gateway.chatTimeoutMs, left);
      try {
        target ??= await resolveGateway(deps, user);
        const agent = target;
        assertTakesTurns(agent);
        let final: ChatEventPayload | undefined;
        const scoped = scopedSessionKey(agent, sessionKey);
        // The socket outlives the turn by a moment, so a slow agent is told as such (chatSend's TIMEOUT), not as a closed
        // socket. A sleeping agent is woken by the step, like by a message, within what is left of the run's time.
        output = await againOnceLive(deps, user, agent.agentId, Math.min(deps.config.gateway.startWaitMs, left), () =>
          withGateway(agent, turnTimeout + 1_000, (conn) => {
            conn.on('chat', (payload) => {
              const p = payload as ChatEventPayload;
              if (p.state === 'final') final = p;
            });
            return chatSend(conn, { sessionKey: scoped, message, timeoutMs: turnTimeout });
          }),
        );
        await recordTurnUsage(deps, user, agent, final);
      } catch (err) {
        // A missing or refused provider key is said in the chat's words (issue #19).
        const keyWords = target ? await providerKeyWords(deps, deps.log, user, target, err) : null;
        record('failed', null, keyWords ?? turnFailure(err, turnTimeout));
        break;
      }
    }
    record('succeeded', output);
    for (const next of node.next) {
      const to = byKey.get(next);
      if (to) queue.push({ node: to, input: output });
    }
  }

  const finishedAt = new Date(deps.clock());
  const row = await deps.db.withUser(user.id, (trx) =>
    trx
      .updateTable('workflow_runs')
      .set({
        status: failure === null ? 'succeeded' : 'failed',
        result: results.length > 0 ? clip(results.join('\n\n')) : null,
        error: failure,
        steps: JSON.stringify(steps),
        finished_at: finishedAt,
      })
      .where('id', '=', runId)
      .returning(RUN_COLUMNS)
      .executeTakeFirst(),
  );
  // The workflow was deleted while it ran: its runs went with it.
  if (!row) throw new DomainError('WORKFLOW_NOT_FOUND');
  return view(row);
}

/** An agent turn of a run in the usage ledger; a lost row is logged, never a failed step. */
async function recordTurnUsage(deps: RunDeps, user: AuthUser, target: GatewayTarget, final: ChatEventPayload | undefined): Promise<void> {
  const reported = usageOfMessage(final?.message);
  const usage = reported?.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const model = reported?.model ?? null;
  try {
    await deps.db.withUser(user.id, (trx) => recordUsage(trx, agentTurnUsage(user, target, WORKFLOW_USAGE_KIND, model, usage)));
  } catch (err) {
    deps.log.error({ err, agentId: target.agentId }, 'workflow run: usage not recorded');
  }
}

/** The caller's last runs of one workflow, newest first; null when the workflow is not theirs. */
export async function listWorkflowRuns(db: Database, userId: string, workflowId: string, limit: number): Promise<WorkflowRunView[] | null> {
  return db.withUser(userId, async (trx) => {
    const workflow = await trx.selectFrom('workflows').select('id').where('id', '=', workflowId).executeTakeFirst();
    if (!workflow) return null;
    const rows = await trx
      .selectFrom('workflow_runs')
      .select(RUN_COLUMNS)
      .where('workflow_id', '=', workflowId)
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map(view);
  });
}
