import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { type DeviceIdentity, type GatewayConnection, connectGateway } from '@aop/gateway-client';
import { DomainError } from '@aop/core';
import Docker from 'dockerode';
import { BUS_SKILL_NAME, busSkillFiles } from '../shared/bus-skill.js';
import { DEFAULT_RESERVE_BYTES, autoWarmPoolSize, capacityMessage } from '../shared/capacity.js';
import {
  type EngineStats,
  FrameDemuxer,
  demuxFrames,
  demuxLogs,
  dockerStats,
  parseImageRef,
  readTarFile,
  tarArchive,
} from './docker-wire.js';
import {
  type AgentChanges,
  type AgentHealth,
  type AgentHost,
  type AgentSpec,
  type AgentState,
  type AgentStats,
  type AgentStatus,
  type ControlCredentials,
  type FollowLogsOptions,
  type LlmSpec,
  type LogsOptions,
  type WaitOptions,
  type WarmPoolStatus,
  AgentExistsError,
  AgentNotFoundError,
  AgentStartError,
  HostFullError,
  SharedGatewayError,
  UpdateFailedError,
  OWN_GATEWAY_AGENT_ID,
} from '../host.js';
import { MEMORY_PATHS, memoryPathsOf } from '../shared/state-layout.js';
import { approveCommand, assertApproved } from '../shared/approve-device.js';
import { LineQueue, LineSplitter, splitTimestampNs } from '../shared/log-follow.js';
import { pumpLogLines } from '../shared/log-pump.js';
import {
  MESSAGING_CHANNELS,
  buildOpenClawConfig,
  carriesWarmUp,
  checkAgentEnv,
  configMeta,
  sameAgentEnv,
  secretFileContents,
} from '../shared/openclaw-config.js';
import { approvePlatformDevice } from '../shared/pairing.js';
import { exclusive, recordFile, writeRecord } from '../shared/registry.js';
import { settleWithin } from '../shared/settle-within.js';
import { PINNED_OPENCLAW_VERSION } from '../shared/runtime.js';
import { type SecretBox, newSealedRecord, openSealedSpec, sealSpecSecrets, secretAad, secretBoxFor } from '../shared/sealed-spec.js';
import { warmUpGateway, warmUpLogLine } from '../shared/warm-up.js';
import { POOL_NEEDS_DEVICE, type PoolConnection, PoolFiller, applyAdoption, openPoolConnection } from '../shared/adoption.js';
import {
  DEFAULT_IDLE_CHECK_MS,
  DEFAULT_WAKE_LEAD_MS,
  type Due,
  asDue,
  type IdleVerdict,
  askIdle,
  dueToWake,
  hibernateIdlest,
  hibernationOf,
  keepsAwake,
  readActivityAt,
  rewakeAsleep,
  wakeNote,
} from '../shared/idle.js';
import { type AgentWorkspace, ProgramWorkspace } from '../shared/workspace.js';
import {
  RosterBook,
  type RosterMark,
  type RosterMember,
  applyConfig,
  applyRoster,
  applyRosterWritten,
  chooseCustomerGateway,
  leaveGateway,
  memberWorkspaceDir,
  openclawAgentIdOf,
  rosterSecrets,
  settleRoster,
  withdrawJoin,
} from '../shared/roster.js';
import { GATEWAY_DOWN, connectControl, probeGateway } from '../shared/gateway-probe.js';
import { SchedulerRestarts, schedulerFailure } from '../shared/scheduler-start.js';
import { messageOf, pruneOldest, updateWithRollback } from '../shared/update.js';
import {
  ContainerSpec,
  DOCKER_LABELS,
  type DockerAgentRecord,
  GATEWAY_PORT,
  GIB,
  PORT_KEY,
  SECOND_NS,
  SECRET_FILE_NAME,
  agentIdOfName,
  dockerContainerName,
  dockerLimits,
  dockerStateVolumeName,
  ownLabels,
  stateVolumeOf,
} from './container.js';

export { DOCKER_LABELS, dockerContainerName, dockerLimits, dockerStateVolumeName } from './container.js';

/**
 * The Docker engine cannot be reached (socket missing, connection refused, no permission on the socket). Agent
 * lifecycle calls then fail with 500 and this message (spec §4.15: "failures return 500 with a message when the
 * provisioning infrastructure is unavailable"); `/health` reports `docker: unavailable` through `ping()`.
 */
export class DockerUnavailableError extends Error {
  override readonly name = 'DockerUnavailableError';
  readonly statusCode = 500;
  constructor(
    readonly socketPath: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    const why = code === 'EACCES' || code === 'EPERM' ? 'permission denied on the socket' : code === 'ENOENT' ? 'no socket there' : code;
    super(`Docker engine is not reachable at ${socketPath} (${why})`, options);
  }
}

/** The engine answered a request with an error status (`engineStatus`), or a pull stream ended with an error. */
export class DockerEngineError extends Error {
  override readonly name = 'DockerEngineError';
  constructor(
    /** What the host was doing, e.g. `pull ghcr.io/openclaw/openclaw:2026.9.6`. */
    readonly operation: string,
    /** The engine's own message. */
    readonly detail: string,
    readonly engineStatus: number | null,
    options?: { cause?: unknown },
  ) {
    super(`Docker engine: ${operation} failed${engineStatus === null ? '' : ` (HTTP ${engineStatus})`}: ${detail}`, options);
  }
}

export interface DockerHostOptions {
  /** The platform's data directory; the registry is `<dataDir>/docker-agents/<agentId>.json`. */
  dataDir: string;
  /** 32-byte key (Buffer, 64 hex characters or base64) sealing the tokens in the registry. Either this or `secrets`. */
  encryptionKey?: Buffer | string;
  secrets?: SecretBox;
  /** The Docker Engine API socket (default `/var/run/docker.sock`). */
  socketPath?: string;
  /** Engine API version spoken (default `1.44`: Docker Engine 25 and later, which the health check's `StartInterval` needs). */
  apiVersion?: string;
  /** Image of agents created without a version (default `ghcr.io/openclaw/openclaw:<pinned version>`). `update({ version })` moves to `<repository>:<version>`. */
  image?: string;
  /** The container's command (default `openclaw gateway run --bind lan --port 18789`). */
  command?: string[];
  /** `uid:gid` the gateway runs as and that owns the state volume (default `1000:1000`, `node` in the OpenClaw image). */
  user?: string;
  /** OpenClaw's state dir in the container, where the state volume is mounted (default `/home/node/.openclaw`). */
  stateDir?: string;
  /** Network the agent containers join (default Docker's `bridge`). */
  network?: string;
  /** Address the gateway port is published on, and where the backend reaches it (default `127.0.0.1`). */
  publishAddress?: string;
  /** `starting` → `error` when `/readyz` is not ready this long after the container started (default 120 s). */
  readyTimeoutMs?: number;
  /** `/readyz` poll interval while waiting (default 500 ms). */
  readyPollMs?: number;
  /** Docker's SIGTERM → SIGKILL grace period on stop (default 30 s). */
  stopTimeoutMs?: number;
  /** State backup volumes kept per agent (default 3). */
  keepBackups?: number;
  /** Memory kept free on the engine's host for everything else (default 2 GiB). */
  reserveBytes?: number;
  /** Sum of memory limits allowed per byte of the host's memory (default 1: limits are guaranteed). */
  memoryOvercommit?: number;
  /** Hard cap on running agents, on top of the memory-derived one. */
  maxAgents?: number;
  /** Processes/threads per container (default 4096): a fork bomb stays inside its agent. */
  pidsLimit?: number;
  /** Stop the agent containers on `shutdown()` (default false: they outlive the backend, see `shutdown`). */
  stopOnShutdown?: boolean;
  /** `[host]` lines kept in memory per agent and merged into `logs()` (default 200). */
  hostLogLines?: number;
  /**
   * The platform's device identity (`loadPlatformDevice`). The backend reaches a gateway through its published port,
   * which OpenClaw sees as a non-loopback peer: a token-only connection there gets no scopes. With this set, the host
   * pairs the device with each gateway once it is ready (approving the request from inside the container) and
   * `controlCredentials` hands it out; without it, control connections carry only the token.
   */
  platformDevice?: DeviceIdentity;
  /** OpenClaw's CLI in the agent image, run with `exec` to approve the platform device (default `['openclaw']`). */
  cliCommand?: string[];
  /** Bound on one in-container CLI run (default 60 s: the CLI's own start-up takes several seconds). */
  execTimeoutMs?: number;
  /** The image's Node, which runs the workspace program with `exec` for workspace browsing (default `['node']`). */
  nodeCommand?: string[];
  /**
   * Hibernation (default 0: never), as on the local provider (shared/idle.ts): a gateway on which nothing happened for
   * this long — no chat turn or session activity, no cron run, no connected client, as the gateway reports them over
   * the platform device's connection — has its container stopped with its state volume kept (`hibernated`), and is
   * started again by `start` (a message wakes it that way) or `wakeLeadMs` before its next due cron job or heartbeat.
   */
  idleMs?: number;
  /**
   * A start that finds the host full first hibernates the running agent idle the longest, if it has been idle this
   * long by the same rules (default 2 min; 0: never), as the local host does. Needs `idleMs` (hibernation) on.
   */
  evictIdleMs?: number;
  /** How often running gateways are asked for their activity, and hibernated agents' due times checked (default 60 s). */
  idleCheckMs?: number;
  /** A hibernated agent is started this long before its next due job (default 90 s). */
  wakeLeadMs?: number;
  /**
   * Warm containers kept started, warmed up, paired with the platform device and nobody's (default 0), for `create` to
   * adopt, as on the local provider: a number, or `auto` (`autoWarmPoolSize` of the engine's memory, read at
   * `restore()`). Needs `platformDevice` (adoption applies the agent's configuration over its connection).
   */
  warmPool?: number | 'auto';
  /** How long after an agent became live the pool waits before starting a warm container (default 20 s). */
  refillQuietMs?: number;
  /**
   * Customer-scoped gateways, as on the local provider (default 1: each agent has its own container; the backend's
   * `AGENTS_PER_GATEWAY` is 8): a customer's later agent joins the container of one of the customer's gateways as a
   * further isolated OpenClaw agent (`config.apply`, no new container), its workspace `workspace-<id>` in that
   * gateway's state volume. Never another customer's container, never one of another image; an agent with variables of
   * its own (`agentEnv`) or messaging channels gets its own.
   */
  agentsPerGateway?: number;
}

/** The plan a warm container runs under until an agent adopts it (then the agent's plan's limits apply). */
const WARM_PLAN = 'solo';
/** Warm containers are agents `warm-<hex>` to the host: `aop-agent-warm-<hex>` and its volume until adopted. */
const WARM_PREFIX = 'warm-';

interface Agent extends RosterMark {
  record: DockerAgentRecord;
  lock: Promise<unknown>;
  /** Shown instead of the container's state while a lifecycle operation runs (`stopping`, `starting`). */
  transition: AgentStatus | null;
  /** `State.StartedAt` of the container run that answered `/readyz` ready (its warm-up then began). */
  readyFor: string | null;
  /** `State.StartedAt` of the run whose warm-up turn is over (shared/warm-up.ts), and when it ended: running from then. */
  warmedFor: string | null;
  readyAt: number | null;
  lastError: string | null;
  events: Array<{ at: number; line: string }>;
  /** `State.StartedAt` of the container run on which the platform device was last seen paired. */
  pairedFor: string | null;
  /** The pairing under way (one at a time per agent). */
  pairing: Promise<ControlCredentials> | null;
  /** The latest activity the gateway reported (wall clock ms), read by the idle check. */
  lastActiveAt: number | null;
  /** A warm container nobody has adopted yet (in `pool`; not in the registry). */
  warmSlot: boolean;
  /** A warm container ready to be adopted (warmed up and paired). */
  poolReady: boolean;
  /** Its connection kept open for the adoption, opened once it was ready. */
  poolConn: Promise<PoolConnection | null> | null;
  /**
   * Starts again because OpenClaw's scheduler did not start (shared/scheduler-start.ts), in a row; and, for the run the
   * host gave up on (`State.StartedAt`), why.
   */
  schedulerRestarts: SchedulerRestarts;
  schedulerDown: { run: string; reason: string } | null;
}

type ContainerInfo = Docker.ContainerInspectInfo;

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const UNREACHABLE = new Set(['ENOENT', 'ECONNREFUSED', 'EACCES', 'EPERM', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTSOCK']);

/** Sortable, unique enough within one agent's serialized operations: `20260101T120000123Z`. */
const stamp = () => new Date().toISOString().replace(/[-:.]/g, '');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const engineStatus = (error: unknown) => (error instanceof DockerEngineError ? error.engineStatus : null);

/** A followed log's timestamped lines, stdout and stderr each split on their own. */
async function* demuxedLines(stream: AsyncIterable<Buffer>): AsyncIterable<string> {
  const demuxer = new FrameDemuxer();
  const splitters = { 1: new LineSplitter(), 2: new LineSplitter() };
  for await (const chunk of stream) {
    for (const frame of demuxer.push(chunk)) yield* splitters[frame.stream].push(frame.payload);
  }
}

function sameSecrets(
  a: Pick<AgentSpec, 'channelTokens' | 'llm' | 'agentEnv'>,
  b: Pick<AgentSpec, 'channelTokens' | 'llm' | 'agentEnv'>,
): boolean {
  for (const name of MESSAGING_CHANNELS) if ((a.channelTokens?.[name] ?? '') !== (b.channelTokens?.[name] ?? '')) return false;
  if (!sameAgentEnv(a.agentEnv, b.agentEnv)) return false;
  if (!a.llm || !b.llm) return !a.llm && !b.llm;
  const keys: Array<keyof LlmSpec> = ['baseUrl', 'apiKey', 'model', 'contextWindow', 'maxTokens'];
  return keys.every((key) => a.llm?.[key] === b.llm?.[key]);
}

/**
 * The `docker` provider: each agent is one container `aop-agent-<agentId>` of the OpenClaw image, run by the Docker
 * engine behind `socketPath`, with its state in the named volume `aop-agent-<agentId>-state`.
 *
 * Where things are kept. The host's registry (`<dataDir>/docker-agents/<agentId>.json`, secrets sealed like the local
 * provider's) is the source of truth for each agent's spec: containers are disposable and get recreated from it on
 * update, repair and token changes — exactly when the secrets would be lost if the container's environment were their
 * only copy. Docker is the source of truth for everything that runs: status, port, pid, restarts and health come
 * from `inspect` on every call, so the host keeps no runtime state of its own and a backend restart loses nothing.
 * Every container and volume carries `aop.managed=true`, `aop.agent-id` and `aop.role` labels, so operators find them
 * with `docker ps --filter label=aop.managed=true`, `delete()` finds leftovers, and `orphans()` lists agents Docker
 * has but the registry does not (e.g. after the data directory was lost).
 */
export class DockerAgentHost implements AgentHost {
  readonly provider = 'docker';
  readonly socketPath: string;
  readonly registryDir: string;
  private readonly docker: Docker;
  private readonly secrets: SecretBox;
  private readonly image: string;
  private readonly repository: string;
  private readonly defaultVersion: string;
  private readonly command: string[];
  private readonly user: string;
  private readonly owner: { uid: number; gid: number };
  private readonly stateDir: string;
  private readonly publishAddress: string;
  private readonly options: Required<
    Pick<
      DockerHostOptions,
      | 'readyTimeoutMs'
      | 'readyPollMs'
      | 'stopTimeoutMs'
      | 'keepBackups'
      | 'reserveBytes'
      | 'memoryOvercommit'
      | 'pidsLimit'
      | 'hostLogLines'
    >
  >;
  private readonly container: ContainerSpec;
  private readonly agents = new Map<string, Agent>();
  /** Agents living in another agent's container (`record.gatewayOf`), by agent id: no container of their own. */
  private readonly members = new Map<string, Agent>();
  /** Who is in which gateway (shared/roster.ts). */
  private readonly rosters = new RosterBook<Agent>(this.agents, this.members);
  private readonly creating = new Set<string>();
  /** Memory promised to agents being started (capacity is checked before their container exists). */
  private readonly reserving = new Map<string, number>();
  /** Capacity checks run one at a time (`exclusive`). */
  private readonly capacityChecks = { lock: Promise.resolve() as Promise<unknown> };
  private loading: Promise<void> | null = null;
  private shuttingDown = false;
  /** Pairings started after a launch, awaited by `shutdown()`. */
  private readonly background = new Set<Promise<void>>();
  /** Open `followLogs` streams per agent, which get the host's `[host]` lines as they are logged. */
  private readonly logListeners = new Map<string, Set<(line: string) => void>>();
  private readonly idleTimer: NodeJS.Timeout | null = null;
  private checkingIdle = false;
  /** Warm containers, oldest first (`warmPool`). */
  private readonly pool: Agent[] = [];
  /** `warmPool`, once `auto` is resolved (at `restore()`). */
  private poolTarget: number;
  private readonly filler = new PoolFiller({
    short: () => !this.shuttingDown && this.pool.length < this.poolTarget,
    busy: () => this.busyStarting(),
    add: () => this.addWarmSlot(),
  });

  constructor(private readonly config: DockerHostOptions) {
    this.secrets = secretBoxFor(config, 'DockerAgentHost');
    this.socketPath = config.socketPath ?? '/var/run/docker.sock';
    // `host: undefined` keeps a DOCKER_HOST in the environment from redirecting the client away from the socket.
    this.docker = new Docker({ socketPath: this.socketPath, host: undefined, version: `v${config.apiVersion ?? '1.44'}` });
    this.registryDir = join(config.dataDir, 'docker-agents');
    this.image = config.image ?? `ghcr.io/openclaw/openclaw:${PINNED_OPENCLAW_VERSION}`;
    const ref = parseImageRef(this.image);
    this.repository = ref.repository;
    this.defaultVersion = ref.tag ?? PINNED_OPENCLAW_VERSION;
    this.command = config.command ?? ['openclaw', 'gateway', 'run', '--bind', 'lan', '--port', String(GATEWAY_PORT)];
    this.user = config.user ?? '1000:1000';
    const owner = /^(\d+):(\d+)$/.exec(this.user);
    if (!owner) throw new Error(`user must be numeric uid:gid, got ${this.user}`);
    this.owner = { uid: Number(owner[1]), gid: Number(owner[2]) };
    this.stateDir = posix.normalize(config.stateDir ?? '/home/node/.openclaw').replace(/\/$/, '');
    if (!this.stateDir.startsWith('/') || posix.dirname(this.stateDir) === this.stateDir) {
      throw new Error(`stateDir must be an absolute path below /, got ${this.stateDir}`);
    }
    this.publishAddress = config.publishAddress ?? '127.0.0.1';
    this.options = {
      readyTimeoutMs: config.readyTimeoutMs ?? 120_000,
      readyPollMs: config.readyPollMs ?? 500,
      stopTimeoutMs: config.stopTimeoutMs ?? 30_000,
      keepBackups: config.keepBackups ?? 3,
      reserveBytes: config.reserveBytes ?? DEFAULT_RESERVE_BYTES,
      memoryOvercommit: config.memoryOvercommit ?? 1,
      pidsLimit: config.pidsLimit ?? 4096,
      hostLogLines: config.hostLogLines ?? 200,
    };
    this.container = new ContainerSpec({
      command: this.command,
      user: this.user,
      stateDir: this.stateDir,
      network: config.network ?? 'bridge',
      publishAddress: this.publishAddress,
      pidsLimit: this.options.pidsLimit,
      readyTimeoutMs: this.options.readyTimeoutMs,
      stopTimeoutMs: this.options.stopTimeoutMs,
    });
    this.poolTarget = typeof config.warmPool === 'number' ? Math.max(0, Math.floor(config.warmPool)) : 0;
    if ((config.idleMs ?? 0) > 0) {
      this.idleTimer = setInterval(() => void this.checkIdle(), this.idleCheckMs);
      this.idleTimer.unref();
    }
  }

  /** The image of an OpenClaw version: `<repository of the image option>:<version>`. */
  imageFor(version: string): string {
    return `${this.repository}:${version}`;
  }

  /** `GET /_ping`: whether the engine answers (for the backend's `/health`). */
  async ping(): Promise<boolean> {
    try {
      await this.docker.ping();
      return true;
    } catch {
      return false;
    }
  }

  // ---------------------------------------------------------------- lifecycle

  async create(spec: AgentSpec): Promise<AgentState> {
    this.assertOpen();
    if (!ID_PATTERN.test(spec.agentId)) throw new Error(`Invalid agent id: ${spec.agentId}`);
    if (!spec.gatewayToken) throw new Error('A gateway token is required');
    await this.ensureLoaded();
    const id = spec.agentId;
    if (this.agents.has(id) || this.members.has(id) || this.creating.has(id)) throw new AgentExistsError(id);
    this.creating.add(id);
    try {
      // A container left without a registry entry is not silently taken over, nor is another user's state volume.
      if (await this.inspect(id)) throw new AgentExistsError(id);
      const volume = await this.orNull(() =>
        this.engine('inspect volume', () => this.docker.getVolume(dockerStateVolumeName(id)).inspect()),
      );
      const owner = volume?.Labels?.[DOCKER_LABELS.userId];
      if (owner !== undefined && owner !== spec.userId) throw new AgentExistsError(id);

      const version = spec.version ?? this.defaultVersion;
      const image = spec.version ? this.imageFor(spec.version) : this.image;
      const gateway = await this.customerGateway(spec, image);
      if (gateway) return await this.join(gateway, spec);
      const slot = this.takeWarmSlot(image, spec);
      const adopted = slot ? await this.adopt(slot, spec) : null;
      if (adopted) return adopted;
      return await this.withCapacity(id, spec.plan, async () => {
        try {
          await this.ensureImage(image);
        } catch (cause) {
          if (cause instanceof DockerUnavailableError) throw cause;
          throw new AgentStartError(`Cannot create agent ${id}: image ${image} is not available: ${messageOf(cause)}`, { cause });
        }
        const agent = this.newAgent(this.newRecord(spec, version, image));
        this.agents.set(id, agent);
        await this.saveRecord(agent);
        return exclusive(agent, async () => {
          await this.launch(agent);
          return this.publicState(agent);
        });
      });
    } finally {
      this.creating.delete(id);
    }
  }

  private newRecord(spec: AgentSpec, version: string, image: string): DockerAgentRecord {
    return { ...newSealedRecord(this.secrets, spec, version), image };
  }

  async start(agentId: string): Promise<AgentState> {
    const member = await this.member(agentId);
    if (member) return this.setMemberWanted(member, 'running');
    const agent = await this.get(agentId);
    if (agent.record.agentStopped) return exclusive(agent, () => this.setFirstAgentStopped(agent, false));
    return this.startGateway(agent);
  }

  /** Starts (or wakes) the agent's container unless it runs; a start refused for capacity leaves it as it was. */
  private startGateway(agent: Agent): Promise<AgentState> {
    return exclusive(agent, async () => {
      await this.startHeld(agent);
      return this.publicState(agent);
    });
  }

  /** `startGateway`, holding the agent's lock. */
  private async startHeld(agent: Agent): Promise<void> {
    const info = await this.inspect(agent.record.agentId);
    // A container that runs already is awake (someone started it): its hibernation ends here. One that does not is
    // woken by `launch`, once it shows `starting`: cleared any earlier, a stopped container wanted running would
    // read as failed in between (a chat waiting for the wake would give up).
    const wantRunning = async (wake: boolean) => {
      if (agent.record.desired === 'running' && !(wake && agent.record.hibernation)) return;
      agent.record.desired = 'running';
      if (wake) this.wake(agent);
      await this.saveRecord(agent);
    };
    // Running, or crashed and being restarted by Docker's restart policy.
    if (info?.State.Running) {
      await wantRunning(true);
      return;
    }
    // Wanted running only once it has room: a start refused for capacity leaves the agent stopped, not failed.
    await this.withCapacity(agent.record.agentId, agent.record.plan, async () => {
      await wantRunning(false);
      await this.launch(agent);
    });
  }

  async stop(agentId: string): Promise<AgentState> {
    const member = await this.member(agentId);
    if (member) return this.setMemberWanted(member, 'stopped');
    const agent = await this.get(agentId);
    return exclusive(agent, async () => {
      if (this.rosters.membersOf(agent).length > 0) return this.setFirstAgentStopped(agent, true);
      agent.record.desired = 'stopped';
      agent.record.hibernation = null;
      await this.saveRecord(agent);
      await this.stopContainer(agent);
      return this.publicState(agent);
    });
  }

  // ---------------------------------------------------------------- warm pool

  /** How the warm pool stands. */
  warmPoolStatus(): WarmPoolStatus {
    const ready = this.pool.filter((slot) => slot.poolReady).length;
    return { target: this.poolTarget, ready, starting: this.pool.length - ready, lastError: this.filler.lastError };
  }

  /**
   * A ready warm container of this image, taken out of the pool; null when there is none, or when the agent needs a
   * container of its own: variables of its own (`AOP_AGENT_*` reach tools only through the environment a container
   * starts with).
   */
  private takeWarmSlot(image: string, spec: AgentSpec): Agent | null {
    if (Object.keys(spec.agentEnv ?? {}).length > 0) return null;
    const index = this.pool.findIndex((slot) => slot.poolReady && slot.record.image === image);
    if (index < 0) return null;
    const [slot] = this.pool.splice(index, 1);
    return slot ?? null;
  }

  /**
   * Makes a warm container the agent's: given the agent's plan limits (`docker update`, with the room checked and held
   * until then) and renamed `aop-agent-<agentId>` (Docker renames a running container), its volume becomes the agent's
   * state volume (`record.volume`), its pairing with the platform device the agent's, and the agent's record replaces
   * the slot's; then the agent's secrets and configuration are applied to the running gateway (`adoptConfiguration`)
   * while the agent shows `starting`. If that fails, the container is recreated from the agent's spec (a cold start on
   * the same volume). Null, with the slot removed, when the container could not be taken: the caller starts a container
   * of its own. The pool refills in the background.
   */
  private async adopt(slot: Agent, spec: AgentSpec): Promise<AgentState | null> {
    const slotId = slot.record.agentId;
    const id = spec.agentId;
    // The agent's plan may need more room than the warm container's: the room is held until its limits are applied,
    // then the container is renamed (both on the warm container's name first, so a failure leaves it droppable).
    const container = this.docker.getContainer(dockerContainerName(slotId));
    const limits = dockerLimits(spec.plan);
    let failure: unknown = null;
    try {
      await this.withCapacity(
        id,
        spec.plan,
        async () => {
          try {
            await this.engine('update container limits', () =>
              container.update({ Memory: limits.Memory, MemorySwap: limits.MemorySwap, NanoCpus: limits.NanoCpus }),
            );
            await this.engine('rename container', () => container.rename({ name: dockerContainerName(id) }));
          } catch (error) {
            failure = error;
          }
        },
        { exclude: [slotId] },
      );
    } catch (error) {
      this.pool.unshift(slot);
      throw error;
    }
    if (failure) {
      this.log(slot, `[host] the warm container could not be taken (${messageOf(failure)}); starting a container of its own`);
      await this.dropWarmSlot(slot);
      this.fillWarmPool();
      return null;
    }
    const poolToken = openSealedSpec(this.secrets, slot.record).gatewayToken;
    const device = slot.record.platformDevice;
    const record: DockerAgentRecord = {
      ...this.newRecord(spec, slot.record.version, slot.record.image),
      volume: stateVolumeOf(slot.record),
    };
    if (device) {
      const deviceToken = this.secrets.decrypt(device.deviceToken, secretAad(slotId, 'platformDeviceToken'));
      record.platformDevice = { ...device, deviceToken: this.secrets.encrypt(deviceToken, secretAad(id, 'platformDeviceToken')) };
    }
    slot.record = record;
    slot.warmSlot = false;
    slot.poolReady = false;
    // `starting` until the agent's configuration is live (observe reports running once the run is warmed up).
    const run = slot.warmedFor;
    slot.warmedFor = null;
    this.agents.set(id, slot);
    await this.saveRecord(slot);
    this.log(slot, `[host] warm container ${dockerContainerName(slotId)} taken by agent ${id}`);
    const adopting: Promise<void> = exclusive(slot, async () => {
      const started = performance.now();
      try {
        const steps = await this.adoptConfiguration(slot, poolToken, run);
        slot.warmedFor = run;
        slot.readyAt = Date.now();
        this.log(
          slot,
          `[host] warm container adopted in ${((performance.now() - started) / 1000).toFixed(1)} s: the agent's configuration is live (${steps})`,
        );
      } catch (error) {
        if (this.shuttingDown || this.agents.get(id) !== slot) return;
        this.log(slot, `[host] adopting the warm container failed (${messageOf(error)}); recreating it from the agent's spec`);
        await this.stopContainer(slot);
        await this.launch(slot, { fresh: true });
      }
    })
      .catch((error: unknown) => {
        slot.lastError = messageOf(error);
      })
      .finally(() => this.background.delete(adopting));
    this.background.add(adopting);
    this.fillWarmPool();
    return this.publicState(slot);
  }

  /**
   * The agent's secrets into the secret file, then its configuration through `config.apply` over the pool connection
   * (kept open since the container was ready, else a new one): OpenClaw
   * resolves the file again (the agent's token replaces the pool's; connections made with the pool's are closed) and
   * applies the configuration before it answers. The platform's skills are in the workspace already (written before the
   * warm container started). `run` is the container run that was warmed up: a container that restarted since is not
   * adopted this way.
   */
  private async adoptConfiguration(agent: Agent, poolToken: string, run: string | null): Promise<string> {
    const container = this.docker.getContainer(dockerContainerName(agent.record.agentId));
    const info = await this.inspect(agent.record.agentId);
    const url = info?.State.Running && info.State.StartedAt === run ? this.gatewayUrl(info) : null;
    if (!url) throw new Error('the warm container is not running the run that was warmed up');
    await this.engine('write secrets', () =>
      container.putArchive(tarArchive([this.secretFileEntry(agent)]), { path: posix.dirname(this.stateDir) }),
    );
    const kept = (await agent.poolConn) ?? null;
    agent.poolConn = null;
    return applyAdoption({
      kept,
      connect: () => this.connectAs(agent, url, poolToken),
      config: this.gatewayConfig(agent),
      note: 'warm container adopted by an agent',
      baseUrl: url,
      headers: this.authorization(agent),
      onReconnect: () => this.log(agent, '[host] the connection kept open for the adoption had closed; connecting again'),
    });
  }

  /** A control connection to a gateway with this token and the platform device's pairing (as the agent has it). */
  private async connectAs(agent: Agent, url: string, token: string): Promise<GatewayConnection> {
    const identity = this.config.platformDevice;
    const stored = agent.record.platformDevice;
    if (!identity || stored?.deviceId !== identity.deviceId) throw new Error('the platform device is not paired with the warm container');
    return connectGateway({ url: url.replace(/^http/, 'ws'), token, device: identity, retryDeadlineMs: 0 });
  }

  /** Starts warm containers until the pool is full (`PoolFiller`); adoption needs the platform device. */
  private fillWarmPool(): void {
    if (this.poolTarget > 0 && !this.config.platformDevice) {
      this.filler.lastError = POOL_NEEDS_DEVICE;
      return;
    }
    this.filler.start();
  }

  /** An agent is being created or started, or became live less than `refillQuietMs` ago: a warm container's start waits. */
  private busyStarting(): boolean {
    if (this.creating.size > 0 || [...this.reserving.keys()].some((id) => !id.startsWith(WARM_PREFIX))) return true;
    const now = Date.now();
    const quietMs = this.config.refillQuietMs ?? 20_000;
    return [...this.agents.values()].some(
      (agent) =>
        agent.transition === 'starting' ||
        (agent.readyFor !== null && agent.warmedFor === null) ||
        (agent.readyAt !== null && now - agent.readyAt < quietMs),
    );
  }

  /** One warm container: started under the pool's own token, warmed up, the platform device paired, a connection kept. */
  private async addWarmSlot(): Promise<void> {
    const slotId = `${WARM_PREFIX}${randomBytes(6).toString('hex')}`;
    const spec: AgentSpec = {
      agentId: slotId,
      userId: '',
      plan: WARM_PLAN,
      config: {},
      gatewayToken: randomBytes(32).toString('base64url'),
    };
    const slot = this.newAgent(this.newRecord(spec, this.defaultVersion, this.image));
    slot.warmSlot = true;
    // In the pool (so an agent that needs the room can give it up) from here on.
    this.pool.push(slot);
    try {
      await this.withCapacity(
        slotId,
        WARM_PLAN,
        () =>
          exclusive(slot, async () => {
            if (!this.pool.includes(slot)) throw new HostFullError('The warm container was given up for an agent that needed the room');
            await this.ensureImage(slot.record.image);
            await this.launch(slot);
          }),
        { makeRoom: false },
      );
      await this.waitForReady(slot, this.options.readyTimeoutMs + 5_000, { failFast: true });
      await this.ensurePaired(slot, false);
      if (!this.pool.includes(slot)) return;
      const info = await this.inspect(slotId);
      const url = info ? this.gatewayUrl(info) : null;
      if (!url) throw new Error('the warm container publishes no port');
      const poolToken = openSealedSpec(this.secrets, slot.record).gatewayToken;
      slot.poolConn = openPoolConnection(() => this.connectAs(slot, url, poolToken)).catch((error: unknown) => {
        this.log(slot, `[host] warm container: no connection kept open for its adoption (${messageOf(error)})`);
        return null;
      });
      slot.poolReady = true;
      this.log(slot, '[host] warm container ready for an agent');
    } catch (error) {
      await this.dropWarmSlot(slot);
      throw error;
    }
  }

  /** Removes a warm container and its volume (nothing in them is anyone's). Never throws: `restore()` removes leftovers. */
  private async dropWarmSlot(slot: Agent): Promise<void> {
    const index = this.pool.indexOf(slot);
    if (index >= 0) this.pool.splice(index, 1);
    slot.poolReady = false;
    void slot.poolConn?.then((pooled) => pooled?.conn.close()).catch(() => undefined);
    slot.poolConn = null;
    await exclusive(slot, async () => {
      await this.ignoreStatus([404], () =>
        this.engine('remove container', () => this.docker.getContainer(dockerContainerName(slot.record.agentId)).remove({ force: true })),
      );
      await this.removeVolume(stateVolumeOf(slot.record));
    }).catch((error: unknown) => {
      this.filler.lastError = `a warm container could not be removed: ${messageOf(error)}`;
    });
  }

  /**
   * Warm containers and volumes a previous backend left (`aop.warm-pool=true`, not adopted by an agent of the registry
   * nor in this host's pool): nothing in them is anyone's, so they are removed.
   */
  private async removeLeftoverWarmContainers(): Promise<void> {
    const filters = { label: [`${DOCKER_LABELS.warmPool}=true`] };
    const ours = new Set([...this.pool].map((slot) => slot.record.agentId));
    const claimed = new Set([...this.agents.values(), ...this.pool].map((agent) => stateVolumeOf(agent.record)));
    const containers = await this.engine('list containers', () => this.docker.listContainers({ all: true, filters }));
    for (const container of containers) {
      const id = agentIdOfName(container.Names?.[0]);
      if (id && (this.agents.has(id) || ours.has(id))) continue;
      await this.ignoreStatus([404], () =>
        this.engine('remove container', () => this.docker.getContainer(container.Id).remove({ force: true })),
      );
    }
    const { Volumes: volumes } = await this.engine('list volumes', () => this.docker.listVolumes({ filters }));
    for (const volume of volumes ?? []) {
      if (!claimed.has(volume.Name)) await this.ignoreStatus([409], () => this.removeVolume(volume.Name));
    }
  }

  // ---------------------------------------------------------------- hibernation

  /**
   * One pass of the idle check (every `idleCheckMs`): hibernated agents whose next job is due are started; running ones
   * their gateway reports nothing for during `idleMs` are hibernated. A gateway that cannot be asked stays awake.
   */
  private async checkIdle(): Promise<void> {
    const idleMs = this.config.idleMs ?? 0;
    if (this.checkingIdle || this.shuttingDown || idleMs <= 0) return;
    this.checkingIdle = true;
    try {
      await this.ensureLoaded();
      for (const agent of [...this.agents.values()]) {
        if (this.shuttingDown) return;
        if (agent.record.hibernation) {
          if (dueToWake(agent.record.hibernation, Date.now(), this.idleCheckMs)) {
            await this.startGateway(agent).catch((error: unknown) =>
              this.log(agent, `[host] could not wake for its due job: ${messageOf(error)}`),
            );
          }
          continue;
        }
        const verdict = await this.askIdle(agent, idleMs);
        if (!verdict?.sleep) continue;
        await this.hibernateAgent(agent, verdict).catch((error: unknown) =>
          this.log(agent, `[host] hibernation failed: ${messageOf(error)}`),
        );
      }
    } catch {
      // the engine is unreachable: the next pass tries again
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

  /** `askIdle` (shared/idle.ts) for an agent, asking its gateway through the platform device's connection. */
  private async askIdle(agent: Agent, idleMs: number): Promise<IdleVerdict | null> {
    // Wall clock: `readyAt` and the gateway's activity times are dates.
    const readyAt = agent.readyAt;
    if (readyAt === null || agent.transition || agent.record.hibernation) return null;
    const verdict = await askIdle(
      { readyAt, lastActiveAt: agent.lastActiveAt },
      { idleMs, wakeLeadMs: this.wakeLeadMs },
      {
        keptAwake: () => keepsAwake(agent.record.config, agent.record.secrets.channelTokens),
        read: async () => {
          const state = await this.observe(agent);
          if (state.status !== 'running' || !state.url) throw new Error(`the agent is ${state.status}`);
          return readActivityAt(state.url, await this.credentials(agent, false));
        },
      },
    );
    if (verdict) agent.lastActiveAt = verdict.lastActiveAt;
    return verdict;
  }

  /** Makes room for `requester` by hibernating the agent idle the longest (shared/idle.ts `hibernateIdlest`). */
  private makeRoomFromIdle(requester: string): Promise<boolean> {
    return hibernateIdlest(requester, this.agents.values(), this.config, {
      ask: (agent, idleMs) => this.askIdle(agent, idleMs),
      log: (agent, line) => this.log(agent, line),
      hibernate: (agent, due) => this.hibernateAgent(agent, due),
    });
  }

  /** Forgets the agent's hibernation (the caller saves the record); false when it was awake. */
  private wake(agent: Agent): boolean {
    const asleep = agent.record.hibernation;
    if (!asleep) return false;
    this.log(agent, `[host] waking from hibernation (asleep since ${asleep.since})`);
    agent.record.hibernation = null;
    return true;
  }

  /**
   * Stops an idle agent's container with its state volume kept: `hibernated` until `start` (a message) or `wakeLeadMs`
   * before `nextDueMs` (or its agents' due times, as the idle check reads them). The container is kept too (a wake
   * starts it as it was). Public for operators and tests; the idle check calls it.
   */
  async hibernate(agentId: string, due: number | null | Due = null): Promise<AgentState> {
    const next = asDue(due);
    const member = await this.member(agentId);
    if (!member) return this.hibernateAgent(await this.get(agentId), next);
    await this.hibernateAgent(this.rosters.gatewayOf(member), next);
    return this.publicState(member);
  }

  private hibernateAgent(agent: Agent, due: Due): Promise<AgentState> {
    return exclusive(agent, async () => {
      if ((await this.observe(agent)).status !== 'running') return this.publicState(agent);
      agent.record.hibernation = hibernationOf(due, this.wakeLeadMs);
      const { wakeAt } = agent.record.hibernation;
      await this.saveRecord(agent);
      this.log(agent, `[host] hibernating after being idle; ${wakeNote(wakeAt)}`);
      await this.stopContainer(agent);
      agent.lastActiveAt = null;
      return this.publicState(agent);
    });
  }

  // ---------------------------------------------------------------- customer-scoped gateways

  /**
   * The gateway a new agent joins (`chooseCustomerGateway`), or null for a container of its own. Only with the platform
   * device: the roster is applied through its connection (a token alone gets no scopes through the published port).
   */
  private async customerGateway(spec: AgentSpec, image: string): Promise<Agent | null> {
    const limit = this.config.agentsPerGateway ?? 1;
    if (limit <= 1 || !this.config.platformDevice) return null;
    const candidates = [];
    for (const gateway of this.agents.values()) {
      if (gateway.record.userId !== spec.userId || gateway.record.image !== image) continue;
      const { status } = await this.processState(gateway);
      candidates.push({
        gateway,
        userId: gateway.record.userId,
        runtime: gateway.record.image,
        awake: status === 'running',
        // A run on its way up (a cold start, a wake, an adoption): a roster written meanwhile is applied once it answers
        // (`applyRosterWritten`; an adoption holds the gateway's lock, so a join waits for it to end).
        starting: status === 'starting',
        asleep: status === 'hibernated',
        ownVariables: Object.keys(openSealedSpec(this.secrets, gateway.record).agentEnv ?? {}).length > 0,
        memberIds: this.rosters.membersOf(gateway).map((member) => openclawAgentIdOf(member.record.agentId)),
      });
    }
    return chooseCustomerGateway(spec, image, candidates, {
      limit,
      warmReady: this.pool.some((slot) => slot.poolReady && slot.record.image === image),
    });
  }

  /** What the gateway's config lists besides its first agent (`applyRoster`): each member's workspace in the volume. */
  private roster(gateway: Agent): RosterMember[] {
    return this.rosters.membersOf(gateway).map((member) => ({
      id: openclawAgentIdOf(member.record.agentId),
      workspace: posix.join(this.stateDir, memberWorkspaceDir(member.record.agentId)),
      llm: openSealedSpec(this.secrets, member.record).llm ?? null,
      config: member.record.config,
      stopped: member.record.desired !== 'running',
    }));
  }

  /**
   * A customer's later agent joins one of its gateways: its record (with the gateway's token: the owner reaches each of
   * their agents with it), the platform's skills in its workspace (`workspace-<id>` in the gateway's volume), then the
   * gateway's config with it in the roster, applied to the running gateway (`rosterChanged`) or written for the
   * sleeping one, which is woken. `starting` until then; if it fails, the agent gets a container of its own, or, with no
   * room for that either, is not created.
   */
  private async join(gateway: Agent, spec: AgentSpec): Promise<AgentState> {
    const id = spec.agentId;
    const token = openSealedSpec(this.secrets, gateway.record).gatewayToken;
    const record: DockerAgentRecord = {
      ...this.newRecord({ ...spec, gatewayToken: token }, gateway.record.version, gateway.record.image),
      gatewayOf: gateway.record.agentId,
    };
    const member = this.newAgent(record);
    member.transition = 'starting';
    this.members.set(id, member);
    await this.saveRecord(member);
    const started = performance.now();
    try {
      await exclusive(gateway, async () => {
        await this.writeSkills(gateway, memberWorkspaceDir(id));
        await this.rosterChanged(gateway, `agent ${id} joins`, { start: true });
      });
      this.log(gateway, `[host] agent ${id} joined this gateway in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      member.transition = null;
      return this.publicState(member);
    } catch (error) {
      this.members.delete(id);
      member.transition = null;
      // Whatever the gateway got of it goes: its roster entry, then its workspace.
      await this.undoJoin(gateway, id);
      await this.removeInVolume(gateway, 'workspace removal', [memberWorkspaceDir(id)]).catch(() => undefined);
      if (this.shuttingDown || error instanceof HostFullError || error instanceof DockerUnavailableError) {
        await rm(this.registryPath(id), { force: true });
        throw error;
      }
      this.log(gateway, `[host] agent ${id} could not join (${messageOf(error)}); it gets a container of its own`);
      record.gatewayOf = undefined;
      const agent = this.newAgent(record);
      this.agents.set(id, agent);
      await this.saveRecord(agent);
      await this.withCapacity(id, record.plan, () => exclusive(agent, () => this.launch(agent))).catch((failure: unknown) => {
        agent.lastError = messageOf(failure);
      });
      return this.publicState(agent);
    }
  }

  /**
   * What a gateway may have got of an agent whose join failed goes at once, rather than with the gateway's next roster
   * change: out of the running process when it got there (`withdrawJoin`), out of the files written for a start. A
   * failure is logged; that next change removes it from the files, but not from a running process's roster.
   */
  private async undoJoin(gateway: Agent, id: string): Promise<void> {
    try {
      await exclusive(gateway, async () => {
        if ((await this.processState(gateway)).status !== 'running') await this.applyRoster(gateway, `agent ${id} did not join`);
        else if (await this.onGateway(gateway, (conn) => withdrawJoin(conn, openclawAgentIdOf(id)))) {
          this.log(gateway, `[host] agent ${id} was taken out of this gateway again`);
        }
      });
    } catch (error) {
      this.log(gateway, `[host] agent ${id} could not be taken out of this gateway (${messageOf(error)})`);
    }
  }

  /**
   * After an agent of the gateway joined, stopped, started or left (called holding the gateway's lock): the container
   * stops when nobody wants it any more, and otherwise takes the roster as recorded — applied while it runs
   * (`config.apply`, hot), written while it starts — and its stopped agents' jobs go quiet (`settleRoster`, also run
   * once a starting gateway is ready). A container not running (asleep, stopped) is started or woken only when the
   * change asks for it (`start`: an agent joined or started); otherwise its next start writes the roster, and a stop
   * never wakes it.
   */
  private async rosterChanged(gateway: Agent, note: string, options: { start?: boolean } = {}): Promise<void> {
    if (!this.rosters.wantsProcess(gateway)) {
      gateway.record.desired = 'stopped';
      gateway.record.hibernation = null;
      await this.saveRecord(gateway);
      await this.stopContainer(gateway);
      this.fillWarmPool();
      return;
    }
    if (await this.applyRoster(gateway, note)) return;
    if (options.start) await this.startHeld(gateway);
    else {
      // One asleep wakes for the jobs of the agents that still want to run in it, not those of one stopped or deleted.
      await rewakeAsleep(gateway.record, this.rosters.wantedIds(gateway), this.wakeLeadMs, note, {
        save: () => this.saveRecord(gateway),
        log: (line) => this.log(gateway, line),
      });
    }
  }

  /**
   * The roster as recorded onto a gateway whose container runs (called holding its lock): applied to a running one (and
   * its stopped agents' jobs quieted), written for one starting. False when it has none running: its start writes it.
   */
  private async applyRoster(gateway: Agent, note: string): Promise<boolean> {
    const { status } = await this.processState(gateway);
    if (status === 'running') {
      await this.pushConfig(gateway, note);
      // The roster is applied; jobs that could not be switched now are tried again when the gateway is next ready.
      await this.settleRoster(gateway).catch((error: unknown) => this.log(gateway, `[host] agents' jobs not settled: ${messageOf(error)}`));
      return true;
    }
    if (status === 'starting' || status === 'restarting') {
      // Marked before the write (a gateway that turns ready meanwhile applies it, `applyRosterWritten`) and again after
      // it (its check may have come between); one that turned running meanwhile is applied to at once.
      gateway.rosterUnapplied = true;
      await this.writeConfig(gateway);
      if ((await this.processState(gateway)).status === 'running') await this.pushConfig(gateway, note);
      else gateway.rosterUnapplied = true;
      return true;
    }
    return false;
  }

  /**
   * The gateway's secret file (with its members' keys) into the running container, then its config (with its roster)
   * through `config.apply` over the platform device's connection: OpenClaw re-reads the secret file and applies the
   * roster before it answers.
   */
  private async pushConfig(gateway: Agent, note: string, options: { unlessRead?: boolean } = {}): Promise<'applied' | 'read'> {
    const container = this.docker.getContainer(dockerContainerName(gateway.record.agentId));
    await this.engine('write secrets', () =>
      container.putArchive(tarArchive([this.secretFileEntry(gateway)]), { path: posix.dirname(this.stateDir) }),
    );
    const raw = `${JSON.stringify(this.gatewayConfig(gateway), null, 2)}\n`;
    return this.onGateway(gateway, (conn) => applyConfig(conn, raw, note, options));
  }

  /** A control connection to the running gateway (token and platform device), for `fn`. */
  private async onGateway<T>(gateway: Agent, fn: (conn: GatewayConnection) => Promise<T>): Promise<T> {
    const info = await this.inspect(gateway.record.agentId);
    const url = info?.State.Running && !info.State.Restarting ? this.gatewayUrl(info) : null;
    if (!url) throw new AgentStartError(`The gateway of agent ${gateway.record.agentId} is not running`);
    const conn = await connectControl(url, await this.credentials(gateway, false));
    try {
      return await fn(conn);
    } finally {
      await conn.close().catch(() => undefined);
    }
  }

  /** `settleRoster` (shared/roster.ts) on the gateway's first agent and its members. */
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
      if (member.record.desired !== desired) {
        member.record.desired = desired;
        await this.saveRecord(member);
        await this.rosterChanged(gateway, `agent ${id} ${desired === 'running' ? 'started' : 'stopped'}`, { start: desired === 'running' });
      } else if (desired === 'running' && (await this.inspect(gateway.record.agentId))?.State.Running !== true) {
        await this.rosterChanged(gateway, `agent ${id} started`, { start: true }); // its gateway slept or stopped: wake it
      }
      return this.publicState(member);
    });
  }

  /** The first agent of a gateway with members stopped or started (holding its lock): the gateway runs on for them. */
  private async setFirstAgentStopped(gateway: Agent, stopped: boolean): Promise<AgentState> {
    gateway.record.agentStopped = stopped;
    await this.saveRecord(gateway);
    await this.rosterChanged(gateway, `its first agent ${stopped ? 'stopped' : 'started'}`, { start: !stopped });
    return this.publicState(gateway);
  }

  /**
   * The gateway a lifecycle action on `agentId` acts on (restart, update, repair, reset memory), and the agent's state
   * to answer with after it: a member's action is its gateway's (it moves every agent in it), and like any of these it
   * leaves the agent wanted running.
   */
  private async gatewayFor(agentId: string): Promise<{ gateway: Agent; answer: () => Promise<AgentState> }> {
    const member = await this.member(agentId);
    if (!member) {
      const agent = await this.get(agentId);
      agent.record.agentStopped = false; // saved as the gateway starts; its jobs are enabled again once it is ready
      return { gateway: agent, answer: () => this.publicState(agent) };
    }
    if (member.record.desired !== 'running') {
      member.record.desired = 'running';
      await this.saveRecord(member);
    }
    return { gateway: this.rosters.gatewayOf(member), answer: () => this.publicState(member) };
  }

  /**
   * A member's configuration: its model and key (a provider of its own), heartbeat and tools profile go into its entry,
   * applied at once; the rest of a configuration is the gateway's, which its first agent's configuration sets. Variables
   * of its own and messaging channels need a process of its own: refused.
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
      // A stopped gateway gets it with its next start (its config is written then).
      if ((await this.processState(gateway)).status === 'running') await this.pushConfig(gateway, `agent ${id} configured`);
      return this.publicState(member);
    });
  }

  /**
   * A member leaves its gateway for good: `agents.delete` with its files while the gateway runs (hot; OpenClaw drops
   * its jobs and its sessions), its sessions and workspace removed from the volume either way, then its registry
   * entry. The gateway stops when nobody wants it any more, and goes altogether when its first agent was deleted
   * before (`retire`).
   */
  private async deleteMember(member: Agent): Promise<void> {
    const id = member.record.agentId;
    const gateway = this.agents.get(member.record.gatewayOf ?? '');
    const forget = async () => {
      this.members.delete(id);
      await rm(this.registryPath(id), { force: true });
    };
    if (!gateway) return forget(); // its gateway's entry was lost: nothing of it runs anywhere
    await exclusive(gateway, async () => {
      const openclawId = openclawAgentIdOf(id);
      const running = (await this.processState(gateway)).status === 'running';
      if (running) await this.onGateway(gateway, (conn) => leaveGateway(conn, openclawId));
      else {
        gateway.record.leftAgents = [...(gateway.record.leftAgents ?? []), openclawId];
        await this.saveRecord(gateway);
      }
      await forget();
      await this.removeInVolume(gateway, 'agent removal', [`agents/${openclawId}`, memberWorkspaceDir(id)]);
      this.log(gateway, `[host] agent ${id} left this gateway and was deleted`);
      if (gateway.record.retired && this.rosters.membersOf(gateway).length === 0) await this.remove(gateway.record.agentId, gateway);
      else if (!this.rosters.wantsProcess(gateway)) await this.rosterChanged(gateway, `agent ${id} left`);
      // A container starting gets its config without it (else a config applied to it later would drop an entry, which
      // OpenClaw refuses); one asleep or stopped gets it with its next start, and sleeps on without waking for its jobs.
      else if (!running) await this.rosterChanged(gateway, `agent ${id} left`);
    });
  }

  /**
   * The first agent of a gateway with members is deleted (holding its lock): its memory goes now (its sessions, its
   * workspace's notes; removed with the container stopped, so its members see a restart), and the gateway stays,
   * nobody's agent, until its last member goes.
   */
  private async retire(gateway: Agent): Promise<void> {
    const wasRunning = (await this.inspect(gateway.record.agentId))?.State.Running === true;
    if (wasRunning) await this.stopContainer(gateway);
    await this.removeInVolume(gateway, 'memory removal', memoryPathsOf(OWN_GATEWAY_AGENT_ID, 'workspace'));
    gateway.record.retired = true;
    gateway.record.agentStopped = true;
    await this.saveRecord(gateway);
    this.log(gateway, '[host] its first agent was deleted (sessions and memory removed); the gateway stays for its members');
    if (wasRunning && this.rosters.wantsProcess(gateway)) await this.startHeld(gateway);
    else await this.rosterChanged(gateway, 'its first agent was deleted');
  }

  /** A member's memory reset: its sessions and its workspace's notes, in the gateway's volume; the gateway restarted. */
  private async resetMemberMemory(member: Agent): Promise<AgentState> {
    const gateway = this.rosters.gatewayOf(member);
    return exclusive(gateway, async () => {
      const id = member.record.agentId;
      const removed = memoryPathsOf(openclawAgentIdOf(id), memberWorkspaceDir(id));
      const reset = async () => {
        await this.stopContainer(gateway);
        await this.removeInVolume(gateway, 'memory reset', removed);
        this.log(gateway, `[host] memory reset of agent ${id}: removed ${removed.join(', ')}; workspace seed files kept`);
        member.record.desired = 'running';
        await this.saveRecord(member);
        gateway.record.desired = 'running';
        await this.saveRecord(gateway);
        await this.launch(gateway);
      };
      const running = (await this.inspect(gateway.record.agentId))?.State.Running === true;
      if (running) await reset();
      else await this.withCapacity(gateway.record.agentId, gateway.record.plan, reset);
      return this.publicState(member);
    });
  }

  /** Removes paths (relative to the state dir) from an agent's state volume with a helper container. */
  private async removeInVolume(agent: Agent, purpose: string, relative: readonly string[]): Promise<void> {
    await this.ensureImage(agent.record.image);
    const targets = relative.map((path) => `"$STATE/${path}"`).join(' ');
    await this.runHelper(agent, agent.record.image, purpose, `rm -rf -- ${targets}`, { STATE: { volume: stateVolumeOf(agent.record) } });
  }

  async restart(agentId: string): Promise<AgentState> {
    const { gateway: agent, answer } = await this.gatewayFor(agentId);
    await exclusive(agent, async () => {
      const running = (await this.inspect(agent.record.agentId))?.State.Running === true;
      const relaunch = async () => {
        await this.stopContainer(agent);
        agent.record.desired = 'running';
        await this.saveRecord(agent);
        await this.launch(agent);
      };
      if (running) await relaunch();
      else await this.withCapacity(agent.record.agentId, agent.record.plan, relaunch);
    });
    return answer();
  }

  /**
   * Pulls `<repository>:<version>` while the agent keeps running, stops it, copies the state volume into a new
   * backup volume, recreates the container on the new image and waits for `/readyz`. If the new version does not
   * come up, its container is removed, the backup is copied back and the previous image starts again;
   * `UpdateFailedError.backupPath` names the backup volume. A failed pull changes nothing (`backupPath` is empty).
   */
  async update(agentId: string, options: { version: string }): Promise<AgentState> {
    const { gateway: agent, answer } = await this.gatewayFor(agentId);
    await exclusive(agent, async () => {
      const record = agent.record;
      const previousVersion = record.version;
      const previousImage = record.image;
      const targetVersion = options.version;
      const targetImage = this.imageFor(targetVersion);
      const id = record.agentId;
      const running = (await this.inspect(id))?.State.Running === true;

      try {
        await this.pull(targetImage);
      } catch (cause) {
        if (cause instanceof DockerUnavailableError) throw cause;
        if (await this.imageExists(targetImage)) {
          this.log(agent, `[host] pull of ${targetImage} failed (${messageOf(cause)}); using the image already on the engine`);
        } else {
          const why = cause instanceof DockerEngineError ? cause.detail : messageOf(cause);
          this.log(agent, `[host] update to ${targetVersion} refused: cannot pull ${targetImage}: ${why}`);
          throw new UpdateFailedError(
            `Update to OpenClaw ${targetVersion} failed: cannot pull ${targetImage}: ${why}. The agent still runs ${previousVersion}.`,
            '',
            previousVersion,
            targetVersion,
            { cause },
          );
        }
      }

      const attempt = async (): Promise<AgentState> => {
        await this.stopContainer(agent);
        const backup = `${dockerContainerName(id)}-backup-${stamp()}`;
        try {
          await this.ensureImage(previousImage); // the helper runs it; it may have been pruned while the agent was stopped
          await this.engine('create backup volume', () =>
            this.docker.createVolume({
              Name: backup,
              Labels: { ...ownLabels(id, 'backup'), [DOCKER_LABELS.userId]: record.userId, [DOCKER_LABELS.version]: previousVersion },
            }),
          );
          // Without the secret file: a backup holds state, not credentials (every start writes the file again).
          await this.runHelper(agent, previousImage, 'state backup', `cp -a "$STATE/." "$BACKUP/" && rm -f "$BACKUP/${SECRET_FILE_NAME}"`, {
            STATE: { volume: stateVolumeOf(record), readOnly: true },
            BACKUP: { volume: backup },
          });
        } catch (cause) {
          if (cause instanceof DockerUnavailableError) throw cause;
          await this.removeVolume(backup).catch(() => undefined);
          await this.launch(agent).catch(() => undefined); // the previous version, untouched
          throw new UpdateFailedError(
            `Update to OpenClaw ${targetVersion} failed: the state could not be backed up: ${messageOf(cause)}. The agent still runs ${previousVersion}.`,
            '',
            previousVersion,
            targetVersion,
            { cause },
          );
        }
        this.log(agent, `[host] state backed up to volume ${backup}; updating OpenClaw ${previousVersion} -> ${targetVersion}`);

        record.version = targetVersion;
        record.image = targetImage;
        record.desired = 'running';
        await this.saveRecord(agent);
        return updateWithRollback({
          previousVersion,
          targetVersion,
          backup,
          apply: async () => {
            await this.launch(agent, { fresh: true });
            const state = await this.waitForReady(agent, this.options.readyTimeoutMs, { failFast: true });
            await this.pruneBackups(agent);
            return state;
          },
          rollBack: async (reason, cause) => {
            // Without the engine nothing can be rolled back: the caller gets the unavailability (a 500) as it is.
            if (cause instanceof DockerUnavailableError) throw cause;
            const output = await this.recentOutput(id);
            this.log(agent, `[host] OpenClaw ${targetVersion} did not start (${reason}); rolling back to ${previousVersion}`);
            for (const line of output) this.log(agent, `[host] ${targetVersion}: ${line}`);
            try {
              await this.discardContainer(agent);
              await this.runHelper(
                agent,
                previousImage,
                'state restore',
                'find "$STATE" -mindepth 1 -delete && cp -a "$BACKUP/." "$STATE/"',
                {
                  STATE: { volume: stateVolumeOf(record) },
                  BACKUP: { volume: backup, readOnly: true },
                },
              );
              record.version = previousVersion;
              record.image = previousImage;
              await this.saveRecord(agent);
              await this.launch(agent, { fresh: true });
            } catch (rollback) {
              agent.lastError = `Roll-back to ${previousVersion} failed: ${messageOf(rollback)}`;
              throw new UpdateFailedError(
                `Update to OpenClaw ${targetVersion} failed: ${reason}. Rolling back to ${previousVersion} also failed: ${messageOf(rollback)}; the state backup is volume ${backup}.`,
                backup,
                previousVersion,
                targetVersion,
                { cause },
              );
            }
            return `Rolled back to ${previousVersion}.`;
          },
        });
      };
      return running ? attempt() : this.withCapacity(id, record.plan, attempt);
    });
    return answer();
  }

  async configure(agentId: string, changes: AgentChanges): Promise<AgentState> {
    const member = await this.member(agentId);
    if (member) return this.configureMember(member, changes);
    const agent = await this.get(agentId);
    return exclusive(agent, async () => {
      const record = agent.record;
      const current = openSealedSpec(this.secrets, record);
      const next = {
        gatewayToken: current.gatewayToken,
        channelTokens: changes.channelTokens ?? current.channelTokens,
        llm: changes.llm === undefined ? current.llm : changes.llm,
        agentEnv: changes.agentEnv === undefined ? current.agentEnv : checkAgentEnv(changes.agentEnv),
      };
      const secretsChanged = !sameSecrets(current, next);
      const planChanged = changes.plan !== undefined && changes.plan !== record.plan;
      const running = (await this.inspect(agentId))?.State.Running === true;
      if (planChanged && running) await this.assertCapacity([agentId], changes.plan as string);

      if (changes.config) record.config = changes.config;
      if (changes.plan) record.plan = changes.plan;
      if (secretsChanged) sealSpecSecrets(this.secrets, record, next);
      await this.saveRecord(agent);
      if (!running) return this.publicState(agent); // the next start writes the config and recreates the container as needed

      if (secretsChanged) {
        // Tokens live in the container's environment: a new container, on the same state volume.
        await this.stopContainer(agent);
        await this.launch(agent, { fresh: true });
        return this.publicState(agent);
      }
      if (changes.config) await this.writeConfig(agent); // OpenClaw hot-reloads its config file
      if (planChanged) {
        const limits = dockerLimits(record.plan);
        await this.engine('update container limits', () =>
          this.docker
            .getContainer(dockerContainerName(agentId))
            .update({ Memory: limits.Memory, MemorySwap: limits.MemorySwap, NanoCpus: limits.NanoCpus }),
        );
        this.log(agent, `[host] plan ${record.plan}: limits ${limits.Memory / GIB} GiB, ${limits.NanoCpus / SECOND_NS} CPU`);
      }
      return this.publicState(agent);
    });
  }

  /**
   * Recreates the container from the spec (image, environment, limits, config) and fixes the state volume with a
   * short-lived helper container: stale OpenClaw lock dirs removed, ownership and mode of the state dir restored.
   */
  async repair(agentId: string): Promise<AgentState> {
    const { gateway: agent, answer } = await this.gatewayFor(agentId);
    await exclusive(agent, async () => {
      const running = (await this.inspect(agent.record.agentId))?.State.Running === true;
      const fix = async () => {
        await this.discardContainer(agent);
        await this.ensureVolume(agent);
        await this.ensureImage(agent.record.image);
        const { uid, gid } = this.owner;
        await this.runHelper(
          agent,
          agent.record.image,
          'state repair',
          `rm -rf "$STATE"/tmp/openclaw* && chown -hR ${uid}:${gid} "$STATE" && chmod 700 "$STATE"`,
          {
            STATE: { volume: stateVolumeOf(agent.record) },
          },
        );
        agent.record.desired = 'running';
        agent.lastError = null;
        await this.saveRecord(agent);
        this.log(agent, '[host] repair: container recreated from the spec, state volume fixed');
        await this.launch(agent, { fresh: true });
      };
      if (running) await fix();
      else await this.withCapacity(agent.record.agentId, agent.record.plan, fix);
    });
    return answer();
  }

  /** Clears sessions and memory (`MEMORY_PATHS`) with a helper container; the workspace's seed files stay. */
  async resetMemory(agentId: string): Promise<AgentState> {
    const member = await this.member(agentId);
    if (member) return this.resetMemberMemory(member);
    const { gateway: agent } = await this.gatewayFor(agentId);
    return exclusive(agent, async () => {
      const running = (await this.inspect(agentId))?.State.Running === true;
      const reset = async () => {
        await this.stopContainer(agent);
        await this.ensureVolume(agent);
        // With members, only the first agent's sessions: theirs are under `agents/<their id>`.
        const removed = this.rosters.membersOf(agent).length === 0 ? MEMORY_PATHS : memoryPathsOf(OWN_GATEWAY_AGENT_ID, 'workspace');
        await this.removeInVolume(agent, 'memory reset', removed);
        this.log(agent, `[host] memory reset: removed ${removed.join(', ')}; workspace seed files kept`);
        agent.record.desired = 'running';
        await this.saveRecord(agent);
        await this.launch(agent);
      };
      if (running) await reset();
      else await this.withCapacity(agentId, agent.record.plan, reset);
      return this.publicState(agent);
    });
  }

  /**
   * Removes the agent's containers (the gateway and any helper left behind), its state and backup volumes and its
   * registry entry. Best effort: volumes that cannot be removed are reported after everything else is gone. Also
   * cleans up an orphan (labelled containers or volumes without a registry entry).
   */
  async delete(agentId: string): Promise<void> {
    this.assertOpen();
    await this.ensureLoaded();
    if (!ID_PATTERN.test(agentId)) throw new AgentNotFoundError(agentId);
    const member = this.members.get(agentId);
    if (member) return this.deleteMember(member);
    const agent = this.agents.get(agentId);
    if (agent?.record.retired) throw new AgentNotFoundError(agentId);
    if (agent && this.rosters.membersOf(agent).length > 0) return exclusive(agent, () => this.retire(agent));
    await (agent ? exclusive(agent, () => this.remove(agentId, agent)) : this.remove(agentId, undefined));
  }

  /** `delete` of an agent with a container of its own, or of an orphan's leftovers. */
  private async remove(agentId: string, agent: Agent | undefined): Promise<void> {
    let found = agent !== undefined;
    const labelled = await this.engine('list containers', () =>
      this.docker.listContainers({ all: true, filters: { label: [`${DOCKER_LABELS.agentId}=${agentId}`] } }),
    );
    // An adopted warm container keeps its warm labels: it is the agent's by name.
    const named = await this.inspect(agentId);
    const containers = [...labelled, ...(named && !labelled.some((c) => c.Id === named.Id) ? [{ Id: named.Id }] : [])];
    for (const container of containers) {
      found = true;
      await this.ignoreStatus([404], () =>
        this.engine('remove container', () => this.docker.getContainer(container.Id).remove({ force: true })),
      );
    }
    const { Volumes: volumes } = await this.engine('list volumes', () =>
      this.docker.listVolumes({ filters: { label: [`${DOCKER_LABELS.agentId}=${agentId}`] } }),
    );
    const failures: string[] = [];
    const names = new Set([...(volumes ?? []).map((volume) => volume.Name), ...(agent?.record.volume ? [agent.record.volume] : [])]);
    for (const name of names) {
      found = true;
      await this.removeVolume(name).catch((error: unknown) => failures.push(`${name}: ${messageOf(error)}`));
    }
    await rm(this.registryPath(agentId), { force: true });
    this.agents.delete(agentId);
    if (!found) throw new AgentNotFoundError(agentId);
    if (failures.length > 0) throw new Error(`Agent ${agentId} deleted, but Docker kept: ${failures.join('; ')}`);
  }

  /**
   * Containers outlive the backend: Docker supervises them (restart policy `unless-stopped`), so a backend restart or
   * deploy costs the agents nothing (stopping them would cost each a 20–30 s cold start). `shutdown()` therefore only
   * makes this host unusable, unless `stopOnShutdown` is set; the desired state is kept either way and `restore()`
   * starts the agents that should run.
   */
  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    if (this.idleTimer) clearInterval(this.idleTimer);
    await Promise.allSettled([...this.background]);
    // Warm containers are nobody's: removed, not left running (the next `restore()` would remove them anyway).
    await this.filler.settled();
    await Promise.all([...this.pool].map((slot) => this.dropWarmSlot(slot)));
    if (!this.config.stopOnShutdown) return;
    await Promise.all([...this.agents.values()].map((agent) => exclusive(agent, () => this.stopContainer(agent)).catch(() => undefined)));
  }

  /**
   * After a backend start: loads the registry and starts the agents whose desired state is `running` but whose
   * container is missing or stopped (Docker itself restarts the others after an engine restart).
   */
  async restore(): Promise<AgentState[]> {
    this.assertOpen();
    await this.ensureLoaded();
    await this.removeLeftoverWarmContainers();
    for (const agent of this.agents.values()) {
      // A hibernated agent stays asleep: a message, Start or its next due job wakes it.
      if (agent.record.desired !== 'running' || agent.record.hibernation) continue;
      const info = await this.inspect(agent.record.agentId);
      if (info?.State.Running) continue;
      await this.startGateway(agent).catch((error: unknown) => {
        agent.lastError = messageOf(error);
      });
    }
    if (this.config.warmPool === 'auto') {
      const info = (await this.engine('read engine info', () => this.docker.info())) as { MemTotal?: number };
      this.poolTarget = autoWarmPoolSize(info.MemTotal ?? 0);
    }
    this.fillWarmPool();
    return this.list();
  }

  /** Agent ids Docker has containers or volumes for (by label) that are not in this host's registry. */
  async orphans(): Promise<string[]> {
    await this.ensureLoaded();
    const filters = { label: [`${DOCKER_LABELS.managed}=true`] };
    const [containers, volumes] = await Promise.all([
      this.engine('list containers', () => this.docker.listContainers({ all: true, filters })),
      this.engine('list volumes', () => this.docker.listVolumes({ filters })),
    ]);
    const ids = new Set<string>();
    for (const labels of [...containers.map((c) => c.Labels), ...(volumes.Volumes ?? []).map((v) => v.Labels)]) {
      // Warm containers and volumes are the pool's (adopted ones an agent's): `restore()` removes those left over.
      if (labels?.[DOCKER_LABELS.warmPool] === 'true') continue;
      const id = labels?.[DOCKER_LABELS.agentId];
      if (id && !this.agents.has(id)) ids.add(id);
    }
    return [...ids].sort();
  }

  // ---------------------------------------------------------------- observation

  async status(agentId: string): Promise<AgentState> {
    return this.publicState((await this.member(agentId)) ?? (await this.get(agentId)));
  }

  async list(): Promise<AgentState[]> {
    this.assertOpen();
    await this.ensureLoaded();
    const agents = [...this.agents.values()].filter((agent) => !agent.record.retired);
    return Promise.all([...agents, ...this.members.values()].map((agent) => this.publicState(agent)));
  }

  async waitUntilReady(agentId: string, options: WaitOptions = {}): Promise<AgentState> {
    const timeoutMs = options.timeoutMs ?? this.options.readyTimeoutMs + 5_000;
    const member = await this.member(agentId);
    if (!member) return this.waitForReady(await this.get(agentId), timeoutMs, { failFast: false });
    const deadline = performance.now() + timeoutMs;
    while (member.transition === 'starting' && performance.now() < deadline) await sleep(this.options.readyPollMs);
    const state = await this.publicState(member);
    if (member.record.desired !== 'running' || state.status === 'error') {
      throw new AgentStartError(state.lastError ?? `Agent ${agentId} is ${state.status}`);
    }
    await this.waitForReady(this.rosters.gatewayOf(member), Math.max(1, deadline - performance.now()), { failFast: false });
    return this.publicState(member);
  }

  /**
   * The gateway an agent's process-wide reads go to (logs, stats, health, control credentials): its own, or for a
   * member its gateway's (one process, one log).
   */
  private async processOf(agentId: string): Promise<Agent> {
    const member = await this.member(agentId);
    return member ? this.rosters.gatewayOf(member) : this.get(agentId);
  }

  /** Container output (stdout and stderr, demultiplexed) merged by time with the host's own `[host]` lines. */
  async logs(agentId: string, options: LogsOptions = {}): Promise<string[]> {
    const agent = await this.processOf(agentId);
    const tail = Math.max(0, Math.floor(options.tail ?? 200));
    if (tail === 0) return [];
    return (await this.recentLines(agent, tail)).lines.map((entry) => entry.line);
  }

  /**
   * The last `tail` lines of `logs()`, and the engine's timestamp of the newest container line read (0 when the
   * container has written nothing yet): a follow goes on from there.
   */
  private async recentLines(agent: Agent, tail: number): Promise<{ lines: Array<{ at: number; line: string }>; lastNs: bigint }> {
    const raw = await this.orNull(() =>
      this.engine('read logs', () =>
        this.docker
          .getContainer(dockerContainerName(agent.record.agentId))
          .logs({ stdout: true, stderr: true, timestamps: true, tail, follow: false }),
      ),
    );
    const lines: Array<{ at: number; line: string }> = [];
    let last = 0;
    let lastNs = 0n;
    for (const { text } of demuxLogs(Buffer.isBuffer(raw) ? raw : Buffer.from(raw ? String(raw) : ''))) {
      const { ns, text: line } = splitTimestampNs(text);
      if (ns !== null && ns > lastNs) lastNs = ns;
      last = ns === null ? last : Number(ns / 1_000_000n);
      lines.push({ at: last, line });
    }
    const merged = [...lines, ...agent.events].sort((a, b) => a.at - b.at); // stable: equal times keep their order
    return { lines: merged.slice(-tail), lastNs };
  }

  /** The container's stats; a member's are its gateway's (the whole process), none while the member is stopped. */
  async stats(agentId: string): Promise<AgentStats> {
    const agent = await this.processOf(agentId);
    const info = (await this.runsFor(agentId)) ? await this.inspect(agent.record.agentId) : null;
    if (!info?.State.Running || info.State.Restarting) return { cpuPercent: 0, memoryBytes: 0, pids: 0, uptimeMs: 0 };
    // stream=false: the engine takes two samples about a second apart, so the CPU figure is a real rate.
    const sample = await this.engine('read stats', () => this.docker.getContainer(info.Id).stats({ stream: false }));
    return dockerStats(sample as EngineStats, info.State.StartedAt);
  }

  /** Whether anything of the agent runs: not for a stopped member, nor a first agent stopped while its gateway runs on. */
  private async runsFor(agentId: string): Promise<boolean> {
    const member = await this.member(agentId);
    return member ? member.record.desired === 'running' : !(await this.get(agentId)).record.agentStopped;
  }

  /** `/healthz` and `/readyz` on the published port, 5-second timeout each (spec §4.10, §8). */
  async health(agentId: string): Promise<AgentHealth> {
    const agent = await this.processOf(agentId);
    if (!(await this.runsFor(agentId))) return GATEWAY_DOWN;
    const info = await this.inspect(agent.record.agentId);
    const url = info?.State.Running && !info.State.Restarting ? this.gatewayUrl(info) : null;
    if (!info || !url) return GATEWAY_DOWN;
    const health = await probeGateway(url, () => this.authorization(agent));
    if (health.ready) this.markReady(agent, info.State.StartedAt);
    return health;
  }

  async spec(agentId: string): Promise<AgentSpec> {
    return openSealedSpec(this.secrets, ((await this.member(agentId)) ?? (await this.get(agentId))).record);
  }

  /**
   * The gateway token and, with `platformDevice`, the platform device paired with the agent's gateway: verified once
   * per container run with a signed connect, paired again (approved inside the container) when the gateway does not
   * know it. Throws `AgentStartError` when the agent's container is not running.
   */
  async controlCredentials(agentId: string, options: { repair?: boolean } = {}): Promise<ControlCredentials> {
    return this.credentials(await this.processOf(agentId), options.repair === true);
  }

  private credentials(agent: Agent, repair: boolean): Promise<ControlCredentials> {
    if (!this.config.platformDevice) return Promise.resolve({ token: openSealedSpec(this.secrets, agent.record).gatewayToken });
    return this.ensurePaired(agent, repair);
  }

  // ---------------------------------------------------------------- platform device

  /** After a launch: once the gateway is ready, pair the platform device (failures are logged; control calls retry). */
  private schedulePairing(agent: Agent): void {
    if (!this.config.platformDevice) return;
    const task: Promise<void> = this.pairWhenReady(agent)
      .catch((error: unknown) => {
        this.log(agent, `[host] platform device not paired yet: ${messageOf(error)}; the next control call tries again`);
      })
      .finally(() => this.background.delete(task));
    this.background.add(task);
  }

  private async pairWhenReady(agent: Agent): Promise<void> {
    const deadline = performance.now() + this.options.readyTimeoutMs + 5_000;
    while (!this.shuttingDown && this.agents.get(agent.record.agentId) === agent && performance.now() < deadline) {
      const state = await this.observe(agent);
      if (state.status === 'running') {
        await this.ensurePaired(agent, false);
        return;
      }
      if (agent.transition === null && (state.status === 'error' || state.status === 'stopped')) return;
      await sleep(this.options.readyPollMs);
    }
  }

  private ensurePaired(agent: Agent, repair: boolean): Promise<ControlCredentials> {
    agent.pairing ??= this.pair(agent, repair).finally(() => {
      agent.pairing = null;
    });
    return agent.pairing;
  }

  /**
   * A signed connect through the published port; on `NOT_PAIRED` the request it left is approved with
   * `openclaw devices approve <requestId>` exec'd in the container (OpenClaw trusts its own loopback there, and the
   * CLI resolves the gateway token from the config's SecretRef, as the gateway does: nothing secret is passed in), then
   * the device connects again and its token is stored sealed.
   */
  private async pair(agent: Agent, repair: boolean): Promise<ControlCredentials> {
    const identity = this.config.platformDevice as DeviceIdentity;
    const record = agent.record;
    const id = record.agentId;
    const token = openSealedSpec(this.secrets, record).gatewayToken;
    const info = await this.inspect(id);
    const url = info?.State.Running && !info.State.Restarting ? this.gatewayUrl(info) : null;
    if (!info || !url) throw new AgentStartError(`Agent ${id} is not running: its gateway cannot be paired`);
    const stored = record.platformDevice?.deviceId === identity.deviceId ? record.platformDevice : undefined;
    if (!repair && stored && agent.pairedFor === info.State.StartedAt) {
      return { token, device: { identity, deviceToken: this.secrets.decrypt(stored.deviceToken, secretAad(id, 'platformDeviceToken')) } };
    }

    const result = await approvePlatformDevice({
      deviceUrl: `${url.replace(/^http/, 'ws')}/`,
      token,
      identity,
      approve: ({ requestId }) => this.approveInContainer(agent, info.Id, requestId, identity.deviceId),
    });
    const known = stored ? this.secrets.decrypt(stored.deviceToken, secretAad(id, 'platformDeviceToken')) : null;
    if (known !== result.deviceToken || result.requestId !== null) {
      record.platformDevice = {
        deviceId: identity.deviceId,
        deviceToken: this.secrets.encrypt(result.deviceToken, secretAad(id, 'platformDeviceToken')),
        pairedAt: result.requestId !== null || !stored ? new Date().toISOString() : stored.pairedAt,
      };
      // A pairing that finishes after `delete()` must not write the registry entry back.
      if (this.agents.get(id) === agent) await this.saveRecord(agent);
    }
    agent.pairedFor = info.State.StartedAt;
    this.log(
      agent,
      result.requestId === null
        ? `[host] platform device ${identity.deviceId.slice(0, 12)} is paired with the gateway`
        : `[host] platform device ${identity.deviceId.slice(0, 12)} paired (request ${result.requestId} approved in the container)`,
    );
    return { token, device: { identity, deviceToken: result.deviceToken } };
  }

  /** `openclaw devices approve <requestId> --json` in the gateway's container; checks it approved our device. */
  private async approveInContainer(agent: Agent, containerId: string, requestId: string, deviceId: string): Promise<void> {
    const command = approveCommand(this.config.cliCommand, requestId);
    const run = await this.execIn(containerId, command);
    const shown = command.slice(0, -2).join(' ');
    if (run.exitCode !== 0) {
      const why = run.stderr.trim().split('\n').at(-1) || run.stdout.trim().split('\n').at(-1) || 'no output';
      throw new Error(`${shown} <requestId> exited with code ${run.exitCode}: ${why}`);
    }
    assertApproved(run.stdout, deviceId, `${shown} <requestId>`);
    this.log(agent, `[host] approved pairing request ${requestId} of the platform device inside the container`);
  }

  /** `execRaw` with the output as text, for the CLI. */
  private async execIn(containerId: string, command: string[]): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
    const run = await this.execRaw(containerId, command, { label: command.join(' ') });
    return { exitCode: run.exitCode, stdout: run.stdout.toString('utf8'), stderr: run.stderr.toString('utf8') };
  }

  /**
   * Runs a command in a running container (`POST /containers/{id}/exec`, then `POST /exec/{id}/start` hijacked: the
   * engine streams stdout/stderr multiplexed on the upgraded socket and closes it when the process ends) and reads
   * its exit code (`GET /exec/{id}/json`). The process gets the container's environment and user. With `stdin`, the
   * exec attaches standard input: the bytes go up the same socket, then its write side is closed (end of input).
   */
  private async execRaw(
    containerId: string,
    command: string[],
    options: { stdin?: Buffer; timeoutMs?: number; maxBytes?: number; label?: string } = {},
  ): Promise<{ exitCode: number | null; stdout: Buffer; stderr: Buffer }> {
    const timeoutMs = options.timeoutMs ?? this.config.execTimeoutMs ?? 60_000;
    const maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
    const label = options.label ?? command[0] ?? 'exec';
    const attach = options.stdin !== undefined;
    const container = this.docker.getContainer(containerId);
    const exec = await this.engine('create exec', () =>
      container.exec({ Cmd: command, AttachStdin: attach, AttachStdout: true, AttachStderr: true, Tty: false }),
    );
    const stream = await this.engine('start exec', () => exec.start({ hijack: true, stdin: attach, Detach: false, Tty: false }));
    const output = await settleWithin<Buffer>(
      label,
      timeoutMs,
      () => stream.destroy(),
      (resolve, reject) => {
        const chunks: Buffer[] = [];
        let size = 0;
        stream.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= maxBytes) chunks.push(chunk);
          else {
            stream.destroy();
            reject(new Error(`${label} wrote more than ${maxBytes} bytes`));
          }
        });
        const done = () => resolve(Buffer.concat(chunks));
        stream.once('end', done);
        stream.once('close', done);
        stream.once('error', reject);
        if (attach) stream.end(options.stdin);
      },
    );
    // The stream ends as the process does; the engine may take a moment to record the exit code.
    let result = await this.engine('inspect exec', () => exec.inspect());
    for (let i = 0; result.Running && i < 40; i += 1) {
      await sleep(50);
      result = await this.engine('inspect exec', () => exec.inspect());
    }
    const { stdout, stderr } = demuxFrames(output);
    return { exitCode: result.ExitCode, stdout, stderr };
  }

  // ---------------------------------------------------------------- workspace and live logs

  /**
   * The workspace in the agent's state volume, through the workspace program (`workspace.ts`) run by the image's
   * Node with `docker exec` in the running container, as the gateway's user. 409 while the container does not run:
   * exec needs a running container.
   */
  async workspace(agentId: string): Promise<AgentWorkspace> {
    const member = await this.member(agentId);
    const gateway = member ? this.rosters.gatewayOf(member) : await this.get(agentId);
    const info = await this.inspect(gateway.record.agentId);
    if (!info?.State.Running || info.State.Restarting) throw new DomainError('WORKSPACE_AGENT_NOT_RUNNING');
    const location = {
      root: posix.join(this.stateDir, member ? memberWorkspaceDir(member.record.agentId) : 'workspace'),
      home: posix.dirname(this.stateDir),
      node: this.config.nodeCommand ?? ['node'],
    };
    return new ProgramWorkspace(location, async (argv, { stdin, timeoutMs, maxOutputBytes }) => {
      const run = await this.execRaw(info.Id, argv, {
        ...(stdin ? { stdin } : {}),
        timeoutMs,
        maxBytes: maxOutputBytes,
        label: 'workspace program',
      });
      return { exitCode: run.exitCode, stdout: run.stdout, stderr: run.stderr.toString('utf8') };
    });
  }

  /**
   * The tail as `logs()` answers it, then the container's output as the engine streams it
   * (`GET /containers/{id}/logs?follow=1&timestamps=1`, multiplexed) together with the host's `[host]` lines as they
   * happen. The engine ends a follow when the container stops; the host attaches again once it runs (after a restart,
   * or to the new container of an update or repair) from the last timestamp it delivered, so nothing is sent twice.
   */
  async *followLogs(agentId: string, options: FollowLogsOptions): AsyncIterable<string> {
    const agent = await this.processOf(agentId);
    const source = agent.record.agentId;
    const stop = new AbortController();
    const signal = AbortSignal.any([options.signal, stop.signal]);
    const queue = new LineQueue(signal);
    // The follow starts after the newest container line read here, by the engine's own clock (not this machine's).
    const tail = Math.max(0, Math.floor(options.tail ?? 0));
    const recent = await this.recentLines(agent, Math.max(1, tail));
    if (tail > 0) queue.push(...recent.lines.map((entry) => entry.line));
    const listener = (line: string) => queue.push(line);
    const listeners = this.logListeners.get(source) ?? new Set();
    listeners.add(listener);
    this.logListeners.set(source, listeners);
    void this.pumpLogs(source, recent.lastNs, queue, options.pollMs ?? 1_000, signal);
    try {
      yield* queue;
    } finally {
      stop.abort();
      listeners.delete(listener);
      if (listeners.size === 0 && this.logListeners.get(source) === listeners) this.logListeners.delete(source);
    }
  }

  private pumpLogs(agentId: string, start: bigint, queue: LineQueue, pollMs: number, signal: AbortSignal): Promise<void> {
    // Attaches fail when the engine went away or the container is being replaced; the pump attaches again.
    return pumpLogLines({
      start,
      queue,
      pollMs,
      signal,
      attach: async (floor) => {
        if (this.shuttingDown || !this.agents.has(agentId)) return 'end';
        const info = await this.inspect(agentId);
        if (!info?.State.Running || info.State.Restarting) return null;
        const since = floor === 0n ? '0' : `${floor / 1_000_000_000n}.${String(floor % 1_000_000_000n).padStart(9, '0')}`;
        const stream = (await this.engine('follow logs', () =>
          this.docker
            .getContainer(info.Id)
            .logs({ follow: true, stdout: true, stderr: true, timestamps: true, since, abortSignal: signal }),
        )) as unknown as AsyncIterable<Buffer>;
        return demuxedLines(stream);
      },
    });
  }

  // ---------------------------------------------------------------- containers

  /** Creates (or reuses) the container, writes the config into the state volume, starts it. Resolves at `starting`. */
  private async launch(agent: Agent, options: { fresh?: boolean } = {}): Promise<void> {
    this.assertOpen();
    const record = agent.record;
    agent.transition = 'starting';
    try {
      // Any start of a hibernated agent (Start, restart, repair, update) is its wake.
      if (this.wake(agent)) await this.saveRecord(agent);
      await this.ensureVolume(agent);
      await this.ensureContainer(agent, options.fresh ?? false);
      agent.rosterUnapplied = false; // the process reads the roster as it is now
      await this.writeConfig(agent);
      await this.writeSkills(agent);
      await this.ignoreStatus([304], () =>
        this.engine('start container', () => this.docker.getContainer(dockerContainerName(record.agentId)).start()),
      );
      agent.readyFor = null;
      agent.warmedFor = null;
      agent.readyAt = null;
      agent.lastError = null;
      agent.pairedFor = null;
      agent.schedulerRestarts.started();
      this.log(agent, `[host] started ${dockerContainerName(record.agentId)} (OpenClaw ${record.version}, ${record.image})`);
      this.schedulePairing(agent);
    } catch (error) {
      agent.lastError = messageOf(error);
      this.log(agent, `[host] cannot start: ${agent.lastError}`);
      if (error instanceof DockerUnavailableError || error instanceof AgentStartError) throw error;
      throw new AgentStartError(`Cannot start agent ${record.agentId}: ${agent.lastError}`, { cause: error });
    } finally {
      agent.transition = null;
    }
  }

  /** Keeps the container when it was created from the current spec (its config-hash label matches), else recreates it. */
  private async ensureContainer(agent: Agent, fresh: boolean): Promise<void> {
    const id = agent.record.agentId;
    const info = await this.inspect(id);
    if (info && !fresh && info.Config.Labels?.[DOCKER_LABELS.configHash] === this.container.configHash(agent.record)) return;
    if (info) await this.discardContainer(agent);
    await this.ensureImage(agent.record.image);
    const name = dockerContainerName(id);
    await this.engine('create container', () =>
      this.docker.createContainer(
        this.withQuery(
          { name },
          this.container.containerBody(agent.record, openSealedSpec(this.secrets, agent.record), this.warmLabels(agent)),
        ),
      ),
    );
  }

  /**
   * The container's create body. Its environment is built from nothing but OpenClaw's own variables and the agent's
   * own (`AOP_AGENT_*`; its secrets are in the secret file): no platform variable can reach an agent. Limits come from the plan; the port is published
   * on `publishAddress` only, on a port Docker picks.
   */
  /**
   * Writes `openclaw.json` into the state volume through the engine's archive endpoint (works on a created, stopped
   * or running container; OpenClaw hot-reloads a running one). The archive also carries the state dir itself, owned
   * by the gateway's user with mode 0700, which fixes a fresh volume that Docker created root-owned.
   */
  private async writeConfig(agent: Agent): Promise<void> {
    const config = this.gatewayConfig(agent);
    const meta = await this.configMeta(agent);
    if (meta !== undefined) config.meta = meta;
    const dir = posix.basename(this.stateDir);
    const { uid, gid } = this.owner;
    const archive = tarArchive([
      { name: `${dir}/`, type: 'directory', mode: 0o700, uid, gid },
      this.secretFileEntry(agent),
      { name: `${dir}/openclaw.json`, type: 'file', mode: 0o600, uid, gid, content: `${JSON.stringify(config, null, 2)}\n` },
    ]);
    await this.engine('write config', () =>
      this.docker.getContainer(dockerContainerName(agent.record.agentId)).putArchive(archive, { path: posix.dirname(this.stateDir) }),
    );
  }

  /** The gateway's config: its secrets are SecretRefs into the secret file (`SECRET_FILE_NAME`) in the state volume. */
  private gatewayConfig(agent: Agent): Record<string, unknown> {
    const config = buildOpenClawConfig(openSealedSpec(this.secrets, agent.record), {
      port: GATEWAY_PORT,
      bind: 'lan',
      workspaceDir: posix.join(this.stateDir, 'workspace'),
      secretFile: posix.join(this.stateDir, SECRET_FILE_NAME),
      alwaysWarmUp: agent.warmSlot,
    });
    return applyRoster(config, this.roster(agent), { mainStopped: agent.record.agentStopped === true || agent.record.retired === true });
  }

  /** The secret file's archive entry (written before the config that refers to it, in the same archive or before it). */
  private secretFileEntry(agent: Agent) {
    const { uid, gid } = this.owner;
    const content = JSON.stringify({
      ...secretFileContents(openSealedSpec(this.secrets, agent.record)),
      ...rosterSecrets(this.roster(agent)),
    });
    return { name: `${posix.basename(this.stateDir)}/${SECRET_FILE_NAME}`, type: 'file' as const, mode: 0o600, uid, gid, content };
  }

  /**
   * OpenClaw's own `meta` block of the config in the volume, to write it back (`configMeta`). Undefined when there is no
   * such file or block yet (the engine reads it from a created or stopped container as well).
   */
  private async configMeta(agent: Agent): Promise<unknown> {
    const path = posix.join(this.stateDir, 'openclaw.json');
    const archive = await this.orNull(() =>
      this.engine('read config', async () => {
        const stream = await this.docker.getContainer(dockerContainerName(agent.record.agentId)).getArchive({ path });
        const chunks: Buffer[] = [];
        for await (const chunk of stream) chunks.push(chunk as Buffer);
        return Buffer.concat(chunks);
      }),
    );
    const text = archive ? readTarFile(archive)?.toString('utf8') : undefined;
    if (!text) return undefined;
    try {
      return configMeta(JSON.parse(text));
    } catch {
      return undefined;
    }
  }

  /**
   * The platform's skills (`bus-skill.ts`), written into the workspace in the state volume before every start
   * (create, restart, repair, update, restore), so every agent has the current version. Like the config, through the
   * engine's archive upload into the stopped container (no running gateway needed); the directories are the gateway
   * user's (the engine would create missing ones as root). A failure is logged, not fatal: the agent works without.
   */
  private async writeSkills(agent: Agent, workspace = 'workspace'): Promise<void> {
    const { uid, gid } = this.owner;
    const dir = (...segments: string[]) => ({
      name: `${posix.join(posix.basename(this.stateDir), workspace, ...segments)}/`,
      type: 'directory' as const,
      mode: 0o755,
      uid,
      gid,
    });
    try {
      const files = await busSkillFiles();
      const dirs = new Set<string>();
      for (const file of files) for (let i = 1; i < file.path.length; i += 1) dirs.add(file.path.slice(0, i).join('/'));
      const archive = tarArchive([
        dir(),
        ...[...dirs].sort().map((d) => dir(...d.split('/'))),
        ...files.map((file) => ({
          name: posix.join(posix.basename(this.stateDir), workspace, ...file.path),
          type: 'file' as const,
          mode: file.path.at(-1)?.endsWith('.mjs') ? 0o755 : 0o644,
          uid,
          gid,
          content: file.content,
        })),
      ]);
      await this.engine('write skills', () =>
        this.docker.getContainer(dockerContainerName(agent.record.agentId)).putArchive(archive, { path: posix.dirname(this.stateDir) }),
      );
    } catch (error) {
      this.log(agent, `[host] the ${BUS_SKILL_NAME} skill was not installed: ${messageOf(error)}`);
    }
  }

  /**
   * SIGTERM, then SIGKILL after the grace period (Docker's stop). An explicit stop also pauses the restart policy.
   * `startsAgain`: launched again at once as part of the same start (`startAgainForScheduler`): `starting` throughout.
   */
  private async stopContainer(agent: Agent, options: { startsAgain?: boolean } = {}): Promise<void> {
    agent.transition = options.startsAgain ? 'starting' : 'stopping';
    try {
      const t = Math.ceil(this.options.stopTimeoutMs / 1000);
      await this.ignoreStatus([304, 404], () =>
        this.engine('stop container', () => this.docker.getContainer(dockerContainerName(agent.record.agentId)).stop({ t })),
      );
      agent.readyFor = null;
      agent.warmedFor = null;
      agent.readyAt = null;
    } finally {
      agent.transition = null;
    }
  }

  /** Stops gracefully, then removes the container (never its volumes). */
  private async discardContainer(agent: Agent): Promise<void> {
    await this.stopContainer(agent);
    await this.ignoreStatus([404], () =>
      this.engine('remove container', () => this.docker.getContainer(dockerContainerName(agent.record.agentId)).remove({ force: true })),
    );
  }

  private async ensureVolume(agent: Agent): Promise<void> {
    const record = agent.record;
    // Idempotent in the engine: an existing volume of that name is returned as it is.
    await this.engine('create state volume', () =>
      this.docker.createVolume({
        Name: stateVolumeOf(record),
        Labels: { ...ownLabels(record.agentId, 'state'), [DOCKER_LABELS.userId]: record.userId, ...this.warmLabels(agent) },
      }),
    );
  }

  private warmLabels(agent: Agent): Record<string, string> {
    return agent.warmSlot ? { [DOCKER_LABELS.warmPool]: 'true' } : {};
  }

  private async removeVolume(name: string): Promise<void> {
    await this.ignoreStatus([404], () => this.engine(`remove volume ${name}`, () => this.docker.getVolume(name).remove()));
  }

  private async pruneBackups(agent: Agent): Promise<void> {
    const { Volumes: volumes } = await this.engine('list volumes', () =>
      this.docker.listVolumes({ filters: { label: [`${DOCKER_LABELS.agentId}=${agent.record.agentId}`, `${DOCKER_LABELS.role}=backup`] } }),
    );
    await pruneOldest(
      (volumes ?? []).map((volume) => volume.Name),
      this.options.keepBackups,
      (name) =>
        this.removeVolume(name).catch((error: unknown) =>
          this.log(agent, `[host] could not remove old backup ${name}: ${messageOf(error)}`),
        ),
    );
  }

  /**
   * Runs `script` (`sh -c`) in a short-lived container of `image` with only the given volumes mounted, no network,
   * as root with just the capabilities file copying needs; each volume's mount point is in the variable of its name.
   */
  private async runHelper(
    agent: Agent,
    image: string,
    purpose: string,
    script: string,
    volumes: Record<string, { volume: string; readOnly?: boolean }>,
  ): Promise<void> {
    const id = agent.record.agentId;
    const env: string[] = [];
    const mounts: Array<Record<string, unknown>> = [];
    for (const [variable, { volume, readOnly }] of Object.entries(volumes)) {
      const target = `/aop/${variable.toLowerCase()}`;
      env.push(`${variable}=${target}`);
      mounts.push({ Type: 'volume', Source: volume, Target: target, ReadOnly: readOnly === true });
    }
    const body = {
      Image: image,
      Entrypoint: ['sh', '-c'],
      Cmd: [script],
      User: '0:0',
      Env: env,
      Labels: ownLabels(id, 'helper'),
      HostConfig: {
        Mounts: mounts,
        NetworkMode: 'none',
        Memory: 512 * 1024 * 1024,
        CapDrop: ['ALL'],
        CapAdd: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID'],
        SecurityOpt: ['no-new-privileges:true'],
      },
    };
    const name = `${dockerContainerName(id)}-helper-${stamp()}`;
    const container = await this.engine(`create ${purpose} helper`, () => this.docker.createContainer(this.withQuery({ name }, body)));
    try {
      await this.engine(`start ${purpose} helper`, () => container.start());
      const result = (await this.engine(`wait for ${purpose} helper`, () => container.wait())) as { StatusCode?: number };
      if (result.StatusCode !== 0) {
        const output = await this.engine('read helper logs', () => container.logs({ stdout: true, stderr: true, tail: 20, follow: false }))
          .then((raw) => demuxLogs(Buffer.isBuffer(raw) ? raw : Buffer.alloc(0)).map((line) => line.text))
          .catch(() => [] as string[]);
        throw new Error(`${purpose} exited with code ${result.StatusCode}${output.length > 0 ? `: ${output.join(' | ')}` : ''}`);
      }
    } finally {
      await this.engine('remove helper', () => container.remove({ force: true })).catch(() => undefined);
    }
  }

  /** Last lines of the container's output, for the host log when a start fails (the container is about to go). */
  private async recentOutput(agentId: string): Promise<string[]> {
    const raw = await this.orNull(() =>
      this.engine('read logs', () =>
        this.docker.getContainer(dockerContainerName(agentId)).logs({ stdout: true, stderr: true, tail: 20, follow: false }),
      ),
    ).catch(() => null);
    return raw && Buffer.isBuffer(raw) ? demuxLogs(raw).map((line) => line.text) : [];
  }

  // ---------------------------------------------------------------- images

  private async imageExists(ref: string): Promise<boolean> {
    return (await this.orNull(() => this.engine('inspect image', () => this.docker.getImage(ref).inspect()))) !== null;
  }

  private async ensureImage(ref: string): Promise<void> {
    if (!(await this.imageExists(ref))) await this.pull(ref);
  }

  /** `POST /images/create`, following the progress stream to its end; an `error` line in it is a failed pull. */
  private async pull(ref: string): Promise<void> {
    const { repository, tag, digest } = parseImageRef(ref);
    const query = digest ? { fromImage: `${repository}@${digest}` } : { fromImage: repository, tag: tag ?? 'latest' };
    const stream = await this.engine(`pull ${ref}`, () => this.docker.createImage(query));
    const events = await this.engine(
      `pull ${ref}`,
      () =>
        new Promise<Array<{ error?: string; errorDetail?: { message?: string } }>>((resolve, reject) => {
          this.docker.modem.followProgress(stream, (error: Error | null, output: Array<{ error?: string }>) =>
            error ? reject(error) : resolve(output),
          );
        }),
    );
    const failure = events.find((event) => event.error || event.errorDetail);
    if (failure) throw new DockerEngineError(`pull ${ref}`, String(failure.errorDetail?.message ?? failure.error), null);
  }

  // ---------------------------------------------------------------- state

  /** The agent's state from Docker. While a lifecycle operation runs, its transition (`stopping`, `starting`) is shown. */
  private async processState(agent: Agent): Promise<AgentState> {
    const state = await this.observe(agent);
    return agent.transition ? { ...state, status: agent.transition } : state;
  }

  /**
   * An agent's state as the platform sees it: its container's (`processState`), with the agents it shares it with; the
   * first agent of a gateway running on for its members shows stopped when it was stopped. A member: its own id, user
   * and OpenClaw agent id, its gateway's container; its status its own while it joins or is stopped, else its
   * gateway's (starting, hibernated …).
   */
  private async publicState(agent: Agent): Promise<AgentState> {
    if (agent.record.gatewayOf !== undefined) return this.memberState(agent);
    const state = { ...(await this.processState(agent)), sharesGatewayWith: this.rosters.sharingWith(agent, agent) };
    return agent.record.agentStopped ? { ...state, status: 'stopped' } : state;
  }

  private async memberState(member: Agent): Promise<AgentState> {
    const record = member.record;
    const gateway = this.agents.get(record.gatewayOf ?? '');
    const own = { agentId: record.agentId, userId: record.userId, openclawAgentId: openclawAgentIdOf(record.agentId) };
    if (!gateway) {
      const gone = { version: record.version, url: null, port: null, pid: null, startedAt: null, readyAt: null, restarts: 0 };
      return { ...own, ...gone, status: 'error', lastError: 'Its gateway is gone', sharesGatewayWith: [] };
    }
    const base: AgentState = {
      ...(await this.processState(gateway)),
      ...own,
      sharesGatewayWith: this.rosters.sharingWith(gateway, member),
    };
    const status = member.transition ?? (record.desired === 'running' ? null : 'stopped');
    // Stopped or still joining: nothing of the gateway's process is its own yet (or any more).
    if (status) return { ...base, status, pid: null, startedAt: null, readyAt: null, restarts: 0, lastError: null, wakesAt: undefined };
    return base;
  }

  /**
   * The container's state in our words: `restarting` while Docker's restart policy brings a crashed gateway back;
   * `running` once `/readyz` said ready (our probe or Docker's health check); `starting` before that, `error` after
   * the ready timeout or when the health check fails; `stopped` when stopped by request, `error` when it stopped by
   * itself or the container is missing although it should run.
   */
  private async observe(agent: Agent): Promise<AgentState> {
    const record = agent.record;
    const info = await this.inspect(record.agentId);
    const base: AgentState = {
      agentId: record.agentId,
      userId: record.userId,
      openclawAgentId: OWN_GATEWAY_AGENT_ID,
      status: 'stopped',
      version: record.version,
      url: null,
      port: null,
      pid: null,
      startedAt: null,
      readyAt: null,
      restarts: info?.RestartCount ?? 0,
      lastError: agent.lastError,
    };
    const wantsToRun = record.desired === 'running';
    if (!info) {
      return wantsToRun
        ? { ...base, status: 'error', lastError: agent.lastError ?? 'The agent container is missing; repair recreates it' }
        : base;
    }
    const s = info.State;
    const exit = () =>
      s.OOMKilled
        ? `Gateway was killed: out of memory (limit ${(info.HostConfig.Memory ?? 0) / GIB} GiB)`
        : s.Error || `Gateway exited with code ${s.ExitCode}`;
    // Docker reports a container waiting for its restart as Running *and* Restarting.
    if (s.Restarting) return { ...base, status: 'restarting', lastError: exit() };
    if (s.Running && !s.Paused) {
      const url = this.gatewayUrl(info);
      const running: AgentState = {
        ...base,
        status: 'starting',
        url,
        port: url ? Number(new URL(url).port) : null,
        pid: s.Pid || null,
        startedAt: s.StartedAt,
      };
      const health = s.Health?.Status;
      if (health === 'healthy') this.markReady(agent, s.StartedAt, this.healthyAt(info));
      // Our own probe settles it when we have not seen this run ready, or Docker's check says it no longer is.
      if (agent.readyFor !== s.StartedAt && url) await this.probeReady(agent, url, s.StartedAt);
      // Running once the warm-up turn after the first ready answer is over.
      const ready = agent.warmedFor === s.StartedAt && health !== 'unhealthy';
      if (ready) {
        return {
          ...running,
          status: 'running',
          readyAt: agent.readyAt === null ? null : new Date(agent.readyAt).toISOString(),
          schedulerDown: agent.schedulerDown?.run === s.StartedAt ? agent.schedulerDown.reason : null,
        };
      }
      if (health === 'unhealthy') return { ...running, status: 'error', lastError: 'Gateway failed its health check (/readyz)' };
      // Wall clock: measured from the engine's `StartedAt`, a date (the host has no injected clock).
      // (A warm-up under way has its own bound.)
      if (agent.readyFor !== s.StartedAt && Date.now() - Date.parse(s.StartedAt) > this.options.readyTimeoutMs) {
        return {
          ...running,
          status: 'error',
          lastError: `Gateway did not become ready within ${Math.round(this.options.readyTimeoutMs / 1000)} s`,
        };
      }
      return running;
    }
    if (s.Status === 'removing') return { ...base, status: 'stopping' };
    if (record.hibernation) return { ...base, status: 'hibernated', wakesAt: record.hibernation.wakeAt };
    if (!wantsToRun) return base;
    if (s.Paused) return { ...base, status: 'error', lastError: 'The agent container is paused' };
    if (s.Status === 'created')
      return { ...base, status: 'error', lastError: agent.lastError ?? 'The agent container was created but not started' };
    return { ...base, status: 'error', lastError: exit() };
  }

  /** When Docker's health check first passed for this run (its log keeps the last five probes). */
  private healthyAt(info: ContainerInfo): number | null {
    const started = Date.parse(info.State.StartedAt);
    const passes = (info.State.Health?.Log ?? []).filter((entry) => entry.ExitCode === 0 && Date.parse(entry.Start) >= started);
    const first = passes.map((entry) => Date.parse(entry.End)).sort((a, b) => a - b)[0];
    return first === undefined || Number.isNaN(first) ? null : first;
  }

  /** `applyRosterWritten` (shared/roster.ts) for this container run, over the platform device's connection. */
  private applyRosterWritten(agent: Agent, startedAt: string): Promise<void> {
    return applyRosterWritten(
      agent,
      () => agent.readyFor === startedAt,
      (note, options) => this.pushConfig(agent, note, options),
      (line) => this.log(agent, line),
    );
  }

  /** `readyAt` is reported as a date and compared with the engine's `StartedAt`: the wall clock, not a monotonic one. */
  private markReady(agent: Agent, startedAt: string, at: number | null = Date.now()): void {
    if (agent.readyFor === startedAt) return;
    agent.readyFor = startedAt;
    const after = ((at ?? Date.now()) - Date.parse(startedAt)) / 1000;
    this.log(
      agent,
      `[host] /readyz${Number.isFinite(after) && after >= 0 ? ` after ${after.toFixed(1)} s` : ''}; preparing the first turn`,
    );
    void this.warmUp(agent, startedAt);
  }

  /** The run's warm-up turn (shared/warm-up.ts), once per container run; the agent is running when it is over. */
  private async warmUp(agent: Agent, startedAt: string): Promise<void> {
    await this.applyRosterWritten(agent, startedAt);
    const info = await this.inspect(agent.record.agentId).catch(() => undefined);
    const url = info?.State.StartedAt === startedAt ? this.gatewayUrl(info) : null;
    const spec = openSealedSpec(this.secrets, agent.record);
    // Only a configuration that names a model carries the warm-up provider (shared/openclaw-config.ts).
    const named = carriesWarmUp(this.gatewayConfig(agent));
    const result = !named
      ? { outcome: 'incomplete' as const, ms: 0, detail: 'no model is named, so there is no first turn to prepare' }
      : url
        ? await warmUpGateway({
            baseUrl: url,
            token: spec.gatewayToken,
            headers: this.authorization(agent),
            connect: async () => connectControl(url, await this.credentials(agent, false)),
            timeoutMs: Math.max(30_000, this.options.readyTimeoutMs - (Date.now() - Date.parse(startedAt))),
          })
        : { outcome: 'incomplete' as const, ms: 0, detail: 'the container run ended before its warm-up' };
    if (agent.readyFor !== startedAt) return; // another run began meanwhile
    if (await this.startAgainForScheduler(agent, startedAt)) return; // that run is warmed up in its turn
    if (agent.readyFor !== startedAt) return;
    // Once more for a change made during the warm-up; none can come between this and `warmedFor` (no await).
    await this.applyRosterWritten(agent, startedAt);
    if (agent.readyFor !== startedAt) return;
    this.log(agent, warmUpLogLine(result));
    agent.warmedFor = startedAt;
    agent.readyAt = Date.now();
    const after = (agent.readyAt - Date.parse(startedAt)) / 1000;
    this.log(agent, `[host] ready${Number.isFinite(after) && after >= 0 ? ` after ${after.toFixed(1)} s` : ''}`);
    const record = agent.record;
    // Agents stopped or deleted while the gateway was down: their jobs are settled now that it can be asked.
    if (this.rosters.membersOf(agent).length > 0 || record.quietJobs?.length || record.leftAgents?.length || record.agentStopped) {
      const settling: Promise<void> = exclusive(agent, () => this.settleRoster(agent))
        .catch((error: unknown) => this.log(agent, `[host] agents' jobs not settled: ${messageOf(error)}`))
        .finally(() => this.background.delete(settling));
      this.background.add(settling);
    }
  }

  /**
   * The run's output said OpenClaw's scheduler did not start (shared/scheduler-start.ts): the container is started
   * again, or, after `SCHEDULER_RESTARTS` in a row, the run is left as it is and reported so; true when it started
   * again. Read once the warm-up is over (the scheduler starts a moment after `/readyz`), and without the agent's lock,
   * like the warm-up itself: the caller that started the container may hold it while it waits for `running`.
   */
  private async startAgainForScheduler(agent: Agent, startedAt: string): Promise<boolean> {
    const line = schedulerFailure(await this.runOutput(agent, startedAt));
    if (line === null || agent.readyFor !== startedAt) return false;
    const next = agent.schedulerRestarts.decide(line);
    this.log(agent, next.log);
    if (!next.restart) {
      agent.schedulerDown = { run: startedAt, reason: next.lastError };
      return false;
    }
    await this.stopContainer(agent, { startsAgain: true });
    // Stopped, restarted or deleted by someone else meanwhile: theirs is the last word.
    if (agent.record.desired !== 'running' || this.shuttingDown || agent.readyFor !== null) return true;
    agent.schedulerRestarts.startingAgain();
    await this.launch(agent);
    return true;
  }

  /** What the gateway printed in the container run that started at `startedAt` (the engine's time), without timestamps. */
  private async runOutput(agent: Agent, startedAt: string): Promise<string[]> {
    const since = (Date.parse(startedAt) / 1000).toFixed(3);
    const raw = await this.orNull(() =>
      this.engine('read logs', () =>
        this.docker
          .getContainer(dockerContainerName(agent.record.agentId))
          .logs({ stdout: true, stderr: true, timestamps: false, since, follow: false }),
      ),
    ).catch(() => null);
    return demuxLogs(Buffer.isBuffer(raw) ? raw : Buffer.from(raw ? String(raw) : '')).map((entry) => entry.text);
  }

  private async probeReady(agent: Agent, url: string, startedAt: string): Promise<boolean> {
    try {
      const res = await fetch(`${url}/readyz`, { headers: this.authorization(agent), signal: AbortSignal.timeout(2_000) });
      const body = (await res.json().catch(() => ({}))) as { ready?: boolean };
      if (res.status === 200 && body.ready === true) {
        this.markReady(agent, startedAt);
        return true;
      }
    } catch {
      // not listening yet
    }
    return false;
  }

  private async waitForReady(agent: Agent, timeoutMs: number, options: { failFast: boolean }): Promise<AgentState> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const state = await this.observe(agent);
      if (state.status === 'running') return state;
      // During another lifecycle operation (e.g. the container is being recreated) keep waiting.
      const busy = !options.failFast && agent.transition !== null;
      if (!busy && (state.status === 'error' || state.status === 'stopped' || (options.failFast && state.status === 'restarting'))) {
        throw new AgentStartError(state.lastError ?? `Agent ${agent.record.agentId} is ${state.status}`);
      }
      if (performance.now() >= deadline)
        throw new AgentStartError(`Agent ${agent.record.agentId} not ready within ${Math.round(timeoutMs / 1000)} s`);
      await sleep(Math.min(this.options.readyPollMs, Math.max(1, deadline - performance.now())));
    }
  }

  /** The published gateway port, as the backend reaches it. */
  private gatewayUrl(info: ContainerInfo): string | null {
    const bindings = info.NetworkSettings?.Ports?.[PORT_KEY] ?? [];
    const binding = bindings.find((b) => b.HostIp === this.publishAddress) ?? bindings[0];
    const port = Number(binding?.HostPort);
    if (!Number.isInteger(port) || port <= 0) return null;
    const host = this.publishAddress === '0.0.0.0' ? '127.0.0.1' : this.publishAddress === '::' ? '::1' : this.publishAddress;
    return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }

  /**
   * Requests through the published port reach the gateway from Docker's bridge, not loopback: `/readyz` answers its
   * full body (failing, uptimeMs) only with the gateway token.
   */
  private authorization(agent: Agent): Record<string, string> {
    const token = this.secrets.decrypt(agent.record.secrets.gatewayToken, secretAad(agent.record.agentId, 'gatewayToken'));
    return { authorization: `Bearer ${token}` };
  }

  // ---------------------------------------------------------------- capacity

  /**
   * Checks for room, then keeps the agent's memory promised until `fn` is done (so parallel starts cannot overbook). The
   * checks run one at a time: two that ran side by side could both see the last room free.
   */
  private async withCapacity<T>(
    agentId: string,
    plan: string,
    fn: () => Promise<T>,
    options: { exclude?: string[]; makeRoom?: boolean } = {},
  ): Promise<T> {
    await exclusive(this.capacityChecks, async () => {
      for (;;) {
        try {
          await this.assertCapacity([agentId, ...(options.exclude ?? [])], plan);
          break;
        } catch (error) {
          if (!(error instanceof HostFullError) || options.makeRoom === false) throw error;
          // An agent comes before the warm pool: a warm container is given up first.
          const slot = this.pool[0];
          if (slot) {
            await this.dropWarmSlot(slot);
            continue;
          }
          // Then an agent idle long enough sleeps early rather than the start being refused.
          if (!(await this.makeRoomFromIdle(agentId))) throw error;
        }
      }
      this.reserving.set(agentId, dockerLimits(plan).Memory);
    });
    try {
      return await fn();
    } finally {
      this.reserving.delete(agentId);
    }
  }

  /**
   * Throws `HostFullError` unless the plan's memory limit fits next to the limits of our running containers:
   * `sum of limits + this one <= MemTotal × memoryOvercommit − reserveBytes` (and the `maxAgents` cap). Limits, not
   * usage, are counted: a limit is what an agent may take, and an idle gateway grows to ~1.5 GB after a few turns.
   */
  private async assertCapacity(exclude: string[], plan: string): Promise<void> {
    const need = dockerLimits(plan).Memory;
    const [info, containers] = await Promise.all([
      this.engine('read engine info', () => this.docker.info() as Promise<{ MemTotal?: number }>),
      this.engine('list containers', () =>
        this.docker.listContainers({
          all: true,
          filters: {
            label: [`${DOCKER_LABELS.managed}=true`, `${DOCKER_LABELS.role}=gateway`],
            status: ['running', 'restarting', 'paused'],
          },
        }),
      ),
    ]);
    let active = 0;
    let committed = 0;
    const counted = new Set<string>();
    for (const container of containers) {
      // By name: an adopted warm container keeps its warm labels.
      const id = agentIdOfName(container.Names?.[0]) ?? container.Labels?.[DOCKER_LABELS.agentId];
      if (!id || exclude.includes(id)) continue;
      counted.add(id);
      active += 1;
      const detail = await this.orNull(() => this.engine('inspect container', () => this.docker.getContainer(container.Id).inspect()));
      committed += detail?.HostConfig.Memory || dockerLimits(container.Labels?.[DOCKER_LABELS.plan] ?? '').Memory;
    }
    for (const [id, bytes] of this.reserving) {
      if (exclude.includes(id) || counted.has(id)) continue;
      active += 1;
      committed += bytes;
    }
    const free = (info.MemTotal ?? 0) * this.options.memoryOvercommit - this.options.reserveBytes - committed;
    const byMemory = active + Math.max(0, Math.floor(free / need));
    const maxAgents = this.config.maxAgents === undefined ? byMemory : Math.min(byMemory, Math.max(0, Math.floor(this.config.maxAgents)));
    const capacity = { maxAgents, activeAgents: active, hasRoom: active < maxAgents };
    if (!capacity.hasRoom)
      throw new HostFullError(capacityMessage(capacity, { availableBytes: Math.max(0, free), memoryPerAgentBytes: need }));
  }

  // ---------------------------------------------------------------- registry

  private registryPath(agentId: string): string {
    return recordFile(this.registryDir, agentId);
  }

  private ensureLoaded(): Promise<void> {
    this.loading ??= this.loadRegistry().catch((error: unknown) => {
      this.loading = null;
      throw error;
    });
    return this.loading;
  }

  private async loadRegistry(): Promise<void> {
    await mkdir(this.registryDir, { recursive: true, mode: 0o700 });
    for (const name of await readdir(this.registryDir)) {
      const id = name.endsWith('.json') ? name.slice(0, -'.json'.length) : '';
      if (!ID_PATTERN.test(id) || this.agents.has(id)) continue;
      try {
        const record = JSON.parse(await readFile(this.registryPath(id), 'utf8')) as DockerAgentRecord;
        if (record.agentId !== id) continue;
        (record.gatewayOf === undefined ? this.agents : this.members).set(id, this.newAgent(record));
      } catch {
        // a half-written or foreign file: not an agent
      }
    }
  }

  private async saveRecord(agent: Agent): Promise<void> {
    agent.record.updatedAt = new Date().toISOString();
    if (!existsSync(this.registryDir)) await mkdir(this.registryDir, { recursive: true, mode: 0o700 });
    await writeRecord(this.registryPath(agent.record.agentId), agent.record);
  }

  // ---------------------------------------------------------------- internals

  private assertOpen(): void {
    if (this.shuttingDown) throw new Error('The agent host is shut down');
  }

  /** An agent with a container of its own (one deleted while its gateway stays for its members is not found). */
  private async get(agentId: string): Promise<Agent> {
    this.assertOpen();
    await this.ensureLoaded();
    const agent = this.agents.get(agentId);
    if (!agent || agent.record.retired) throw new AgentNotFoundError(agentId);
    return agent;
  }

  /** An agent living in another agent's container, or undefined. */
  private async member(agentId: string): Promise<Agent | undefined> {
    this.assertOpen();
    await this.ensureLoaded();
    return this.members.get(agentId);
  }

  private newAgent(record: DockerAgentRecord): Agent {
    return {
      record,
      lock: Promise.resolve(),
      transition: null,
      readyFor: null,
      warmedFor: null,
      readyAt: null,
      lastError: null,
      events: [],
      pairedFor: null,
      pairing: null,
      lastActiveAt: null,
      schedulerRestarts: new SchedulerRestarts(),
      schedulerDown: null,
      warmSlot: false,
      poolReady: false,
      poolConn: null,
    };
  }

  private log(agent: Agent, line: string): void {
    // Wall clock: the line's date, shown beside the engine's own log lines.
    agent.events.push({ at: Date.now(), line });
    for (const listener of this.logListeners.get(agent.record.agentId) ?? []) listener(line);
    if (agent.events.length > this.options.hostLogLines) agent.events.splice(0, agent.events.length - this.options.hostLogLines);
  }

  private inspect(agentId: string): Promise<ContainerInfo | null> {
    return this.orNull(() => this.engine('inspect container', () => this.docker.getContainer(dockerContainerName(agentId)).inspect()));
  }

  /**
   * dockerode serializes every option of a POST into the query string as well as the body; with `_query`/`_body`
   * only the name goes into the URL, so the container's environment (tokens) never appears in a request line.
   */
  private withQuery(query: Record<string, string>, body: Record<string, unknown>): Docker.ContainerCreateOptions {
    return { _query: query, _body: body } as unknown as Docker.ContainerCreateOptions;
  }

  /** Runs an engine call, turning transport failures into `DockerUnavailableError` and error answers into `DockerEngineError`. */
  private async engine<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof DockerUnavailableError || error instanceof DockerEngineError) throw error;
      const failure = error as Error & { code?: string; statusCode?: number; json?: unknown };
      if (failure.code && UNREACHABLE.has(failure.code)) throw new DockerUnavailableError(this.socketPath, failure.code, { cause: error });
      if (typeof failure.statusCode === 'number') {
        const json = failure.json as { message?: unknown } | Buffer | null | undefined;
        // dockerode keeps the engine's JSON for plain requests; for streamed ones only its own message, which quotes it.
        const detail =
          json && !Buffer.isBuffer(json) && typeof json.message === 'string'
            ? json.message
            : Buffer.isBuffer(json) && json.length > 0
              ? json.toString('utf8').trim()
              : failure.message.replace(/^\(HTTP code \d+\) [^-]*- /, '').trim();
        throw new DockerEngineError(what, detail, failure.statusCode, { cause: error });
      }
      throw error;
    }
  }

  /** `null` when the engine answers 404 (no such container, image or volume). */
  private async orNull<T>(fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (error) {
      if (engineStatus(error) === 404) return null;
      throw error;
    }
  }

  private async ignoreStatus(statuses: number[], fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (error) {
      const status = engineStatus(error);
      if (status === null || !statuses.includes(status)) throw error;
    }
  }
}
