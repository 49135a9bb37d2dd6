import { DomainError } from '@aop/core';
import { GatewayError, type GatewayConnection, connectGateway } from '@aop/gateway-client';
import { AgentNotFoundError, type AgentHost, AgentStartError, type ControlCredentials } from '@aop/provisioner';
import { onHost } from './agents.js';
import type { Logger } from '@aop/core';

/** Connection opening (socket + challenge + signed connect) within the caller's time. */
const HANDSHAKE_MS = 15_000;

/** Failures of the way to a gateway, in fixed words: addresses and ports of agent gateways stay inside the backend. */
export const TRANSPORT_CODES: Readonly<Record<string, string>> = {
  CONNECT_FAILED: 'gateway connection failed',
  CLOSED: 'gateway connection closed',
  TIMEOUT: 'gateway timed out',
  PROTOCOL_ERROR: 'unexpected answer from the gateway',
};

/**
 * A control connection to an agent's gateway at `url` (its `AgentState.url` as `ws:`): the host's credentials (the
 * platform device, paired first when needed), else the gateway token alone (a local gateway trusts it). When the
 * gateway says `NOT_PAIRED` although the host verified the device for this run (someone removed it since), the host is
 * asked to pair it again, once. Anything in the backend that talks to agent gateways should open its connection here:
 * a container or hosted gateway gives a token-only connection no scopes. Throws domain errors (404/503) when the agent is
 * gone or not running, `GatewayError` otherwise (`NOT_PAIRED` with a message fit to show when pairing failed).
 */
export async function openAgentControl(
  host: AgentHost,
  agentId: string,
  url: string,
  { deadline, log }: { /** By `performance.now()`: a time bound, not a date. */ deadline: number; log: Pick<Logger, 'warn' | 'info'> },
): Promise<{ conn: GatewayConnection; platformDevice: string | undefined }> {
  const credentials = async (repair: boolean): Promise<ControlCredentials> => {
    if (!host.controlCredentials) return { token: (await onHost(() => host.spec(agentId))).gatewayToken };
    try {
      return await host.controlCredentials(agentId, { repair });
    } catch (err) {
      if (err instanceof AgentNotFoundError) throw new DomainError('AGENT_NOT_FOUND');
      if (err instanceof AgentStartError) throw new DomainError('AGENT_NOT_RUNNING');
      if (err instanceof GatewayError && err.code !== 'NOT_PAIRED') throw err;
      // The cause (CLI output from the container, an approval the hosting provider needs) is for operators.
      log.warn({ agentId, reason: err instanceof Error ? err.message : String(err) }, 'agent control: platform device not paired');
      throw new GatewayError('NOT_PAIRED', pairingMessage(err), { retryable: true });
    }
  };
  const connect = async (c: ControlCredentials) => ({
    conn: await connectGateway({
      url,
      token: c.token,
      device: c.device?.identity,
      handshakeTimeoutMs: Math.max(1, Math.min(HANDSHAKE_MS, Math.floor(deadline - performance.now()))),
      retryDeadlineMs: 0,
    }),
    platformDevice: c.device?.identity.deviceId,
  });
  const first = await credentials(false);
  try {
    return await connect(first);
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'NOT_PAIRED' || !first.device) throw err;
    log.info({ agentId }, 'agent control: the gateway no longer knows the platform device; pairing it again');
    return connect(await credentials(true));
  }
}

/** A host's own explanation when it has one for operators and users alike (hosted agents need a human approval). */
function pairingMessage(err: unknown): string {
  const shown = (err as { userMessage?: unknown } | null)?.userMessage;
  return typeof shown === 'string' ? shown : 'the platform device could not be paired with the agent gateway';
}
