import { type GatewayConnection, connectGateway } from '@aop/gateway-client';
import type { AgentHealth, ControlCredentials } from '../host.js';

/** What a gateway that does not answer is. */
export const GATEWAY_DOWN: AgentHealth = { live: false, ready: false, failing: [], uptimeMs: null };

const PROBE_TIMEOUT_MS = 5_000;

/** `base` + `/path`, keeping any path `base` has (a gateway may sit behind a proxy prefix). */
const at = (base: string, path: string) => `${base.replace(/\/+$/, '')}${path}`;

/**
 * `GET /readyz` with the gateway's token (OpenClaw answers the full body only to an authorised caller), 5-second
 * timeout: ready only on 200 with `ready: true`; anything else, or no answer, is not ready.
 */
export async function probeReadiness(baseUrl: string, headers: Record<string, string>): Promise<Omit<AgentHealth, 'live'>> {
  try {
    const res = await fetch(at(baseUrl, '/readyz'), { headers, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    const body = (await res.json().catch(() => ({}))) as { ready?: boolean; failing?: string[]; uptimeMs?: number };
    return {
      ready: res.status === 200 && body.ready === true,
      failing: Array.isArray(body.failing) ? body.failing : [],
      uptimeMs: typeof body.uptimeMs === 'number' ? body.uptimeMs : null,
    };
  } catch {
    return { ready: false, failing: [], uptimeMs: null };
  }
}

/**
 * Spec §4.10/§8 health: `GET /healthz` (liveness, no credentials), then `GET /readyz` with `readyHeaders()` — asked for
 * only once the gateway is live, so a host that reads the token from its store does not do so for a dead gateway.
 */
export async function probeGateway(
  baseUrl: string,
  readyHeaders: () => Record<string, string> | Promise<Record<string, string>>,
): Promise<AgentHealth> {
  try {
    const live = await fetch(at(baseUrl, '/healthz'), { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    await live.arrayBuffer();
    if (!live.ok) return GATEWAY_DOWN;
  } catch {
    return GATEWAY_DOWN;
  }
  let headers: Record<string, string>;
  try {
    headers = await readyHeaders();
  } catch {
    return { live: true, ready: false, failing: [], uptimeMs: null };
  }
  return { live: true, ...(await probeReadiness(baseUrl, headers)) };
}

/**
 * A control connection to a gateway at `baseUrl` (HTTP; the WebSocket is the same address) with an agent's control
 * credentials: its token, and the platform device when the host paired one (without it, a connection through a
 * published port or a Service gets no scopes). One attempt: callers retry as their own deadline allows.
 */
export function connectControl(baseUrl: string, credentials: ControlCredentials): Promise<GatewayConnection> {
  return connectGateway({
    url: baseUrl.replace(/^http/, 'ws'),
    token: credentials.token,
    device: credentials.device?.identity,
    retryDeadlineMs: 0,
  });
}
