import { randomBytes } from 'node:crypto';
import { decryptSecret, encryptSecret, parseEncryptionKey } from '@aop/core';
import { HostingApi, HostingApiError, agentEnvironment } from '@aop/provisioner/hosting-api';

export interface HostingOptions {
  apiUrl: string;
  apiKey: string;
  projectId: string;
  environmentId: string;
  image: string;
  /** Deployment status poll interval after a direct deployment (default 5 s). */
  statusPollMs?: number;
  /** A direct deployment still not `SUCCESS` this long after it was made ends in `error` (default 10 min). */
  deployTimeoutMs?: number;
}

export interface DirectDeployment {
  serviceId: string;
  deploymentId: string;
  /** `https://<domain>`: the gateway's public address (port 18789 behind the provider's proxy). */
  url: string;
  /** The gateway's control UI with the gateway token and URL in the hash fragment (never sent to a server). */
  controlUiUrl: string;
  /** The gateway's shared token (48 hex characters); the caller stores it sealed. */
  gatewayToken: string;
}

/** The hosting API failed (unreachable, refused, unusable answer). */
export const HostingError = HostingApiError;
export type HostingError = HostingApiError;

/** Associated data binding a sealed gateway token to its agent row (a token copied to another row does not open). */
const tokenAad = (agentId: string) => `agents:${agentId}:gateway_token`;

/** A direct deployment's gateway token, sealed with the web's ENCRYPTION_KEY for `agents.gateway_token_sealed`. */
export const sealGatewayToken = (encryptionKey: string, agentId: string, token: string): string =>
  encryptSecret(parseEncryptionKey(encryptionKey), token, tokenAad(agentId));

export const openGatewayToken = (encryptionKey: string, agentId: string, sealed: string): string =>
  decryptSecret(parseEncryptionKey(encryptionKey), sealed, tokenAad(agentId));

/**
 * Spec §4.15 direct deployment through the provisioner's hosting client: the service from the agent image, its
 * environment (the gateway token and channel tokens only: never a platform secret), its start command, a public
 * domain targeting port 18789, then the deployment.
 */
export async function deployDirect(
  options: HostingOptions,
  agent: { agentId: string; name: string; channelTokens: Record<string, string> },
): Promise<DirectDeployment> {
  const gatewayToken = randomBytes(24).toString('hex');
  const { serviceId, deploymentId, domain } = await new HostingApi(options).deployService({
    name: `agent-${agent.agentId}`,
    image: options.image,
    variables: agentEnvironment({ gatewayToken, channelTokens: agent.channelTokens }),
  });
  const url = `https://${domain}`;
  const fragment = new URLSearchParams({ gatewayUrl: url.replace(/^https/, 'wss'), token: gatewayToken });
  return { serviceId, deploymentId, url, controlUiUrl: `${url}/#${fragment.toString()}`, gatewayToken };
}

/**
 * Follows direct deployments in the background until they settle (spec §3.2: `deploying` → `running` once the
 * deployment completes, `error` when it fails or is not done by the deadline) and hands the outcome to `settle`.
 * `close()` ends every watch (on app close) without settling it.
 */
export class DeploymentWatcher {
  private readonly api: HostingApi;
  private readonly stop = new AbortController();
  private readonly watches = new Set<Promise<void>>();

  constructor(
    private readonly options: HostingOptions,
    private readonly onError: (err: unknown, deploymentId: string) => void = () => undefined,
  ) {
    this.api = new HostingApi(options);
  }

  watch(deploymentId: string, settle: (outcome: { status: 'running' | 'error'; detail: string }) => Promise<void>): void {
    const run = (async () => {
      const result = await this.api.waitForDeployment(deploymentId, {
        pollMs: this.options.statusPollMs ?? 5_000,
        timeoutMs: this.options.deployTimeoutMs ?? 600_000,
        signal: this.stop.signal,
      });
      if (this.stop.signal.aborted) return;
      const detail =
        result.outcome === 'timeout'
          ? `deployment ${deploymentId} not complete in time (last status ${result.status ?? 'unknown'}${result.error ? `; ${result.error}` : ''})`
          : `deployment ${deploymentId} ${result.status}`;
      await settle({ status: result.outcome === 'success' ? 'running' : 'error', detail });
    })().catch((err) => this.onError(err, deploymentId));
    this.watches.add(run);
    void run.finally(() => this.watches.delete(run));
  }

  /** Watches still going. */
  get pending(): number {
    return this.watches.size;
  }

  async close(): Promise<void> {
    this.stop.abort();
    await Promise.all([...this.watches]);
  }
}
