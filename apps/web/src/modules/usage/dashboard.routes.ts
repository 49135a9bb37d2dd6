import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { requireUser } from '../../platform/http/auth.js';
import { AGENT_PLATFORM_KEY_PROVIDERS } from '../../platform/agent-ai-keys.js';
import { CostReport, DashboardStats, NewAgentGate } from './usage.schemas.js';
import { EMPTY_STATS, agentsRunningNow, costReport, dashboardStats, isCostPeriod, newAgentGate } from './usage.service.js';

/** Spec §4.14 dashboards, computed from the usage ledger and the user's own rows. */
export async function dashboardRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  app.get(
    '/api/dashboard/cost',
    {
      schema: {
        tags: ['dashboard'],
        querystring: Type.Object({ period: Type.Optional(Type.String({ description: '`7d` (default), `30d` or `mtd`' })) }),
        response: { 200: CostReport },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const period = request.query.period || '7d';
      if (!isCostPeriod(period)) throw new DomainError('INVALID_PERIOD');
      let report: Awaited<ReturnType<typeof costReport>>;
      try {
        report = await app.db.withUser(user.id, (trx) => costReport(trx, user.id, period, app.clock(), config.billing.plans));
      } catch (err) {
        request.log.error({ err }, 'cost dashboard failed');
        throw new DomainError('FAILED_FETCH_COST_DATA');
      }
      // "N of M agents running" as the hosts say, like the stats: a hibernated agent is not running.
      if (report.activeAgents > 0)
        report.activeAgents = await agentsRunningNow({ db: app.db, backend: app.backend, clock: app.clock }, user);
      return report;
    },
  );

  app.get('/api/dashboard/stats', { schema: { tags: ['dashboard'], response: { 200: DashboardStats } } }, async (request) => {
    const user = await requireUser(request);
    let stats: Awaited<ReturnType<typeof dashboardStats>>;
    try {
      stats = await app.db.withUser(user.id, (trx) => dashboardStats(trx, user.id, app.clock()));
    } catch (err) {
      // Spec §4.14: a failure answers zeroed figures, not an error status.
      request.log.error({ err }, 'dashboard stats failed');
      return EMPTY_STATS;
    }
    if (!stats) throw new DomainError('USER_NOT_FOUND');
    if (stats.agents.active > 0) stats.agents.active = await agentsRunningNow({ db: app.db, backend: app.backend, clock: app.clock }, user);
    return stats;
  });

  app.get(
    '/api/dashboard/new-agent',
    {
      schema: {
        tags: ['dashboard'],
        description:
          'Whether the caller may create another agent (plan, subscription, agent limit: the rule `POST /api/provision` applies), ' +
          'whether plans can be bought here, and which AI providers a new agent may use without its own key.',
        response: { 200: NewAgentGate },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const options = { cardPayments: Boolean(config.stripe), platformKeyProviders: AGENT_PLATFORM_KEY_PROVIDERS };
      const gate = await app.db.withUser(user.id, (trx) => newAgentGate(trx, user, options));
      if (!gate) throw new DomainError('USER_NOT_FOUND');
      return gate;
    },
  );
}
