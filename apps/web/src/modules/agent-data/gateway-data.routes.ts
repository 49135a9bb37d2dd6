import { type App, DomainError } from '@aop/core';
import type { GatewayConnection } from '@aop/gateway-client';
import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireUser } from '../../platform/http/auth.js';
import { intQuery } from '../../platform/http/query.js';
import { type CronJobView, cronJobView, gatewayFailureMessage, listOwnJobs } from '../schedule/cron-jobs.service.js';
import {
  type ModelView,
  briefUserData,
  bridgeCountsByChannel,
  channelStatus,
  channelsFromConfig,
  creditsData,
  gatewayModels,
  listSessions,
  storedAgentConfig,
  userUsageMetrics,
} from './gateway-data.service.js';
import type { AuthUser } from '../../platform/sessions.js';
import { utcDayStart, utcMonthStart } from '../usage/usage-metrics.service.js';
import {
  type GatewayDeps,
  type GatewayTarget,
  GatewayUnavailableError,
  findUserAgent,
  resolveGateway,
  withGateway,
} from '../../platform/clients/user-gateway.js';
import { BRIDGE_CHANNELS } from '../bridge/bridge.schemas.js';

const DAY_MS = 86_400_000;
/** Spec §8 "status lists: up to 10 jobs": the brief lists as many cron jobs, with their total. */
const BRIEF_JOBS = 10;

// ---------------------------------------------------------------------------------------------------------------------
// response shapes (also the OpenAPI description)

const Iso = Type.Union([Type.String({ description: 'ISO 8601' }), Type.Null()]);
const Money = Type.Number({ description: 'USD, rounded to 4 decimals' });
const fallback = <T extends TSchema>(ok: T) =>
  Type.Union([ok, Type.Literal('gateway-error')], { description: '`gateway-error` when the gateway could not be used (see `error`)' });

const ChannelSchema = Type.Object({
  name: Type.String({ description: '`telegram`, `discord` or `whatsapp`' }),
  configured: Type.Boolean(),
  enabled: Type.Boolean(),
  dmPolicy: Type.Union([Type.String(), Type.Null()]),
  running: Type.Union([Type.Boolean(), Type.Null()]),
  connected: Type.Union([Type.Boolean(), Type.Null()]),
  linked: Type.Union([Type.Boolean(), Type.Null()]),
  status: Type.String({ description: '`connected`, `running`, `stopped`, `error`, `disabled`, `not-configured`, `unknown`' }),
  lastError: Type.Union([Type.String(), Type.Null()]),
  lastInboundAt: Iso,
  lastOutboundAt: Iso,
});

const SessionSchema = Type.Object({
  sessionKey: Type.String(),
  status: Type.String(),
  messageCount: Type.Optional(Type.Integer()),
  inputTokens: Type.Integer(),
  outputTokens: Type.Integer(),
  model: Type.Union([Type.String(), Type.Null()]),
  lastActivity: Iso,
});

const ModelSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  provider: Type.String(),
  source: Type.Union([Type.Literal('gateway'), Type.Literal('platform')]),
  contextWindow: Type.Union([Type.Integer(), Type.Null()]),
  reasoning: Type.Union([Type.Boolean(), Type.Null()]),
  available: Type.Union([Type.Boolean(), Type.Null()]),
});

const Totals = {
  calls: Type.Integer(),
  tokens: Type.Integer(),
  promptTokens: Type.Integer(),
  completionTokens: Type.Integer(),
  costUsd: Money,
};

/** Spec §2.4. */
const CronJobSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  enabled: Type.Boolean(),
  schedule: Type.Record(Type.String(), Type.Unknown()),
  payload: Type.Record(Type.String(), Type.Unknown()),
  lastRun: Iso,
  nextRun: Iso,
});

/** Soonest next run first; jobs without one (disabled) last, then by name. */
const soonestFirst = (a: CronJobView, b: CronJobView) =>
  (a.nextRun ? Date.parse(a.nextRun) : Number.POSITIVE_INFINITY) - (b.nextRun ? Date.parse(b.nextRun) : Number.POSITIVE_INFINITY) ||
  a.name.localeCompare(b.name);

const Schemas = {
  channels: Type.Object({
    agentId: Type.Union([Type.String(), Type.Null()]),
    agentName: Type.Union([Type.String(), Type.Null()]),
    channels: Type.Array(ChannelSchema),
    source: Type.Union([Type.Literal('gateway'), Type.Literal('config')]),
    error: Type.Optional(Type.String()),
  }),
  sessions: Type.Object({
    sessions: Type.Array(SessionSchema),
    total: Type.Integer(),
    source: fallback(Type.Literal('gateway')),
    error: Type.Optional(Type.String()),
  }),
  models: Type.Object({
    models: Type.Array(ModelSchema),
    source: fallback(Type.Literal('gateway')),
    error: Type.Optional(Type.String()),
  }),
  metrics: Type.Object({
    days: Type.Integer(),
    since: Type.String(),
    until: Type.String(),
    totals: Type.Object(Totals),
    daily: Type.Array(Type.Object({ date: Type.String({ description: 'UTC day, YYYY-MM-DD' }), ...Totals })),
    byAgent: Type.Array(Type.Object({ agentId: Type.Union([Type.String(), Type.Null()]), name: Type.String(), ...Totals })),
    currency: Type.Literal('USD'),
  }),
  brief: Type.Object({
    generatedAt: Type.String(),
    since: Type.String(),
    usage: Type.Object(Totals),
    agents: Type.Object({
      total: Type.Integer(),
      active: Type.Integer(),
      items: Type.Array(
        Type.Object({
          id: Type.String(),
          name: Type.String(),
          status: Type.String(),
          model: Type.Union([Type.String(), Type.Null()]),
          updatedAt: Type.String(),
        }),
      ),
    }),
    cron: Type.Object({
      jobs: Type.Array(CronJobSchema),
      total: Type.Integer(),
      source: fallback(Type.Literal('gateway')),
      error: Type.Optional(Type.String()),
    }),
    bridge: Type.Union([
      Type.Object({ messages: Type.Integer(), byChannel: Type.Record(Type.String(), Type.Integer()) }),
      Type.Null({ description: 'null unless the caller is an administrator: the bus belongs to the operators' }),
    ]),
    tasks: Type.Object({
      total: Type.Integer(),
      dueToday: Type.Array(
        Type.Object({
          id: Type.String(),
          name: Type.String(),
          agentId: Type.Union([Type.String(), Type.Null()]),
          schedule: Type.String(),
          nextRun: Type.String(),
          overdue: Type.Boolean(),
        }),
      ),
    }),
    currency: Type.Literal('USD'),
  }),
  credits: Type.Object({
    credits: Type.Number({ description: 'every credit the user holds; today only referral credits exist' }),
    referralCredits: Type.Number(),
    referralCode: Type.Union([Type.String(), Type.Null()]),
    usage: Type.Object({ since: Type.String(), calls: Type.Integer(), tokens: Type.Integer(), monthToDateUsd: Money }),
    currency: Type.Literal('USD'),
  }),
};

const LimitQuery = Type.Object({ limit: Type.Optional(Type.String({ description: 'default 50, clamped to 1..200' })) });
const DaysQuery = Type.Object({ days: Type.Optional(Type.String({ description: 'default 7, clamped to 1..90' })) });

// ---------------------------------------------------------------------------------------------------------------------

/**
 * Spec §4.18 "Chat and gateway data": the user's channels, gateway sessions, models, usage metrics, daily brief and
 * credits. Gateway reads go to the user's own agent gateway, else the shared one (`resolveGateway`), one WebSocket per
 * request; an unusable gateway is a 200 fallback with `error`, as in spec §4.3. Session or API key required.
 */
export async function gatewayDataRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const deps: GatewayDeps = { db: app.db, backend: app.backend, config };
  const timeoutMs = config.gateway.requestTimeoutMs;

  /** Runs `run(target)` on the user's gateway; a gateway that cannot be used gives `{ error }` (other errors throw). */
  async function onGateway<T>(
    user: AuthUser,
    run: (target: GatewayTarget) => (conn: GatewayConnection) => Promise<T>,
  ): Promise<{ value: T } | { error: string }> {
    try {
      const target = await resolveGateway(deps, user);
      return { value: await withGateway(target, timeoutMs, run(target)) };
    } catch (err) {
      const error = gatewayFailureMessage(err);
      if (error === null) throw err;
      return { error };
    }
  }

  const tags = ['gateway-data'];

  app.get('/api/channels', { schema: { tags, response: { 200: Schemas.channels } } }, async (request) => {
    const user = await requireUser(request);
    const [agent, stored] = await Promise.all([findUserAgent(app.db, user.id), storedAgentConfig(app.db, user.id)]);
    const answer = { agentId: agent?.id ?? null, agentName: agent?.name ?? null };
    // Only the user's own agent has their channels: the shared gateway's are the platform's.
    if (agent) {
      const live = await onGateway(user, (target) => (conn) => {
        // The agent went away meanwhile: the shared gateway must not answer for it.
        if (target.kind !== 'agent') throw new GatewayUnavailableError('no-agent', 'No agent found');
        return channelStatus(conn);
      });
      if ('value' in live) return { ...answer, channels: live.value, source: 'gateway' as const };
      return { ...answer, channels: channelsFromConfig(stored ?? {}), source: 'config' as const, error: live.error };
    }
    return { ...answer, channels: channelsFromConfig(stored ?? {}), source: 'config' as const };
  });

  app.get('/api/sessions', { schema: { tags, querystring: LimitQuery, response: { 200: Schemas.sessions } } }, async (request) => {
    const user = await requireUser(request);
    const limit = intQuery(request.query.limit, 'limit', 50, 1, 200);
    const result = await onGateway(user, (target) => (conn) => listSessions(conn, target, limit));
    if ('value' in result) return { ...result.value, source: 'gateway' as const };
    return { sessions: [], total: 0, error: result.error, source: 'gateway-error' as const };
  });

  app.get('/api/models', { schema: { tags, response: { 200: Schemas.models } } }, async (request) => {
    const user = await requireUser(request);
    const platform: ModelView[] = config.demo.models.map((m) => ({
      ...m,
      source: 'platform',
      contextWindow: null,
      reasoning: null,
      // The platform's models answer only when its LLM is configured (spec §4.6: 503 otherwise).
      available: config.demo.llm !== undefined,
    }));
    const result = await onGateway(user, () => gatewayModels);
    if ('value' in result) return { models: [...result.value, ...platform], source: 'gateway' as const };
    return { models: platform, error: result.error, source: 'gateway-error' as const };
  });

  app.get('/api/metrics', { schema: { tags, querystring: DaysQuery, response: { 200: Schemas.metrics } } }, async (request) => {
    const user = await requireUser(request);
    const days = intQuery(request.query.days, 'days', 7, 1, 90);
    try {
      const metrics = await userUsageMetrics(app.db, user.id, days, app.clock());
      return { ...metrics, currency: 'USD' as const };
    } catch (err) {
      request.log.error({ err }, 'usage metrics failed');
      throw new DomainError('FAILED_FETCH_METRICS');
    }
  });

  app.get('/api/daily-brief', { schema: { tags, response: { 200: Schemas.brief } } }, async (request) => {
    const user = await requireUser(request);
    const now = app.clock();
    const since = new Date(now - DAY_MS);
    const endOfToday = new Date(utcDayStart(now) + DAY_MS);

    const [own, bridge, cron] = await Promise.all([
      briefUserData(app.db, user.id, since, endOfToday),
      briefBridge(request, user, since),
      onGateway(user, (target) => async (conn) => (await listOwnJobs(conn, target)).map(cronJobView).sort(soonestFirst)),
    ]);

    return {
      generatedAt: new Date(now).toISOString(),
      since: since.toISOString(),
      usage: own.usage,
      agents: {
        total: own.agents.length,
        active: own.agents.filter((a) => a.status === 'active' || a.status === 'running').length,
        items: own.agents.map((a) => ({ id: a.id, name: a.name, status: a.status, model: a.model, updatedAt: a.updated_at.toISOString() })),
      },
      cron:
        'value' in cron
          ? { jobs: cron.value.slice(0, BRIEF_JOBS), total: cron.value.length, source: 'gateway' as const }
          : { jobs: [], total: 0, error: cron.error, source: 'gateway-error' as const },
      bridge,
      tasks: {
        total: own.tasks[0]?.total ?? 0,
        dueToday: own.tasks.map((t) => ({
          id: t.id,
          name: t.name,
          agentId: t.agent_id,
          schedule: t.schedule,
          nextRun: (t.next_run_at as Date).toISOString(),
          overdue: (t.next_run_at as Date).getTime() < now,
        })),
      },
      currency: 'USD' as const,
    };
  });

  /**
   * Bridge traffic of the last 24 hours by channel. The bus is shared by the operators (spec §4.8), not owned by a
   * user, so only administrators see it; everyone else gets null.
   */
  async function briefBridge(request: FastifyRequest, user: AuthUser, since: Date) {
    if (!user.isAdmin) return null;
    try {
      const rows = await bridgeCountsByChannel(app.db, since);
      const byChannel: Record<string, number> = Object.fromEntries(BRIDGE_CHANNELS.map((c) => [c, 0]));
      for (const row of rows) byChannel[row.channel] = row.n;
      return { messages: rows.reduce((sum, row) => sum + row.n, 0), byChannel };
    } catch (err) {
      request.log.error({ err }, 'daily brief: bridge count failed');
      return null;
    }
  }

  app.get('/api/credits', { schema: { tags, response: { 200: Schemas.credits } } }, async (request) => {
    const user = await requireUser(request);
    const since = new Date(utcMonthStart(app.clock()));
    const found = await creditsData(app.db, user.id, since);
    if (!found) throw new DomainError('USER_NOT_FOUND');
    return {
      // Billing balances arrive with payments (issue #9); until then every credit is a referral credit.
      credits: found.account.credits,
      referralCredits: found.account.credits,
      referralCode: found.account.referral_code,
      usage: { since: since.toISOString(), calls: found.usage.calls, tokens: found.usage.tokens, monthToDateUsd: found.usage.costUsd },
      currency: 'USD' as const,
    };
  });
}
