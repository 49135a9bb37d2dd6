import { type ColonyResult, colonyFitness } from '@aop/core/colony';

/**
 * The fleet's fitness scores for mission control (spec §2.10 node `fitness`), from the colony gateway behind x402
 * (`X402_GATEWAY_URL`, `GET /gateway/fitness/:agentId`, the upstream of the web's `fitness` action). Unlike that
 * action, nothing is invented here: an agent the gateway does not score, or a gateway that is unset, slow or down,
 * leaves the node without `fitness` (the spec's fallback score 50 belongs to the x402 route only).
 *
 * Every agent is asked in parallel, each call bounded by `timeoutMs`, and each answer (or its absence) is kept for
 * `cacheMs`: the graph is read often, scores move slowly, and a gateway that is down must not slow every view.
 * Concurrent views share one call in flight per agent.
 */

/** How long one agent's score (or the lack of one) is reused. */
export const FITNESS_CACHE_MS = 30_000;
/** Agents remembered at most; expired ones go first, then the oldest. */
const CACHE_MAX = 10_000;

export interface FleetFitness {
  /** The score of each agent the colony gateway scored; agents without a score are absent. Never throws. */
  scores(agentIds: readonly string[]): Promise<Map<string, number>>;
}

export interface FleetFitnessOptions {
  gatewayUrl: string | undefined;
  timeoutMs: number;
  cacheMs?: number;
  /** Where a missing score is noted (the app's logger): the agent and the reason, never the upstream's words. */
  log: { warn(fields: Record<string, unknown>, message: string): void };
  now?: () => number;
}

interface Entry {
  at: number;
  score: Promise<number | null>;
}

/** Why there is no score, for the log: never the upstream's content. */
function missReason(result: ColonyResult): string {
  if (!result.reached) return result.reason;
  if (!result.ok) return `upstream answered HTTP ${result.status}`;
  return result.json ? 'upstream answer has the wrong shape' : 'upstream answer is not JSON';
}

export function createFleetFitness(options: FleetFitnessOptions): FleetFitness {
  const { gatewayUrl, timeoutMs, log } = options;
  const cacheMs = options.cacheMs ?? FITNESS_CACHE_MS;
  const now = options.now ?? Date.now;
  const cache = new Map<string, Entry>();

  function remember(agentId: string, entry: Entry): void {
    cache.delete(agentId);
    cache.set(agentId, entry);
    if (cache.size <= CACHE_MAX) return;
    const t = now();
    for (const [id, e] of cache) if (t - e.at >= cacheMs) cache.delete(id);
    for (const id of cache.keys()) {
      if (cache.size <= CACHE_MAX) break;
      cache.delete(id);
    }
  }

  function score(agentId: string): Promise<number | null> {
    const t = now();
    const cached = cache.get(agentId);
    if (cached && t - cached.at < cacheMs) return cached.score;
    const pending = colonyFitness(gatewayUrl, agentId, timeoutMs).then(({ fitness, result }) => {
      if (fitness) return fitness.score;
      log.warn({ agentId, reason: missReason(result) }, 'mission control: no fitness score for the agent');
      return null;
    });
    remember(agentId, { at: t, score: pending });
    return pending;
  }

  return {
    async scores(agentIds) {
      // Without a gateway nobody is asked and nothing is logged: fitness is simply not part of this platform's graph.
      if (!gatewayUrl || agentIds.length === 0) return new Map();
      const scored = await Promise.all(agentIds.map(async (id) => [id, await score(id)] as const));
      return new Map(scored.filter((pair): pair is readonly [string, number] => pair[1] !== null));
    },
  };
}
