/** Agent and gateway states in one palette: green running, amber on the way, red failed, grey stopped. */
const TONES: Record<string, string> = {
  running: 'ok',
  active: 'ok',
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
  stale: 'busy',
  error: 'bad',
  failed: 'bad',
  unhealthy: 'bad',
  offline: 'bad',
  denied: 'bad',
  revoked: 'bad',
  stopped: 'idle',
  idle: 'idle',
};

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${TONES[status] ?? 'idle'}`}>{status}</span>;
}
