import { existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { type AgentHost, PINNED_OPENCLAW_VERSION, openClawRuntime, runtimeProblem } from '@aop/provisioner';
import type { BackendConfig } from '../config.js';

export type DockerStatus = 'available' | 'unavailable';
export type ProvisioningStatus = 'enabled' | 'disabled';

const PROBE_TIMEOUT_MS = 2_000;

/** Asks a Docker engine for `GET /_ping` on its unix socket; `OK` means it is there. */
export function pingDocker(socketPath: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<DockerStatus> {
  if (!existsSync(socketPath)) return Promise.resolve('unavailable');
  return new Promise((resolve) => {
    const req = httpRequest({ socketPath, path: '/_ping', method: 'GET', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve(res.statusCode === 200 && body.trim() === 'OK' ? 'available' : 'unavailable'));
      res.on('error', () => resolve('unavailable'));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve('unavailable'));
    req.end();
  });
}

/** A hosting API counts as reachable when it answers at all below 500 within the timeout. */
async function pingHostingApi(url: string | undefined, key: string | undefined): Promise<ProvisioningStatus> {
  if (!url || !key) return 'disabled';
  try {
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    await res.body?.cancel();
    return res.status < 500 ? 'enabled' : 'disabled';
  } catch {
    return 'disabled';
  }
}

/** The local provisioner needs the Node 24 binary and the pinned OpenClaw runtime on disk. */
const openclawInstalled = (): ProvisioningStatus =>
  runtimeProblem(openClawRuntime(PINNED_OPENCLAW_VERSION)) === null ? 'enabled' : 'disabled';

/** A cluster counts as reachable when listing our agents answers within the timeout. */
async function listsAgents(host: AgentHost | undefined): Promise<ProvisioningStatus> {
  if (!host) return 'disabled';
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), PROBE_TIMEOUT_MS);
  });
  try {
    await Promise.race([host.list(), timeout]);
    return 'enabled';
  } catch {
    return 'disabled';
  } finally {
    clearTimeout(timer);
  }
}

export async function provisioningStatus(config: BackendConfig, host?: AgentHost): Promise<ProvisioningStatus> {
  switch (config.provisioner) {
    case 'local':
      return openclawInstalled();
    case 'docker':
      return (await pingDocker(config.dockerSocket)) === 'available' ? 'enabled' : 'disabled';
    case 'hosting':
      return pingHostingApi(config.hostingApiUrl, config.hostingApiKey);
    case 'kubernetes':
      return listsAgents(host);
  }
}

export interface HealthSnapshot {
  docker: DockerStatus;
  provisioning: ProvisioningStatus;
}

/**
 * Health checks run at most once per `ttlMs`, so a load balancer polling
 * `/health` does not turn into a probe storm against Docker or the hosting API.
 */
export function createHealthProbe(config: BackendConfig, host?: AgentHost, ttlMs = 5_000): () => Promise<HealthSnapshot> {
  let cached: { at: number; value: Promise<HealthSnapshot> } | undefined;
  return () => {
    // The cache's age only: monotonic, so a clock step cannot keep a stale answer or drop a fresh one.
    const now = performance.now();
    if (!cached || now - cached.at > ttlMs) {
      const value = Promise.all([pingDocker(config.dockerSocket), provisioningStatus(config, host)]).then(([docker, provisioning]) => ({
        docker,
        provisioning,
      }));
      cached = { at: now, value };
    }
    return cached.value;
  };
}
