import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { AgentHost } from '@aop/provisioner';
import type { BackendConfig } from '../../config.js';
import type { HealthSnapshot } from '../../services/health.js';

const BackendHealthSchema = Type.Object({
  status: Type.Literal('ok'),
  timestamp: Type.String({ format: 'date-time' }),
  docker: Type.Union([Type.Literal('available'), Type.Literal('unavailable')]),
  provisioning: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
  provider: Type.Union([Type.Literal('render'), Type.Literal('local'), Type.Literal('docker'), Type.Literal('kubernetes')], {
    description: "the agent provider in use: `render` (the spec's) is the hosting provider's API; docs/decisions.md",
  }),
  provisioner: Type.String({ description: 'where agents run: local, docker, kubernetes or hosting (PROVISIONER)' }),
  warmPool: Type.Optional(
    Type.Object(
      {
        target: Type.Integer({ description: 'warm gateways the host keeps (AGENT_WARM_POOL)' }),
        ready: Type.Integer({ description: 'warmed up, waiting for a new agent' }),
        starting: Type.Integer(),
        lastError: Type.Union([Type.String(), Type.Null()], { description: 'why the pool is short, if it is' }),
      },
      { description: 'hosts with a warm pool (local provider): gateways ready for new agents' },
    ),
  ),
});

export interface HealthRoutesOptions {
  config: BackendConfig;
  probe: () => Promise<HealthSnapshot>;
  host?: AgentHost;
}

/** `GET /health` (spec §4.10): always 200; reports Docker and provisioning reachability. */
export async function healthRoutes(app: App, { config, probe, host }: HealthRoutesOptions): Promise<void> {
  app.get('/health', { schema: { tags: ['health'], response: { 200: BackendHealthSchema } } }, async () => {
    const { docker, provisioning } = await probe();
    return {
      status: 'ok' as const,
      timestamp: new Date().toISOString(),
      docker,
      provisioning,
      provider: config.provisioner === 'hosting' ? ('render' as const) : config.provisioner,
      provisioner: config.provisioner,
      ...(host?.warmPoolStatus ? { warmPool: host.warmPoolStatus() } : {}),
    };
  });
}
