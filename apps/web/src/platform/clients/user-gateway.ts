import { DomainError } from '@aop/core';
import type { Database } from '@aop/db';
import { type GatewayConnection, connectGateway } from '@aop/gateway-client';
import { OWN_GATEWAY_AGENT_ID } from '@aop/provisioner/host';
import type { WebConfig } from '../../config.js';
import { type AuthUser, type Caller, backendCaller } from '../sessions.js';
import { type BackendClient, BackendUnavailableError } from './backend-client.js';
import { type BackendControl, BackendGatewayConnection } from './backend-gateway.js';

/**
 * Where a user's gateway calls go (issue #8 "Routing"): their own agent's gateway when they have one (its URL on the
 * user record, its token from the backend), else the shared platform gateway (`GATEWAY_URL`, token from the backend).
 *
 * On the shared gateway many users meet, so everything a user creates there carries their owner tag and every read
 * filters on it (`ownerTag`, `scopedSessionKey`).
 */
export interface GatewayTarget {
  kind: 'agent' | 'shared';
  /** `http(s)://host:port` of the gateway. */
  baseUrl: string;
  /** The same address with `ws(s):`. */
  wsUrl: string;
  token: string;
  /** The user's agent, when the target is theirs. */
  agentId: string | null;
  agentName: string | null;
  /** Tag carried by the user's objects on a shared gateway; null on the user's own gateway. */
  ownerTag: string | null;
  /**
   * The agent's id inside its gateway (OpenClaw's agent id, `main` for a gateway of its own), named by every call:
   * session keys `agent:<id>:…` (`scopedSessionKey`), REST `model: openclaw/<id>` (`gatewayModel`), cron jobs'
   * `agentId`. Null on the shared gateway, whose calls go to its default agent.
   */
  openclawAgentId: string | null;
  /**
   * The host says the agent is stopped. Its gateway may still answer — it runs on for the customer's other agents when
   * they share it (issue #20) — so turns check it (`assertTakesTurns`); reads of what it has (jobs, history) do not.
   */
  stopped: boolean;
  /**
   * Set when the gateway gives this service's token-only WebSocket no scopes (a container or hosted agent sees it as
   * a remote peer): `withGateway` then makes its calls through the backend, which holds the paired platform device.
   */
  control?: BackendControl;
}

/** Why there is no gateway to talk to; each route turns this into its spec answer. */
export type GatewayUnavailableReason = 'no-agent' | 'no-token' | 'backend-unreachable';

export class GatewayUnavailableError extends Error {
  override readonly name = 'GatewayUnavailableError';
  constructor(
    readonly reason: GatewayUnavailableReason,
    message: string,
  ) {
    super(message);
  }
}

export interface GatewayDeps {
  db: Database;
  backend: BackendClient;
  config: Pick<WebConfig, 'gateway'>;
}

export interface UserAgent {
  id: string;
  name: string;
  url: string;
}

/** The user's deployed agent: the one on the user record, else their newest agent with an address. */
export async function findUserAgent(db: Database, userId: string): Promise<UserAgent | null> {
  return db.withUser(userId, async (trx) => {
    const user = await trx.selectFrom('users').select('runtime_instance_id').where('id', '=', userId).executeTakeFirst();
    let query = trx
      .selectFrom('agents')
      .select(['id', 'name', 'url'])
      .where('user_id', '=', userId)
      .where('url', 'is not', null)
      .where('status', '!=', 'error');
    if (user?.runtime_instance_id) query = query.where('id', '=', user.runtime_instance_id);
    const row = await query.orderBy('created_at', 'desc').limit(1).executeTakeFirst();
    return row?.url ? { id: row.id, name: row.name, url: row.url } : null;
  });
}

interface BackendToken {
  token: string;
  viaBackend: boolean;
  openclawAgentId: string | null;
  stopped: boolean;
}

/** OpenClaw agent ids as OpenClaw writes them (`agents.entries` keys): anything else is not put into a session key. */
const OPENCLAW_AGENT_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;

async function backendToken(backend: BackendClient, path: string, user: Caller): Promise<BackendToken> {
  let answer: Awaited<ReturnType<BackendClient['request']>>;
  try {
    answer = await backend.request<{ token?: string }>(path, { caller: backendCaller(user) });
  } catch (err) {
    if (err instanceof BackendUnavailableError) throw new GatewayUnavailableError('backend-unreachable', 'Backend unreachable');
    throw err;
  }
  const { token, control, openclawAgentId, status, error } = (answer.body ?? {}) as {
    token?: unknown;
    control?: unknown;
    openclawAgentId?: unknown;
    status?: unknown;
    error?: unknown;
  };
  // The backend's per-client limit (spec §8) is the caller's to hear, not "no token".
  if (answer.status === 429) {
    throw new DomainError('BACKEND_RATE_LIMITED', { detail: typeof error === 'string' ? error : 'Too many requests' });
  }
  if (answer.status !== 200 || typeof token !== 'string' || !token) {
    throw new GatewayUnavailableError('no-token', 'No gateway token available');
  }
  // `control: 'backend'`: the agent's host says only its paired platform device gets scopes from where we are.
  return {
    token,
    viaBackend: control === 'backend',
    openclawAgentId: typeof openclawAgentId === 'string' && OPENCLAW_AGENT_ID.test(openclawAgentId) ? openclawAgentId : null,
    stopped: status === 'stopped',
  };
}

const toWs = (url: string) => url.replace(/^http/, 'ws');

/**
 * The gateway of one named agent of the user, whichever is primary (404 `Agent not found` when it is not theirs or
 * does not exist, 409 `Agent is not deployed` while it has no address yet).
 */
export async function ownAgentGateway(deps: Pick<GatewayDeps, 'db' | 'backend'>, user: Caller, agentId: string): Promise<GatewayTarget> {
  const agent = await deps.db.readAsUser(user.id, (trx) =>
    trx.selectFrom('agents').select(['id', 'name', 'url']).where('id', '=', agentId).executeTakeFirst(),
  );
  if (!agent) throw new DomainError('AGENT_NOT_FOUND');
  if (!agent.url) throw new DomainError('AGENT_NOT_DEPLOYED');
  return agentGatewayTarget(deps, user, { id: agent.id, name: agent.name, url: agent.url });
}

/** The gateway a call names (`agentId`), else the spec's default: the user's primary agent, else the shared one. */
export const chosenGateway = (deps: GatewayDeps, user: AuthUser, agentId: string | undefined): Promise<GatewayTarget> =>
  agentId ? ownAgentGateway(deps, user, agentId) : resolveGateway(deps, user);

/** The gateway of one of the user's agents, with its token from the backend (and how to control it). */
export async function agentGatewayTarget(
  deps: Pick<GatewayDeps, 'backend'>,
  user: Caller,
  agent: { id: string; name: string; url: string },
): Promise<GatewayTarget> {
  const { token, viaBackend, openclawAgentId, stopped } = await backendToken(
    deps.backend,
    `/api/agents/${encodeURIComponent(agent.id)}/token`,
    user,
  );
  return {
    kind: 'agent',
    baseUrl: agent.url,
    wsUrl: toWs(agent.url),
    token,
    agentId: agent.id,
    agentName: agent.name,
    ownerTag: null,
    openclawAgentId,
    stopped,
    ...(viaBackend ? { control: { backend: deps.backend, caller: backendCaller(user), agentId: agent.id } } : {}),
  };
}

/** Resolves the gateway for `user`; throws `GatewayUnavailableError` when there is none to use. */
export async function resolveGateway(deps: GatewayDeps, user: AuthUser): Promise<GatewayTarget> {
  const agent = await findUserAgent(deps.db, user.id);
  if (agent) return agentGatewayTarget(deps, user, agent);
  const shared = deps.config.gateway.sharedUrl;
  if (!shared) throw new GatewayUnavailableError('no-agent', 'No agent found');
  const { token } = await backendToken(deps.backend, '/api/gateway/token', user);
  return {
    kind: 'shared',
    baseUrl: shared,
    wsUrl: toWs(shared),
    token,
    agentId: null,
    agentName: null,
    ownerTag: ownerTagFor(user.id),
    openclawAgentId: null,
    stopped: false,
  };
}

/** The owner tag of a user's objects on a shared gateway. */
export const ownerTagFor = (userId: string) => `aop-owner:${userId}`;

/**
 * A session key on the target: prefixed with the owner on a shared gateway, and in OpenClaw's full form
 * `agent:<id>:<key>` on an agent's gateway, so the turn lands in that agent's sessions whatever else the gateway holds.
 * A key already in the full form of this agent is kept; one naming another agent is taken as a key of this one.
 */
export const scopedSessionKey = (target: Pick<GatewayTarget, 'ownerTag' | 'openclawAgentId'>, sessionKey: string): string =>
  agentSessionKey(target, target.ownerTag ? `${target.ownerTag}:${sessionKey}` : sessionKey);

/** `key` in OpenClaw's full form for the target's agent (`agent:<id>:<key>`); unchanged on a target that names none. */
export function agentSessionKey(target: Pick<GatewayTarget, 'openclawAgentId'>, key: string): string {
  if (!target.openclawAgentId) return key;
  const prefix = `agent:${target.openclawAgentId}:`;
  return key.toLowerCase().startsWith(prefix) ? key : `${prefix}${key}`;
}

/**
 * Whether a session key the gateway lists belongs to the target's agent (`agent:<id>:…`; a key in no agent's form is
 * the default agent's, `main`). On a target that names no agent (the shared gateway) every key is.
 */
export const ofTargetAgent = (target: Pick<GatewayTarget, 'openclawAgentId'>, key: string): boolean =>
  namesTargetAgent(target, /^agent:([^:]+):/i.exec(key)?.[1]);

/**
 * Whether something of the gateway that names `agentId` (a session key's agent, a cron job's `agentId`) is the target's
 * agent's. What names no agent is OpenClaw's default agent's, `main`; on a target that names no agent, everything is.
 */
export function namesTargetAgent(target: Pick<GatewayTarget, 'openclawAgentId'>, agentId: string | null | undefined): boolean {
  if (!target.openclawAgentId) return true;
  return (agentId?.toLowerCase() || OWN_GATEWAY_AGENT_ID) === target.openclawAgentId;
}

/** The target is a further agent of a customer's gateway (not its default one), which OpenClaw treats apart at places. */
export const isFurtherAgent = (target: Pick<GatewayTarget, 'openclawAgentId'>): boolean =>
  Boolean(target.openclawAgentId) && target.openclawAgentId !== OWN_GATEWAY_AGENT_ID;

/**
 * The key as the user knows it, or null when the session is not theirs. On the user's own gateway every session of
 * their agent is theirs (`ofTargetAgent`) and its key is shown as the gateway stores it. On a shared gateway the key
 * must carry the owner tag as a whole token (`agent:main:aop-owner:<user>:main` from the WebSocket chat,
 * `agent:main:openai-user:aop-owner:<user>:main` from the REST chat; see `carriesOwnerTag`), and it is shown without
 * it. OpenClaw lower-cases session keys when it stores them, so the tag is matched without case.
 */
export function ownedSessionKey(target: Pick<GatewayTarget, 'ownerTag' | 'openclawAgentId'>, key: string): string | null {
  if (!ofTargetAgent(target, key)) return null;
  const tag = target.ownerTag;
  if (!tag) return key;
  if (!carriesOwnerTag(key, tag)) return null;
  const at = key.toLowerCase().indexOf(`${tag.toLowerCase()}:`);
  return at < 0 ? key : key.slice(0, at) + key.slice(at + tag.length + 1);
}

/**
 * True when a session key carries `tag` as a whole token (`agent:main:aop-owner:<id>:main`, and the REST form
 * `agent:main:openai-user:aop-owner:<id>:main`). Compared without case: gateways may fold session keys to lower case.
 */
export function carriesOwnerTag(text: unknown, tag: string): boolean {
  if (typeof text !== 'string') return false;
  const haystack = text.toLowerCase();
  const needle = tag.toLowerCase();
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + 1)) {
    const before = at === 0 ? '' : haystack[at - 1];
    const after = haystack[at + needle.length] ?? '';
    if (!/[a-z0-9_-]/.test(before ?? '') && !/[a-z0-9_-]/.test(after)) return true;
  }
  return false;
}

/** `sessions.list` params that keep the listing to the target's agent (OpenClaw filters on `agentId`). */
export const agentScope = (target: Pick<GatewayTarget, 'openclawAgentId'>): { agentId?: string } =>
  target.openclawAgentId ? { agentId: target.openclawAgentId } : {};

/**
 * A turn (a chat message, a workflow step, a plugin's call) for a stopped agent is refused in the words a stopped
 * agent's own gateway gets (`AGENT_NOT_LIVE`), even where its gateway answers because it runs for the customer's other
 * agents.
 */
export function assertTakesTurns(target: Pick<GatewayTarget, 'stopped'>): void {
  if (target.stopped) throw new DomainError('AGENT_NOT_LIVE', { state: 'stopped' });
}

/** The REST model target of the target's agent (`openclaw/<id>`), or OpenClaw's default agent on a shared gateway. */
export const gatewayModel = (target: Pick<GatewayTarget, 'openclawAgentId'>): string =>
  target.openclawAgentId ? `openclaw/${target.openclawAgentId}` : 'openclaw/default';

/**
 * Opens one WebSocket to the target, runs `fn`, and always closes it. `timeoutMs` bounds the whole exchange (handshake
 * included): the socket is closed when it passes, so `fn`'s pending request rejects. A target with `control` gets a
 * connection whose calls the backend makes (`BackendGatewayConnection`), bounded the same way. `retryDeadlineMs`: how
 * long a gateway that answers "starting" (`UNAVAILABLE`) is asked again (default 0: not at all).
 */
export async function withGateway<T>(
  target: GatewayTarget,
  timeoutMs: number,
  fn: (conn: GatewayConnection) => Promise<T>,
  options: { retryDeadlineMs?: number } = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  const retryDeadlineMs = Math.min(options.retryDeadlineMs ?? 0, timeoutMs);
  const conn = target.control
    ? new BackendGatewayConnection(target.control, deadline)
    : await connectGateway({ url: target.wsUrl, token: target.token, handshakeTimeoutMs: timeoutMs, retryDeadlineMs });
  const timer = setTimeout(() => void conn.close(), Math.max(0, deadline - performance.now()));
  try {
    return await fn(conn);
  } finally {
    clearTimeout(timer);
    void conn.close();
  }
}

/** For routes whose only answer to a missing gateway is an error: 404 no agent, 503 no token, 502 backend down. */
export function gatewayUnavailableError(err: GatewayUnavailableError): DomainError {
  switch (err.reason) {
    case 'no-agent':
      return new DomainError('NO_AGENT_FOUND');
    case 'no-token':
      return new DomainError('NO_GATEWAY_TOKEN_AVAILABLE');
    case 'backend-unreachable':
      return new DomainError('BACKEND_UNREACHABLE');
  }
}
