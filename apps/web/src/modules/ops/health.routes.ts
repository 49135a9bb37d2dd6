import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireAdmin } from '../../platform/http/auth.js';
import { type MetricsReading, type SystemMetrics, classifyHealth } from '../../platform/clients/system-metrics.js';

const HealthEnum = Type.Union([Type.Literal('healthy'), Type.Literal('degraded'), Type.Literal('unhealthy')]);
const PublicHealthSchema = Type.Object({ status: Type.Literal('ok'), health: HealthEnum, timestamp: Type.String() });
const FailedHealthSchema = Type.Object({ status: Type.Literal('error'), health: Type.Literal('unhealthy'), timestamp: Type.String() });

const round = (n: number) => Math.round(n * 10) / 10;

/** Spec §4.10: `GET /api/health` (public, no metrics) and `GET /api/admin/health` (admin session, with metrics). */
export async function healthRoutes(app: App, { metrics }: { metrics: SystemMetrics }): Promise<void> {
  async function reading(): Promise<MetricsReading | null> {
    try {
      return await metrics.read();
    } catch (err) {
      app.log.error({ err }, 'system metrics unavailable');
      return null;
    }
  }

  app.get(
    '/api/health',
    { schema: { tags: ['health'], response: { 200: PublicHealthSchema, 500: FailedHealthSchema } } },
    async (_request, reply) => {
      const timestamp = new Date().toISOString();
      const m = await reading();
      if (!m) return reply.code(500).send({ status: 'error' as const, health: 'unhealthy' as const, timestamp });
      return { status: 'ok' as const, health: classifyHealth(m.cpuPercent, m.memoryPercent), timestamp };
    },
  );

  app.get('/api/admin/health', { preHandler: requireAdmin, schema: { tags: ['health', 'admin'] } }, async (_request, reply) => {
    const timestamp = new Date().toISOString();
    const m = await reading();
    if (!m) return reply.code(500).send({ status: 'error', health: 'unhealthy', timestamp });
    return {
      status: 'ok',
      health: classifyHealth(m.cpuPercent, m.memoryPercent),
      timestamp,
      cpu: { usagePercent: round(m.cpuPercent), cores: m.cpu.cores, loadAverage: m.cpu.loadAverage.map(round) },
      memory: {
        usagePercent: round(m.memoryPercent),
        totalBytes: m.memory.totalBytes,
        usedBytes: m.memory.usedBytes,
        process: m.memory.process,
      },
      uptime: m.uptime,
    };
  });
}
