import { DomainError, newId, sha256Hex } from '@aop/core';
import type { Database } from '@aop/db';
import type { RestChatMessage } from '@aop/gateway-client';
import {
  type AgentTurnInput,
  type ChatDeps,
  type ChatLog,
  type ChatUsage,
  SESSION_KEY_PATTERN,
  recordChatUsage,
  restChatUser,
  runAgentTurn,
} from '../chat/agent-chat.service.js';
import {
  type GatewayTarget,
  GatewayUnavailableError,
  agentGatewayTarget,
  gatewayUnavailableError,
} from '../../platform/clients/user-gateway.js';
import type { AuthUser } from '../../platform/sessions.js';
import type { ChatCompletionBody } from './openai-compat.schemas.js';

/**
 * The OpenAI-compatible face of one's agents (issue #22): `model` names one of the caller's agents, the conversation
 * goes to it through the chat's own turn (`runAgentTurn`: OpenClaw's `/v1/chat/completions` on the agent's gateway,
 * woken and waited for like the chat does), usage lands in the ledger as a chat turn's. No HTTP here: refusals are
 * `CompatRefusal`s and the chat's domain errors, put in OpenAI's shape at the edge (openai-errors.ts).
 */

/** Why a request is refused before any agent is asked; the edge gives each its OpenAI status, type and code. */
export type CompatRefusalKind = 'model_not_found' | 'model_ambiguous' | 'no_user_message';

export class CompatRefusal extends Error {
  override readonly name = 'CompatRefusal';
  constructor(
    readonly kind: CompatRefusalKind,
    message: string,
    /** The request field at fault, as OpenAI names it. */
    readonly param: string,
  ) {
    super(message);
  }
}

/** `agent:<id>` names an agent by id as OpenClaw's own model contract does (its compatibility alias). */
const AGENT_PREFIX = 'agent:';

/** A `user`/`X-Session-Key` that is not a plain session label becomes `u-` and this many hex digits of its SHA-256. */
const HASHED_KEY_HEX = 32;

/** One of the caller's agents as OpenAI lists a model (`name` is ours: what the dashboard calls it). */
export interface OpenAiModel {
  id: string;
  object: 'model';
  /** Unix seconds: when the agent was created. */
  created: number;
  /** The account that owns the agent (always the caller). */
  owned_by: string;
  name: string;
}

interface AgentRow {
  id: string;
  name: string;
  url: string | null;
  created_at: Date;
}

const modelOf = (user: AuthUser, row: AgentRow): OpenAiModel => ({
  id: row.id,
  object: 'model',
  created: Math.floor(row.created_at.getTime() / 1000),
  owned_by: user.id,
  name: row.name,
});

/** `GET /v1/models`: the caller's agents, newest first. */
export async function listModels(db: Database, user: AuthUser): Promise<OpenAiModel[]> {
  const rows = await db.readAsUser(user.id, (trx) =>
    trx
      .selectFrom('agents')
      .select(['id', 'name', 'url', 'created_at'])
      .where('user_id', '=', user.id)
      .orderBy('created_at', 'desc')
      .execute(),
  );
  return rows.map((row) => modelOf(user, row));
}

/**
 * The caller's agent a `model` names: its id, `agent:<id>`, or its name (an id wins over a name). Another user's agent
 * is not found, exactly like one that does not exist; a name two of the caller's agents share is refused (say the id).
 */
async function agentNamed(db: Database, user: AuthUser, model: string): Promise<AgentRow> {
  const id = model.startsWith(AGENT_PREFIX) ? model.slice(AGENT_PREFIX.length) : model;
  const rows = await db.readAsUser(user.id, (trx) =>
    trx
      .selectFrom('agents')
      .select(['id', 'name', 'url', 'created_at'])
      .where('user_id', '=', user.id)
      .where((eb) => eb.or([eb('id', '=', id), eb('name', '=', model)]))
      .limit(10)
      .execute(),
  );
  const byId = rows.find((row) => row.id === id);
  if (byId) return byId;
  if (rows.length === 1 && rows[0]) return rows[0];
  if (rows.length > 1) {
    throw new CompatRefusal(
      'model_ambiguous',
      `Several of your agents are named '${model}': name one by its id (GET /v1/models lists them)`,
      'model',
    );
  }
  throw new CompatRefusal('model_not_found', `The model '${model}' does not exist or you do not have access to it`, 'model');
}

/** `GET /v1/models/{model}`: one of the caller's agents, named as `model` names it. */
export async function findModel(db: Database, user: AuthUser, model: string): Promise<OpenAiModel> {
  return modelOf(user, await agentNamed(db, user, model));
}

/**
 * The session key of a conversation: `X-Session-Key`, else OpenAI `user`; none (absent or empty) means a session of the
 * request's own, as OpenClaw does without `user`. A plain label (the chat's `sessionKey` rule) is the key itself, so
 * `user: "travel"` continues the session `POST /api/chat` keeps for `sessionKey: "travel"`; anything else (an email, a
 * UUID with `:`) is keyed by its digest, so it can never name another owner's key or an OpenClaw namespace. The owner
 * tag is added by `restChatUser`: one user's keys never meet another's.
 */
export function conversationKey(sessionKeyHeader: string | undefined, user: string | undefined): string | undefined {
  const raw = sessionKeyHeader || user;
  if (!raw) return undefined;
  return SESSION_KEY_PATTERN.test(raw) ? raw : `u-${sha256Hex(raw).slice(0, HASHED_KEY_HEX)}`;
}

/** OpenAI request fields the agent's model takes, passed on as given when set (OpenClaw forwards them best-effort). */
const MODEL_PARAMS = [
  'temperature',
  'top_p',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'stop',
  'max_tokens',
  'max_completion_tokens',
  'response_format',
] as const satisfies readonly (keyof ChatCompletionBody)[];

const textOf = (content: ChatCompletionBody['messages'][number]['content']) =>
  typeof content === 'string' ? content : (content ?? []).map((part) => part.text).join('');

export interface CompletionRequest {
  body: ChatCompletionBody;
  /** The `X-Session-Key` header. */
  sessionKey?: string | undefined;
}

/** A completion ready to run: the agent's gateway found, its token in hand. */
export interface PreparedCompletion {
  id: string;
  /** Unix seconds. */
  created: number;
  /** The agent's id: what `model` named, as `GET /v1/models` lists it. */
  model: string;
  target: GatewayTarget;
  turn: AgentTurnInput;
}

/**
 * Finds the agent `model` names and its gateway, and shapes the turn: the messages as sent (OpenClaw makes the
 * conversation of them, `system`/`developer` its extra system prompt), the conversation's session (`conversationKey`),
 * the model parameters that were set.
 */
export async function prepareCompletion(deps: ChatDeps, user: AuthUser, request: CompletionRequest): Promise<PreparedCompletion> {
  const { body } = request;
  if (!body.messages.some((m) => m.role === 'user' && textOf(m.content).trim() !== '')) {
    throw new CompatRefusal('no_user_message', 'messages must include a user message with text', 'messages');
  }
  const agent = await agentNamed(deps.db, user, body.model);
  if (!agent.url) throw new DomainError('AGENT_NOT_DEPLOYED');
  let target: GatewayTarget;
  try {
    target = await agentGatewayTarget(deps, user, { id: agent.id, name: agent.name, url: agent.url });
  } catch (err) {
    if (err instanceof GatewayUnavailableError) throw gatewayUnavailableError(err);
    throw err;
  }
  const messages: RestChatMessage[] = body.messages.map((m) => ({
    role: m.role,
    content: m.content ?? '',
    ...(m.name !== undefined ? { name: m.name } : {}),
  }));
  const params: Record<string, unknown> = {};
  for (const name of MODEL_PARAMS) if (body[name] !== undefined && body[name] !== null) params[name] = body[name];
  const key = conversationKey(request.sessionKey, body.user ?? undefined);
  return {
    id: newId('chatCompletion'),
    created: Math.floor(deps.clock() / 1000),
    model: agent.id,
    target,
    turn: {
      messages,
      ...(key !== undefined ? { gatewayUser: restChatUser(user.id, key) } : {}),
      ...(Object.keys(params).length > 0 ? { params } : {}),
    },
  };
}

/**
 * Runs the turn (streamed through `onDelta` as the agent's gateway relays it, when given; stopped by `signal`, the
 * caller gone) and writes its usage to the ledger as a chat turn (`kind: chat`), before the caller hears the end.
 */
export async function runCompletion(
  deps: ChatDeps,
  log: ChatLog,
  user: AuthUser,
  prepared: PreparedCompletion,
  options: { signal: AbortSignal; onDelta?: (text: string) => void },
): Promise<{ text: string; usage: ChatUsage }> {
  const { text, model, usage } = await runAgentTurn(deps, log, user, prepared.target, { ...prepared.turn, ...options });
  await recordChatUsage(deps, log, user, prepared.target, model, usage);
  return { text, usage };
}
