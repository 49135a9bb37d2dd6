import type { Hibernation } from '../shared/idle.js';
import type { RosterFields } from '../shared/roster.js';
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { planResources } from '@aop/core';
import type { AgentSpec, LlmSpec } from '../host.js';
import { checkAgentEnv } from '../shared/openclaw-config.js';
import type { SealedSpecRecord } from '../shared/sealed-spec.js';

/** The gateway's port inside every agent container (spec §4.10 probes; also HTTP and WebSocket). */
export const GATEWAY_PORT = 18789;
export const PORT_KEY = `${GATEWAY_PORT}/tcp`;
export const GIB = 1024 ** 3;
export const SECOND_NS = 1_000_000_000;

/**
 * A plan's container limits: its resources in the plan catalogue (a plan missing there gets the smallest size, never
 * an unlimited container). MemorySwap equal to Memory: no swap, so the limit is the memory the agent really gets.
 */
export function dockerLimits(plan: string): { Memory: number; MemorySwap: number; NanoCpus: number } {
  const { memoryGib, cpus } = planResources(plan);
  return { Memory: memoryGib * GIB, MemorySwap: memoryGib * GIB, NanoCpus: Math.round(cpus * SECOND_NS) };
}

/**
 * The registry entry of an agent (`docker-agents/<agentId>.json`, 0600). Tokens, the LLM key and the agent's variables
 * are sealed; the gateway it is in, with customer-scoped gateways, in `RosterFields` (a member has no container).
 */
export interface DockerAgentRecord extends RosterFields {
  agentId: string;
  userId: string;
  plan: string;
  config: Record<string, unknown>;
  version: string;
  /** The image the agent runs (or will run on its next start). */
  image: string;
  /** What the agent should be doing; `restore()` starts the `running` ones whose container is not running. */
  desired: 'running' | 'stopped';
  llm: (Omit<LlmSpec, 'apiKey'> & { apiKey: string }) | null;
  secrets: SealedSpecRecord['secrets'];
  /**
   * The platform device's pairing with this agent's gateway: its `deviceToken` sealed. The pairing itself lives in
   * the state volume (OpenClaw's device store), so it outlives containers; a new device id means a new pairing.
   */
  platformDevice?: { deviceId: string; deviceToken: string; pairedAt: string };
  /**
   * The state volume when it is not `dockerStateVolumeName(agentId)`: an agent that adopted a warm container keeps that
   * container's volume (`stateVolumeOf`).
   */
  volume?: string;
  /** Hibernated since, and when to wake it for its next due job; absent or null when awake (shared/idle.ts). */
  hibernation?: Hibernation | null;
  createdAt: string;
  updatedAt: string;
}

export const DOCKER_LABELS = {
  managed: 'aop.managed',
  agentId: 'aop.agent-id',
  userId: 'aop.user-id',
  /** `gateway`, `state`, `backup` or `helper`. */
  role: 'aop.role',
  plan: 'aop.plan',
  version: 'aop.openclaw-version',
  /** Hash of everything the container was created with (image, env, limits…); a mismatch recreates it. */
  configHash: 'aop.config-hash',
  /**
   * `true` on a warm container and its volume, which keep it when an agent adopts them (labels cannot change): such a
   * container is known by its name (`aop-agent-<agentId>` once adopted), such a volume by the record's `volume`.
   */
  warmPool: 'aop.warm-pool',
} as const;

export const dockerContainerName = (agentId: string) => `aop-agent-${agentId}`;
export const dockerStateVolumeName = (agentId: string) => `aop-agent-${agentId}-state`;
/** The agent's state volume: its own, or the warm container's it adopted. */
export const stateVolumeOf = (record: Pick<DockerAgentRecord, 'agentId' | 'volume'>) =>
  record.volume ?? dockerStateVolumeName(record.agentId);
/** The agent id of a container by its name (`/aop-agent-<agentId>`, as the engine lists it), else null. */
export const agentIdOfName = (name: string | undefined) => /^\/?aop-agent-(.+)$/.exec(name ?? '')?.[1] ?? null;
/**
 * The gateway's secrets (`secretFileContents`: gateway token, LLM key, channel tokens) in the state volume, 0600 and
 * the gateway user's, where the config's SecretRefs point: a running gateway can be given others without a new
 * container (how a warm container is adopted). The agent's own variables (`agentEnv`) stay in its environment.
 */
export const SECRET_FILE_NAME = 'aop-secrets.json';
export const ownLabels = (agentId: string, role: string) => ({
  [DOCKER_LABELS.managed]: 'true',
  [DOCKER_LABELS.agentId]: agentId,
  [DOCKER_LABELS.role]: role,
});
/**
 * Docker's own health check, run inside the container: `/readyz` from loopback (where OpenClaw answers the full body
 * without a token). Docker then reports `starting`/`healthy`/`unhealthy` (spec §3.2 "container health statuses").
 */
const READY_CHECK = `fetch('http://127.0.0.1:${GATEWAY_PORT}/readyz',{signal:AbortSignal.timeout(4000)}).then(r=>r.json()).then(b=>process.exit(b.ready===true?0:1),()=>process.exit(1))`;

/** Everything of the host's configuration that goes into an agent's container. */
export interface ContainerSettings {
  command: string[];
  user: string;
  stateDir: string;
  network: string;
  publishAddress: string;
  pidsLimit: number;
  readyTimeoutMs: number;
  stopTimeoutMs: number;
}

/**
 * The container an agent runs in, and the hash of what it was created with: the host recreates a container whose
 * hash label no longer matches, so the hash material (and its order) must only change with a new `format`.
 */
export class ContainerSpec {
  constructor(private readonly settings: ContainerSettings) {}

  containerBody(
    record: DockerAgentRecord,
    spec: Pick<AgentSpec, 'agentEnv'>,
    extraLabels: Record<string, string> = {},
  ): Record<string, unknown> {
    const env: Record<string, string> = {
      LANG: 'C.UTF-8',
      MALLOC_ARENA_MAX: '2',
      OPENCLAW_STATE_DIR: this.settings.stateDir,
      OPENCLAW_CONFIG_PATH: posix.join(this.settings.stateDir, 'openclaw.json'),
      OPENCLAW_NO_AUTO_UPDATE: '1',
      OPENCLAW_DISABLE_BONJOUR: '1',
      OPENCLAW_OFFLINE: '1',
      ...checkAgentEnv(spec.agentEnv),
    };
    return {
      Image: record.image,
      Cmd: this.settings.command,
      User: this.settings.user,
      Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
      Labels: {
        ...ownLabels(record.agentId, 'gateway'),
        [DOCKER_LABELS.userId]: record.userId,
        [DOCKER_LABELS.plan]: record.plan,
        [DOCKER_LABELS.version]: record.version,
        [DOCKER_LABELS.configHash]: this.configHash(record),
        ...extraLabels,
      },
      ExposedPorts: { [PORT_KEY]: {} },
      StopSignal: 'SIGTERM',
      StopTimeout: Math.ceil(this.settings.stopTimeoutMs / 1000),
      Healthcheck: {
        Test: ['CMD', 'node', '-e', READY_CHECK],
        Interval: 30 * SECOND_NS,
        Timeout: 5 * SECOND_NS,
        Retries: 3,
        StartPeriod: Math.ceil(this.settings.readyTimeoutMs / 1000) * SECOND_NS,
        StartInterval: 2 * SECOND_NS,
      },
      HostConfig: {
        ...dockerLimits(record.plan),
        PidsLimit: this.settings.pidsLimit,
        RestartPolicy: { Name: 'unless-stopped', MaximumRetryCount: 0 },
        PortBindings: { [PORT_KEY]: [{ HostIp: this.settings.publishAddress, HostPort: '' }] },
        Mounts: [{ Type: 'volume', Source: stateVolumeOf(record), Target: this.settings.stateDir }],
        Init: true, // reaps the gateway's helper processes
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges:true'],
        LogConfig: { Type: 'local', Config: { 'max-size': '10m', 'max-file': '3' } },
        NetworkMode: this.settings.network,
      },
    };
  }

  /** What the container was created with; sealed secrets change exactly when `configure` changes a token. */
  configHash(record: DockerAgentRecord): string {
    const material = {
      // 2: secrets moved from the environment into the state volume's secret file.
      format: 2,
      image: record.image,
      command: this.settings.command,
      user: this.settings.user,
      stateDir: this.settings.stateDir,
      network: this.settings.network,
      publishAddress: this.settings.publishAddress,
      limits: dockerLimits(record.plan),
      pidsLimit: this.settings.pidsLimit,
      readyTimeoutMs: this.settings.readyTimeoutMs,
      stopTimeoutMs: this.settings.stopTimeoutMs,
      secrets: record.secrets,
      llm: record.llm,
      volume: stateVolumeOf(record),
    };
    return createHash('sha256').update(JSON.stringify(material)).digest('hex').slice(0, 32);
  }
}
