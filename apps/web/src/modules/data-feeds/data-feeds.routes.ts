import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import { platformStatus } from '../agents/hosting-events.service.js';
import type { AuthUser } from '../../platform/sessions.js';
import { usageMetrics } from '../usage/usage-metrics.service.js';
import { intQuery } from '../../platform/http/query.js';
import { agentsFeed } from './data-feeds.service.js';

/**
 * Spec §4.18 Other: data feeds at `GET /api/data-feeds?feed=…` for dashboards and agents, all from the platform's
 * own records: `platform-status` (the hosting provider's events), `usage` (the caller's usage ledger) and `agents`
 * (the caller's agents). Without `feed` the catalogue is returned.
 */

interface Feed {
  description: string;
  read(app: App, user: AuthUser, query: Record<string, string | undefined>): Promise<unknown>;
}

const FEEDS: Record<string, Feed> = {
  'platform-status': {
    description: 'Hosting platform status per service and its latest deployment, from the hosting provider’s events.',
    read: (app) => platformStatus(app.db.kysely),
  },
  usage: {
    description: 'Your usage ledger over the last `days` UTC days (default 7, at most 90): totals, per day, per agent.',
    read: (app, user, query) => {
      const days = intQuery(query.days, 'days', 7, 1, 90);
      return app.db.withUser(user.id, (trx) => usageMetrics(trx, user.id, days, app.clock()));
    },
  },
  agents: {
    description: 'Your agents with their provisioning status, newest first, and counts by status.',
    read: (app, user) => agentsFeed(app.db, user.id),
  },
};

export const FEED_IDS = Object.keys(FEEDS);

export async function dataFeedRoutes(app: App): Promise<void> {
  app.get(
    '/api/data-feeds',
    {
      schema: {
        tags: ['data feeds'],
        description: `Session or API key. \`feed\`: ${FEED_IDS.join(', ')}; without it, the list of feeds.`,
        querystring: Type.Object({ feed: Type.Optional(Type.String()), days: Type.Optional(Type.String()) }),
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { feed } = request.query;
      if (feed === undefined || feed === '') {
        return { feeds: FEED_IDS.map((id) => ({ id, description: FEEDS[id]?.description })) };
      }
      const source = Object.hasOwn(FEEDS, feed) ? FEEDS[feed] : undefined;
      if (!source) throw new DomainError('UNKNOWN_FEED', { allowed: FEED_IDS.join(', ') });
      const data = await source.read(app, user, request.query);
      return { feed, generatedAt: new Date(app.clock()).toISOString(), data };
    },
  );
}
