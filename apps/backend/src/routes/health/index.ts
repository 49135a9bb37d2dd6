import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { BackendConfig } from '../../config.js';
import type { HealthSnapshot } from '../../services/health.js';

const BackendHealthSchema = Type.Object({
  status: Type.Literal('ok'),
  timestamp: Type.String({ format: 'date-time' }),
  docker: Type.Union([Type.Literal('available'), Type.Literal('unavailable')]),
  provisioning: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
  provider: Type.Literal('render'),
  provisioner: Type.String({ description: 'where agents run: local, docker or hosting' }),
});

export interface HealthRoutesOptions {
  config: BackendConfig;
  probe: () => Promise<HealthSnapshot>;
}

/** `GET /health` (spec §4.10): always 200; reports Docker and provisioning reachability. */
export async function healthRoutes(app: App, { config, probe }: HealthRoutesOptions): Promise<void> {
  app.get('/health', { schema: { tags: ['health'], response: { 200: BackendHealthSchema } } }, async () => {
    const { docker, provisioning } = await probe();
    return {
      status: 'ok' as const,
      timestamp: new Date().toISOString(),
      docker,
      provisioning,
      provider: 'render' as const,
      provisioner: config.provisioner,
    };
  });
}
