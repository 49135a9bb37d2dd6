import {
  type AgentHost,
  DockerAgentHost,
  HostingAgentHost,
  KubernetesAgentHost,
  LocalAgentHost,
  loadPlatformDevice,
} from '@aop/provisioner';
import type { BackendConfig } from '../config.js';

/** Why the configured provisioner cannot have a host (missing settings); the backend then reports it disabled. */
export class ProvisionerConfigError extends Error {
  override readonly name = 'ProvisionerConfigError';
}

/** The platform's device identity (`PLATFORM_DEVICE_KEY`, else generated once into the data directory, sealed). */
const platformDevice = (config: BackendConfig) =>
  loadPlatformDevice({ dataDir: config.dataDir, encryptionKey: config.encryptionKey, key: config.platformDeviceKey });

/**
 * The agent host of `PROVISIONER` (spec §4.10: `provisioning` reflects its reachability). Hosts that keep a registry
 * seal its secrets with `ENCRYPTION_KEY` (Kubernetes keeps them in Secret objects); every host hands an agent only
 * its own environment.
 */
export function createAgentHost(config: BackendConfig): AgentHost {
  const common = { dataDir: config.dataDir, encryptionKey: config.encryptionKey, readyTimeoutMs: config.agents.readyTimeoutMs };
  const maxAgents = config.agents.maxAgents !== undefined ? { maxAgents: config.agents.maxAgents } : {};
  switch (config.provisioner) {
    case 'local':
      return new LocalAgentHost({
        ...common,
        ...maxAgents,
        memoryPerAgentBytes: config.agents.memoryPerAgentBytes,
        memoryMargin: config.agents.memoryMargin,
        warmPool: config.agents.warmPool,
        idleMs: config.agents.idleMs,
        evictIdleMs: config.agents.evictIdleMs,
        agentsPerGateway: config.agents.agentsPerGateway,
        ...(config.agents.maxHeapMb > 0 ? { nodeOptions: `--max-old-space-size=${config.agents.maxHeapMb}` } : {}),
      });
    case 'docker':
      return new DockerAgentHost({
        ...common,
        ...maxAgents,
        // Reached through the published port, a gateway gives the token alone no scopes: the platform device pairs.
        platformDevice: platformDevice(config),
        socketPath: config.dockerSocket,
        warmPool: config.agents.warmPool,
        idleMs: config.agents.idleMs,
        evictIdleMs: config.agents.evictIdleMs,
        agentsPerGateway: config.agents.agentsPerGateway,
        ...(config.docker.image ? { image: config.docker.image } : {}),
        ...(config.docker.network ? { network: config.docker.network } : {}),
      });
    case 'kubernetes': {
      const k = config.kubernetes;
      const template = k.agentUrl;
      return new KubernetesAgentHost({
        // Reached through its Service, a gateway gives the token alone no scopes: the platform device pairs (exec).
        platformDevice: platformDevice(config),
        // Secrets live in the cluster's Secret objects; a first image pull can outlast the local default.
        readyTimeoutMs: Math.max(config.agents.readyTimeoutMs, 300_000),
        ...(k.kubeconfig ? { kubeconfig: k.kubeconfig } : {}),
        ...(k.context ? { context: k.context } : {}),
        namespace: k.namespace,
        ...(k.image ? { image: k.image } : {}),
        ...(k.utilityImage ? { utilityImage: k.utilityImage } : {}),
        ...(k.imagePullSecrets.length ? { imagePullSecrets: k.imagePullSecrets } : {}),
        ...(k.storageClass ? { storageClass: k.storageClass } : {}),
        storageSize: k.storageSize,
        idleMs: config.agents.idleMs,
        agentsPerGateway: config.agents.agentsPerGateway,
        // `auto`: one warm pod (what the cluster can hold is its scheduler's and quota's to say, not the backend's).
        warmPool: config.agents.warmPool === 'auto' ? 1 : config.agents.warmPool,
        ...(template
          ? {
              serviceUrl: ({ name, agentId }: { name: string; agentId: string }) =>
                template
                  .replaceAll('{name}', name)
                  .replaceAll('{namespace}', k.namespace)
                  .replaceAll('{agentId}', encodeURIComponent(agentId)),
            }
          : {}),
      });
    }
    case 'hosting': {
      const { hostingApiUrl: apiUrl, hostingApiKey: apiKey } = config;
      const { projectId, environmentId, image } = config.hosting;
      if (!apiUrl || !apiKey || !projectId || !environmentId) {
        throw new ProvisionerConfigError(
          'PROVISIONER=hosting needs HOSTING_API_URL, HOSTING_API_KEY, HOSTING_PROJECT_ID and HOSTING_ENVIRONMENT_ID',
        );
      }
      // Hosted gateways are reached over the internet: the platform device, approved once per agent in its Control UI.
      return new HostingAgentHost({ ...common, apiUrl, apiKey, projectId, environmentId, image, platformDevice: platformDevice(config) });
    }
  }
}
