import { randomBytes } from 'node:crypto';
import type { AgentSpec } from '../host.js';

/**
 * New agents' specs for the hosts' shared-gateway tests: `agt_<prefix><n>` of `userId` on `plan`, a platform heartbeat
 * and a tools profile in the config (what a roster entry carries), a fresh gateway token; `overrides` on top.
 */
export function agentSpecs(prefix: string, plan: string): (userId: string, overrides?: Partial<AgentSpec>) => AgentSpec {
  let n = 0;
  return (userId, overrides = {}) => {
    n += 1;
    return {
      agentId: `agt_${prefix}${n}`,
      userId,
      plan,
      config: { agents: { defaults: { heartbeat: { every: '30m' } } }, tools: { profile: 'coding' } },
      gatewayToken: `gw-${n}-${randomBytes(8).toString('hex')}`,
      ...overrides,
    };
  };
}
