import type { DeviceIdentity } from '@aop/gateway-client';
import type { AgentWorkspace } from './shared/workspace.js';

/**
 * Where agents run. Every provider (local processes, Docker, Kubernetes, a hosting API) implements
 * `AgentHost`; the backend only talks to this interface.
 */

/** Messaging channel tokens, given at provisioning. Stored encrypted by the host, passed to OpenClaw via env only. */
export interface ChannelTokens {
  telegram?: string;
  discord?: string;
  whatsapp?: string;
}

/** An OpenAI-compatible LLM the agent talks to (written as an OpenClaw `models.providers` entry). */
export interface LlmSpec {
  /** Base URL including `/v1`, e.g. `https://openrouter.ai/api/v1`. */
  baseUrl: string;
  apiKey: string;
  /** Model id at that provider, e.g. `anthropic/claude-sonnet-4.5`. */
  model: string;
  contextWindow?: number;
  maxTokens?: number;
}

export interface AgentSpec {
  agentId: string;
  userId: string;
  plan: string;
  /** The stored agent configuration (spec §2.2): an OpenClaw config in our dialect, translated on write. */
  config: Record<string, unknown>;
  /** The gateway's shared token (`Authorization: Bearer …`, WS `auth.token`). */
  gatewayToken: string;
  channelTokens?: ChannelTokens;
  llm?: LlmSpec;
  /**
   * The agent's own secret environment variables (e.g. its underground wallet key `AOP_AGENT_WALLET_KEY`), for its
   * tools and skills: `AOP_AGENT_*` names only (`AGENT_ENV_NAME`). Sealed at rest like the tokens and passed to the
   * gateway's environment only, never written into openclaw.json. `configure` replaces the whole set.
   */
  agentEnv?: Record<string, string>;
  /** OpenClaw version; the pinned one when absent. */
  version?: string;
}

/**
 * `starting`: spawned, `/readyz` not ready yet. `running`: ready. `restarting`: crashed, waiting on the back-off.
 * `stopping`/`stopped`: by request. `error`: did not become ready in time, or could not be started. `hibernated`: stopped
 * after being idle, its state kept; `start` wakes it (hosts that hibernate: the local one).
 */
export type AgentStatus = 'starting' | 'running' | 'restarting' | 'stopping' | 'stopped' | 'error' | 'hibernated';

export interface AgentState {
  agentId: string;
  userId: string;
  /**
   * The agent's id inside its gateway (OpenClaw's agent id): what every platform call to the gateway names — REST
   * `model: openclaw/<id>`, session keys `agent:<id>:…`, cron jobs' `agentId` — so a gateway that holds several agents
   * routes each call to the right one. `main`, OpenClaw's default agent, for an agent with a gateway of its own.
   */
  openclawAgentId: string;
  /**
   * The other platform agents in the same gateway (customer-scoped gateways, the local host): its restart, update,
   * repair and memory reset restart them too, and they share its token, devices and sleep. Absent or empty: a gateway
   * of its own.
   */
  sharesGatewayWith?: string[];
  status: AgentStatus;
  /** OpenClaw version the agent runs (or will run on its next start). */
  version: string;
  /** Base URL of the gateway (HTTP; the WebSocket is the same with `ws:`), null while it has no port. */
  url: string | null;
  port: number | null;
  pid: number | null;
  /** ISO 8601: when the current process was spawned. */
  startedAt: string | null;
  /** ISO 8601: when the current process became ready. */
  readyAt: string | null;
  /** Crash restarts since the agent was last started by request. */
  restarts: number;
  lastError: string | null;
  /**
   * Only while `running`: OpenClaw's scheduler did not start in this gateway and the host gave up starting it again
   * (shared/scheduler-start.ts), in words: it answers chat, but its scheduled jobs and heartbeats do not run.
   */
  schedulerDown?: string | null;
  /**
   * Only while `hibernated`: by when the host starts it for its next due cron job or heartbeat (ISO 8601, the job's due
   * time less the wake lead; its last idle check before that time does it); null when no job is due, so only a message,
   * a Start or its own address wakes it.
   */
  wakesAt?: string | null;
}

export interface AgentHealth {
  /** `GET /healthz` answered 200. */
  live: boolean;
  /** `GET /readyz` answered 200 with `ready: true`. */
  ready: boolean;
  /** What `/readyz` reports as failing (e.g. `startup-sidecars`). */
  failing: string[];
  /** Gateway uptime as `/readyz` reports it; null when unknown. */
  uptimeMs: number | null;
}

export interface AgentStats {
  /** CPU of the whole process tree over a short sample, in percent of one core (can exceed 100). */
  cpuPercent: number;
  /** Resident memory of the process tree. */
  memoryBytes: number;
  /** Processes in the tree (the gateway runs two helper processes). */
  pids: number;
  /** Since the main process started; 0 when it is not running. */
  uptimeMs: number;
}

/** What a host tells about its warm pool (gateways started and warmed up for the next new agent). */
export interface WarmPoolStatus {
  /** Gateways it keeps warm. */
  target: number;
  /** Warmed up and waiting for an agent. */
  ready: number;
  /** Starting or warming up. */
  starting: number;
  /** Why the last fill stopped short (no room, a gateway that did not start), null when it did not. */
  lastError: string | null;
}

export interface LogsOptions {
  /** Last N lines (default 200). */
  tail?: number;
}

export interface FollowLogsOptions {
  /** Recent lines to send first (default 0). */
  tail?: number;
  /** Ends the stream. */
  signal: AbortSignal;
  /**
   * How often a host re-attaches after the gateway stopped (default 1 s), or polls a provider without a log stream
   * (hosting, default 2 s).
   */
  pollMs?: number;
}

export interface WaitOptions {
  /** Default: the host's ready timeout. */
  timeoutMs?: number;
}

/**
 * What the platform presents to control an agent's gateway over its WebSocket. OpenClaw gives a token-only connection
 * its scopes only from loopback; from anywhere else it also needs a paired device (research "Device identity").
 */
export interface ControlCredentials {
  /** The gateway token (`auth.token`). */
  token: string;
  /** The platform device, paired with this gateway: connect with `identity` (and the token) to get full scopes. */
  device?: {
    identity: DeviceIdentity;
    /** `hello-ok.auth.deviceToken` the gateway issued to the platform device. */
    deviceToken: string;
  };
}

/** What `configure` may change. */
export type AgentChanges = Partial<Pick<AgentSpec, 'config' | 'plan' | 'channelTokens' | 'llm' | 'agentEnv'>>;

/**
 * Why a gateway was started: `provision` (a new agent, cold or adopting a warm gateway), `wake` (out of hibernation),
 * `start` (Start, restart, update, repair, a crash restart), `warm-pool` (a gateway for the next new agent).
 */
export type AgentStartKind = 'provision' | 'wake' | 'start' | 'warm-pool';

/** One start of a gateway that ended: ready (serving) or failed, after `seconds`. */
export interface AgentStartEvent {
  agentId: string;
  kind: AgentStartKind;
  outcome: 'ready' | 'failed';
  seconds: number;
}

export interface AgentHost {
  /** `local`, `docker`, `kubernetes`, `hosting`. */
  readonly provider: string;
  /**
   * Hosts that see their gateways' starts end (the local one): calls `listener` as each does, for the platform's
   * metrics. Returns the unsubscribe function.
   */
  onAgentStart?(listener: (event: AgentStartEvent) => void): () => void;
  /** Writes the agent's config and state, then starts it; resolves once the process is spawned (`starting`). */
  create(spec: AgentSpec): Promise<AgentState>;
  start(agentId: string): Promise<AgentState>;
  stop(agentId: string): Promise<AgentState>;
  restart(agentId: string): Promise<AgentState>;
  /**
   * Moves the agent to another OpenClaw version: backs up the state, starts the new version and waits until it is
   * ready. If it does not come up, restores the backup, starts the previous version again and throws `UpdateFailedError`.
   */
  update(agentId: string, options: { version: string }): Promise<AgentState>;
  /**
   * Changes the stored spec; config-only changes are hot-reloaded by OpenClaw, token/LLM/`agentEnv` changes restart
   * the gateway (they live in its environment).
   */
  configure(agentId: string, changes: AgentChanges): Promise<AgentState>;
  /** Re-writes the config from the spec, fixes the state directory (layout, modes, stale locks), restarts. */
  repair(agentId: string): Promise<AgentState>;
  /** Clears sessions and memory but keeps the workspace's seed files (AGENTS.md, SOUL.md, …); restarts. */
  resetMemory(agentId: string): Promise<AgentState>;
  logs(agentId: string, options?: LogsOptions): Promise<string[]>;
  stats(agentId: string): Promise<AgentStats>;
  /** `/healthz` and `/readyz`, 5-second timeout each. */
  health(agentId: string): Promise<AgentHealth>;
  status(agentId: string): Promise<AgentState>;
  /** The agent's spec with its secrets opened (the gateway token is handed to the agent's owner). */
  spec(agentId: string): Promise<AgentSpec>;
  /**
   * Present on hosts whose gateways the backend reaches from a non-loopback address (containers, hosted services):
   * the credentials of a control connection, with the platform device paired first when it is not yet (the agent must
   * be running). `repair: true` checks the pairing again even when this run of the gateway was verified (e.g. after a
   * connect was refused `NOT_PAIRED` because someone removed the device). Absent: token-only control works (local).
   */
  controlCredentials?(agentId: string, options?: { repair?: boolean }): Promise<ControlCredentials>;
  /**
   * The agent's OpenClaw workspace, for browsing and editing its files and git repository (spec §4.18). Absent when
   * the provider gives no access to the agent's files (hosting). Container providers need the agent running (409).
   */
  workspace?(agentId: string): Promise<AgentWorkspace>;
  /**
   * The agent's output as it is written: first the last `tail` lines (as `logs()` answers them), then new lines until
   * `signal` aborts, across restarts of the gateway. Absent when the provider cannot follow logs.
   */
  followLogs?(agentId: string, options: FollowLogsOptions): AsyncIterable<string>;
  list(): Promise<AgentState[]>;
  /** Resolves when the agent is `running`; rejects when it ends in `error`/`stopped` or the timeout passes. */
  waitUntilReady(agentId: string, options?: WaitOptions): Promise<AgentState>;
  /** Stops the agent and removes everything it had (state, backups, logs, registry entry). */
  delete(agentId: string): Promise<void>;
  /** Brings back the agents that should be running (called once when the backend starts). */
  restore(): Promise<AgentState[]>;
  /** Hosts that keep warm gateways for new agents (the local one): how the pool stands. */
  warmPoolStatus?(): WarmPoolStatus;
  /**
   * Releases the host. The local provider stops its gateways (they start again on the next `restore()`); container
   * and hosting providers leave agents running, so a backend deploy does not take every tenant offline.
   */
  shutdown(): Promise<void>;
}

/** The OpenClaw agent id of an agent that has a gateway of its own (OpenClaw's default agent). */
export const OWN_GATEWAY_AGENT_ID = 'main';

/** No room for another agent on this host; the backend answers 503. */
export class HostFullError extends Error {
  override readonly name = 'HostFullError';
  readonly statusCode = 503;
}

export class AgentNotFoundError extends Error {
  override readonly name = 'AgentNotFoundError';
  readonly statusCode = 404;
  constructor(readonly agentId: string) {
    super(`Agent not found: ${agentId}`);
  }
}

/** The agent already exists on this host. */
export class AgentExistsError extends Error {
  override readonly name = 'AgentExistsError';
  readonly statusCode = 409;
  constructor(readonly agentId: string) {
    super(`Agent already exists: ${agentId}`);
  }
}

/**
 * What an agent sharing its customer's gateway cannot have: variables or messaging channels of its own (they belong to a
 * process). The backend answers 409.
 */
export class SharedGatewayError extends Error {
  override readonly name = 'SharedGatewayError';
  readonly statusCode = 409;
}

/** A gateway could not be started (runtime missing, exited before ready, not ready in time). */
export class AgentStartError extends Error {
  override readonly name = 'AgentStartError';
}

/** An update did not come up; the agent was rolled back to `previousVersion` with the state backed up at `backupPath`. */
export class UpdateFailedError extends Error {
  override readonly name = 'UpdateFailedError';
  constructor(
    message: string,
    readonly backupPath: string,
    readonly previousVersion: string,
    readonly targetVersion: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
