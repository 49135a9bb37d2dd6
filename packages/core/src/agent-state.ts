/**
 * The one agent state machine (issue #19, "Status that is true"), read by the backend (which knows the host), the web
 * (which relays it, and derives it itself for an agent no backend knows) and the dashboard (badge, health card, which
 * buttons are enabled). It imports nothing, so the dashboard bundles it from source.
 *
 *   provisioning → starting → live ⇄ degraded → stopping → stopped
 *                                  ↘ updating ↗            failed (from anywhere the host gives up)
 *                     live → hibernated (idle: no process, state on disk) → starting (a message, a due job, Start)
 *
 * A state is never assumed: it is derived from what the host says of the agent's process/container and what the
 * gateway's `/readyz` answers, each time it is asked.
 */

export const AGENT_STATES = [
  'provisioning',
  'starting',
  'live',
  'degraded',
  'stopping',
  'stopped',
  'failed',
  'updating',
  'hibernated',
] as const;
export type AgentLifecycleState = (typeof AGENT_STATES)[number];

export const AGENT_ACTIONS = ['start', 'stop', 'restart', 'update', 'repair', 'reset-memory'] as const;
export type AgentAction = (typeof AGENT_ACTIONS)[number];

/**
 * The warm-up a start ends with (`@aop/provisioner`'s `warmUpGateway`): an extra provider in the agent's configuration
 * and a session of its own, both the platform's, never the customer's. Lists shown to the customer leave them out.
 */
export const WARM_UP_PROVIDER_ID = 'aop-warm-up';
export const WARM_UP_SESSION_KEY = 'aop-warm-up';
/** The warm-up's session as OpenClaw lists it (`agent:<agent id>:aop-warm-up`): deleted after the turn, hidden meanwhile. */
export const isWarmUpSession = (key: string) => key === WARM_UP_SESSION_KEY || key.endsWith(`:${WARM_UP_SESSION_KEY}`);

/** A gateway's session row as `sessions.list` gives it: the fields that tell when it was last active, and whether now. */
export interface SessionActivity {
  lastActivityAt?: unknown;
  lastInteractionAt?: unknown;
  updatedAt?: unknown;
  hasActiveRun?: unknown;
  status?: unknown;
}
/** When a session was last active (ms since the epoch; 0 when it does not say). */
export const sessionLastActivityMs = (row: SessionActivity): number =>
  Math.max(...[row.lastActivityAt, row.lastInteractionAt, row.updatedAt].map((v) => (typeof v === 'number' ? v : 0)));
/** A turn is running in the session now. */
export const sessionIsActive = (row: SessionActivity): boolean => row.hasActiveRun === true || row.status === 'running';

/** The host's word for the agent's process/container (`AgentStatus` of `@aop/provisioner`), or null when the host has no such agent. */
export type HostProcessStatus = 'starting' | 'running' | 'restarting' | 'stopping' | 'stopped' | 'error' | 'hibernated';

export interface AgentStateInput {
  /** What the host says; null: the host has no such agent (not deployed yet, or deployed where no backend looks). */
  host: HostProcessStatus | null;
  /**
   * The gateway's `/readyz`: true ready, false answered not ready, null not reached (no address, refused, timed out).
   * Only asked when there is a process to ask.
   */
  ready: boolean | null;
  /** The record's status (`agents.status` / `agent_deployments.status`): the only witness while nothing runs yet. */
  record?: string | null;
  /** An action the platform is carrying out right now (an update keeps the agent down on purpose for a while). */
  pending?: AgentAction | null;
  /** The host's last error, shown as the reason of `failed`/`degraded`. */
  lastError?: string | null;
  /** What `/readyz` reports as failing (e.g. `startup-sidecars`). */
  failing?: readonly string[];
  /** The host's word that the gateway's scheduler is down while it runs (it answers chat; its jobs do not run). */
  schedulerDown?: string | null;
}

export interface AgentStateView {
  state: AgentLifecycleState;
  /** Why, in words (one sentence, fit to show under the badge). */
  reason: string;
  /** The actions valid in this state, in `AGENT_ACTIONS` order. */
  actions: AgentAction[];
}

/** Record statuses that mean "being set up" while no host knows the agent yet. */
const RECORD_PROVISIONING = new Set(['pending', 'provisioning', 'deploying', 'creating', 'building', 'initializing', 'queued']);
const RECORD_FAILED = new Set(['error', 'failed', 'crashed', 'removed']);
const RECORD_STOPPED = new Set(['stopped', 'sleeping', 'paused', 'suspended']);

/** The state of an agent from the host's process state and the gateway's readiness. */
export function deriveAgentState(input: AgentStateInput): AgentStateView {
  const [state, reason] = derive(input);
  return { state, reason, actions: validActions(state) };
}

function derive({ host, ready, record, pending, lastError, failing, schedulerDown }: AgentStateInput): [AgentLifecycleState, string] {
  const notReady = failing?.length ? `the gateway is not ready yet (${failing.join(', ')})` : 'the gateway is not ready yet';
  if (pending === 'update') return ['updating', 'a new runtime version is being installed'];
  switch (host) {
    case 'starting':
      // The host reports running only after the warm-up turn: a gateway that answers /readyz is preparing that turn.
      return [
        'starting',
        ready === true
          ? 'the gateway answers /readyz and is preparing its first turn'
          : ready === false
            ? notReady
            : 'the gateway process is starting',
      ];
    case 'restarting':
      // It was running and stopped by itself: the host restarts it after a back-off. Not what anyone asked for.
      return [
        'degraded',
        lastError
          ? `the gateway stopped unexpectedly and is being restarted: ${lastError}`
          : 'the gateway stopped unexpectedly and is being restarted',
      ];
    case 'running':
      if (ready === true && schedulerDown) return ['degraded', `the gateway answers, but ${schedulerDown}`];
      if (ready === true) return ['live', 'the gateway answers /readyz'];
      return ['degraded', ready === false ? `the process runs but ${notReady}` : 'the process runs but the gateway does not answer'];
    case 'stopping':
      return ['stopping', 'the gateway is shutting down'];
    case 'stopped':
      return ['stopped', 'the agent was stopped'];
    case 'error':
      return ['failed', lastError ? `the agent could not be started: ${lastError}` : 'the agent could not be started'];
    case 'hibernated':
      return ['hibernated', 'asleep after being idle: the next message or its next scheduled job wakes it'];
    case null:
      break;
  }
  // No host knows the agent: a direct deployment at the hosting provider, or one still being created. The gateway's
  // own answer is then the only evidence that anything runs.
  const status = (record ?? '').toLowerCase();
  if (ready === true) return ['live', 'the gateway answers /readyz'];
  if (RECORD_FAILED.has(status)) return ['failed', 'the deployment failed'];
  if (RECORD_STOPPED.has(status)) return ['stopped', 'the agent was stopped'];
  if (RECORD_PROVISIONING.has(status) || status === '') return ['provisioning', 'the agent is being deployed'];
  // The record says it runs, yet its gateway is not ready: that is what degraded means.
  return ['degraded', ready === false ? `the deployment runs but ${notReady}` : 'the deployment does not answer'];
}

/** States an agent passes through by itself on its way to live: a message sent meanwhile waits for it (issue #19). */
export const isOnItsWayToLive = (state: AgentLifecycleState): boolean =>
  state === 'provisioning' || state === 'starting' || state === 'updating';

/**
 * Degraded while its host says the process runs and its gateway answers `/readyz`: only a part of it the host no longer
 * tries to fix gives that (its scheduler is down, `schedulerDown`). Unlike a crash being restarted, nothing changes until
 * someone acts, so a wait for live ends there.
 */
export const isDegradedForGood = (view: { state: AgentLifecycleState; host: string | null; ready: boolean | null }) =>
  view.state === 'degraded' && view.host === 'running' && view.ready === true;

/** A gateway process is up for it (or being brought up): what "running now" counts. Asleep, stopped and failed are not. */
export const isRunningNow = (state: AgentLifecycleState): boolean =>
  state === 'live' || state === 'degraded' || state === 'stopping' || isOnItsWayToLive(state);

/** Asleep with its state kept (issue #20): a message wakes it (a start), then waits for it like for any start. */
export const wakesOnMessage = (state: AgentLifecycleState): boolean => state === 'hibernated';

/** Which actions make sense in each state; the rest are refused by the dashboard with `actionBlockedReason`. */
const VALID: Readonly<Record<AgentLifecycleState, readonly AgentAction[]>> = {
  provisioning: [],
  starting: ['stop'],
  live: ['stop', 'restart', 'update', 'repair', 'reset-memory'],
  degraded: ['stop', 'restart', 'update', 'repair', 'reset-memory'],
  stopping: [],
  stopped: ['start', 'update', 'repair'],
  failed: ['start', 'restart', 'update', 'repair'],
  updating: [],
  hibernated: ['start', 'stop'],
};

export function validActions(state: AgentLifecycleState): AgentAction[] {
  return AGENT_ACTIONS.filter((a) => VALID[state].includes(a));
}

export function isActionValid(state: AgentLifecycleState, action: AgentAction): boolean {
  return VALID[state].includes(action);
}

/** Why `action` is not available in `state`, in words; null when it is. */
export function actionBlockedReason(state: AgentLifecycleState, action: AgentAction): string | null {
  if (isActionValid(state, action)) return null;
  switch (state) {
    case 'provisioning':
      return 'The agent is still being deployed; actions are available once it has started.';
    case 'stopping':
      return 'The agent is shutting down; wait until it has stopped.';
    case 'updating':
      return 'The agent is being updated; wait until the update has finished.';
    case 'starting':
      return 'The agent is starting; wait until it is live, or stop it.';
    case 'live':
    case 'degraded':
      return action === 'start' ? 'The agent is already running.' : null;
    case 'stopped':
      return action === 'stop'
        ? 'The agent is already stopped.'
        : action === 'restart'
          ? 'The agent is stopped; use Start.'
          : 'The agent is stopped; start it first.';
    case 'failed':
      return action === 'stop' ? 'The agent is not running.' : 'The agent is not running; start it first.';
    case 'hibernated':
      return 'The agent is asleep; a message or Start wakes it first.';
  }
}

/**
 * The state a lifecycle action asks for: the call answers once the agent is there (bounded), or says it is on the way.
 * `update`, `repair` and `reset-memory` restart the gateway, so they end live too.
 */
export function targetState(action: AgentAction): AgentLifecycleState {
  return action === 'stop' ? 'stopped' : 'live';
}

/** States an action can no longer reach without someone acting again. */
export function isSettled(state: AgentLifecycleState): boolean {
  return state === 'live' || state === 'stopped' || state === 'failed';
}

export const isAgentLifecycleState = (value: unknown): value is AgentLifecycleState =>
  typeof value === 'string' && (AGENT_STATES as readonly string[]).includes(value);
