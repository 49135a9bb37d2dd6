import { DomainError } from '@aop/core';
import type { Database } from '@aop/db';
import { type GatewayConnection, connectGateway } from '@aop/gateway-client';
import type { WebConfig } from '../../config.js';
import { type AuthUser, backendCaller } from '../sessions.js';
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

async function backendToken(backend: BackendClient, path: string, user: AuthUser): Promise<{ token: string; viaBackend: boolean }> {
  let answer: Awaited<ReturnType<BackendClient['request']>>;
  try {
    answer = await backend.request<{ token?: string }>(path, { caller: backendCaller(user) });
  } catch (err) {
    if (err instanceof BackendUnavailableError) throw new GatewayUnavailableError('backend-unreachable', 'Backend unreachable');
    throw err;
  }
  const { token, control } = (answer.body ?? {}) as { token?: unknown; control?: unknown };
  if (answer.status !== 200 || typeof token !== 'string' || !token) {
    throw new GatewayUnavailableError('no-token', 'No gateway token available');
  }
  // `control: 'backend'`: the agent's host says only its paired platform device gets scopes from where we are.
  return { token, viaBackend: control === 'backend' };
}

const toWs = (url: string) => url.replace(/^http/, 'ws');

/**
 * The gateway of one named agent of the user, whichever is primary (404 `Agent not found` when it is not theirs or
 * does not exist, 409 `Agent is not deployed` while it has no address yet).
 */
export async function ownAgentGateway(deps: Pick<GatewayDeps, 'db' | 'backend'>, user: AuthUser, agentId: string): Promise<GatewayTarget> {
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
  user: AuthUser,
  agent: { id: string; name: string; url: string },
): Promise<GatewayTarget> {
  const { token, viaBackend } = await backendToken(deps.backend, `/api/agents/${encodeURIComponent(agent.id)}/token`, user);
  return {
    kind: 'agent',
    baseUrl: agent.url,
    wsUrl: toWs(agent.url),
    token,
    agentId: agent.id,
    agentName: agent.name,
    ownerTag: null,
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
  return { kind: 'shared', baseUrl: shared, wsUrl: toWs(shared), token, agentId: null, agentName: null, ownerTag: ownerTagFor(user.id) };
}

/** The owner tag of a user's objects on a shared gateway. */
export const ownerTagFor = (userId: string) => `aop-owner:${userId}`;

/** A session key on the target: unchanged on the user's own gateway, prefixed with the owner on a shared one. */
export function scopedSessionKey(target: GatewayTarget, sessionKey: string): string {
  return target.ownerTag ? `${target.ownerTag}:${sessionKey}` : sessionKey;
}

/**
 * Opens one WebSocket to the target, runs `fn`, and always closes it. `timeoutMs` bounds the whole exchange (handshake
 * included): the socket is closed when it passes, so `fn`'s pending request rejects. A target with `control` gets a
 * connection whose calls the backend makes (`BackendGatewayConnection`), bounded the same way.
 */
export async function withGateway<T>(target: GatewayTarget, timeoutMs: number, fn: (conn: GatewayConnection) => Promise<T>): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  const conn = target.control
    ? new BackendGatewayConnection(target.control, deadline)
    : await connectGateway({ url: target.wsUrl, token: target.token, handshakeTimeoutMs: timeoutMs, retryDeadlineMs: 0 });
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
