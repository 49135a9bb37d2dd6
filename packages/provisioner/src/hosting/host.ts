import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type DeviceIdentity, GatewayError } from '@aop/gateway-client';
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
  AgentExistsError,
  AgentNotFoundError,
  AgentStartError,
  OWN_GATEWAY_AGENT_ID,
} from '../host.js';
import {
  DEPLOYMENT_FAILED,
  DEPLOYMENT_GONE,
  DEPLOYMENT_IN_PROGRESS,
  GATEWAY_START_COMMAND,
  HostingApi,
  HostingApiError,
  type HostingApiOptions,
  agentEnvironment,
} from './hosting-api.js';
import { pause } from '../shared/log-follow.js';
import { checkAgentEnv } from '../shared/openclaw-config.js';
import { PlatformDeviceNotPairedError, platformDeviceToken } from '../shared/pairing.js';
import { exclusive, recordFile, writeRecord } from '../shared/registry.js';
import { PINNED_OPENCLAW_VERSION } from '../shared/runtime.js';
import {
  type SealedSpecRecord,
  type SecretBox,
  newSealedRecord,
  openSealedSpec,
  sealSpecSecrets,
  secretAad,
  secretBoxFor,
} from '../shared/sealed-spec.js';
import { probeReadiness } from '../shared/gateway-probe.js';
import { updateWithRollback } from '../shared/update.js';

export interface HostingHostOptions extends HostingApiOptions {
  /** The agent image, e.g. `ghcr.io/openclaw/openclaw:2026.9.6`; an update deploys the same image with the version as tag. */
  image: string;
  /** The platform's data directory; the registry of hosted agents is `<dataDir>/hosting/<agentId>.json`. */
  dataDir: string;
  /** 32-byte key (Buffer, 64 hex characters or base64) for the tokens in the registry. Either this or `secrets`. */
  encryptionKey?: Buffer | string;
  secrets?: SecretBox;
  /** Deployment status poll interval while waiting (default 5 s). */
  pollMs?: number;
  /** `starting` → `error` when the gateway is not ready this long after its deployment was made (default 10 min). */
  readyTimeoutMs?: number;
  /** Base URL of an agent's gateway from its domain (default `https://<domain>`); tests point it at a local server. */
  gatewayUrl?: (domain: string) => string;
  /**
   * The platform's device identity (`loadPlatformDevice`). A hosted gateway is reached over the internet, where a
   * token-only connection gets no scopes; the device must be approved once per gateway state by a person in the
   * agent's Control UI (the host has no way into the container). `controlCredentials` asks, and keeps the token.
   */
  platformDevice?: DeviceIdentity;
}

/** What `<dataDir>/hosting/<agentId>.json` holds. Tokens, the LLM key and the agent's variables are sealed with the host's key. */
export interface HostedAgentRecord {
  agentId: string;
  userId: string;
  plan: string;
  config: Record<string, unknown>;
  version: string;
  image: string;
  serviceId: string;
  /** The deployment the agent runs (or is on its way to run). */
  deploymentId: string;
  /** The provider's public domain of the service (port 18789 behind it). */
  domain: string;
  desired: 'running' | 'stopped';
  llm: (Omit<LlmSpec, 'apiKey'> & { apiKey: string }) | null;
  secrets: SealedSpecRecord['secrets'];
  /** The platform device's token on this gateway (sealed), once an operator approved it. */
  platformDevice?: { deviceId: string; deviceToken: string; pairedAt: string };
  /** ISO 8601: when the current deployment (or restart) was asked for. */
  startedAt: string | null;
  /** ISO 8601: when the current deployment was first seen ready. */
  readyAt: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

interface HostedAgent {
  record: HostedAgentRecord;
  lock: Promise<unknown>;
}

/** The hosting provider reports no CPU or memory figures; the backend answers its `N/A`/mock figures instead. */
export class StatsUnavailableError extends Error {
  override readonly name = 'StatsUnavailableError';
  readonly statusCode = 501;
  constructor(readonly agentId: string) {
    super(`Resource usage is not available for agent ${agentId}: the hosting provider does not report CPU or memory figures`);
  }
}

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
/** A container image tag (the OpenClaw version). */
const TAG_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The tag of an image reference (`repo:tag`, `host:5000/repo:tag`); null when it has none. */
export function imageTag(image: string): string | null {
  const name = image.split('@')[0] ?? image;
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? name.slice(colon + 1) : null;
}

/** The same image repository with another tag (a digest is dropped). */
export function imageWithTag(image: string, tag: string): string {
  if (!TAG_PATTERN.test(tag)) throw new Error(`Invalid OpenClaw version for an image tag: ${tag}`);
  const name = image.split('@')[0] ?? image;
  const colon = name.lastIndexOf(':');
  return `${colon > name.lastIndexOf('/') ? name.slice(0, colon) : name}:${tag}`;
}

/**
 * The `hosting` provider: each agent is a service of the hosting provider (Railway-style GraphQL API) running the
 * OpenClaw image with `openclaw gateway run --bind lan --port 18789` behind a public domain. The container's
 * environment holds the gateway token and channel tokens only (spec §4.15). The host keeps a small registry of its
 * agents (service, deployment, domain, sealed tokens) as one JSON file per agent under `<dataDir>/hosting/`, like
 * the local host's `agent.json`: the provisioner stays free of the database, and the tokens never leave the host
 * unsealed except to the provider's variables.
 *
 * What the provider's container gets is fixed by the image and the variables: the stored `config` and `llm` are
 * kept for `spec()` (and a move to another provider) but are not delivered to the container in this version.
 */
export class HostingAgentHost implements AgentHost {
  readonly provider = 'hosting';
  readonly registryDir: string;
  private readonly api: HostingApi;
  private readonly secrets: SecretBox;
  private readonly pollMs: number;
  private readonly readyTimeoutMs: number;
  private readonly gatewayUrl: (domain: string) => string;
  private readonly agents = new Map<string, HostedAgent>();
  private readonly creating = new Set<string>();
  private shuttingDown = false;

  constructor(private readonly options: HostingHostOptions) {
    this.secrets = secretBoxFor(options, 'HostingAgentHost');
    this.api = new HostingApi(options);
    this.registryDir = join(options.dataDir, 'hosting');
    this.pollMs = options.pollMs ?? 5_000;
    this.readyTimeoutMs = options.readyTimeoutMs ?? 600_000;
    this.gatewayUrl = options.gatewayUrl ?? ((domain) => `https://${domain}`);
  }

  /** The version of agents whose spec names none: the tag of the configured image, else the pinned one. */
  get defaultVersion(): string {
    const tag = imageTag(this.options.image);
    return tag && tag !== 'latest' ? tag : PINNED_OPENCLAW_VERSION;
  }

  /**
   * The gateway token and, with `platformDevice`, the platform device once approved on the gateway. The stored device
   * token is trusted until `repair` (the backend asks after a refused connect, e.g. a redeploy without a volume forgot
   * the pairing); then a signed connect checks it. Unapproved: `PlatformDeviceNotPairedError`, and the gateway now
   * lists the device's pending request for a person to approve in the Control UI.
   */
  async controlCredentials(agentId: string, options: { repair?: boolean } = {}): Promise<ControlCredentials> {
    const agent = await this.get(agentId);
    const record = agent.record;
    const token = this.secrets.decrypt(record.secrets.gatewayToken, secretAad(agentId, 'gatewayToken'));
    const identity = this.options.platformDevice;
    if (!identity) return { token };
    const stored = record.platformDevice?.deviceId === identity.deviceId ? record.platformDevice : undefined;
    if (stored && !options.repair) {
      return {
        token,
        device: { identity, deviceToken: this.secrets.decrypt(stored.deviceToken, secretAad(agentId, 'platformDeviceToken')) },
      };
    }
    let deviceToken: string;
    try {
      deviceToken = await platformDeviceToken({
        url: `${this.gatewayUrl(record.domain).replace(/^http/, 'ws')}/`,
        token,
        identity,
        retryDeadlineMs: 0,
      });
    } catch (err) {
      if (!(err instanceof GatewayError) || err.code !== 'NOT_PAIRED') throw err;
      const requestId = (err.details as { requestId?: unknown } | undefined)?.requestId;
      throw new PlatformDeviceNotPairedError(agentId, identity.deviceId, typeof requestId === 'string' ? requestId : null);
    }
    const known = stored ? this.secrets.decrypt(stored.deviceToken, secretAad(agentId, 'platformDeviceToken')) : null;
    record.platformDevice = {
      deviceId: identity.deviceId,
      deviceToken: this.secrets.encrypt(deviceToken, secretAad(agentId, 'platformDeviceToken')),
      pairedAt: stored && known === deviceToken ? stored.pairedAt : new Date().toISOString(),
    };
    if (this.agents.get(agentId) === agent) await this.save(agent);
    return { token, device: { identity, deviceToken } };
  }

  // ---------------------------------------------------------------- lifecycle

  /** Creates the service and its first deployment (spec §4.15 steps); resolves `starting`. */
  async create(spec: AgentSpec): Promise<AgentState> {
    this.assertOpen();
    if (!ID_PATTERN.test(spec.agentId)) throw new Error(`Invalid agent id: ${spec.agentId}`);
    if (!spec.gatewayToken) throw new Error('A gateway token is required');
    if (this.creating.has(spec.agentId) || (await this.find(spec.agentId))) throw new AgentExistsError(spec.agentId);
    const version = spec.version ?? this.defaultVersion;
    const image = spec.version ? imageWithTag(this.options.image, spec.version) : this.options.image;
    this.creating.add(spec.agentId);
    try {
      const deployed = await this.api
        .deployService({ name: `agent-${spec.agentId}`, image, variables: agentEnvironment(spec) })
        .catch((err) => {
          throw this.failure(`create agent ${spec.agentId}`, err);
        });
      const base = newSealedRecord(this.secrets, spec, version);
      const record: HostedAgentRecord = {
        ...base,
        image,
        serviceId: deployed.serviceId,
        deploymentId: deployed.deploymentId,
        domain: deployed.domain,
        startedAt: base.createdAt,
        readyAt: null,
        lastError: null,
      };
      const agent: HostedAgent = { record, lock: Promise.resolve() };
      this.agents.set(spec.agentId, agent);
      await this.save(agent);
      return this.snapshot(record, 'starting');
    } finally {
      this.creating.delete(spec.agentId);
    }
  }

  /** A new deployment of the service when the agent is stopped or its deployment failed or is gone. */
  async start(agentId: string): Promise<AgentState> {
    const agent = await this.get(agentId);
    return exclusive(agent, async () => {
      if (agent.record.desired === 'running') {
        const current = await this.observe(agent);
        if (current.status === 'starting' || current.status === 'running' || current.status === 'restarting') return current;
      }
      await this.redeploy(agent, 'start');
      return this.snapshot(agent.record, 'starting');
    });
  }

  /** `deploymentStop`: the container stops, the service (image, variables, domain) stays. */
  async stop(agentId: string): Promise<AgentState> {
    const agent = await this.get(agentId);
    return exclusive(agent, async () => {
      if (agent.record.desired !== 'stopped') {
        await this.api.stopDeployment(agent.record.deploymentId).catch((err) => {
          throw this.failure(`stop agent ${agentId}`, err);
        });
        agent.record.desired = 'stopped';
        agent.record.readyAt = null;
        await this.save(agent);
      }
      return this.snapshot(agent.record, 'stopped');
    });
  }

  /** `deploymentRestart` of the running deployment; a stopped or failed agent gets a new deployment instead. */
  async restart(agentId: string): Promise<AgentState> {
    const agent = await this.get(agentId);
    return exclusive(agent, async () => {
      const current = agent.record.desired === 'running' ? await this.observe(agent) : null;
      if (!current || current.status === 'stopped' || current.status === 'error') {
        await this.redeploy(agent, 'restart');
        return this.snapshot(agent.record, 'starting');
      }
      await this.api.restartDeployment(agent.record.deploymentId).catch((err) => {
        throw this.failure(`restart agent ${agentId}`, err);
      });
      agent.record.startedAt = new Date().toISOString();
      agent.record.readyAt = null;
      agent.record.lastError = null;
      await this.save(agent);
      return this.snapshot(agent.record, 'starting');
    });
  }

  /**
   * Deploys the image tagged with `version` and waits until the gateway is ready. If it does not come up, the
   * previous image is set on the service again and deployed, and `UpdateFailedError` is thrown. Its `backupPath` is
   * the previous deployment's id: on this provider there is no state directory of ours to copy, the previous
   * deployment (image, variables, start command) is the restore point and stays listed at the provider.
   */
  async update(agentId: string, options: { version: string }): Promise<AgentState> {
    const agent = await this.get(agentId);
    return exclusive(agent, async () => {
      const record = agent.record;
      const previous = { version: record.version, image: record.image, deploymentId: record.deploymentId };
      const target = { version: options.version, image: imageWithTag(this.options.image, options.version) };
      try {
        await this.api.updateServiceInstance(record.serviceId, { image: target.image });
      } catch (err) {
        throw this.failure(`update agent ${agentId}`, err);
      }
      record.version = target.version;
      record.image = target.image;
      record.desired = 'running';
      return updateWithRollback({
        previousVersion: previous.version,
        targetVersion: target.version,
        backup: previous.deploymentId,
        apply: async () => {
          await this.redeploy(agent, 'update');
          return await this.settle(agent, performance.now() + this.readyTimeoutMs);
        },
        rollBack: async (reason) => {
          try {
            await this.api.updateServiceInstance(record.serviceId, { image: previous.image });
            record.version = previous.version;
            record.image = previous.image;
            await this.redeploy(agent, 'roll back');
          } catch (rollbackError) {
            record.lastError = `Update to OpenClaw ${target.version} failed (${reason}) and the rollback failed: ${message(rollbackError)}`;
            await this.save(agent);
            throw new AgentStartError(record.lastError, { cause: rollbackError });
          }
          return `Rolled back to ${previous.version}.`;
        },
      });
    });
  }

  /**
   * Changes the stored spec. New channel tokens (or LLM) change the container's variables, which take effect with a
   * new deployment; config and plan changes are only stored (see the class comment).
   */
  async configure(agentId: string, changes: AgentChanges): Promise<AgentState> {
    const agent = await this.get(agentId);
    return exclusive(agent, async () => {
      const record = agent.record;
      const current = openSealedSpec(this.secrets, record);
      // Checked before anything is changed: a bad variable leaves the agent as it was.
      if (changes.agentEnv !== undefined) checkAgentEnv(changes.agentEnv);
      if (changes.config) record.config = changes.config;
      if (changes.plan) record.plan = changes.plan;
      if (changes.channelTokens !== undefined || changes.llm !== undefined || changes.agentEnv !== undefined) {
        const next = {
          ...current,
          channelTokens: changes.channelTokens ?? current.channelTokens,
          llm: changes.llm === undefined ? current.llm : changes.llm,
          agentEnv: changes.agentEnv ?? current.agentEnv,
        };
        await this.api.upsertVariables(record.serviceId, agentEnvironment(next)).catch((err) => {
          throw this.failure(`configure agent ${agentId}`, err);
        });
        sealSpecSecrets(this.secrets, record, next);
        if (record.desired === 'running') await this.redeploy(agent, 'configure');
      }
      await this.save(agent);
      return this.observe(agent);
    });
  }

  /** Sets the variables, image and start command from the spec again, then deploys afresh. */
  async repair(agentId: string): Promise<AgentState> {
    const agent = await this.get(agentId);
    return exclusive(agent, async () => {
      const record = agent.record;
      try {
        await this.api.upsertVariables(record.serviceId, agentEnvironment(openSealedSpec(this.secrets, record)));
        await this.api.updateServiceInstance(record.serviceId, { startCommand: GATEWAY_START_COMMAND, image: record.image });
      } catch (err) {
        throw this.failure(`repair agent ${agentId}`, err);
      }
      record.desired = 'running';
      await this.redeploy(agent, 'repair');
      return this.snapshot(record, 'starting');
    });
  }

  /**
   * A fresh deployment: the service has no volume, so a new container starts from the image with no sessions or
   * memory, and OpenClaw seeds the workspace files (AGENTS.md, SOUL.md, …) again at its first boot.
   */
  async resetMemory(agentId: string): Promise<AgentState> {
    const agent = await this.get(agentId);
    return exclusive(agent, async () => {
      agent.record.desired = 'running';
      await this.redeploy(agent, 'reset the memory of');
      return this.snapshot(agent.record, 'starting');
    });
  }

  /** Deletes the service at the provider (an already deleted one counts as deleted), then the registry entry. */
  async delete(agentId: string): Promise<void> {
    const agent = await this.get(agentId);
    await exclusive(agent, async () => {
      try {
        await this.api.deleteService(agent.record.serviceId);
      } catch (err) {
        if (!(err instanceof HostingApiError && /not found/i.test(err.message))) throw this.failure(`delete agent ${agentId}`, err);
      }
      this.agents.delete(agentId);
      await rm(this.registryPath(agentId), { force: true });
    });
  }

  /**
   * Makes the host unusable. Hosted agents keep running: they live at the provider, not in this process, and
   * stopping them whenever the backend restarts (a deploy, a scale-down) would take every agent offline.
   */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    await Promise.all([...this.agents.values()].map((agent) => agent.lock.catch(() => undefined)));
  }

  /** Loads the registry (after a platform restart); the agents themselves kept running at the provider. */
  async restore(): Promise<AgentState[]> {
    this.assertOpen();
    for (const name of await readdir(this.registryDir).catch(() => [] as string[])) {
      if (name.endsWith('.json')) await this.find(name.slice(0, -'.json'.length));
    }
    return this.list();
  }

  // ---------------------------------------------------------------- observation

  /**
   * From the provider's deployment status: in progress → `starting`; `SUCCESS` → `running` once `/readyz` answers
   * ready (else `starting`, `error` past the ready timeout, `restarting` when it was ready before); `FAILED` or
   * `CRASHED` → `error`; removed → `stopped`. A hosting API failure is thrown (HostingApiError).
   */
  async status(agentId: string): Promise<AgentState> {
    return this.observe(await this.get(agentId));
  }

  async list(): Promise<AgentState[]> {
    return Promise.all([...this.agents.values()].map((agent) => this.observe(agent)));
  }

  async waitUntilReady(agentId: string, options: WaitOptions = {}): Promise<AgentState> {
    const agent = await this.get(agentId);
    // By default long enough for the host's own ready timeout to decide (`running` or `error`).
    return this.settle(agent, performance.now() + (options.timeoutMs ?? this.readyTimeoutMs + this.pollMs));
  }

  /** The container's output from the provider's `deploymentLogs`, last `tail` lines (default 200). */
  async logs(agentId: string, options: LogsOptions = {}): Promise<string[]> {
    const agent = await this.get(agentId);
    const tail = Math.max(0, options.tail ?? 200);
    if (tail === 0) return [];
    const lines = await this.api.deploymentLogs(agent.record.deploymentId, tail).catch((err) => {
      throw this.failure(`read the logs of agent ${agentId}`, err);
    });
    return lines.map((line) => line.message).slice(-tail);
  }

  /**
   * The provider has no log subscription: its log query is polled (`deploymentLogs`, the last 500 lines every
   * `pollMs`, default 2 s). The lines of a poll that continue the previous poll's are new; a new deployment (update,
   * redeploy) starts over with all of its lines.
   */
  async *followLogs(agentId: string, options: FollowLogsOptions): AsyncIterable<string> {
    const agent = await this.get(agentId);
    const { signal } = options;
    let deploymentId = agent.record.deploymentId;
    let seen = await this.api.deploymentLogs(deploymentId, FOLLOW_WINDOW).catch((err) => {
      throw this.failure(`read the logs of agent ${agentId}`, err);
    });
    const tail = Math.max(0, Math.floor(options.tail ?? 0));
    for (const line of tail > 0 ? seen.slice(-tail) : []) yield line.message;
    while (!signal.aborted) {
      await pause(options.pollMs ?? 2_000, signal);
      const current = this.agents.get(agentId);
      if (signal.aborted || this.shuttingDown || !current) return;
      const id = current.record.deploymentId;
      const batch = await this.api.deploymentLogs(id, FOLLOW_WINDOW).catch(() => null);
      if (!batch) continue; // the provider did not answer: the next poll asks again
      const fresh = id === deploymentId ? linesAfter(seen, batch) : batch;
      deploymentId = id;
      seen = batch;
      for (const line of fresh) yield line.message;
    }
  }

  /** Always throws `StatsUnavailableError`: the provider's API gives no CPU or memory figures for a deployment. */
  async stats(agentId: string): Promise<AgentStats> {
    await this.get(agentId);
    throw new StatsUnavailableError(agentId);
  }

  async health(agentId: string): Promise<AgentHealth> {
    const record = (await this.get(agentId)).record;
    const down: AgentHealth = { live: false, ready: false, failing: [], uptimeMs: null };
    if (record.desired === 'stopped') return down;
    const base = this.gatewayUrl(record.domain);
    try {
      const live = await fetch(new URL('/healthz', base), { signal: AbortSignal.timeout(5_000) });
      await live.arrayBuffer();
      if (!live.ok) return down;
    } catch {
      return down;
    }
    return { live: true, ...(await this.readiness(record)) };
  }

  async spec(agentId: string): Promise<AgentSpec> {
    return openSealedSpec(this.secrets, (await this.get(agentId)).record);
  }

  // ---------------------------------------------------------------- internals

  private assertOpen(): void {
    if (this.shuttingDown) throw new Error('The agent host is shut down');
  }

  private registryPath(agentId: string): string {
    return recordFile(this.registryDir, agentId);
  }

  /** The agent from memory, else from its registry file (another host instance may have created it). */
  private async find(agentId: string): Promise<HostedAgent | undefined> {
    const known = this.agents.get(agentId);
    if (known || !ID_PATTERN.test(agentId)) return known;
    const path = this.registryPath(agentId);
    if (!existsSync(path)) return undefined;
    const record = JSON.parse(await readFile(path, 'utf8')) as HostedAgentRecord;
    const agent = this.agents.get(agentId) ?? { record, lock: Promise.resolve() };
    this.agents.set(agentId, agent);
    return agent;
  }

  private async get(agentId: string): Promise<HostedAgent> {
    this.assertOpen();
    const agent = await this.find(agentId);
    if (!agent) throw new AgentNotFoundError(agentId);
    return agent;
  }

  private async save(agent: HostedAgent): Promise<void> {
    agent.record.updatedAt = new Date().toISOString();
    await mkdir(this.registryDir, { recursive: true, mode: 0o700 });
    await chmod(this.registryDir, 0o700);
    await writeRecord(this.registryPath(agent.record.agentId), agent.record);
  }

  /** A HostingApiError naming what was being done; other errors pass unchanged. */
  private failure(action: string, err: unknown): unknown {
    if (!(err instanceof HostingApiError)) return err;
    return new HostingApiError(`Cannot ${action}: ${err.message}`, err.operation, err.httpStatus);
  }

  /** `serviceInstanceDeployV2` from the service's current settings; the new deployment becomes the agent's. */
  private async redeploy(agent: HostedAgent, action: string): Promise<void> {
    const record = agent.record;
    try {
      record.deploymentId = await this.api.deploy(record.serviceId);
    } catch (err) {
      throw this.failure(`${action} agent ${record.agentId}`, err);
    }
    record.desired = 'running';
    record.startedAt = new Date().toISOString();
    record.readyAt = null;
    record.lastError = null;
    await this.save(agent);
  }

  private async observe(agent: HostedAgent): Promise<AgentState> {
    const record = agent.record;
    if (record.desired === 'stopped') return this.snapshot(record, 'stopped');
    const deploymentId = record.deploymentId;
    const { status: deployment } = await this.api.deployment(deploymentId).catch((err) => {
      throw this.failure(`read the status of agent ${record.agentId}`, err);
    });
    let status: AgentStatus;
    let lastError = record.lastError;
    let readyAt = record.readyAt;
    if (DEPLOYMENT_IN_PROGRESS.has(deployment)) status = 'starting';
    else if (DEPLOYMENT_FAILED.has(deployment)) {
      status = 'error';
      lastError = `Deployment ${deploymentId} ${deployment === 'CRASHED' ? 'crashed' : 'failed'} (${deployment})`;
    } else if (DEPLOYMENT_GONE.has(deployment)) status = 'stopped';
    else if ((await this.readiness(record)).ready) {
      status = 'running';
      readyAt ??= new Date().toISOString();
      lastError = null;
    } else if (readyAt) status = 'restarting';
    // Wall clock: measured from the hosting API's `startedAt`, a date.
    else if (record.startedAt && Date.now() - Date.parse(record.startedAt) > this.readyTimeoutMs) {
      status = 'error';
      lastError = `Gateway not ready within ${Math.round(this.readyTimeoutMs / 1000)} s of deployment ${deploymentId}`;
    } else status = 'starting';
    // Remember what was learnt, unless another operation moved the agent to a new deployment meanwhile.
    if (record.deploymentId === deploymentId && (lastError !== record.lastError || readyAt !== record.readyAt)) {
      record.lastError = lastError;
      record.readyAt = readyAt;
      await this.save(agent);
    }
    return this.snapshot(record, status);
  }

  /** Polls until `running`; throws AgentStartError on `error`/`stopped` or at the deadline. API errors are retried. */
  private async settle(agent: HostedAgent, deadline: number): Promise<AgentState> {
    let last = 'no answer yet';
    for (;;) {
      try {
        const state = await this.observe(agent);
        if (state.status === 'running') return state;
        if (state.status === 'error' || state.status === 'stopped') {
          throw new AgentStartError(`Agent ${agent.record.agentId} is ${state.status}${state.lastError ? `: ${state.lastError}` : ''}`);
        }
        last = `status ${state.status}`;
      } catch (err) {
        if (!(err instanceof HostingApiError)) throw err;
        last = err.message;
      }
      const left = deadline - performance.now();
      if (left <= 0) throw new AgentStartError(`Agent ${agent.record.agentId} was not ready in time (${last})`);
      await sleep(Math.min(this.pollMs, left));
    }
  }

  /** `GET /readyz` with the gateway token, 5-second timeout. */
  private readiness(record: HostedAgentRecord): Promise<Omit<AgentHealth, 'live'>> {
    const token = this.secrets.decrypt(record.secrets.gatewayToken, secretAad(record.agentId, 'gatewayToken'));
    return probeReadiness(this.gatewayUrl(record.domain), { authorization: `Bearer ${token}` });
  }

  private snapshot(record: HostedAgentRecord, status: AgentStatus): AgentState {
    return {
      agentId: record.agentId,
      userId: record.userId,
      openclawAgentId: OWN_GATEWAY_AGENT_ID,
      status,
      version: record.version,
      url: this.gatewayUrl(record.domain),
      // The gateway is reached through the provider's proxy on the URL's own port; there is no process of ours.
      port: null,
      pid: null,
      startedAt: status === 'stopped' ? null : record.startedAt,
      readyAt: status === 'running' ? record.readyAt : null,
      restarts: 0,
      lastError: record.lastError,
    };
  }
}

/** Lines a log follow polls for at a time. */
const FOLLOW_WINDOW = 500;

/**
 * The lines of `batch` that come after `previous`: the longest end of `previous` that `batch` starts with is what
 * both polls saw. No overlap at all means more than a window of lines came in between: all of `batch` is new.
 */
export function linesAfter<T extends { timestamp: string; message: string }>(previous: T[], batch: T[]): T[] {
  const same = (a: T, b: T) => a.timestamp === b.timestamp && a.message === b.message;
  for (let overlap = Math.min(previous.length, batch.length); overlap > 0; overlap -= 1) {
    const start = previous.length - overlap;
    let matches = true;
    for (let i = 0; i < overlap && matches; i += 1) matches = same(previous[start + i] as T, batch[i] as T);
    if (matches) return batch.slice(overlap);
  }
  return batch;
}
