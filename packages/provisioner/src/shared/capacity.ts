/** Sizing and crash back-off for gateways on one host. Pure functions, no I/O. */

const GIB = 1024 ** 3;

/**
 * The budget of a gateway whose memory has not been measured yet: an OpenClaw gateway holds ~1.0 GB RSS idle and
 * ~1.5 GB after a few turns (research §4). Measured gateways are budgeted from their own peak (`budgetFromPeak`).
 */
export const DEFAULT_MEMORY_PER_AGENT_BYTES = 1.5 * GIB;
/**
 * A measured gateway is budgeted at its peak PSS once ready times this. That peak already holds its first chat turns and
 * the post-start work (1.13–1.24 GiB measured by `npm run bench:agents`, against 0.69–0.96 GiB settled); the margin is
 * room for longer conversations.
 */
export const DEFAULT_MEMORY_MARGIN = 1.2;

/** The budget of a gateway measured at `peakBytes` (its largest proportional set size seen so far). */
export const budgetFromPeak = (peakBytes: number, margin = DEFAULT_MEMORY_MARGIN) => Math.ceil(peakBytes * margin);
/** Memory left for the platform itself (web, backend, database) and the OS. */
export const DEFAULT_RESERVE_BYTES = 2 * GIB;

/**
 * The warm pool's size when it is left to the host (`warmPool: 'auto'`): one warm gateway per 16 GiB of memory free
 * when the host starts, 1 to 4. Each holds about 1 GiB doing nothing; more than the adoptions of the few minutes a
 * refill takes (a start and its warm-up, ~30 s each, one at a time) only costs memory.
 */
export const autoWarmPoolSize = (availableBytes: number): number => Math.min(4, Math.max(1, Math.floor(availableBytes / (16 * GIB))));

export interface CapacityInput {
  /** `MemAvailable` of the host now. */
  availableBytes: number;
  /** Resident memory of the gateways this host already runs (already missing from `availableBytes`). */
  agentsRssBytes: number;
  /** Gateways this host runs or is starting. */
  activeAgents: number;
  /** The budget of an active gateway not measured yet, and of a new one while no gateway here has been measured. */
  memoryPerAgentBytes: number;
  /** The budgets of the active gateways that have been measured (`budgetFromPeak`); the others take `memoryPerAgentBytes`. */
  measuredBudgetsBytes?: number[];
  /** The budget of the gateway to start, when measurements give one (the largest measured peak's budget). */
  newAgentBytes?: number;
  reserveBytes: number;
  /** A hard cap set by the operator. */
  maxAgents?: number;
}

export interface Capacity {
  maxAgents: number;
  activeAgents: number;
  /** Another gateway can be started. */
  hasRoom: boolean;
}

/**
 * How many gateways fit: the memory they could use (what is available plus what our gateways already hold), less the
 * reserve and the budgets of the active gateways (measured, or `memoryPerAgentBytes`), divided by a new gateway's
 * budget, plus the active ones; capped by `maxAgents`. With nothing measured it is (available + held − reserve) / budget.
 */
export function computeCapacity(input: CapacityInput): Capacity {
  const budget = input.availableBytes + input.agentsRssBytes - input.reserveBytes;
  const measured = input.measuredBudgetsBytes ?? [];
  const unmeasured = Math.max(0, input.activeAgents - measured.length);
  const committed = measured.reduce((a, b) => a + b, 0) + unmeasured * input.memoryPerAgentBytes;
  const perNew = input.newAgentBytes ?? input.memoryPerAgentBytes;
  const byMemory = perNew > 0 ? Math.max(0, input.activeAgents + Math.floor((budget - committed) / perNew)) : 0;
  const maxAgents = input.maxAgents === undefined ? byMemory : Math.min(byMemory, Math.max(0, Math.floor(input.maxAgents)));
  return { maxAgents, activeAgents: input.activeAgents, hasRoom: input.activeAgents < maxAgents };
}

export const formatGiB = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`;

export function capacityMessage(
  capacity: Capacity,
  input: Pick<CapacityInput, 'availableBytes' | 'memoryPerAgentBytes' | 'newAgentBytes'>,
): string {
  const perAgent =
    input.newAgentBytes === undefined
      ? `${formatGiB(input.memoryPerAgentBytes)} budgeted per agent`
      : `${formatGiB(input.newAgentBytes)} budgeted per agent from measured memory`;
  return `Host is at capacity: ${capacity.activeAgents} of ${capacity.maxAgents} agents running (${perAgent}, ${formatGiB(input.availableBytes)} available)`;
}

export interface BackoffOptions {
  /** First delay (default 1 s). */
  initialMs?: number;
  /** Ceiling (default 30 s). */
  maxMs?: number;
  /** A process that stayed healthy this long starts the sequence again (default 60 s). */
  resetAfterMs?: number;
}

/** Exponential back-off for crash restarts: 1 s, 2 s, 4 s … 30 s; back to 1 s after 60 s of health. */
export class Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
  readonly resetAfterMs: number;
  private attempt = 0;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 1_000;
    this.maxMs = options.maxMs ?? 30_000;
    this.resetAfterMs = options.resetAfterMs ?? 60_000;
  }

  /** The delay before the next restart. `healthyForMs`: how long the crashed process had been ready (0 if never). */
  next(healthyForMs = 0): number {
    if (healthyForMs >= this.resetAfterMs) this.attempt = 0;
    const delay = Math.min(this.maxMs, this.initialMs * 2 ** this.attempt);
    if (delay < this.maxMs) this.attempt += 1;
    return delay;
  }

  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}
