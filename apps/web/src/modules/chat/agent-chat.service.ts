import { DomainError, type RateLimitRule, newId } from '@aop/core';
import { isWarmUpSession, sessionIsActive, sessionLastActivityMs } from '@aop/core/agent-state';
import { llmCostUsd } from '@aop/core/llm-prices';
import type { Database } from '@aop/db';
import {
  type ChatEventPayload,
  GatewayError,
  type GatewayConnection,
  type RestChatMessage,
  type RestChatOptions,
  chatSend,
  restChat,
  restChatStream,
} from '@aop/gateway-client';
import { type AppliedModel, UNKNOWN_MODEL, readAppliedModel } from '../agents/agents.service.js';
import { againOnceLive, gatewayDown, untilLive } from '../agents/lifecycle.service.js';
import { cronJobView, listOwnJobs } from '../schedule/cron-jobs.service.js';
import type { AuthUser } from '../../platform/sessions.js';
import { recordUsage, type UsageEvent } from '../usage/usage.service.js';
import { probeGateway } from '../../platform/clients/gateway-probe.js';
import {
  type GatewayDeps,
  type GatewayTarget,
  GatewayUnavailableError,
  gatewayUnavailableError,
  agentScope,
  gatewayModel,
  ownAgentGateway,
  ownedSessionKey,
  ownerTagFor,
  resolveGateway,
  scopedSessionKey,
  withGateway,
  assertTakesTurns,
} from '../../platform/clients/user-gateway.js';

/** A chat message is at most this long (the 1 MB body limit would allow far more than any agent turn should carry). */
export const CHAT_MESSAGE_MAX_CHARS = 32_000;
/** Longest `agentId` a chat takes. */
export const CHAT_AGENT_ID_MAX = 64;
/** The session the spec defaults to (`sessionKey` omitted). */
export const DEFAULT_SESSION_KEY = 'main';
/**
 * A user-chosen session key is a plain label: no `:`, so it can never name another owner's scoped key or one of
 * OpenClaw's reserved namespaces (`subagent:`, `cron:`, `acp:`, `agent:`).
 */
export const SESSION_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** Spec §8 "Web rate: chat 60/min". */
export const CHAT_LIMIT_PER_MINUTE = 60;
/**
 * The chat's budget, per client: every path that opens a turn on an agent counts against it (one counter, by name):
 * `/api/chat`, `/api/gateway/chat`, `/api/agent`'s `chat` action and the OpenAI-compatible `/v1/chat/completions`.
 */
export const CHAT_RATE_LIMIT: RateLimitRule = { name: 'chat', max: CHAT_LIMIT_PER_MINUTE, windowMs: 60_000, message: 'Too many requests' };
/** The usage ledger's kind for agent chat turns (REST and WebSocket alike). */
export const CHAT_USAGE_KIND = 'chat';
/** Spec §8: the status page lists up to 10 sessions and 10 jobs. */
export const STATUS_LIST_MAX = 10;
/** How many sessions a status read scans for its totals and the owner filter of a shared gateway. */
const STATUS_SCAN = 500;

export const HISTORY_DEFAULT_LIMIT = 50;
export const HISTORY_MAX_LIMIT = 200;

/** The gateway's dependencies, and the app clock (dates of the agent state a waiting message reads). */
export type ChatDeps = GatewayDeps & { clock: () => number };

export interface ChatLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Token counts as OpenAI names them; the answers of both chat paths carry them. */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

// ---------------------------------------------------------------------------------------------------------------------
// shared pieces

/** The message, or the spec's 400. */
export function checkMessage(message: unknown): string {
  if (typeof message !== 'string' || message.trim() === '') throw new DomainError('MESSAGE_REQUIRED');
  if (message.length > CHAT_MESSAGE_MAX_CHARS) throw new DomainError('MESSAGE_TOO_LONG', { max: CHAT_MESSAGE_MAX_CHARS });
  return message;
}

/** The session key, `main` when omitted. */
export function checkSessionKey(sessionKey: unknown): string {
  if (sessionKey === undefined || sessionKey === null || sessionKey === '') return DEFAULT_SESSION_KEY;
  if (typeof sessionKey !== 'string' || !SESSION_KEY_PATTERN.test(sessionKey)) {
    throw new DomainError('INVALID_SESSION_KEY');
  }
  return sessionKey;
}

/**
 * The model an agent runs, or unknown when the turn went to no agent of the user (the shared platform gateway). Never
 * rejects: it is read beside the turn, and a failed read must neither fail a turn the user got nor go unhandled.
 */
const appliedModelOf = (
  deps: Pick<ChatDeps, 'backend'>,
  log: Pick<ChatLog, 'warn'>,
  user: AuthUser,
  target: GatewayTarget,
): Promise<AppliedModel> =>
  target.agentId
    ? readAppliedModel(deps.backend, user, target.agentId).catch((err: unknown) => {
        log.warn({ err, agentId: target.agentId }, 'chat: the agent’s model could not be read');
        return UNKNOWN_MODEL;
      })
    : Promise.resolve(UNKNOWN_MODEL);

/**
 * USD for a turn. OpenClaw names models `<provider>/<model>` (`openrouter/anthropic/claude-sonnet-4.5`); the price table
 * names them as the serving provider does (`anthropic/claude-sonnet-4.5`), so the provider segment is tried off too.
 * A model without a price costs 0 (the ledger still counts its tokens).
 */
export function chatCostUsd(model: string | null, promptTokens: number, completionTokens: number): number {
  if (!model) return 0;
  return (
    llmCostUsd(model, promptTokens, completionTokens) ??
    llmCostUsd(model.slice(model.indexOf('/') + 1), promptTokens, completionTokens) ??
    0
  );
}

const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.trunc(value) : 0);

/**
 * Usage and model of an assistant transcript message (what the `final` chat event projects): OpenClaw keeps
 * `{ provider, model, usage: { input, output, … } }`; OpenAI-style names are read too.
 */
export function usageOfMessage(message: unknown): { model: string | null; usage: ChatUsage } | null {
  if (!message || typeof message !== 'object') return null;
  const m = message as { provider?: unknown; model?: unknown; usage?: Record<string, unknown> };
  const u = m.usage && typeof m.usage === 'object' ? m.usage : undefined;
  const model =
    typeof m.model === 'string' && m.model ? (typeof m.provider === 'string' && m.provider ? `${m.provider}/${m.model}` : m.model) : null;
  if (!u && !model) return null;
  const prompt = count(u?.input ?? u?.prompt_tokens ?? u?.inputTokens);
  const completion = count(u?.output ?? u?.completion_tokens ?? u?.outputTokens);
  return { model, usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } };
}

/** The usage-ledger row of one agent turn (`kind`: a chat, a workflow step …), priced from the model that answered. */
export function agentTurnUsage(user: AuthUser, target: GatewayTarget, kind: string, model: string | null, usage: ChatUsage): UsageEvent {
  return {
    userId: user.id,
    agentId: target.agentId,
    agentName: target.agentName,
    kind,
    model,
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    totalTokens: usage.total_tokens,
    costUsd: chatCostUsd(model, usage.prompt_tokens, usage.completion_tokens),
  };
}

/** Appends the turn to the usage ledger; a lost row is logged, never turned into an error for a turn the user got. */
export async function recordChatUsage(
  deps: ChatDeps,
  log: ChatLog,
  user: AuthUser,
  target: GatewayTarget,
  model: string | null,
  usage: ChatUsage,
): Promise<void> {
  try {
    await deps.db.withUser(user.id, (trx) => recordUsage(trx, agentTurnUsage(user, target, CHAT_USAGE_KIND, model, usage)));
  } catch (err) {
    log.error({ err, agentId: target.agentId }, 'chat: usage not recorded');
  }
}

/** A gateway failure in words that are safe to log (never the token). */
const failureOf = (err: unknown) =>
  err instanceof GatewayError ? { code: err.code, reason: err.message } : { reason: err instanceof Error ? err.message : String(err) };

// ---------------------------------------------------------------------------------------------------------------------
// POST /api/gateway/chat

export interface GatewayChatAnswer {
  success: true;
  reply: string;
  agentId: string;
  agentName: string;
}

/**
 * Spec §4.4 WebSocket chat: one socket per request to the user's gateway, challenge-response handshake with the
 * backend's token, `chat.send`, the reply of the `final` event. Every gateway failure is 500 `Chat failed` (the
 * cause is logged, never sent); the whole exchange is bounded by `gateway.chatTimeoutMs`.
 */
export async function gatewayChat(
  deps: ChatDeps,
  log: ChatLog,
  user: AuthUser,
  input: { message: string; sessionKey: string },
): Promise<GatewayChatAnswer> {
  const exists = await deps.db.withUser(user.id, (trx) =>
    trx.selectFrom('users').select('id').where('id', '=', user.id).executeTakeFirst(),
  );
  if (!exists) throw new DomainError('USER_NOT_FOUND');

  let target: GatewayTarget;
  try {
    target = await resolveGateway(deps, user);
  } catch (err) {
    if (!(err instanceof GatewayUnavailableError)) throw err;
    if (err.reason === 'no-agent') throw new DomainError('NO_AGENT_FOUND');
    // The spec's answer when the backend gives no token, whether it refused or could not be reached.
    if (err.reason === 'backend-unreachable') log.warn({ reason: err.message }, 'gateway chat: backend unreachable for the token');
    throw new DomainError('NO_GATEWAY_TOKEN_AVAILABLE');
  }

  // Spec §4.4: this route times out after 30 s (`chatTimeoutMs`), a wake included.
  const chatTimeoutMs = deps.config.gateway.chatTimeoutMs;
  const deadline = performance.now() + chatTimeoutMs;
  const sessionKey = scopedSessionKey(target, input.sessionKey);
  let final: ChatEventPayload | undefined;
  let reply: string;
  try {
    // A stopped agent is one more failure of this route (its own gateway would be down): 500 below, the reason logged.
    assertTakesTurns(target);
    // A sleeping agent is woken by the message, which waits for it (issue #20) within the route's time; the turn has
    // what is left of it.
    reply = await againOnceLive(deps, user, target.agentId, chatTimeoutMs, () => {
      const timeoutMs = Math.max(1, Math.round(deadline - performance.now()));
      return withGateway(target, timeoutMs, (conn) => {
        // Registered before chatSend's own listener, so the final payload (model, usage) is kept by the time it resolves.
        conn.on('chat', (payload) => {
          const p = payload as ChatEventPayload;
          if (p.state === 'final' && sameSession(p.sessionKey, sessionKey)) final = p;
        });
        return chatSend(conn, { sessionKey, message: input.message, timeoutMs });
      });
    });
  } catch (err) {
    // Spec §4.4 fixes every failure of this route as 500 `Chat failed`, a provider key the agent lacks or that was
    // refused included; the log says which (the dashboard's chat, `POST /api/chat`, says it in words).
    log.warn(
      { ...failureOf(err), providerKey: providerKeyFailureOf(err), agentId: target.agentId, gateway: target.kind },
      'gateway chat failed',
    );
    throw new DomainError('CHAT_FAILED');
  }

  const agentId = target.agentId ?? gatewayAgentOf(final);
  const reported = usageOfMessage(final?.message);
  // The model OpenClaw reports on the turn's transcript message is the one that answered (a fallback model included).
  // A final event without one is recorded without a model, and so priced 0: a guessed model would be priced wrongly.
  await recordChatUsage(
    deps,
    log,
    user,
    target,
    reported?.model ?? null,
    reported?.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  );
  return { success: true, reply, agentId, agentName: target.agentName ?? agentId };
}

/** The gateway's agent that ran the turn: `agentId` of the event, else the `<id>` of its `agent:<id>:…` key (OpenClaw
 * leaves `agentId` out when the key names the agent), else OpenClaw's default agent `main`. */
function gatewayAgentOf(final: ChatEventPayload | undefined): string {
  if (typeof final?.agentId === 'string' && final.agentId) return final.agentId;
  const fromKey = typeof final?.sessionKey === 'string' ? /^agent:([^:]+):/.exec(final.sessionKey)?.[1] : undefined;
  return fromKey ?? 'main';
}

/** OpenClaw answers with the full key (`agent:main:<key>`); the request named the short or the full form. */
function sameSession(eventKey: unknown, requested: string): boolean {
  if (typeof eventKey !== 'string') return true;
  const a = eventKey.toLowerCase();
  const b = requested.toLowerCase();
  return a === b || a.endsWith(`:${b}`);
}

// ---------------------------------------------------------------------------------------------------------------------
// POST /api/chat

export interface RestChatInput {
  message: string;
  sessionKey: string;
  agentId?: string | undefined;
}

export interface RestChatAnswer {
  success: true;
  reply: string;
  agentId: string | null;
  sessionKey: string;
  messageId: string;
  model: string | null;
  usage: ChatUsage;
}

/** The OpenAI `user` of a conversation: stable per user and session key, carrying the owner tag on every gateway. */
export const restChatUser = (userId: string, sessionKey: string) => `${ownerTagFor(userId)}:${sessionKey}`;

/** A model call of the agent that failed on its provider key: none configured, or refused by the provider. */
export interface ProviderKeyFailure {
  kind: 'missing' | 'refused';
  /** The provider as OpenClaw named it in the failure (`openai`, or `platform` for the key the platform wrote in); null when it did not. */
  provider: string | null;
}

/**
 * OpenClaw's words for a missing key (openclaw@2026.9.6): `ProviderAuthError` `No API key found for provider "<p>".`
 * and the route check's `No route-compatible authentication source is configured for <p>.` / `Configured <p>
 * authentication has no compatible credential source …`.
 */
const MISSING_KEY = [
  /No API key found for provider "([^"]+)"/,
  /No route-compatible authentication source is configured for ([\w.-]+?)\.?(?:\s|$)/,
  /Configured ([\w.-]+) authentication has no compatible credential source/,
];
/**
 * Its words for a refused key: the provider's 401/403 as its user copy (`Authentication failed (provider returned HTTP
 * 401)…`, `<p> isn't accepting your saved login`) and, for the next turns, the key's cool-down (`Inline API key for
 * provider "<p>" is temporarily disabled after a provider auth/billing failure`).
 */
const REFUSED_KEY = [
  /API key for provider "([^"]+)" is temporarily disabled after a provider auth/,
  /Authentication failed \(provider returned HTTP 40[13]\)/,
  /^([\w.-]+) isn't accepting your saved login/,
];
/**
 * `permission_error` is also what OpenClaw's `/v1/chat/completions` answers when a tool refuses the requester
 * (`ToolAuthorizationError`: "Conversation tools require owner access", "Session not visible from session tools: …",
 * "host-scoped tool … is no longer authorized", "New delegation is unavailable …", "Gateway requester authority
 * changed"): those are not about the provider key.
 */
const TOOL_AUTHORIZATION = /\btools?\b|delegation|requester authority/i;

function keyFailureOfText(text: string, fallback: ProviderKeyFailure['kind'] | null): ProviderKeyFailure | null {
  for (const pattern of MISSING_KEY) {
    const match = pattern.exec(text);
    if (match) return { kind: 'missing', provider: match[1] ?? null };
  }
  for (const pattern of REFUSED_KEY) {
    const match = pattern.exec(text);
    if (match) return { kind: 'refused', provider: match[1] ?? null };
  }
  return fallback ? { kind: fallback, provider: null } : null;
}

/**
 * Whether a chat failed on the agent's provider key (issue #19). REST: OpenClaw's `/v1/chat/completions` maps the run's
 * failover reason `auth` to `authentication_error` and `auth_permanent` to `permission_error` (status 401/403, the
 * provider's or OpenClaw's message; `resolveOpenAiCompatError`); its own refusal of the gateway token is `unauthorized`,
 * never these. WebSocket: the run's `chat` event `state: 'error'` carries the message and, for a provider's refusal,
 * `errorDetail: { provider, model, failoverReason: 'auth' | 'auth_permanent' }`.
 */
export function providerKeyFailureOf(err: unknown): ProviderKeyFailure | null {
  if (!(err instanceof GatewayError)) return null;
  // A streamed answer's `error` event carries the error object a plain answer's body would (OpenClaw's
  // `finishStreamWithError(resolveOpenAiCompatError(err).error)`).
  if (/^HTTP_\d{3}$/.test(err.code) || err.code === 'STREAM_ERROR') {
    type ErrorObject = { type?: unknown; message?: unknown } | undefined;
    const error =
      err.code === 'STREAM_ERROR'
        ? (err.details as ErrorObject)
        : (err.details as { body?: { error?: ErrorObject } } | undefined)?.body?.error;
    const message = typeof error?.message === 'string' ? error.message : '';
    if (error?.type === 'authentication_error') return keyFailureOfText(message, 'refused');
    if (error?.type === 'permission_error' && !TOOL_AUTHORIZATION.test(message)) return keyFailureOfText(message, 'refused');
    return null;
  }
  if (err.code === 'CHAT_ERROR') {
    const payload = err.details as { errorMessage?: unknown; errorDetail?: { provider?: unknown; failoverReason?: unknown } } | undefined;
    const detail = payload?.errorDetail;
    const text = typeof payload?.errorMessage === 'string' ? payload.errorMessage : err.message;
    if (detail?.failoverReason === 'auth' || detail?.failoverReason === 'auth_permanent') {
      const named = keyFailureOfText(text, 'refused');
      return {
        kind: named?.kind ?? 'refused',
        provider: typeof detail.provider === 'string' && detail.provider ? detail.provider : (named?.provider ?? null),
      };
    }
    return keyFailureOfText(text, null);
  }
  return null;
}

/**
 * The failure in words. The provider is the one OpenClaw named, except the id the platform gives the provider it
 * writes from the user's key (the applied model's first segment, `platform`): the user knows it by the provider they
 * chose (`openai`), which the agent's applied model tells.
 */
export function providerKeyError(failure: ProviderKeyFailure, applied: AppliedModel): DomainError {
  const appliedSegment = applied.model?.split('/')[0] ?? null;
  const named = failure.provider && failure.provider !== appliedSegment ? failure.provider : (applied.provider ?? failure.provider);
  const code = failure.kind === 'missing' ? 'AGENT_PROVIDER_KEY_MISSING' : 'AGENT_PROVIDER_KEY_REFUSED';
  return new DomainError(code, { provider: named ?? '' });
}

/**
 * The gateway did not take the message because it is not up as the agent's yet: down (`gatewayDown`: nothing listens,
 * or it answered that it is not ready), or it refused the agent's token (a warm gateway being adopted holds the pool's
 * token until the agent's configuration is applied) — a 401 that is not the model provider refusing the agent's key
 * (`authentication_error`, a turn that did run: never sent twice).
 */
const gatewayNotUp = (err: unknown) =>
  gatewayDown(err) || (err instanceof GatewayError && err.code === 'HTTP_401' && providerKeyFailureOf(err) === null);

/**
 * A message sent while the agent starts (issue #19) or sleeps (issue #20): waits up to `AGENT_START_WAIT_MS` for it to
 * be live (`untilLive`, which wakes a hibernated one), read from the agent state machine (the dashboard shows the same
 * state beside the pending message). Throws in words when the agent is not coming up by itself (stopped, failed) or is
 * still starting when the wait ends.
 */
async function waitForAgent(deps: ChatDeps, log: ChatLog, user: AuthUser, agentId: string): Promise<void> {
  const { state, waitedMs } = await untilLive(deps, user, agentId, deps.config.gateway.startWaitMs);
  log.info({ agentId, state: state.state, waitedMs }, 'chat waited for the agent to start');
  if (state.state === 'live') return;
  // "stopped" says it all; a failure says why.
  throw new DomainError('AGENT_NOT_LIVE', { state: state.state === 'stopped' ? 'stopped' : `${state.state} (${state.reason})` });
}

/**
 * A turn's provider-key failure in the chat's words, for the paths that answer in a shape of their own (the plugin
 * gateway's `agent` plugin, workflow steps); null when the turn failed for another reason.
 */
export async function providerKeyWords(
  deps: Pick<ChatDeps, 'backend'>,
  log: Pick<ChatLog, 'warn'>,
  user: AuthUser | null,
  target: GatewayTarget,
  err: unknown,
): Promise<string | null> {
  const failure = providerKeyFailureOf(err);
  if (!failure) return null;
  return providerKeyError(failure, user ? await appliedModelOf(deps, log, user, target) : UNKNOWN_MODEL).message;
}

/** 502 in fixed words per failure kind; the gateway's own message is logged only. */
function restFailure(err: unknown): DomainError {
  if (err instanceof GatewayError) {
    if (err.code === 'TIMEOUT') return new DomainError('AGENT_GATEWAY_TIMED_OUT');
    if (err.code === 'CONNECT_FAILED') return new DomainError('AGENT_GATEWAY_UNREACHABLE');
  }
  return new DomainError('AGENT_GATEWAY_FAILED');
}

export interface AgentTurnInput {
  messages: RestChatMessage[];
  /** The OpenAI `user` OpenClaw keys the turn's session by (`restChatUser`); absent: a session of the turn's own. */
  gatewayUser?: string | undefined;
  /** Further OpenAI request fields, passed to the gateway as given (sampling, token caps). */
  params?: Record<string, unknown> | undefined;
  /** Streams the turn: each piece of the reply as the gateway relays it from the model. */
  onDelta?: ((text: string) => void) | undefined;
  /** Stops the turn early (its caller went away); OpenClaw then cancels the agent run. */
  signal?: AbortSignal | undefined;
}

export interface AgentTurn {
  text: string;
  /** The model the agent's applied configuration runs, null when unknown. */
  model: string | null;
  usage: ChatUsage;
}

/**
 * One turn of the user's agent over OpenClaw's OpenAI-compatible REST endpoint (`POST /v1/chat/completions`, Bearer
 * gateway token), for `POST /api/chat` and the platform's own `/v1/chat/completions` alike. A gateway that is not up
 * while its agent is on its way to live or asleep is waited for (AGENT_START_WAIT_MS, the agent woken), then asked
 * again — never once a piece of the reply was relayed. Failures are domain errors in fixed words (a provider key's in
 * the chat's words); the gateway's own message is logged only. Usage is the gateway's own count (zero when it reports
 * none); nothing is recorded here.
 */
export async function runAgentTurn(
  deps: ChatDeps,
  log: ChatLog,
  user: AuthUser,
  target: GatewayTarget,
  input: AgentTurnInput,
): Promise<AgentTurn> {
  // OpenClaw's `/v1/chat/completions` names no model in its answer (its `model` echoes the requested agent target,
  // `openclaw/<agent>`), so the turn is recorded with the model the agent's applied configuration runs, read while the
  // agent answers. Null (unknown, priced 0) when it cannot be read: never a default model.
  assertTakesTurns(target);
  const applied = appliedModelOf(deps, log, user, target);
  const options: RestChatOptions = {
    baseUrl: target.baseUrl,
    token: target.token,
    model: gatewayModel(target),
    messages: input.messages,
    timeoutMs: deps.config.gateway.chatTimeoutMs,
    ...(input.gatewayUser !== undefined ? { user: input.gatewayUser } : {}),
    ...(input.params ? { params: input.params } : {}),
  };
  let relayed = false;
  const { onDelta } = input;
  const send = () =>
    onDelta
      ? restChatStream(
          options,
          (text) => {
            relayed = true;
            onDelta(text);
          },
          input.signal,
        )
      : restChat(options, input.signal);
  let result: Awaited<ReturnType<typeof restChat>>;
  try {
    try {
      result = await send();
    } catch (err) {
      // The gateway is not up (yet): when the agent is on its way to live, the message waits for it, then goes.
      if (!target.agentId || relayed || !gatewayNotUp(err)) throw err;
      await waitForAgent(deps, log, user, target.agentId);
      result = await send();
    }
  } catch (err) {
    if (err instanceof DomainError) throw err;
    log.warn({ ...failureOf(err), agentId: target.agentId, gateway: target.kind }, 'agent chat failed');
    const keyFailure = providerKeyFailureOf(err);
    if (keyFailure) throw providerKeyError(keyFailure, await applied);
    throw restFailure(err);
  }
  const { model } = await applied;

  const usage: ChatUsage = {
    prompt_tokens: count(result.usage?.prompt_tokens),
    completion_tokens: count(result.usage?.completion_tokens),
    total_tokens: 0,
  };
  usage.total_tokens = count(result.usage?.total_tokens) || usage.prompt_tokens + usage.completion_tokens;
  return { text: result.text, model, usage };
}

/**
 * Spec §4.4 `POST /api/chat`: an OpenAI-style `POST /v1/chat/completions` to the user's agent (Bearer gateway token;
 * `user` = a stable id per user and session key, so OpenClaw keeps one session per conversation), then the turn is
 * stored (both messages, one transaction with its usage row) and answered.
 */
export async function restAgentChat(deps: ChatDeps, log: ChatLog, user: AuthUser, input: RestChatInput): Promise<RestChatAnswer> {
  let target: GatewayTarget;
  try {
    target = input.agentId ? await ownAgentGateway(deps, user, input.agentId) : await resolveGateway(deps, user);
  } catch (err) {
    if (err instanceof GatewayUnavailableError) throw gatewayUnavailableError(err);
    throw err;
  }

  const askedAt = new Date();
  const { text, model, usage } = await runAgentTurn(deps, log, user, target, {
    messages: [{ role: 'user', content: input.message }],
    gatewayUser: restChatUser(user.id, input.sessionKey),
  });
  const replyId = newId('message');
  await deps.db.withUser(user.id, async (trx) => {
    const common = { user_id: user.id, agent_id: target.agentId, session_key: input.sessionKey };
    await trx
      .insertInto('chat_messages')
      .values({ ...common, id: newId('message'), role: 'user', content: input.message, created_at: askedAt })
      .execute();
    await trx
      .insertInto('chat_messages')
      .values({
        ...common,
        id: replyId,
        role: 'assistant',
        content: text,
        model,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
      })
      .execute();
    await recordUsage(trx, agentTurnUsage(user, target, CHAT_USAGE_KIND, model, usage));
  });
  return { success: true, reply: text, agentId: target.agentId, sessionKey: input.sessionKey, messageId: replyId, model, usage };
}

// ---------------------------------------------------------------------------------------------------------------------
// GET /api/chat

export interface HistoryQuery {
  agentId?: string | undefined;
  sessionKey?: string | undefined;
  limit: number;
  /** A message id: only messages stored before it. */
  before?: string | undefined;
}

export interface HistoryMessage {
  id: string;
  role: 'user' | 'assistant';
  content: string;
  agentId: string | null;
  sessionKey: string;
  model: string | null;
  usage: ChatUsage | null;
  createdAt: string;
}

/** The caller's stored chat, newest last; `nextBefore` pages further back while `hasMore`. */
export async function chatHistory(
  db: Database,
  userId: string,
  query: HistoryQuery,
): Promise<{ messages: HistoryMessage[]; hasMore: boolean; nextBefore: string | null }> {
  return db.withUser(userId, async (trx) => {
    let q = trx
      .selectFrom('chat_messages')
      .select(['id', 'role', 'content', 'agent_id', 'session_key', 'model', 'prompt_tokens', 'completion_tokens', 'created_at'])
      .where('user_id', '=', userId);
    if (query.agentId) q = q.where('agent_id', '=', query.agentId);
    if (query.sessionKey) q = q.where('session_key', '=', query.sessionKey);
    if (query.before) {
      const cursor = await trx.selectFrom('chat_messages').select('seq').where('id', '=', query.before).executeTakeFirst();
      if (!cursor) throw new DomainError('INVALID_BEFORE_CURSOR');
      q = q.where('seq', '<', cursor.seq);
    }
    const rows = await q
      .orderBy('seq', 'desc')
      .limit(query.limit + 1)
      .execute();
    const hasMore = rows.length > query.limit;
    const page = rows.slice(0, query.limit).reverse();
    return {
      messages: page.map((r) => ({
        id: r.id,
        role: r.role,
        content: r.content,
        agentId: r.agent_id,
        sessionKey: r.session_key,
        model: r.model,
        usage:
          r.role === 'assistant'
            ? {
                prompt_tokens: r.prompt_tokens,
                completion_tokens: r.completion_tokens,
                total_tokens: r.prompt_tokens + r.completion_tokens,
              }
            : null,
        createdAt: r.created_at.toISOString(),
      })),
      hasMore,
      nextBefore: hasMore ? (page[0]?.id ?? null) : null,
    };
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// GET /api/gateway/status

export interface StatusSession {
  sessionKey: string;
  status: string;
  messageCount: number;
  lastActivity: string | null;
}

export interface StatusJob {
  id: string;
  name: string;
  enabled: boolean;
  schedule: unknown;
  lastRun: string | null;
  nextRun: string | null;
}

export interface GatewayStatus {
  health: 'healthy' | 'unreachable';
  healthDetail: { ok: boolean; status: string } | { ok: false; error: string };
  sessions: { total: number; active: number; list: StatusSession[] };
  cron: { total: number; enabled: number; jobs: StatusJob[] };
}

const EMPTY_SESSIONS: GatewayStatus['sessions'] = { total: 0, active: 0, list: [] };
const EMPTY_CRON: GatewayStatus['cron'] = { total: 0, enabled: 0, jobs: [] };

const unreachable = (error: string, sessions = EMPTY_SESSIONS, cron = EMPTY_CRON): GatewayStatus => ({
  health: 'unreachable',
  healthDetail: { ok: false, error },
  sessions,
  cron,
});

const UNAVAILABLE_WORDS: Record<GatewayUnavailableError['reason'], string> = {
  'no-agent': 'No agent found',
  'no-token': 'No gateway token available',
  'backend-unreachable': 'Backend unreachable',
};

/** What a failed WebSocket exchange says on the status page. */
function socketFailure(err: unknown): string {
  if (err instanceof GatewayError) {
    if (err.code === 'UNAUTHORIZED' || err.code === 'NOT_PAIRED' || err.code === 'FORBIDDEN') return 'Gateway refused the connection';
    if (err.code === 'TIMEOUT') return 'Gateway timed out';
    if (err.code === 'CONNECT_FAILED' || err.code === 'CLOSED') return 'Gateway unreachable';
  }
  return 'Gateway request failed';
}

/** `GET /healthz` of the gateway (spec §4.10: `{ ok, status: 'live' }`). */
async function probeHealth(baseUrl: string, timeoutMs: number): Promise<{ ok: true; status: string } | { ok: false; error: string }> {
  const probe = await probeGateway(baseUrl, '/healthz', timeoutMs);
  if (!probe.reached) return { ok: false, error: probe.timedOut ? 'Gateway timed out' : 'Gateway unreachable' };
  const body = probe.body as { ok?: unknown; status?: unknown } | null | undefined;
  if (!probe.ok || body?.ok !== true) return { ok: false, error: `Gateway not healthy (HTTP ${probe.status})` };
  return { ok: true, status: typeof body.status === 'string' ? body.status : 'live' };
}

const isoOf = (ms: unknown) => (typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? new Date(ms).toISOString() : null);

interface SessionRow {
  key?: unknown;
  status?: unknown;
  hasActiveRun?: unknown;
  messageCount?: unknown;
  lastActivityAt?: unknown;
  lastInteractionAt?: unknown;
  updatedAt?: unknown;
}

const lastActivityMs = sessionLastActivityMs;
const isActive = sessionIsActive;

async function readSessions(conn: GatewayConnection, target: GatewayTarget, timeoutMs: number): Promise<GatewayStatus['sessions']> {
  const listed = await conn.request<{ sessions?: SessionRow[]; totalCount?: unknown; count?: unknown }>(
    'sessions.list',
    { limit: STATUS_SCAN, sortBy: 'activity', ...agentScope(target) },
    { timeoutMs },
  );
  const rows = (listed.sessions ?? []).flatMap((r) => {
    const shown = typeof r?.key === 'string' && !isWarmUpSession(r.key) ? ownedSessionKey(target, r.key) : null;
    return shown === null ? [] : [{ ...r, key: r.key as string, shown }];
  });
  rows.sort((a, b) => lastActivityMs(b) - lastActivityMs(a));
  // The gateway counted the agent's sessions (`agentScope`); on a shared one only the caller's tagged rows are theirs.
  const total = target.ownerTag ? rows.length : Math.max(count(listed.totalCount ?? listed.count), rows.length);
  const shown = rows.slice(0, STATUS_LIST_MAX);
  // OpenClaw's session rows carry no message count; the transcript's `totalMessages` gives it.
  const counts = await Promise.all(
    shown.map(async (r) => {
      if (typeof r.messageCount === 'number') return count(r.messageCount);
      const history = await conn
        .request<{ totalMessages?: unknown; messages?: unknown[] }>('chat.history', { sessionKey: r.key, limit: 1 }, { timeoutMs })
        .catch(() => null);
      return history ? count(history.totalMessages ?? history.messages?.length) : 0;
    }),
  );
  return {
    total,
    active: rows.filter(isActive).length,
    list: shown.map((r, i) => ({
      sessionKey: r.shown,
      status: typeof r.status === 'string' ? r.status : isActive(r) ? 'running' : 'idle',
      messageCount: counts[i] ?? 0,
      lastActivity: isoOf(lastActivityMs(r)),
    })),
  };
}

/** The user's jobs (all pages; only theirs on a shared gateway, by owner tag, as `GET /api/cron` reads them). */
async function readCron(conn: GatewayConnection, target: GatewayTarget): Promise<GatewayStatus['cron']> {
  const jobs = (await listOwnJobs(conn, target)).map(cronJobView);
  return {
    total: jobs.length,
    enabled: jobs.filter((j) => j.enabled).length,
    jobs: jobs
      .slice(0, STATUS_LIST_MAX)
      .map(({ id, name, enabled, schedule, lastRun, nextRun }) => ({ id, name, enabled, schedule, lastRun, nextRun })),
  };
}

/**
 * Spec §4.4 `GET /api/gateway/status`: `/healthz` of the user's gateway and, over one WebSocket, its sessions and cron
 * jobs (only the user's own on a shared gateway). `healthy` means the gateway is live and answered the platform;
 * anything else is a 200 `unreachable` with the reason in `healthDetail.error`. `resolve` picks another gateway than
 * the user's default one (`GET /api/agent?agentId=`).
 */
export async function gatewayStatus(
  deps: ChatDeps,
  log: ChatLog,
  user: AuthUser,
  resolve: () => Promise<GatewayTarget> = () => resolveGateway(deps, user),
): Promise<GatewayStatus> {
  let target: GatewayTarget;
  try {
    target = await resolve();
  } catch (err) {
    if (err instanceof GatewayUnavailableError) return unreachable(UNAVAILABLE_WORDS[err.reason]);
    throw err;
  }
  const timeoutMs = deps.config.gateway.requestTimeoutMs;
  const [health, lists] = await Promise.all([
    probeHealth(target.baseUrl, timeoutMs),
    withGateway(target, timeoutMs, async (conn) => {
      const [sessions, cron] = await Promise.all([readSessions(conn, target, timeoutMs), readCron(conn, target)]);
      return { sessions, cron };
    }).catch((err: unknown) => {
      log.warn({ ...failureOf(err), agentId: target.agentId, gateway: target.kind }, 'gateway status: WebSocket read failed');
      return { error: socketFailure(err) };
    }),
  ]);
  if (!health.ok) return 'error' in lists ? unreachable(health.error) : unreachable(health.error, lists.sessions, lists.cron);
  if ('error' in lists) return unreachable(lists.error);
  return { health: 'healthy', healthDetail: { ok: true, status: health.status }, sessions: lists.sessions, cron: lists.cron };
}
