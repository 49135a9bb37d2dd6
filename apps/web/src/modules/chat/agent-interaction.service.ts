import { randomUUID } from 'node:crypto';
import { decryptSecret, DomainError, encryptSecret, isPublicError, parseEncryptionKey } from '@aop/core';
import { type Database, sql } from '@aop/db';
import { GatewayError } from '@aop/gateway-client';
import type { WebConfig } from '../../config.js';
import {
  type ChatDeps,
  type ChatLog,
  type GatewayStatus,
  CHAT_AGENT_ID_MAX as AGENT_ID_MAX,
  SESSION_KEY_PATTERN,
  STATUS_LIST_MAX,
  gatewayStatus,
  restChatUser,
} from './agent-chat.service.js';
import { BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { MEMORY_COLUMNS, type MemoryView, memoryView } from '../agent-data/memory.service.js';
import { requireOwnAgent } from '../../platform/owned-agent.js';
import { type AuthUser, backendCaller } from '../../platform/sessions.js';
import { SKILL_COLUMNS, type SkillView, skillView } from '../skills/skills.service.js';
import {
  type GatewayTarget,
  GatewayUnavailableError,
  agentSessionKey,
  findUserAgent,
  gatewayUnavailableError,
  ownAgentGateway,
  resolveGateway,
  withGateway,
} from '../../platform/clients/user-gateway.js';
import { againOnceLive, isWakeFailure } from '../agents/lifecycle.service.js';

/**
 * `GET, POST /api/agent` (spec §4.18 "Agent interaction"): one read for the dashboard's agent panel and the actions
 * taken from it. Chat is `POST /api/chat`'s, skills are `/api/skills`' rows, memory is `/api/memory`'s; what is new
 * here is gateway session creation and the credential store (`agent_credentials`, migration 0012).
 */

export const AGENT_ACTIONS = ['chat', 'create-session', 'update-skill', 'set-credential'] as const;
export type AgentAction = (typeof AGENT_ACTIONS)[number];
/** A display label; OpenClaw allows 512, and the owner tag of a shared gateway is prefixed to it. */
export const SESSION_LABEL_MAX = 100;
export const CREDENTIAL_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const CREDENTIAL_VALUE_MAX = 4096;
/** Names that are messaging channel tokens of the agent (the `channels.*` of spec §2.2). */
export const CHANNEL_CREDENTIALS = ['telegram', 'discord', 'whatsapp'] as const;
/** The name of the agent's own LLM API key. */
export const LLM_CREDENTIAL = 'llm';

export type CredentialKind = 'channel' | 'llm' | 'skill';

/** Channel tokens and the LLM key configure the agent itself; every other name is a secret for the user's skills. */
export function credentialKind(name: string): CredentialKind {
  if ((CHANNEL_CREDENTIALS as readonly string[]).includes(name)) return 'channel';
  return name === LLM_CREDENTIAL ? 'llm' : 'skill';
}

// ---------------------------------------------------------------------------------------------------------------------
// input checks of `POST /api/agent`'s actions (each bad body gets its own 400 words; the schema checks `action`)

/** An optional agent id: absent or null is none; anything else must be a non-empty short string (`POST /api/chat`'s rule). */
export function checkAgentId(agentId: unknown): string | undefined {
  if (agentId === undefined || agentId === null) return undefined;
  if (typeof agentId !== 'string' || agentId.length === 0 || agentId.length > AGENT_ID_MAX) throw new DomainError('INVALID_AGENTID');
  return agentId;
}

/** `create-session`'s key: a new random one when omitted, else a plain label as for chat. */
export function checkNewSessionKey(sessionKey: unknown): string {
  if (sessionKey === undefined || sessionKey === null || sessionKey === '') return randomUUID();
  if (typeof sessionKey !== 'string' || !SESSION_KEY_PATTERN.test(sessionKey)) {
    throw new DomainError('INVALID_SESSION_KEY');
  }
  return sessionKey;
}

export function checkSessionLabel(label: unknown): string | null {
  if (label === undefined || label === null) return null;
  if (typeof label !== 'string' || label.trim() === '' || label.trim().length > SESSION_LABEL_MAX) {
    throw new DomainError('INVALID_SESSION_LABEL', { max: SESSION_LABEL_MAX });
  }
  return label.trim();
}

export function checkCredentialName(name: unknown): string {
  if (typeof name !== 'string' || !CREDENTIAL_NAME.test(name)) {
    throw new DomainError('INVALID_CREDENTIAL_NAME');
  }
  return name;
}

/** Surrounding whitespace is dropped (a pasted token often carries a newline); the error never repeats the value. */
export function checkCredentialValue(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new DomainError('FIELD_REQUIRED', { field: 'value' });
  const trimmed = value.trim();
  if (trimmed.length > CREDENTIAL_VALUE_MAX) throw new DomainError('FIELD_TOO_LONG', { field: 'value', max: CREDENTIAL_VALUE_MAX });
  return trimmed;
}

// ---------------------------------------------------------------------------------------------------------------------
// credentials at rest

/**
 * The associated data of a sealed credential: purpose, user, scope and name. A sealed value moved to another user's
 * row, another scope, another name, or into another table (trading keys are bound to the user id alone) does not open.
 */
const credentialAad = (userId: string, agentId: string | null, name: string) => JSON.stringify(['agent-credential', userId, agentId, name]);

export function sealCredential(
  config: Pick<WebConfig, 'encryptionKey'>,
  userId: string,
  agentId: string | null,
  name: string,
  value: string,
) {
  return encryptSecret(parseEncryptionKey(config.encryptionKey), value, credentialAad(userId, agentId, name));
}

/** The clear value, for the code that hands a credential to its skill; throws when the row was altered or the key changed. */
export function openCredential(
  config: Pick<WebConfig, 'encryptionKey'>,
  row: { user_id: string; agent_id: string | null; name: string; value_enc: string },
): string {
  return decryptSecret(parseEncryptionKey(config.encryptionKey), row.value_enc, credentialAad(row.user_id, row.agent_id, row.name));
}

export interface CredentialView {
  name: string;
  kind: CredentialKind;
  /** Null: user-wide. */
  agentId: string | null;
  updatedAt: string;
}

// ---------------------------------------------------------------------------------------------------------------------
// GET /api/agent

export interface AgentPanel {
  agent: { id: string; name: string; status: string } | null;
  health: GatewayStatus['health'];
  healthDetail: GatewayStatus['healthDetail'];
  /** At most 10, newest activity first; only the caller's own on a shared gateway. */
  sessions: GatewayStatus['sessions'];
  memory: { count: number; latest: MemoryView[] };
  skills: SkillView[];
  credentials: CredentialView[];
}

const NOT_DEPLOYED: Pick<GatewayStatus, 'health' | 'healthDetail' | 'sessions'> = {
  health: 'unreachable',
  healthDetail: { ok: false, error: 'Agent is not deployed' },
  sessions: { total: 0, active: 0, list: [] },
};

/**
 * The agent the panel shows: the named one (404 `Agent not found` unless it is the caller's), else the one the
 * caller's chat goes to, else their newest agent (a provisioning one shows as such), else none.
 */
async function panelAgent(db: Database, userId: string, agentId: string | undefined) {
  const deployed = agentId ? null : await findUserAgent(db, userId);
  return db.withUser(userId, async (trx) => {
    let query = trx.selectFrom('agents').select(['id', 'name', 'status', 'url']).where('user_id', '=', userId);
    const wanted = agentId ?? deployed?.id;
    if (wanted) query = query.where('id', '=', wanted);
    const row = await query.orderBy('created_at', 'desc').limit(1).executeTakeFirst();
    if (!row && agentId) throw new DomainError('AGENT_NOT_FOUND');
    return row ?? null;
  });
}

/**
 * The panel's rows in one transaction. With an agent named, the rows that apply to it: its own and the user-wide ones
 * (`agentId` null); else all of the caller's.
 */
async function panelRows(db: Database, userId: string, agentId: string | undefined) {
  return db.withUser(userId, async (trx) => {
    let memories = trx.selectFrom('memories').where('user_id', '=', userId);
    let skills = trx.selectFrom('skills').select(SKILL_COLUMNS).where('user_id', '=', userId);
    let credentials = trx.selectFrom('agent_credentials').select(['name', 'kind', 'agent_id', 'updated_at']).where('user_id', '=', userId);
    if (agentId) {
      memories = memories.where((eb) => eb.or([eb('agent_id', '=', agentId), eb('agent_id', 'is', null)]));
      skills = skills.where((eb) => eb.or([eb('agent_id', '=', agentId), eb('agent_id', 'is', null)]));
      credentials = credentials.where((eb) => eb.or([eb('agent_id', '=', agentId), eb('agent_id', 'is', null)]));
    }
    const latest = await memories
      .select(MEMORY_COLUMNS)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(STATUS_LIST_MAX)
      .execute();
    const counted = await memories.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
    const skillRows = await skills.orderBy('installed_at').orderBy('name').orderBy('id').execute();
    const credentialRows = await credentials
      .orderBy('name')
      .orderBy('agent_id', (ob) => ob.nullsFirst())
      .execute();
    return {
      memory: { count: Number(counted.count), latest: latest.map(memoryView) },
      skills: skillRows.map(skillView),
      credentials: credentialRows.map((r) => ({ name: r.name, kind: r.kind, agentId: r.agent_id, updatedAt: r.updated_at.toISOString() })),
    };
  });
}

/**
 * `GET /api/agent`. Health and sessions are `GET /api/gateway/status`'s reading of the named agent's gateway, else of
 * the gateway the caller's chat goes to; an unreachable gateway is `health: 'unreachable'` with no sessions, never an
 * error. Credentials are listed by name, kind, scope and time only.
 */
export async function agentPanel(deps: ChatDeps, log: ChatLog, user: AuthUser, agentId: string | undefined): Promise<AgentPanel> {
  const agent = await panelAgent(deps.db, user.id, agentId);
  const named = agentId && agent ? agent : null;
  const readGateway = async () => {
    if (!named) return gatewayStatus(deps, log, user);
    if (!named.url) return NOT_DEPLOYED;
    // The agent was found a moment ago; if it is gone (or lost its address) since, there is simply no gateway.
    const resolve = () =>
      ownAgentGateway(deps, user, named.id).catch((err: unknown) => {
        throw isPublicError(err) ? new GatewayUnavailableError('no-agent', err.message) : err;
      });
    return gatewayStatus(deps, log, user, resolve);
  };
  const [status, rows] = await Promise.all([readGateway(), panelRows(deps.db, user.id, agentId)]);
  return {
    agent: agent ? { id: agent.id, name: agent.name, status: agent.status } : null,
    health: status.health,
    healthDetail: status.healthDetail,
    sessions: status.sessions,
    ...rows,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// POST /api/agent  action: create-session

/** The user's gateway, or the named agent's; no gateway to use is the answer `gatewayUnavailableError` gives. */
async function targetFor(deps: ChatDeps, user: AuthUser, agentId: string | undefined): Promise<GatewayTarget> {
  try {
    return agentId ? await ownAgentGateway(deps, user, agentId) : await resolveGateway(deps, user);
  } catch (err) {
    if (err instanceof GatewayUnavailableError) throw gatewayUnavailableError(err);
    throw err;
  }
}

/**
 * The gateway session `POST /api/chat` (and the `chat` action) runs in for this user and key: OpenClaw's REST endpoint
 * keeps `agent:<agent>:openai-user:<user>` for an OpenAI `user`, and ours is `restChatUser` (owner tag + key). Creating
 * exactly that session makes a created session and the chat that follows one conversation, and it carries the owner
 * tag on every gateway, so a shared gateway lists it as the caller's only.
 */
export const restSessionKey = (userId: string, sessionKey: string) => `openai-user:${restChatUser(userId, sessionKey)}`;

/** Labels are unique per gateway: on a shared one, the owner tag keeps one user's labels from colliding with another's. */
const scopedLabel = (target: GatewayTarget, label: string) => (target.ownerTag ? `${target.ownerTag}:${label}` : label);

function sessionCreateFailure(err: unknown): DomainError {
  if (isWakeFailure(err)) return err;
  if (err instanceof GatewayError) {
    if (err.code === 'INVALID_REQUEST' && /label already in use/i.test(err.message)) return new DomainError('SESSION_LABEL_IN_USE');
    if (err.code === 'TIMEOUT') return new DomainError('AGENT_GATEWAY_TIMED_OUT');
    if (err.code === 'CONNECT_FAILED' || err.code === 'CLOSED') return new DomainError('AGENT_GATEWAY_UNREACHABLE');
  }
  return new DomainError('AGENT_GATEWAY_FAILED');
}

export interface CreateSessionAnswer {
  success: true;
  sessionKey: string;
  label: string | null;
  agentId: string | null;
}

/**
 * `create-session`: OpenClaw's `sessions.create` (openclaw 2026.9.6) over one WebSocket, with an explicit key (without
 * one OpenClaw mints a dashboard key, and may reset the main session), and no `idempotencyKey` (OpenClaw accepts one
 * only from a paired device or a signed-in principal, and the platform connects as neither). An existing session with
 * that key is adopted, so the action is safe to repeat.
 */
export async function createAgentSession(
  deps: ChatDeps,
  log: ChatLog,
  user: AuthUser,
  input: { sessionKey: string; label: string | null; agentId?: string | undefined },
): Promise<CreateSessionAnswer> {
  const target = await targetFor(deps, user, input.agentId);
  const timeoutMs = deps.config.gateway.requestTimeoutMs;
  const params = {
    key: agentSessionKey(target, restSessionKey(user.id, input.sessionKey)),
    ...(input.label ? { label: scopedLabel(target, input.label) } : {}),
  };
  try {
    // A sleeping agent is woken for it, like by a message (issue #20).
    await againOnceLive(deps, user, target.agentId, deps.config.gateway.startWaitMs, () =>
      withGateway(target, timeoutMs, (conn) => conn.request('sessions.create', params, { timeoutMs })),
    );
  } catch (err) {
    const reason = err instanceof GatewayError ? { code: err.code, reason: err.message } : { reason: String(err) };
    log.warn({ ...reason, agentId: target.agentId, gateway: target.kind }, 'agent: sessions.create failed');
    throw sessionCreateFailure(err);
  }
  return { success: true, sessionKey: input.sessionKey, label: input.label, agentId: target.agentId };
}

// ---------------------------------------------------------------------------------------------------------------------
// POST /api/agent  action: set-credential

export type CredentialDeps = ChatDeps & { config: Pick<WebConfig, 'gateway' | 'encryptionKey'> };

export interface SetCredentialAnswer {
  success: true;
  credential: CredentialView & { applied: boolean };
}

/**
 * Hands a channel token or the LLM key to the agent through the backend (`PUT /api/agents/:id`), which configures the
 * agent's host: the value lands in that agent's own environment and nowhere else. False (logged, without the value)
 * when there is no deployed agent or the backend did not apply it; the credential stays stored either way.
 */
async function applyToAgent(
  deps: CredentialDeps,
  log: ChatLog,
  user: AuthUser,
  agentId: string | null,
  name: string,
  kind: 'channel' | 'llm',
  value: string,
): Promise<boolean> {
  const target = agentId ?? (await findUserAgent(deps.db, user.id))?.id;
  if (!target) return false;
  const body = kind === 'channel' ? { channelTokens: { [name]: value } } : { apiKey: value };
  try {
    const answer = await deps.backend.request(`/api/agents/${encodeURIComponent(target)}`, {
      method: 'PUT',
      body,
      caller: backendCaller(user),
    });
    if (answer.status === 200) return true;
    const error = (answer.body as { error?: unknown } | null)?.error;
    log.warn({ agentId: target, credential: name, status: answer.status, error }, 'agent: credential not applied');
  } catch (err) {
    if (!(err instanceof BackendUnavailableError)) throw err;
    log.warn({ agentId: target, credential: name }, 'agent: credential not applied, backend unreachable');
  }
  return false;
}

/**
 * `set-credential`: stores (or replaces) the credential sealed, in the named agent's scope or the user-wide one, then
 * applies channel tokens and the LLM key to the agent. The answer never carries the value.
 */
export async function setAgentCredential(
  deps: CredentialDeps,
  log: ChatLog,
  user: AuthUser,
  input: { name: string; value: string; agentId?: string | undefined },
): Promise<SetCredentialAnswer> {
  const agentId = input.agentId ?? null;
  const kind = credentialKind(input.name);
  const valueEnc = sealCredential(deps.config, user.id, agentId, input.name, input.value);
  const now = new Date();
  const stored = await deps.db.withUser(user.id, async (trx) => {
    if (agentId) await requireOwnAgent(trx, agentId);
    // One row per (user, scope, name): the unique index on `coalesce(agent_id, '')` decides, so concurrent saves of one
    // name leave one row with the last value.
    const result = await sql<{ updated_at: Date }>`
      insert into agent_credentials (user_id, agent_id, name, kind, value_enc, created_at, updated_at)
      values (${user.id}, ${agentId}, ${input.name}, ${kind}, ${valueEnc}, ${now}, ${now})
      on conflict (user_id, (coalesce(agent_id, '')), name)
      do update set kind = excluded.kind, value_enc = excluded.value_enc, updated_at = excluded.updated_at
      returning updated_at`.execute(trx);
    const row = result.rows[0];
    if (!row) throw new Error('agent_credentials upsert returned no row');
    return row;
  });
  const applied = kind === 'skill' ? false : await applyToAgent(deps, log, user, agentId, input.name, kind, input.value);
  return {
    success: true,
    credential: { name: input.name, kind, agentId, updatedAt: new Date(stored.updated_at).toISOString(), applied },
  };
}
