import { WARM_UP_PROVIDER_ID, isWarmUpSession } from '@aop/core/agent-state';
import { type Database, sql } from '@aop/db';
import type { GatewayConnection } from '@aop/gateway-client';
import { type GatewayTarget, agentScope, ownedSessionKey } from '../../platform/clients/user-gateway.js';
import { type UsageMetrics, type UsageTotals, usageMetrics, usageTotals } from '../usage/usage-metrics.service.js';

/**
 * Reads of a user's gateway for the "chat and gateway data" endpoints (spec §4.18): sessions, channel status and
 * models, each mapped from OpenClaw's result (openclaw@2026.9.6) to the platform's shape. On a shared gateway
 * only objects carrying the user's owner tag are kept, and their keys are shown without it.
 */

/** The messaging channels an agent can be provisioned with (spec §4.15). */
export const MESSAGING_CHANNELS = ['telegram', 'discord', 'whatsapp'] as const;
export type MessagingChannel = (typeof MESSAGING_CHANNELS)[number];

/** Rows asked for per page when a shared gateway's list is read, and the most rows read there per request. */
const PAGE_SIZE = 200;
const SCAN_MAX = 2_000;

const iso = (ms: unknown) => (typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null);
const num = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const str = (value: unknown) => (typeof value === 'string' && value ? value : null);
const bool = (value: unknown) => (typeof value === 'boolean' ? value : null);

interface Page<T> {
  rows: T[];
  total: number | null;
  hasMore: boolean;
}

/** Pages through a gateway list (at most `SCAN_MAX` rows), keeping what `keep` accepts. */
async function scanPages<T>(fetchPage: (offset: number, limit: number) => Promise<Page<T>>, keep: (row: T) => boolean): Promise<T[]> {
  const kept: T[] = [];
  for (let offset = 0; offset < SCAN_MAX; ) {
    const page = await fetchPage(offset, PAGE_SIZE);
    for (const row of page.rows) if (keep(row)) kept.push(row);
    if (!page.hasMore || page.rows.length === 0) break;
    offset += page.rows.length;
  }
  return kept;
}

// ---------------------------------------------------------------------------------------------------------------------
// sessions

/** One `sessions.list` row (the fields the platform reads). */
interface GatewaySessionRow {
  key?: string;
  status?: string;
  hasActiveRun?: boolean;
  messageCount?: number;
  inputTokens?: number;
  outputTokens?: number;
  model?: string;
  lastActivityAt?: number;
  updatedAt?: number;
}

interface SessionsListResult {
  sessions?: GatewaySessionRow[];
  totalCount?: number;
  count?: number;
  hasMore?: boolean;
  defaults?: { model?: string };
}

export interface SessionView {
  sessionKey: string;
  status: string;
  messageCount?: number;
  inputTokens: number;
  outputTokens: number;
  model: string | null;
  /** ISO 8601; null when the gateway gives no time. */
  lastActivity: string | null;
}

function sessionView(row: GatewaySessionRow, sessionKey: string, defaultModel: string | null): SessionView {
  return {
    sessionKey,
    status: str(row.status) ?? (row.hasActiveRun ? 'running' : 'unknown'),
    // OpenClaw's rows carry no message count today; it is passed on when a gateway gives one.
    ...(typeof row.messageCount === 'number' ? { messageCount: row.messageCount } : {}),
    inputTokens: num(row.inputTokens),
    outputTokens: num(row.outputTokens),
    model: str(row.model) ?? defaultModel,
    lastActivity: iso(row.lastActivityAt) ?? iso(row.updatedAt),
  };
}

/** The user's sessions, most recent activity first (the gateway's order), at most `limit`, and how many there are. */
export async function listSessions(
  conn: GatewayConnection,
  target: GatewayTarget,
  limit: number,
): Promise<{ sessions: SessionView[]; total: number }> {
  const fetchPage = async (offset: number, pageLimit: number) => {
    const result = await conn.request<SessionsListResult>('sessions.list', {
      limit: pageLimit,
      ...(offset ? { offset } : {}),
      ...agentScope(target),
    });
    // The platform's warm-up turn (a start's own, deleted when it ends) is not one of the user's sessions.
    const rows = (result.sessions ?? []).filter(
      (r): r is GatewaySessionRow & { key: string } => typeof r.key === 'string' && !isWarmUpSession(r.key),
    );
    return {
      rows,
      total: result.totalCount ?? result.count ?? null,
      hasMore: result.hasMore === true,
      defaultModel: str(result.defaults?.model),
    };
  };
  if (!target.ownerTag) {
    const page = await fetchPage(0, limit);
    return {
      sessions: page.rows.map((row) => sessionView(row, row.key, page.defaultModel)),
      total: page.total ?? page.rows.length,
    };
  }
  let defaultModel: string | null = null;
  const owned = await scanPages(
    async (offset, pageLimit) => {
      const page = await fetchPage(offset, pageLimit);
      defaultModel ??= page.defaultModel;
      return page;
    },
    (row) => ownedSessionKey(target, row.key) !== null,
  );
  return {
    sessions: owned.slice(0, limit).map((row) => sessionView(row, ownedSessionKey(target, row.key) ?? row.key, defaultModel)),
    total: owned.length,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// channels

export interface ChannelView {
  name: MessagingChannel;
  /** A token (or, for WhatsApp, a link) was given: the gateway's word when it answered, else the stored config's. */
  configured: boolean;
  enabled: boolean;
  dmPolicy: string | null;
  /** Live state; null when it comes from the stored config. */
  running: boolean | null;
  connected: boolean | null;
  linked: boolean | null;
  /** `connected`, `running`, `stopped`, `error`, `disabled`, `not-configured`, or `unknown` (config only). */
  status: string;
  lastError: string | null;
  lastInboundAt: string | null;
  lastOutboundAt: string | null;
}

/** One account snapshot of `channels.status` (`ChannelAccountSnapshotSchema`); only state fields are read, never credentials. */
interface ChannelAccountSnapshot {
  accountId?: string;
  enabled?: boolean;
  configured?: boolean;
  linked?: boolean;
  running?: boolean;
  connected?: boolean;
  lastError?: string | null;
  lastInboundAt?: number | null;
  lastOutboundAt?: number | null;
  dmPolicy?: string;
}

interface ChannelsStatusResult {
  channels?: Record<string, { configured?: boolean } | undefined>;
  channelAccounts?: Record<string, ChannelAccountSnapshot[] | undefined>;
  channelDefaultAccountId?: Record<string, string | undefined>;
}

function liveStatus(configured: boolean, enabled: boolean, s: ChannelAccountSnapshot): string {
  if (!configured) return 'not-configured';
  if (!enabled) return 'disabled';
  if (s.connected === true) return 'connected';
  if (s.lastError) return 'error';
  return s.running === true ? 'running' : 'stopped';
}

/** The three messaging channels from a `channels.status` answer; a channel the gateway does not list is not configured. */
export function channelsFromStatus(result: ChannelsStatusResult): ChannelView[] {
  return MESSAGING_CHANNELS.map((name) => {
    const accounts = result.channelAccounts?.[name] ?? [];
    const defaultId = result.channelDefaultAccountId?.[name];
    const account = accounts.find((a) => a.accountId === defaultId) ?? accounts[0] ?? {};
    const configured = account.configured ?? result.channels?.[name]?.configured ?? false;
    const enabled = account.enabled ?? configured;
    return {
      name,
      configured,
      enabled,
      dmPolicy: str(account.dmPolicy),
      running: bool(account.running) ?? false,
      connected: bool(account.connected) ?? false,
      linked: bool(account.linked),
      status: liveStatus(configured, enabled, account),
      lastError: str(account.lastError),
      lastInboundAt: iso(account.lastInboundAt),
      lastOutboundAt: iso(account.lastOutboundAt),
    };
  });
}

/**
 * The three messaging channels from the stored agent configuration (spec §2.2 `channels.*`): a channel is enabled at
 * provisioning exactly when its token was given, so `enabled` stands for "configured". Only `enabled` and `dmPolicy`
 * are read: a token someone put in the config is never passed on.
 */
export function channelsFromConfig(config: Record<string, unknown>): ChannelView[] {
  const channels = (config.channels ?? {}) as Record<string, unknown>;
  return MESSAGING_CHANNELS.map((name) => {
    const entry = (channels[name] ?? {}) as { enabled?: unknown; dmPolicy?: unknown };
    const enabled = entry.enabled === true;
    return {
      name,
      configured: enabled,
      enabled,
      dmPolicy: str(entry.dmPolicy),
      running: null,
      connected: null,
      linked: null,
      status: enabled ? 'unknown' : 'not-configured',
      lastError: null,
      lastInboundAt: null,
      lastOutboundAt: null,
    };
  });
}

export async function channelStatus(conn: GatewayConnection): Promise<ChannelView[]> {
  // No `probe`: a probe calls each channel's API (Telegram, Discord…) and can take seconds; the runtime state is enough.
  return channelsFromStatus(await conn.request<ChannelsStatusResult>('channels.status', {}));
}

// ---------------------------------------------------------------------------------------------------------------------
// models

export interface ModelView {
  id: string;
  name: string;
  provider: string;
  /** `gateway`: the user's gateway offers it; `platform`: the platform's own model list (demo models). */
  source: 'gateway' | 'platform';
  contextWindow: number | null;
  reasoning: boolean | null;
  /** The gateway's readiness (credentials present, not cooling down); null for platform models. */
  available: boolean | null;
}

interface ModelsListResult {
  models?: { id?: string; name?: string; provider?: string; contextWindow?: number; reasoning?: boolean; available?: boolean }[];
}

export async function gatewayModels(conn: GatewayConnection): Promise<ModelView[]> {
  const result = await conn.request<ModelsListResult>('models.list', {});
  return (result.models ?? []).flatMap((m) =>
    // The warm-up provider (see @aop/core/agent-state) is the platform's, and never answers: not a model to offer.
    typeof m.id === 'string' && typeof m.provider === 'string' && m.provider !== WARM_UP_PROVIDER_ID
      ? [
          {
            id: m.id,
            name: str(m.name) ?? m.id,
            provider: m.provider,
            source: 'gateway' as const,
            contextWindow: typeof m.contextWindow === 'number' ? m.contextWindow : null,
            reasoning: bool(m.reasoning),
            available: bool(m.available),
          },
        ]
      : [],
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// the platform database's part

/** Scheduled tasks listed in the brief (with their total). */
const BRIEF_TASKS = 50;

/** The user's saved agent configuration (spec §4.2), or undefined when they never saved one. */
export async function storedAgentConfig(db: Database, userId: string): Promise<Record<string, unknown> | undefined> {
  const stored = await db.withUser(userId, (trx) =>
    trx.selectFrom('agent_configs').select('config').where('user_id', '=', userId).executeTakeFirst(),
  );
  return stored?.config;
}

/** The user's usage per day and per agent over the last `days` days up to `now`. */
export async function userUsageMetrics(db: Database, userId: string, days: number, now: number): Promise<UsageMetrics> {
  return db.withUser(userId, (trx) => usageMetrics(trx, userId, days, now));
}

/**
 * The user's part of the daily brief, read in one transaction: usage since `since`, their agents (newest first) and
 * their enabled scheduled tasks due before `dueBefore` (at most 50, soonest first; `total` counts them all).
 */
export async function briefUserData(db: Database, userId: string, since: Date, dueBefore: Date) {
  return db.withUser(userId, async (trx) => {
    const usage = await usageTotals(trx, userId, since);
    const agents = await trx
      .selectFrom('agents')
      .select(['id', 'name', 'status', 'model', 'updated_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .execute();
    // Due by the end of today (UTC), overdue ones included.
    const tasks = await trx
      .selectFrom('scheduled_tasks')
      .select(['id', 'name', 'agent_id', 'schedule', 'next_run_at', sql<number>`count(*) over ()::int`.as('total')])
      .where('user_id', '=', userId)
      .where('enabled', '=', true)
      .where('next_run_at', 'is not', null)
      .where('next_run_at', '<', dueBefore)
      .orderBy('next_run_at')
      .orderBy('id')
      .limit(BRIEF_TASKS)
      .execute();
    return { usage, agents, tasks };
  });
}

/** Bridge messages since `since` per channel that has any (the bus is the operators', so this reads as the owner). */
export async function bridgeCountsByChannel(db: Database, since: Date): Promise<{ channel: string; n: number }[]> {
  return db.kysely
    .selectFrom('bridge_messages')
    .select(['channel', sql<number>`count(*)::int`.as('n')])
    .where('created_at', '>=', since)
    .groupBy('channel')
    .execute();
}

/** The user's credits and referral code with their usage since `since`, or null when the account is gone. */
export async function creditsData(
  db: Database,
  userId: string,
  since: Date,
): Promise<{ account: { credits: number; referral_code: string | null }; usage: UsageTotals } | null> {
  return db.withUser(userId, async (trx) => {
    const account = await trx.selectFrom('users').select(['credits', 'referral_code']).where('id', '=', userId).executeTakeFirst();
    return account ? { account, usage: await usageTotals(trx, userId, since) } : null;
  });
}
