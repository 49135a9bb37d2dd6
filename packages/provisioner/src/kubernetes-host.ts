import { createHash } from 'node:crypto';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { Readable, Writable } from 'node:stream';
import { HttpError, planResources } from '@aop/core';
import type { DeviceIdentity } from '@aop/gateway-client';
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
  type V1EnvVar,
  type V1Job,
  type V1ObjectMeta,
  type V1OwnerReference,
  type V1PersistentVolumeClaim,
  type V1Pod,
  type V1PodSecurityContext,
  type V1ResourceRequirements,
  type V1Secret,
  type V1SecurityContext,
  type V1Service,
  type V1Status,
  type V1Volume,
  type V1VolumeMount,
  createConfiguration,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { BUS_SKILL_FILES, BUS_SKILL_NAME, type SkillFile, busSkillFiles } from './bus-skill.js';
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
  AgentExistsError,
  AgentNotFoundError,
  AgentStartError,
  HostFullError,
  UpdateFailedError,
} from './host.js';
import { MEMORY_PATHS } from './local-host.js';
import { LineQueue, LineSplitter, pause, splitTimestampNs } from './log-follow.js';
import { AGENT_ENV_NAME, CHANNEL_TOKEN_ENV, LLM_API_KEY_ENV, buildOpenClawConfig, checkAgentEnv, secretEnv } from './openclaw-config.js';
import { approvePlatformDevice } from './pairing.js';
import { PINNED_OPENCLAW_VERSION } from './runtime.js';
import { AGENT_NOT_RUNNING, type AgentWorkspace, ProgramWorkspace } from './workspace.js';
import { GATEWAY_DOWN, probeGateway } from './gateway-probe.js';

/**
 * The `kubernetes` provider: every agent is an OpenClaw gateway in its own pod, made of five objects named
 * `aop-agent-<id>` in one namespace:
 *
 * - a Deployment (1 replica, `Recreate`: the state volume is ReadWriteOnce, so two pods must never overlap),
 * - a ClusterIP Service on 18789 (the gateway's HTTP + WebSocket port),
 * - a PersistentVolumeClaim holding the OpenClaw state dir and the gateway's HOME,
 * - a Secret with the agent's own environment only (gateway token, channel tokens, LLM key, `agentEnv` — `secretEnv`),
 * - a ConfigMap with `openclaw.json` (`buildOpenClawConfig`, mounted read-only at `OPENCLAW_CONFIG_PATH`) and the
 *   stored spec the host needs to rebuild everything (`repair`, `spec`).
 *
 * The cluster is the source of truth: the host keeps no registry of its own, so any number of backend replicas
 * can share one namespace, and a backend restart changes nothing for running agents.
 */

const GATEWAY_PORT = 18789;
export const DEFAULT_KUBE_NAMESPACE = 'aop-agents';
export const DEFAULT_KUBE_IMAGE_REPOSITORY = 'ghcr.io/openclaw/openclaw';

const GATEWAY_CONTAINER = 'gateway';
const PREPARE_CONTAINER = 'prepare';
/** The PVC: OpenClaw state in `state/`, the gateway's HOME in `home/`. */
const DATA_DIR = '/var/lib/openclaw';
const STATE_DIR = `${DATA_DIR}/state`;
const HOME_DIR = `${DATA_DIR}/home`;
const CONFIG_DIR = '/etc/openclaw';
const CONFIG_KEY = 'openclaw.json';
/** The stored spec (no secrets) in the agent's ConfigMap; not mounted into the pod. */
const RECORD_KEY = 'aop-agent.json';
/**
 * The platform's skills (`bus-skill.ts`) ride in the agent's ConfigMap (`skills.<skill>.<file>`), mounted into the
 * init container only, which copies them into the workspace at every pod start (create, repair, update, restarts).
 */
const SKILLS_MOUNT = '/etc/openclaw-skills';
const skillKey = (skill: string, file: string) => `skills.${skill}.${file}`;
const SKILL_ITEMS = BUS_SKILL_FILES.map((file) => ({ key: skillKey(BUS_SKILL_NAME, file), path: `${BUS_SKILL_NAME}/${file}` }));
/** WhatsApp links by QR code: its "token" is only a switch. Kept in the Secret but never passed to the pod. */
const WHATSAPP_KEY = 'aop-whatsapp-token';
const GATEWAY_TOKEN_ENV = 'OPENCLAW_GATEWAY_TOKEN';

/**
 * Every key `secretEnv` can produce besides the agent's own variables: the pod gets exactly these and the `agentEnv`
 * names of its record from the Secret (nothing else in it is exposed).
 */
const SECRET_ENV_KEYS = Object.keys(
  secretEnv({
    gatewayToken: 'x',
    channelTokens: { telegram: 'x', discord: 'x', whatsapp: 'x' },
    llm: { baseUrl: 'x', apiKey: 'x', model: 'x' },
  }),
);

/**
 * The pod's references to the agent's own variables in its Secret. Optional: a reference left behind by a name that
 * was removed (a strategic merge patch only adds) leaves the variable unset rather than blocking the pod's start.
 */
const agentEnvRefs = (secret: string, names: readonly string[]): V1EnvVar[] =>
  names.map((key) => ({ name: key, valueFrom: { secretKeyRef: { name: secret, key, optional: true } } }));

export const KUBE_LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  name: 'app.kubernetes.io/name',
  instance: 'app.kubernetes.io/instance',
  component: 'app.kubernetes.io/component',
  agentId: 'aop/agent-id',
  userId: 'aop/user-id',
  backupOf: 'aop/backup-of',
} as const;

export const KUBE_ANNOTATIONS = {
  /** The exact ids (labels hold a DNS-safe form). */
  agentId: 'aop/agent-id',
  userId: 'aop/user-id',
  plan: 'aop/plan',
  version: 'aop/openclaw-version',
  restartedAt: 'kubectl.kubernetes.io/restartedAt',
} as const;

const MANAGED_BY = 'aop';
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const VERSION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hash16 = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 16);
const iso = (value: Date | string | undefined | null): string | null =>
  value === undefined || value === null ? null : value instanceof Date ? value.toISOString() : new Date(value).toISOString();
/** `0.2 s`, `12 s`: timeouts in messages. */
const seconds = (ms: number) => `${ms < 10_000 ? Number((ms / 1000).toFixed(1)) : Math.round(ms / 1000)} s`;
const millis = (value: Date | string | undefined | null): number | null => (value ? new Date(value).getTime() : null);
const base64 = (value: string) => Buffer.from(value, 'utf8').toString('base64');
const unbase64 = (value: string | undefined) => (value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8'));
const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/**
 * The name of an agent's objects: `aop-agent-<id>` when the id is already a lower-case DNS label, otherwise a
 * DNS-safe slug plus `--` and 16 hex digits of the id's SHA-256 (lower-casing alone would make `Abc` and `abc`
 * share objects; no exact-form name contains `--`, so the two forms cannot collide either).
 */
export function kubeAgentName(agentId: string): string {
  const slug = agentId
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  if (slug === agentId && slug.length > 0 && slug.length <= 48) return `aop-agent-${slug}`;
  const short = slug.slice(0, 32).replace(/-$/, '');
  return `aop-agent-${short ? `${short}--` : ''}${hash16(agentId)}`;
}

/** A label value for an id: itself when valid, else a readable prefix and a hash (labels are ≤ 63 chars, alnum at both ends). */
export function kubeLabelValue(value: string): string {
  if (LABEL_VALUE.test(value)) return value;
  const readable = value
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .slice(0, 40)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return `${readable ? `${readable}.` : ''}${hash16(value)}`;
}

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
  /** Gateway base URL of an agent (default `http://<service>.<namespace>.svc:18789`); for port-forwards or ingresses. */
  serviceUrl?: (agentId: string) => string;
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
}

/** The non-secret part of the spec, stored in the agent's ConfigMap. */
interface AgentRecord {
  agentId: string;
  userId: string;
  plan: string;
  config: Record<string, unknown>;
  llm: Omit<LlmSpec, 'apiKey'> | null;
  /** The names of the agent's own variables (`agentEnv`; values only in the Secret), which the pod reads from it. */
  envNames?: string[];
}

interface Agent {
  name: string;
  deployment: V1Deployment;
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
  private readonly locks = new Map<string, Promise<unknown>>();
  private closed = false;
  private readonly kc: KubeConfig;
  /**
   * The platform device's token per agent and the pod it was verified on. Kept in memory only: the pairing itself is
   * in the gateway's state volume, and one signed connect after a backend restart hands the token out again.
   */
  private readonly paired = new Map<string, { podUid: string; deviceToken: string }>();
  private readonly pairing = new Map<string, Promise<ControlCredentials>>();

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
  }

  get defaultVersion(): string {
    return this.options.defaultVersion ?? PINNED_OPENCLAW_VERSION;
  }

  imageFor(version: string): string {
    const base = this.options.image ?? DEFAULT_KUBE_IMAGE_REPOSITORY;
    return base.includes('{version}') ? base.replaceAll('{version}', version) : `${base}:${version}`;
  }

  /** The gateway's base URL (HTTP; the WebSocket is the same with `ws:`). */
  serviceUrl(agentId: string): string {
    return this.options.serviceUrl?.(agentId) ?? `http://${kubeAgentName(agentId)}.${this.namespace}.svc:${GATEWAY_PORT}`;
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
    if (!ID_PATTERN.test(spec.agentId)) throw new Error(`Invalid agent id: ${spec.agentId}`);
    if (!spec.gatewayToken) throw new Error('A gateway token is required');
    const version = spec.version ?? this.defaultVersion;
    if (!VERSION_PATTERN.test(version)) throw new Error(`Invalid OpenClaw version: ${version}`);
    const name = kubeAgentName(spec.agentId);
    return this.exclusive(spec.agentId, async () => {
      const record = this.recordOf(spec);
      // The Deployment comes first, with no pod: it owns the Secret, ConfigMap and Service (garbage-collected with
      // it), and the pod only starts once they exist.
      let deployment: V1Deployment;
      try {
        deployment = await this.k8s(`create deployment ${name}`, () =>
          this.apps.createNamespacedDeployment({ namespace: this.namespace, body: this.deploymentManifest(name, record, version, 0) }),
        );
      } catch (error) {
        if (isConflict(error)) throw new AgentExistsError(spec.agentId);
        throw error;
      }
      const owner = ownerReference(deployment);
      try {
        await this.k8s(`create secret ${name}`, () =>
          this.core.createNamespacedSecret({ namespace: this.namespace, body: this.secretManifest(name, record, spec, owner) }),
        );
        const skills = await this.skillFiles();
        await this.k8s(`create configmap ${name}`, () =>
          this.core.createNamespacedConfigMap({
            namespace: this.namespace,
            body: this.configMapManifest(name, record, spec, owner, skills),
          }),
        );
        await this.k8s(`create service ${name}`, () =>
          this.core.createNamespacedService({ namespace: this.namespace, body: this.serviceManifest(name, record, owner) }),
        );
        // Not owned: a deleted Deployment (by hand, by mistake) must not take the agent's state with it.
        await this.k8s(`create persistentvolumeclaim ${name}`, () =>
          this.core.createNamespacedPersistentVolumeClaim({ namespace: this.namespace, body: this.pvcManifest(name, record) }),
        );
        await this.scale(name, 1);
      } catch (error) {
        await this.removeObjects(spec.agentId, name).catch(() => undefined);
        throw error;
      }
      return this.stateOf(name);
    });
  }

  async start(agentId: string): Promise<AgentState> {
    return this.exclusive(agentId, async () => {
      const { name } = await this.agent(agentId);
      await this.scale(name, 1);
      return this.stateOf(name);
    });
  }

  async stop(agentId: string): Promise<AgentState> {
    return this.exclusive(agentId, async () => {
      const { name } = await this.agent(agentId);
      await this.scale(name, 0);
      return this.stateOf(name);
    });
  }

  /** A new pod, like `kubectl rollout restart` (the pod template's `restartedAt` annotation); starts a stopped agent. */
  async restart(agentId: string): Promise<AgentState> {
    return this.exclusive(agentId, async () => {
      const { name } = await this.agent(agentId);
      await this.patchDeployment(name, {
        spec: { replicas: 1, template: { metadata: { annotations: { [KUBE_ANNOTATIONS.restartedAt]: new Date().toISOString() } } } },
      });
      return this.stateOf(name);
    });
  }

  /**
   * Stops the gateway, clones its state volume (`<name>-backup-<timestamp>`), starts the new image and waits for the
   * rollout. When the new version does not become ready: the previous image comes back with the state copied back
   * from the clone, and `UpdateFailedError.backupPath` is `pvc/<namespace>/<clone>`.
   */
  async update(agentId: string, options: { version: string }): Promise<AgentState> {
    const targetVersion = options.version;
    if (!VERSION_PATTERN.test(targetVersion)) throw new Error(`Invalid OpenClaw version: ${targetVersion}`);
    return this.exclusive(agentId, async () => {
      const { name, deployment } = await this.agent(agentId);
      const previousVersion = deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.version] ?? this.defaultVersion;
      const previousImage = containerOf(deployment, GATEWAY_CONTAINER)?.image ?? this.imageFor(previousVersion);
      const previousUtility = containerOf(deployment, PREPARE_CONTAINER, 'init')?.image ?? previousImage;
      const wasRunning = (deployment.spec?.replicas ?? 0) > 0;

      // A consistent copy needs a stopped gateway (sqlite files).
      await this.scale(name, 0);
      let backupName: string;
      try {
        await this.waitForNoPods(name);
        backupName = await this.backUpState(agentId, name, previousUtility, previousVersion);
      } catch (error) {
        if (wasRunning) await this.scale(name, 1).catch(() => undefined);
        throw new Error(`Cannot back up the state of agent ${agentId}, so it was not updated: ${(error as Error).message}`, {
          cause: error,
        });
      }
      const backupPath = `pvc/${this.namespace}/${backupName}`;

      const targetImage = this.imageFor(targetVersion);
      try {
        await this.setImage(name, targetVersion, targetImage, this.options.utilityImage ?? targetImage, 1);
        const state = await this.waitForRollout(agentId, name, this.settings.readyTimeoutMs);
        // Housekeeping only: a failure here must not roll back an update that worked.
        await this.pruneBackups(name).catch(() => undefined);
        return state;
      } catch (cause) {
        const reason = (cause as Error).message;
        let outcome = `Rolled back to ${previousVersion}.`;
        try {
          await this.setImage(name, previousVersion, previousImage, previousUtility, 0);
          try {
            await this.waitForNoPods(name);
            await this.runJob(agentId, name, 'restore', previousUtility, RESTORE_SCRIPT, [
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
        throw new UpdateFailedError(
          `Update to OpenClaw ${targetVersion} failed: ${reason}. ${outcome}`,
          backupPath,
          previousVersion,
          targetVersion,
          {
            cause,
          },
        );
      }
    });
  }

  async configure(agentId: string, changes: AgentChanges): Promise<AgentState> {
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
      const record = this.recordOf(next);
      // Config-only changes: OpenClaw hot-reloads openclaw.json once the kubelet has refreshed the mounted ConfigMap.
      await this.upsertConfigMap(name, record, next);
      const secretsChanged = changes.channelTokens !== undefined || changes.llm !== undefined || changes.agentEnv !== undefined;
      if (secretsChanged) await this.upsertSecret(name, record, next);
      // New resources replace the pod anyway; environment variables from the Secret are only read at container start.
      const template: Record<string, unknown> = {};
      const gateway: Record<string, unknown> = {};
      if (changes.plan && changes.plan !== current.plan) gateway.resources = this.resourcesFor(next.plan);
      // New names of the agent's own variables join the container's env (merged by name); removed ones stay as
      // optional references to keys the Secret no longer has, i.e. unset, until `repair` rewrites the Deployment.
      const known = new Set(containerOf(deployment, GATEWAY_CONTAINER)?.env?.map((e) => e.name) ?? []);
      const added = (record.envNames ?? []).filter((key) => !known.has(key));
      if (added.length > 0) gateway.env = agentEnvRefs(name, added);
      if (Object.keys(gateway).length > 0) template.spec = { containers: [{ name: GATEWAY_CONTAINER, ...gateway }] };
      if (secretsChanged && (deployment.spec?.replicas ?? 0) > 0) {
        template.metadata = { annotations: { [KUBE_ANNOTATIONS.restartedAt]: new Date().toISOString() } };
      }
      await this.patchDeployment(name, {
        metadata: { annotations: { [KUBE_ANNOTATIONS.plan]: next.plan } },
        ...(Object.keys(template).length > 0 ? { spec: { template } } : {}),
      });
      return this.stateOf(name);
    });
  }

  /**
   * Re-creates the agent's objects from its stored spec (Secret, ConfigMap, Service, a missing state volume), puts
   * the Deployment back to what the host would create (undoing hand edits), and starts a new pod. The init container
   * fixes the state directory's layout and modes and removes stale lock files at every start.
   */
  async repair(agentId: string): Promise<AgentState> {
    return this.exclusive(agentId, async () => {
      const { name, deployment } = await this.agent(agentId);
      const spec = await this.openSpec(name, deployment);
      const record = this.recordOf(spec);
      const owner = ownerReference(deployment);
      await this.upsertSecret(name, record, spec, owner);
      await this.upsertConfigMap(name, record, spec, owner);
      const service = this.serviceManifest(name, record, owner);
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
        this.core.createNamespacedPersistentVolumeClaim({ namespace: this.namespace, body: this.pvcManifest(name, record) }),
      ).catch((error) => {
        if (!isConflict(error)) throw error;
      });
      const version = deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.version] ?? this.defaultVersion;
      const body = this.deploymentManifest(name, record, version, 1);
      body.metadata!.resourceVersion = deployment.metadata?.resourceVersion;
      body.spec!.template.metadata!.annotations = { [KUBE_ANNOTATIONS.restartedAt]: new Date().toISOString() };
      await this.k8s(`replace deployment ${name}`, () => this.apps.replaceNamespacedDeployment({ name, namespace: this.namespace, body }));
      return this.stateOf(name);
    });
  }

  /**
   * Scales the agent to 0, runs a Job on its volume that removes the sessions and memory (`MEMORY_PATHS`, as the
   * local provider does) but keeps the workspace's seed files, then starts it again.
   */
  async resetMemory(agentId: string): Promise<AgentState> {
    return this.exclusive(agentId, async () => {
      const { name, deployment } = await this.agent(agentId);
      const image = this.options.utilityImage ?? containerOf(deployment, GATEWAY_CONTAINER)?.image ?? this.imageFor(this.defaultVersion);
      await this.scale(name, 0);
      try {
        await this.waitForNoPods(name);
        await this.runJob(agentId, name, 'reset-memory', image, resetMemoryScript(), [
          { volume: 'state', claim: name, mountPath: DATA_DIR },
        ]);
      } finally {
        await this.scale(name, 1);
      }
      return this.stateOf(name);
    });
  }

  /** Removes every object of the agent (Deployment, Service, Secret, ConfigMap, state volume, backups, Jobs). */
  async delete(agentId: string): Promise<void> {
    this.assertOpen();
    const name = kubeAgentName(agentId);
    await this.exclusive(agentId, async () => {
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
  }

  /** For parity with the local provider: nothing to restore (the cluster keeps agents running); lists them. */
  async restore(): Promise<AgentState[]> {
    return this.list();
  }

  // ---------------------------------------------------------------- observation

  async status(agentId: string): Promise<AgentState> {
    const { name, deployment } = await this.agent(agentId);
    return this.toState(deployment, await this.pods(name));
  }

  async list(): Promise<AgentState[]> {
    this.assertOpen();
    const selector = `${KUBE_LABELS.managedBy}=${MANAGED_BY},${KUBE_LABELS.component}=gateway`;
    const [deployments, pods] = await Promise.all([
      this.k8s('list deployments', () => this.apps.listNamespacedDeployment({ namespace: this.namespace, labelSelector: selector })),
      this.k8s('list pods', () => this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: selector })),
    ]);
    return deployments.items
      .filter((deployment) => deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId])
      .map((deployment) =>
        this.toState(
          deployment,
          pods.items.filter((pod) => pod.metadata?.labels?.[KUBE_LABELS.instance] === deployment.metadata?.name),
        ),
      );
  }

  async waitUntilReady(agentId: string, options: WaitOptions = {}): Promise<AgentState> {
    const { name } = await this.agent(agentId);
    return this.waitForRollout(agentId, name, options.timeoutMs ?? this.settings.readyTimeoutMs + 5_000);
  }

  /** The gateway container's log (the current container; empty while it has not started). */
  async logs(agentId: string, options: LogsOptions = {}): Promise<string[]> {
    const { name } = await this.agent(agentId);
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
    const { name, deployment } = await this.agent(agentId);
    const pod = newest(await this.pods(name));
    const container = pod?.status?.containerStatuses?.find((c) => c.name === GATEWAY_CONTAINER);
    const startedAt = millis(container?.state?.running?.startedAt) ?? millis(pod?.status?.startTime);
    if ((deployment.spec?.replicas ?? 0) === 0 || !pod || !container?.state?.running) {
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
      uptimeMs: startedAt === null ? 0 : Math.max(0, Date.now() - startedAt),
    };
  }

  /** `/healthz` and `/readyz` through the agent's Service URL, 5-second timeout each. */
  async health(agentId: string): Promise<AgentHealth> {
    const { name, deployment } = await this.agent(agentId);
    if ((deployment.spec?.replicas ?? 0) === 0) return GATEWAY_DOWN;
    return probeGateway(this.serviceUrl(agentId), async () => ({
      authorization: `Bearer ${(await this.readSecretEnv(name))[GATEWAY_TOKEN_ENV] ?? ''}`,
    }));
  }

  /** The spec with its secrets, read back from the agent's ConfigMap and Secret. */
  async spec(agentId: string): Promise<AgentSpec> {
    const { name, deployment } = await this.agent(agentId);
    return this.openSpec(name, deployment);
  }

  /**
   * The gateway token and, with `platformDevice`, the platform device paired with the agent's gateway: verified once
   * per pod with a signed connect through the Service; on `NOT_PAIRED` the request is approved with
   * `openclaw devices approve <requestId>` exec'd in the pod's gateway container (OpenClaw trusts its loopback there;
   * the CLI reads the token from the container's environment). `AgentStartError` when no pod of the agent runs.
   */
  async controlCredentials(agentId: string, options: { repair?: boolean } = {}): Promise<ControlCredentials> {
    const { name, deployment } = await this.agent(agentId);
    const token = (await this.openSpec(name, deployment)).gatewayToken;
    const identity = this.options.platformDevice;
    if (!identity) return { token };
    let run = this.pairing.get(agentId);
    if (!run) {
      run = this.pairGateway(agentId, name, token, identity, options.repair === true).finally(() => this.pairing.delete(agentId));
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
      deviceUrl: `${this.serviceUrl(agentId).replace(/^http/, 'ws')}/`,
      token,
      identity,
      approve: ({ requestId }) => this.approveInPod(podName, requestId, identity.deviceId),
    });
    this.paired.set(agentId, { podUid, deviceToken: result.deviceToken });
    return { token, device: { identity, deviceToken: result.deviceToken } };
  }

  /** `openclaw devices approve <requestId> --json` in the gateway container; checks it approved our device. */
  private async approveInPod(podName: string, requestId: string, deviceId: string): Promise<void> {
    const command = [...(this.options.cliCommand ?? ['openclaw']), 'devices', 'approve', requestId, '--json'];
    const shown = `${command.slice(0, 3).join(' ')} <requestId>`;
    const { status, stdout: out, stderr } = await this.execInPod(podName, command, { label: shown });
    const stdout = out.toString('utf8');
    if (status.status !== 'Success') {
      const code = status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message ?? '?';
      const why = stderr.toString('utf8').trim().split('\n').at(-1) || status.message || 'no output';
      throw new Error(`${shown} exited with code ${code}: ${why}`);
    }
    let answer: { device?: { deviceId?: unknown } } | null = null;
    try {
      answer = JSON.parse(stdout);
    } catch {
      answer = null;
    }
    if (answer?.device?.deviceId !== deviceId) throw new Error(`${shown} did not report the platform device as approved`);
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
      const status = await new Promise<V1Status>((resolve, reject) => {
        let settled = false;
        const settle = (fn: () => void) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          fn();
        };
        const timer = setTimeout(() => {
          socket?.close();
          settle(() => reject(new Error(`${label} did not finish within ${Math.round(timeoutMs / 1000)} s`)));
        }, timeoutMs);
        new Exec(this.kc)
          .exec(this.namespace, podName, GATEWAY_CONTAINER, command, sink(out), sink(err), input, false, (s) => settle(() => resolve(s)))
          .then(
            (ws) => {
              socket = ws;
              ws.on('close', () => settle(() => reject(new Error(`${label}: the exec stream closed without a status`))));
            },
            (error: unknown) => settle(() => reject(new Error(`${label}: exec into pod ${podName} failed: ${errorText(error)}`))),
          );
      });
      if (overflow) throw new Error(`${label} wrote more than ${maxBytes} bytes`);
      return { status, stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
    } finally {
      input?.destroy();
    }
  }

  /** The newest pod of the agent that runs (not being deleted), or null. */
  private async runningPod(name: string): Promise<string | null> {
    const pod = newest((await this.pods(name)).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp));
    return pod?.metadata?.name ?? null;
  }

  // ---------------------------------------------------------------- workspace and live logs

  /**
   * The workspace on the agent's volume, through the workspace program (`workspace.ts`) run by the image's Node with
   * `pods/exec` in the gateway container (as its user). 409 while no pod runs.
   */
  async workspace(agentId: string): Promise<AgentWorkspace> {
    const { name } = await this.agent(agentId);
    const podName = await this.runningPod(name);
    if (!podName) throw new HttpError(409, AGENT_NOT_RUNNING);
    const location = { root: `${STATE_DIR}/workspace`, home: HOME_DIR, node: this.options.nodeCommand ?? ['node'] };
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
    const { name } = await this.agent(agentId);
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

  private async pumpPodLogs(agentId: string, name: string, start: bigint, queue: LineQueue, pollMs: number, signal: AbortSignal) {
    let floor = start;
    while (!signal.aborted) {
      try {
        if (this.closed) return queue.end();
        const podName = await this.runningPod(name);
        if (podName) {
          // `sinceTime` is to the second: lines of that second already sent come again and are skipped.
          const sinceTime = floor === 0n ? null : new Date(Number(floor / 1_000_000n)).toISOString();
          for await (const text of this.streamPodLog(podName, sinceTime, signal)) {
            const { ns, text: line } = splitTimestampNs(text);
            if (ns !== null && ns <= floor) continue;
            if (ns !== null) floor = ns;
            queue.push(line);
          }
        } else await this.agent(agentId); // gone: AgentNotFoundError ends the stream
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof AgentNotFoundError) return queue.end();
        // The API went away, the pod is being replaced, or its container is waiting: attach again after the pause.
      }
      await pause(pollMs, signal);
    }
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

  // ---------------------------------------------------------------- manifests

  private labels(name: string, ids: { agentId: string; userId?: string }, component: string): Record<string, string> {
    return {
      [KUBE_LABELS.managedBy]: MANAGED_BY,
      [KUBE_LABELS.name]: 'openclaw',
      [KUBE_LABELS.instance]: name,
      [KUBE_LABELS.component]: component,
      [KUBE_LABELS.agentId]: kubeLabelValue(ids.agentId),
      ...(ids.userId ? { [KUBE_LABELS.userId]: kubeLabelValue(ids.userId) } : {}),
    };
  }

  private metadata(name: string, ids: { agentId: string; userId: string }, component: string, owner?: V1OwnerReference): V1ObjectMeta {
    return {
      name,
      namespace: this.namespace,
      labels: this.labels(name, ids, component),
      annotations: { [KUBE_ANNOTATIONS.agentId]: ids.agentId, [KUBE_ANNOTATIONS.userId]: ids.userId },
      ...(owner ? { ownerReferences: [owner] } : {}),
    };
  }

  private podSecurity(): V1PodSecurityContext {
    const id = this.settings.runAsUser;
    return {
      runAsNonRoot: true,
      runAsUser: id,
      runAsGroup: id,
      fsGroup: id,
      fsGroupChangePolicy: 'OnRootMismatch',
      seccompProfile: { type: 'RuntimeDefault' },
    };
  }

  private containerSecurity(): V1SecurityContext {
    return { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
  }

  private deploymentManifest(name: string, record: AgentRecord, version: string, replicas: number): V1Deployment {
    const image = this.imageFor(version);
    const labels = this.labels(name, record, 'gateway');
    const env: V1EnvVar[] = [
      { name: 'HOME', value: HOME_DIR },
      // Temp files, the compile cache and OpenClaw's dated log files: an emptyDir, so they never fill the state volume.
      { name: 'TMPDIR', value: '/tmp' },
      { name: 'LANG', value: 'C.UTF-8' },
      { name: 'MALLOC_ARENA_MAX', value: '2' },
      { name: 'OPENCLAW_STATE_DIR', value: STATE_DIR },
      { name: 'OPENCLAW_CONFIG_PATH', value: `${CONFIG_DIR}/${CONFIG_KEY}` },
      { name: 'OPENCLAW_NO_AUTO_UPDATE', value: '1' },
      { name: 'OPENCLAW_DISABLE_BONJOUR', value: '1' },
      { name: 'OPENCLAW_OFFLINE', value: '1' },
      // Only these keys of the agent's own Secret reach the container.
      ...SECRET_ENV_KEYS.map((key) => ({
        name: key,
        valueFrom: { secretKeyRef: { name, key, optional: key !== GATEWAY_TOKEN_ENV } },
      })),
      ...agentEnvRefs(name, record.envNames ?? []),
    ];
    const probe = (path: string, periodSeconds: number, failureThreshold: number) => ({
      httpGet: { path, port: GATEWAY_PORT, scheme: 'HTTP' },
      periodSeconds,
      timeoutSeconds: 5,
      failureThreshold,
    });
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        ...this.metadata(name, record, 'gateway'),
        annotations: {
          [KUBE_ANNOTATIONS.agentId]: record.agentId,
          [KUBE_ANNOTATIONS.userId]: record.userId,
          [KUBE_ANNOTATIONS.plan]: record.plan,
          [KUBE_ANNOTATIONS.version]: version,
        },
      },
      spec: {
        replicas,
        strategy: { type: 'Recreate' },
        revisionHistoryLimit: 3,
        selector: { matchLabels: { [KUBE_LABELS.instance]: name, [KUBE_LABELS.component]: 'gateway' } },
        template: {
          metadata: { labels, annotations: {} },
          spec: {
            // The gateway never talks to the Kubernetes API, and other services' variables are none of its business.
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 60,
            securityContext: this.podSecurity(),
            ...(this.options.imagePullSecrets?.length
              ? { imagePullSecrets: this.options.imagePullSecrets.map((secret) => ({ name: secret })) }
              : {}),
            initContainers: [
              {
                name: PREPARE_CONTAINER,
                image: this.options.utilityImage ?? image,
                command: ['sh', '-c', PREPARE_SCRIPT],
                securityContext: this.containerSecurity(),
                resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
                volumeMounts: [
                  { name: 'state', mountPath: DATA_DIR },
                  { name: 'skills', mountPath: SKILLS_MOUNT, readOnly: true },
                ],
              },
            ],
            containers: [
              {
                name: GATEWAY_CONTAINER,
                image,
                imagePullPolicy: 'IfNotPresent',
                command: ['openclaw', 'gateway', 'run', '--bind', 'lan', '--port', String(GATEWAY_PORT)],
                ports: [{ name: 'gateway', containerPort: GATEWAY_PORT, protocol: 'TCP' }],
                env,
                resources: this.resourcesFor(record.plan),
                // Start-up takes 20-25 s of CPU (longer on a busy node): liveness only counts once /healthz answered.
                startupProbe: probe('/healthz', 5, 60),
                livenessProbe: probe('/healthz', 10, 6),
                readinessProbe: probe('/readyz', 5, 3),
                securityContext: this.containerSecurity(),
                volumeMounts: [
                  { name: 'state', mountPath: DATA_DIR },
                  { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'state', persistentVolumeClaim: { claimName: name } },
              // Only openclaw.json: the stored spec in the same ConfigMap is the host's, not the gateway's.
              { name: 'config', configMap: { name, items: [{ key: CONFIG_KEY, path: CONFIG_KEY }] } },
              // Optional: keys the ConfigMap lacks are left out instead of keeping the pod from starting.
              { name: 'skills', configMap: { name, items: SKILL_ITEMS, optional: true } },
              { name: 'tmp', emptyDir: { sizeLimit: '1Gi' } },
            ],
          },
        },
      },
    };
  }

  private serviceManifest(name: string, record: AgentRecord, owner: V1OwnerReference): V1Service {
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: this.metadata(name, record, 'gateway', owner),
      spec: {
        type: 'ClusterIP',
        selector: { [KUBE_LABELS.instance]: name, [KUBE_LABELS.component]: 'gateway' },
        ports: [{ name: 'gateway', port: GATEWAY_PORT, targetPort: GATEWAY_PORT, protocol: 'TCP' }],
        // The platform probes /healthz and /readyz itself: it must reach a gateway that is not ready yet.
        publishNotReadyAddresses: true,
      },
    };
  }

  private pvcManifest(name: string, record: AgentRecord): V1PersistentVolumeClaim {
    return {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: this.metadata(name, record, 'state'),
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: this.settings.storageSize } },
        ...(this.options.storageClass ? { storageClassName: this.options.storageClass } : {}),
      },
    };
  }

  /** The agent's own environment only: whatever else the backend holds never gets here. */
  private secretData(spec: AgentSpec): Record<string, string> {
    const data: Record<string, string> = {};
    for (const [key, value] of Object.entries(secretEnv(spec))) data[key] = base64(value);
    if (spec.channelTokens?.whatsapp) data[WHATSAPP_KEY] = base64(spec.channelTokens.whatsapp);
    return data;
  }

  private secretManifest(name: string, record: AgentRecord, spec: AgentSpec, owner: V1OwnerReference): V1Secret {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: this.metadata(name, record, 'gateway', owner),
      data: this.secretData(spec),
    };
  }

  private configData(record: AgentRecord, spec: AgentSpec, skills: SkillFile[]): Record<string, string> {
    const config = buildOpenClawConfig(spec, { port: GATEWAY_PORT, bind: 'lan', workspaceDir: `${STATE_DIR}/workspace` });
    const data: Record<string, string> = {
      [CONFIG_KEY]: `${JSON.stringify(config, null, 2)}\n`,
      [RECORD_KEY]: `${JSON.stringify(record, null, 2)}\n`,
    };
    for (const file of skills) data[skillKey(file.path.at(-2) ?? '', file.path.at(-1) ?? '')] = file.content.toString('utf8');
    return data;
  }

  /**
   * The skills' files, or none when they cannot be had (a backend that was not built and cannot build them): the
   * ConfigMap then lacks their keys, the volume is optional, and the agent runs without them.
   */
  private skillFiles(): Promise<SkillFile[]> {
    return busSkillFiles().catch(() => []);
  }

  private configMapManifest(name: string, record: AgentRecord, spec: AgentSpec, owner: V1OwnerReference, skills: SkillFile[]): V1ConfigMap {
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: this.metadata(name, record, 'gateway', owner),
      data: this.configData(record, spec, skills),
    };
  }

  private recordOf(spec: AgentSpec): AgentRecord {
    const llm = spec.llm ? (({ apiKey: _apiKey, ...rest }) => rest)(spec.llm) : null;
    const envNames = Object.keys(checkAgentEnv(spec.agentEnv)).sort();
    return {
      agentId: spec.agentId,
      userId: spec.userId,
      plan: spec.plan,
      config: spec.config,
      llm,
      ...(envNames.length ? { envNames } : {}),
    };
  }

  private jobManifest(agentId: string, name: string, kind: string, image: string, script: string, mounts: JobMount[]): V1Job {
    const jobName = `${name.slice(0, 40).replace(/-+$/, '')}-${kind}-${Date.now().toString(36)}`;
    const labels = { ...this.labels(name, { agentId }, 'maintenance'), 'aop/job': kind };
    const volumes: V1Volume[] = mounts.map((m) => ({
      name: m.volume,
      persistentVolumeClaim: { claimName: m.claim, readOnly: m.readOnly ?? false },
    }));
    const volumeMounts: V1VolumeMount[] = mounts.map((m) => ({ name: m.volume, mountPath: m.mountPath, readOnly: m.readOnly ?? false }));
    return {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: jobName, namespace: this.namespace, labels, annotations: { [KUBE_ANNOTATIONS.agentId]: agentId } },
      spec: {
        backoffLimit: 1,
        activeDeadlineSeconds: Math.ceil(this.settings.jobTimeoutMs / 1000),
        ttlSecondsAfterFinished: 3600,
        template: {
          metadata: { labels },
          spec: {
            restartPolicy: 'Never',
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            securityContext: this.podSecurity(),
            ...(this.options.imagePullSecrets?.length
              ? { imagePullSecrets: this.options.imagePullSecrets.map((secret) => ({ name: secret })) }
              : {}),
            containers: [
              {
                name: kind,
                image,
                command: ['sh', '-c', script],
                securityContext: this.containerSecurity(),
                resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '1', memory: '256Mi' } },
                volumeMounts,
              },
            ],
            volumes,
          },
        },
      },
    };
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

  /** The agent's Deployment; `AgentNotFoundError` unless it exists and belongs to exactly this agent id. */
  private async agent(agentId: string): Promise<Agent> {
    this.assertOpen();
    if (!ID_PATTERN.test(agentId)) throw new AgentNotFoundError(agentId);
    const name = kubeAgentName(agentId);
    let deployment: V1Deployment;
    try {
      deployment = await this.k8s(`read deployment ${name}`, () => this.apps.readNamespacedDeployment({ name, namespace: this.namespace }));
    } catch (error) {
      if (isNotFound(error)) throw new AgentNotFoundError(agentId);
      throw error;
    }
    if (deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.agentId] !== agentId) throw new AgentNotFoundError(agentId);
    return { name, deployment };
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

  private async stateOf(name: string): Promise<AgentState> {
    const deployment = await this.k8s(`read deployment ${name}`, () =>
      this.apps.readNamespacedDeployment({ name, namespace: this.namespace }),
    );
    return this.toState(deployment, await this.pods(name));
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
    if (desired === 0) state = pods.length > 0 ? 'stopping' : 'stopped';
    else if (rolledOut && container?.ready === true) state = 'running';
    else if (failed) [state, lastError] = ['error', failed];
    else if (problem?.kind === 'fatal') [state, lastError] = ['error', problem.text];
    else if (problem?.kind === 'crash') [state, lastError] = ['restarting', problem.text];
    else [state, lastError] = ['starting', problem?.text ?? null];
    const readyCondition = pod?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
    return {
      agentId,
      userId: annotations[KUBE_ANNOTATIONS.userId] ?? '',
      status: state,
      version: annotations[KUBE_ANNOTATIONS.version] ?? this.defaultVersion,
      url: agentId ? this.serviceUrl(agentId) : null,
      port: GATEWAY_PORT,
      pid: null,
      startedAt: pod ? iso(container?.state?.running?.startedAt ?? pod.status?.startTime) : null,
      readyAt: state === 'running' ? iso(readyCondition?.lastTransitionTime) : null,
      restarts: container?.restartCount ?? 0,
      lastError,
    };
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
    const deadline = Date.now() + this.settings.stopTimeoutMs;
    while ((await this.pods(name)).length > 0) {
      if (Date.now() >= deadline)
        throw new Error(`The pod of ${name} was still there ${seconds(this.settings.stopTimeoutMs)} after scaling to 0`);
      await sleep(this.settings.pollMs);
    }
  }

  /** Resolves once the current pod template is rolled out and ready; rejects on `error`, `restarting`, `stopped` or timeout. */
  private async waitForRollout(agentId: string, name: string, timeoutMs: number): Promise<AgentState> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const state = await this.stateOf(name);
      if (state.status === 'running') return state;
      if (state.status === 'error' || state.status === 'restarting')
        throw new AgentStartError(state.lastError ?? `Agent ${agentId} is ${state.status}`);
      if (state.status === 'stopped' || state.status === 'stopping') throw new AgentStartError(`Agent ${agentId} is ${state.status}`);
      if (Date.now() >= deadline) {
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
    const metadata = this.metadata(
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
    const names = list.items.map((pvc) => pvc.metadata!.name!).sort();
    for (const old of names.slice(0, Math.max(0, names.length - this.settings.keepBackups))) {
      await this.deleteQuietly(`delete persistentvolumeclaim ${old}`, () =>
        this.core.deleteNamespacedPersistentVolumeClaim({ name: old, namespace: this.namespace }),
      );
    }
  }

  /** Runs a Job to completion (then deletes it); rejects with the Job's failure or on timeout. */
  private async runJob(agentId: string, name: string, kind: string, image: string, script: string, mounts: JobMount[]): Promise<void> {
    const body = this.jobManifest(agentId, name, kind, image, script, mounts);
    const jobName = body.metadata!.name!;
    await this.k8s(`create job ${jobName}`, () => this.batch.createNamespacedJob({ namespace: this.namespace, body }));
    const deadline = Date.now() + this.settings.jobTimeoutMs;
    try {
      for (;;) {
        const job = await this.k8s(`read job ${jobName}`, () => this.batch.readNamespacedJob({ name: jobName, namespace: this.namespace }));
        if ((job.status?.succeeded ?? 0) > 0) return;
        const failedCondition = job.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
        if (failedCondition)
          throw new Error(`Job ${jobName} failed: ${failedCondition.message ?? failedCondition.reason ?? 'unknown reason'}`);
        if (Date.now() >= deadline) throw new Error(`Job ${jobName} did not finish within ${seconds(this.settings.jobTimeoutMs)}`);
        await sleep(this.settings.pollMs);
      }
    } finally {
      await this.deleteQuietly(`delete job ${jobName}`, () =>
        this.batch.deleteNamespacedJob({ name: jobName, namespace: this.namespace, propagationPolicy: 'Background' }),
      );
    }
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

  private async readSecretEnv(name: string): Promise<Record<string, string>> {
    const secret = await this.k8s(`read secret ${name}`, () => this.core.readNamespacedSecret({ name, namespace: this.namespace }));
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(secret.data ?? {})) env[key] = unbase64(value) ?? '';
    return env;
  }

  private async openSpec(name: string, deployment: V1Deployment): Promise<AgentSpec> {
    const [configMap, env] = await Promise.all([
      this.k8s(`read configmap ${name}`, () => this.core.readNamespacedConfigMap({ name, namespace: this.namespace })),
      this.readSecretEnv(name),
    ]).catch((error) => {
      if (isNotFound(error))
        throw new Error(`The spec of ${name} is gone (${(error as Error).message}); the agent must be created again`, { cause: error });
      throw error;
    });
    const raw = configMap.data?.[RECORD_KEY];
    if (!raw) throw new Error(`ConfigMap ${name} has no ${RECORD_KEY}; the agent must be created again`);
    const record = JSON.parse(raw) as AgentRecord;
    const channelTokens: ChannelTokens = {};
    if (env[CHANNEL_TOKEN_ENV.telegram]) channelTokens.telegram = env[CHANNEL_TOKEN_ENV.telegram];
    if (env[CHANNEL_TOKEN_ENV.discord]) channelTokens.discord = env[CHANNEL_TOKEN_ENV.discord];
    if (env[WHATSAPP_KEY]) channelTokens.whatsapp = env[WHATSAPP_KEY];
    const agentEnv = Object.fromEntries(Object.entries(env).filter(([key, value]) => AGENT_ENV_NAME.test(key) && value));
    return {
      agentId: record.agentId,
      userId: record.userId,
      plan: record.plan,
      config: record.config,
      gatewayToken: env[GATEWAY_TOKEN_ENV] ?? '',
      channelTokens,
      llm: record.llm ? { ...record.llm, apiKey: env[LLM_API_KEY_ENV] ?? '' } : undefined,
      ...(Object.keys(agentEnv).length > 0 ? { agentEnv } : {}),
      version: deployment.metadata?.annotations?.[KUBE_ANNOTATIONS.version] ?? this.defaultVersion,
    };
  }

  /** Read-modify-replace (keeps owner references and uses the resourceVersion for optimistic concurrency), or create. */
  private async upsertSecret(name: string, record: AgentRecord, spec: AgentSpec, owner?: V1OwnerReference): Promise<void> {
    const data = this.secretData(spec);
    try {
      const existing = await this.k8s(`read secret ${name}`, () => this.core.readNamespacedSecret({ name, namespace: this.namespace }));
      const body: V1Secret = {
        ...existing,
        metadata: { ...existing.metadata, ...this.metadata(name, record, 'gateway', owner) },
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
        this.core.createNamespacedSecret({ namespace: this.namespace, body: this.secretManifest(name, record, spec, owner) }),
      );
    }
  }

  private async upsertConfigMap(name: string, record: AgentRecord, spec: AgentSpec, owner?: V1OwnerReference): Promise<void> {
    const skills = await this.skillFiles();
    const data = this.configData(record, spec, skills);
    try {
      const existing = await this.k8s(`read configmap ${name}`, () =>
        this.core.readNamespacedConfigMap({ name, namespace: this.namespace }),
      );
      const body: V1ConfigMap = { ...existing, metadata: { ...existing.metadata, ...this.metadata(name, record, 'gateway', owner) }, data };
      delete body.metadata!.managedFields;
      body.metadata!.resourceVersion = existing.metadata?.resourceVersion;
      if (!owner) body.metadata!.ownerReferences = existing.metadata?.ownerReferences;
      await this.k8s(`replace configmap ${name}`, () => this.core.replaceNamespacedConfigMap({ name, namespace: this.namespace, body }));
    } catch (error) {
      if (!isNotFound(error) || !owner) throw error;
      await this.k8s(`create configmap ${name}`, () =>
        this.core.createNamespacedConfigMap({ namespace: this.namespace, body: this.configMapManifest(name, record, spec, owner, skills) }),
      );
    }
  }
}

interface JobMount {
  volume: string;
  claim: string;
  mountPath: string;
  readOnly?: boolean;
}

/**
 * Init container, at every pod start: the layout and modes of the state volume, and no stale OpenClaw lock files
 * (with `Recreate` and a ReadWriteOnce volume, no other gateway can be using this state).
 */
const PREPARE_SCRIPT = [
  'set -e',
  `mkdir -p ${STATE_DIR} ${HOME_DIR}`,
  `chmod 700 ${STATE_DIR} ${HOME_DIR}`,
  `rm -rf ${STATE_DIR}/tmp/openclaw*`,
  // Each mounted skill replaces its copy in the workspace (a link left there is removed, not written through).
  `for src in ${SKILLS_MOUNT}/*/; do`,
  '  [ -d "$src" ] || continue',
  `  dst="${STATE_DIR}/workspace/.agents/skills/$(basename "$src")"`,
  '  mkdir -p "$dst"',
  '  for f in "$src"*; do rm -rf "$dst/$(basename "$f")"; cp "$f" "$dst/"; done',
  'done',
].join('\n');

/** Puts `state/` and `home/` back from a backup clone mounted at /backup (lost+found and the rest are left alone). */
const RESTORE_SCRIPT = [
  'set -e',
  'for d in state home; do',
  `  rm -rf "${DATA_DIR}/$d"`,
  `  if [ -d "/backup/$d" ]; then cp -a "/backup/$d" "${DATA_DIR}/$d"; fi`,
  'done',
].join('\n');

/** Removes the sessions and memory (the local provider's `MEMORY_PATHS`); the workspace seed files stay. */
function resetMemoryScript(): string {
  return ['set -e', `cd ${STATE_DIR}`, `rm -rf ${MEMORY_PATHS.map(shellQuote).join(' ')}`].join('\n');
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
