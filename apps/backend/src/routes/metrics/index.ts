import { type App, DomainError } from '@aop/core';
import type { AgentHost } from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../../config.js';
import { checkSubject, identityAuth } from '../../plugins/caller.js';
import { statusFromHost } from '../../services/agents.js';
import { colonyHealth, countByStatus, probeAgents, userAgents } from '../../services/colony.js';
import { callPerformance, coordinationCounts, historicalMetrics, usageSummary } from '../../services/metrics.js';

const tags = ['metrics'];
const Params = Type.Object({ userId: Type.String({ minLength: 1, maxLength: 128 }) });
const DaysQuery = Type.Object({ days: Type.Optional(Type.String()) });

/** `days`: absent → `fallback`; not a whole number → 400; outside 1..max → clamped. */
function daysOf(raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\s*\d{1,6}\s*$/.test(raw)) throw new DomainError('DAYS_INTEGER');
  return Math.min(max, Math.max(1, Number(raw)));
}

/**
 * Spec §4.18 "Metrics (backend)": `GET /api/metrics/:userId/{historical,performance,summary}` with the internal key
 * and a signed user context; `:userId` is the caller's own id unless the caller is an administrator (403
 * `Forbidden`). Everything comes from the backend's own records and its agent host.
 */
export async function metricsRoutes(app: App, { config, host }: { config: BackendConfig; host: AgentHost | undefined }): Promise<void> {
  const onRequest = identityAuth(config);
  const subject = (request: FastifyRequest) => {
    const { userId } = request.params as { userId: string };
    checkSubject(request, userId, config);
    return userId;
  };

  app.get(
    '/metrics/:userId/historical',
    {
      onRequest,
      schema: {
        tags,
        description: 'One entry per UTC day over the last `days` (default 30, at most 365): AI calls, tokens, cost, agents created.',
        params: Params,
        querystring: DaysQuery,
      },
    },
    async (request) => {
      const userId = subject(request);
      const days = daysOf(request.query.days, 30, 365);
      const metrics = await app.db.withUser(userId, (trx) => historicalMetrics(trx, userId, days, app.clock()));
      return { userId, ...metrics, currency: 'USD' as const };
    },
  );

  app.get(
    '/metrics/:userId/performance',
    {
      onRequest,
      schema: {
        tags,
        description:
          'Per-model call figures over the last `days` (default 7, at most 90) and each agent’s live state: status, `/healthz` + `/readyz`, restarts, start-up time, uptime. Call latency is not recorded, so none is reported.',
        params: Params,
        querystring: DaysQuery,
      },
    },
    async (request) => {
      const userId = subject(request);
      const days = daysOf(request.query.days, 7, 90);
      const now = app.clock();
      const { calls, rows } = await app.db.withUser(userId, async (trx) => ({
        calls: await callPerformance(trx, userId, days, now),
        rows: await userAgents(trx),
      }));
      const agents = await probeAgents(rows, host, now);
      const expected = agents.filter((a) => a.status !== 'stopped' && a.status !== 'pending');
      const serving = expected.filter((a) => a.status === 'active' && a.ready !== false).length;
      return {
        userId,
        generatedAt: new Date(now).toISOString(),
        calls,
        agents,
        availability: {
          health: colonyHealth(agents),
          expected: expected.length,
          serving,
          ratio: expected.length === 0 ? null : Math.round((serving / expected.length) * 10_000) / 10_000,
        },
        provider: host?.provider ?? null,
        currency: 'USD' as const,
      };
    },
  );

  app.get(
    '/metrics/:userId/summary',
    {
      onRequest,
      schema: {
        tags,
        description: 'Totals: agents by status, AI usage (all time, 30 days, today), swarms, installations.',
        params: Params,
      },
    },
    async (request) => {
      const userId = subject(request);
      const now = app.clock();
      const { usage, rows, counts } = await app.db.withUser(userId, async (trx) => ({
        usage: await usageSummary(trx, userId, now),
        rows: await userAgents(trx),
        counts: await coordinationCounts(trx),
      }));
      const states = new Map((host ? await host.list() : []).map((s) => [s.agentId, s]));
      const statuses = rows.map((r) => ({ status: statusFromHost(states.get(r.id) ?? null, r.status) }));
      return {
        userId,
        generatedAt: new Date(now).toISOString(),
        agents: { total: rows.length, byStatus: countByStatus(statuses) },
        usage,
        ...counts,
        currency: 'USD' as const,
      };
    },
  );
}
