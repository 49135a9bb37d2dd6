import {
  FLEET_CENTER,
  FLEET_TRACES_MAX,
  type FleetBooking,
  type FleetBookings,
  type FleetCosts,
  type FleetEdge,
  type FleetGraph,
  type FleetNode,
  type FleetNodeStatus,
  type FleetRole,
  type FleetTrace,
  fallbackFleetGraph,
} from '@aop/core/mission-control';
import { planResources, toolsProfileFor } from '@aop/core';
import { type Database, ledgerSpend, roundMoney, sql } from '@aop/db';
import { GatewayError } from '@aop/gateway-client';
import { type AgentHealth, type AgentHost, type AgentState, type AgentStats, platformModelName } from '@aop/provisioner';
import type { BackendConfig } from '../config.js';
import { openAgentControl } from './agent-control.js';
import { publicUrl } from './agents.js';
import type { FleetFitness } from './fleet-fitness.js';
import type { Logger } from '@aop/core';

/**
 * Mission control (spec §4.17): the user's fleet as it is now, read live from the agent host (status, `/healthz`,
 * `/readyz`, process stats), their agents' gateways (sessions) and the usage ledger. Nothing here is invented: when no
 * agent can be reached the graph is the spec's fallback node, and traces are empty.
 */

export interface MissionControlDeps {
  config: BackendConfig;
  db: Database;
  /** Absent when no provisioner is configured: no agent is reachable then. */
  host: AgentHost | undefined;
  log: Pick<Logger, 'warn' | 'info'>;
  /** The agents' colony fitness scores (x402 gateway), bounded in time and cached. */
  fitness: FleetFitness;
}

/** A running, ready agent counts as `idle` after this long without a ledger row or a (re)start. */
export const IDLE_AFTER_MS = 15 * 60_000;
/** How far back agent traffic is counted for edge strengths. */
export const TRAFFIC_WINDOW_MS = 7 * 86_400_000;
/** Spec §8 "Container probe timeout": one agent's gateway gets this long to answer for traces. */
export const GATEWAY_TIMEOUT_MS = 5_000;
/** Distance of the other agents from the orchestrator, in the graph's units. */
export const RING_RADIUS = 200;
/** Tool profiles for multi-step work (spec §2.2 `tools.profile`); their agents are specialists. */
const SPECIALIST_PROFILES = new Set(['coding', 'full']);
const GIB = 1024 ** 3;
/** Bookings listed at most (newest first); a fleet view, not an archive. */
export const BOOKINGS_MAX = 100;

interface AgentRow {
  id: string;
  name: string;
  subdomain: string;
  plan: string;
  config: Record<string, unknown>;
}

/** The user's agents, oldest first: the first one the user made is the fleet's orchestrator. */
async function userAgents(db: Database, userId: string): Promise<AgentRow[]> {
  const rows = await db.withUser(userId, (trx) =>
    trx
      .selectFrom('agent_deployments')
      .select(['id', 'name', 'subdomain', 'plan', 'config'])
      .where('user_id', '=', userId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute(),
  );
  return rows.map((r) => ({ ...r, config: (r.config ?? {}) as Record<string, unknown> }));
}

// ---------------------------------------------------------------------------------------------------------------------
// graph

/** What the host says about one agent now; every part is null when the host could not tell. */
export interface AgentProbe {
  state: AgentState | null;
  health: AgentHealth | null;
  stats: AgentStats | null;
}

/** Status, health and stats of one agent. A host that fails to answer is an agent that cannot be reached. */
async function probe(host: AgentHost | undefined, agentId: string): Promise<AgentProbe> {
  if (!host) return { state: null, health: null, stats: null };
  const state = await host.status(agentId).catch(() => null);
  if (state?.status !== 'running') return { state, health: null, stats: null };
  const [health, stats] = await Promise.all([host.health(agentId).catch(() => null), host.stats(agentId).catch(() => null)]);
  return { state, health, stats };
}

/**
 * The stats each agent's node shows: its own reading, except that agents sharing one gateway (issue #20) all show the
 * same reading of that one process — the first of them, in the order given, that has one. Two reads of one process
 * taken a moment apart differ, and the node says its figures are the gateway's.
 */
export function gatewayReadings(agentIds: readonly string[], probes: readonly AgentProbe[]): Map<string, AgentStats | null> {
  const own = new Map(agentIds.map((id, i) => [id, probes[i]?.stats ?? null]));
  return new Map(
    agentIds.map((id, i) => {
      const companions = new Set(probes[i]?.state?.sharesGatewayWith ?? []);
      const first = agentIds.find((other) => (other === id || companions.has(other)) && own.get(other));
      return [id, first ? (own.get(first) ?? null) : null];
    }),
  );
}

/**
 * Spec §3.4 fleet node status from the host: a ready gateway is `active`, or `idle` once nothing happened on it for
 * `IDLE_AFTER_MS` (last ledger row or last start), or hibernated; a live gateway that is not ready, or one still starting, is `stale`;
 * stopped, failed, unknown to the host or not answering `/healthz` is `offline`.
 */
export function nodeStatus(p: AgentProbe, lastActivityMs: number | null, now: number): FleetNodeStatus {
  switch (p.state?.status) {
    case 'starting':
    case 'restarting':
      return 'stale';
    case 'running': {
      if (!p.health?.live) return 'offline';
      if (!p.health.ready) return 'stale';
      const readyAt = p.state.readyAt ? Date.parse(p.state.readyAt) : Number.NaN;
      const last = Math.max(lastActivityMs ?? 0, Number.isFinite(readyAt) ? readyAt : 0);
      return now - last <= IDLE_AFTER_MS ? 'active' : 'idle';
    }
    case 'hibernated':
      // Asleep because nothing happened on it (issue #20): idle, not offline — a message wakes it.
      return 'idle';
    default:
      return 'offline';
  }
}

/** Specialist: the coding (or full) tool profile, or a plan provisioned with it; worker: the messaging profile. */
export function agentRole(agent: Pick<AgentRow, 'plan' | 'config'>): Exclude<FleetRole, 'orchestrator'> {
  const tools = agent.config.tools as { profile?: unknown } | undefined;
  // An agent without a profile has the one its plan provisions with (spec §2.2).
  const profile = typeof tools?.profile === 'string' ? tools.profile : toolsProfileFor(agent.plan);
  return SPECIALIST_PROFILES.has(profile) ? 'specialist' : 'worker';
}

/** The orchestrator at the centre, the others evenly on a ring around it, the first one straight above. */
export function ringPosition(index: number, count: number): { x: number; y: number } {
  const angle = -Math.PI / 2 + (2 * Math.PI * index) / count;
  return {
    x: Math.round(FLEET_CENTER.x + RING_RADIUS * Math.cos(angle)),
    y: Math.round(FLEET_CENTER.y + RING_RADIUS * Math.sin(angle)),
  };
}

const percent = (value: number) => Math.min(100, Math.max(0, Math.round(Number.isFinite(value) ? value : 0)));

interface AgentTraffic {
  lastAt: number | null;
  tokens: number;
}

/** Per agent: when the ledger last saw it and how many tokens it used in the traffic window (one grouped query). */
async function agentTraffic(db: Database, userId: string, now: number): Promise<Map<string, AgentTraffic>> {
  const since = new Date(now - TRAFFIC_WINDOW_MS);
  const result = await db.withUser(userId, (trx) =>
    sql<{ agent_id: string; last_at: Date | string | null; tokens: number | string | null }>`
      select agent_id,
             max(created_at) as last_at,
             coalesce(sum(total_tokens) filter (where created_at >= ${since}), 0)::bigint as tokens
      from usage_events
      where user_id = ${userId} and agent_id is not null
      group by agent_id`.execute(trx),
  );
  return new Map(
    result.rows.map((r) => [
      r.agent_id,
      { lastAt: r.last_at === null ? null : new Date(r.last_at).getTime(), tokens: Number(r.tokens ?? 0) },
    ]),
  );
}

/**
 * Messages the underground bus delivered from one of the fleet's agents to another in the traffic window, per
 * direction. The bus tables belong to no single user (owner connection); only pairs inside the fleet are read.
 */
async function busTraffic(db: Database, agentIds: string[], now: number): Promise<{ from: string; to: string; messages: number }[]> {
  if (agentIds.length < 2) return [];
  const rows = await db.kysely
    .selectFrom('underground_bus_deliveries as d')
    .innerJoin('underground_bus_messages as m', 'm.message_id', 'd.message_id')
    .select(['m.from_agent_id as from', 'd.agent_id as to', (eb) => eb.fn.countAll<string>().as('messages')])
    .where('m.from_agent_id', 'in', agentIds)
    .where('d.agent_id', 'in', agentIds)
    .whereRef('m.from_agent_id', '!=', 'd.agent_id')
    .where('d.status', '=', 'delivered')
    .where('m.created_at', '>=', new Date(now - TRAFFIC_WINDOW_MS))
    .groupBy(['m.from_agent_id', 'd.agent_id'])
    .execute();
  return rows.map((r) => ({ from: r.from, to: r.to, messages: Number(r.messages) }));
}

/** The underground wallet of each of the user's agents that has one. */
async function agentWallets(db: Database, userId: string): Promise<Map<string, string>> {
  const rows = await db.withUser(userId, (trx) =>
    trx.selectFrom('underground_wallets').select(['agent_id', 'address']).where('user_id', '=', userId).execute(),
  );
  return new Map(rows.map((r) => [r.agent_id, r.address]));
}

const strengthOf = (value: number, busiest: number) => (busiest > 0 ? Math.round((value / busiest) * 100) / 100 : 0);

/**
 * Edges from agent-to-agent traffic when the fleet's agents talked over the underground bus in the traffic window
 * (one edge per direction, as strong as its share of the busiest pair); otherwise the orchestrator's links to each
 * other agent, as strong as that agent's share of the fleet's recent work (ledger tokens, relative to the busiest).
 */
function fleetEdges(
  agents: AgentRow[],
  bus: { from: string; to: string; messages: number }[],
  traffic: Map<string, AgentTraffic>,
): FleetEdge[] {
  const order = new Map(agents.map((a, i) => [a.id, i]));
  if (bus.length > 0) {
    const busiest = Math.max(...bus.map((b) => b.messages));
    return [...bus]
      .sort((a, b) => (order.get(a.from) ?? 0) - (order.get(b.from) ?? 0) || (order.get(a.to) ?? 0) - (order.get(b.to) ?? 0))
      .map((b) => ({ id: `${b.from}->${b.to}`, from: b.from, to: b.to, strength: strengthOf(b.messages, busiest), basis: 'messages' }));
  }
  const [orchestrator, ...others] = agents;
  if (!orchestrator) return [];
  const busiest = Math.max(0, ...others.map((a) => traffic.get(a.id)?.tokens ?? 0));
  return others.map((agent) => ({
    id: `${orchestrator.id}->${agent.id}`,
    from: orchestrator.id,
    to: agent.id,
    strength: strengthOf(traffic.get(agent.id)?.tokens ?? 0, busiest),
    basis: 'work',
  }));
}

/**
 * The graph (spec §2.10, §4.17), built live: the user's first agent is the orchestrator at the centre, every other
 * agent a specialist or worker on a ring around it, each with its status, CPU load and memory (percent of its plan's
 * memory limit), its colony fitness score when the x402 gateway gives one, and its underground wallet when it has one.
 * The orchestrator also carries `children` (how many other agents the fleet has) and `url` (its public address).
 * `endpoints`, `cycles`, `regime` and `freeEnergy` are left out: nothing the platform records measures them.
 * Edges: see `fleetEdges`. `soul` when at least one agent answers `/healthz` or sleeps (hibernated: a message wakes it);
 * otherwise the spec's fallback node.
 */
export async function fleetGraph(deps: MissionControlDeps, userId: string, now: number): Promise<FleetGraph> {
  const agents = await userAgents(deps.db, userId);
  if (agents.length === 0) return fallbackFleetGraph('fallback', new Date(now));
  // Fitness is asked alongside the probes so the colony gateway's time bound overlaps theirs instead of adding to it.
  const [probes, traffic, bus, wallets, fitness] = await Promise.all([
    Promise.all(agents.map((a) => probe(deps.host, a.id))),
    agentTraffic(deps.db, userId, now),
    busTraffic(
      deps.db,
      agents.map((a) => a.id),
      now,
    ),
    agentWallets(deps.db, userId),
    deps.fitness.scores(agents.map((a) => a.id)),
  ]);
  // A sleeping agent is reachable too: a message to it is delivered by waking it. A fleet that is all asleep is the
  // user's agents, quiet, not the spec's "none reachable" stand-in node.
  if (!probes.some((p) => p.health?.live || p.state?.status === 'hibernated')) return fallbackFleetGraph('fallback', new Date(now));

  const others = agents.length - 1;
  const readings = gatewayReadings(
    agents.map((a) => a.id),
    probes,
  );
  const nodes: FleetNode[] = agents.map((agent, i) => {
    const p = probes[i] as AgentProbe;
    const status = nodeStatus(p, traffic.get(agent.id)?.lastAt ?? null, now);
    const stats = p.stats ? readings.get(agent.id) : null;
    const shown = status !== 'offline' && stats !== null && stats !== undefined;
    const node: FleetNode = {
      id: agent.id,
      name: agent.name,
      role: i === 0 ? 'orchestrator' : agentRole(agent),
      status,
      ...(i === 0 ? FLEET_CENTER : ringPosition(i - 1, others)),
      load: shown ? percent(stats?.cpuPercent ?? 0) : 0,
      memory: shown ? percent(((stats?.memoryBytes ?? 0) / (planResources(agent.plan).memoryGib * GIB)) * 100) : 0,
    };
    const score = fitness.get(agent.id);
    if (score !== undefined) node.fitness = score;
    const wallet = wallets.get(agent.id);
    if (wallet) node.walletAddress = wallet;
    // `idle` covers both quiet and asleep; which one is the host's to say (no process: its load and memory are 0).
    if (p.state?.status === 'hibernated') node.asleep = true;
    // One process for several agents: its figures are not this agent's alone, and the node says so.
    const companions = p.state?.sharesGatewayWith ?? [];
    if (companions.length > 0) node.sharesGatewayWith = companions;
    if (i === 0) {
      node.children = others;
      const url = publicUrl(deps.config, agent.subdomain, p.state);
      if (url) node.url = url;
    }
    return node;
  });

  const edges = fleetEdges(agents, bus, traffic);
  return { nodes, edges, timestamp: new Date(now).toISOString(), source: 'soul', nodeCount: nodes.length };
}

// ---------------------------------------------------------------------------------------------------------------------
// traces

/** A `sessions.list` row, as OpenClaw answers it (only the fields read here). */
interface SessionRow {
  key?: unknown;
  sessionId?: unknown;
  label?: unknown;
  derivedTitle?: unknown;
  displayName?: unknown;
  status?: unknown;
  hasActiveRun?: unknown;
  inputTokens?: unknown;
  outputTokens?: unknown;
  totalTokens?: unknown;
  model?: unknown;
  modelProvider?: unknown;
  createdAt?: unknown;
  startedAt?: unknown;
  endedAt?: unknown;
  updatedAt?: unknown;
  lastActivityAt?: unknown;
}

const ms = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null);
const text = (value: unknown) => (typeof value === 'string' && value.trim() ? value.trim() : null);
const tokens = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.trunc(value) : 0);
const DESCRIPTION_MAX = 200;

/** A trace with the time it last moved, for sorting newest first across agents. */
interface DatedTrace {
  trace: FleetTrace;
  at: number;
}

/**
 * One session of an agent's gateway as a trace (spec §2.10 task shape): `running` while a run is active, `idle` when
 * nothing has used a token in it yet, `completed` otherwise (a failed run is over too). Cost is always 0 (spec §2.10).
 */
export function sessionTrace(agent: { id: string; name: string }, row: SessionRow, defaultModel: string | null): DatedTrace | null {
  const key = text(row.key);
  if (!key) return null;
  const used = tokens(row.totalTokens) || tokens(row.inputTokens) + tokens(row.outputTokens);
  const running = row.hasActiveRun === true || row.status === 'running' || row.status === 'queued';
  const status: FleetTrace['status'] = running ? 'running' : used === 0 ? 'idle' : 'completed';
  const started = ms(row.startedAt) ?? ms(row.createdAt) ?? ms(row.updatedAt);
  const moved = Math.max(ms(row.lastActivityAt) ?? 0, ms(row.endedAt) ?? 0, ms(row.updatedAt) ?? 0, started ?? 0);
  if (started === null) return null;
  const model = text(row.model);
  const provider = text(row.modelProvider);
  const title = text(row.label) ?? text(row.derivedTitle) ?? text(row.displayName) ?? key;
  return {
    at: moved,
    trace: {
      id: `${agent.id}:${text(row.sessionId) ?? key}`,
      status,
      description: `${agent.name}: ${title}`.slice(0, DESCRIPTION_MAX),
      startedAt: new Date(started).toISOString(),
      completedAt: status === 'completed' ? new Date(ms(row.endedAt) ?? moved).toISOString() : null,
      tokensUsed: used,
      costUSD: 0,
      model: platformModelName(
        model ? (provider && !model.startsWith(`${provider}/`) ? `${provider}/${model}` : model) : (defaultModel ?? 'unknown'),
      ),
    },
  };
}

/** The newest sessions of one agent's gateway, over its WebSocket; none when it cannot answer. */
async function agentTraces(deps: MissionControlDeps, host: AgentHost, agent: AgentRow): Promise<DatedTrace[]> {
  const state = await host.status(agent.id).catch(() => null);
  if (state?.status !== 'running' || !state.url) return [];
  try {
    // Through the host's control credentials: a container or hosted gateway gives a token-only connection no scopes.
    const { conn } = await openAgentControl(host, agent.id, state.url.replace(/^http/, 'ws'), {
      deadline: performance.now() + GATEWAY_TIMEOUT_MS,
      log: deps.log,
    });
    try {
      const listed = await conn.request<{ sessions?: SessionRow[]; defaults?: { model?: unknown; modelProvider?: unknown } }>(
        'sessions.list',
        // Its agent's sessions only: a gateway may hold several agents of the customer.
        { limit: FLEET_TRACES_MAX, sortBy: 'activity', includeDerivedTitles: true, agentId: state.openclawAgentId },
        { timeoutMs: GATEWAY_TIMEOUT_MS },
      );
      const defaultModel = text(listed.defaults?.model);
      const defaultProvider = text(listed.defaults?.modelProvider);
      const fallbackModel = defaultModel && defaultProvider ? `${defaultProvider}/${defaultModel}` : defaultModel;
      return (listed.sessions ?? []).flatMap((row) => sessionTrace(agent, row, fallbackModel) ?? []);
    } finally {
      void conn.close();
    }
  } catch (err) {
    // The gateway's own words may carry connection details: only the agent and the error kind are logged.
    const code = err instanceof GatewayError ? err.code : err instanceof Error ? err.name : 'unknown';
    deps.log.warn({ agentId: agent.id, code }, 'mission control: agent sessions not read');
    return [];
  }
}

/** Spec §4.17 traces: the sessions of every running agent of the user, up to 20, most recently active first. */
export async function fleetTraces(deps: MissionControlDeps, userId: string): Promise<FleetTrace[]> {
  const host = deps.host;
  if (!host) return [];
  const agents = await userAgents(deps.db, userId);
  const all = (await Promise.all(agents.map((a) => agentTraces(deps, host, a)))).flat();
  return all
    .sort((a, b) => b.at - a.at || a.trace.id.localeCompare(b.trace.id))
    .slice(0, FLEET_TRACES_MAX)
    .map((t) => t.trace);
}

// ---------------------------------------------------------------------------------------------------------------------
// costs and bookings

/**
 * Spec §4.17 costs from the user's usage ledger (all time): `totalSpend` is every call, `managedAiCost` the calls the
 * platform runs on its own AI keys (`MANAGED_AI_KINDS` of @aop/db). The same sum the web's mission control and cost
 * dashboard read (`ledgerSpend`). No per-item costs and no coordination revenue are kept yet, so `costs` is empty and
 * `coordinationRevenue` 0, as the spec states.
 */
export async function fleetCosts(db: Database, userId: string): Promise<FleetCosts> {
  const spend = await db.withUser(userId, (trx) => ledgerSpend(trx, userId));
  return { costs: [], totalSpend: roundMoney(spend.total), managedAiCost: roundMoney(spend.managed), coordinationRevenue: 0 };
}

/**
 * Spec §4.17 bookings: the booking negotiations (underground bus `BOOKING_*` messages) in which one of the user's
 * agents is the requester or the responder, most recently moved first. Empty until an agent negotiates one. The
 * negotiation rows belong to no single user (owner connection); only those naming the user's agents are read.
 */
export async function fleetBookings(db: Database, userId: string): Promise<FleetBookings> {
  const agentIds = (await userAgents(db, userId)).map((a) => a.id);
  if (agentIds.length === 0) return { bookings: [] };
  const rows = await db.kysely
    .selectFrom('underground_negotiations')
    .selectAll()
    .where((eb) => eb.or([eb('requester_agent_id', 'in', agentIds), eb('responder_agent_id', 'in', agentIds)]))
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'asc')
    .limit(BOOKINGS_MAX)
    .execute();
  return {
    bookings: rows.map(
      (r): FleetBooking => ({
        id: r.id,
        status: r.status,
        round: r.round,
        requesterAgentId: r.requester_agent_id,
        responderAgentId: r.responder_agent_id,
        terms: (r.terms ?? {}) as Record<string, unknown>,
        lastOfferBy: r.last_offer_by,
        createdAt: r.created_at.toISOString(),
        updatedAt: r.updated_at.toISOString(),
      }),
    ),
  };
}
