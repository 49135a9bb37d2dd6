import { useEffect } from 'react';
import { useApi } from '../use-api.js';

/**
 * Agent and gateway states in one palette: green running, amber on the way, red failed, grey stopped or asleep. The
 * agent state machine's states (`@aop/core/agent-state`) are all here: live, provisioning/starting/degraded/stopping/
 * updating, failed, stopped, hibernated.
 */
const TONES: Record<string, string> = {
  running: 'ok',
  active: 'ok',
  live: 'ok',
  healthy: 'ok',
  online: 'ok',
  approved: 'ok',
  completed: 'ok',
  provisioning: 'busy',
  starting: 'busy',
  deploying: 'busy',
  pending: 'busy',
  updating: 'busy',
  degraded: 'busy',
  stopping: 'busy',
  stale: 'busy',
  error: 'bad',
  failed: 'bad',
  unhealthy: 'bad',
  offline: 'bad',
  denied: 'bad',
  revoked: 'bad',
  stopped: 'idle',
  hibernated: 'idle',
  idle: 'idle',
};

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${TONES[status] ?? 'idle'}`}>{status}</span>;
}

/**
 * An agent's state in a list (`GET /api/agents/:id/health`, the state machine's state), read again every 30 seconds
 * (each is a look at the agent's host and gateway, and a long list shares the `/api/agents` rate limit).
 * Until the first answer it shows `recorded` (the host's word from the agent list, else the record's), marked as such;
 * the reason is the badge's tooltip.
 */
export function AgentStateBadge({ agentId, recorded, seen }: { agentId: string; recorded: string; seen?: string }) {
  const health = useApi('/api/agents/{id}/health', { params: { path: { id: agentId } }, refreshMs: 30_000 });
  // `seen`: the state an event stream of this agent last gave (the new-agent wizard follows one); read again at once
  // when it changes rather than at the next poll, so the list never says `starting` under a wizard that says live.
  const { reload } = health;
  useEffect(() => {
    if (seen !== undefined) void reload();
  }, [seen, reload]);
  if (!health.data) {
    return (
      <span title={health.error ? `The state could not be read: ${health.error}` : 'Checking the agent…'}>
        <StatusBadge status={recorded} />
      </span>
    );
  }
  return (
    <span title={health.data.reason} data-agent-state={health.data.state}>
      <StatusBadge status={health.data.state} />
    </span>
  );
}
