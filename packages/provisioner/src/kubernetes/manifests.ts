import { createHash } from 'node:crypto';
import type {
  V1ConfigMap,
  V1Deployment,
  V1EnvVar,
  V1Job,
  V1ObjectMeta,
  V1OwnerReference,
  V1PersistentVolumeClaim,
  V1PodSecurityContext,
  V1ResourceRequirements,
  V1Secret,
  V1SecurityContext,
  V1Service,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import type { AgentSpec, LlmSpec } from '../host.js';
import { BUS_SKILL_FILES, BUS_SKILL_NAME, type SkillFile } from '../shared/bus-skill.js';
import { buildOpenClawConfig, carriesWarmUp, checkAgentEnv, secretFileContents } from '../shared/openclaw-config.js';
import { type RosterMember, applyRoster, rosterSecrets } from '../shared/roster.js';
import type { KubernetesHostOptions } from './host.js';

export const GATEWAY_PORT = 18789;

export const GATEWAY_CONTAINER = 'gateway';
export const PREPARE_CONTAINER = 'prepare';
/** The PVC: OpenClaw state in `state/`, the gateway's HOME in `home/`. */
export const DATA_DIR = '/var/lib/openclaw';
export const STATE_DIR = `${DATA_DIR}/state`;
export const HOME_DIR = `${DATA_DIR}/home`;
/**
 * What the gateway reads its config and secrets from while its pod lives: a memory-backed emptyDir, written by the init
 * container from the agent's ConfigMap and Secret at every pod start, and writable by the gateway (OpenClaw writes its
 * config on `config.apply`) and by the host through `pods/exec` (a configuration change, a warm pod's adoption). Never
 * on the state volume, so no backup or clone of it holds a secret.
 */
export const RUNTIME_DIR = '/run/openclaw';
export const CONFIG_KEY = 'openclaw.json';
export const CONFIG_PATH = `${RUNTIME_DIR}/${CONFIG_KEY}`;
/** The Secret's key holding the gateway's secret file (`secretFileContents`), and where the gateway reads it. */
export const SECRET_FILE_KEY = 'aop-secrets.json';
export const SECRET_FILE_PATH = `${RUNTIME_DIR}/${SECRET_FILE_KEY}`;
/** Where the init container reads the ConfigMap's config and the Secret's secret file (mounted into it only). */
const CONFIG_SOURCE = '/etc/openclaw';
const SECRETS_SOURCE = '/etc/openclaw-secrets';
/** The stored spec (no secrets) in the agent's ConfigMap; not mounted into the pod. */
export const RECORD_KEY = 'aop-agent.json';
/**
 * The platform's skills (`bus-skill.ts`) ride in the agent's ConfigMap (`skills.<skill>.<file>`), mounted into the
 * init container only, which copies them into the workspace at every pod start (create, repair, update, restarts).
 */
const SKILLS_MOUNT = '/etc/openclaw-skills';
const skillKey = (skill: string, file: string) => `skills.${skill}.${file}`;
const SKILL_ITEMS = BUS_SKILL_FILES.map((file) => ({ key: skillKey(BUS_SKILL_NAME, file), path: `${BUS_SKILL_NAME}/${file}` }));
/** A member's model key in its Secret (customer-scoped gateways; the gateway's secret file gets it from there). */
export const MEMBER_KEY = 'llm-api-key';
/** A member's Secret's data: its model key, or null to remove it (a merge patch). */
export const memberSecretData = (llm: Pick<LlmSpec, 'apiKey'> | null | undefined): Record<string, string> =>
  llm ? { [MEMBER_KEY]: base64(llm.apiKey) } : {};
/** WhatsApp links by QR code: its "token" is only a switch. Kept in the Secret but never passed to the pod. */
export const WHATSAPP_KEY = 'aop-whatsapp-token';

/**
 * The pod's references to the agent's own variables in its Secret. Optional: a reference left behind by a name that
 * was removed (a strategic merge patch only adds) leaves the variable unset rather than blocking the pod's start.
 */
export const agentEnvRefs = (secret: string, names: readonly string[]): V1EnvVar[] =>
  names.map((key) => ({ name: key, valueFrom: { secretKeyRef: { name: secret, key, optional: true } } }));

export const KUBE_LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  name: 'app.kubernetes.io/name',
  instance: 'app.kubernetes.io/instance',
  component: 'app.kubernetes.io/component',
  agentId: 'aop/agent-id',
  userId: 'aop/user-id',
  backupOf: 'aop/backup-of',
  /** On a member's objects (customer-scoped gateways): the name of the Deployment whose gateway it is in. */
  gatewayOf: 'aop/gateway-of',
} as const;

export const KUBE_ANNOTATIONS = {
  /** The exact ids (labels hold a DNS-safe form). */
  agentId: 'aop/agent-id',
  userId: 'aop/user-id',
  plan: 'aop/plan',
  version: 'aop/openclaw-version',
  restartedAt: 'kubectl.kubernetes.io/restartedAt',
  /** Hibernated since (ISO 8601), while scaled to 0 for being idle (shared/idle.ts); absent when awake or stopped. */
  hibernatedSince: 'aop/hibernated-since',
  /** When a hibernated agent is woken for its next due job (absent: none due). */
  wakeAt: 'aop/wake-at',
  /**
   * A hibernated gateway's next due time of each of its agents' jobs (JSON, by OpenClaw agent id): an agent stopped or
   * deleted while it sleeps no longer wakes it (shared/idle.ts `hibernationFor`).
   */
  dueByAgent: 'aop/due-by-agent',
  /** `prepare`: the agent's config carries the warm-up, so a new pod is `starting` until its first turn is prepared. */
  firstTurn: 'aop/first-turn',
  /** The uid of the pod whose first turn was prepared (the warm-up turn ran, or was tried). */
  preparedPod: 'aop/prepared-pod',
  /**
   * `true`: the roster changed while the pod was starting (an agent joined it): written into its files, applied with
   * `config.apply` once it is ready; `starting` until then.
   */
  rosterPending: 'aop/roster-pending',
  /**
   * OpenClaw's scheduler did not start in a pod (shared/scheduler-start.ts): `schedulerRestarts`, new pods asked for
   * that in a row (cleared by a pod whose scheduler started, and by a restart); `schedulerDown`, JSON `{ pod, reason }`
   * for the pod the host gave up on (it runs, and says its jobs do not).
   */
  schedulerRestarts: 'aop/scheduler-restarts',
  schedulerDown: 'aop/scheduler-down',
  /**
   * Customer-scoped gateways (shared/roster.ts `RosterFields`): on a gateway's Deployment, `agentStopped` (`true`: its
   * first agent is stopped while the pod runs on for its members), `retired` (`true`: its first agent was deleted),
   * `leftAgents` (JSON: members deleted while no pod ran) and `quietJobs` (JSON: the first agent's jobs its stop
   * disabled); on a member's ConfigMap, `gatewayOf`, `desired` (`running` or `stopped`) and its `quietJobs`.
   */
  agentStopped: 'aop/agent-stopped',
  retired: 'aop/retired',
  leftAgents: 'aop/left-agents',
  quietJobs: 'aop/quiet-jobs',
  gatewayOf: 'aop/gateway-of',
  desired: 'aop/desired',
} as const;

/** What a gateway's config and secret file list besides its first agent (`applyRoster`, `rosterSecrets`). */
export interface KubeRoster {
  members: RosterMember[];
  mainStopped: boolean;
}

export const MANAGED_BY = 'aop';
const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
const hash16 = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 16);
const base64 = (value: string) => Buffer.from(value, 'utf8').toString('base64');

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

/** The non-secret part of the spec, stored in the agent's ConfigMap. */
export interface AgentRecord {
  agentId: string;
  userId: string;
  plan: string;
  config: Record<string, unknown>;
  llm: Omit<LlmSpec, 'apiKey'> | null;
  /** The names of the agent's own variables (`agentEnv`; values only in the Secret), which the pod reads from it. */
  envNames?: string[];
}

export interface JobMount {
  volume: string;
  claim: string;
  mountPath: string;
  readOnly?: boolean;
}

/**
 * Init container, at every pod start: the layout and modes of the state volume, no stale OpenClaw lock files (with
 * `Recreate` and a ReadWriteOnce volume, no other gateway can be using this state), and the config and secret file
 * from the ConfigMap and the Secret into the runtime directory (`cp` copies the content behind the mounts' links).
 */
const PREPARE_SCRIPT = [
  'set -e',
  `mkdir -p ${STATE_DIR} ${HOME_DIR}`,
  `chmod 700 ${STATE_DIR} ${HOME_DIR}`,
  `rm -rf ${STATE_DIR}/tmp/openclaw*`,
  'umask 077',
  `cp ${CONFIG_SOURCE}/${CONFIG_KEY} ${CONFIG_PATH}`,
  `cp ${SECRETS_SOURCE}/${SECRET_FILE_KEY} ${SECRET_FILE_PATH}`,
  `chmod 600 ${CONFIG_PATH} ${SECRET_FILE_PATH}`,
  // Each mounted skill replaces its copy in the workspace, and in those of the customer's other agents in this gateway
  // (`workspace-<id>`, customer-scoped gateways); a link left there is removed, not written through.
  `for ws in ${STATE_DIR}/workspace ${STATE_DIR}/workspace-*; do`,
  '  [ "$ws" = "' + STATE_DIR + '/workspace" ] || [ -d "$ws" ] || continue',
  `  for src in ${SKILLS_MOUNT}/*/; do`,
  '    [ -d "$src" ] || continue',
  '    dst="$ws/.agents/skills/$(basename "$src")"',
  '    mkdir -p "$dst"',
  '    for f in "$src"*; do rm -rf "$dst/$(basename "$f")"; cp "$f" "$dst/"; done',
  '  done',
  'done',
].join('\n');

/**
 * The objects an agent is made of, built from its record and the host's settings; the host only sends them to the
 * API server and reads them back.
 */
export class KubeManifests {
  constructor(
    private readonly namespace: string,
    private readonly settings: Pick<Required<KubernetesHostOptions>, 'runAsUser' | 'storageSize' | 'jobTimeoutMs'>,
    private readonly options: Pick<KubernetesHostOptions, 'imagePullSecrets' | 'storageClass' | 'utilityImage'>,
    private readonly imageFor: (version: string) => string,
    private readonly resourcesFor: (plan: string) => V1ResourceRequirements,
  ) {}

  labels(name: string, ids: { agentId: string; userId?: string }, component: string): Record<string, string> {
    return {
      [KUBE_LABELS.managedBy]: MANAGED_BY,
      [KUBE_LABELS.name]: 'openclaw',
      [KUBE_LABELS.instance]: name,
      [KUBE_LABELS.component]: component,
      [KUBE_LABELS.agentId]: kubeLabelValue(ids.agentId),
      ...(ids.userId ? { [KUBE_LABELS.userId]: kubeLabelValue(ids.userId) } : {}),
    };
  }

  metadata(name: string, ids: { agentId: string; userId: string }, component: string, owner?: V1OwnerReference): V1ObjectMeta {
    return {
      name,
      namespace: this.namespace,
      labels: this.labels(name, ids, component),
      annotations: { [KUBE_ANNOTATIONS.agentId]: ids.agentId, [KUBE_ANNOTATIONS.userId]: ids.userId },
      ...(owner ? { ownerReferences: [owner] } : {}),
    };
  }

  podSecurity(): V1PodSecurityContext {
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

  containerSecurity(): V1SecurityContext {
    return { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
  }

  /** The Deployment's `aop/first-turn` for the record: `prepare` when its config carries the warm-up turn, else none. */
  firstTurn(record: AgentRecord, options: { alwaysWarmUp?: boolean } = {}): string | null {
    const llm = record.llm ? { ...record.llm, apiKey: '' } : undefined;
    return carriesWarmUp(this.gatewayConfig({ config: record.config, llm }, options)) ? 'prepare' : null;
  }

  deploymentManifest(
    name: string,
    record: AgentRecord,
    version: string,
    replicas: number,
    options: { alwaysWarmUp?: boolean } = {},
  ): V1Deployment {
    const firstTurn = this.firstTurn(record, options);
    const image = this.imageFor(version);
    const labels = this.labels(name, record, 'gateway');
    const env: V1EnvVar[] = [
      { name: 'HOME', value: HOME_DIR },
      // Temp files, the compile cache and OpenClaw's dated log files: an emptyDir, so they never fill the state volume.
      { name: 'TMPDIR', value: '/tmp' },
      { name: 'LANG', value: 'C.UTF-8' },
      { name: 'MALLOC_ARENA_MAX', value: '2' },
      { name: 'OPENCLAW_STATE_DIR', value: STATE_DIR },
      { name: 'OPENCLAW_CONFIG_PATH', value: CONFIG_PATH },
      { name: 'OPENCLAW_NO_AUTO_UPDATE', value: '1' },
      { name: 'OPENCLAW_DISABLE_BONJOUR', value: '1' },
      { name: 'OPENCLAW_OFFLINE', value: '1' },
      // The agent's own variables are the only keys of its Secret in the environment; every secret the config refers
      // to is in the secret file.
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
          ...(firstTurn ? { [KUBE_ANNOTATIONS.firstTurn]: firstTurn } : {}),
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
                  { name: 'config', mountPath: CONFIG_SOURCE, readOnly: true },
                  { name: 'secrets', mountPath: SECRETS_SOURCE, readOnly: true },
                  { name: 'runtime', mountPath: RUNTIME_DIR },
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
                  { name: 'runtime', mountPath: RUNTIME_DIR },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'state', persistentVolumeClaim: { claimName: name } },
              // Only openclaw.json: the stored spec in the same ConfigMap is the host's, not the gateway's.
              { name: 'config', configMap: { name, items: [{ key: CONFIG_KEY, path: CONFIG_KEY }] } },
              // Only the secret file, readable by the pod's group (the init container copies it, 0600, into `runtime`).
              {
                name: 'secrets',
                secret: { secretName: name, items: [{ key: SECRET_FILE_KEY, path: SECRET_FILE_KEY }], defaultMode: 0o440 },
              },
              // OpenClaw keeps its config's backups beside it (`.bak`, `.last-good`, up to 32 `.clobbered.*` snapshots).
              { name: 'runtime', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
              // Optional: keys the ConfigMap lacks are left out instead of keeping the pod from starting.
              { name: 'skills', configMap: { name, items: SKILL_ITEMS, optional: true } },
              { name: 'tmp', emptyDir: { sizeLimit: '1Gi' } },
            ],
          },
        },
      },
    };
  }

  serviceManifest(name: string, record: AgentRecord, owner: V1OwnerReference): V1Service {
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

  pvcManifest(name: string, record: AgentRecord): V1PersistentVolumeClaim {
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

  /**
   * The agent's own secrets only (whatever else the backend holds never gets here): the gateway's secret file, the
   * agent's own variables (`AOP_AGENT_*`, which reach the container's environment) and the WhatsApp switch.
   */
  secretData(spec: AgentSpec, roster?: KubeRoster): Record<string, string> {
    const file = { ...secretFileContents(spec), ...rosterSecrets(roster?.members ?? []) };
    const data: Record<string, string> = { [SECRET_FILE_KEY]: base64(JSON.stringify(file)) };
    for (const [key, value] of Object.entries(checkAgentEnv(spec.agentEnv))) data[key] = base64(value);
    if (spec.channelTokens?.whatsapp) data[WHATSAPP_KEY] = base64(spec.channelTokens.whatsapp);
    return data;
  }

  secretManifest(name: string, record: AgentRecord, spec: AgentSpec, owner: V1OwnerReference): V1Secret {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: this.metadata(name, record, 'gateway', owner),
      data: this.secretData(spec),
    };
  }

  configData(
    record: AgentRecord,
    spec: AgentSpec,
    skills: SkillFile[],
    options: { alwaysWarmUp?: boolean; roster?: KubeRoster } = {},
  ): Record<string, string> {
    const data: Record<string, string> = {
      [CONFIG_KEY]: `${JSON.stringify(this.gatewayConfig(spec, options), null, 2)}\n`,
      [RECORD_KEY]: `${JSON.stringify(record, null, 2)}\n`,
    };
    for (const file of skills) data[skillKey(file.path.at(-2) ?? '', file.path.at(-1) ?? '')] = file.content.toString('utf8');
    return data;
  }

  /** The gateway's `openclaw.json`: its secrets are SecretRefs into the secret file; its members, when it has any. */
  gatewayConfig(
    spec: Pick<AgentSpec, 'config' | 'channelTokens' | 'llm'>,
    options: { alwaysWarmUp?: boolean; roster?: KubeRoster } = {},
  ): Record<string, unknown> {
    const config = buildOpenClawConfig(spec, {
      port: GATEWAY_PORT,
      bind: 'lan',
      workspaceDir: `${STATE_DIR}/workspace`,
      secretFile: SECRET_FILE_PATH,
      ...(options.alwaysWarmUp === undefined ? {} : { alwaysWarmUp: options.alwaysWarmUp }),
    });
    const roster = options.roster;
    return roster ? applyRoster(config, roster.members, { mainStopped: roster.mainStopped }) : config;
  }

  configMapManifest(
    name: string,
    record: AgentRecord,
    spec: AgentSpec,
    owner: V1OwnerReference,
    skills: SkillFile[],
    options: { alwaysWarmUp?: boolean } = {},
  ): V1ConfigMap {
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: this.metadata(name, record, 'gateway', owner),
      data: this.configData(record, spec, skills, options),
    };
  }

  recordOf(spec: AgentSpec): AgentRecord {
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

  jobManifest(agentId: string, name: string, kind: string, image: string, script: string, mounts: JobMount[]): V1Job {
    // The wall clock only makes the name unique and readable in order; manifests have no clock to take.
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
}
