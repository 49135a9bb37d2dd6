import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { Readable, Writable } from 'node:stream';
import { DomainError, planResources } from '@aop/core';
import { type DeviceIdentity, type GatewayConnection, GatewayError, connectGateway } from '@aop/gateway-client';
import {
  ApiException,
  ApisApi,
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  Exec,
  KubeConfig,
  PatchStrategy,
  ServerConfiguration,
  type V1ConfigMap,
  type V1Container,
  type V1ContainerStatus,
  type V1Deployment,
  type V1ObjectMeta,
  type V1OwnerReference,
  type V1Pod,
  type V1ResourceRequirements,
  type V1Secret,
  type V1Status,
  createConfiguration,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { type SkillFile, busSkillFiles } from '../shared/bus-skill.js';
import {
  type AgentChanges,
  type AgentHealth,
  type AgentHost,
  type AgentSpec,
  type AgentState,
  type AgentStats,
  type AgentStatus,
  type ChannelTokens,
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
  OWN_GATEWAY_AGENT_ID,
  SharedGatewayError,
} from '../host.js';
import { MEMORY_PATHS, memoryPathsOf } from '../shared/state-layout.js';
import { approveCommand, assertApproved } from '../shared/approve-device.js';
import { LineQueue, LineSplitter, splitTimestampNs } from '../shared/log-follow.js';
import { pumpLogLines } from '../shared/log-pump.js';
import {
  AGENT_ENV_NAME,
  CHANNEL_TOKEN_ENV,
  GATEWAY_TOKEN_ENV,
  LLM_API_KEY_ENV,
  checkAgentEnv,
  configMeta,
  pointerSegment,
  secretFileContents,
} from '../shared/openclaw-config.js';
import { approvePlatformDevice } from '../shared/pairing.js';
import { PINNED_OPENCLAW_VERSION } from '../shared/runtime.js';
import { type AgentWorkspace, ProgramWorkspace } from '../shared/workspace.js';
import { GATEWAY_DOWN, connectControl, probeGateway } from '../shared/gateway-probe.js';
import { pruneOldest, updateWithRollback } from '../shared/update.js';
import { settleWithin } from '../shared/settle-within.js';
import { POOL_NEEDS_DEVICE, type PoolConnection, PoolFiller, applyAdoption, openPoolConnection } from '../shared/adoption.js';
import { warmUpGateway } from '../shared/warm-up.js';
import { onSchedulerFailure, schedulerFailure } from '../shared/scheduler-start.js';
import {
  DEFAULT_IDLE_CHECK_MS,
  DEFAULT_WAKE_LEAD_MS,
  type Due,
  asDue,
  type Hibernation,
  askIdle,
  dueToWake,
  hibernationFor,
  hibernationOf,
  keepsAwake,
  readActivityAt,
} from '../shared/idle.js';
import {
  type RosterFields,
  applyConfig,
  chooseCustomerGateway,
  leaveGateway,
  memberWorkspaceDir,
  openclawAgentIdOf,
  settleRoster,
  wantedAgentIds,
  wantsProcess,
  withdrawJoin,
} from '../shared/roster.js';
import {
  type AgentRecord,
  CONFIG_KEY,
  CONFIG_PATH,
  DATA_DIR,
  GATEWAY_CONTAINER,
  GATEWAY_PORT,
  HOME_DIR,
  type JobMount,
  KUBE_ANNOTATIONS,
  KUBE_LABELS,
  type KubeRoster,
  KubeManifests,
  MANAGED_BY,
  MEMBER_KEY,
  PREPARE_CONTAINER,
  RECORD_KEY,
  SECRET_FILE_KEY,
  SECRET_FILE_PATH,
  STATE_DIR,
  WHATSAPP_KEY,
  agentEnvRefs,
  kubeAgentName,
  kubeLabelValue,
  memberSecretData,
} from './manifests.js';

export { KUBE_ANNOTATIONS, KUBE_LABELS, kubeAgentName, kubeLabelValue } from './manifests.js';

export const DEFAULT_KUBE_NAMESPACE = 'aop-agents';
export const DEFAULT_KUBE_IMAGE_REPOSITORY = 'ghcr.io/openclaw/openclaw';

/**
 * The `kubernetes` provider: every agent is an OpenClaw gateway in its own pod, made of five objects named
 * `aop-agent-<id>` in one namespace:
 *
 * - a Deployment (1 replica, `Recreate`: the state volume is ReadWriteOnce, so two pods must never overlap),
 * - a ClusterIP Service on 18789 (the gateway's HTTP + WebSocket port),
 * - a PersistentVolumeClaim holding the OpenClaw state dir and the gateway's HOME,
 * - a Secret with the agent's own secrets only: the gateway's secret file (gateway token, channel tokens, LLM key —
 *   `secretFileContents`) and its own variables (`agentEnv`, the only keys that reach the container's environment),
 * - a ConfigMap with `openclaw.json` (`buildOpenClawConfig`, its secrets SecretRefs into the secret file) and the
 *   stored spec the host needs to rebuild everything (`repair`, `spec`).
 *
 * The init container copies the config and the secret file into a memory-backed directory of the pod (manifests.ts
 * `RUNTIME_DIR`), where the gateway reads them, OpenClaw may write its config, and the host writes a configuration
 * change into the running pod (`pods/exec`) instead of waiting for the kubelet to refresh a mounted ConfigMap.
 *
 * The cluster is the source of truth: the host keeps no registry of its own, so any number of backend replicas
 * can share one namespace, and a backend restart changes nothing for running agents.
 */

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const VERSION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Waiting reasons that will not clear up by themselves. */
const FATAL_WAITING = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
]);
const BENIGN_WAITING = new Set(['ContainerCreating', 'PodInitializing']);

/** Scaled to 0 for being idle (`hibernate`), not stopped. */
const isHibernated = (deployment: V1Deployment) => Boolean(deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.hibernatedSince]);

/** Why the scheduler of this pod is down, when the host gave up starting it again (`startAgainForScheduler`). */
function schedulerDownOf(annotations: Record<string, string>, pod: V1Pod | null): string | null {
  try {
    const down = JSON.parse(annotations[KUBE_ANNOTATIONS.schedulerDown] ?? 'null') as { pod?: unknown; reason?: unknown } | null;
    return down && pod?.metadata?.uid && down.pod === pod.metadata.uid && typeof down.reason === 'string' ? down.reason : null;
  } catch {
    return null;
  }
}

/** The metadata patch that wakes a hibernated agent: its hibernation annotations removed. */
const AWAKE = {
  annotations: { [KUBE_ANNOTATIONS.hibernatedSince]: null, [KUBE_ANNOTATIONS.wakeAt]: null, [KUBE_ANNOTATIONS.dueByAgent]: null },
};

/** A hibernation as the Deployment's annotations keep it (`hibernationOf`, `hibernationFor`). */
const hibernationAnnotations = (hibernation: Hibernation) => ({
  [KUBE_ANNOTATIONS.hibernatedSince]: hibernation.since,
  [KUBE_ANNOTATIONS.wakeAt]: hibernation.wakeAt,
  [KUBE_ANNOTATIONS.dueByAgent]: hibernation.dueByAgent ? JSON.stringify(hibernation.dueByAgent) : null,
});

/** The hibernation a Deployment's annotations say (null: awake); due times that do not parse are left out. */
function hibernationIn(deployment: V1Deployment): Hibernation | null {
  const annotations = deployment.metadata?.annotations ?? {};
  const since = annotations[KUBE_ANNOTATIONS.hibernatedSince];
  if (!since) return null;
  let dueByAgent: Record<string, number> | undefined;
  try {
    const parsed: unknown = JSON.parse(annotations[KUBE_ANNOTATIONS.dueByAgent] ?? 'null');
    if (parsed && typeof parsed === 'object' && Object.values(parsed).every((t) => typeof t === 'number'))
      dueByAgent = parsed as Record<string, number>;
  } catch {
    dueByAgent = undefined;
  }
  return { since, wakeAt: annotations[KUBE_ANNOTATIONS.wakeAt] ?? null, dueByAgent };
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const iso = (value: Date | string | undefined | null): string | null =>
  value === undefined || value === null ? null : value instanceof Date ? value.toISOString() : new Date(value).toISOString();
/** `0.2 s`, `12 s`: timeouts in messages. */
const seconds = (ms: number) => `${ms < 10_000 ? Number((ms / 1000).toFixed(1)) : Math.round(ms / 1000)} s`;
const millis = (value: Date | string | undefined | null): number | null => (value ? new Date(value).getTime() : null);
/** Warm pods are agents named `warm-<hex>` (`aop-agent-warm-<hex>`), labelled until an agent adopts one. */
const WARM_ID_PREFIX = 'warm-';
const WARM_LABEL = 'aop/warm-pool';
/** Set on a warm Deployment once its pod is warmed up and paired: ready to be adopted. */
const WARM_READY = 'aop/warm-ready';
/** Set on a Deployment while an agent adopts its warm pod (`starting` until removed). */
const ADOPTING = 'aop/adopting-since';
/** Whether two containers' resources are the same (what the API answers are class instances, so by value). */
const sameResources = (a: V1ResourceRequirements | undefined, b: V1ResourceRequirements | undefined) => {
  const of = (r: V1ResourceRequirements | undefined) =>
    JSON.stringify(
      [r?.limits?.cpu, r?.limits?.memory, r?.requests?.cpu, r?.requests?.memory].map((q) =>
        q === undefined ? null : parseKubeQuantity(q),
      ),
    );
  return of(a) === of(b);
};
/** The JSON Pointer of a label or annotation. */
const jsonPointer = (field: 'labels' | 'annotations', key: string) => `/metadata/${field}/${pointerSegment(key)}`;
/** How long a ready pod may wait for its first turn to be prepared before it is `running` anyway. */
const FIRST_TURN_LIMIT_MS = 120_000;
/** Whether the pod's gateway container answers its readiness probe. */
const podReady = (pod: V1Pod | undefined | null): boolean =>
  pod?.status?.containerStatuses?.find((c) => c.name === GATEWAY_CONTAINER)?.ready === true;
/** A gateway whose roster changed while its pod started (`aop/roster-pending`): applied once the pod is ready. */
const rosterPending = (deployment: V1Deployment): boolean => deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.rosterPending] === 'true';
/** A ready pod whose config carries the warm-up (`aop/first-turn: prepare`) and whose first turn is still to be prepared. */
const firstTurnPending = (deployment: V1Deployment, pod: V1Pod | undefined | null): boolean => {
  const annotations = deployment.metadata?.annotations ?? {};
  const uid = pod?.metadata?.uid;
  if (annotations[KUBE_ANNOTATIONS.firstTurn] !== 'prepare' || !uid || annotations[KUBE_ANNOTATIONS.preparedPod] === uid) return false;
  const ready = pod?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
  const since = millis(ready?.lastTransitionTime);
  return since === null || Date.now() - since < FIRST_TURN_LIMIT_MS;
};
/** An adoption takes seconds; one still marked after this was cut short (its backend stopped). */
const ADOPTION_LIMIT_MS = 120_000;
/** Where a Secret written before the secret file held the gateway token and the LLM key (read, never written). */
const LEGACY_SECRET_ENV = { gatewayToken: GATEWAY_TOKEN_ENV, llmApiKey: LLM_API_KEY_ENV } as const;
/** Whether the Deployment's pod reads its config and secrets from the runtime directory (every one made since it came). */
const readsRuntimeDir = (deployment: V1Deployment) =>
  containerOf(deployment, GATEWAY_CONTAINER)?.env?.some((e) => e.name === 'OPENCLAW_CONFIG_PATH' && e.value === CONFIG_PATH) === true;
const unbase64 = (value: string | undefined) => (value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8'));
const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/** A Kubernetes quantity (`250m`, `1`, `12345678n`, `1Gi`, `512Ki`, `1e3`) as a number of base units. */
export function parseKubeQuantity(quantity: string): number {
  const match = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(quantity.trim());
  if (!match) throw new Error(`Invalid quantity: ${quantity}`);
  const factors: Record<string, number> = {
    '': 1,
    n: 1e-9,
    u: 1e-6,
    m: 1e-3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    P: 1e15,
    E: 1e18,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
    Pi: 2 ** 50,
    Ei: 2 ** 60,
  };
  const factor = factors[match[2]!];
  if (factor === undefined) throw new Error(`Invalid quantity suffix: ${quantity}`);
  return Number(match[1]) * factor;
}

/** A failed Kubernetes API call, with what was being done and what the API server said. */
export class KubernetesApiError extends Error {
  override readonly name = 'KubernetesApiError';
  constructor(
    message: string,
    /** HTTP status from the API server; null when it did not answer. */
    readonly status: number | null,
    /** `Status.reason` (`NotFound`, `AlreadyExists`, `Forbidden`, …). */
    readonly reason: string | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const isNotFound = (error: unknown) => error instanceof KubernetesApiError && error.status === 404;
const isConflict = (error: unknown) => error instanceof KubernetesApiError && error.status === 409;

export interface KubeConfigSource {
  clusters: unknown[];
  users: unknown[];
  contexts: unknown[];
  currentContext: string;
}

export interface KubernetesHostOptions {
  /**
   * Where the cluster is: a kubeconfig file path, kubeconfig contents (`KubeConfig.loadFromOptions`), or a ready
   * `KubeConfig`. Without it: the in-cluster service account when running in a pod, else an error.
   */
  kubeconfig?: string | KubeConfigSource | KubeConfig;
  /** kubeconfig context (default: its current context). */
  context?: string;
  /** Namespace of the agents (default `aop-agents`); it must exist. */
  namespace?: string;
  /** Image repository (`:<version>` is appended) or a template containing `{version}`. Default `ghcr.io/openclaw/openclaw`. */
  image?: string;
  /** Image for the init container and maintenance Jobs (needs `sh`, `mkdir`, `rm`, `cp`); default: the agent's image. */
  utilityImage?: string;
  imagePullSecrets?: string[];
  /** Version for agents whose spec names none (default: the pinned one). */
  defaultVersion?: string;
  /** Storage class of the state volumes (default: the cluster's default). It must support PVC cloning for `update`. */
  storageClass?: string;
  /** Size of a state volume (default `5Gi`). */
  storageSize?: string;
  /** CPU request as a share of the limit (default 0.25: gateways idle most of the time, CPU is compressible). */
  cpuRequestRatio?: number;
  /** Memory request as a share of the limit (default 1: memory is not compressible; an overcommitted node OOM-kills). */
  memoryRequestRatio?: number;
  /** uid/gid the gateway runs as and owns its volume with (default 1000, the `node` user of the OpenClaw image). */
  runAsUser?: number;
  /**
   * Gateway base URL behind a Service (default `http://<name>.<namespace>.svc:18789`), for port-forwards or ingresses:
   * `name` is the Service's, `agentId` the agent's ('' for a warm pod, which is nobody's yet).
   */
  serviceUrl?: (target: { name: string; agentId: string }) => string;
  /** `update`/`waitUntilReady`: how long a gateway may take to become ready (default 300 s: image pull + ~25 s start). */
  readyTimeoutMs?: number;
  /** How long pods may take to go away after scaling to 0 (default 120 s; the pod's grace period is 60 s). */
  stopTimeoutMs?: number;
  /** How long a maintenance Job (backup check, restore, memory reset) may run (default 600 s). */
  jobTimeoutMs?: number;
  /** Poll interval while waiting for the cluster (default 2 s). */
  pollMs?: number;
  /** Timeout of one Kubernetes API request (default 30 s). */
  requestTimeoutMs?: number;
  /** State backups (clone PVCs) kept per agent after a successful update (default 3). */
  keepBackups?: number;
  /**
   * The platform's device identity (`loadPlatformDevice`). The backend reaches a gateway through its Service, a
   * non-loopback peer for OpenClaw: a token-only connection there gets no scopes. With this set, `controlCredentials`
   * pairs the device, approving it with `openclaw devices approve` exec'd in the gateway container.
   */
  platformDevice?: DeviceIdentity;
  /** OpenClaw's CLI in the agent image (default `['openclaw']`). */
  cliCommand?: string[];
  /** Bound on one in-container CLI run (default 60 s). */
  execTimeoutMs?: number;
  /** The image's Node, which runs the workspace program with `pods/exec` for workspace browsing (default `['node']`). */
  nodeCommand?: string[];
  /**
   * Hibernation (default 0: never), as on the other providers (shared/idle.ts): a gateway on which nothing happened for
   * this long, as it reports over the platform device's connection, is scaled to 0 with its state volume kept
   * (`hibernated`, the Deployment's `aop/hibernated-since` annotation), and scaled back to 1 by `start` (a message
   * wakes it that way) or `wakeLeadMs` before its next due cron job or heartbeat (`aop/wake-at`).
   */
  idleMs?: number;
  /** How often running gateways are asked for their activity, and hibernated agents' due times checked (default 60 s). */
  idleCheckMs?: number;
  /** A hibernated agent is scaled up this long before its next due job (default 90 s; a first image pull takes longer). */
  wakeLeadMs?: number;
  /**
   * Warm pods kept started, warmed up and paired with the platform device, for `create` to adopt (default 0; needs
   * `platformDevice`): the agent is live in seconds instead of a pod's start. Counted in the namespace, so every
   * backend replica fills toward the same target.
   */
  warmPool?: number;
  /** The plan whose resources warm pods have (default `solo`); agents of any plan with the same resources adopt them. */
  warmPoolPlan?: string;
  /** A warm pod's start waits until no agent was created for this long (default 20 s). */
  refillQuietMs?: number;
  /**
   * Customer-scoped gateways, as on the other providers (default 1: each agent has its own pod; the backend's
   * `AGENTS_PER_GATEWAY` is 8): a customer's later agent joins the running pod of one of the customer's gateways as a
   * further isolated OpenClaw agent, its workspace `workspace-<id>` on that gateway's volume, its own objects (a
   * ConfigMap and a Secret, component `member`) owned by the gateway's Deployment. Needs `platformDevice`.
   */
  agentsPerGateway?: number;
}

interface Agent {
  name: string;
  deployment: V1Deployment;
}

/** An agent in another agent's gateway (customer-scoped gateways), as its ConfigMap describes it. */
interface Member {
  agentId: string;
  userId: string;
  /** Its objects' name (`kubeAgentName`). */
  name: string;
  /** Its gateway's Deployment. */
  gateway: string;
  record: AgentRecord;
  desired: 'running' | 'stopped';
  quietJobs: string[];
}

/** Loads the cluster configuration: explicit kubeconfig, else in-cluster. */
export function loadKubeConfig(source: KubernetesHostOptions['kubeconfig'], context?: string): KubeConfig {
  let kc: KubeConfig;
  if (source instanceof KubeConfig) kc = source;
  else {
    kc = new KubeConfig();
    if (typeof source === 'string') kc.loadFromFile(source);
    else if (source) kc.loadFromOptions(source);
    else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
    else throw new Error('No Kubernetes cluster configured: give a kubeconfig, or run the backend inside the cluster');
  }
  if (context) kc.setCurrentContext(context);
  if (!kc.getCurrentCluster()) throw new Error(`The kubeconfig has no cluster for context "${kc.getCurrentContext()}"`);
  return kc;
}

export class KubernetesAgentHost implements AgentHost {
  readonly provider = 'kubernetes';
  readonly namespace: string;
  /** The API server's URL, for messages. */
  readonly server: string;
  private readonly apps: AppsV1Api;
  private readonly core: CoreV1Api;
  private readonly batch: BatchV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly apis: ApisApi;
  private readonly settings: Required<
    Pick<
      KubernetesHostOptions,
      | 'storageSize'
      | 'cpuRequestRatio'
      | 'memoryRequestRatio'
      | 'runAsUser'
      | 'readyTimeoutMs'
      | 'stopTimeoutMs'
      | 'jobTimeoutMs'
      | 'pollMs'
      | 'requestTimeoutMs'
      | 'keepBackups'
    >
  >;
  private readonly manifests: KubeManifests;
  private readonly locks = new Map<string, Promise<unknown>>();
  private closed = false;
  private readonly idleTimer: NodeJS.Timeout | null = null;
  private checkingIdle = false;
  /** The latest activity each gateway reported (wall clock ms), read by the idle check of this backend replica. */
  private readonly lastActiveAt = new Map<string, number>();
  private readonly kc: KubeConfig;
  /**
   * The platform device's token per agent and the pod it was verified on. Kept in memory only: the pairing itself is
   * in the gateway's state volume, and one signed connect after a backend restart hands the token out again.
   */
  private readonly paired = new Map<string, { podUid: string; deviceToken: string }>();
  private readonly pairing = new Map<string, Promise<ControlCredentials>>();
  /** Refills the warm pool (shared/adoption.ts). */
  private readonly filler: PoolFiller;
  /** Unadopted warm Deployments in the namespace at the last look (any replica's), and ones this replica is making. */
  private warmKnown = 0;
  /** Of those, the ones ready to be adopted. */
  private warmReady = 0;
  /** When this replica last listed the namespace's warm pods (wall clock ms). */
  private warmLookedAt = 0;
  /** Agents this replica is creating, and when it last created one (a warm pod's start waits for both). */
  private creating = 0;
  private lastCreatedAt = 0;
  /**
   * Pods readied (or being readied) by this replica — a first turn, a pending roster — by pod uid and kind
   * (`prepareReadyPod`); the latest 1000.
   */
  private readonly preparing = new Map<string, Promise<void>>();
  /** The control connection opened on each warm pod this replica made, kept for its adoption (by Deployment name). */
  private readonly poolConns = new Map<string, Promise<PoolConnection | null>>();

  constructor(private readonly options: KubernetesHostOptions = {}) {
    const kc = loadKubeConfig(options.kubeconfig, options.context);
    this.kc = kc;
    this.namespace = options.namespace ?? DEFAULT_KUBE_NAMESPACE;
    this.server = kc.getCurrentCluster()!.server;
    this.settings = {
      storageSize: options.storageSize ?? '5Gi',
      cpuRequestRatio: options.cpuRequestRatio ?? 0.25,
      memoryRequestRatio: options.memoryRequestRatio ?? 1,
      runAsUser: options.runAsUser ?? 1000,
      readyTimeoutMs: options.readyTimeoutMs ?? 300_000,
      stopTimeoutMs: options.stopTimeoutMs ?? 120_000,
      jobTimeoutMs: options.jobTimeoutMs ?? 600_000,
      pollMs: options.pollMs ?? 2_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      keepBackups: options.keepBackups ?? 3,
    };
    // Every request gets a timeout: a black-holed API server must not hang a backend request forever.
    const timeoutMs = this.settings.requestTimeoutMs;
    const configuration = createConfiguration({
      baseServer: new ServerConfiguration(this.server, {}),
      authMethods: { default: kc },
      promiseMiddleware: [
        {
          pre: async (context) => {
            context.setSignal(AbortSignal.timeout(timeoutMs));
            return context;
          },
          post: async (context) => context,
        },
      ],
    });
    this.apps = new AppsV1Api(configuration);
    this.core = new CoreV1Api(configuration);
    this.batch = new BatchV1Api(configuration);
    this.custom = new CustomObjectsApi(configuration);
    this.apis = new ApisApi(configuration);
    this.manifests = new KubeManifests(
      this.namespace,
      this.settings,
      options,
      (version) => this.imageFor(version),
      (plan) => this.resourcesFor(plan),
    );
    if ((options.idleMs ?? 0) > 0) {
      this.idleTimer = setInterval(() => void this.checkIdle(), this.idleCheckMs);
      this.idleTimer.unref();
    }
    this.filler = new PoolFiller({
      short: () => !this.closed && this.warmKnown < this.poolTarget,
      busy: () => this.creating > 0 || Date.now() - this.lastCreatedAt < (this.options.refillQuietMs ?? 20_000),
      add: () => this.addWarmPod(),
    });
  }

  get defaultVersion(): string {
    return this.options.defaultVersion ?? PINNED_OPENCLAW_VERSION;
  }

  imageFor(version: string): string {
    const base = this.options.image ?? DEFAULT_KUBE_IMAGE_REPOSITORY;
    return base.includes('{version}') ? base.replaceAll('{version}', version) : `${base}:${version}`;
  }

  /**
   * The gateway's base URL behind the Service `name` of `agentId` (HTTP; the WebSocket is the same with `ws:`). A warm
   * pod's own id is nobody's: the template gets ''.
   */
  serviceUrl(name: string, agentId = ''): string {
    const owner = agentId.startsWith(WARM_ID_PREFIX) ? '' : agentId;
    return this.options.serviceUrl?.({ name, agentId: owner }) ?? `http://${name}.${this.namespace}.svc:${GATEWAY_PORT}`;
  }

  /**
   * Memory/CPU requests and limits of a plan's gateway container: the limits are the plan's resources in the plan
   * catalogue (a plan missing there gets the smallest size), the requests derive from them with the ratios.
   */
  resourcesFor(plan: string): V1ResourceRequirements {
    const { memoryGib, cpus } = planResources(plan);
    const limits = { memory: `${memoryGib}Gi`, cpu: String(cpus) };
    const cpu = cpus * this.settings.cpuRequestRatio;
    const memory = memoryGib * 2 ** 30 * this.settings.memoryRequestRatio;
    return {
      requests: {
        cpu: `${Math.max(1, Math.round(cpu * 1000))}m`,
        memory: this.settings.memoryRequestRatio === 1 ? limits.memory : `${Math.max(1, Math.round(memory / 2 ** 20))}Mi`,
      },
      limits,
    };
  }

  // ---------------------------------------------------------------- lifecycle

  async create(spec: AgentSpec): Promise<AgentState> {
    this.assertOpen();
    if (!ID_PATTERN.test(spec.agentId) || spec.agentId.startsWith(WARM_ID_PREFIX)) throw new Error(`Invalid agent id: ${spec.agentId}`);
    if (!spec.gatewayToken) throw new Error('A gateway token is required');
    const version = spec.version ?? this.defaultVersion;
    if (!VERSION_PATTERN.test(version)) throw new Error(`Invalid OpenClaw version: ${version}`);
    this.creating += 1;
    try {
      return await this.exclusive(spec.agentId, async () => {
        // Also under another name: an agent that adopted a warm pod keeps its objects' names.
        if ((await this.findAgent(spec.agentId, { retired: true })) || (await this.findMember(spec.agentId))) {
          throw new AgentExistsError(spec.agentId);
        }
        const gateway = await this.customerGateway(spec, version);
        if (gateway) return this.join(gateway, spec, version);
        const adopted = await this.adoptWarmPod(spec, version);
        return adopted ?? this.stateOf(await this.createObjects(spec, version));
      });
    } finally {
      this.creating -= 1;
      this.lastCreatedAt = Date.now();
      this.filler.start();
    }
  }

  /** Creates the agent's objects and scales it to 1; answers the Deployment's name. A warm pod is made the same way. */
  private async createObjects(spec: AgentSpec, version: string, options: { warm?: boolean } = {}): Promise<string> {
    const name = kubeAgentName(spec.agentId);
    const record = this.manifests.recordOf(spec);
    // The Deployment comes first, with no pod: it owns the Secret, ConfigMap and Service (garbage-collected with
    // it), and the pod only starts once they exist.
    const manifest = this.manifests.deploymentManifest(name, record, version, 0, { alwaysWarmUp: options.warm === true });
    if (options.warm) manifest.metadata!.labels![WARM_LABEL] = 'true';
    let deployment: V1Deployment;
    try {
      deployment = await this.k8s(`create deployment ${name}`, () =>
        this.apps.createNamespacedDeployment({ namespace: this.namespace, body: manifest }),
      );
    } catch (error) {
      if (isConflict(error)) throw new AgentExistsError(spec.agentId);
      throw error;
    }
    const owner = ownerReference(deployment);
    try {
      await this.k8s(`create secret ${name}`, () =>
        this.core.createNamespacedSecret({ namespace: this.namespace, body: this.manifests.secretManifest(name, record, spec, owner) }),
      );
      const skills = await this.skillFiles();
      await this.k8s(`create configmap ${name}`, () =>
        this.core.createNamespacedConfigMap({
          namespace: this.namespace,
          // A warm pod has no customer's model: its default is the warm-up's, so its first turn can be prepared.
          body: this.manifests.configMapManifest(name, record, spec, owner, skills, { alwaysWarmUp: options.warm === true }),
        }),
      );
      await this.k8s(`create service ${name}`, () =>
        this.core.createNamespacedService({ namespace: this.namespace, body: this.manifests.serviceManifest(name, record, owner) }),
      );
      // Not owned: a deleted Deployment (by hand, by mistake) must not take the agent's state with it.
      await this.k8s(`create persistentvolumeclaim ${name}`, () =>
        this.core.createNamespacedPersistentVolumeClaim({ namespace: this.namespace, body: this.manifests.pvcManifest(name, record) }),
      );
      await this.scale(name, 1);
    } catch (error) {
      await this.removeObjects(spec.agentId, name).catch(() => undefined);
      throw error;
    }
    return name;
  }

  /** Scales to 1; a hibernated agent is woken (its hibernation annotations removed in the same patch). */
  async start(agentId: string): Promise<AgentState> {
    const { member } = await this.resolve(agentId);
    if (member) return this.setMemberWanted(member, 'running');
    return this.exclusive(agentId, async () => {
      const { name, deployment } = await this.agent(agentId);
      if (deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentStopped] === 'true') return this.setFirstAgentStopped(name, false);
      if (isHibernated(deployment)) await this.patchDeployment(name, { metadata: AWAKE, spec: { replicas: 1 } });
      else await this.scale(name, 1);
      return this.stateOf(name);
    });
  }

  async stop(agentId: string): Promise<AgentState> {
    const { member } = await this.resolve(agentId);
    if (member) return this.setMemberWanted(member, 'stopped');
    return this.exclusive(agentId, async () => {
      const { name, deployment } = await this.agent(agentId);
      if ((await this.allMembers(name)).length > 0) return this.setFirstAgentStopped(name, true);
      if (isHibernated(deployment)) await this.patchDeployment(name, { metadata: AWAKE, spec: { replicas: 0 } });
      else await this.scale(name, 0);
      return this.stateOf(name);
    });
  }

  // ---------------------------------------------------------------- customer-scoped gateways

  /**
   * The Deployment of a running gateway of the customer's a new agent joins (`chooseCustomerGateway`), or null for
   * objects of its own. Only with the platform device (the roster is applied over its connection), and only a running
   * gateway: a sleeping one's new agent starts a pod of its own (a wake is a pod's start either way, and the member's
   * files are written into the running pod).
   */
  private async customerGateway(spec: AgentSpec, version: string): Promise<Agent | null> {
    const limit = this.options.agentsPerGateway ?? 1;
    if (limit <= 1 || !this.options.platformDevice) return null;
    const selector = `${KUBE_LABELS.managedBy}=${MANAGED_BY},${KUBE_LABELS.component}=gateway,${KUBE_LABELS.userId}=${kubeLabelValue(spec.userId)}`;
    const [deployments, members] = await Promise.all([
      this.k8s('list deployments of the customer', () =>
        this.apps.listNamespacedDeployment({ namespace: this.namespace, labelSelector: selector }),
      ),
      this.allMembers(),
    ]);
    const candidates = [];
    for (const deployment of deployments.items) {
      const annotations = deployment.metadata?.annotations ?? {};
      const name = deployment.metadata?.name ?? '';
      if (annotations[KUBE_ANNOTATIONS.userId] !== spec.userId || deployment.metadata?.labels?.[WARM_LABEL] === 'true') continue;
      const pods = await this.pods(name);
      const { status } = this.observed(deployment, pods);
      candidates.push({
        gateway: { name, deployment },
        userId: spec.userId,
        runtime: annotations[KUBE_ANNOTATIONS.version] ?? this.defaultVersion,
        awake: status === 'running',
        // A pod whose gateway runs but is not ready yet (the roster is applied once it is, `applyRosterAtReady`); not one
        // being adopted (that one's objects are rewritten by the adoption) nor one still being scheduled or pulled.
        starting:
          status === 'starting' &&
          annotations[ADOPTING] === undefined &&
          pods.some((pod) => pod.status?.phase === 'Running' && !pod.metadata?.deletionTimestamp),
        asleep: false,
        ownVariables: (containerOf(deployment, GATEWAY_CONTAINER)?.env ?? []).some((e) => AGENT_ENV_NAME.test(e.name)),
        memberIds: members.filter((member) => member.gateway === name).map((member) => openclawAgentIdOf(member.agentId)),
      });
    }
    return chooseCustomerGateway(spec, version, candidates, { limit, warmReady: false });
  }

  /** An agent with a gateway of its own, or a member; `AgentNotFoundError` for neither (or a deleted first agent). */
  private async resolve(agentId: string): Promise<{ agent: Agent; member: null } | { agent: null; member: Member }> {
    const agent = await this.findAgent(agentId);
    if (agent) return { agent, member: null };
    const member = await this.findMember(agentId);
    if (!member) throw new AgentNotFoundError(agentId);
    return { agent: null, member };
  }

  /** A member's objects (its ConfigMap, and its Secret when it has a model key), or null for any other id. */
  private async findMember(agentId: string): Promise<Member | null> {
    this.assertOpen();
    if (!ID_PATTERN.test(agentId)) return null;
    const name = kubeAgentName(agentId);
    try {
      const configMap = await this.k8s(`read configmap ${name}`, () =>
        this.core.readNamespacedConfigMap({ name, namespace: this.namespace }),
      );
      const member = memberOf(configMap);
      return member?.agentId === agentId ? member : null;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  /** The members of one gateway (by its Deployment's name), or of every gateway. */
  private async allMembers(gateway?: string): Promise<Member[]> {
    const selector = `${KUBE_LABELS.managedBy}=${MANAGED_BY},${KUBE_LABELS.component}=member${gateway ? `,${KUBE_LABELS.gatewayOf}=${gateway}` : ''}`;
    const list = await this.k8s('list members', () =>
      this.core.listNamespacedConfigMap({ namespace: this.namespace, labelSelector: selector }),
    );
    return list.items.flatMap((configMap) => memberOf(configMap) ?? []);
  }

  /** The gateway's Deployment of a member (its first agent may have been deleted: `retired`). */
  private async gatewayOfMember(member: Member): Promise<Agent> {
    try {
      const deployment = await this.k8s(`read deployment ${member.gateway}`, () =>
        this.apps.readNamespacedDeployment({ name: member.gateway, namespace: this.namespace }),
      );
      return { name: member.gateway, deployment };
    } catch (error) {
      if (isNotFound(error)) throw new AgentStartError(`The gateway of agent ${member.agentId} is gone`);
      throw error;
    }
  }

  /** What the gateway's config lists besides its first agent: each member's entry, workspace in the volume, own key. */
  private async rosterOf(name: string, deployment?: V1Deployment): Promise<KubeRoster> {
    const members = await this.allMembers(name);
    const annotations = deployment?.metadata?.annotations ?? {};
    return {
      mainStopped: annotations[KUBE_ANNOTATIONS.agentStopped] === 'true' || annotations[KUBE_ANNOTATIONS.retired] === 'true',
      members: await Promise.all(
        members.map(async (member) => ({
          id: openclawAgentIdOf(member.agentId),
          workspace: `${STATE_DIR}/${memberWorkspaceDir(member.agentId)}`,
          llm: member.record.llm ? { ...member.record.llm, apiKey: await this.memberKey(member) } : null,
          config: member.record.config,
          stopped: member.desired !== 'running',
        })),
      ),
    };
  }

  /** A member's model key, from its Secret. */
  private async memberKey(member: Member): Promise<string> {
    const secret = await this.k8s(`read secret ${member.name}`, () =>
      this.core.readNamespacedSecret({ name: member.name, namespace: this.namespace }),
    );
    return unbase64(secret.data?.[MEMBER_KEY]) ?? '';
  }

  /** The other platform agents in the gateway `name` than `self` (its first agent unless deleted, and its members). */
  private sharing(deployment: V1Deployment, members: readonly Member[], self: string): string[] {
    const annotations = deployment.metadata?.annotations ?? {};
    const first = annotations[KUBE_ANNOTATIONS.retired] === 'true' ? [] : [annotations[KUBE_ANNOTATIONS.agentId] ?? ''];
    const name = deployment.metadata?.name;
    return [...first, ...members.filter((member) => member.gateway === name).map((member) => member.agentId)].filter(
      (agentId) => agentId && agentId !== self,
    );
  }

  /** A gateway's own agent as the platform sees it: stopped while it is stopped in a pod running on for its members. */
  private gatewayView(state: AgentState, deployment: V1Deployment, members: readonly Member[]): AgentState {
    const view = { ...state, sharesGatewayWith: this.sharing(deployment, members, state.agentId) };
    return deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentStopped] === 'true' ? { ...view, status: 'stopped' } : view;
  }

  /** A member: its own ids, its gateway's pod; stopped when it is, else its gateway's status (starting, hibernated …). */
  private memberView(member: Member, gateway: AgentState | null, deployment: V1Deployment | null, members: readonly Member[]): AgentState {
    const own = {
      agentId: member.agentId,
      userId: member.userId,
      openclawAgentId: openclawAgentIdOf(member.agentId),
      sharesGatewayWith: deployment ? this.sharing(deployment, members, member.agentId) : [],
    };
    if (!gateway) {
      const gone = { status: 'error' as const, version: this.defaultVersion, url: null, port: null, pid: null, startedAt: null };
      return { ...own, ...gone, readyAt: null, restarts: 0, lastError: 'Its gateway is gone' };
    }
    if (member.desired === 'running') return { ...gateway, ...own };
    const { wakesAt: _wakesAt, ...rest } = gateway;
    return { ...rest, ...own, status: 'stopped', startedAt: null, readyAt: null, restarts: 0, lastError: null };
  }

  private async memberState(member: Member): Promise<AgentState> {
    const gateway = await this.gatewayOfMember(member).catch((error: unknown) => {
      if (error instanceof AgentStartError) return null;
      throw error;
    });
    if (!gateway) return this.memberView(member, null, null, []);
    const [pods, members] = await Promise.all([this.pods(gateway.name), this.allMembers(gateway.name)]);
    return this.memberView(member, this.observed(gateway.deployment, pods), gateway.deployment, members);
  }

  /**
   * A customer's later agent joins one of its running gateways: its objects (a ConfigMap with its record and wanted
   * state, a Secret with its model key), owned by the gateway's Deployment; the platform's skills into its workspace
   * (`workspace-<id>` in the gateway's volume, by exec); then the gateway's objects rewritten with it in the roster and
   * applied to the running pod (`rosterChanged`). If that fails, its objects go and it gets a pod of its own.
   */
  private async join(gateway: Agent, spec: AgentSpec, version: string): Promise<AgentState> {
    const name = kubeAgentName(spec.agentId);
    const gatewayId = gateway.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '';
    const record = this.manifests.recordOf(spec);
    const owner = ownerReference(gateway.deployment);
    const metadata = () => {
      const meta = this.manifests.metadata(name, record, 'member', owner);
      meta.labels = { ...meta.labels, [KUBE_LABELS.gatewayOf]: gateway.name };
      return meta;
    };
    try {
      const configMap = metadata();
      configMap.annotations = {
        ...configMap.annotations,
        [KUBE_ANNOTATIONS.gatewayOf]: gateway.name,
        [KUBE_ANNOTATIONS.desired]: 'running',
      };
      await this.k8s(`create configmap ${name}`, () =>
        this.core.createNamespacedConfigMap({
          namespace: this.namespace,
          body: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: configMap,
            data: { [RECORD_KEY]: `${JSON.stringify(record, null, 2)}\n` },
          },
        }),
      );
    } catch (error) {
      if (isConflict(error)) throw new AgentExistsError(spec.agentId);
      throw error;
    }
    try {
      await this.k8s(`create secret ${name}`, () =>
        this.core.createNamespacedSecret({
          namespace: this.namespace,
          body: { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: metadata(), data: memberSecretData(spec.llm) },
        }),
      );
      await this.exclusive(gatewayId, async () => {
        const pod = await this.runningPod(gateway.name);
        if (!pod) throw new Error('the gateway has no running pod');
        await this.writeMemberSkills(pod, spec.agentId);
        await this.rosterChanged(gateway.name, `agent ${spec.agentId} joins`, { start: true });
      });
    } catch (error) {
      await this.removeMember(spec.agentId, name).catch(() => undefined);
      // Its joining must not outlive it (the next roster change would not take it out of a running pod: OpenClaw
      // refuses a config that drops an entry). Nothing is lost if this fails too: the agent gets a pod of its own.
      await this.exclusive(gatewayId, () => this.undoJoin(gateway.name, spec.agentId)).catch(() => undefined);
      if (this.closed || error instanceof HostFullError) throw error;
      return this.stateOf(await this.createObjects(spec, version));
    }
    const member = await this.findMember(spec.agentId);
    if (!member) throw new AgentStartError(`Agent ${spec.agentId} was removed while it joined`);
    return this.memberState(member);
  }

  /** The platform's skills into a member's workspace in the gateway's running pod (its next pods copy them too). */
  private async writeMemberSkills(podName: string, agentId: string): Promise<void> {
    const workspace = `${STATE_DIR}/${memberWorkspaceDir(agentId)}`;
    for (const file of await this.skillFiles()) {
      const path = `${workspace}/${file.path.join('/')}`;
      const dir = path.slice(0, path.lastIndexOf('/'));
      const made = await this.execInPod(podName, ['mkdir', '-p', dir], { label: `mkdir ${dir}` });
      if (made.status.status !== 'Success')
        throw new Error(`mkdir ${dir} in pod ${podName} failed: ${made.stderr.toString('utf8').trim()}`);
      await this.writeFileInPod(podName, path, file.content.toString('utf8'));
    }
  }

  /** Deletes a member's ConfigMap and Secret. */
  private async removeMember(agentId: string, name: string): Promise<void> {
    await this.deleteQuietly(`delete configmap ${name}`, () => this.core.deleteNamespacedConfigMap({ name, namespace: this.namespace }));
    await this.deleteQuietly(`delete secret ${name}`, () => this.core.deleteNamespacedSecret({ name, namespace: this.namespace }));
    this.paired.delete(agentId);
  }

  /**
   * After a change of a gateway's agents (called holding its first agent's lock on this replica): its ConfigMap and
   * Secret rewritten with the roster as the members' objects say (`upsertConfigMap`/`upsertSecret` list them, under
   * the objects' resourceVersion: another replica's change at the same time is never lost); then the pod stops when
   * nobody wants it, and otherwise takes the roster live (`pushRoster`), its stopped agents' jobs quieted
   * (`settleRoster`). A gateway scaled to 0 (asleep, stopped) is scaled up only when the change asks for it (`start`:
   * an agent joined, started or had its memory reset, or the pod was stopped for a change of its volume); otherwise
   * its next pod starts from the objects, and a stop, a configuration or a deletion never wakes it.
   */
  private async rosterChanged(name: string, note: string, options: { start?: boolean } = {}): Promise<void> {
    const deployment = await this.writeRosterObjects(name);
    const members = await this.allMembers(name);
    if (!wantsProcess(rosterFieldsOf(deployment), members)) {
      await this.patchDeployment(name, { metadata: AWAKE, spec: { replicas: 0 } });
      return;
    }
    const { status } = this.observed(deployment, await this.pods(name));
    if (status === 'running') {
      // With no member left, the pod has the roster already: `agents.delete` took the last one out live (OpenClaw
      // would refuse a config that drops the roster's `main` entry without a deletion of its own).
      if (members.length > 0) await this.pushRoster(name, deployment, note);
      await this.settleRoster(name).catch(() => undefined);
    } else if ((deployment.spec?.replicas ?? 0) === 0) {
      // its pod starts from the objects
      if (options.start) await this.patchDeployment(name, { metadata: AWAKE, spec: { replicas: 1 } });
      else await this.rewake(name, deployment, members);
    } else {
      await this.writeStartingRoster(name);
    }
  }

  /**
   * A sleeping gateway whose roster changed (an agent stopped or deleted): woken for the jobs of the agents that still
   * want to run in it alone (`hibernationFor`).
   */
  private async rewake(name: string, deployment: V1Deployment, members: readonly Member[]): Promise<void> {
    const asleep = hibernationIn(deployment);
    if (!asleep) return;
    const hibernation = hibernationFor(asleep, wantedAgentIds(rosterFieldsOf(deployment), members), this.wakeLeadMs);
    if (hibernation.wakeAt !== asleep.wakeAt)
      await this.patchDeployment(name, { metadata: { annotations: hibernationAnnotations(hibernation) } });
  }

  /**
   * The roster for a pod on its way up: its files, if it has copied them already, and the roster applied once it is
   * ready (marked first: `starting` until then; a pod that has not copied them yet reads them from the objects).
   */
  private async writeStartingRoster(name: string): Promise<void> {
    const pod = await this.runningPod(name);
    if (!pod) return;
    await this.patchDeployment(name, { metadata: { annotations: { [KUBE_ANNOTATIONS.rosterPending]: 'true' } } });
    await this.writeRuntimeFiles(pod, name);
  }

  /** The gateway's ConfigMap and Secret rewritten with its roster as the members' objects say; answers its Deployment. */
  private async writeRosterObjects(name: string): Promise<V1Deployment> {
    const deployment = await this.k8s(`read deployment ${name}`, () =>
      this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
    );
    const spec = await this.openSpec(name, deployment);
    const record = this.manifests.recordOf(spec);
    await this.upsertConfigMap(name, record, spec);
    await this.upsertSecret(name, record, spec);
    return deployment;
  }

  /**
   * What the gateway `name` may have got of an agent whose join failed (called holding its lock, the agent's objects
   * removed): its objects rewritten without it; a running pod's roster without it when the pod got it (`withdrawJoin`),
   * a starting pod's files without it.
   */
  private async undoJoin(name: string, agentId: string): Promise<void> {
    const deployment = await this.writeRosterObjects(name);
    if (this.observed(deployment, await this.pods(name)).status === 'running') {
      await this.onGateway(name, deployment, (conn) => withdrawJoin(conn, openclawAgentIdOf(agentId)));
    } else await this.writeStartingRoster(name);
  }

  /** The gateway's config and secret file, as its objects hold them now, into a pod's runtime directory. */
  private async writeRuntimeFiles(pod: string, name: string): Promise<void> {
    const [configMap, secret] = await Promise.all([
      this.k8s(`read configmap ${name}`, () => this.core.readNamespacedConfigMap({ name, namespace: this.namespace })),
      this.k8s(`read secret ${name}`, () => this.core.readNamespacedSecret({ name, namespace: this.namespace })),
    ]);
    await this.writeFileInPod(pod, SECRET_FILE_PATH, unbase64(secret.data?.[SECRET_FILE_KEY]) ?? '');
    await this.writeFileInPod(pod, CONFIG_PATH, configMap.data?.[CONFIG_KEY] ?? '');
  }

  /**
   * The gateway's objects into its running pod: the secret file by exec, the config with `config.apply` over the
   * platform device's connection (OpenClaw re-reads the secret file and applies the roster before it answers). Pushed
   * again when the ConfigMap changed meanwhile (another replica's change), or when another push reached the gateway
   * between this one's `config.get` and `config.apply`, so the pod ends with the latest. Answers the ConfigMap's
   * `resourceVersion` it applied (null: no pod runs).
   */
  private async pushRoster(
    name: string,
    deployment: V1Deployment,
    note: string,
    options: { unlessRead?: boolean } = {},
  ): Promise<string | null> {
    let applied: string | null = null;
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      const pod = await this.runningPod(name);
      if (!pod) return applied;
      const [configMap, secret] = await Promise.all([
        this.k8s(`read configmap ${name}`, () => this.core.readNamespacedConfigMap({ name, namespace: this.namespace })),
        this.k8s(`read secret ${name}`, () => this.core.readNamespacedSecret({ name, namespace: this.namespace })),
      ]);
      await this.writeFileInPod(pod, SECRET_FILE_PATH, unbase64(secret.data?.[SECRET_FILE_KEY]) ?? '');
      const raw = configMap.data?.[CONFIG_KEY] ?? '';
      const outdated = await this.onGateway(name, deployment, async (conn) => {
        try {
          await applyConfig(conn, raw, note, options);
          return false;
        } catch (error) {
          if (attempt < 3 && error instanceof GatewayError && /config changed since last load/.test(error.message)) return true;
          throw error;
        }
      });
      if (outdated) continue;
      applied = configMap.metadata?.resourceVersion ?? null;
      const now = await this.k8s(`read configmap ${name}`, () => this.core.readNamespacedConfigMap({ name, namespace: this.namespace }));
      if (now.metadata?.resourceVersion === applied) return applied;
    }
    return applied;
  }

  /**
   * The roster as the gateway's objects hold it, applied to a pod that has just answered ready: an agent that joined
   * while it started (its objects written after the init container copied them, its files written into the pod, but
   * not certainly read by the process: only `config.apply` re-reads the secret file) is in the process before the pod
   * is called running. Nothing for a gateway without members, when the ConfigMap is still at `since` (applied
   * already), or when the process runs what its file holds (`applyConfig`'s `unlessRead`). Answers the version
   * applied; never throws (the next change of its roster applies it again).
   */
  private async applyRosterAtReady(name: string, since: string | null = null): Promise<string | null> {
    try {
      if ((await this.allMembers(name)).length === 0) return since;
      const configMap = await this.k8s(`read configmap ${name}`, () =>
        this.core.readNamespacedConfigMap({ name, namespace: this.namespace }),
      );
      if (since !== null && configMap.metadata?.resourceVersion === since) return since;
      const deployment = await this.k8s(`read deployment ${name}`, () =>
        this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
      );
      return await this.pushRoster(name, deployment, 'the agents that joined or changed while it started', { unlessRead: true });
    } catch {
      return since;
    }
  }

  /** A control connection to the gateway `name` (its token and the platform device), for `fn`. */
  private async onGateway<T>(name: string, deployment: V1Deployment, fn: (conn: GatewayConnection) => Promise<T>): Promise<T> {
    const gatewayId = deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '';
    const credentials = await this.credentialsOf(gatewayId, name);
    const conn = await connectControl(this.serviceUrl(name, gatewayId), credentials);
    try {
      return await fn(conn);
    } finally {
      await conn.close().catch(() => undefined);
    }
  }

  /** `settleRoster` (shared/roster.ts) on the gateway's agents, their quieted jobs kept in annotations. */
  private async settleRoster(name: string): Promise<void> {
    const deployment = await this.k8s(`read deployment ${name}`, () =>
      this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
    );
    type Seat = { record: RosterFields & { agentId: string; desired: string }; member: Member | null };
    const gateway: Seat = { record: { ...rosterFieldsOf(deployment), agentId: OWN_GATEWAY_AGENT_ID, desired: 'running' }, member: null };
    const members = (await this.allMembers(name)).map(
      (member): Seat => ({ record: { agentId: member.agentId, desired: member.desired, quietJobs: member.quietJobs }, member }),
    );
    await settleRoster({
      on: (fn) => this.onGateway(name, deployment, fn),
      gateway,
      members,
      save: async ({ record, member }) => {
        const annotations = {
          [KUBE_ANNOTATIONS.quietJobs]: record.quietJobs?.length ? JSON.stringify(record.quietJobs) : null,
          ...(member ? {} : { [KUBE_ANNOTATIONS.leftAgents]: record.leftAgents?.length ? JSON.stringify(record.leftAgents) : null }),
        };
        if (member) await this.annotateMember(member.name, annotations);
        else await this.patchDeployment(name, { metadata: { annotations } });
      },
      log: () => undefined,
    });
  }

  /** Merge-patches a member's ConfigMap's annotations (null removes one). */
  private async annotateMember(name: string, annotations: Record<string, string | null>): Promise<void> {
    await this.k8s(`annotate configmap ${name}`, () =>
      this.core.patchNamespacedConfigMap(
        { name, namespace: this.namespace, body: { metadata: { annotations } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
  }

  /** A member stopped or started: its wanted state, then its gateway's (`rosterChanged`). */
  private async setMemberWanted(member: Member, desired: 'running' | 'stopped'): Promise<AgentState> {
    const gateway = await this.gatewayOfMember(member);
    const gatewayId = gateway.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '';
    await this.exclusive(gatewayId, async () => {
      if (member.desired !== desired) await this.annotateMember(member.name, { [KUBE_ANNOTATIONS.desired]: desired });
      await this.rosterChanged(gateway.name, `agent ${member.agentId} ${desired === 'running' ? 'started' : 'stopped'}`, {
        start: desired === 'running',
      });
    });
    return this.memberState((await this.findMember(member.agentId)) ?? member);
  }

  /** The first agent of a gateway with members stopped or started (holding its lock): the pod runs on for them. */
  private async setFirstAgentStopped(name: string, stopped: boolean): Promise<AgentState> {
    await this.patchDeployment(name, { metadata: { annotations: { [KUBE_ANNOTATIONS.agentStopped]: stopped ? 'true' : null } } });
    await this.rosterChanged(name, `its first agent ${stopped ? 'stopped' : 'started'}`, { start: !stopped });
    return this.stateOf(name);
  }

  /**
   * The gateway a lifecycle action on `agentId` acts on (restart, update, repair, hibernate), by its first agent's id,
   * and the agent's state to answer with: a member's action is its gateway's (it moves every agent in it), and like
   * any of these it leaves the agent wanted running. `AgentNotFoundError` for an unknown (or deleted) agent.
   */
  private async gatewayFor(agentId: string): Promise<{ gatewayId: string; answer: () => Promise<AgentState> }> {
    const { agent, member } = await this.resolve(agentId);
    if (!member) {
      const { name, deployment } = agent;
      if (deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentStopped] === 'true') {
        await this.patchDeployment(name, { metadata: { annotations: { [KUBE_ANNOTATIONS.agentStopped]: null } } });
        await this.exclusive(agentId, () => this.rosterChanged(name, 'its first agent started', { start: true }));
      }
      return { gatewayId: agentId, answer: () => this.stateOf(name) };
    }
    const gateway = await this.gatewayOfMember(member);
    const gatewayId = gateway.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '';
    if (member.desired !== 'running') {
      await this.annotateMember(member.name, { [KUBE_ANNOTATIONS.desired]: 'running' });
      await this.exclusive(gatewayId, () => this.rosterChanged(gateway.name, `agent ${agentId} started`, { start: true }));
    }
    return { gatewayId, answer: async () => this.memberState((await this.findMember(agentId)) ?? member) };
  }

  /**
   * A member's configuration: its model and key, heartbeat and tools profile go into its entry, applied at once; the
   * rest of a configuration is the gateway's. Variables of its own and messaging channels need a pod of its own.
   */
  private async configureMember(member: Member, changes: AgentChanges): Promise<AgentState> {
    const id = member.agentId;
    if (changes.agentEnv !== undefined && Object.keys(checkAgentEnv(changes.agentEnv)).length > 0) {
      throw new SharedGatewayError(`Agent ${id} shares its gateway with the customer's other agents: it cannot have variables of its own`);
    }
    if (Object.values(changes.channelTokens ?? {}).some(Boolean)) {
      throw new SharedGatewayError(
        `Agent ${id} shares its gateway with the customer's other agents: messaging channels need a gateway of its own`,
      );
    }
    const gateway = await this.gatewayOfMember(member);
    const gatewayId = gateway.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '';
    await this.exclusive(gatewayId, async () => {
      // The record keeps the model without its key (the member's Secret has that).
      const llm = changes.llm ? (({ apiKey: _key, ...model }: LlmSpec) => model)(changes.llm) : changes.llm;
      const record: AgentRecord = {
        ...member.record,
        ...(changes.config ? { config: changes.config } : {}),
        ...(changes.plan ? { plan: changes.plan } : {}),
        ...(llm === undefined ? {} : { llm }),
      };
      await this.k8s(`patch configmap ${member.name}`, () =>
        this.core.patchNamespacedConfigMap(
          { name: member.name, namespace: this.namespace, body: { data: { [RECORD_KEY]: `${JSON.stringify(record, null, 2)}\n` } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
      );
      if (changes.llm !== undefined) {
        await this.k8s(`patch secret ${member.name}`, () =>
          this.core.patchNamespacedSecret(
            {
              name: member.name,
              namespace: this.namespace,
              body: { data: changes.llm ? memberSecretData(changes.llm) : { [MEMBER_KEY]: null } },
            },
            setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
          ),
        );
      }
      await this.rosterChanged(gateway.name, `agent ${id} configured`);
    });
    return this.memberState((await this.findMember(id)) ?? member);
  }

  /**
   * A member leaves its gateway for good: `agents.delete` with its files while a pod runs (OpenClaw drops its jobs and
   * sessions) and its sessions and workspace removed from the volume (by exec, else by a Job), or remembered on the
   * Deployment (`aop/left-agents`) to remove its jobs at the next start; then its objects. The gateway goes altogether
   * when its first agent was deleted before and this was its last member.
   */
  private async deleteMember(member: Member): Promise<void> {
    const gateway = await this.gatewayOfMember(member).catch(() => null);
    if (!gateway) return this.removeMember(member.agentId, member.name);
    const gatewayId = gateway.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '';
    await this.exclusive(gatewayId, async () => {
      const openclawId = openclawAgentIdOf(member.agentId);
      const paths = [`agents/${openclawId}`, memberWorkspaceDir(member.agentId)];
      const pod = await this.runningPod(gateway.name);
      if (pod && this.observed(gateway.deployment, await this.pods(gateway.name)).status === 'running') {
        await this.onGateway(gateway.name, gateway.deployment, (conn) => leaveGateway(conn, openclawId));
        await this.removeInPod(pod, paths);
      } else {
        const left = [...(rosterFieldsOf(gateway.deployment).leftAgents ?? []), openclawId];
        await this.patchDeployment(gateway.name, { metadata: { annotations: { [KUBE_ANNOTATIONS.leftAgents]: JSON.stringify(left) } } });
        if (pod) await this.removeInPod(pod, paths);
        else await this.removeInVolume(gateway, 'remove-agent', paths);
      }
      await this.removeMember(member.agentId, member.name);
      const annotations = gateway.deployment.metadata?.annotations ?? {};
      if (annotations[KUBE_ANNOTATIONS.retired] === 'true' && (await this.allMembers(gateway.name)).length === 0) {
        await this.removeObjects(gatewayId, gateway.name);
      } else await this.rosterChanged(gateway.name, `agent ${member.agentId} left`);
    });
  }

  /**
   * The first agent of a gateway with members is deleted (holding its lock): its sessions and notes go now (by a Job
   * on the volume, the pod stopped for it: its members see a restart), and the gateway stays, nobody's agent, until
   * its last member goes.
   */
  private async retire(agent: Agent): Promise<void> {
    const running = (agent.deployment.spec?.replicas ?? 0) > 0;
    await this.patchDeployment(agent.name, {
      metadata: { annotations: { [KUBE_ANNOTATIONS.retired]: 'true', [KUBE_ANNOTATIONS.agentStopped]: 'true' } },
      spec: { replicas: 0 },
    });
    await this.waitForNoPods(agent.name);
    await this.removeInVolume(agent, 'retire', memoryPathsOf(OWN_GATEWAY_AGENT_ID, 'workspace'));
    // Back up for its members when it ran; a sleeping one sleeps on.
    await this.rosterChanged(agent.name, 'its first agent was deleted', { start: running });
  }

  /** A member's memory reset: its sessions and notes in the gateway's volume (a Job, the pod stopped for it). */
  private async resetMemberMemory(member: Member): Promise<AgentState> {
    const gateway = await this.gatewayOfMember(member);
    const gatewayId = gateway.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '';
    await this.exclusive(gatewayId, async () => {
      await this.scale(gateway.name, 0);
      try {
        await this.waitForNoPods(gateway.name);
        await this.removeInVolume(
          gateway,
          'reset-memory',
          memoryPathsOf(openclawAgentIdOf(member.agentId), memberWorkspaceDir(member.agentId)),
        );
      } finally {
        if (member.desired !== 'running') await this.annotateMember(member.name, { [KUBE_ANNOTATIONS.desired]: 'running' });
        // Like every reset, it ends with the agent running: its gateway is started (or woken) for it.
        await this.rosterChanged(gateway.name, `memory reset of agent ${member.agentId}`, { start: true });
      }
    });
    return this.memberState((await this.findMember(member.agentId)) ?? member);
  }

  /** Removes paths (relative to the state dir) in a running pod's gateway container. */
  private async removeInPod(pod: string, relative: readonly string[]): Promise<void> {
    const run = await this.execInPod(pod, ['rm', '-rf', '--', ...relative.map((path) => `${STATE_DIR}/${path}`)], { label: 'rm' });
    if (run.status.status !== 'Success') throw new Error(`rm in pod ${pod} failed: ${run.stderr.toString('utf8').trim()}`);
  }

  /** Removes paths (relative to the state dir) from a gateway's volume with a Job (no pod may run). */
  private async removeInVolume(agent: Agent, kind: string, relative: readonly string[]): Promise<void> {
    const image =
      this.options.utilityImage ?? containerOf(agent.deployment, GATEWAY_CONTAINER)?.image ?? this.imageFor(this.defaultVersion);
    const agentId = agent.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '';
    const script = ['set -e', `cd ${STATE_DIR}`, `rm -rf -- ${relative.map(shellQuote).join(' ')}`].join('\n');
    await this.runJob(agentId, agent.name, kind, image, script, [{ volume: 'state', claim: agent.name, mountPath: DATA_DIR }]);
  }

  // ---------------------------------------------------------------- warm pool

  private get poolTarget(): number {
    return this.options.platformDevice ? Math.max(0, this.options.warmPool ?? 0) : 0;
  }

  private get poolPlan(): string {
    return this.options.warmPoolPlan ?? 'solo';
  }

  /**
   * How the warm pool stands, as this replica last saw the namespace (every fill and adoption looks, and a read more
   * than 30 s after the last look starts a new one, for the next read: other replicas fill and adopt too).
   */
  warmPoolStatus(): WarmPoolStatus {
    if (this.poolTarget > 0 && !this.closed && Date.now() - this.warmLookedAt > 30_000) {
      this.warmLookedAt = Date.now();
      void this.warmPods().catch(() => undefined);
    }
    const lastError = (this.options.warmPool ?? 0) > 0 && !this.options.platformDevice ? POOL_NEEDS_DEVICE : this.filler.lastError;
    return { target: this.poolTarget, ready: this.warmReady, starting: Math.max(0, this.warmKnown - this.warmReady), lastError };
  }

  /** The namespace's warm Deployments not adopted yet; `ready` once warmed up, paired and running. */
  private async warmPods(): Promise<Array<{ name: string; agentId: string; version: string; ready: boolean; stale: boolean }>> {
    const gateways = `${KUBE_LABELS.managedBy}=${MANAGED_BY},${KUBE_LABELS.component}=gateway`;
    const [deployments, pods] = await Promise.all([
      this.k8s('list warm deployments', () =>
        this.apps.listNamespacedDeployment({ namespace: this.namespace, labelSelector: `${gateways},${WARM_LABEL}=true` }),
      ),
      this.k8s('list pods', () => this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: gateways })),
    ]);
    const warm = deployments.items.map((deployment) => {
      const name = deployment.metadata?.name ?? '';
      const annotations = deployment.metadata?.annotations ?? {};
      const state = this.toState(
        deployment,
        pods.items.filter((pod) => pod.metadata?.labels?.[KUBE_LABELS.instance] === name),
      );
      const version = annotations[KUBE_ANNOTATIONS.version] ?? this.defaultVersion;
      const resources = containerOf(deployment, GATEWAY_CONTAINER)?.resources;
      const ready = Boolean(annotations[WARM_READY]) && state.status === 'running';
      const age = Date.now() - (millis(deployment.metadata?.creationTimestamp) ?? Date.now());
      return {
        name,
        agentId: annotations[KUBE_ANNOTATIONS.agentId] ?? '',
        version,
        ready,
        // Of another OpenClaw version or size than the pool's now (a new backend), failing, or never made ready (the
        // replica filling it stopped before): removed by the next fill.
        stale:
          version !== this.defaultVersion ||
          !sameResources(resources, this.resourcesFor(this.poolPlan)) ||
          state.status === 'error' ||
          (!ready && age > this.settings.readyTimeoutMs + FIRST_TURN_LIMIT_MS),
      };
    });
    const fresh = warm.filter((w) => !w.stale);
    this.warmLookedAt = Date.now();
    this.warmKnown = fresh.length;
    this.warmReady = fresh.filter((w) => w.ready).length;
    return warm;
  }

  /**
   * Takes a warm Deployment out of the pool with one JSON patch that first tests its warm label (so two backend
   * replicas never both take it) and then applies `then`; false when it is no longer in the pool.
   */
  private claimWarm(name: string, then: Array<{ op: string; path: string; value?: unknown }>): Promise<boolean> {
    return this.k8s(`claim warm deployment ${name}`, () =>
      this.apps.patchNamespacedDeployment({
        name,
        namespace: this.namespace,
        body: [
          { op: 'test', path: jsonPointer('labels', WARM_LABEL), value: 'true' },
          { op: 'remove', path: jsonPointer('labels', WARM_LABEL) },
          ...then,
        ],
      }),
    ).then(
      () => true,
      () => false, // taken meanwhile, or gone
    );
  }

  /**
   * One more warm pod, unless the namespace has enough (another replica may have filled it): the objects of an agent
   * named `warm-<hex>` under a pool token, the smallest plan's resources, the warm-up as its default model. Once
   * running (the platform device paired and its first turn prepared, as for any pod) it is marked `aop/warm-ready`;
   * this replica keeps a control connection open for its adoption. A pod that does not get there is removed.
   */
  private async addWarmPod(): Promise<void> {
    const warm = await this.warmPods();
    for (const stale of warm.filter((w) => w.stale)) {
      if (await this.claimWarm(stale.name, [])) await this.removeObjects(stale.agentId, stale.name);
    }
    if (warm.filter((w) => !w.stale).length >= this.poolTarget) return;
    const agentId = `${WARM_ID_PREFIX}${randomBytes(6).toString('hex')}`;
    const spec: AgentSpec = { agentId, userId: '', plan: this.poolPlan, config: {}, gatewayToken: randomBytes(32).toString('base64url') };
    this.warmKnown += 1;
    let name: string | null = null;
    try {
      name = await this.createObjects(spec, this.defaultVersion, { warm: true });
      // Running once its first turn is prepared (`prepareReadyPod`, which pairs the platform device first).
      await this.waitForRollout(agentId, name, this.settings.readyTimeoutMs);
      const connect = this.poolConnector(agentId, name, spec.gatewayToken);
      await this.patchDeployment(name, { metadata: { annotations: { [WARM_READY]: new Date().toISOString() } } });
      this.warmReady += 1;
      this.poolConns.set(
        name,
        openPoolConnection(connect).catch(() => null),
      );
    } catch (error) {
      this.warmKnown = Math.max(0, this.warmKnown - 1);
      if (name) await this.removeObjects(agentId, name).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Opens a control connection to a warm pod under the pool token as the platform device, paired first unless this
   * replica knows it is (under `agentId`: the warm pod's own id, or the adopting agent's).
   */
  private poolConnector(agentId: string, name: string, poolToken: string): () => Promise<GatewayConnection> {
    const identity = this.options.platformDevice as DeviceIdentity;
    return async () => {
      await this.pairGateway(agentId, name, poolToken, identity, false);
      return connectGateway({
        url: this.serviceUrl(name, agentId).replace(/^http/, 'ws'),
        token: poolToken,
        device: identity,
        retryDeadlineMs: 0,
      });
    };
  }

  /**
   * A ready warm pod of the agent's OpenClaw version made the agent's; null when there is none (or the agent needs a
   * pod of its own: variables of its own reach the container's environment only at its start, and a plan of other
   * resources than the pool's would need a new pod). Claimed with `claimWarm`, relabelled as the agent's in the same patch.
   */
  private async adoptWarmPod(spec: AgentSpec, version: string): Promise<AgentState | null> {
    if (this.poolTarget === 0 || Object.keys(spec.agentEnv ?? {}).length > 0) return null;
    if (!sameResources(this.resourcesFor(spec.plan), this.resourcesFor(this.poolPlan))) return null;
    const record = this.manifests.recordOf(spec);
    for (const warm of (await this.warmPods()).filter((w) => w.ready && !w.stale && w.version === version)) {
      // Its token before anything changes: the connection that applies the agent's configuration is made with it.
      const poolToken = await this.readSecrets(warm.name).then(
        (secrets) => secrets.gatewayToken,
        () => '',
      );
      if (!poolToken) continue;
      const claimed = await this.claimWarm(warm.name, [
        { op: 'remove', path: jsonPointer('annotations', WARM_READY) },
        ...Object.entries(this.manifests.labels(warm.name, record, 'gateway')).map(([key, value]) => ({
          op: 'add',
          path: jsonPointer('labels', key),
          value,
        })),
        { op: 'add', path: jsonPointer('annotations', KUBE_ANNOTATIONS.agentId), value: spec.agentId },
        { op: 'add', path: jsonPointer('annotations', KUBE_ANNOTATIONS.userId), value: spec.userId },
        { op: 'add', path: jsonPointer('annotations', KUBE_ANNOTATIONS.plan), value: spec.plan },
        { op: 'add', path: jsonPointer('annotations', ADOPTING), value: new Date().toISOString() },
      ]);
      if (!claimed) continue;
      this.warmKnown = Math.max(0, this.warmKnown - 1);
      this.warmReady = Math.max(0, this.warmReady - 1);
      return this.adopt(warm.name, warm.agentId, spec, record, poolToken);
    }
    return null;
  }

  /**
   * Makes a claimed warm pod the agent's: its ConfigMap and Secret become the agent's (what its next pod starts from;
   * if they cannot be written, nothing of the agent's is stored: the warm pod is removed and null answered, for a cold
   * start in objects of the agent's own), its Service and state volume are labelled as the agent's, the agent's secret
   * file is written into the running pod and its configuration applied over the pool's connection (`applyAdoption`: the
   * agent's token replaces the pool's, checked). The objects keep the warm pod's name (Kubernetes renames nothing); the
   * agent is found by its labels. If a later step fails, the pod is replaced by a new one started from the agent's own
   * objects (a cold start).
   */
  private async adopt(name: string, warmId: string, spec: AgentSpec, record: AgentRecord, poolToken: string): Promise<AgentState | null> {
    const kept = (await this.poolConns.get(name)) ?? null;
    this.poolConns.delete(name);
    const paired = this.paired.get(warmId);
    this.paired.delete(warmId);
    if (paired) this.paired.set(spec.agentId, paired);
    try {
      await this.upsertConfigMap(name, record, spec);
      await this.upsertSecret(name, record, spec);
    } catch {
      await kept?.conn.close().catch(() => undefined);
      this.paired.delete(spec.agentId);
      // The Deployment and what was rewritten are annotated as the agent's, the rest as the warm pod's.
      for (const id of [spec.agentId, warmId]) await this.removeObjects(id, name).catch(() => 0);
      return null;
    }
    try {
      await this.k8s(`label service ${name}`, () =>
        this.core.patchNamespacedService(
          { name, namespace: this.namespace, body: { metadata: this.manifests.metadata(name, record, 'gateway') } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
      );
      await this.k8s(`label persistentvolumeclaim ${name}`, () =>
        this.core.patchNamespacedPersistentVolumeClaim(
          { name, namespace: this.namespace, body: { metadata: this.manifests.metadata(name, record, 'state') } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
      );
      const pod = await this.runningPodOf(name);
      if (!pod?.metadata?.name) throw new Error('the warm pod is not running');
      await this.writeFileInPod(pod.metadata.name, SECRET_FILE_PATH, JSON.stringify(secretFileContents(spec)));
      await applyAdoption({
        kept,
        connect: this.poolConnector(spec.agentId, name, poolToken),
        config: this.manifests.gatewayConfig(spec),
        note: 'warm pod adopted by an agent',
        baseUrl: this.serviceUrl(name, spec.agentId),
        headers: { authorization: `Bearer ${spec.gatewayToken}` },
      });
      // Its first turn was prepared while it waited in the pool.
      await this.patchDeployment(name, {
        metadata: {
          annotations: {
            [ADOPTING]: null,
            [KUBE_ANNOTATIONS.firstTurn]: this.manifests.firstTurn(record),
            [KUBE_ANNOTATIONS.preparedPod]: pod.metadata.uid ?? null,
          },
        },
      });
    } catch {
      await kept?.conn.close().catch(() => undefined);
      // A new pod from the agent's own Secret and ConfigMap.
      await this.patchDeployment(name, {
        metadata: { annotations: { [ADOPTING]: null } },
        spec: { template: { metadata: { annotations: { [KUBE_ANNOTATIONS.restartedAt]: new Date().toISOString() } } } },
      });
    }
    return this.stateOf(name);
  }

  // ---------------------------------------------------------------- hibernation

  /**
   * One pass of the idle check (every `idleCheckMs`): hibernated agents whose next job is due are scaled up; running
   * ones their gateway reports nothing for during `idleMs` are hibernated. A gateway that cannot be asked stays awake.
   * Every backend replica runs it: both steps are idempotent (a second replica finds the agent already asleep or awake).
   */
  private async checkIdle(): Promise<void> {
    const idleMs = this.options.idleMs ?? 0;
    if (this.checkingIdle || this.closed || idleMs <= 0) return;
    this.checkingIdle = true;
    try {
      // Gateways, whoever's agents they hold now (a first agent deleted while its members remain included).
      for (const { name, deployment, state } of await this.gateways()) {
        if (this.closed) return;
        const id = state.agentId;
        if (state.status === 'hibernated') {
          const wakeAt = deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.wakeAt] ?? null;
          if (dueToWake({ wakeAt }, Date.now(), this.idleCheckMs)) {
            await this.exclusive(id, () => this.patchDeployment(name, { metadata: AWAKE, spec: { replicas: 1 } })).catch(() => undefined);
          }
          continue;
        }
        // Wall clock: `readyAt` and the gateway's activity times are dates.
        const readyAt = state.readyAt === null ? null : Date.parse(state.readyAt);
        if (state.status !== 'running' || readyAt === null || !state.url) continue;
        const url = state.url;
        const verdict = await askIdle(
          { readyAt, lastActiveAt: this.lastActiveAt.get(id) ?? null },
          { idleMs, wakeLeadMs: this.wakeLeadMs },
          {
            keptAwake: async () => {
              const spec = await this.openSpec(name, deployment);
              return keepsAwake(spec.config, spec.channelTokens);
            },
            read: async () => readActivityAt(url, await this.credentialsOf(id, name)),
          },
        );
        if (!verdict) continue;
        this.lastActiveAt.set(id, verdict.lastActiveAt);
        if (verdict.sleep) await this.hibernateGateway(id, verdict).catch(() => undefined);
      }
    } catch {
      // the API server is unreachable: the next pass tries again
    } finally {
      this.checkingIdle = false;
    }
  }

  private get wakeLeadMs(): number {
    return this.options.wakeLeadMs ?? DEFAULT_WAKE_LEAD_MS;
  }

  private get idleCheckMs(): number {
    return this.options.idleCheckMs ?? DEFAULT_IDLE_CHECK_MS;
  }

  /**
   * Scales an idle agent to 0 with its state volume kept, marked `aop/hibernated-since` (and `aop/wake-at` for its next
   * due job) in the same patch: `hibernated` until `start` (a message) or the idle check at `aop/wake-at`. Public for
   * operators and tests; the idle check calls it.
   */
  async hibernate(agentId: string, due: number | null | Due = null): Promise<AgentState> {
    const next = asDue(due);
    const { member } = await this.resolve(agentId);
    if (!member) {
      await this.agent(agentId);
      return this.hibernateGateway(agentId, next);
    }
    const gateway = await this.gatewayOfMember(member);
    await this.hibernateGateway(gateway.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '', next);
    return this.memberState(member);
  }

  private async hibernateGateway(agentId: string, due: Due): Promise<AgentState> {
    return this.exclusive(agentId, async () => {
      const { name } = await this.agent(agentId, { retired: true });
      if ((await this.processStateOf(name)).status !== 'running') return this.stateOf(name);
      const annotations = hibernationAnnotations(hibernationOf(due, this.wakeLeadMs));
      await this.patchDeployment(name, { metadata: { annotations }, spec: { replicas: 0 } });
      this.lastActiveAt.delete(agentId);
      return this.stateOf(name);
    });
  }

  /** A new pod, like `kubectl rollout restart` (the pod template's `restartedAt` annotation); starts a stopped agent. */
  async restart(agentId: string): Promise<AgentState> {
    const { gatewayId, answer } = await this.gatewayFor(agentId);
    await this.exclusive(gatewayId, async () => {
      const { name } = await this.agent(gatewayId, { retired: true });
      await this.patchDeployment(name, {
        metadata: { annotations: { ...AWAKE.annotations, [ADOPTING]: null, [KUBE_ANNOTATIONS.schedulerRestarts]: null } },
        spec: { replicas: 1, template: { metadata: { annotations: { [KUBE_ANNOTATIONS.restartedAt]: new Date().toISOString() } } } },
      });
    });
    return answer();
  }

  /**
   * Stops the gateway, clones its state volume (`<name>-backup-<timestamp>`), starts the new image and waits for the
   * rollout. When the new version does not become ready: the previous image comes back with the state copied back
   * from the clone, and `UpdateFailedError.backupPath` is `pvc/<namespace>/<clone>`.
   */
  async update(agentId: string, options: { version: string }): Promise<AgentState> {
    const targetVersion = options.version;
    if (!VERSION_PATTERN.test(targetVersion)) throw new Error(`Invalid OpenClaw version: ${targetVersion}`);
    const { gatewayId, answer } = await this.gatewayFor(agentId);
    await this.exclusive(gatewayId, async () => {
      const { name, deployment } = await this.agent(gatewayId, { retired: true });
      const previousVersion = deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.version] ?? this.defaultVersion;
      const previousImage = containerOf(deployment, GATEWAY_CONTAINER)?.image ?? this.imageFor(previousVersion);
      const previousUtility = containerOf(deployment, PREPARE_CONTAINER, 'init')?.image ?? previousImage;
      const wasRunning = (deployment.spec?.replicas ?? 0) > 0;

      // A consistent copy needs a stopped gateway (sqlite files).
      await this.scale(name, 0);
      let backupName: string;
      try {
        await this.waitForNoPods(name);
        backupName = await this.backUpState(gatewayId, name, previousUtility, previousVersion);
      } catch (error) {
        if (wasRunning) await this.scale(name, 1).catch(() => undefined);
        throw new Error(`Cannot back up the state of agent ${agentId}, so it was not updated: ${(error as Error).message}`, {
          cause: error,
        });
      }
      const backupPath = `pvc/${this.namespace}/${backupName}`;

      const targetImage = this.imageFor(targetVersion);
      return updateWithRollback({
        previousVersion,
        targetVersion,
        backup: backupPath,
        apply: async () => {
          await this.setImage(name, targetVersion, targetImage, this.options.utilityImage ?? targetImage, 1);
          const state = await this.waitForRollout(gatewayId, name, this.settings.readyTimeoutMs);
          // Housekeeping only: a failure here must not roll back an update that worked.
          await this.pruneBackups(name).catch(() => undefined);
          return state;
        },
        rollBack: async () => {
          let outcome = `Rolled back to ${previousVersion}.`;
          try {
            await this.setImage(name, previousVersion, previousImage, previousUtility, 0);
            try {
              await this.waitForNoPods(name);
              await this.runJob(gatewayId, name, 'restore', previousUtility, RESTORE_SCRIPT, [
                { volume: 'state', claim: name, mountPath: DATA_DIR },
                { volume: 'backup', claim: backupName, mountPath: '/backup', readOnly: true },
              ]);
            } catch (restoreError) {
              outcome += ` The state was not restored (${(restoreError as Error).message}); the backup is kept.`;
            }
            await this.scale(name, 1);
          } catch (rollbackError) {
            outcome = `Rolling back to ${previousVersion} failed too: ${(rollbackError as Error).message}.`;
          }
          return outcome;
        },
      });
    });
    return answer();
  }

  async configure(agentId: string, changes: AgentChanges): Promise<AgentState> {
    const { member } = await this.resolve(agentId);
    if (member) return this.configureMember(member, changes);
    return this.exclusive(agentId, async () => {
      const { name, deployment } = await this.agent(agentId);
      const current = await this.openSpec(name, deployment);
      const next: AgentSpec = {
        ...current,
        config: changes.config ?? current.config,
        plan: changes.plan ?? current.plan,
        channelTokens: changes.channelTokens ?? current.channelTokens,
        llm: changes.llm === undefined ? current.llm : changes.llm,
        agentEnv: changes.agentEnv ?? current.agentEnv,
      };
      const record = this.manifests.recordOf(next);
      const running = (deployment.spec?.replicas ?? 0) > 0;
      await this.upsertConfigMap(name, record, next);
      const secretsChanged = changes.channelTokens !== undefined || changes.llm !== undefined || changes.agentEnv !== undefined;
      const currentLayout = readsRuntimeDir(deployment);
      if (secretsChanged || !currentLayout) await this.upsertSecret(name, record, next);
      if (!currentLayout) {
        // Made before the runtime directory (its pod reads the config from the mounted ConfigMap and its secrets from
        // the environment): the Deployment is rewritten to today's, a new pod that reads both from the new objects.
        await this.replaceDeployment(name, deployment, record, running ? 1 : 0);
        return this.stateOf(name);
      }
      const template: Record<string, unknown> = {};
      const gateway: Record<string, unknown> = {};
      if (changes.plan && changes.plan !== current.plan) gateway.resources = this.resourcesFor(next.plan);
      // New names of the agent's own variables join the container's env (merged by name); removed ones stay as
      // optional references to keys the Secret no longer has, i.e. unset, until `repair` rewrites the Deployment.
      const known = new Set(containerOf(deployment, GATEWAY_CONTAINER)?.env?.map((e) => e.name) ?? []);
      const added = (record.envNames ?? []).filter((key) => !known.has(key));
      if (added.length > 0) gateway.env = agentEnvRefs(name, added);
      if (Object.keys(gateway).length > 0) template.spec = { containers: [{ name: GATEWAY_CONTAINER, ...gateway }] };
      // A new pod takes the new secrets (the init container copies the secret file); a config-only change goes into
      // the running pod's config at once (OpenClaw applies it as it applies any edit of its file), or, when that
      // cannot be done, into a new pod.
      let restart = secretsChanged && running;
      if (running && !restart && Object.keys(template).length === 0 && changes.config !== undefined) {
        restart = !(await this.pushConfig(name, next));
      }
      if (restart) template.metadata = { annotations: { [KUBE_ANNOTATIONS.restartedAt]: new Date().toISOString() } };
      await this.patchDeployment(name, {
        metadata: { annotations: { [KUBE_ANNOTATIONS.plan]: next.plan, [KUBE_ANNOTATIONS.firstTurn]: this.manifests.firstTurn(record) } },
        ...(Object.keys(template).length > 0 ? { spec: { template } } : {}),
      });
      return this.stateOf(name);
    });
  }

  /**
   * Writes the agent's config into its running pod's runtime directory, keeping the `meta` block OpenClaw keeps in it
   * (`configMeta`). False when no pod runs or the write failed: the ConfigMap has it for the next pod.
   */
  private async pushConfig(name: string, spec: AgentSpec): Promise<boolean> {
    const pod = await this.runningPod(name);
    if (!pod) return false;
    try {
      const deployment = await this.k8s(`read deployment ${name}`, () =>
        this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
      );
      const config = this.manifests.gatewayConfig(spec, { roster: await this.rosterOf(name, deployment) });
      const read = await this.execInPod(pod, ['cat', CONFIG_PATH], { label: `cat ${CONFIG_PATH}` });
      const meta = read.status.status === 'Success' ? configMeta(JSON.parse(read.stdout.toString('utf8'))) : undefined;
      if (meta !== undefined) config.meta = meta;
      await this.writeFileInPod(pod, CONFIG_PATH, `${JSON.stringify(config, null, 2)}\n`);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Replaces a file of the pod's gateway container (a new file, mode 0600, renamed over the old one, so the gateway
   * never reads half of it). `head -c` takes exactly the bytes sent: `execInPod` never closes the input.
   */
  private async writeFileInPod(podName: string, path: string, content: string): Promise<void> {
    const bytes = Buffer.from(content, 'utf8');
    const label = `write ${path}`;
    const { status, stderr } = await this.execInPod(
      podName,
      ['sh', '-c', 'umask 077 && head -c "$1" > "$2.tmp" && mv -f "$2.tmp" "$2"', 'sh', String(bytes.length), path],
      { label, stdin: bytes },
    );
    if (status.status !== 'Success') {
      throw new Error(`${label} in pod ${podName} failed: ${stderr.toString('utf8').trim() || status.message || 'no output'}`);
    }
  }

  /**
   * Re-creates the agent's objects from its stored spec (Secret, ConfigMap, Service, a missing state volume), puts
   * the Deployment back to what the host would create (undoing hand edits), and starts a new pod. The init container
   * fixes the state directory's layout and modes and removes stale lock files at every start.
   */
  async repair(agentId: string): Promise<AgentState> {
    const { gatewayId, answer } = await this.gatewayFor(agentId);
    await this.exclusive(gatewayId, async () => {
      const { name, deployment } = await this.agent(gatewayId, { retired: true });
      const spec = await this.openSpec(name, deployment);
      const record = this.manifests.recordOf(spec);
      const owner = ownerReference(deployment);
      await this.upsertSecret(name, record, spec, owner);
      await this.upsertConfigMap(name, record, spec, owner);
      const service = this.manifests.serviceManifest(name, record, owner);
      await this.k8s(`create service ${name}`, () => this.core.createNamespacedService({ namespace: this.namespace, body: service })).catch(
        async (error) => {
          if (!isConflict(error)) throw error;
          const existing = await this.k8s(`read service ${name}`, () =>
            this.core.readNamespacedService({ name, namespace: this.namespace }),
          );
          // clusterIP is immutable; everything else is ours.
          service.spec!.clusterIP = existing.spec?.clusterIP;
          service.metadata!.resourceVersion = existing.metadata?.resourceVersion;
          await this.k8s(`replace service ${name}`, () =>
            this.core.replaceNamespacedService({ name, namespace: this.namespace, body: service }),
          );
        },
      );
      await this.k8s(`create persistentvolumeclaim ${name}`, () =>
        this.core.createNamespacedPersistentVolumeClaim({ namespace: this.namespace, body: this.manifests.pvcManifest(name, record) }),
      ).catch((error) => {
        if (!isConflict(error)) throw error;
      });
      await this.replaceDeployment(name, deployment, record, 1);
    });
    return answer();
  }

  /**
   * Scales the agent to 0, runs a Job on its volume that removes the sessions and memory (`MEMORY_PATHS`, as the
   * local provider does) but keeps the workspace's seed files, then starts it again.
   */
  async resetMemory(agentId: string): Promise<AgentState> {
    const { member } = await this.resolve(agentId);
    if (member) return this.resetMemberMemory(member);
    return this.exclusive(agentId, async () => {
      const { name, deployment } = await this.agent(agentId);
      const image = this.options.utilityImage ?? containerOf(deployment, GATEWAY_CONTAINER)?.image ?? this.imageFor(this.defaultVersion);
      // With members, only the first agent's sessions: theirs are under `agents/<their id>`.
      const paths = (await this.allMembers(name)).length === 0 ? MEMORY_PATHS : memoryPathsOf(OWN_GATEWAY_AGENT_ID, 'workspace');
      await this.scale(name, 0);
      try {
        await this.waitForNoPods(name);
        await this.runJob(agentId, name, 'reset-memory', image, resetMemoryScript(paths), [
          { volume: 'state', claim: name, mountPath: DATA_DIR },
        ]);
      } finally {
        // Started again awake: a reset of a hibernated agent also ends its nap.
        if (isHibernated(deployment)) await this.patchDeployment(name, { metadata: AWAKE, spec: { replicas: 1 } });
        else await this.scale(name, 1);
      }
      return this.stateOf(name);
    });
  }

  /** Removes every object of the agent (Deployment, Service, Secret, ConfigMap, state volume, backups, Jobs). */
  async delete(agentId: string): Promise<void> {
    this.assertOpen();
    if (!(await this.findAgent(agentId, { retired: true }))) {
      const member = await this.findMember(agentId);
      if (member) return this.deleteMember(member);
    }
    await this.exclusive(agentId, async () => {
      const agent = await this.findAgent(agentId, { retired: true });
      if (agent?.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.retired] === 'true') throw new AgentNotFoundError(agentId);
      if (agent && (await this.allMembers(agent.name)).length > 0) return this.retire(agent);
      // With no Deployment of its own: what a failed create may have left under the id's own name.
      const name = agent?.name ?? kubeAgentName(agentId);
      const found = await this.removeObjects(agentId, name);
      if (found === 0) throw new AgentNotFoundError(agentId);
    });
  }

  /**
   * Marks the host closed. Agents keep running: on Kubernetes they do not depend on the backend process, and a
   * backend redeploy must not stop every tenant's agent.
   */
  async shutdown(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearInterval(this.idleTimer);
    // Warm pods stay (another replica, or this backend's next start, adopts them); this replica's connections close.
    for (const kept of this.poolConns.values()) void kept.then((pooled) => pooled?.conn.close()).catch(() => undefined);
    this.poolConns.clear();
  }

  /** Nothing to restore (the cluster keeps agents running): lists them, and fills the warm pool. */
  async restore(): Promise<AgentState[]> {
    this.filler.start();
    return this.list();
  }

  // ---------------------------------------------------------------- observation

  async status(agentId: string): Promise<AgentState> {
    const { agent, member } = await this.resolve(agentId);
    return member ? this.memberState(member) : this.stateOf(agent.name, agent.deployment);
  }

  async list(): Promise<AgentState[]> {
    this.assertOpen();
    const [gateways, members] = await Promise.all([this.gateways(), this.allMembers()]);
    const states = gateways
      .filter(({ deployment }) => deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.retired] !== 'true')
      .map(({ deployment, state }) => this.gatewayView(state, deployment, members));
    for (const member of members) {
      const gateway = gateways.find((g) => g.name === member.gateway);
      states.push(this.memberView(member, gateway?.state ?? null, gateway?.deployment ?? null, members));
    }
    return states;
  }

  /** Every gateway of the namespace that is not a warm pod (a deleted first agent's, kept for its members, too). */
  private async gateways(): Promise<Array<Agent & { state: AgentState }>> {
    const selector = `${KUBE_LABELS.managedBy}=${MANAGED_BY},${KUBE_LABELS.component}=gateway`;
    const [deployments, pods] = await Promise.all([
      this.k8s('list deployments', () => this.apps.listNamespacedDeployment({ namespace: this.namespace, labelSelector: selector })),
      this.k8s('list pods', () => this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: selector })),
    ]);
    return deployments.items
      .filter(
        (deployment) => deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] && deployment.metadata.labels?.[WARM_LABEL] !== 'true',
      )
      .map((deployment) => {
        const name = deployment.metadata?.name ?? '';
        const own = pods.items.filter((pod) => pod.metadata?.labels?.[KUBE_LABELS.instance] === name);
        return { name, deployment, state: this.observed(deployment, own) };
      });
  }

  async waitUntilReady(agentId: string, options: WaitOptions = {}): Promise<AgentState> {
    const timeoutMs = options.timeoutMs ?? this.settings.readyTimeoutMs + 5_000;
    const { member } = await this.resolve(agentId);
    if (!member) {
      const { name } = await this.agent(agentId);
      await this.waitForRollout(agentId, name, timeoutMs);
      return this.stateOf(name);
    }
    if (member.desired !== 'running') throw new AgentStartError(`Agent ${agentId} is stopped`);
    const gateway = await this.gatewayOfMember(member);
    await this.waitForRollout(agentId, gateway.name, timeoutMs);
    return this.memberState(member);
  }

  /** The gateway whose pod an agent's process-wide reads go to (logs): its own, a member's gateway's. */
  private async podOwner(agentId: string): Promise<Agent & { member: Member | null }> {
    const { member } = await this.resolve(agentId);
    return { ...(member ? await this.gatewayOfMember(member) : await this.agent(agentId)), member };
  }

  /** The gateway container's log (the current container; empty while it has not started). */
  async logs(agentId: string, options: LogsOptions = {}): Promise<string[]> {
    const { name } = await this.podOwner(agentId);
    const tail = Math.max(0, options.tail ?? 200);
    const pod = newest(await this.pods(name));
    if (!pod || tail === 0) return [];
    const podName = pod.metadata!.name!;
    try {
      const text = await this.k8s(`read log of pod ${podName}`, () =>
        this.core.readNamespacedPodLog({ name: podName, namespace: this.namespace, container: GATEWAY_CONTAINER, tailLines: tail }),
      );
      return String(text)
        .split('\n')
        .filter((line, index, lines) => !(index === lines.length - 1 && line === ''))
        .slice(-tail);
    } catch (error) {
      // 400: the container is waiting to start (no log yet); 404: the pod has just gone.
      if (error instanceof KubernetesApiError && (error.status === 400 || error.status === 404)) return [];
      throw error;
    }
  }

  /**
   * CPU and memory of the gateway container from metrics.k8s.io (metrics-server): CPU in percent of one core (can
   * exceed 100), memory as the working set. `pids` is 0: the metrics API does not report process counts.
   */
  async stats(agentId: string): Promise<AgentStats> {
    const { name, deployment, member } = await this.podOwner(agentId);
    const pod = newest(await this.pods(name));
    const container = pod?.status?.containerStatuses?.find((c) => c.name === GATEWAY_CONTAINER);
    const startedAt = millis(container?.state?.running?.startedAt) ?? millis(pod?.status?.startTime);
    const stopped = member ? member.desired !== 'running' : deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentStopped] === 'true';
    if (stopped || (deployment.spec?.replicas ?? 0) === 0 || !pod || !container?.state?.running) {
      return { cpuPercent: 0, memoryBytes: 0, pids: 0, uptimeMs: 0 };
    }
    const podName = pod.metadata!.name!;
    let metrics: { containers?: Array<{ name: string; usage: { cpu: string; memory: string } }> };
    try {
      metrics = (await this.k8s(`read metrics of pod ${podName}`, () =>
        this.custom.getNamespacedCustomObject({
          group: 'metrics.k8s.io',
          version: 'v1beta1',
          namespace: this.namespace,
          plural: 'pods',
          name: podName,
        }),
      )) as typeof metrics;
    } catch (error) {
      if (!isNotFound(error)) throw error;
      const groups = await this.k8s('list API groups', () => this.apis.getAPIVersions());
      if (!groups.groups.some((group) => group.name === 'metrics.k8s.io')) {
        throw new Error('Agent stats need the metrics.k8s.io API, which this cluster does not serve: install metrics-server', {
          cause: error,
        });
      }
      throw new Error(`No metrics for pod ${podName} yet: metrics-server samples pods every 15-60 s`, { cause: error });
    }
    const usage = metrics.containers?.find((c) => c.name === GATEWAY_CONTAINER)?.usage;
    if (!usage) throw new Error(`No metrics for the gateway container of pod ${podName} yet`);
    return {
      cpuPercent: Math.round(parseKubeQuantity(usage.cpu) * 100 * 10) / 10,
      memoryBytes: Math.round(parseKubeQuantity(usage.memory)),
      pids: 0,
      // Wall clock: measured from the pod's start time, a date.
      uptimeMs: startedAt === null ? 0 : Math.max(0, Date.now() - startedAt),
    };
  }

  /** `/healthz` and `/readyz` through the agent's Service URL, 5-second timeout each. */
  async health(agentId: string): Promise<AgentHealth> {
    const { name, deployment, member } = await this.podOwner(agentId);
    const stopped = member ? member.desired !== 'running' : deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentStopped] === 'true';
    if (stopped || (deployment.spec?.replicas ?? 0) === 0) return GATEWAY_DOWN;
    const gatewayId = deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? agentId;
    return probeGateway(this.serviceUrl(name, gatewayId), async () => ({
      authorization: `Bearer ${(await this.readSecrets(name)).gatewayToken}`,
    }));
  }

  /** The spec with its secrets, read back from the agent's ConfigMap and Secret. */
  async spec(agentId: string): Promise<AgentSpec> {
    const { member } = await this.resolve(agentId);
    if (!member) {
      const { name, deployment } = await this.agent(agentId);
      return this.openSpec(name, deployment);
    }
    // The gateway's token: the owner reaches each of the agents in it with it.
    const gateway = await this.gatewayOfMember(member);
    const { record } = member;
    return {
      agentId,
      userId: record.userId,
      plan: record.plan,
      config: record.config,
      gatewayToken: (await this.readSecrets(gateway.name)).gatewayToken,
      llm: record.llm ? { ...record.llm, apiKey: await this.memberKey(member) } : undefined,
      version: gateway.deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.version] ?? this.defaultVersion,
    };
  }

  /**
   * The gateway token and, with `platformDevice`, the platform device paired with the agent's gateway: verified once
   * per pod with a signed connect through the Service; on `NOT_PAIRED` the request is approved with
   * `openclaw devices approve <requestId>` exec'd in the pod's gateway container (OpenClaw trusts its loopback there;
   * the CLI reads the token from the container's environment). `AgentStartError` when no pod of the agent runs.
   */
  async controlCredentials(agentId: string, options: { repair?: boolean } = {}): Promise<ControlCredentials> {
    const { name, deployment } = await this.podOwner(agentId);
    return this.credentialsOf(deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? agentId, name, options.repair === true);
  }

  /** `controlCredentials` of the gateway `name`, by its first agent's id (a deleted first agent's gateway too). */
  private async credentialsOf(agentId: string, name: string, repair = false): Promise<ControlCredentials> {
    const token = (await this.readSecrets(name)).gatewayToken;
    const identity = this.options.platformDevice;
    if (!identity) return { token };
    let run = this.pairing.get(agentId);
    if (!run) {
      run = this.pairGateway(agentId, name, token, identity, repair).finally(() => this.pairing.delete(agentId));
      this.pairing.set(agentId, run);
    }
    return run;
  }

  private async pairGateway(
    agentId: string,
    name: string,
    token: string,
    identity: DeviceIdentity,
    repair: boolean,
  ): Promise<ControlCredentials> {
    const pod = newest((await this.pods(name)).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp));
    const podName = pod?.metadata?.name;
    const podUid = pod?.metadata?.uid ?? podName;
    if (!podName || !podUid) throw new AgentStartError(`Agent ${agentId} is not running: its gateway cannot be paired`);
    const known = this.paired.get(agentId);
    if (!repair && known?.podUid === podUid) return { token, device: { identity, deviceToken: known.deviceToken } };
    const result = await approvePlatformDevice({
      deviceUrl: `${this.serviceUrl(name, agentId).replace(/^http/, 'ws')}/`,
      token,
      identity,
      approve: ({ requestId }) => this.approveInPod(podName, requestId, identity.deviceId),
    });
    this.paired.set(agentId, { podUid, deviceToken: result.deviceToken });
    return { token, device: { identity, deviceToken: result.deviceToken } };
  }

  /** `openclaw devices approve <requestId> --json` in the gateway container; checks it approved our device. */
  private async approveInPod(podName: string, requestId: string, deviceId: string): Promise<void> {
    const command = approveCommand(this.options.cliCommand, requestId);
    const shown = `${command.slice(0, 3).join(' ')} <requestId>`;
    const { status, stdout: out, stderr } = await this.execInPod(podName, command, { label: shown });
    const stdout = out.toString('utf8');
    if (status.status !== 'Success') {
      const code = status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message ?? '?';
      const why = stderr.toString('utf8').trim().split('\n').at(-1) || status.message || 'no output';
      throw new Error(`${shown} exited with code ${code}: ${why}`);
    }
    assertApproved(stdout, deviceId, shown);
  }

  /**
   * Runs a command in the pod's gateway container through the API's `pods/exec` (a WebSocket, the channel protocol)
   * and answers its final `Status` with the output. `stdin` is sent up front and the input is never closed: under
   * `v4.channel.k8s.io` a client can only end its input by closing the connection, which would lose the exit status,
   * so a command fed this way must read exactly the bytes it was told about (the workspace program does).
   */
  private async execInPod(
    podName: string,
    command: string[],
    options: { label: string; stdin?: Buffer; timeoutMs?: number; maxBytes?: number },
  ): Promise<{ status: V1Status; stdout: Buffer; stderr: Buffer }> {
    const { label } = options;
    const maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let overflow = false;
    const sink = (chunks: Buffer[]) =>
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          size += chunk.length;
          if (size > maxBytes) overflow = true;
          else chunks.push(Buffer.from(chunk));
          done();
        },
      });
    const input = options.stdin ? new Readable({ read() {} }) : null;
    // Frames of 64 KiB: an API server need not take a 1 MB WebSocket message.
    for (let at = 0; input && options.stdin && at < options.stdin.length; at += 65_536) {
      input.push(options.stdin.subarray(at, at + 65_536));
    }
    const timeoutMs = options.timeoutMs ?? this.options.execTimeoutMs ?? 60_000;
    let socket: { close(): void } | null = null;
    try {
      const status = await settleWithin<V1Status>(
        label,
        timeoutMs,
        () => socket?.close(),
        (resolve, reject) => {
          new Exec(this.kc).exec(this.namespace, podName, GATEWAY_CONTAINER, command, sink(out), sink(err), input, false, resolve).then(
            (ws) => {
              socket = ws;
              ws.on('close', () => reject(new Error(`${label}: the exec stream closed without a status`)));
            },
            (error: unknown) => reject(new Error(`${label}: exec into pod ${podName} failed: ${errorText(error)}`)),
          );
        },
      );
      if (overflow) throw new Error(`${label} wrote more than ${maxBytes} bytes`);
      return { status, stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
    } finally {
      input?.destroy();
    }
  }

  /** The newest pod of the agent that runs (not being deleted), or null. */
  private async runningPodOf(name: string): Promise<V1Pod | null> {
    return newest((await this.pods(name)).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp)) ?? null;
  }

  /** The name of `runningPodOf`. */
  private async runningPod(name: string): Promise<string | null> {
    return (await this.runningPodOf(name))?.metadata?.name ?? null;
  }

  // ---------------------------------------------------------------- workspace and live logs

  /**
   * The workspace on the agent's volume, through the workspace program (`workspace.ts`) run by the image's Node with
   * `pods/exec` in the gateway container (as its user). 409 while no pod runs.
   */
  async workspace(agentId: string): Promise<AgentWorkspace> {
    const { name, member } = await this.podOwner(agentId);
    const podName = await this.runningPod(name);
    if (!podName) throw new DomainError('WORKSPACE_AGENT_NOT_RUNNING');
    const root = `${STATE_DIR}/${member ? memberWorkspaceDir(member.agentId) : 'workspace'}`;
    const location = { root, home: HOME_DIR, node: this.options.nodeCommand ?? ['node'] };
    return new ProgramWorkspace(location, async (argv, { stdin, timeoutMs, maxOutputBytes }) => {
      const label = 'workspace program';
      const run = await this.execInPod(podName, argv, { label, ...(stdin ? { stdin } : {}), timeoutMs, maxBytes: maxOutputBytes });
      const code = run.status.status === 'Success' ? 0 : Number(run.status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message);
      return {
        exitCode: Number.isNaN(code) ? null : code,
        stdout: run.stdout,
        stderr: run.stderr.toString('utf8') || (run.status.message ?? ''),
      };
    });
  }

  /**
   * The tail of the gateway container's log, then its lines as the API streams them
   * (`GET …/pods/{pod}/log?follow=true&timestamps=true`). A follow ends when the container stops or the pod goes; the
   * host attaches again to the agent's running pod (the same one after a container restart, a new one after a
   * restart, update or repair) from the last timestamp it delivered, so nothing is sent twice.
   */
  async *followLogs(agentId: string, options: FollowLogsOptions): AsyncIterable<string> {
    const { name } = await this.podOwner(agentId);
    const stop = new AbortController();
    const signal = AbortSignal.any([options.signal, stop.signal]);
    const queue = new LineQueue(signal);
    // The follow starts after the newest line read here, by the node's clock (not this machine's); 0: nothing yet.
    let floor = 0n;
    const tail = Math.max(0, Math.floor(options.tail ?? 0));
    const podName = newest(await this.pods(name))?.metadata?.name;
    const recent = podName ? await this.recentPodLines(podName, Math.max(1, tail)) : [];
    for (const { ns } of recent) if (ns !== null && ns > floor) floor = ns;
    if (tail > 0) queue.push(...recent.map((entry) => entry.text));
    void this.pumpPodLogs(agentId, name, floor, queue, options.pollMs ?? 1_000, signal);
    try {
      yield* queue;
    } finally {
      stop.abort();
    }
  }

  private async recentPodLines(podName: string, tail: number): Promise<Array<{ ns: bigint | null; text: string }>> {
    try {
      const text = await this.k8s(`read log of pod ${podName}`, () =>
        this.core.readNamespacedPodLog({
          name: podName,
          namespace: this.namespace,
          container: GATEWAY_CONTAINER,
          tailLines: tail,
          timestamps: true,
        }),
      );
      return String(text)
        .split('\n')
        .filter((line, index, lines) => !(index === lines.length - 1 && line === ''))
        .map(splitTimestampNs);
    } catch (error) {
      if (error instanceof KubernetesApiError && (error.status === 400 || error.status === 404)) return [];
      throw error;
    }
  }

  private pumpPodLogs(agentId: string, name: string, start: bigint, queue: LineQueue, pollMs: number, signal: AbortSignal) {
    // Attaches fail when the API went away, the pod is being replaced, or its container is waiting; the pump attaches
    // again. Only the agent's deletion ends the stream.
    return pumpLogLines({
      start,
      queue,
      pollMs,
      signal,
      attach: async (floor) => {
        if (this.closed) return 'end';
        const podName = await this.runningPod(name);
        if (!podName) {
          await this.podOwner(agentId); // gone: AgentNotFoundError ends the stream
          return null;
        }
        // `sinceTime` is to the second: lines of that second already sent come again and are skipped.
        const sinceTime = floor === 0n ? null : new Date(Number(floor / 1_000_000n)).toISOString();
        return this.streamPodLog(podName, sinceTime, signal);
      },
      ends: (error) => error instanceof AgentNotFoundError,
    });
  }

  /**
   * One follow of a pod's log, line by line: a plain GET with the kubeconfig's credentials and TLS settings (the
   * client's own `Log` pipes the body without passing on its errors, which would leave a broken follow hanging).
   */
  private async *streamPodLog(podName: string, sinceTime: string | null, signal: AbortSignal): AsyncIterable<string> {
    const url = new URL(`${this.server.replace(/\/$/, '')}/api/v1/namespaces/${this.namespace}/pods/${podName}/log`);
    for (const [key, value] of Object.entries({ container: GATEWAY_CONTAINER, follow: 'true', timestamps: 'true' })) {
      url.searchParams.set(key, value);
    }
    if (sinceTime) url.searchParams.set('sinceTime', sinceTime);
    const options: https.RequestOptions = {};
    await this.kc.applyToHTTPSOptions(options);
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = (url.protocol === 'https:' ? https : http).request(url, { ...options, method: 'GET', signal }, resolve);
      request.once('error', reject);
      request.end();
    });
    if (response.statusCode !== 200) {
      const chunks: Buffer[] = [];
      for await (const chunk of response) chunks.push(chunk as Buffer);
      throw new KubernetesApiError(
        `Kubernetes API: follow log of pod ${podName} failed (${response.statusCode}): ${parseStatus(Buffer.concat(chunks).toString('utf8'))?.message ?? ''}`,
        response.statusCode ?? null,
        null,
      );
    }
    const splitter = new LineSplitter();
    for await (const chunk of response) yield* splitter.push(chunk as Buffer);
    yield* splitter.flush();
  }

  // ---------------------------------------------------------------- manifests (built in manifests.ts)

  /**
   * The skills' files, or none when they cannot be had (a backend that was not built and cannot build them): the
   * ConfigMap then lacks their keys, the volume is optional, and the agent runs without them.
   */
  private skillFiles(): Promise<SkillFile[]> {
    return busSkillFiles().catch(() => []);
  }

  // ---------------------------------------------------------------- internals

  private assertOpen(): void {
    if (this.closed) throw new Error('The agent host is shut down');
  }

  /** Runs one lifecycle operation at a time per agent (within this process; the API server arbitrates the rest). */
  private exclusive<T>(agentId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(agentId) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(agentId, tail);
    void tail.then(() => {
      if (this.locks.get(agentId) === tail) this.locks.delete(agentId);
    });
    return run;
  }

  /** Calls the API, turning failures into `KubernetesApiError`s that say what was being done (or `HostFullError`). */
  private async k8s<T>(action: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.apiError(action, error);
    }
  }

  private apiError(action: string, error: unknown): Error {
    if (error instanceof ApiException) {
      const status = parseStatus(error.body);
      const reason = status?.reason ?? null;
      const detail = status?.message ?? `HTTP ${error.code}`;
      // A namespace ResourceQuota is how an operator caps agents: no room for another one.
      if (error.code === 403 && /exceeded quota/i.test(detail))
        return new HostFullError(`No room for another agent: ${detail}`, { cause: error });
      if (error.code === 401) {
        return new KubernetesApiError(
          `Kubernetes API at ${this.server} rejected the credentials (401) while trying to ${action}`,
          401,
          reason,
          {
            cause: error,
          },
        );
      }
      return new KubernetesApiError(
        `Kubernetes API: ${action} failed (${error.code}${reason ? ` ${reason}` : ''}): ${detail}`,
        error.code,
        reason,
        {
          cause: error,
        },
      );
    }
    const err = error as { name?: string; code?: string; message?: string };
    if (err?.name === 'AbortError' || err?.name === 'TimeoutError') {
      return new KubernetesApiError(
        `Kubernetes API at ${this.server} did not answer within ${seconds(this.settings.requestTimeoutMs)} (${action})`,
        null,
        null,
        { cause: error },
      );
    }
    return new KubernetesApiError(
      `Kubernetes API at ${this.server} is unreachable (${err?.code ?? err?.message ?? String(error)}) while trying to ${action}`,
      null,
      null,
      { cause: error },
    );
  }

  /**
   * The agent's Deployment; `AgentNotFoundError` unless it exists and belongs to exactly this agent id, and (unless
   * `retired`) its agent was not deleted while the gateway stays for its members.
   */
  private async agent(agentId: string, options: { retired?: boolean } = {}): Promise<Agent> {
    const found = await this.findAgent(agentId, options);
    if (!found) throw new AgentNotFoundError(agentId);
    return found;
  }

  /** The agent's Deployment, or null when there is none that belongs to exactly this agent id (see `agent`). */
  private async findAgent(agentId: string, options: { retired?: boolean } = {}): Promise<Agent | null> {
    this.assertOpen();
    if (!ID_PATTERN.test(agentId)) return null;
    const name = kubeAgentName(agentId);
    let deployment: V1Deployment | undefined;
    try {
      deployment = await this.k8s(`read deployment ${name}`, () => this.apps.readNamespacedDeployment({ name, namespace: this.namespace }));
    } catch (error) {
      if (!isNotFound(error)) throw error;
      // An agent that adopted a warm pod keeps that pod's objects, found by the agent's label.
      const labelled = await this.k8s(`find deployment of ${agentId}`, () =>
        this.apps.listNamespacedDeployment({
          namespace: this.namespace,
          labelSelector: `${KUBE_LABELS.managedBy}=${MANAGED_BY},${KUBE_LABELS.agentId}=${kubeLabelValue(agentId)}`,
        }),
      );
      deployment = labelled.items.find((d) => d.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] === agentId);
    }
    if (!deployment || deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] !== agentId) return null;
    if (!options.retired && deployment.metadata.annotations[KUBE_ANNOTATIONS.retired] === 'true') return null;
    return { name: deployment.metadata.name ?? name, deployment };
  }

  private async pods(name: string): Promise<V1Pod[]> {
    const list = await this.k8s(`list pods of ${name}`, () =>
      this.core.listNamespacedPod({
        namespace: this.namespace,
        labelSelector: `${KUBE_LABELS.instance}=${name},${KUBE_LABELS.component}=gateway`,
      }),
    );
    return list.items;
  }

  /** The gateway's pod's state, whoever's agents it holds. */
  private async processStateOf(name: string): Promise<AgentState> {
    const deployment = await this.k8s(`read deployment ${name}`, () =>
      this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
    );
    return this.observed(deployment, await this.pods(name));
  }

  /**
   * A gateway's own agent's state (`gatewayView`: the agents it shares its pod with, stopped while it is), from its
   * Deployment as read now, or as just read (`deployment`).
   */
  private async stateOf(name: string, read?: V1Deployment): Promise<AgentState> {
    const deployment =
      read ?? (await this.k8s(`read deployment ${name}`, () => this.apps.readNamespacedDeployment({ name, namespace: this.namespace })));
    const [pods, members] = await Promise.all([this.pods(name), this.allMembers(name)]);
    return this.gatewayView(this.observed(deployment, pods), deployment, members);
  }

  /** `toState`, and a pod that became ready readied (`prepareReadyPod`: its first turn, a roster pending) when it is still to be. */
  private observed(deployment: V1Deployment, pods: V1Pod[]): AgentState {
    const state = this.toState(deployment, pods);
    const pod = newest(pods.filter((p) => !p.metadata?.deletionTimestamp));
    const uid = pod?.metadata?.uid;
    const name = deployment.metadata?.name;
    if (state.status === 'starting' && uid && name && (firstTurnPending(deployment, pod) || (rosterPending(deployment) && podReady(pod)))) {
      this.prepareReadyPod(
        deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] ?? '',
        name,
        uid,
        firstTurnPending(deployment, pod),
      );
    }
    return state;
  }

  /**
   * Readies a pod that answered ready: runs the warm-up turn when its first turn is pending (shared/warm-up.ts, as the
   * other providers do at every start: the gateway does its first turn's work before a customer's message waits on it),
   * applies the roster when agents joined while it started (`applyRosterAtReady`), then marks the Deployment — the
   * pod's uid (`aop/prepared-pod`), the roster no longer pending: `running` from then. Once per pod and kind on this
   * replica (another replica reading the state meanwhile may run one too: a second warm-up or apply, nothing else).
   * Never throws, and marks the pod even when the warm-up could not run; a pod nobody marks for its first turn is
   * `running` anyway once ready for `FIRST_TURN_LIMIT_MS`.
   */
  private prepareReadyPod(agentId: string, name: string, podUid: string, firstTurn: boolean): void {
    const key = `${podUid}:${firstTurn ? 'first-turn' : 'roster'}`;
    if (this.closed || !agentId || this.preparing.has(key)) return;
    const run = (async () => {
      if (!firstTurn) return;
      const url = this.serviceUrl(name, agentId);
      // Pairs the platform device first: the warm-up's clean-up (deleting its session) needs a scoped connection.
      const credentials: ControlCredentials = await this.credentialsOf(agentId, name).catch(async () => ({
        token: (await this.readSecrets(name)).gatewayToken,
      }));
      await warmUpGateway({
        baseUrl: url,
        token: credentials.token,
        connect: () => connectControl(url, credentials),
        timeoutMs: FIRST_TURN_LIMIT_MS,
      });
    })()
      .catch(() => undefined)
      // Its scheduler started a moment after /readyz: a new pod is asked for when it did not, and that pod is readied in
      // its turn.
      .then(() => (firstTurn ? this.startAgainForScheduler(name, podUid) : false))
      .catch(() => false)
      .then(async (startedAgain) => {
        if (startedAgain) return;
        // Agents that joined while it started are in its process before it is called running; one that joined after
        // this and before the mark landed took the starting path (its files only), so the roster is applied once more
        // if its objects changed meanwhile (a join after the mark applies itself).
        const applied = await this.applyRosterAtReady(name);
        const marks = {
          ...(firstTurn ? { [KUBE_ANNOTATIONS.preparedPod]: podUid } : {}),
          [KUBE_ANNOTATIONS.rosterPending]: null,
        };
        await this.patchDeployment(name, { metadata: { annotations: marks } });
        await this.applyRosterAtReady(name, applied);
        // Agents stopped or deleted while the gateway was down: their jobs are settled now that it can be asked.
        await this.settleIfShared(name);
      })
      .catch(() => undefined);
    // Kept once done: a state read before the mark landed must not start a second warm-up on the same pod.
    this.preparing.set(key, run);
    if (this.preparing.size > 1_000) this.preparing.delete(this.preparing.keys().next().value as string);
  }

  /**
   * The pod's output said OpenClaw's scheduler did not start (shared/scheduler-start.ts): a new pod is asked for (the
   * rollout a restart makes), or, after `SCHEDULER_RESTARTS` in a row, the pod is left running and marked so; true when
   * a new pod was asked for. A pod whose scheduler started clears the count.
   */
  private async startAgainForScheduler(name: string, podUid: string): Promise<boolean> {
    const podName = (await this.pods(name)).find((pod) => pod.metadata?.uid === podUid)?.metadata?.name;
    const output = podName
      ? await this.k8s(`read log of pod ${podName}`, () =>
          this.core.readNamespacedPodLog({ name: podName, namespace: this.namespace, container: GATEWAY_CONTAINER }),
        ).catch(() => '')
      : '';
    const line = schedulerFailure(String(output).split('\n'));
    const deployment = await this.k8s(`read deployment ${name}`, () =>
      this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
    );
    const restarts = Number(deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.schedulerRestarts] ?? 0) || 0;
    if (line === null) {
      if (restarts > 0) await this.patchDeployment(name, { metadata: { annotations: { [KUBE_ANNOTATIONS.schedulerRestarts]: null } } });
      return false;
    }
    const next = onSchedulerFailure(line, restarts);
    if (!next.restart) {
      const down = JSON.stringify({ pod: podUid, reason: next.lastError });
      await this.patchDeployment(name, { metadata: { annotations: { [KUBE_ANNOTATIONS.schedulerDown]: down } } });
      return false;
    }
    await this.patchDeployment(name, {
      metadata: { annotations: { [KUBE_ANNOTATIONS.schedulerRestarts]: String(restarts + 1) } },
      spec: { template: { metadata: { annotations: { [KUBE_ANNOTATIONS.restartedAt]: new Date().toISOString() } } } },
    });
    return true;
  }

  /** Maps a Deployment and its pods to the provider-neutral state. */
  private toState(deployment: V1Deployment, pods: V1Pod[]): AgentState {
    const annotations = deployment.metadata?.annotations ?? {};
    const agentId = annotations[KUBE_ANNOTATIONS.agentId] ?? '';
    const desired = deployment.spec?.replicas ?? 1;
    const pod = newest(pods.filter((p) => !p.metadata?.deletionTimestamp)) ?? null;
    const container = pod?.status?.containerStatuses?.find((c) => c.name === GATEWAY_CONTAINER);
    const status = deployment.status ?? {};
    const rolledOut =
      (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 0) &&
      (status.updatedReplicas ?? 0) === desired &&
      (status.replicas ?? 0) === desired &&
      (status.readyReplicas ?? 0) >= desired;
    const problem = podProblem(pod);
    const failed = deploymentFailure(deployment);
    let state: AgentStatus;
    let lastError: string | null = null;
    const adoptingSince = millis(annotations[ADOPTING]);
    if (desired === 0) state = pods.length > 0 ? 'stopping' : isHibernated(deployment) ? 'hibernated' : 'stopped';
    else if (adoptingSince !== null && Date.now() - adoptingSince > ADOPTION_LIMIT_MS) {
      [state, lastError] = ['error', 'The adoption of a warm pod was interrupted: Restart starts the agent from its own configuration'];
    } else if (adoptingSince !== null) state = 'starting';
    else if (rolledOut && container?.ready === true)
      state = firstTurnPending(deployment, pod) || rosterPending(deployment) ? 'starting' : 'running';
    else if (failed) [state, lastError] = ['error', failed];
    else if (problem?.kind === 'fatal') [state, lastError] = ['error', problem.text];
    else if (problem?.kind === 'crash') [state, lastError] = ['restarting', problem.text];
    else [state, lastError] = ['starting', problem?.text ?? null];
    const readyCondition = pod?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
    return {
      agentId,
      userId: annotations[KUBE_ANNOTATIONS.userId] ?? '',
      openclawAgentId: OWN_GATEWAY_AGENT_ID,
      status: state,
      version: annotations[KUBE_ANNOTATIONS.version] ?? this.defaultVersion,
      url: agentId ? this.serviceUrl(deployment.metadata?.name ?? kubeAgentName(agentId), agentId) : null,
      port: GATEWAY_PORT,
      pid: null,
      startedAt: pod ? iso(container?.state?.running?.startedAt ?? pod.status?.startTime) : null,
      readyAt: state === 'running' ? iso(readyCondition?.lastTransitionTime) : null,
      restarts: container?.restartCount ?? 0,
      lastError,
      ...(state === 'running' ? { schedulerDown: schedulerDownOf(annotations, pod) } : {}),
      ...(state === 'hibernated' ? { wakesAt: annotations[KUBE_ANNOTATIONS.wakeAt] ?? null } : {}),
    };
  }

  /**
   * Puts the Deployment back to what the host would create for the record (a new pod when it runs), awake. The
   * Deployment may change under it (an annotation of `prepareReadyPod`, another replica): a conflict reads it again.
   */
  private async replaceDeployment(name: string, deployment: V1Deployment, record: AgentRecord, replicas: number): Promise<void> {
    const version = deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.version] ?? this.defaultVersion;
    const body = this.manifests.deploymentManifest(name, record, version, replicas);
    body.spec!.template.metadata!.annotations = { [KUBE_ANNOTATIONS.restartedAt]: new Date().toISOString() };
    let resourceVersion = deployment.metadata?.resourceVersion;
    for (let attempt = 1; ; attempt += 1) {
      body.metadata!.resourceVersion = resourceVersion;
      try {
        await this.k8s(`replace deployment ${name}`, () =>
          this.apps.replaceNamespacedDeployment({ name, namespace: this.namespace, body }),
        );
        return;
      } catch (error) {
        if (!isConflict(error) || attempt >= 3) throw error;
        const current = await this.k8s(`read deployment ${name}`, () =>
          this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
        );
        resourceVersion = current.metadata?.resourceVersion;
      }
    }
  }

  /** JSON Patch of `spec.replicas` (what `kubectl scale` changes). */
  private async scale(name: string, replicas: number): Promise<void> {
    await this.k8s(`scale deployment ${name} to ${replicas}`, () =>
      this.apps.patchNamespacedDeployment({
        name,
        namespace: this.namespace,
        body: [{ op: 'replace', path: '/spec/replicas', value: replicas }],
      }),
    );
  }

  /** Strategic merge patch (as `kubectl patch` sends): lists of containers merge by name. */
  private async patchDeployment(name: string, patch: Record<string, unknown>): Promise<void> {
    await this.k8s(`patch deployment ${name}`, () =>
      this.apps.patchNamespacedDeployment(
        { name, namespace: this.namespace, body: patch },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      ),
    );
  }

  private async setImage(name: string, version: string, image: string, utilityImage: string, replicas: number): Promise<void> {
    await this.patchDeployment(name, {
      metadata: { annotations: { [KUBE_ANNOTATIONS.version]: version } },
      spec: {
        replicas,
        template: {
          spec: { initContainers: [{ name: PREPARE_CONTAINER, image: utilityImage }], containers: [{ name: GATEWAY_CONTAINER, image }] },
        },
      },
    });
  }

  private async waitForNoPods(name: string): Promise<void> {
    const deadline = performance.now() + this.settings.stopTimeoutMs;
    while ((await this.pods(name)).length > 0) {
      if (performance.now() >= deadline)
        throw new Error(`The pod of ${name} was still there ${seconds(this.settings.stopTimeoutMs)} after scaling to 0`);
      await sleep(this.settings.pollMs);
    }
  }

  /** Resolves once the current pod template is rolled out and ready; rejects on `error`, `restarting`, `stopped` or timeout. */
  private async waitForRollout(agentId: string, name: string, timeoutMs: number): Promise<AgentState> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const state = await this.processStateOf(name);
      if (state.status === 'running') return state;
      if (state.status === 'error' || state.status === 'restarting')
        throw new AgentStartError(state.lastError ?? `Agent ${agentId} is ${state.status}`);
      if (state.status === 'stopped' || state.status === 'stopping') throw new AgentStartError(`Agent ${agentId} is ${state.status}`);
      if (performance.now() >= deadline) {
        throw new AgentStartError(
          `Agent ${agentId} not ready within ${seconds(timeoutMs)}${state.lastError ? ` (${state.lastError})` : ''}`,
        );
      }
      await sleep(this.settings.pollMs);
    }
  }

  /**
   * Clones the state volume and proves the clone exists by mounting it in a Job: with a `WaitForFirstConsumer`
   * storage class a clone is only provisioned when a pod uses it, and it must be taken before the new version runs.
   */
  private async backUpState(agentId: string, name: string, image: string, version: string): Promise<string> {
    const source = await this.k8s(`read persistentvolumeclaim ${name}`, () =>
      this.core.readNamespacedPersistentVolumeClaim({ name, namespace: this.namespace }),
    );
    // A clone must be at least as large as its source.
    const size = source.status?.capacity?.storage ?? source.spec?.resources?.requests?.storage ?? this.settings.storageSize;
    const stamp = new Date().toISOString().replace(/[-:TZ.]/g, '');
    const backupName = `${name}-backup-${stamp}`;
    const metadata = this.manifests.metadata(
      backupName,
      { agentId, userId: source.metadata?.annotations?.[KUBE_ANNOTATIONS.userId] ?? '' },
      'backup',
    );
    metadata.labels = { ...metadata.labels, [KUBE_LABELS.instance]: name, [KUBE_LABELS.backupOf]: name };
    metadata.annotations = { ...metadata.annotations, [KUBE_ANNOTATIONS.version]: version };
    await this.k8s(`create persistentvolumeclaim ${backupName}`, () =>
      this.core.createNamespacedPersistentVolumeClaim({
        namespace: this.namespace,
        body: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata,
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: size } },
            ...(source.spec?.storageClassName ? { storageClassName: source.spec.storageClassName } : {}),
            dataSource: { kind: 'PersistentVolumeClaim', name },
          },
        },
      }),
    );
    try {
      await this.runJob(agentId, name, 'backup-check', image, `ls -la /backup > /dev/null && echo "backup of ${name} is readable"`, [
        { volume: 'backup', claim: backupName, mountPath: '/backup', readOnly: true },
      ]);
    } catch (error) {
      await this.deleteQuietly(`delete persistentvolumeclaim ${backupName}`, () =>
        this.core.deleteNamespacedPersistentVolumeClaim({ name: backupName, namespace: this.namespace }),
      );
      throw error;
    }
    return backupName;
  }

  private async pruneBackups(name: string): Promise<void> {
    const list = await this.k8s(`list backups of ${name}`, () =>
      this.core.listNamespacedPersistentVolumeClaim({ namespace: this.namespace, labelSelector: `${KUBE_LABELS.backupOf}=${name}` }),
    );
    await pruneOldest(
      list.items.map((pvc) => pvc.metadata!.name!),
      this.settings.keepBackups,
      (old) =>
        this.deleteQuietly(`delete persistentvolumeclaim ${old}`, () =>
          this.core.deleteNamespacedPersistentVolumeClaim({ name: old, namespace: this.namespace }),
        ),
    );
  }

  /** Runs a Job to completion (then deletes it); rejects with the Job's failure or on timeout. */
  private async runJob(agentId: string, name: string, kind: string, image: string, script: string, mounts: JobMount[]): Promise<void> {
    const body = this.manifests.jobManifest(agentId, name, kind, image, script, mounts);
    const jobName = body.metadata!.name!;
    await this.k8s(`create job ${jobName}`, () => this.batch.createNamespacedJob({ namespace: this.namespace, body }));
    const deadline = performance.now() + this.settings.jobTimeoutMs;
    try {
      for (;;) {
        const job = await this.k8s(`read job ${jobName}`, () => this.batch.readNamespacedJob({ name: jobName, namespace: this.namespace }));
        if ((job.status?.succeeded ?? 0) > 0) return;
        const failedCondition = job.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
        if (failedCondition)
          throw new Error(`Job ${jobName} failed: ${failedCondition.message ?? failedCondition.reason ?? 'unknown reason'}`);
        if (performance.now() >= deadline) throw new Error(`Job ${jobName} did not finish within ${seconds(this.settings.jobTimeoutMs)}`);
        await sleep(this.settings.pollMs);
      }
    } finally {
      await this.deleteQuietly(`delete job ${jobName}`, () =>
        this.batch.deleteNamespacedJob({ name: jobName, namespace: this.namespace, propagationPolicy: 'Background' }),
      );
    }
  }

  /** Runs a read-modify-replace again while it conflicts with another writer (up to 5 times). */
  private async onConflictAgain(write: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await write();
      } catch (error) {
        if (!isConflict(error) || attempt >= 5) throw error;
      }
    }
  }

  /** `settleRoster` for a gateway that holds members or has what to settle; nothing for a gateway of one. */
  private async settleIfShared(name: string): Promise<void> {
    const deployment = await this.k8s(`read deployment ${name}`, () =>
      this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
    );
    const fields = rosterFieldsOf(deployment);
    const pending = fields.agentStopped || fields.quietJobs?.length || fields.leftAgents?.length;
    if (pending || (await this.allMembers(name)).length > 0) await this.settleRoster(name);
  }

  private async deleteQuietly(action: string, call: () => Promise<unknown>): Promise<void> {
    await this.k8s(action, call).catch(() => undefined);
  }

  /**
   * Deletes every object of an agent, best effort: all deletions are tried, 404s are fine, other failures are
   * reported together at the end. Returns how many objects were found.
   */
  private async removeObjects(agentId: string, name: string): Promise<number> {
    const ns = this.namespace;
    const selector = `${KUBE_LABELS.instance}=${name}`;
    const ours = (meta: V1ObjectMeta | undefined) => meta?.annotations?.[KUBE_ANNOTATIONS.agentId] === agentId;
    let found = 0;
    const failures: string[] = [];
    const attempt = async (what: string, call: () => Promise<unknown>) => {
      try {
        await this.k8s(`delete ${what}`, call);
        found += 1;
      } catch (error) {
        if (!isNotFound(error)) failures.push((error as Error).message);
      }
    };
    const named = async <T extends { metadata?: V1ObjectMeta }>(kind: string, read: () => Promise<T>, remove: () => Promise<unknown>) => {
      try {
        const object = await this.k8s(`read ${kind} ${name}`, read);
        if (ours(object.metadata)) await attempt(`${kind} ${name}`, remove);
      } catch (error) {
        if (!isNotFound(error)) failures.push((error as Error).message);
      }
    };
    await named(
      'deployment',
      () => this.apps.readNamespacedDeployment({ name, namespace: ns }),
      () => this.apps.deleteNamespacedDeployment({ name, namespace: ns, propagationPolicy: 'Background' }),
    );
    await named(
      'service',
      () => this.core.readNamespacedService({ name, namespace: ns }),
      () => this.core.deleteNamespacedService({ name, namespace: ns }),
    );
    await named(
      'secret',
      () => this.core.readNamespacedSecret({ name, namespace: ns }),
      () => this.core.deleteNamespacedSecret({ name, namespace: ns }),
    );
    await named(
      'configmap',
      () => this.core.readNamespacedConfigMap({ name, namespace: ns }),
      () => this.core.deleteNamespacedConfigMap({ name, namespace: ns }),
    );
    try {
      const jobs = await this.k8s(`list jobs of ${name}`, () => this.batch.listNamespacedJob({ namespace: ns, labelSelector: selector }));
      for (const job of jobs.items.filter((j) => ours(j.metadata))) {
        const jobName = job.metadata!.name!;
        await attempt(`job ${jobName}`, () =>
          this.batch.deleteNamespacedJob({ name: jobName, namespace: ns, propagationPolicy: 'Background' }),
        );
      }
      // The state volume and its backups (clones) carry the instance label.
      const claims = await this.k8s(`list persistentvolumeclaims of ${name}`, () =>
        this.core.listNamespacedPersistentVolumeClaim({ namespace: ns, labelSelector: selector }),
      );
      for (const claim of claims.items.filter((c) => ours(c.metadata))) {
        const claimName = claim.metadata!.name!;
        await attempt(`persistentvolumeclaim ${claimName}`, () =>
          this.core.deleteNamespacedPersistentVolumeClaim({ name: claimName, namespace: ns }),
        );
      }
    } catch (error) {
      failures.push((error as Error).message);
    }
    if (failures.length > 0) throw new Error(`Deleting agent ${agentId} left objects behind: ${failures.join('; ')}`);
    return found;
  }

  /**
   * The agent's secrets from its Secret: the secret file's (or, for a Secret written before the secret file, the
   * variables it held), the agent's own variables and the WhatsApp switch.
   */
  private async readSecrets(name: string): Promise<Pick<AgentSpec, 'gatewayToken' | 'channelTokens' | 'agentEnv'> & { llmApiKey: string }> {
    const secret = await this.k8s(`read secret ${name}`, () => this.core.readNamespacedSecret({ name, namespace: this.namespace }));
    const data: Record<string, string> = {};
    for (const [key, value] of Object.entries(secret.data ?? {})) data[key] = unbase64(value) ?? '';
    const file = data[SECRET_FILE_KEY]
      ? (JSON.parse(data[SECRET_FILE_KEY]) as Record<string, string | undefined>)
      : {
          gatewayToken: data[LEGACY_SECRET_ENV.gatewayToken],
          llmApiKey: data[LEGACY_SECRET_ENV.llmApiKey],
          telegramBotToken: data[CHANNEL_TOKEN_ENV.telegram],
          discordBotToken: data[CHANNEL_TOKEN_ENV.discord],
        };
    const channelTokens: ChannelTokens = {};
    if (file.telegramBotToken) channelTokens.telegram = file.telegramBotToken;
    if (file.discordBotToken) channelTokens.discord = file.discordBotToken;
    if (data[WHATSAPP_KEY]) channelTokens.whatsapp = data[WHATSAPP_KEY];
    const agentEnv = Object.fromEntries(Object.entries(data).filter(([key, value]) => AGENT_ENV_NAME.test(key) && value));
    return {
      gatewayToken: file.gatewayToken ?? '',
      llmApiKey: file.llmApiKey ?? '',
      channelTokens,
      ...(Object.keys(agentEnv).length > 0 ? { agentEnv } : {}),
    };
  }

  private async openSpec(name: string, deployment: V1Deployment): Promise<AgentSpec> {
    const [configMap, secrets] = await Promise.all([
      this.k8s(`read configmap ${name}`, () => this.core.readNamespacedConfigMap({ name, namespace: this.namespace })),
      this.readSecrets(name),
    ]).catch((error) => {
      if (isNotFound(error))
        throw new Error(`The spec of ${name} is gone (${(error as Error).message}); the agent must be created again`, { cause: error });
      throw error;
    });
    const raw = configMap.data?.[RECORD_KEY];
    if (!raw) throw new Error(`ConfigMap ${name} has no ${RECORD_KEY}; the agent must be created again`);
    const record = JSON.parse(raw) as AgentRecord;
    const { llmApiKey, ...own } = secrets;
    return {
      agentId: record.agentId,
      userId: record.userId,
      plan: record.plan,
      config: record.config,
      ...own,
      llm: record.llm ? { ...record.llm, apiKey: llmApiKey } : undefined,
      version: deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.version] ?? this.defaultVersion,
    };
  }

  /**
   * Read-modify-replace (keeps owner references and uses the resourceVersion for optimistic concurrency), or create.
   * The members' keys are listed after the read, so a replace that wins holds every member created before it (a member
   * created after the read makes the replace conflict, and it is done again).
   */
  private async upsertSecret(name: string, record: AgentRecord, spec: AgentSpec, owner?: V1OwnerReference): Promise<void> {
    await this.onConflictAgain(() => this.upsertSecretOnce(name, record, spec, owner));
  }

  private async upsertSecretOnce(name: string, record: AgentRecord, spec: AgentSpec, owner?: V1OwnerReference): Promise<void> {
    try {
      const existing = await this.k8s(`read secret ${name}`, () => this.core.readNamespacedSecret({ name, namespace: this.namespace }));
      const data = this.manifests.secretData(spec, await this.rosterOf(name));
      const body: V1Secret = {
        ...existing,
        metadata: { ...existing.metadata, ...this.manifests.metadata(name, record, 'gateway', owner) },
        data,
        type: 'Opaque',
      };
      delete body.stringData;
      delete body.metadata!.managedFields;
      body.metadata!.resourceVersion = existing.metadata?.resourceVersion;
      if (!owner) body.metadata!.ownerReferences = existing.metadata?.ownerReferences;
      await this.k8s(`replace secret ${name}`, () => this.core.replaceNamespacedSecret({ name, namespace: this.namespace, body }));
    } catch (error) {
      if (!isNotFound(error) || !owner) throw error;
      await this.k8s(`create secret ${name}`, () =>
        this.core.createNamespacedSecret({ namespace: this.namespace, body: this.manifests.secretManifest(name, record, spec, owner) }),
      );
    }
  }

  /** As `upsertSecret`, the roster in its config listed after the read. */
  private async upsertConfigMap(name: string, record: AgentRecord, spec: AgentSpec, owner?: V1OwnerReference): Promise<void> {
    await this.onConflictAgain(() => this.upsertConfigMapOnce(name, record, spec, owner));
  }

  private async upsertConfigMapOnce(name: string, record: AgentRecord, spec: AgentSpec, owner?: V1OwnerReference): Promise<void> {
    const skills = await this.skillFiles();
    try {
      const existing = await this.k8s(`read configmap ${name}`, () =>
        this.core.readNamespacedConfigMap({ name, namespace: this.namespace }),
      );
      const deployment = await this.k8s(`read deployment ${name}`, () =>
        this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
      ).catch(() => undefined);
      const data = this.manifests.configData(record, spec, skills, { roster: await this.rosterOf(name, deployment) });
      const body: V1ConfigMap = {
        ...existing,
        metadata: { ...existing.metadata, ...this.manifests.metadata(name, record, 'gateway', owner) },
        data,
      };
      delete body.metadata!.managedFields;
      body.metadata!.resourceVersion = existing.metadata?.resourceVersion;
      if (!owner) body.metadata!.ownerReferences = existing.metadata?.ownerReferences;
      await this.k8s(`replace configmap ${name}`, () => this.core.replaceNamespacedConfigMap({ name, namespace: this.namespace, body }));
    } catch (error) {
      if (!isNotFound(error) || !owner) throw error;
      await this.k8s(`create configmap ${name}`, () =>
        this.core.createNamespacedConfigMap({
          namespace: this.namespace,
          body: this.manifests.configMapManifest(name, record, spec, owner, skills),
        }),
      );
    }
  }
}

/** Puts `state/` and `home/` back from a backup clone mounted at /backup (lost+found and the rest are left alone). */
const RESTORE_SCRIPT = [
  'set -e',
  'for d in state home; do',
  `  rm -rf "${DATA_DIR}/$d"`,
  `  if [ -d "/backup/$d" ]; then cp -a "/backup/$d" "${DATA_DIR}/$d"; fi`,
  'done',
].join('\n');

/** Removes the sessions and memory (the local provider's `MEMORY_PATHS`, or one agent's); the workspace seed files stay. */
function resetMemoryScript(paths: readonly string[]): string {
  return ['set -e', `cd ${STATE_DIR}`, `rm -rf ${paths.map(shellQuote).join(' ')}`].join('\n');
}

/** Objects the Deployment owns are garbage-collected with it (no `blockOwnerDeletion`: that would need extra RBAC). */
function ownerReference(deployment: V1Deployment): V1OwnerReference {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: deployment.metadata!.name!,
    uid: deployment.metadata!.uid!,
    blockOwnerDeletion: false,
  };
}

function containerOf(deployment: V1Deployment, name: string, kind: 'main' | 'init' = 'main'): V1Container | undefined {
  const spec = deployment.spec?.template?.spec;
  return (kind === 'init' ? spec?.initContainers : spec?.containers)?.find((c) => c.name === name);
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  // The WebSocket client rejects with its error event.
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}

/** A JSON list of strings kept in an annotation (none when absent or not such a list). */
function stringList(value: string | undefined): string[] {
  try {
    const parsed: unknown = JSON.parse(value ?? '[]');
    return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === 'string') : [];
  } catch {
    return [];
  }
}

/** The roster fields a gateway's Deployment keeps in its annotations (`KUBE_ANNOTATIONS`). */
function rosterFieldsOf(deployment: V1Deployment): RosterFields {
  const annotations = deployment.metadata?.annotations ?? {};
  return {
    agentStopped: annotations[KUBE_ANNOTATIONS.agentStopped] === 'true',
    retired: annotations[KUBE_ANNOTATIONS.retired] === 'true',
    leftAgents: stringList(annotations[KUBE_ANNOTATIONS.leftAgents]),
    quietJobs: stringList(annotations[KUBE_ANNOTATIONS.quietJobs]),
  };
}

/** A member as its ConfigMap describes it, or null for any other ConfigMap. */
function memberOf(configMap: V1ConfigMap): Member | null {
  const meta = configMap.metadata;
  const annotations = meta?.annotations ?? {};
  const gateway = annotations[KUBE_ANNOTATIONS.gatewayOf];
  const raw = configMap.data?.[RECORD_KEY];
  if (meta?.labels?.[KUBE_LABELS.component] !== 'member' || !gateway || !raw || !meta.name) return null;
  let record: AgentRecord;
  try {
    record = JSON.parse(raw) as AgentRecord;
  } catch {
    return null;
  }
  return {
    agentId: annotations[KUBE_ANNOTATIONS.agentId] ?? record.agentId,
    userId: record.userId,
    name: meta.name,
    gateway,
    record,
    desired: annotations[KUBE_ANNOTATIONS.desired] === 'stopped' ? 'stopped' : 'running',
    quietJobs: stringList(annotations[KUBE_ANNOTATIONS.quietJobs]),
  };
}

function newest(pods: V1Pod[]): V1Pod | undefined {
  return [...pods].sort((a, b) => (millis(b.metadata?.creationTimestamp) ?? 0) - (millis(a.metadata?.creationTimestamp) ?? 0))[0];
}

function parseStatus(body: unknown): { message?: string; reason?: string } | null {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return body ? { message: body } : null;
    }
  }
  return typeof value === 'object' && value !== null ? (value as { message?: string; reason?: string }) : null;
}

/** Why a pod's gateway is not running: `fatal` (will not clear up), `crash` (crash loop), or `waiting` (just not yet). */
function podProblem(pod: V1Pod | null): { kind: 'fatal' | 'crash' | 'waiting'; text: string } | null {
  if (!pod) return null;
  const statuses: V1ContainerStatus[] = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const container of statuses) {
    const waiting = container.state?.waiting;
    if (!waiting?.reason || BENIGN_WAITING.has(waiting.reason)) continue;
    const text = `${container.name}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
    if (FATAL_WAITING.has(waiting.reason)) return { kind: 'fatal', text };
    if (waiting.reason === 'CrashLoopBackOff') {
      const last = container.lastState?.terminated;
      return {
        kind: 'crash',
        text: last ? `${container.name} exited with code ${last.exitCode}${last.reason ? ` (${last.reason})` : ''}` : text,
      };
    }
    return { kind: 'waiting', text };
  }
  const unschedulable = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  if (unschedulable) return { kind: 'waiting', text: `${unschedulable.reason ?? 'Unschedulable'}: ${unschedulable.message ?? ''}`.trim() };
  return null;
}

/** A Deployment the controller gave up on (progress deadline) or cannot create pods for (quota, admission). */
function deploymentFailure(deployment: V1Deployment): string | null {
  for (const condition of deployment.status?.conditions ?? []) {
    if (condition.type === 'Progressing' && condition.status === 'False' && condition.reason === 'ProgressDeadlineExceeded') {
      return condition.message ?? 'Progress deadline exceeded';
    }
    if (condition.type === 'ReplicaFailure' && condition.status === 'True')
      return condition.message ?? condition.reason ?? 'Pods cannot be created';
  }
  return null;
}
