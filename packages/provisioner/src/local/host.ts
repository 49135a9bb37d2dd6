import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { type WriteStream, createWriteStream, existsSync } from 'node:fs';
import { chmod, cp, mkdir, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { type Server as HttpServer, createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type GatewayConnection, PLATFORM_USER_AGENT, connectGateway } from '@aop/gateway-client';
import { BUS_SKILL_NAME, installBusSkill } from '../shared/bus-skill.js';
import {
  Backoff,
  type BackoffOptions,
  DEFAULT_MEMORY_MARGIN,
  DEFAULT_MEMORY_PER_AGENT_BYTES,
  DEFAULT_RESERVE_BYTES,
  autoWarmPoolSize,
  budgetFromPeak,
  capacityMessage,
  computeCapacity,
} from '../shared/capacity.js';
import {
  type AgentChanges,
  type AgentHealth,
  type AgentHost,
  type AgentSpec,
  type AgentStartEvent,
  type AgentStartKind,
  type AgentState,
  type AgentStats,
  type AgentStatus,
  type FollowLogsOptions,
  type LlmSpec,
  type LogsOptions,
  type WaitOptions,
  type WarmPoolStatus,
  AgentExistsError,
  AgentNotFoundError,
  AgentStartError,
  SharedGatewayError,
  HostFullError,
  OWN_GATEWAY_AGENT_ID,
} from '../host.js';
import { LineQueue, followFile } from '../shared/log-follow.js';
import { exclusive, writeFileAtomic, writeRecord } from '../shared/registry.js';
import { MEMORY_PATHS, memoryPathsOf } from '../shared/state-layout.js';
import { pruneOldest, updateWithRollback } from '../shared/update.js';
import { buildOpenClawConfig, carriesWarmUp, checkAgentEnv, configMeta, secretFileContents } from '../shared/openclaw-config.js';
import {
  RosterBook,
  type RosterFields,
  type RosterMark,
  type RosterMember,
  applyConfig,
  applyRoster,
  applyRosterWritten,
  chooseCustomerGateway,
  leaveGateway,
  openclawAgentIdOf,
  rosterSecrets,
  settleRoster,
  withdrawJoin,
} from '../shared/roster.js';
import { isAlive, memAvailableBytes, processTree, treePssBytes, treeStats } from './proc.js';
import {
  type OpenClawRuntime,
  PINNED_OPENCLAW_VERSION,
  REPO_ROOT,
  defaultNodeBin,
  openClawRuntime,
  runtimeProblem,
} from '../shared/runtime.js';
import {
  type SealedSpecRecord,
  type SecretBox,
  newSealedRecord,
  openSealedSpec,
  sealSpecSecrets,
  secretAad,
  secretBoxFor,
} from '../shared/sealed-spec.js';
import { type AgentWorkspace, ProgramWorkspace, runProgramLocally } from '../shared/workspace.js';
import { GATEWAY_DOWN, probeGateway } from '../shared/gateway-probe.js';
import { warmUpGateway, warmUpLogLine } from '../shared/warm-up.js';
import { SchedulerRestarts, schedulerFailure } from '../shared/scheduler-start.js';
import { type PoolConnection, PoolFiller, applyAdoption, openPoolConnection } from '../shared/adoption.js';
import {
  DEFAULT_IDLE_CHECK_MS,
  DEFAULT_WAKE_LEAD_MS,
  type Due,
  asDue,
  type Hibernation,
  type IdleVerdict,
  askIdle,
  hibernateIdlest,
  dueToWake,
  hibernationOf,
  keepsAwake,
  readActivityAt,
  rewakeAsleep,
  wakeNote,
} from '../shared/idle.js';

export interface LocalHostOptions {
  /** The platform's data directory; agents live in `<dataDir>/agents/<agentId>/`. */
  dataDir: string;
  /** 32-byte key (Buffer, 64 hex characters or base64) for the secrets in `agent.json`. Either this or `secrets`. */
  encryptionKey?: Buffer | string;
  secrets?: SecretBox;
  /** Repository root (default: the one this package lives in). */
  rootDir?: string;
  /** Node >= 24.16 binary (default `<root>/node_modules/node/bin/node`). */
  nodeBin?: string;
  /** OpenClaw version → npm project directory holding `node_modules/openclaw`. Unlisted versions: `runtime/versions/<v>`. */
  runtimes?: Record<string, string>;
  /** Version for agents whose spec names none (default: the pinned one). */
  defaultVersion?: string;
  /** Memory budget of a gateway not measured yet (default 1.5 GiB); measured ones are budgeted from their peak PSS. */
  memoryPerAgentBytes?: number;
  /** A measured gateway's budget is its peak PSS times this (default 1.2, `DEFAULT_MEMORY_MARGIN`). */
  memoryMargin?: number;
  /**
   * How often the memory of running gateways is sampled (default 30 s; also at every start poll and capacity check).
   * For the first 3 minutes after a gateway is ready, when its post-start work and first turns make its peak, it is
   * sampled six times as often.
   */
  memorySampleMs?: number;
  /** Memory kept free for everything else on the host (default 2 GiB). */
  reserveBytes?: number;
  /** Hard cap on gateways, on top of the memory-derived one. */
  maxAgents?: number;
  /** `starting` → `error` when `/readyz` is not ready after this long (default 120 s). */
  readyTimeoutMs?: number;
  /** `/readyz` poll interval while starting (default 500 ms). */
  readyPollMs?: number;
  /** SIGTERM, then SIGKILL after this long (default 30 s). */
  stopTimeoutMs?: number;
  /** Crash restarts: 1 s doubling to 30 s, reset after 60 s of health. */
  backoff?: BackoffOptions;
  /** Log lines kept in memory per agent (default 1000). */
  logLines?: number;
  /** `logs/gateway.log` is rotated to `gateway.log.1` at a start when larger than this (default 10 MiB). */
  maxLogFileBytes?: number;
  /** State backups kept per agent (default 3). */
  keepBackups?: number;
  /**
   * Where gateways listen: `loopback` (default) or `lan` (all interfaces, token-protected; remote operator
   * connections then need device pairing). The platform always reaches them at 127.0.0.1.
   */
  bind?: 'loopback' | 'lan';
  /**
   * Warm gateways kept started, warmed up and unassigned (default 0), for `create` to adopt: the customer's agent is
   * live in about 2 s instead of 25–30 s. Filled by `restore()` and after every adoption, one at a time and only while no
   * agent is starting; counted against capacity, and given up when an agent needs the room. `auto`: sized from the
   * memory free at `restore()` (`autoWarmPoolSize`).
   */
  warmPool?: number | 'auto';
  /**
   * How long after an agent became live the pool waits before starting a warm gateway (default 20 s): a customer's first
   * turns come then, and a gateway's start is 20 s of CPU.
   */
  refillQuietMs?: number;
  /**
   * Hibernation (default 0: never): a gateway on which nothing happened for this long — no chat turn or session activity,
   * no cron run, no connected client, as the gateway itself reports them — is stopped with its state kept
   * (`hibernated`), and started again by `start` (a message wakes it that way) or `wakeLeadMs` before its next due cron
   * job or heartbeat. Agents with a messaging channel stay awake: their channels need a live connection.
   */
  idleMs?: number;
  /** How often gateways are asked for their activity, and hibernated agents' due times checked (default 60 s). */
  idleCheckMs?: number;
  /** A hibernated agent is started this long before its next due job (default 90 s: a cold start and its warm-up). */
  wakeLeadMs?: number;
  /**
   * When an agent needs room the host does not have (after giving up warm gateways), the running agent idle the longest
   * — at least this long (default 2 min), by the same rules as hibernation — is hibernated early to make it, instead of
   * refusing the agent. 0: never; nothing is hibernated early without `idleMs` either.
   */
  evictIdleMs?: number;
  /**
   * Where each gateway's secret file lives while it runs (default: a directory of this host under /dev/shm, memory
   * only, else under the OS temp dir): the secrets as OpenClaw SecretRefs read them, never in the data directory.
   */
  secretsDir?: string;
  /**
   * `NODE_OPTIONS` of every gateway process (default none), e.g. `--max-old-space-size=384` to cap each gateway's V8
   * heap; `npm run bench:heap-soak` measures what a cap saves and whether long conversations stay within it.
   */
  nodeOptions?: string;
  /**
   * Customer-scoped gateways: how many of one customer's agents a gateway holds (default 1: each agent has its own;
   * the backend's `AGENTS_PER_GATEWAY` is 8). Above 1, a customer's later agent joins the gateway of one of the
   * customer's running agents as a further isolated OpenClaw agent (`config.apply`, about 2 s, no new process) instead
   * of starting a gateway of its own. Never another customer's gateway, never one of another OpenClaw version; an agent
   * with variables of its own (`agentEnv`) or messaging channels gets its own.
   */
  agentsPerGateway?: number;
}

/**
 * What `agent.json` holds. Tokens, the LLM key and the agent's variables are sealed with the host's key; the gateway it
 * is in, with customer-scoped gateways, in `RosterFields`.
 */
interface AgentRecord extends RosterFields {
  agentId: string;
  userId: string;
  plan: string;
  config: Record<string, unknown>;
  version: string;
  port: number | null;
  /** What the agent should be doing when the host (re)starts. */
  desired: 'running' | 'stopped';
  /** Last gateway pid, to clean up a gateway left behind by a previous host process. */
  pid: number | null;
  llm: (Omit<LlmSpec, 'apiKey'> & { apiKey: string }) | null;
  secrets: SealedSpecRecord['secrets'];
  /**
   * The largest proportional set size (bytes) its gateway's process tree has been seen with once ready (chat turns
   * included), and while starting (a transient peak, above the settled size): its memory budget's base.
   */
  peakPssBytes?: number | null;
  startPeakPssBytes?: number | null;
  /** A warm-pool gateway no agent has adopted yet: removed at the next `restore()` (its process does not outlive the host). */
  warmSlot?: boolean;
  /** Hibernated since (ISO 8601), and when to wake it for its next due job (null: none due); absent when awake. */
  hibernation?: Hibernation | null;
  createdAt: string;
  updatedAt: string;
}

interface Agent extends RosterMark {
  record: AgentRecord;
  status: AgentStatus;
  child: ChildProcess | null;
  exited: Promise<void> | null;
  generation: number;
  supervise: boolean;
  stopping: boolean;
  startedAt: number | null;
  readyAt: number | null;
  restarts: number;
  lastError: string | null;
  backoff: Backoff;
  restartTimer: NodeJS.Timeout | null;
  logs: string[];
  logFile: WriteStream | null;
  lock: Promise<unknown>;
  events: EventEmitter;
  /** The latest activity the gateway reported (wall clock ms), read by the idle check. */
  lastActiveAt: number | null;
  /**
   * A warm gateway's connection under the pool token, opened once it is ready, with its config's hash (null if it could
   * not be opened): adoption sends the agent's configuration over it at once (a new connection and `config.get` cost
   * 0.5–1.1 s on the pinned OpenClaw). A promise: an adoption right after the gateway became ready waits for it.
   */
  poolConn?: Promise<PoolConnection | null> | null;
  /** The start under way (why, since when: performance.now()), reported to `onAgentStart` listeners as it ends. */
  starting?: { kind: AgentStartKind; at: number } | null;
  /** Why the next `spawnGateway` runs, when the caller knows better than the record (a new agent: `provision`). */
  nextStartKind?: AgentStartKind;
  /** The start (`generation`) whose output said OpenClaw's scheduler did not start, and that line (shared/scheduler-start.ts). */
  schedulerFailed?: { generation: number; line: string } | null;
  /** Starts again for that, in a row; and why the host gave up on this start's scheduler, if it did. */
  schedulerRestarts: SchedulerRestarts;
  schedulerDown?: string | null;
}

export interface AgentPaths {
  dir: string;
  registry: string;
  state: string;
  config: string;
  workspace: string;
  home: string;
  logs: string;
  backups: string;
}

export { MEMORY_PATHS };

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
/** Directories of warm-pool gateways: `warm-<hex>`; an agent that adopts one keeps it as its directory. */
const WARM_SLOT_PREFIX = 'warm-';
/** Workspace files created on first boot (spec §2.2: seeded only when AGENTS.md is missing); kept by `resetMemory`. */
export const SEED_FILES = ['AGENTS.md', 'SOUL.md', 'IDENTITY.md', 'USER.md', 'BOOTSTRAP.md', 'TOOLS.md', 'HEARTBEAT.md'];
const ACTIVE: ReadonlySet<AgentStatus> = new Set(['starting', 'running', 'restarting', 'stopping']);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

const openHosts = new Set<LocalAgentHost>();
/** Last resort when the platform exits without `shutdown()`: ask every gateway to stop gracefully. */
function stopGatewaysOnExit(): void {
  for (const host of openHosts) for (const pid of host.gatewayPids()) killQuietly(pid, 'SIGTERM');
}

/** `AgentState.wakesAt`, only on a state that says `hibernated`: when the process (`gateway`'s) wakes for its next job. */
const withWakeTime = (state: AgentState, gateway: Agent): AgentState =>
  state.status === 'hibernated' ? { ...state, wakesAt: gateway.record.hibernation?.wakeAt ?? null } : state;

/**
 * The `local` provider: each agent is an OpenClaw gateway child process on this host, run with the Node 24
 * binary, on a free port of 127.0.0.1 (or all interfaces with `bind: 'lan'`), with an environment built from scratch
 * (nothing of the platform's).
 */
export class LocalAgentHost implements AgentHost {
  readonly provider = 'local';
  readonly agentsDir: string;
  private readonly options: Required<
    Pick<LocalHostOptions, 'readyTimeoutMs' | 'readyPollMs' | 'stopTimeoutMs' | 'logLines' | 'maxLogFileBytes' | 'keepBackups'>
  >;
  private readonly secrets: SecretBox;
  private readonly root: string;
  private readonly nodeBin: string;
  private readonly agents = new Map<string, Agent>();
  /** Agents living in another agent's gateway (`record.gatewayOf`), by agent id: no process of their own. */
  private readonly members = new Map<string, Agent>();
  /** Who is in which gateway (shared/roster.ts). */
  private readonly rosters = new RosterBook<Agent>(this.agents, this.members);
  private readonly creating = new Set<string>();
  /**
   * Gateways that were given room and have no process yet (an agent being created or (re)started, a warm gateway being
   * set up): every later capacity check counts them. Checks run one at a time (`exclusive` on `capacityChecks`), so two
   * starts cannot both take the last room.
   */
  private readonly reserved = new Set<string>();
  private readonly capacityChecks = { lock: Promise.resolve() as Promise<unknown> };
  private shuttingDown = false;
  /** Aborted when the host shuts down. */
  private readonly closing = new AbortController();
  private readonly memorySampler: NodeJS.Timeout;
  private readonly memorySampleMs: number;
  /** When each agent's memory was last sampled by the timer (performance.now()). */
  private readonly sampledAt = new Map<string, number>();
  /** Agents whose directory is not named after them: those that adopted a warm gateway (agent id → directory name). */
  private readonly dirs = new Map<string, string>();
  /** Warm-pool gateways (their `record.agentId` is their directory name), oldest first. */
  private readonly pool: Agent[] = [];
  private readonly filler = new PoolFiller({
    short: () => !this.shuttingDown && this.pool.length < this.poolTarget,
    busy: () => this.busyStarting(),
    add: () => this.addWarmSlot(),
  });
  /** `warmPool`, once `auto` is resolved (at `restore()`). */
  private poolTarget: number;
  private readonly secretsDir: string;
  private readonly idleTimer: NodeJS.Timeout | null = null;
  private checkingIdle = false;
  /** The listeners on hibernated agents' gateway ports (`openDoorbell`), by agent id. */
  private readonly doorbells = new Map<string, HttpServer>();
  private readonly startListeners = new Set<(event: AgentStartEvent) => void>();

  constructor(private readonly config: LocalHostOptions) {
    this.secrets = secretBoxFor(config, 'LocalAgentHost');
    this.agentsDir = join(config.dataDir, 'agents');
    this.root = config.rootDir ?? REPO_ROOT;
    this.nodeBin = config.nodeBin ?? defaultNodeBin(this.root);
    this.options = {
      readyTimeoutMs: config.readyTimeoutMs ?? 120_000,
      readyPollMs: config.readyPollMs ?? 500,
      stopTimeoutMs: config.stopTimeoutMs ?? 30_000,
      logLines: config.logLines ?? 1_000,
      maxLogFileBytes: config.maxLogFileBytes ?? 10 * 1024 * 1024,
      keepBackups: config.keepBackups ?? 3,
    };
    openHosts.add(this);
    if (openHosts.size === 1) process.on('exit', stopGatewaysOnExit);
    const hostKey = createHash('sha256').update(this.agentsDir).digest('hex').slice(0, 12);
    const shm = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
    this.secretsDir = config.secretsDir ?? join(shm, `aop-gateway-secrets-${process.getuid?.() ?? 0}-${hostKey}`);
    this.poolTarget = typeof config.warmPool === 'number' ? Math.max(0, Math.floor(config.warmPool)) : 0;
    this.memorySampleMs = config.memorySampleMs ?? 30_000;
    this.memorySampler = setInterval(() => void this.sampleMemory(), Math.max(1, Math.round(this.memorySampleMs / 6)));
    this.memorySampler.unref();
    if ((config.idleMs ?? 0) > 0) {
      this.idleTimer = setInterval(() => void this.checkIdle(), this.idleCheckMs);
      this.idleTimer.unref();
    }
  }

  get defaultVersion(): string {
    return this.config.defaultVersion ?? PINNED_OPENCLAW_VERSION;
  }

  /** The runtime (Node binary + OpenClaw entry) of a version. */
  runtimeFor(version: string): OpenClawRuntime {
    return openClawRuntime(version, { dir: this.config.runtimes?.[version], nodeBin: this.nodeBin, root: this.root });
  }

  paths(agentId: string): AgentPaths {
    const dir = join(this.agentsDir, this.dirs.get(agentId) ?? agentId);
    const state = join(dir, 'state');
    return {
      dir,
      registry: join(dir, 'agent.json'),
      state,
      config: join(state, 'openclaw.json'),
      workspace: join(state, 'workspace'),
      home: join(dir, 'home'),
      logs: join(dir, 'logs'),
      backups: join(dir, 'backups'),
    };
  }

  // ---------------------------------------------------------------- lifecycle

  async create(spec: AgentSpec): Promise<AgentState> {
    this.assertOpen();
    if (!ID_PATTERN.test(spec.agentId)) throw new Error(`Invalid agent id: ${spec.agentId}`);
    if (!spec.gatewayToken) throw new Error('A gateway token is required');
    const paths = this.paths(spec.agentId);
    if (this.agents.has(spec.agentId) || this.members.has(spec.agentId) || this.creating.has(spec.agentId) || existsSync(paths.registry)) {
      throw new AgentExistsError(spec.agentId);
    }
    const version = spec.version ?? this.defaultVersion;
    const problem = runtimeProblem(this.runtimeFor(version));
    if (problem) throw new AgentStartError(`Cannot create agent ${spec.agentId}: ${problem}`);
    this.creating.add(spec.agentId);
    try {
      const gateway = this.customerGateway(spec, version);
      if (gateway) return await this.join(gateway, spec);
      const slot = this.takeWarmSlot(version, spec);
      if (slot) return await this.adopt(slot, spec);
      return await this.withRoom(spec.agentId, async () => {
        const record = this.newRecord(spec, version);
        await this.ensureLayout(paths);
        const agent = this.newAgent(record);
        this.agents.set(spec.agentId, agent);
        await this.saveRecord(agent);
        return exclusive(agent, async () => {
          agent.nextStartKind = 'provision';
          await this.spawnGateway(agent, { supervise: true });
          return this.snapshot(agent);
        });
      });
    } finally {
      this.creating.delete(spec.agentId);
    }
  }

  private newRecord(spec: AgentSpec, version: string): AgentRecord {
    return { ...newSealedRecord(this.secrets, spec, version), port: null, pid: null };
  }

  // ---------------------------------------------------------------- warm pool

  /** How the warm pool stands. */
  warmPoolStatus(): WarmPoolStatus {
    const ready = this.pool.filter((slot) => slot.status === 'running').length;
    return { target: this.poolTarget, ready, starting: this.pool.length - ready, lastError: this.filler.lastError };
  }

  /**
   * A warm gateway for this agent, taken out of the pool; null when there is none ready, or when the agent needs a
   * gateway of its own: another OpenClaw version, or variables of its own (`AOP_AGENT_*` reach tools only through the
   * environment a process starts with).
   */
  private takeWarmSlot(version: string, spec: AgentSpec): Agent | null {
    if (Object.keys(spec.agentEnv ?? {}).length > 0) return null;
    const index = this.pool.findIndex((slot) => slot.status === 'running' && slot.record.version === version);
    if (index < 0) return null;
    const [slot] = this.pool.splice(index, 1);
    return slot ?? null;
  }

  /**
   * Makes a warm gateway the agent's: its directory becomes the agent's (the process's state directory is fixed at
   * spawn), the agent's record replaces the slot's, and the agent's configuration and secrets are applied to the
   * running process (`adoptConfiguration`) while the agent shows `starting`. If that fails, the agent gets a gateway of
   * its own (a cold start). The pool refills in the background.
   */
  private async adopt(slot: Agent, spec: AgentSpec): Promise<AgentState> {
    const slotName = slot.record.agentId;
    const poolToken = this.gatewayToken(slot);
    const record = this.newRecord(spec, slot.record.version);
    record.port = slot.record.port;
    record.pid = slot.record.pid;
    record.startPeakPssBytes = slot.record.startPeakPssBytes ?? null;
    record.peakPssBytes = slot.record.peakPssBytes ?? null;
    this.dirs.set(spec.agentId, slotName);
    slot.record = record;
    slot.supervise = true;
    this.agents.set(spec.agentId, slot);
    await this.saveRecord(slot);
    this.log(slot, `[host] warm gateway ${slotName} taken by agent ${spec.agentId}`);
    slot.starting = { kind: 'provision', at: performance.now() };
    this.setStatus(slot, 'starting', null);
    void exclusive(slot, async () => {
      const started = performance.now();
      try {
        const steps = await this.adoptConfiguration(slot, poolToken);
        slot.readyAt = Date.now();
        this.log(
          slot,
          `[host] warm gateway adopted in ${((performance.now() - started) / 1000).toFixed(1)} s: the agent's configuration is live (${steps})`,
        );
        this.setStatus(slot, 'running', null);
      } catch (error) {
        if (this.shuttingDown || slot.status !== 'starting') return;
        this.log(slot, `[host] adopting the warm gateway failed (${(error as Error).message}); starting a gateway of its own`);
        await this.stopGateway(slot);
        slot.nextStartKind = 'provision';
        await this.spawnGateway(slot, { supervise: true });
      }
    }).catch((failure: unknown) => this.setStatus(slot, 'error', (failure as Error).message));
    this.fillWarmPool();
    return this.snapshot(slot);
  }

  /**
   * The agent's secrets into the gateway's secret file, then its configuration through `config.apply` over the pool
   * token's connection (the one opened while the gateway waited, else a new one): the gateway resolves the file again
   * (the agent's token replaces the pool's; connections made with the pool's are closed) and applies the configuration
   * before it answers, without the file watcher's wait. The platform's skills are in the workspace already (written
   * before the warm gateway started). Measured with the pinned OpenClaw: see docs/operations.md "Warm gateways".
   */
  private async adoptConfiguration(agent: Agent, poolToken: string): Promise<string> {
    const port = agent.record.port;
    if (port === null || !agent.child) throw new Error('the warm gateway is not running');
    const config = this.gatewayConfig(agent, port);
    await this.writeSecretFile(agent);
    const kept = (await agent.poolConn) ?? null;
    agent.poolConn = null;
    return applyAdoption({
      kept,
      connect: () => connectGateway({ url: `ws://127.0.0.1:${port}`, token: poolToken, retryDeadlineMs: 0 }),
      config,
      note: 'warm gateway adopted by an agent',
      baseUrl: `http://127.0.0.1:${port}`,
      headers: { authorization: `Bearer ${this.gatewayToken(agent)}` },
      onReconnect: () => this.log(agent, '[host] the connection kept open for the adoption had closed; connecting again'),
    });
  }

  /** Starts warm gateways until the pool is full (`PoolFiller`). */
  private fillWarmPool(): void {
    this.filler.start();
  }

  /**
   * An agent is being created or started, or became live less than `refillQuietMs` ago (its first turns are when a
   * customer waits on it): a warm gateway's start (20 s of CPU) waits.
   */
  private busyStarting(): boolean {
    if (this.creating.size > 0 || [...this.reserved].some((id) => !id.startsWith(WARM_SLOT_PREFIX))) return true;
    const now = Date.now();
    const quietMs = this.config.refillQuietMs ?? 20_000;
    return [...this.agents.values()].some(
      (agent) => agent.status === 'starting' || (agent.readyAt !== null && now - agent.readyAt < quietMs),
    );
  }

  private async addWarmSlot(): Promise<void> {
    const name = `${WARM_SLOT_PREFIX}${randomBytes(6).toString('hex')}`;
    const version = this.defaultVersion;
    const problem = runtimeProblem(this.runtimeFor(version));
    if (problem) throw new AgentStartError(problem);
    const spec: AgentSpec = { agentId: name, userId: '', plan: '', config: {}, gatewayToken: randomBytes(32).toString('base64url') };
    const slot = this.newAgent({ ...this.newRecord(spec, version), warmSlot: true });
    // In the pool (so an agent that needs the room can give it up) and counted as being created from here on.
    this.pool.push(slot);
    const givenUp = () => new HostFullError('The warm gateway was given up for an agent that needed the room');
    try {
      await this.withRoom(
        name,
        // Its directory is made under the slot's lock, once it is known to be still wanted: a slot given up meanwhile
        // (`dropWarmSlot` takes the same lock before removing the directory) must not write into a directory being removed.
        () =>
          exclusive(slot, async () => {
            if (!this.pool.includes(slot)) throw givenUp();
            await this.ensureLayout(this.paths(name));
            await this.saveRecord(slot);
            await this.spawnGateway(slot, { supervise: false });
          }),
        { evictWarm: false },
      );
    } catch (error) {
      await this.dropWarmSlot(slot);
      throw error;
    }
    try {
      await this.waitForRunning(slot, this.options.readyTimeoutMs + 5_000);
    } catch (error) {
      await this.dropWarmSlot(slot);
      throw error;
    }
    // Without it, adoption connects itself.
    const url = `ws://127.0.0.1:${slot.record.port}`;
    slot.poolConn = openPoolConnection(() => connectGateway({ url, token: this.gatewayToken(slot), retryDeadlineMs: 0 })).catch(
      (error: Error) => {
        this.log(slot, `[host] warm gateway: no connection kept open for its adoption (${error.message})`);
        return null;
      },
    );
    // A slot that dies while it waits leaves the pool (and is replaced).
    slot.events.on('change', (status: AgentStatus) => {
      if (slot.record.warmSlot && (status === 'error' || status === 'stopped') && this.pool.includes(slot)) {
        void this.dropWarmSlot(slot).then(() => this.fillWarmPool());
      }
    });
  }

  /** Closes a warm gateway's pool connection, if it has one. */
  private closePoolConnection(slot: Agent): void {
    void slot.poolConn?.then((pooled) => pooled?.conn.close()).catch(() => undefined);
    slot.poolConn = null;
  }

  /**
   * Stops a pool gateway and removes it with its directory. Never throws: an agent that needs the room must get it even
   * if the directory cannot be removed now (`restore()` removes unadopted slots left behind).
   */
  private async dropWarmSlot(slot: Agent): Promise<void> {
    slot.record.desired = 'stopped';
    const index = this.pool.indexOf(slot);
    if (index >= 0) this.pool.splice(index, 1);
    this.closePoolConnection(slot);
    await exclusive(slot, () => this.stopGateway(slot, { kill: true })).catch(() => undefined);
    slot.logFile?.end();
    slot.logFile = null;
    // Retried: a process of the killed tree may still be finishing a write (ENOTEMPTY from the final rmdir).
    await rm(this.paths(slot.record.agentId).dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }).catch(
      (error: Error) => {
        this.filler.lastError = `a warm gateway's directory could not be removed: ${error.message}`;
      },
    );
  }

  // ---------------------------------------------------------------- customer-scoped gateways

  /** The gateway a new agent joins (`chooseCustomerGateway`), or null for a gateway of its own. */
  private customerGateway(spec: AgentSpec, version: string): Agent | null {
    const candidates = [...this.agents.values()].map((gateway) => ({
      gateway,
      userId: gateway.record.userId,
      runtime: gateway.record.version,
      awake: gateway.status === 'running' && gateway.child !== null,
      // A process on its way up (a cold start, a wake, an adoption): a roster written meanwhile is applied once it
      // answers (`applyRosterWritten`; an adoption holds the gateway's lock, so a join waits for it to end).
      starting: gateway.status === 'starting' && gateway.child !== null,
      asleep: gateway.status === 'hibernated',
      ownVariables: Object.keys(openSealedSpec(this.secrets, gateway.record).agentEnv ?? {}).length > 0,
      memberIds: this.rosters.membersOf(gateway).map((member) => openclawAgentIdOf(member.record.agentId)),
    }));
    return chooseCustomerGateway(spec, version, candidates, {
      limit: this.config.agentsPerGateway ?? 1,
      warmReady: this.pool.some((slot) => slot.status === 'running' && slot.record.version === version),
    });
  }

  /** What the gateway's config lists besides its first agent (`applyRoster`). */
  private roster(gateway: Agent): RosterMember[] {
    return this.rosters.membersOf(gateway).map((member) => ({
      id: openclawAgentIdOf(member.record.agentId),
      workspace: this.paths(member.record.agentId).workspace,
      llm: openSealedSpec(this.secrets, member.record).llm ?? null,
      config: member.record.config,
      stopped: member.record.desired !== 'running',
    }));
  }

  /**
   * A customer's later agent joins one of its gateways: its record (with the gateway's token: the owner reaches each of
   * their agents with it), its own workspace with the platform's skills, then the gateway's config with it in the roster
   * applied to the running process (`rosterChanged`), or the sleeping gateway woken with it. `starting` until then
   * (about 2 s), and its gateway's state when this answers (`running`; `starting` for a woken one); if it fails, the
   * agent gets a gateway of its own (then `starting`, as any new gateway), or, with no room for that, is not created.
   */
  private async join(gateway: Agent, spec: AgentSpec): Promise<AgentState> {
    const agentId = spec.agentId;
    const record = this.newRecord({ ...spec, gatewayToken: this.gatewayToken(gateway) }, gateway.record.version);
    record.gatewayOf = gateway.record.agentId;
    const paths = this.paths(agentId);
    await this.ensureLayout(paths);
    const member = this.newAgent(record);
    this.members.set(agentId, member);
    await this.saveRecord(member);
    member.starting = { kind: 'provision', at: performance.now() };
    this.setStatus(member, 'starting', null);
    // Awaited (about 2 s): once `create` answers, the gateway knows the agent, so a message sent at once finds it. (A
    // gateway of its own is only spawned by then; its first connection fails and the message waits for it.)
    const started = performance.now();
    try {
      await exclusive(gateway, async () => {
        await this.installSkills(member, paths);
        await this.rosterChanged(gateway, `agent ${agentId} joins`, { start: true });
      });
      this.log(gateway, `[host] agent ${agentId} joined this gateway in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      // No warm-up turn of its own: measured, it cost more than it saved (docs/decisions.md "A joining agent's first turn").
      this.setStatus(member, 'running', null);
    } catch (error) {
      if (this.shuttingDown || error instanceof HostFullError) {
        // No room to wake its gateway (which sleeps on, untouched): none for a gateway of its own either. The agent is
        // not created.
        this.members.delete(agentId);
        await rm(paths.dir, { recursive: true, force: true });
        throw error;
      }
      this.log(gateway, `[host] agent ${agentId} could not join (${(error as Error).message}); it gets a gateway of its own`);
      this.members.delete(agentId);
      await this.undoJoin(gateway, agentId);
      member.record.gatewayOf = undefined;
      this.agents.set(agentId, member);
      await this.saveRecord(member);
      member.nextStartKind = 'provision';
      await this.withRoom(agentId, () => exclusive(member, () => this.spawnGateway(member, { supervise: true }))).catch(
        (failure: unknown) => this.setStatus(member, 'error', (failure as Error).message),
      );
    }
    return this.snapshot(member);
  }

  /**
   * What a gateway may have got of an agent whose join failed goes at once, rather than with the gateway's next roster
   * change: out of the running process when it got there (`withdrawJoin`), out of the files written for a start. A
   * failure is logged; that next change removes it from the files, but not from a running process's roster.
   */
  private async undoJoin(gateway: Agent, agentId: string): Promise<void> {
    try {
      await exclusive(gateway, async () => {
        if (gateway.status !== 'running' || !gateway.child) await this.applyRoster(gateway, `agent ${agentId} did not join`);
        else if (await this.onGateway(gateway, (conn) => withdrawJoin(conn, openclawAgentIdOf(agentId)))) {
          this.log(gateway, `[host] agent ${agentId} was taken out of this gateway again`);
        }
      });
    } catch (error) {
      this.log(gateway, `[host] agent ${agentId} could not be taken out of this gateway (${(error as Error).message})`);
    }
  }

  /**
   * After an agent of the gateway joined, stopped, started or was reconfigured (called holding the gateway's lock):
   * the process stops when nobody wants it any more, and otherwise takes the roster as recorded — applied while it runs
   * (`config.apply`, hot), written while it starts — and its stopped agents' jobs go quiet (`settleRoster`). A gateway
   * with no process (asleep, stopped, failed) is started or woken only when the change asks for it (`start`: an agent
   * joined or started); otherwise its next start writes the roster and settles the jobs, and a stop never wakes it.
   */
  private async rosterChanged(gateway: Agent, note: string, options: { start?: boolean } = {}): Promise<void> {
    const id = gateway.record.agentId;
    if (!this.rosters.wantsProcess(gateway)) {
      gateway.record.desired = 'stopped';
      gateway.record.hibernation = null;
      await this.saveRecord(gateway);
      await this.closeDoorbell(id);
      await this.stopGateway(gateway);
      this.fillWarmPool();
      return;
    }
    if (await this.applyRoster(gateway, note)) return;
    if (options.start) {
      await this.withRoom(id, () => this.spawnWanted(gateway), { needed: ACTIVE.has(gateway.status) ? false : undefined });
    } else {
      // One asleep wakes for the jobs of the agents that still want to run in it, not those of one stopped or deleted.
      await rewakeAsleep(gateway.record, this.rosters.wantedIds(gateway), this.wakeLeadMs, note, {
        save: () => this.saveRecord(gateway),
        log: (line) => this.log(gateway, line),
      });
    }
  }

  /**
   * The roster as recorded onto a gateway that has a process (called holding its lock): applied to a running one (and
   * its stopped agents' jobs quieted), written for one starting. False when it has none: its next start writes it.
   */
  private async applyRoster(gateway: Agent, note: string): Promise<boolean> {
    if (gateway.status === 'running' && gateway.child) {
      await this.pushConfig(gateway, note);
      // The roster is applied; jobs that could not be switched now are tried again when the gateway is next ready.
      await this.settleRoster(gateway).catch((error: Error) => this.log(gateway, `[host] agents' jobs not settled: ${error.message}`));
      return true;
    }
    if ((gateway.status === 'starting' || gateway.status === 'restarting') && gateway.record.port !== null) {
      // Marked before the writes (a gateway that turns ready meanwhile applies them, `applyRosterWritten`) and again
      // after them (its check may have come between); one that turned running meanwhile is applied to at once.
      gateway.rosterUnapplied = true;
      await this.writeSecretFile(gateway);
      await this.writeGatewayConfig(gateway, gateway.record.port);
      if ((gateway.status as AgentStatus) === 'running' && gateway.child) await this.pushConfig(gateway, note);
      else gateway.rosterUnapplied = true;
      return true;
    }
    return false;
  }

  /**
   * The gateway's config (with its roster) and secret file, applied to the running process with `config.apply` over the
   * loopback token connection: OpenClaw re-reads the secret file and applies the roster before it answers.
   */
  private async pushConfig(gateway: Agent, note: string, options: { unlessRead?: boolean } = {}): Promise<'applied' | 'read'> {
    const port = gateway.record.port;
    if (port === null) throw new Error('the gateway has no port');
    await this.writeSecretFile(gateway);
    const raw = `${JSON.stringify(this.gatewayConfig(gateway, port), null, 2)}\n`;
    return this.onGateway(gateway, (conn) => applyConfig(conn, raw, note, options));
  }

  private async onGateway<T>(gateway: Agent, fn: (conn: GatewayConnection) => Promise<T>): Promise<T> {
    const url = `ws://127.0.0.1:${gateway.record.port}`;
    const conn = await connectGateway({ url, token: this.gatewayToken(gateway), retryDeadlineMs: 0 });
    try {
      return await fn(conn);
    } finally {
      await conn.close().catch(() => undefined);
    }
  }

  /** `settleRoster` (shared/roster.ts) on the gateway's first agent and its members, over the loopback connection. */
  private settleRoster(gateway: Agent): Promise<void> {
    return settleRoster({
      on: (fn) => this.onGateway(gateway, fn),
      gateway,
      members: this.rosters.membersOf(gateway),
      save: (agent) => this.saveRecord(agent),
      log: (line) => this.log(gateway, line),
    });
  }

  /** A member stopped or started: its own state first, then its gateway's (`rosterChanged`). */
  private async setMemberWanted(member: Agent, desired: 'running' | 'stopped'): Promise<AgentState> {
    const gateway = this.rosters.gatewayOf(member);
    return exclusive(gateway, async () => {
      const id = member.record.agentId;
      if (member.record.desired !== desired || member.status !== (desired === 'running' ? 'running' : 'stopped')) {
        member.record.desired = desired;
        await this.saveRecord(member);
        this.setStatus(member, desired === 'running' ? 'running' : 'stopped', null);
        await this.rosterChanged(gateway, `agent ${id} ${desired === 'running' ? 'started' : 'stopped'}`, { start: desired === 'running' });
      } else if (desired === 'running' && !ACTIVE.has(gateway.status)) {
        await this.rosterChanged(gateway, `agent ${id} started`, { start: true }); // its gateway slept or stopped: wake it
      }
      return this.snapshot(member);
    });
  }

  /** The first agent of a gateway with members stopped or started: the gateway runs on for its members. */
  private async setFirstAgentStopped(gateway: Agent, stopped: boolean): Promise<AgentState> {
    gateway.record.agentStopped = stopped;
    await this.saveRecord(gateway);
    await this.rosterChanged(gateway, `its first agent ${stopped ? 'stopped' : 'started'}`, { start: !stopped });
    gateway.events.emit('change', gateway.status);
    return this.snapshot(gateway);
  }

  /**
   * A member's configuration: its model and key (a provider of its own), heartbeat and tools profile go into its entry,
   * applied at once; the rest of a configuration (gateway, channels, cron, session, exec and web tools) is the
   * gateway's, which its first agent's configuration sets. Variables of its own and messaging channels need a process of
   * its own: refused.
   */
  private async configureMember(member: Agent, changes: AgentChanges): Promise<AgentState> {
    const id = member.record.agentId;
    if (changes.agentEnv !== undefined && Object.keys(checkAgentEnv(changes.agentEnv)).length > 0) {
      throw new SharedGatewayError(`Agent ${id} shares its gateway with the customer's other agents: it cannot have variables of its own`);
    }
    if (Object.values(changes.channelTokens ?? {}).some(Boolean)) {
      throw new SharedGatewayError(
        `Agent ${id} shares its gateway with the customer's other agents: messaging channels need a gateway of its own`,
      );
    }
    const gateway = this.rosters.gatewayOf(member);
    return exclusive(gateway, async () => {
      if (changes.config) member.record.config = changes.config;
      if (changes.plan) member.record.plan = changes.plan;
      if (changes.llm !== undefined) {
        const current = openSealedSpec(this.secrets, member.record);
        sealSpecSecrets(this.secrets, member.record, { ...current, llm: changes.llm });
      }
      await this.saveRecord(member);
      if (gateway.status === 'running' && gateway.child) await this.pushConfig(gateway, `agent ${id} configured`);
      return this.snapshot(member);
    });
  }

  /**
   * A member leaves its gateway for good: `agents.delete` with its files while the gateway runs (hot; OpenClaw drops its
   * jobs and its sessions), its state there removed either way, then its own directory. The gateway stops when nobody
   * wants it any more, and goes altogether when its first agent was deleted before (`retire`).
   */
  private async deleteMember(member: Agent): Promise<void> {
    const gateway = this.agents.get(member.record.gatewayOf ?? '');
    if (!gateway) {
      // Its gateway's directory was lost: nothing of it runs anywhere, only its own directory is left.
      this.members.delete(member.record.agentId);
      await rm(this.paths(member.record.agentId).dir, { recursive: true, force: true });
      return;
    }
    await exclusive(gateway, async () => {
      const id = member.record.agentId;
      const openclawId = openclawAgentIdOf(id);
      const running = gateway.status === 'running' && gateway.child !== null;
      if (running) await this.onGateway(gateway, (conn) => leaveGateway(conn, openclawId));
      else {
        gateway.record.leftAgents = [...(gateway.record.leftAgents ?? []), openclawId];
        await this.saveRecord(gateway);
      }
      this.members.delete(id);
      await rm(join(this.paths(gateway.record.agentId).state, 'agents', openclawId), { recursive: true, force: true });
      await rm(this.paths(id).dir, { recursive: true, force: true });
      this.log(gateway, `[host] agent ${id} left this gateway and was deleted`);
      if (gateway.record.retired && this.rosters.membersOf(gateway).length === 0) await this.remove(gateway);
      else if (!this.rosters.wantsProcess(gateway)) await this.rosterChanged(gateway, `agent ${id} left`);
      // A gateway starting gets its files without it (else a config applied to it later would drop an entry, which
      // OpenClaw refuses); one asleep or stopped gets them with its next start, and sleeps on without waking for its jobs.
      else if (!running) await this.rosterChanged(gateway, `agent ${id} left`);
    });
  }

  /**
   * The first agent of a gateway with members is deleted: its memory goes now (its sessions, its workspace's notes; the
   * files of a running gateway's agent can only go with the process stopped, so its members see a restart), and the
   * gateway stays, nobody's agent, until its last member goes.
   */
  private async retire(gateway: Agent): Promise<void> {
    const wasRunning = gateway.child !== null;
    if (wasRunning) await this.stopGateway(gateway);
    const { state } = this.paths(gateway.record.agentId);
    for (const relative of this.memoryPaths(gateway)) await rm(join(state, relative), { recursive: true, force: true });
    gateway.record.retired = true;
    gateway.record.agentStopped = true;
    await this.saveRecord(gateway);
    this.log(gateway, '[host] its first agent was deleted (sessions and memory removed); the gateway stays for its members');
    if (wasRunning && this.rosters.wantsProcess(gateway)) await this.withRoom(gateway.record.agentId, () => this.spawnWanted(gateway));
    else await this.rosterChanged(gateway, 'its first agent was deleted');
  }

  /** What a memory reset of an agent with a gateway of its own removes; with members, only `main`'s sessions. */
  private memoryPaths(gateway: Agent): string[] {
    if (this.rosters.membersOf(gateway).length === 0) return MEMORY_PATHS;
    return memoryPathsOf(OWN_GATEWAY_AGENT_ID, 'workspace');
  }

  /** A member's memory reset: its sessions in the gateway's state and its workspace's notes, the gateway restarted. */
  private async resetMemberMemory(member: Agent): Promise<AgentState> {
    const gateway = this.rosters.gatewayOf(member);
    return exclusive(gateway, async () => {
      const id = member.record.agentId;
      const wasActive = ACTIVE.has(gateway.status);
      return this.withRoom(
        gateway.record.agentId,
        async () => {
          await this.stopGateway(gateway);
          await rm(join(this.paths(gateway.record.agentId).state, 'agents', openclawAgentIdOf(id)), { recursive: true, force: true });
          const { state } = this.paths(id);
          for (const relative of MEMORY_PATHS.filter((path) => path !== 'agents')) {
            await rm(join(state, relative), { recursive: true, force: true });
          }
          this.log(gateway, `[host] memory reset of agent ${id}: its sessions and notes removed; workspace seed files kept`);
          member.record.desired = 'running';
          await this.saveRecord(member);
          this.setStatus(member, 'running', null);
          await this.spawnWanted(gateway);
          return this.snapshot(member);
        },
        { needed: !wasActive },
      );
    });
  }

  /**
   * A member as the platform sees it: its own id, user and OpenClaw agent id, its gateway's process (address, pid,
   * times); its status its own while it joins or is stopped, else its gateway's (starting, hibernated …).
   */
  private memberSnapshot(member: Agent): AgentState {
    const gateway = this.agents.get(member.record.gatewayOf ?? '');
    const base = gateway ? this.processSnapshot(gateway) : this.processSnapshot(member);
    const follows = member.status === 'running';
    // Stopped, failed or still joining: nothing of the gateway's process is its own yet (or any more).
    const process = follows ? {} : { pid: null, startedAt: null, readyAt: null };
    const state: AgentState = {
      ...base,
      ...process,
      agentId: member.record.agentId,
      userId: member.record.userId,
      openclawAgentId: openclawAgentIdOf(member.record.agentId),
      sharesGatewayWith: gateway ? this.rosters.sharingWith(gateway, member) : [],
      status: follows ? (gateway?.status ?? 'error') : member.status,
      restarts: follows ? base.restarts : 0,
      lastError: follows ? (gateway ? base.lastError : 'Its gateway is gone') : member.lastError,
    };
    // Asleep with its gateway, it wakes with it.
    return withWakeTime(state, gateway ?? member);
  }

  /** Waits for a member's join, then for its gateway. */
  private async memberReady(member: Agent, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    if (member.status === 'starting') {
      await new Promise<void>((resolve) => {
        const check = () => {
          if (member.status === 'starting' && Date.now() < deadline && !this.shuttingDown) return;
          clearTimeout(timer);
          member.events.off('change', check);
          resolve();
        };
        const timer = setTimeout(check, Math.max(0, deadline - Date.now()));
        member.events.on('change', check);
      });
    }
    if (member.status !== 'running') throw new AgentStartError(member.lastError ?? `Agent ${member.record.agentId} is ${member.status}`);
    await this.waitForRunning(this.rosters.gatewayOf(member), Math.max(1, deadline - Date.now()));
  }

  // ---------------------------------------------------------------- hibernation

  /**
   * One pass of the idle check (every `idleCheckMs`): hibernated agents whose next job is due are woken; running ones
   * the gateway reports nothing for during `idleMs` are hibernated (shared/idle.ts). A gateway that cannot be asked
   * stays awake.
   */
  private async checkIdle(): Promise<void> {
    const idleMs = this.config.idleMs ?? 0;
    if (this.checkingIdle || this.shuttingDown || idleMs <= 0) return;
    this.checkingIdle = true;
    try {
      for (const agent of [...this.agents.values()]) {
        if (this.shuttingDown) return;
        if (agent.status === 'hibernated') {
          if (dueToWake(agent.record.hibernation, Date.now(), this.idleCheckMs)) {
            await this.wake(agent).catch((error: Error) => this.log(agent, `[host] could not wake for its due job: ${error.message}`));
          }
          continue;
        }
        const verdict = await this.askIdle(agent, idleMs);
        if (!verdict?.sleep) continue;
        await this.hibernateAgent(agent, verdict).catch((error: Error) => this.log(agent, `[host] hibernation failed: ${error.message}`));
      }
    } finally {
      this.checkingIdle = false;
    }
  }

  private get wakeLeadMs(): number {
    return this.config.wakeLeadMs ?? DEFAULT_WAKE_LEAD_MS;
  }

  private get idleCheckMs(): number {
    return this.config.idleCheckMs ?? DEFAULT_IDLE_CHECK_MS;
  }

  /** `askIdle` (shared/idle.ts) for a running agent, asking its gateway over the loopback token connection. */
  private async askIdle(agent: Agent, idleMs: number): Promise<IdleVerdict | null> {
    // Wall clock: `readyAt` and the gateway's activity times are dates.
    const readyAt = agent.readyAt;
    if (agent.status !== 'running' || readyAt === null) return null;
    const verdict = await askIdle(
      { readyAt, lastActiveAt: agent.lastActiveAt },
      { idleMs, wakeLeadMs: this.wakeLeadMs },
      {
        keptAwake: () => keepsAwake(agent.record.config, agent.record.secrets.channelTokens),
        read: async () => readActivityAt(`ws://127.0.0.1:${agent.record.port}`, { token: this.gatewayToken(agent) }),
      },
    );
    if (verdict) agent.lastActiveAt = verdict.lastActiveAt;
    return verdict;
  }

  /**
   * Stops an idle agent's gateway with its state kept: `hibernated` until `start` (a message) or `wakeLeadMs` before
   * `nextDueMs` (or its agents' due times, as the idle check reads them). Public for operators and tests; the idle check
   * calls it.
   */
  async hibernate(agentId: string, due: number | null | Due = null): Promise<AgentState> {
    return this.hibernateAgent(this.get(agentId), asDue(due));
  }

  private hibernateAgent(agent: Agent, due: Due): Promise<AgentState> {
    return exclusive(agent, async () => {
      if (agent.status !== 'running') return this.snapshot(agent);
      agent.record.hibernation = hibernationOf(due, this.wakeLeadMs);
      const { wakeAt } = agent.record.hibernation;
      await this.saveRecord(agent);
      this.log(agent, `[host] hibernating after being idle; ${wakeNote(wakeAt)}`);
      await this.stopGateway(agent);
      this.setStatus(agent, 'hibernated', null);
      await this.openDoorbell(agent);
      this.fillWarmPool();
      return this.snapshot(agent);
    });
  }

  /**
   * While an agent sleeps, the host listens on its gateway's port (and interfaces), so what comes to the agent's own
   * address is not lost: a webhook, a device or client connecting. Each is answered 503 with `Retry-After` (a wake is
   * a cold start, longer than a caller waits) and wakes the agent, so the retry finds it. The platform's own requests
   * (`PLATFORM_USER_AGENT`: a dashboard reading sessions, a health probe) get the 503 without waking it; the platform
   * wakes an agent by starting it (a message does). No doorbell if the port is taken meanwhile (logged).
   */
  private async openDoorbell(agent: Agent): Promise<void> {
    const agentId = agent.record.agentId;
    const port = agent.record.port;
    if (port === null || this.doorbells.has(agentId)) return;
    const ring = (request: { method?: string; url?: string; headers: { 'user-agent'?: string } }) => {
      if (request.headers['user-agent'] === PLATFORM_USER_AGENT || agent.status !== 'hibernated') return;
      this.log(agent, `[host] waking: ${request.method ?? 'a request'} ${(request.url ?? '').split('?')[0]} came to its address`);
      void this.wake(agent).catch((error: Error) => this.log(agent, `[host] could not wake: ${error.message}`));
    };
    const body = JSON.stringify({ error: 'The agent is waking up from hibernation: retry shortly' });
    const server = createHttpServer((request, response) => {
      ring(request);
      response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '30', connection: 'close' });
      response.end(body);
    });
    server.on('upgrade', (request, socket) => {
      ring(request);
      socket.end('HTTP/1.1 503 Service Unavailable\r\nRetry-After: 30\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    });
    server.on('clientError', (_error, socket) => socket.destroy());
    const listening = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, (this.config.bind ?? 'loopback') === 'lan' ? '0.0.0.0' : '127.0.0.1', () => resolve(true));
    });
    if (!listening) {
      this.log(agent, `[host] port ${port} is taken: requests to its address will not wake it while it sleeps`);
      return;
    }
    this.doorbells.set(agentId, server);
  }

  private async closeDoorbell(agentId: string): Promise<void> {
    const server = this.doorbells.get(agentId);
    if (!server) return;
    this.doorbells.delete(agentId);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  async start(agentId: string): Promise<AgentState> {
    const member = this.member(agentId);
    if (member) return this.setMemberWanted(member, 'running');
    const agent = this.get(agentId);
    if (agent.record.agentStopped) return exclusive(agent, () => this.setFirstAgentStopped(agent, false));
    return this.wake(agent);
  }

  /** Starts the agent's gateway unless it is running or starting (a start, a wake from hibernation). */
  private wake(agent: Agent): Promise<AgentState> {
    return exclusive(agent, async () => {
      if (ACTIVE.has(agent.status) && agent.status !== 'stopping') return this.snapshot(agent);
      return this.withRoom(agent.record.agentId, () => this.spawnWanted(agent));
    });
  }

  /** A new gateway for an agent that is wanted running, with a fresh crash back-off. */
  private async spawnWanted(agent: Agent): Promise<AgentState> {
    agent.record.desired = 'running';
    agent.restarts = 0;
    agent.backoff.reset();
    await this.saveRecord(agent);
    await this.spawnGateway(agent, { supervise: true });
    return this.snapshot(agent);
  }

  async stop(agentId: string): Promise<AgentState> {
    const member = this.member(agentId);
    if (member) return this.setMemberWanted(member, 'stopped');
    const agent = this.get(agentId);
    return exclusive(agent, async () => {
      if (this.rosters.membersOf(agent).length > 0) return this.setFirstAgentStopped(agent, true);
      agent.record.desired = 'stopped';
      agent.record.hibernation = null;
      await this.saveRecord(agent);
      await this.closeDoorbell(agentId);
      await this.stopGateway(agent);
      this.fillWarmPool(); // the room it had may take a warm gateway
      return this.snapshot(agent);
    });
  }

  /**
   * The gateway a lifecycle action on `agentId` acts on, and the agent's state to answer with after it: a member's
   * action is its gateway's (a restart, repair or update moves every agent in it), and like any of these it leaves
   * the agent wanted running.
   */
  private async gatewayFor(agentId: string): Promise<{ gateway: Agent; answer: () => AgentState }> {
    const member = this.member(agentId);
    if (!member) {
      const agent = this.get(agentId);
      agent.record.agentStopped = false; // saved as the gateway starts; its jobs are enabled again once it is ready
      return { gateway: agent, answer: () => this.snapshot(agent) };
    }
    if (member.record.desired !== 'running' || member.status === 'stopped') {
      member.record.desired = 'running';
      await this.saveRecord(member);
      this.setStatus(member, 'running', null);
    }
    return { gateway: this.rosters.gatewayOf(member), answer: () => this.snapshot(member) };
  }

  async restart(agentId: string): Promise<AgentState> {
    const { gateway: agent, answer } = await this.gatewayFor(agentId);
    await exclusive(agent, () =>
      this.withRoom(
        agent.record.agentId,
        async () => {
          await this.stopGateway(agent);
          return this.spawnWanted(agent);
        },
        { needed: !ACTIVE.has(agent.status) },
      ),
    );
    return answer();
  }

  async update(agentId: string, options: { version: string }): Promise<AgentState> {
    const { gateway: agent, answer } = await this.gatewayFor(agentId);
    const id = agent.record.agentId;
    await exclusive(agent, async () => {
      const previousVersion = agent.record.version;
      const targetVersion = options.version;
      const paths = this.paths(id);
      return this.withRoom(
        id,
        async () => {
          await this.stopGateway(agent);
          const stamp = new Date().toISOString().replace(/[:.]/g, '-');
          const backupPath = join(paths.backups, `${stamp}-${previousVersion}`);
          await mkdir(backupPath, { recursive: true, mode: 0o700 });
          await cp(paths.state, join(backupPath, 'state'), { recursive: true, preserveTimestamps: true });
          this.log(agent, `[host] state backed up to ${backupPath}; updating OpenClaw ${previousVersion} -> ${targetVersion}`);

          agent.record.version = targetVersion;
          agent.record.desired = 'running';
          agent.restarts = 0;
          agent.backoff.reset();
          await this.saveRecord(agent);
          return updateWithRollback({
            previousVersion,
            targetVersion,
            backup: backupPath,
            apply: async () => {
              await this.spawnGateway(agent, { supervise: false });
              await this.waitForRunning(agent, this.options.readyTimeoutMs);
              agent.supervise = true;
              await this.pruneBackups(paths.backups);
              return this.snapshot(agent);
            },
            rollBack: async (reason) => {
              this.log(agent, `[host] OpenClaw ${targetVersion} did not start (${reason}); rolling back to ${previousVersion}`);
              await this.stopGateway(agent);
              await rm(paths.state, { recursive: true, force: true });
              await cp(join(backupPath, 'state'), paths.state, { recursive: true, preserveTimestamps: true });
              agent.record.version = previousVersion;
              await this.saveRecord(agent);
              await this.spawnGateway(agent, { supervise: true });
              return `Rolled back to ${previousVersion}.`;
            },
          });
        },
        { needed: !ACTIVE.has(agent.status) },
      );
    });
    return answer();
  }

  async repair(agentId: string): Promise<AgentState> {
    const { gateway: agent, answer } = await this.gatewayFor(agentId);
    const id = agent.record.agentId;
    await exclusive(agent, () =>
      this.withRoom(
        id,
        async () => {
          await this.stopGateway(agent);
          const paths = this.paths(id);
          await this.ensureLayout(paths);
          // Lock files of a gateway that died hard; OpenClaw reclaims them too, but only after a wait.
          const lockRoot = join(paths.state, 'tmp');
          for (const name of await readdir(lockRoot).catch(() => [] as string[])) {
            if (name.startsWith('openclaw')) await rm(join(lockRoot, name), { recursive: true, force: true });
          }
          agent.record.port = null;
          agent.record.desired = 'running';
          agent.restarts = 0;
          agent.backoff.reset();
          agent.lastError = null;
          await this.saveRecord(agent);
          this.log(agent, '[host] repair: config re-written from the spec, state directory fixed');
          await this.spawnGateway(agent, { supervise: true });
          return this.snapshot(agent);
        },
        { needed: !ACTIVE.has(agent.status) },
      ),
    );
    return answer();
  }

  async resetMemory(agentId: string): Promise<AgentState> {
    const member = this.member(agentId);
    if (member) return this.resetMemberMemory(member);
    const { gateway: agent } = await this.gatewayFor(agentId);
    return exclusive(agent, async () => {
      const wasActive = ACTIVE.has(agent.status);
      return this.withRoom(
        agentId,
        async () => {
          await this.stopGateway(agent);
          const { state } = this.paths(agentId);
          const removed = this.memoryPaths(agent);
          for (const relative of removed) await rm(join(state, relative), { recursive: true, force: true });
          this.log(agent, `[host] memory reset: removed ${removed.join(', ')}; workspace seed files kept`);
          agent.record.desired = 'running';
          await this.saveRecord(agent);
          await this.spawnGateway(agent, { supervise: true });
          return this.snapshot(agent);
        },
        { needed: !wasActive },
      );
    });
  }

  /** Changes the stored spec (config, plan, tokens, LLM, agent variables). Config-only changes hot-reload; secret changes restart. */
  async configure(agentId: string, changes: AgentChanges): Promise<AgentState> {
    const member = this.member(agentId);
    if (member) return this.configureMember(member, changes);
    const agent = this.get(agentId);
    return exclusive(agent, async () => {
      const current = openSealedSpec(this.secrets, agent.record);
      const secretsChanged = changes.channelTokens !== undefined || changes.llm !== undefined || changes.agentEnv !== undefined;
      // Checked before anything is changed: a bad variable leaves the agent as it was.
      if (changes.agentEnv !== undefined) checkAgentEnv(changes.agentEnv);
      if (changes.config) agent.record.config = changes.config;
      if (changes.plan) agent.record.plan = changes.plan;
      if (secretsChanged) {
        sealSpecSecrets(this.secrets, agent.record, {
          ...current,
          channelTokens: changes.channelTokens ?? current.channelTokens,
          llm: changes.llm === undefined ? current.llm : changes.llm,
          agentEnv: changes.agentEnv ?? current.agentEnv,
        });
      }
      await this.saveRecord(agent);
      if (ACTIVE.has(agent.status) && agent.record.port !== null) {
        if (secretsChanged) {
          await this.stopGateway(agent);
          await this.spawnGateway(agent, { supervise: true });
        } else await this.writeGatewayConfig(agent, agent.record.port);
      }
      return this.snapshot(agent);
    });
  }

  async delete(agentId: string): Promise<void> {
    const member = this.member(agentId);
    if (member) return this.deleteMember(member);
    const agent = this.get(agentId);
    await exclusive(agent, () => (this.rosters.membersOf(agent).length > 0 ? this.retire(agent) : this.remove(agent)));
  }

  /** Stops the gateway and removes its directory (state, backups, logs, record); called holding its lock. */
  private async remove(agent: Agent): Promise<void> {
    const agentId = agent.record.agentId;
    agent.record.desired = 'stopped';
    await this.closeDoorbell(agentId);
    await this.stopGateway(agent);
    agent.logFile?.end();
    agent.logFile = null;
    const { dir } = this.paths(agentId);
    this.agents.delete(agentId);
    this.sampledAt.delete(agentId);
    this.dirs.delete(agentId);
    await rm(dir, { recursive: true, force: true });
    this.fillWarmPool();
  }

  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    clearInterval(this.memorySampler);
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.closing.abort(); // ends every wait for readiness
    await Promise.all([...this.doorbells.keys()].map((agentId) => this.closeDoorbell(agentId)));
    await Promise.all(this.pool.map((slot) => this.dropWarmSlot(slot)));
    await this.filler.settled(); // a warm gateway it was starting is dropped by the fill itself (the host is closed)
    await Promise.all(this.pool.map((slot) => this.dropWarmSlot(slot)));
    await Promise.all(
      [...this.agents.values()].map((agent) =>
        exclusive(agent, async () => {
          await this.stopGateway(agent);
          agent.logFile?.end();
          agent.logFile = null;
        }).catch(() => undefined),
      ),
    );
    // Every gateway of this host is stopped: no secret file of it is needed any more (one whose gateway crashed, too).
    await rm(this.secretsDir, { recursive: true, force: true });
    openHosts.delete(this);
    if (openHosts.size === 0) process.off('exit', stopGatewaysOnExit);
  }

  /**
   * Loads the agents of `<dataDir>/agents` (after a platform restart): stops gateways a previous host process left
   * behind, removes the warm gateways it left unadopted, starts the agents that should be running (while there is
   * room), then fills the warm pool. An agent that adopted a warm gateway lives in that gateway's directory.
   */
  async restore(): Promise<AgentState[]> {
    this.assertOpen();
    // Secret files a previous backend process left (killed, or gateways that crashed): each start writes its own again.
    await rm(this.secretsDir, { recursive: true, force: true });
    const names = await readdir(this.agentsDir).catch(() => [] as string[]);
    const records: Array<[string, AgentRecord]> = [];
    for (const name of names) {
      try {
        records.push([name, JSON.parse(await readFile(join(this.agentsDir, name, 'agent.json'), 'utf8')) as AgentRecord]);
      } catch {
        // not an agent's directory
      }
    }
    // Members first: a gateway's config lists them when it starts.
    for (const [, record] of records) {
      if (record.gatewayOf === undefined || !ID_PATTERN.test(record.agentId) || this.members.has(record.agentId)) continue;
      const member = this.newAgent(record);
      member.status = record.desired === 'running' ? 'running' : 'stopped';
      this.members.set(record.agentId, member);
    }
    for (const [name, record] of records) {
      if (record.gatewayOf !== undefined) continue;
      if (record.pid && isAlive(record.pid)) await this.killLeftover(record.pid);
      if (record.warmSlot) {
        if (!this.pool.some((slot) => slot.record.agentId === name)) await rm(join(this.agentsDir, name), { recursive: true, force: true });
        continue;
      }
      const agentId = record.agentId;
      if (!ID_PATTERN.test(agentId) || this.agents.has(agentId)) continue;
      if (name !== agentId) this.dirs.set(agentId, name);
      const agent = this.newAgent(record);
      this.agents.set(agentId, agent);
      if (record.hibernation) {
        agent.status = 'hibernated'; // woken by a message, a request to its address or its next due job; not by a restart
        await this.openDoorbell(agent);
      } else if (record.desired === 'running') {
        try {
          await this.wake(agent);
        } catch (error) {
          agent.status = 'error';
          agent.lastError = (error as Error).message;
        }
      }
    }
    if (this.config.warmPool === 'auto') this.poolTarget = autoWarmPoolSize(await memAvailableBytes());
    this.fillWarmPool();
    return this.list();
  }

  // ---------------------------------------------------------------- observation

  async status(agentId: string): Promise<AgentState> {
    return this.snapshot(this.member(agentId) ?? this.get(agentId));
  }

  async list(): Promise<AgentState[]> {
    const agents = [...this.agents.values()].filter((agent) => !agent.record.retired);
    return [...agents, ...this.members.values()].map((agent) => this.snapshot(agent));
  }

  async waitUntilReady(agentId: string, options: WaitOptions = {}): Promise<AgentState> {
    // By default, long enough for the host's own ready timeout to decide (`running` or `error`).
    const timeoutMs = options.timeoutMs ?? this.options.readyTimeoutMs + 5_000;
    const member = this.member(agentId);
    if (member) await this.memberReady(member, timeoutMs);
    else await this.waitForRunning(this.get(agentId), timeoutMs);
    return this.status(agentId);
  }

  /**
   * The process an agent runs in, for what is the process's (logs, stats, health): a member's is its gateway's; null for
   * a stopped member or a first agent stopped while its gateway runs on (nothing of theirs runs).
   */
  private processOf(agentId: string): Agent | null {
    const member = this.member(agentId);
    if (member) return member.status === 'running' || member.status === 'starting' ? this.rosters.gatewayOf(member) : null;
    const agent = this.get(agentId);
    return agent.record.agentStopped ? null : agent;
  }

  /** The gateway whose logs an agent reads: its own, a member's gateway's (OpenClaw writes one log per process). */
  private logSource(agentId: string): Agent {
    const member = this.member(agentId);
    return member ? this.rosters.gatewayOf(member) : this.get(agentId);
  }

  async logs(agentId: string, options: LogsOptions = {}): Promise<string[]> {
    const agent = this.logSource(agentId);
    const tail = Math.max(0, options.tail ?? 200);
    if (agent.logs.length > 0) return agent.logs.slice(-tail);
    const text = await readFile(join(this.paths(agent.record.agentId).logs, 'gateway.log'), 'utf8').catch(() => '');
    return text.split('\n').filter(Boolean).slice(-tail);
  }

  /** `tail -F` of `logs/gateway.log` (gateway output and the host's `[host]` lines), across restarts and rotation. */
  async *followLogs(agentId: string, options: FollowLogsOptions): AsyncIterable<string> {
    const source = this.logSource(agentId);
    const queue = new LineQueue(options.signal);
    const follower = await followFile(join(this.paths(source.record.agentId).logs, 'gateway.log'), (lines) => queue.push(...lines), {
      tail: options.tail ?? 0,
      ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    });
    try {
      yield* queue;
    } finally {
      follower.close();
    }
  }

  /** The workspace on this machine (it exists whether or not the gateway runs); see `workspace.ts`. */
  async workspace(agentId: string): Promise<AgentWorkspace> {
    if (!this.member(agentId)) this.get(agentId);
    return this.programWorkspace(this.paths(agentId));
  }

  private programWorkspace(paths: AgentPaths): AgentWorkspace {
    return new ProgramWorkspace({ root: paths.workspace, home: paths.home, node: [process.execPath] }, runProgramLocally);
  }

  async stats(agentId: string): Promise<AgentStats> {
    const pid = this.processOf(agentId)?.child?.pid;
    if (!pid) return { cpuPercent: 0, memoryBytes: 0, pids: 0, uptimeMs: 0 };
    return treeStats(pid);
  }

  async health(agentId: string): Promise<AgentHealth> {
    const agent = this.processOf(agentId);
    const port = agent?.record.port ?? null;
    if (!agent || port === null || !agent.child) return GATEWAY_DOWN;
    return probeGateway(`http://127.0.0.1:${port}`, () => ({
      authorization: `Bearer ${this.gatewayToken(agent)}`,
    }));
  }

  /** The spec as given (secrets decrypted), e.g. for a provider migration. */
  async spec(agentId: string): Promise<AgentSpec> {
    return openSealedSpec(this.secrets, (this.member(agentId) ?? this.get(agentId)).record);
  }

  /** Pids of the gateways this host runs. */
  gatewayPids(): number[] {
    return [...this.agents.values(), ...this.pool].flatMap((agent) => (agent.child?.pid ? [agent.child.pid] : []));
  }

  // ---------------------------------------------------------------- internals

  private assertOpen(): void {
    if (this.shuttingDown) throw new Error('The agent host is shut down');
  }

  /** An agent with a gateway of its own (a deleted one whose gateway stays for its members is not found). */
  private get(agentId: string): Agent {
    this.assertOpen();
    const agent = this.agents.get(agentId);
    if (!agent || agent.record.retired) throw new AgentNotFoundError(agentId);
    return agent;
  }

  /** An agent living in another agent's gateway, or undefined. */
  private member(agentId: string): Agent | undefined {
    this.assertOpen();
    return this.members.get(agentId);
  }

  private newAgent(record: AgentRecord): Agent {
    return {
      record,
      status: 'stopped',
      child: null,
      exited: null,
      generation: 0,
      supervise: true,
      stopping: false,
      startedAt: null,
      readyAt: null,
      restarts: 0,
      lastError: null,
      backoff: new Backoff(this.config.backoff),
      schedulerRestarts: new SchedulerRestarts(),
      restartTimer: null,
      logs: [],
      logFile: null,
      lock: Promise.resolve(),
      events: new EventEmitter(),
      lastActiveAt: null,
    };
  }

  private snapshot(agent: Agent): AgentState {
    if (agent.record.gatewayOf !== undefined) return this.memberSnapshot(agent);
    const state = { ...this.processSnapshot(agent), sharesGatewayWith: this.rosters.sharingWith(agent, agent) };
    // The first agent of a gateway running on for its members: stopped, whatever its process does.
    return withWakeTime(agent.record.agentStopped ? { ...state, status: 'stopped' } : state, agent);
  }

  /** The agent's process as it stands. */
  private processSnapshot(agent: Agent): AgentState {
    const port = agent.record.port;
    return {
      agentId: agent.record.agentId,
      userId: agent.record.userId,
      openclawAgentId: OWN_GATEWAY_AGENT_ID,
      status: agent.status,
      version: agent.record.version,
      url: port === null ? null : `http://127.0.0.1:${port}`,
      port,
      pid: agent.child?.pid ?? null,
      startedAt: agent.startedAt === null ? null : new Date(agent.startedAt).toISOString(),
      readyAt: agent.readyAt === null ? null : new Date(agent.readyAt).toISOString(),
      restarts: agent.restarts,
      lastError: agent.lastError,
      schedulerDown: agent.status === 'running' ? (agent.schedulerDown ?? null) : null,
    };
  }

  private setStatus(agent: Agent, status: AgentStatus, error?: string | null): void {
    agent.status = status;
    if (error !== undefined) agent.lastError = error;
    if (agent.starting && status !== 'starting') {
      // A start ends ready or failed; a stop (or sleep) in the middle of it is neither, and is not reported.
      const outcome = status === 'running' ? 'ready' : status === 'error' || status === 'restarting' ? 'failed' : null;
      if (outcome) {
        const event = {
          agentId: agent.record.agentId,
          kind: agent.starting.kind,
          outcome,
          seconds: (performance.now() - agent.starting.at) / 1000,
        } as const;
        for (const listener of this.startListeners) listener(event);
      }
      agent.starting = null;
    }
    agent.events.emit('change', status);
  }

  onAgentStart(listener: (event: AgentStartEvent) => void): () => void {
    this.startListeners.add(listener);
    return () => this.startListeners.delete(listener);
  }

  private async saveRecord(agent: Agent): Promise<void> {
    agent.record.updatedAt = new Date().toISOString();
    await writeRecord(this.paths(agent.record.agentId).registry, agent.record);
  }

  private async ensureLayout(paths: AgentPaths): Promise<void> {
    await mkdir(join(this.agentsDir, 'tmp'), { recursive: true, mode: 0o700 });
    for (const dir of [paths.dir, paths.state, paths.home, paths.logs, paths.backups]) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await chmod(dir, 0o700);
    }
    if (existsSync(paths.config)) await chmod(paths.config, 0o600);
    if (existsSync(paths.registry)) await chmod(paths.registry, 0o600);
  }

  /**
   * Samples the PSS of an agent's gateway tree and keeps its peak (saved with the agent when it grew by 5 % or more, so
   * a restarted host budgets it from what it was seen to need). Returns the current PSS (0 without a process).
   */
  private async measure(agent: Agent): Promise<number> {
    const pid = agent.child?.pid;
    if (!pid) return 0;
    const now = await treePssBytes(pid);
    const key = agent.status === 'starting' ? 'startPeakPssBytes' : 'peakPssBytes';
    const peak = agent.record[key] ?? 0;
    if (now > peak) {
      agent.record[key] = now;
      if (now >= peak * 1.05) await this.saveRecord(agent).catch(() => undefined);
    }
    return now;
  }

  /**
   * An agent's memory budget from its measurements: its peak once ready × margin (room for longer conversations), and
   * at least its start's transient peak; null when it was never measured.
   */
  private budgetOf(agent: Agent, margin: number): number | null {
    const { peakPssBytes: peak, startPeakPssBytes: start } = agent.record;
    if (!peak && !start) return null;
    return Math.max(peak ? budgetFromPeak(peak, margin) : 0, start ?? 0);
  }

  private async sampleMemory(): Promise<void> {
    const now = performance.now();
    for (const agent of [...this.agents.values(), ...this.pool]) {
      const id = agent.record.agentId;
      if (agent.status !== 'running') continue;
      // Wall clock: `readyAt` is a date. Young gateways every tick, the others every `memorySampleMs`.
      const young = agent.readyAt !== null && Date.now() - agent.readyAt < 180_000;
      if (!young && now - (this.sampledAt.get(id) ?? 0) < this.memorySampleMs) continue;
      this.sampledAt.set(id, now);
      await this.measure(agent).catch(() => undefined);
    }
  }

  /**
   * The gateways that hold room (a process, an active state, or a reservation; `self`: the one asking, not counted),
   * the PSS they hold now, and their budgets (`budgetOf`; `memoryPerAgentBytes` for one not measured yet). A new
   * gateway is budgeted at the largest measured budget on this host (any agent ever measured), else the default.
   */
  private async activeAgentsMemory(self: string) {
    const margin = this.config.memoryMargin ?? DEFAULT_MEMORY_MARGIN;
    const counted = new Set<string>([self]);
    let held = 0;
    const budgets: number[] = [];
    let largest = 0;
    for (const agent of [...this.agents.values(), ...this.pool]) {
      const id = agent.record.agentId;
      const budget = this.budgetOf(agent, margin);
      if (budget) largest = Math.max(largest, budget);
      if (counted.has(id) || (!ACTIVE.has(agent.status) && !agent.child)) continue;
      counted.add(id);
      held += await this.measure(agent);
      if (budget) budgets.push(budget);
    }
    const reservedOnly = [...this.reserved].filter((id) => !counted.has(id)).length;
    return { active: counted.size - 1 + reservedOnly, held, budgets, newAgentBytes: largest > 0 ? largest : undefined };
  }

  /**
   * Runs `fn` (which starts the gateway `id`: an agent being created or (re)started, or a warm one) once there is room
   * for it, holding that room until `fn` ends (by then the gateway has a process, which counts). Throws `HostFullError`
   * when it does not fit. An agent comes before the warm pool: while it does not fit, warm gateways are stopped to make
   * room (`evictWarm: false` for a warm gateway itself). `needed: false` (a gateway that already holds room) skips it.
   */
  private async withRoom<T>(id: string, fn: () => Promise<T>, options: { evictWarm?: boolean; needed?: boolean } = {}): Promise<T> {
    if (options.needed === false) return fn();
    await exclusive(this.capacityChecks, () => this.reserveRoom(id, options.evictWarm !== false));
    try {
      return await fn();
    } finally {
      this.reserved.delete(id);
    }
  }

  /** One capacity check at a time (`withRoom`): passes by reserving the room for `id`. */
  private async reserveRoom(id: string, evictWarm: boolean): Promise<void> {
    for (;;) {
      try {
        await this.checkCapacity(id);
        this.reserved.add(id);
        return;
      } catch (error) {
        if (!(error instanceof HostFullError) || !evictWarm) throw error;
        const slot = this.pool[0];
        if (slot) {
          await this.dropWarmSlot(slot);
          this.fillWarmPool(); // it waits for the agent to start, then finds out whether there is still room for one
          continue;
        }
        // No warm gateway left to give up: an agent idle long enough sleeps early (never for a warm gateway's sake).
        if (!(await this.makeRoomFromIdle(id))) throw error;
      }
    }
  }

  /** Makes room for `requester` by hibernating the agent idle the longest (shared/idle.ts `hibernateIdlest`). */
  private makeRoomFromIdle(requester: string): Promise<boolean> {
    return hibernateIdlest(requester, this.agents.values(), this.config, {
      ask: (agent, idleMs) => this.askIdle(agent, idleMs),
      log: (agent, line) => this.log(agent, line),
      hibernate: (agent, due) => this.hibernateAgent(agent, due),
    });
  }

  private async checkCapacity(self: string): Promise<void> {
    const { active, held, budgets, newAgentBytes } = await this.activeAgentsMemory(self);
    const input = {
      availableBytes: await memAvailableBytes(),
      agentsRssBytes: held,
      activeAgents: Math.max(0, active),
      memoryPerAgentBytes: this.config.memoryPerAgentBytes ?? DEFAULT_MEMORY_PER_AGENT_BYTES,
      measuredBudgetsBytes: budgets,
      ...(newAgentBytes === undefined ? {} : { newAgentBytes }),
      reserveBytes: this.config.reserveBytes ?? DEFAULT_RESERVE_BYTES,
      maxAgents: this.config.maxAgents,
    };
    const capacity = computeCapacity(input);
    if (!capacity.hasRoom) throw new HostFullError(capacityMessage(capacity, input));
  }

  /** The gateway's OpenClaw config: its secrets are SecretRefs into its secret file (`writeSecretFile`). */
  private gatewayConfig(agent: Agent, port: number): Record<string, unknown> {
    const paths = this.paths(agent.record.agentId);
    const config = buildOpenClawConfig(openSealedSpec(this.secrets, agent.record), {
      port,
      bind: this.config.bind ?? 'loopback',
      workspaceDir: paths.workspace,
      logFile: join(paths.logs, 'openclaw.log'),
      secretFile: this.secretFile(agent),
      alwaysWarmUp: agent.record.warmSlot === true,
    });
    return applyRoster(config, this.roster(agent), { mainStopped: agent.record.agentStopped === true || agent.record.retired === true });
  }

  /** Writes the config, keeping OpenClaw's own `meta` block from the file (`configMeta`; e.g. an adopted warm gateway's). */
  private async writeGatewayConfig(agent: Agent, port: number): Promise<void> {
    const file = this.paths(agent.record.agentId).config;
    const current = await readFile(file, 'utf8').then(
      (text) => JSON.parse(text) as unknown,
      () => null,
    );
    const config = this.gatewayConfig(agent, port);
    const meta = configMeta(current);
    if (meta !== undefined) config.meta = meta;
    await writeFileAtomic(file, `${JSON.stringify(config, null, 2)}\n`);
  }

  /**
   * Where the gateway's secrets are while it runs: one file per agent directory (so a warm gateway keeps its file when an
   * agent adopts it), in memory-backed storage outside the data directory, removed when the gateway stops.
   */
  private secretFile(agent: Agent): string {
    return join(this.secretsDir, `${this.dirs.get(agent.record.agentId) ?? agent.record.agentId}.json`);
  }

  /** Written atomically (a new inode with one link: OpenClaw refuses hard-linked secret files), mode 0600. */
  private async writeSecretFile(agent: Agent): Promise<void> {
    await mkdir(this.secretsDir, { recursive: true, mode: 0o700 });
    await chmod(this.secretsDir, 0o700);
    const contents = { ...secretFileContents(openSealedSpec(this.secrets, agent.record)), ...rosterSecrets(this.roster(agent)) };
    await writeFileAtomic(this.secretFile(agent), JSON.stringify(contents));
  }

  /**
   * The platform's skills, written again before every start (create, restart, repair, update, restore), so every
   * agent has the current version. A failure is logged, not fatal: the agent works without them.
   */
  private async installSkills(agent: Agent, paths: AgentPaths): Promise<void> {
    try {
      await mkdir(paths.workspace, { recursive: true, mode: 0o700 });
      await installBusSkill(this.programWorkspace(paths));
    } catch (error) {
      this.log(agent, `[host] the ${BUS_SKILL_NAME} skill was not installed: ${(error as Error).message}`);
    }
  }

  /** The gateway's whole environment, from scratch: nothing of the platform's own environment is passed on. */
  private gatewayEnv(agent: Agent, runtime: OpenClawRuntime): Record<string, string> {
    const paths = this.paths(agent.record.agentId);
    return {
      PATH: `${dirname(runtime.nodeBin)}:/usr/local/bin:/usr/bin:/bin`,
      HOME: paths.home,
      // Shared by all gateways: OpenClaw keeps Node's compile cache under the temp dir (warm cache ≈ 2 s faster start).
      TMPDIR: join(this.agentsDir, 'tmp'),
      LANG: 'C.UTF-8',
      MALLOC_ARENA_MAX: '2',
      OPENCLAW_STATE_DIR: paths.state,
      OPENCLAW_CONFIG_PATH: paths.config,
      OPENCLAW_NO_AUTO_UPDATE: '1',
      OPENCLAW_DISABLE_BONJOUR: '1',
      OPENCLAW_OFFLINE: '1',
      ...(this.config.nodeOptions ? { NODE_OPTIONS: this.config.nodeOptions } : {}),
      // The agent's own variables; every secret the config refers to is in the secret file instead.
      ...checkAgentEnv(openSealedSpec(this.secrets, agent.record).agentEnv),
    };
  }

  private log(agent: Agent, line: string): void {
    agent.logs.push(line);
    if (agent.logs.length > this.options.logLines) agent.logs.splice(0, agent.logs.length - this.options.logLines);
    agent.logFile?.write(`${line}\n`);
  }

  private async openLogFile(agent: Agent): Promise<void> {
    if (agent.logFile) return;
    const file = join(this.paths(agent.record.agentId).logs, 'gateway.log');
    const size = await stat(file).then(
      (s) => s.size,
      () => 0,
    );
    if (size > this.options.maxLogFileBytes) await rename(file, `${file}.1`);
    agent.logFile = createWriteStream(file, { flags: 'a', mode: 0o600 });
    agent.logFile.on('error', () => undefined);
  }

  private pipeLines(agent: Agent, stream: NodeJS.ReadableStream | null, generation: number): void {
    if (!stream) return;
    let pending = '';
    const line = (text: string) => {
      this.log(agent, text);
      if (schedulerFailure([text])) this.onSchedulerFailure(agent, generation, text);
    };
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const text of lines) line(text);
    });
    stream.on('end', () => {
      if (pending) line(pending);
      pending = '';
    });
  }

  /**
   * The gateway's output said its scheduler did not start (shared/scheduler-start.ts). While it starts, `pollReady`
   * deals with it once the warm-up is over (one start, not two at once); once running, it is started again at once.
   */
  private onSchedulerFailure(agent: Agent, generation: number, line: string): void {
    if (agent.generation !== generation || agent.schedulerFailed?.generation === generation) return;
    agent.schedulerFailed = { generation, line };
    if (agent.status !== 'running') return;
    void exclusive(agent, async () => {
      if (agent.generation === generation && agent.status === 'running') await this.startAgainForScheduler(agent, generation, line);
    }).catch((error: Error) => this.setStatus(agent, 'error', error.message));
  }

  /**
   * Starts the gateway again for its scheduler, or gives up (and says so) after `SCHEDULER_RESTARTS` in a row; true
   * when it started again. From `pollReady` it runs without the agent's lock, as the rest of a start does: the caller
   * that started the gateway may hold that lock while it waits for `running` (an update), and waits on through this
   * (the agent stays `starting`).
   */
  private async startAgainForScheduler(agent: Agent, generation: number, line: string): Promise<boolean> {
    const next = agent.schedulerRestarts.decide(line);
    this.log(agent, next.log);
    if (!next.restart) {
      agent.schedulerDown = next.lastError;
      return false;
    }
    await this.stopGateway(agent, { startsAgain: true });
    // Stopped, restarted or deleted by someone else meanwhile: theirs is the last word.
    if (agent.generation !== generation || agent.record.desired !== 'running' || this.shuttingDown) {
      if (!agent.child && agent.status === 'starting') this.setStatus(agent, 'stopped');
      return true;
    }
    agent.schedulerRestarts.startingAgain();
    await this.spawnGateway(agent, { supervise: agent.supervise });
    return true;
  }

  private async spawnGateway(agent: Agent, options: { supervise: boolean }): Promise<void> {
    this.assertOpen();
    const runtime = this.runtimeFor(agent.record.version);
    const problem = runtimeProblem(runtime);
    if (problem) {
      this.setStatus(agent, 'error', problem);
      this.log(agent, `[host] cannot start: ${problem}`);
      throw new AgentStartError(problem);
    }
    if (agent.child) await this.stopGateway(agent); // e.g. a gateway in `error` that never became ready
    const kind = agent.nextStartKind ?? (agent.record.hibernation ? 'wake' : agent.record.warmSlot ? 'warm-pool' : 'start');
    agent.nextStartKind = undefined;
    agent.schedulerRestarts.started();
    agent.schedulerFailed = null;
    agent.schedulerDown = null;
    if (agent.record.hibernation) {
      this.log(agent, `[host] waking from hibernation (asleep since ${agent.record.hibernation.since})`);
      agent.record.hibernation = null;
    }
    await this.closeDoorbell(agent.record.agentId); // its port is the gateway's again
    agent.lastActiveAt = null;
    const paths = this.paths(agent.record.agentId);
    await this.ensureLayout(paths);
    let port = agent.record.port;
    if (port === null || !(await portIsFree(port))) port = await freePort();
    agent.record.port = port;
    agent.rosterUnapplied = false; // the process reads the roster as it is now
    await this.writeSecretFile(agent);
    await this.writeGatewayConfig(agent, port);
    await this.openLogFile(agent);
    await this.installSkills(agent, paths);

    const child = spawn(runtime.nodeBin, [runtime.entry, 'gateway', 'run', '--port', String(port)], {
      cwd: paths.home, // never the repository: OpenClaw reads a `.env` from its working directory
      env: this.gatewayEnv(agent, runtime),
      detached: true, // its own process group, so a Ctrl-C of the platform does not kill it mid-write
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const generation = ++agent.generation;
    agent.child = child;
    agent.supervise = options.supervise;
    agent.stopping = false;
    // Wall clock: `startedAt` and `readyAt` are reported as dates, and the ready deadline and the healthy time run from them.
    agent.startedAt = Date.now();
    agent.readyAt = null;
    agent.exited = new Promise((resolve) => {
      let done = false;
      const finish = (code: number | null, signal: NodeJS.Signals | null, error?: Error) => {
        if (done) return;
        done = true;
        resolve();
        this.onExit(agent, generation, code, signal, error);
      };
      child.once('exit', (code, signal) => finish(code, signal));
      child.once('error', (error) => finish(null, null, error));
    });
    this.pipeLines(agent, child.stdout, generation);
    this.pipeLines(agent, child.stderr, generation);
    agent.record.pid = child.pid ?? null;
    await this.saveRecord(agent);
    this.log(agent, `[host] started OpenClaw ${runtime.version} (pid ${child.pid}) on 127.0.0.1:${port}`);
    agent.starting = { kind, at: performance.now() };
    this.setStatus(agent, 'starting', null);
    void this.pollReady(agent, generation);
  }

  private async pollReady(agent: Agent, generation: number): Promise<void> {
    const deadline = (agent.startedAt ?? Date.now()) + this.options.readyTimeoutMs;
    const port = agent.record.port;
    while (agent.generation === generation && agent.status === 'starting' && agent.child) {
      // A gateway's start is its idle peak (0.8–0.95 GB): sampled as it happens.
      await this.measure(agent);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) });
        const body = (await res.json().catch(() => ({}))) as { ready?: boolean };
        if (res.status === 200 && body.ready === true) {
          if (agent.generation !== generation || agent.status !== 'starting') return;
          await this.applyRosterWritten(agent);
          await this.warmUp(agent, deadline);
          if (agent.generation !== generation || agent.status !== 'starting') return;
          // Once more for a change made during the warm-up; none can come between this and `running` (no await).
          await this.applyRosterWritten(agent);
          if (agent.generation !== generation || agent.status !== 'starting') return;
          const failed = agent.schedulerFailed;
          if (failed?.generation === generation && (await this.startAgainForScheduler(agent, generation, failed.line))) {
            return; // that start reports ready
          }
          if (agent.generation !== generation || agent.status !== 'starting') return;
          agent.readyAt = Date.now();
          this.log(agent, `[host] ready after ${((agent.readyAt - (agent.startedAt ?? agent.readyAt)) / 1000).toFixed(1)} s`);
          this.setStatus(agent, 'running', null);
          const record = agent.record;
          if (this.rosters.membersOf(agent).length > 0 || record.quietJobs?.length || record.leftAgents?.length || record.agentStopped) {
            void exclusive(agent, () => this.settleRoster(agent)).catch((error: Error) =>
              this.log(agent, `[host] agents' jobs not settled: ${error.message}`),
            );
          }
          return;
        }
      } catch {
        // not listening yet
      }
      if (Date.now() >= deadline) {
        if (agent.generation === generation && agent.status === 'starting') {
          const message = `Gateway did not become ready within ${Math.round(this.options.readyTimeoutMs / 1000)} s`;
          this.log(agent, `[host] ${message}`);
          this.setStatus(agent, 'error', message);
        }
        return;
      }
      await sleep(this.options.readyPollMs);
    }
  }

  /** `applyRosterWritten` (shared/roster.ts) while this start is under way, over the loopback connection. */
  private applyRosterWritten(agent: Agent): Promise<void> {
    return applyRosterWritten(
      agent,
      () => agent.status === 'starting',
      (note, options) => this.pushConfig(agent, note, options),
      (line) => this.log(agent, line),
    );
  }

  /** The agent's gateway token, unsealed. */
  private gatewayToken(agent: Agent): string {
    return this.secrets.decrypt(agent.record.secrets.gatewayToken, secretAad(agent.record.agentId, 'gatewayToken'));
  }

  /**
   * The first turn's lazy work, done before the agent is called running (shared/warm-up.ts). Bounded by what is left of
   * the ready deadline (at least 30 s): a gateway that answers /readyz is not failed for a slow warm-up.
   */
  private async warmUp(agent: Agent, deadline: number): Promise<void> {
    const written = JSON.parse(await readFile(this.paths(agent.record.agentId).config, 'utf8').catch(() => '{}')) as Record<
      string,
      unknown
    >;
    if (!carriesWarmUp(written)) {
      this.log(agent, '[host] /readyz; no model is named, so there is no first turn to prepare');
      return;
    }
    const port = agent.record.port;
    const token = this.gatewayToken(agent);
    const baseUrl = `http://127.0.0.1:${port}`;
    this.log(
      agent,
      `[host] /readyz after ${((Date.now() - (agent.startedAt ?? Date.now())) / 1000).toFixed(1)} s; preparing the first turn`,
    );
    const result = await warmUpGateway({
      baseUrl,
      token,
      // From loopback a token connection has the operator scopes the clean-up needs.
      connect: () => connectGateway({ url: baseUrl.replace(/^http/, 'ws'), token, retryDeadlineMs: 0 }),
      timeoutMs: Math.max(30_000, deadline - Date.now()),
    });
    this.log(agent, warmUpLogLine(result));
  }

  private onExit(agent: Agent, generation: number, code: number | null, signal: NodeJS.Signals | null, error?: Error): void {
    if (agent.generation !== generation) return;
    agent.child = null;
    agent.record.pid = null;
    const how = error ? `failed to spawn: ${error.message}` : `exited with ${signal ? `signal ${signal}` : `code ${code}`}`;
    this.log(agent, `[host] gateway ${how}`);
    if (agent.stopping) return; // stopGateway sets the status
    if (!agent.supervise || this.shuttingDown || agent.record.desired !== 'running') {
      this.setStatus(agent, 'error', `Gateway ${how}`);
      void rm(this.secretFile(agent), { force: true }); // not restarting: its secrets have no reader
      return;
    }
    const healthyFor = agent.readyAt === null ? 0 : Date.now() - agent.readyAt;
    const delay = agent.backoff.next(healthyFor);
    agent.restarts += 1;
    this.log(agent, `[host] restarting in ${delay} ms (restart ${agent.restarts})`);
    this.setStatus(agent, 'restarting', `Gateway ${how}`);
    agent.restartTimer = setTimeout(() => {
      agent.restartTimer = null;
      void exclusive(agent, async () => {
        if (agent.status !== 'restarting' || this.shuttingDown) return;
        await this.spawnGateway(agent, { supervise: true });
      }).catch((failure: unknown) => {
        this.setStatus(agent, 'error', (failure as Error).message);
      });
    }, delay);
    agent.restartTimer.unref();
  }

  /**
   * SIGTERM, wait, then SIGKILL for the whole process tree. Resolves when the gateway is gone.
   * `kill`: SIGKILL at once, for a warm gateway nobody adopted (nothing to drain; one still starting was seen to ignore
   * SIGTERM past the backend's own shutdown grace, and live on as an orphan).
   * `startsAgain`: the caller starts it again at once, as part of the same start (its scheduler did not start): it is
   * `starting` throughout, never `stopping` or `stopped` (a caller following the start would take those as its end).
   */
  private async stopGateway(agent: Agent, options: { kill?: boolean; startsAgain?: boolean } = {}): Promise<void> {
    if (agent.restartTimer) {
      clearTimeout(agent.restartTimer);
      agent.restartTimer = null;
    }
    const shown = (status: AgentStatus) => this.setStatus(agent, options.startsAgain ? 'starting' : status);
    const child = agent.child;
    if (!child?.pid) {
      if (agent.status !== 'stopped') shown('stopped');
      return;
    }
    agent.stopping = true;
    shown('stopping');
    const tree = await processTree(child.pid);
    const exited = agent.exited ?? Promise.resolve();
    let timedOut = true;
    if (!options.kill) {
      killQuietly(child.pid, 'SIGTERM');
      timedOut = await Promise.race([exited.then(() => false), sleep(this.options.stopTimeoutMs).then(() => true)]);
    }
    if (timedOut) {
      if (!options.kill) this.log(agent, `[host] no exit ${this.options.stopTimeoutMs} ms after SIGTERM: SIGKILL`);
      for (const pid of [...(await processTree(child.pid)), ...tree]) killQuietly(pid, 'SIGKILL');
      await exited;
    }
    // Helpers that outlived the gateway (they normally exit with it): those of the tree read before the stop, and all of
    // its process group (it was spawned detached, so the group is its pid): a helper started after that read (a gateway
    // killed as it starts, seen leaking from a warm gateway killed at shutdown) or one whose own parent exited is not in
    // the tree, but is in the group.
    for (const pid of tree) if (pid !== child.pid && isAlive(pid)) killQuietly(pid, 'SIGKILL');
    killQuietly(-child.pid, 'SIGKILL');
    agent.stopping = false;
    agent.child = null;
    agent.startedAt = null;
    agent.readyAt = null;
    agent.record.pid = null;
    await rm(this.secretFile(agent), { force: true });
    shown('stopped');
    await this.saveRecord(agent).catch(() => undefined);
  }

  private async killLeftover(pid: number): Promise<void> {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes('openclaw')) return; // the pid was reused by something else
    // Spawned detached by a host, it leads a process group of its own (field 5 of /proc/<pid>/stat, after the name).
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const leadsGroup = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === pid;
    const tree = await processTree(pid);
    killQuietly(pid, 'SIGTERM');
    const deadline = performance.now() + this.options.stopTimeoutMs;
    while (isAlive(pid) && performance.now() < deadline) await sleep(200);
    for (const p of tree) if (isAlive(p)) killQuietly(p, 'SIGKILL');
    if (leadsGroup) killQuietly(-pid, 'SIGKILL'); // as `stopGateway` does
  }

  private waitForRunning(agent: Agent, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (agent.status === 'running') finish();
        // A shutdown ends every wait at once: a wait holds the agent's lock (an update, an adoption), and the shutdown
        // needs that lock to stop the gateway.
        else if (this.shuttingDown) finish(new AgentStartError('The agent host is shutting down'));
        // `stopped` on the way to a new start (restart, a failed adoption's fallback) is not the end of the wait.
        else if (agent.status === 'error' || (agent.status === 'stopped' && (agent.record.desired !== 'running' || this.shuttingDown))) {
          finish(new AgentStartError(agent.lastError ?? `Agent ${agent.record.agentId} is ${agent.status}`));
        }
      };
      const timer = setTimeout(
        () => finish(new AgentStartError(`Agent ${agent.record.agentId} not ready within ${Math.round(timeoutMs / 1000)} s`)),
        timeoutMs,
      );
      const finish = (error?: Error) => {
        clearTimeout(timer);
        agent.events.off('change', check);
        this.closing.signal.removeEventListener('abort', check);
        if (error) reject(error);
        else resolve();
      };
      agent.events.on('change', check);
      this.closing.signal.addEventListener('abort', check);
      check();
    });
  }

  private async pruneBackups(dir: string): Promise<void> {
    await pruneOldest(await readdir(dir).catch(() => [] as string[]), this.options.keepBackups, (name) =>
      rm(join(dir, name), { recursive: true, force: true }),
    );
  }
}
