import { DomainError } from '@aop/core';
import {
  type AgentAction,
  type AgentLifecycleState,
  type AgentStateView,
  deriveAgentState,
  isAgentLifecycleState,
  isDegradedForGood,
  isOnItsWayToLive,
  targetState,
  wakesOnMessage,
} from '@aop/core/agent-state';
import type { Database } from '@aop/db';
import { GatewayError } from '@aop/gateway-client';
import { type BackendClient, BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { probeGateway } from '../../platform/clients/gateway-probe.js';
import { type Caller, backendCaller } from '../../platform/sessions.js';
import type { AgentHealthView } from './agents.schemas.js';
import type { AfterStart } from './after-start.service.js';
import { findAgentProgress, setAgentStatus } from './agents.service.js';

/**
 * Lifecycle of one of the caller's agents (issue #19), shared by `POST /api/agents/:id/<action>` and the account's
 * primary agent at `POST /api/instance/:userId/<action>`: the backend acts, then the call waits (bounded) until the
 * agent is in the state the action asks for, read from the one state machine (`@aop/core/agent-state`).
 */

export interface LifecycleDeps {
  db: Database;
  backend: BackendClient;
  /** The app clock (ms since the epoch): only for the `checkedAt` date shown, never for waiting. */
  clock: () => number;
  /** How long a lifecycle call waits for its state (`AGENT_LIFECYCLE_WAIT_MS`, default 60 s). */
  waitMs?: number;
  /** What follows a start once the agent is live (`AfterStart`): given, a wake made here is followed like any start. */
  afterStart?: Pick<AfterStart, 'follow'>;
}

/** How long a lifecycle call waits by default for the state it asked for before it answers 202 with the state on the way. */
export const LIFECYCLE_WAIT_MS = 60_000;
const POLL_MS = 500;
/** How long one state request may wait on the backend for an agent that is starting to be live (`?waitMs=`). */
const LONG_POLL_MS = 10_000;

/** Where to follow an agent that is on its way: its event stream, kept open past each state (`follow=1`). */
export const eventsPath = (agentId: string) => `/api/agents/${encodeURIComponent(agentId)}/events?follow=1`;

/**
 * The agent's state now. The backend derives it from its host (process state + `/readyz`); an agent no backend knows
 * (a direct deployment at the hosting provider) or a backend that does not answer leaves the record and the gateway's
 * own `/readyz`, derived with the same function. `waitMs`: a starting agent is answered once live, or when that has
 * passed (the backend's `?waitMs=`). Null when the caller has no agent with this id.
 */
export async function readAgentState(
  deps: LifecycleDeps,
  user: Caller,
  agentId: string,
  options: { waitMs?: number } = {},
): Promise<AgentHealthView | null> {
  const record = await findAgentProgress(deps.db, user.id, agentId);
  if (!record) return null;
  const waitMs = Math.max(0, Math.min(LONG_POLL_MS, Math.round(options.waitMs ?? 0)));
  try {
    const path = `/api/agents/${encodeURIComponent(agentId)}/state${waitMs > 0 ? `?waitMs=${waitMs}` : ''}`;
    const answer = await deps.backend.request<Partial<AgentHealthView>>(path, {
      caller: backendCaller(user),
      timeoutMs: waitMs + 15_000,
    });
    const checkedAt = new Date(deps.clock()).toISOString();
    const b = answer.body;
    if (answer.status === 200 && isAgentLifecycleState(b.state)) {
      return {
        agentId,
        state: b.state,
        reason: typeof b.reason === 'string' ? b.reason : '',
        actions: Array.isArray(b.actions) ? b.actions : [],
        host: typeof b.host === 'string' ? b.host : null,
        live: b.live === true,
        ready: typeof b.ready === 'boolean' ? b.ready : null,
        failing: Array.isArray(b.failing) ? b.failing.filter((f): f is string => typeof f === 'string') : [],
        sharesGatewayWith: Array.isArray(b.sharesGatewayWith)
          ? b.sharesGatewayWith.filter((id): id is string => typeof id === 'string')
          : [],
        wakesAt: b.state === 'hibernated' && typeof b.wakesAt === 'string' && !Number.isNaN(Date.parse(b.wakesAt)) ? b.wakesAt : null,
        source: 'host',
        checkedAt,
      };
    }
  } catch (err) {
    if (!(err instanceof BackendUnavailableError)) throw err;
  }
  // No host to ask: the gateway's own answer is the evidence (a stopped record stays stopped without probing).
  const checkedAt = new Date(deps.clock()).toISOString();
  let live = false;
  let ready: boolean | null = null;
  let failing: string[] = [];
  if (record.url) {
    const [health, readiness] = await Promise.all([probeGateway(record.url, '/healthz'), probeGateway(record.url, '/readyz')]);
    live = health.reached && health.ok;
    if (readiness.reached && readiness.body && typeof readiness.body === 'object') {
      const body = readiness.body as { ready?: unknown; failing?: unknown };
      ready = body.ready === true;
      if (Array.isArray(body.failing)) failing = body.failing.filter((f): f is string => typeof f === 'string');
    }
  }
  const view: AgentStateView = deriveAgentState({ host: null, ready, record: record.status, failing });
  return { agentId, ...view, host: null, live, ready, failing, sharesGatewayWith: [], wakesAt: null, source: 'gateway', checkedAt };
}

/**
 * The caller's agent's state, read again while `keepWaiting` holds, for at most `waitMs`. Each read after the first asks
 * the backend to answer once a starting agent is live (`LONG_POLL_MS` at most), so the caller hears of it at once; a
 * read the backend answered sooner (a state it does not wait on: stopping, updating) is followed by a half-second pause.
 * `signal` ends the wait early (the state last read is answered). Null when the caller has no agent with this id.
 */
async function pollAgentState(
  deps: LifecycleDeps,
  user: Caller,
  agentId: string,
  waitMs: number,
  keepWaiting: (state: AgentHealthView) => boolean,
  signal?: AbortSignal,
): Promise<AgentHealthView | null> {
  // A duration on the monotonic clock: how long this call has waited.
  const started = performance.now();
  let state = await readAgentState(deps, user, agentId);
  while (state && keepWaiting(state) && performance.now() - started < waitMs && !signal?.aborted) {
    const asked = performance.now();
    state = await readAgentState(deps, user, agentId, { waitMs: waitMs - (asked - started) });
    const took = performance.now() - asked;
    if (state && keepWaiting(state) && took < POLL_MS) await new Promise((resolve) => setTimeout(resolve, POLL_MS - took));
  }
  return state;
}

/**
 * Waits up to `waitMs` for the caller's agent to be live, when it is on its way there (provisioning, starting, updating)
 * or asleep (hibernated: it is started first, issue #20); answers its state at once otherwise. Null when the caller has
 * no agent with this id. A wake the backend refuses (e.g. no room on the host) throws `AGENT_WAKE_REFUSED` with its
 * reason: the agent stays asleep, and "the next message wakes it" would not be true of this one. A wake is a start: what
 * a start is owed once live (`AfterStart`, e.g. a heartbeat saved while it could not be woken) follows it.
 */
export async function waitUntilLive(deps: LifecycleDeps, user: Caller, agentId: string, waitMs: number) {
  const now = await readAgentState(deps, user, agentId);
  if (now && wakesOnMessage(now.state)) {
    const answer = await deps.backend.request<Record<string, unknown>>(`/api/agents/${encodeURIComponent(agentId)}/start`, {
      method: 'POST',
      caller: backendCaller(user),
      body: {},
      timeoutMs: 60_000,
    });
    if (answer.status === 404) return readAgentState(deps, user, agentId);
    if (answer.status >= 400) {
      const said = answer.body?.error;
      throw new DomainError('AGENT_WAKE_REFUSED', { reason: typeof said === 'string' && said ? said : `HTTP ${answer.status}` });
    }
    deps.afterStart?.follow(user, agentId);
  } else if (!now || !isOnItsWayToLive(now.state)) return now;
  return pollAgentState(deps, user, agentId, waitMs, (s) => isOnItsWayToLive(s.state));
}

/**
 * Follows an agent that a lifecycle action has just started while it is on its way to live, for at most `waitMs` or
 * until `signal` aborts, and wakes nothing (unlike `waitUntilLive`): its state once it is live or no longer coming up
 * by itself (stopped, failed, degraded), else the state it is still in. Null when the caller has no agent with this id.
 */
export function whileStarting(
  deps: LifecycleDeps,
  user: Caller,
  agentId: string,
  waitMs: number,
  signal?: AbortSignal,
): Promise<AgentHealthView | null> {
  return pollAgentState(deps, user, agentId, waitMs, (s) => isOnItsWayToLive(s.state), signal);
}

/**
 * `waitUntilLive` for a call that needs the agent's gateway: the agent's state once live, or once it is not coming up by
 * itself (stopped, failed: the caller words that), with how long it waited. Throws `AGENT_NOT_FOUND`,
 * `AGENT_WAKE_REFUSED` (from the wake), and `AGENT_STILL_STARTING` when it is still on its way after `waitMs`.
 */
export async function untilLive(
  deps: LifecycleDeps,
  user: Caller,
  agentId: string,
  waitMs: number,
): Promise<{ state: AgentHealthView; waitedMs: number }> {
  const started = performance.now();
  const state = await waitUntilLive(deps, user, agentId, waitMs);
  const waitedMs = Math.round(performance.now() - started);
  if (!state) throw new DomainError('AGENT_NOT_FOUND');
  if (isOnItsWayToLive(state.state)) throw new DomainError('AGENT_STILL_STARTING', { seconds: Math.round(waitedMs / 1000) });
  return { state, waitedMs };
}

/**
 * Whether the agent's state already says why its gateway does not answer: no gateway is meant to be up for it (asleep,
 * stopped, stopping, failed) or it is not up yet (on its way to live). A gateway that does not answer then is what the
 * state shows, not a failure to report again on every look. Live and degraded are not: a gateway process runs for them.
 */
export const gatewayDownByState = (state: AgentLifecycleState): boolean => state !== 'live' && state !== 'degraded';

/**
 * A gateway call that found nothing to answer it: the agent's gateway is not up (asleep behind its doorbell, starting,
 * restarting; through the backend, not running), rather than refusing the call.
 */
export const gatewayDown = (err: unknown): boolean =>
  err instanceof GatewayError && ['CONNECT_FAILED', 'UNAVAILABLE', 'HTTP_502', 'HTTP_503'].includes(err.code);

/**
 * Runs `call` on the caller's agent's gateway; when it finds the gateway down because the agent sleeps or is on its
 * way to live, wakes it (issue #20: a change to an agent must reach it like a message does), waits up to `waitMs`
 * (`untilLive`) and runs `call` once more. Only then: a call that failed on a live agent is not repeated (it may have
 * been made), and an agent that is not coming up by itself (stopped, failed) gives the call's own failure back.
 */
export async function againOnceLive<T>(
  deps: LifecycleDeps,
  user: Caller,
  agentId: string | null | undefined,
  waitMs: number,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!agentId || !gatewayDown(err)) throw err;
    const before = await readAgentState(deps, user, agentId);
    if (!before || !(wakesOnMessage(before.state) || isOnItsWayToLive(before.state))) throw err;
    const { state } = await untilLive(deps, user, agentId, waitMs);
    if (state.state !== 'live') throw err;
    return call();
  }
}

/** A wake that did not bring the agent up in time: what a call that needed its gateway says instead. */
export const isWakeFailure = (err: unknown): err is DomainError =>
  err instanceof DomainError && (err.code === 'AGENT_WAKE_REFUSED' || err.code === 'AGENT_STILL_STARTING');

export type LifecycleOutcome =
  /** The backend refused or failed: its status and body, passed on. */
  | { kind: 'refused'; status: number; body: Record<string, unknown> }
  /**
   * The agent reached the state the action asked for (`reached`; or, asked to be live, runs degraded for good:
   * `isDegradedForGood`), ended `failed`, or is still on its way (`pending`).
   */
  | { kind: 'reached' | 'failed' | 'pending'; body: Record<string, unknown>; state: AgentHealthView };

/**
 * Runs `action` on the caller's agent through the backend's per-agent route, then waits up to `deps.waitMs` for the state
 * the action asks for (`targetState`). Throws `BackendUnavailableError` when no backend answered.
 */
export async function runLifecycle(
  deps: LifecycleDeps,
  user: Caller,
  agentId: string,
  action: AgentAction,
  body: unknown,
): Promise<LifecycleOutcome> {
  const waitMs = deps.waitMs ?? LIFECYCLE_WAIT_MS;
  const answer = await deps.backend.request<Record<string, unknown>>(`/api/agents/${encodeURIComponent(agentId)}/${action}`, {
    method: 'POST',
    caller: backendCaller(user),
    body: action === 'update' ? (body ?? {}) : {},
    // An update already waits for the new version inside the backend.
    timeoutMs: action === 'update' ? 180_000 : 60_000,
  });
  if (answer.status >= 400) return { kind: 'refused', status: answer.status, body: answer.body ?? {} };

  const wanted: AgentLifecycleState = targetState(action);
  const reached = (s: AgentHealthView) => s.state === wanted || (wanted === 'live' && isDegradedForGood(s));
  // `failed` ends the wait: the host gave up, and nothing changes until someone acts again.
  const state = await pollAgentState(deps, user, agentId, waitMs, (s) => !reached(s) && s.state !== 'failed');
  if (!state) throw new DomainError('AGENT_NOT_FOUND');
  // The record follows what the agent is now, so lists and the primary-agent lookup see the truth.
  if (state.state === 'live') await setAgentStatus(deps.db, user.id, agentId, 'running');
  else if (state.state === 'stopped') await setAgentStatus(deps.db, user.id, agentId, 'stopped');
  const kind = reached(state) ? 'reached' : state.state === 'failed' ? 'failed' : 'pending';
  return { kind, body: answer.body ?? {}, state };
}
