import { AGENT_STATES, type AgentLifecycleState, deriveAgentState } from '@aop/core/agent-state';
import { Counter, Gauge, Histogram, type Registry } from '@aop/core';
import type { AgentHost, AgentState } from '@aop/provisioner';

/**
 * Seconds: a warm gateway is adopted in ~3 s, a cold OpenClaw start with its warm-up turn takes 20–60 s, the host gives
 * up after AGENT_READY_TIMEOUT_MS (120 s by default).
 */
const START_BUCKETS = [0.5, 1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180];

/**
 * The lifecycle state of an agent as its host reports it, through the one state machine (`@aop/core/agent-state`).
 * A scrape does not probe each gateway's `/readyz` (5 s each, for every agent, every 15 s): the host reports `running`
 * only once it has seen the gateway ready and warmed up, so `running` counts as live here, and a gateway that stopped
 * answering since shows when it crashes (`restarting`: degraded) rather than at once.
 */
export const metricsStateOf = (state: Pick<AgentState, 'status' | 'lastError' | 'schedulerDown'>): AgentLifecycleState =>
  deriveAgentState({
    host: state.status,
    ready: state.status === 'running' ? true : null,
    lastError: state.lastError,
    schedulerDown: state.schedulerDown,
  }).state;

/**
 * The backend's agent families (issue #21): agents by lifecycle state and the host's warm pool, read from the host at
 * each scrape; gateway starts (provisioning, wake, start) timed as the host reports them end.
 */
export function registerAgentMetrics(registry: Registry, host: AgentHost | undefined): () => void {
  const provider = host?.provider ?? 'none';
  const hostUp = new Gauge({
    name: 'aop_agent_host_up',
    help: 'Whether the agent host answered its list of agents at the last scrape (1) or not (0).',
    labelNames: ['provider'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'aop_agents',
    help: 'Agents on this backend’s host by lifecycle state (live, starting, degraded, hibernated, failed, …).',
    labelNames: ['state', 'provider'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const counts = new Map<AgentLifecycleState, number>(AGENT_STATES.map((s) => [s, 0]));
      if (host) {
        // A host that cannot list its agents (a container API down) fails the scrape of this family only: the
        // agent_host_up gauge says so, the other families still answer.
        const agents = await host.list().catch(() => null);
        hostUp.set({ provider }, agents ? 1 : 0);
        if (!agents) return;
        for (const agent of agents) {
          const state = metricsStateOf(agent);
          counts.set(state, (counts.get(state) ?? 0) + 1);
        }
      }
      for (const [state, count] of counts) this.set({ state, provider }, count);
    },
  });
  if (host?.warmPoolStatus) {
    const status = host.warmPoolStatus.bind(host);
    new Gauge({
      name: 'aop_agent_warm_pool',
      help: 'Warm gateways kept for new agents: target, ready (warmed up, waiting) and starting.',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        const pool = status();
        this.set({ state: 'target' }, pool.target);
        this.set({ state: 'ready' }, pool.ready);
        this.set({ state: 'starting' }, pool.starting);
      },
    });
  }
  const starts = new Histogram({
    name: 'aop_agent_start_duration_seconds',
    help: 'Time from a gateway start to ready, by why it started: provision (a new agent), wake (from hibernation), start, warm-pool.',
    labelNames: ['kind'] as const,
    buckets: START_BUCKETS,
    registers: [registry],
  });
  const failures = new Counter({
    name: 'aop_agent_start_failures_total',
    help: 'Gateway starts that ended in an error instead of ready, by why it started.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const unsubscribe = host?.onAgentStart?.((event) => {
    if (event.outcome === 'ready') starts.observe({ kind: event.kind }, event.seconds);
    else failures.inc({ kind: event.kind });
  });
  return unsubscribe ?? (() => {});
}
