import { AGENT_ENV_NAME, CHANNEL_TOKEN_ENV, checkAgentEnv } from '../shared/openclaw-config.js';

/**
 * The hosting provider's GraphQL API (Railway-style): services built from a container image, their variables,
 * start command, public domain and deployments. Used by the web's direct deployment (spec §4.15) and by the
 * `hosting` agent host. Every call is one POST of `{ query, variables }` with `Authorization: Bearer <key>`.
 */

/** Port the gateway listens on inside the container; the provider's proxy serves it on `https://<domain>`. */
export const GATEWAY_PORT = 18789;
/** OpenClaw's own CLI in the agent image, listening on all interfaces (token auth stays on). */
export const GATEWAY_START_COMMAND = `openclaw gateway run --bind lan --port ${GATEWAY_PORT}`;

export interface HostingApiOptions {
  /** The GraphQL endpoint, e.g. `https://backboard.example/graphql/v2`. */
  apiUrl: string;
  apiKey: string;
  projectId: string;
  environmentId: string;
  /** Per call (default 15 s). */
  timeoutMs?: number;
}

/** The hosting API could not be reached, refused the call, or answered something unusable. */
export class HostingApiError extends Error {
  override readonly name = 'HostingApiError';
  constructor(
    message: string,
    /** The GraphQL field that was called, e.g. `serviceCreate`. */
    readonly operation: string,
    /** HTTP status of the answer; null when nothing answered. */
    readonly httpStatus: number | null = null,
  ) {
    super(message);
  }
}

/** Railway's `DeploymentStatus` values. */
export type DeploymentStatus =
  | 'QUEUED'
  | 'WAITING'
  | 'INITIALIZING'
  | 'BUILDING'
  | 'DEPLOYING'
  | 'NEEDS_APPROVAL'
  | 'SUCCESS'
  | 'FAILED'
  | 'CRASHED'
  | 'REMOVING'
  | 'REMOVED'
  | 'SKIPPED'
  | 'SLEEPING';

/** Still on its way to `SUCCESS` or a failure. */
export const DEPLOYMENT_IN_PROGRESS: ReadonlySet<string> = new Set([
  'QUEUED',
  'WAITING',
  'INITIALIZING',
  'BUILDING',
  'DEPLOYING',
  'NEEDS_APPROVAL',
]);
/** The deployment did not come up (build or start failed) or its container died. */
export const DEPLOYMENT_FAILED: ReadonlySet<string> = new Set(['FAILED', 'CRASHED']);
/** Stopped by request, replaced by a newer deployment, or skipped. */
export const DEPLOYMENT_GONE: ReadonlySet<string> = new Set(['REMOVING', 'REMOVED', 'SKIPPED']);

export interface Deployment {
  id: string;
  status: DeploymentStatus | string;
  createdAt: string | null;
}

export interface DeploymentLogLine {
  timestamp: string;
  message: string;
  severity: string | null;
}

/** What a settled deployment ended in; `timeout` when it was still in progress at the deadline. */
export interface DeploymentOutcome {
  outcome: 'success' | 'failed' | 'timeout';
  /** The last status seen; null when the API never answered. */
  status: string | null;
  /** The last API error while polling, if any. */
  error: string | null;
}

/**
 * The only variables an agent's container may get. The container runs code the agent's owner controls (skills,
 * tools), so anything else — the platform's database URL, internal keys, session or encryption secrets — is refused.
 */
export const AGENT_ENV_NAMES: ReadonlySet<string> = new Set([
  'OPENCLAW_GATEWAY_TOKEN',
  'OPENCLAW_GATEWAY_PORT',
  CHANNEL_TOKEN_ENV.telegram,
  CHANNEL_TOKEN_ENV.discord,
]);

/** A variable an agent's container may get: one of AGENT_ENV_NAMES, or one of the agent's own `AOP_AGENT_*`. */
export const isAgentVariable = (name: string): boolean => AGENT_ENV_NAMES.has(name) || AGENT_ENV_NAME.test(name);

/** The container's environment: the gateway token, its port, the channel tokens it was given and its own variables. */
export function agentEnvironment(agent: {
  gatewayToken: string;
  channelTokens?: { telegram?: string; discord?: string };
  agentEnv?: Record<string, string>;
}): Record<string, string> {
  const env: Record<string, string> = {
    ...checkAgentEnv(agent.agentEnv),
    OPENCLAW_GATEWAY_TOKEN: agent.gatewayToken,
    OPENCLAW_GATEWAY_PORT: String(GATEWAY_PORT),
  };
  if (agent.channelTokens?.telegram) env[CHANNEL_TOKEN_ENV.telegram] = agent.channelTokens.telegram;
  if (agent.channelTokens?.discord) env[CHANNEL_TOKEN_ENV.discord] = agent.channelTokens.discord;
  return env;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

export class HostingApi {
  constructor(private readonly options: HostingApiOptions) {}

  get environmentId(): string {
    return this.options.environmentId;
  }

  /** One GraphQL call; `errors` in the answer, a non-2xx status or a missing `data.<operation>` is a HostingApiError. */
  async graphql<T>(operation: string, query: string, variables: Record<string, unknown>): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.options.apiUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.options.apiKey}` },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 15_000),
      });
    } catch (err) {
      throw new HostingApiError(`hosting API unreachable: ${err instanceof Error ? err.message : String(err)}`, operation);
    }
    const body = (await res.json().catch(() => null)) as { data?: Record<string, unknown> | null; errors?: { message?: string }[] } | null;
    if (!res.ok || !body || body.errors?.length || !body.data || !(operation in body.data)) {
      const reason = body?.errors?.map((e) => e.message ?? 'error').join('; ') || `HTTP ${res.status}`;
      throw new HostingApiError(`hosting API refused ${operation}: ${reason}`, operation, res.status);
    }
    return body.data[operation] as T;
  }

  /** `serviceCreate`: a service in the project's environment whose source is a container image. */
  async createService(name: string, image: string): Promise<{ id: string }> {
    const service = await this.graphql<{ id?: string } | null>(
      'serviceCreate',
      'mutation($input: ServiceCreateInput!) { serviceCreate(input: $input) { id name } }',
      { input: { projectId: this.options.projectId, environmentId: this.options.environmentId, name, source: { image } } },
    );
    if (!service?.id) throw new HostingApiError('hosting API refused serviceCreate: no service id in the answer', 'serviceCreate');
    return { id: service.id };
  }

  /**
   * `variableCollectionUpsert`: the service's environment. Only agent variables pass (`isAgentVariable`); the upsert
   * does not deploy by itself (`skipDeploys`) so that the caller knows which deployment carries the new values.
   */
  async upsertVariables(serviceId: string, variables: Record<string, string>): Promise<void> {
    const refused = Object.keys(variables).filter((name) => !isAgentVariable(name));
    if (refused.length > 0) throw new Error(`Refusing to send non-agent variables to an agent container: ${refused.join(', ')}`);
    await this.graphql(
      'variableCollectionUpsert',
      'mutation($input: VariableCollectionUpsertInput!) { variableCollectionUpsert(input: $input) }',
      {
        input: {
          projectId: this.options.projectId,
          environmentId: this.options.environmentId,
          serviceId,
          variables,
          replace: true,
          skipDeploys: true,
        },
      },
    );
  }

  /** `serviceInstanceUpdate`: the start command and/or the image the next deployment runs. */
  async updateServiceInstance(serviceId: string, input: { startCommand?: string; image?: string }): Promise<void> {
    await this.graphql(
      'serviceInstanceUpdate',
      'mutation($serviceId: String!, $environmentId: String!, $input: ServiceInstanceUpdateInput!) { serviceInstanceUpdate(serviceId: $serviceId, environmentId: $environmentId, input: $input) }',
      {
        serviceId,
        environmentId: this.options.environmentId,
        input: {
          ...(input.startCommand !== undefined ? { startCommand: input.startCommand } : {}),
          ...(input.image !== undefined ? { source: { image: input.image } } : {}),
        },
      },
    );
  }

  /** `serviceDomainCreate`: a public domain of the provider routed to `targetPort`. */
  async createDomain(serviceId: string, targetPort = GATEWAY_PORT): Promise<string> {
    const created = await this.graphql<{ domain?: string } | null>(
      'serviceDomainCreate',
      'mutation($input: ServiceDomainCreateInput!) { serviceDomainCreate(input: $input) { domain } }',
      { input: { environmentId: this.options.environmentId, serviceId, targetPort } },
    );
    if (!created?.domain)
      throw new HostingApiError('hosting API refused serviceDomainCreate: no domain in the answer', 'serviceDomainCreate');
    return created.domain;
  }

  /** `serviceInstanceDeployV2`: a new deployment from the service's current image, variables and start command. */
  async deploy(serviceId: string): Promise<string> {
    const id = await this.graphql<string | null>(
      'serviceInstanceDeployV2',
      'mutation($serviceId: String!, $environmentId: String!) { serviceInstanceDeployV2(serviceId: $serviceId, environmentId: $environmentId) }',
      { serviceId, environmentId: this.options.environmentId },
    );
    if (typeof id !== 'string' || !id) {
      throw new HostingApiError('hosting API refused serviceInstanceDeployV2: no deployment id in the answer', 'serviceInstanceDeployV2');
    }
    return id;
  }

  /** `serviceInstanceRedeploy`: redeploys the service's latest deployment (the answer names no deployment). */
  async redeployService(serviceId: string): Promise<void> {
    await this.graphql(
      'serviceInstanceRedeploy',
      'mutation($serviceId: String!, $environmentId: String!) { serviceInstanceRedeploy(serviceId: $serviceId, environmentId: $environmentId) }',
      { serviceId, environmentId: this.options.environmentId },
    );
  }

  /** `deployment(id)`: its current status. */
  async deployment(id: string): Promise<Deployment> {
    const found = await this.graphql<Partial<Deployment> | null>(
      'deployment',
      'query($id: String!) { deployment(id: $id) { id status createdAt } }',
      { id },
    );
    if (!found?.status) throw new HostingApiError(`hosting API refused deployment: no status for deployment ${id}`, 'deployment');
    return { id: found.id ?? id, status: found.status, createdAt: found.createdAt ?? null };
  }

  /** `deploymentLogs`: the container's output, oldest first, at most `limit` lines. */
  async deploymentLogs(id: string, limit: number): Promise<DeploymentLogLine[]> {
    const lines = await this.graphql<Partial<DeploymentLogLine>[] | null>(
      'deploymentLogs',
      'query($deploymentId: String!, $limit: Int) { deploymentLogs(deploymentId: $deploymentId, limit: $limit) { timestamp message severity } }',
      { deploymentId: id, limit },
    );
    return (lines ?? []).map((line) => ({ timestamp: line.timestamp ?? '', message: line.message ?? '', severity: line.severity ?? null }));
  }

  /** `deploymentStop`: stops the deployment's container; the service and its settings stay. */
  async stopDeployment(id: string): Promise<void> {
    await this.graphql('deploymentStop', 'mutation($id: String!) { deploymentStop(id: $id) }', { id });
  }

  /** `deploymentRestart`: restarts the deployment's container (same image, same deployment id). */
  async restartDeployment(id: string): Promise<void> {
    await this.graphql('deploymentRestart', 'mutation($id: String!) { deploymentRestart(id: $id) }', { id });
  }

  /** `serviceDelete`: the service, its deployments, variables and domain. */
  async deleteService(serviceId: string): Promise<void> {
    await this.graphql(
      'serviceDelete',
      'mutation($id: String!, $environmentId: String) { serviceDelete(id: $id, environmentId: $environmentId) }',
      {
        id: serviceId,
        environmentId: this.options.environmentId,
      },
    );
  }

  /**
   * Spec §4.15 direct deployment, in its order: the service from the image, its environment (agent variables only),
   * the start command, a public domain targeting port 18789, then the deployment. When a step after `serviceCreate`
   * fails, the half-made service is deleted (best effort) so nothing is left running or billed.
   */
  async deployService(agent: { name: string; image: string; variables: Record<string, string> }): Promise<{
    serviceId: string;
    deploymentId: string;
    domain: string;
  }> {
    const { id: serviceId } = await this.createService(agent.name, agent.image);
    try {
      await this.upsertVariables(serviceId, agent.variables);
      await this.updateServiceInstance(serviceId, { startCommand: GATEWAY_START_COMMAND });
      const domain = await this.createDomain(serviceId, GATEWAY_PORT);
      const deploymentId = await this.deploy(serviceId);
      return { serviceId, deploymentId, domain };
    } catch (err) {
      await this.deleteService(serviceId).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Polls `deployment(id)` until it succeeds, fails or the deadline passes. API errors while polling are remembered
   * and polling goes on (a provider hiccup is not a failed deployment); `signal` ends the wait early as `timeout`.
   */
  async waitForDeployment(id: string, options: { pollMs: number; timeoutMs: number; signal?: AbortSignal }): Promise<DeploymentOutcome> {
    const deadline = performance.now() + options.timeoutMs;
    let status: string | null = null;
    let error: string | null = null;
    for (;;) {
      if (options.signal?.aborted) return { outcome: 'timeout', status, error };
      try {
        status = (await this.deployment(id)).status;
        error = null;
        if (status === 'SUCCESS') return { outcome: 'success', status, error };
        if (DEPLOYMENT_FAILED.has(status) || DEPLOYMENT_GONE.has(status)) return { outcome: 'failed', status, error };
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      const left = deadline - performance.now();
      if (left <= 0) return { outcome: 'timeout', status, error };
      await sleep(Math.min(options.pollMs, left), options.signal);
    }
  }
}
