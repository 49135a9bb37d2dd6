import type { GatewayConnection } from '@aop/gateway-client';
import { type AgentSpec, AgentStartError, OWN_GATEWAY_AGENT_ID, type LlmSpec } from '../host.js';
import { LLM_PROVIDER_ID, SECRET_FILE_PROVIDER, pointerSegment } from './openclaw-config.js';

/**
 * Customer-scoped gateways: one OpenClaw gateway holding several of one customer's agents, each an isolated OpenClaw
 * agent (`agents.entries.<id>`, its own workspace and session store). The gateway's first agent is OpenClaw's `main`;
 * every later one joins under its platform id. What is written into the gateway's config for them, and what is asked
 * of the gateway over its protocol when one stops, starts again or leaves. Measured with the pinned OpenClaw:
 * docs/decisions.md "Customer-scoped gateways".
 */

/**
 * A platform agent's id inside a gateway it joined: the platform id lowercased, as OpenClaw normalizes every agent id
 * (`normalizeAgentIdStrict`): its roster key, its sessions' `agent:<id>:` and its jobs' `agentId` are in this form.
 */
export const openclawAgentIdOf = (agentId: string): string => agentId.toLowerCase();

/**
 * What a host's record of an agent says about the gateway it is in (local and docker keep the same fields). There is
 * no record of a gateway apart from its agents: the first agent's record is the gateway's (docs/decisions.md
 * "Customer-scoped gateways").
 */
export interface RosterFields {
  /**
   * A member of another agent's gateway: that agent's id. A member has no process of its own; its `desired` is its own
   * (stopped: its jobs disabled, its heartbeat off, its chat refused by the platform).
   */
  gatewayOf?: string;
  /**
   * The first agent of a gateway that holds members: stopped by request while the gateway runs on for them (its jobs
   * disabled, its heartbeat off). Its `desired` is then the process's.
   */
  agentStopped?: boolean;
  /** The first agent was deleted while members remained: only the gateway is left, until its last member goes. */
  retired?: boolean;
  /** Cron jobs disabled when the agent was stopped in a gateway that ran on (enabled again by its start). */
  quietJobs?: string[];
  /** OpenClaw ids of members deleted while this gateway was not running: their jobs are removed when it is next up. */
  leftAgents?: string[];
}

/** Whether anyone wants a gateway's process: its first agent (not stopped, not deleted), or a member not stopped. */
export function wantsProcess(gateway: RosterFields, members: ReadonlyArray<{ desired: string }>): boolean {
  return (!gateway.agentStopped && !gateway.retired) || members.some((member) => member.desired === 'running');
}

/**
 * The OpenClaw ids of a gateway's agents that want to run: its first agent (`main`) unless stopped or deleted, and its
 * members not stopped. A sleeping gateway wakes for their jobs alone (`hibernationFor`).
 */
export function wantedAgentIds(gateway: RosterFields, members: ReadonlyArray<{ agentId: string; desired: string }>): Set<string> {
  const wanted = new Set(members.filter((member) => member.desired === 'running').map((member) => openclawAgentIdOf(member.agentId)));
  if (!gateway.agentStopped && !gateway.retired) wanted.add(OWN_GATEWAY_AGENT_ID);
  return wanted;
}

/** A gateway a new agent might join (`chooseCustomerGateway`), as its host sees it. */
export interface GatewayCandidate<G> {
  gateway: G;
  userId: string;
  /** Its OpenClaw version (on docker: its image). */
  runtime: string;
  /** Running and ready. */
  awake: boolean;
  /**
   * On its way up, where the host applies a roster written meanwhile once the process answers: joined like a
   * sleeping one, when the new agent would wait for a cold start anyway, and before it (its start is under way).
   */
  starting: boolean;
  /** Hibernated. */
  asleep: boolean;
  /** Its first agent has variables of its own (`agentEnv`): they are its process's and would reach a member's tools. */
  ownVariables: boolean;
  /** The OpenClaw ids of its members. */
  memberIds: string[];
}

/**
 * The gateway a new agent of `spec.userId` joins, when sharing is on (`limit` agents a gateway, above 1): one of that
 * customer's own (never another customer's: a gateway is a trust boundary, docs/operations.md), of the same runtime,
 * with room in its roster, whose first agent has no variables of its own; a running one holding the fewest agents,
 * else — only when `warmReady` is false, so the new agent would wait for a cold start anyway — one still starting (a
 * customer's agents created in a burst share its start rather than each starting a process), else a hibernated one,
 * woken with the new agent in its roster. Null: a gateway of its own — also for an agent with variables of its own or
 * messaging channels, which live in a process's environment and a gateway's channel config.
 */
export function chooseCustomerGateway<G>(
  spec: Pick<AgentSpec, 'agentId' | 'userId' | 'agentEnv' | 'channelTokens'>,
  runtime: string,
  candidates: Iterable<GatewayCandidate<G>>,
  options: { limit: number; warmReady: boolean },
): G | null {
  if (options.limit <= 1) return null;
  if (Object.keys(spec.agentEnv ?? {}).length > 0 || Object.values(spec.channelTokens ?? {}).some(Boolean)) return null;
  const openclawId = openclawAgentIdOf(spec.agentId);
  if (openclawId === OWN_GATEWAY_AGENT_ID) return null;
  let chosen: G | null = null;
  let chosenRank = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const starting = candidate.starting && !options.warmReady;
    const asleep = candidate.asleep && !options.warmReady;
    if (candidate.userId !== spec.userId || candidate.runtime !== runtime || !(candidate.awake || starting || asleep)) continue;
    if (candidate.ownVariables) continue;
    // OpenClaw's ids are case-blind: an id that only differs in case from one in the roster cannot join it.
    if (candidate.memberIds.includes(openclawId)) continue;
    const size = 1 + candidate.memberIds.length;
    // An awake gateway before a starting one before a sleeping one, then the one holding the fewest agents.
    const rank = (candidate.awake ? 0 : starting ? options.limit : 2 * options.limit) + size;
    if (size < options.limit && rank < chosenRank) {
      chosen = candidate.gateway;
      chosenRank = rank;
    }
  }
  return chosen;
}

/**
 * A member's workspace in its gateway's state dir, relative to it, where the gateway's process sees only that volume
 * (docker, kubernetes): where OpenClaw puts a further agent's workspace by default, `workspace-<its OpenClaw id>`.
 */
export const memberWorkspaceDir = (agentId: string) => `workspace-${openclawAgentIdOf(agentId)}`;

/** A platform agent that joined another agent's gateway. */
export interface RosterMember {
  /** Its OpenClaw agent id (`openclawAgentIdOf`). */
  id: string;
  /** Its own workspace directory. */
  workspace: string;
  /** Its own model and key, when it has one: a provider of its own in the gateway's config. */
  llm?: LlmSpec | null;
  /** Its stored configuration (spec §2.2): the per-agent part (model, heartbeat, tools profile) goes into its entry. */
  config: Record<string, unknown>;
  /** Stopped by request: its heartbeat is off and its jobs are disabled (`quietAgentJobs`); the platform refuses its chat. */
  stopped: boolean;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A member's LLM provider id in the gateway's config (the first agent's is `platform`). */
export const memberProviderId = (id: string) => `${LLM_PROVIDER_ID}-${id}`;

const MEMBER_MODEL = new RegExp(`^${LLM_PROVIDER_ID}-[a-z0-9][a-z0-9_-]{0,63}/`);

/**
 * A model reference as the platform names it: a member's own provider (`platform-<id>/<model>`, an implementation
 * detail of sharing a gateway) is the platform's LLM like the first agent's (`platform/<model>`), as the chat and the
 * usage ledger name it.
 */
export const platformModelName = (ref: string): string => ref.replace(MEMBER_MODEL, `${LLM_PROVIDER_ID}/`);

/** Where a member's LLM key is in the gateway's secret file (a JSON pointer). */
const memberKeyPointer = (id: string) => `/members/${pointerSegment(id)}/llmApiKey`;

/** The secret file's part for the members: each member's LLM key under `/members/<id>/llmApiKey`. */
export function rosterSecrets(members: readonly RosterMember[]): { members?: Record<string, { llmApiKey: string }> } {
  const keyed = members.filter((member) => member.llm);
  if (keyed.length === 0) return {};
  return { members: Object.fromEntries(keyed.map((member) => [member.id, { llmApiKey: (member.llm as LlmSpec).apiKey }])) };
}

/** A heartbeat block that runs nothing (OpenClaw: `every: "0m"` disables the recurring cadence). */
const NO_HEARTBEAT = { every: '0m' };

/**
 * Adds the members to a gateway's config built for its first agent (`buildOpenClawConfig`, secrets in a file): an
 * explicit roster (`agents.ownership: "explicit"`, OpenClaw refuses a roster of several agents without it), `main`
 * listed too (else OpenClaw reads the write as dropping it), each member's entry with its workspace, model, heartbeat
 * and tools profile. Once one entry has a heartbeat block only those agents run heartbeats, so `main` gets its own (the
 * defaults' cadence, or none while it is stopped); agent-less jobs and the ambient heartbeat are `main`'s. Agents do not reach each other's sessions: cross-agent session tools
 * off, session visibility narrowed to the agent. Without members the config is left as it was (a gateway of one).
 */
export function applyRoster(config: Json, members: readonly RosterMember[], options: { mainStopped: boolean }): Json {
  if (members.length === 0) return config;
  const agents = isObject(config.agents) ? config.agents : {};
  config.agents = agents;
  const defaults = isObject(agents.defaults) ? agents.defaults : {};
  agents.defaults = defaults;
  agents.ownership = 'explicit';
  // What has no agent of its own (OpenClaw's agent-less system jobs, the ambient heartbeat) stays the first agent's, as
  // OpenClaw writes it itself when a roster becomes explicit: without it, its next check of the jobs (e.g. at
  // `agents.delete`) fails with "Agent-less cron job has no resolvable owner".
  defaults.systemAgent = { ...(isObject(defaults.systemAgent) ? defaults.systemAgent : {}), agentId: OWN_GATEWAY_AGENT_ID };
  if (isObject(defaults.heartbeat)) defaults.heartbeat = { ...defaults.heartbeat, agentId: OWN_GATEWAY_AGENT_ID };
  // `{}`: the defaults' heartbeat (an entry's block merges over them).
  const main: Json = { heartbeat: options.mainStopped ? NO_HEARTBEAT : {} };
  const entries: Json = { [OWN_GATEWAY_AGENT_ID]: main };
  const models = isObject(config.models) ? config.models : { mode: 'merge' };
  const providers = isObject(models.providers) ? models.providers : {};
  for (const member of members) {
    const own = isObject(member.config.agents) && isObject(member.config.agents.defaults) ? member.config.agents.defaults : {};
    const entry: Json = {
      workspace: member.workspace,
      heartbeat: member.stopped ? NO_HEARTBEAT : isObject(own.heartbeat) ? own.heartbeat : {},
    };
    if (member.llm) {
      providers[memberProviderId(member.id)] = memberProvider(member.id, member.llm);
      entry.model = { primary: `${memberProviderId(member.id)}/${member.llm.model}` };
    } else if (own.model !== undefined) entry.model = own.model;
    const profile = isObject(member.config.tools) ? member.config.tools.profile : undefined;
    if (typeof profile === 'string') entry.tools = { profile };
    entries[member.id] = entry;
  }
  agents.entries = entries;
  if (Object.keys(providers).length > 0) {
    models.providers = providers;
    config.models = models;
  }
  const tools = isObject(config.tools) ? config.tools : {};
  config.tools = tools;
  tools.agentToAgent = { ...(isObject(tools.agentToAgent) ? tools.agentToAgent : {}), enabled: false };
  const sessions = isObject(tools.sessions) ? tools.sessions : {};
  if (sessions.visibility === undefined || sessions.visibility === 'all' || sessions.visibility === 'tree') sessions.visibility = 'agent';
  tools.sessions = sessions;
  return config;
}

/** A member's own OpenAI-compatible provider: the first agent's shape, its key a SecretRef into the secret file. */
function memberProvider(id: string, llm: LlmSpec): Json {
  return {
    baseUrl: llm.baseUrl,
    apiKey: { source: 'file', provider: SECRET_FILE_PROVIDER, id: memberKeyPointer(id) },
    api: 'openai-completions',
    models: [
      {
        id: llm.model,
        name: llm.model,
        reasoning: false,
        input: ['text'],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: llm.contextWindow ?? 128_000,
        maxTokens: llm.maxTokens ?? 4_096,
      },
    ],
  };
}

interface CronJobRow {
  id?: unknown;
  agentId?: unknown;
  enabled?: unknown;
}

const opts = { timeoutMs: 15_000 };

/**
 * Disables an agent's enabled cron jobs, for a stop that keeps the agent in its gateway (a roster removal would delete
 * its jobs, and adding it back restarts the gateway under its siblings). Returns the ids it disabled, for
 * `resumeAgentJobs`. OpenClaw's own system jobs (e.g. its skill review) refuse changes: they keep their schedule.
 */
export async function quietAgentJobs(conn: GatewayConnection, agentId: string): Promise<{ disabled: string[]; kept: string[] }> {
  // OpenClaw lists at most 200 jobs a call; a gateway of one customer's agents holds far fewer.
  const listed = await conn.request<{ jobs?: CronJobRow[] }>('cron.list', { includeDisabled: false, limit: 200 }, opts);
  const disabled: string[] = [];
  const kept: string[] = [];
  for (const job of listed.jobs ?? []) {
    if (typeof job.id !== 'string' || job.enabled === false) continue;
    if ((job.agentId ?? OWN_GATEWAY_AGENT_ID) !== agentId) continue;
    try {
      await conn.request('cron.update', { id: job.id, patch: { enabled: false } }, opts);
      disabled.push(job.id);
    } catch {
      kept.push(job.id);
    }
  }
  return { disabled, kept };
}

/** Enables again the jobs `quietAgentJobs` disabled (those still there: the owner may have removed some meanwhile). */
export async function resumeAgentJobs(conn: GatewayConnection, ids: readonly string[]): Promise<string[]> {
  const resumed: string[] = [];
  for (const id of ids) {
    try {
      await conn.request('cron.update', { id, patch: { enabled: true } }, opts);
      resumed.push(id);
    } catch {
      // removed since
    }
  }
  return resumed;
}

/**
 * Removes the jobs of an agent that left the roster while its gateway was not running (`agents.delete` needs the running
 * gateway, and would have removed them): run once the gateway is up again. Returns how many it removed.
 */
export async function forgetAgentJobs(conn: GatewayConnection, agentId: string): Promise<number> {
  const listed = await conn.request<{ jobs?: CronJobRow[] }>('cron.list', { includeDisabled: true, limit: 200 }, opts);
  let removed = 0;
  for (const job of listed.jobs ?? []) {
    if (typeof job.id !== 'string' || job.agentId !== agentId) continue;
    await conn.request('cron.remove', { id: job.id }, opts);
    removed += 1;
  }
  return removed;
}

/** Takes a member out of its gateway, its sessions and files with it (`agents.delete`, hot; OpenClaw drops its jobs). */
export async function leaveGateway(conn: GatewayConnection, agentId: string): Promise<void> {
  await conn.request('agents.delete', { agentId, deleteFiles: true }, { timeoutMs: 30_000 });
}

/**
 * Takes an agent whose join failed out of the running gateway, when the gateway got it (a `config.apply` OpenClaw
 * wrote and then failed to answer or to reload): `agents.delete` with its files, since OpenClaw refuses a config that
 * drops an entry of its roster ("Config write would drop agent roster entries without an explicit deletion"). False
 * when its config does not list the agent.
 */
export async function withdrawJoin(conn: GatewayConnection, agentId: string): Promise<boolean> {
  const got = await conn.request<{ config?: { agents?: { entries?: Record<string, unknown> } } }>('config.get', {}, { timeoutMs: 10_000 });
  if (!Object.hasOwn(got.config?.agents?.entries ?? {}, agentId)) return false;
  await leaveGateway(conn, agentId);
  return true;
}

/** A host's agent as the roster helpers read it: its record's id, wanted state and roster fields. */
export interface RosterAgent {
  record: RosterFields & { agentId: string; desired: string };
}

/**
 * A host's gateways (agents with a process of their own, by agent id) and members (agents in another's gateway),
 * read together: who is in which gateway, whether anyone wants its process, whom an agent shares it with. The local
 * and docker hosts keep both in memory; the kubernetes host reads them from the cluster instead.
 */
export class RosterBook<A extends RosterAgent> {
  constructor(
    private readonly gateways: ReadonlyMap<string, A>,
    private readonly members: ReadonlyMap<string, A>,
  ) {}

  membersOf(gateway: A): A[] {
    const id = gateway.record.agentId;
    return [...this.members.values()].filter((member) => member.record.gatewayOf === id);
  }

  /** The gateway a member runs in. */
  gatewayOf(member: A): A {
    const gateway = this.gateways.get(member.record.gatewayOf ?? '');
    if (!gateway) throw new AgentStartError(`The gateway of agent ${member.record.agentId} is gone`);
    return gateway;
  }

  wantsProcess(gateway: A): boolean {
    return wantsProcess(
      gateway.record,
      this.membersOf(gateway).map((member) => member.record),
    );
  }

  /** `wantedAgentIds` of `gateway`. */
  wantedIds(gateway: A): Set<string> {
    return wantedAgentIds(
      gateway.record,
      this.membersOf(gateway).map((member) => member.record),
    );
  }

  /** The other platform agents of `gateway` than `self` (its first agent unless deleted, and its members). */
  sharingWith(gateway: A, self: A): string[] {
    const first = gateway.record.retired ? [] : [gateway];
    return [...first, ...this.membersOf(gateway)].filter((agent) => agent !== self).map((agent) => agent.record.agentId);
  }
}

/**
 * `config.apply` of `raw` over `conn`, based on the gateway's current config (`config.get`). With `unlessRead`, nothing
 * when the process already runs the config its file holds (`appliedConfigHash` is its `configRevisionHash`): answers
 * `read` then, `applied` otherwise.
 */
export async function applyConfig(
  conn: GatewayConnection,
  raw: string,
  note: string,
  options: { unlessRead?: boolean } = {},
): Promise<'applied' | 'read'> {
  const got = await conn.request<{ hash?: string; configRevisionHash?: string; appliedConfigHash?: string | null }>(
    'config.get',
    {},
    { timeoutMs: 10_000 },
  );
  if (options.unlessRead && got.appliedConfigHash && got.appliedConfigHash === got.configRevisionHash) return 'read';
  await conn.request('config.apply', { raw, baseHash: got.hash, note: `platform: ${note}` }, { timeoutMs: 30_000 });
  return 'applied';
}

/** A gateway whose roster may have been written while its process started (`applyRosterWritten`). */
export interface RosterMark {
  /**
   * The roster changed while the process was starting (an agent joined or was stopped): written to its files, but not
   * certainly read by it (OpenClaw's file watcher may not run yet, and only `config.apply` re-reads the secret file).
   * Set before those writes; cleared by a start, which reads the files as they are.
   */
  rosterUnapplied?: boolean;
}

/**
 * The roster written while a gateway started (`RosterMark`), applied now that it answers (`push`: `config.apply` of its
 * config, skipped when the process already runs what its file holds — it read the file after the write — which
 * `unlessRead` asks of it), for as long as the start is `current` and the mark set again meanwhile: an agent that
 * joined it is in its process, with its model key, before it is called running. A failure is logged and the mark
 * kept: the start goes on, and the next change of its roster applies it.
 *
 * The skip is not an optimisation: OpenClaw 2026.9.6 was seen to hold a needless `config.apply` made while it started
 * (only its `meta` changed) for 31 s and then refuse it ("persisted but was not applied … (superseded)"), twice.
 */
export async function applyRosterWritten(
  gateway: RosterMark,
  current: () => boolean,
  push: (note: string, options: { unlessRead: true }) => Promise<'applied' | 'read'>,
  log: (line: string) => void,
): Promise<void> {
  while (gateway.rosterUnapplied && current()) {
    gateway.rosterUnapplied = false;
    try {
      const outcome = await push('the agents that joined or changed while it started', { unlessRead: true });
      log(
        outcome === 'applied'
          ? '[host] the agents that joined or changed while it started are applied'
          : '[host] the agents that joined or changed while it started were read by the process as it started',
      );
    } catch (error) {
      gateway.rosterUnapplied = true;
      log(`[host] the agents that joined or changed while it started could not be applied: ${(error as Error).message}`);
      return;
    }
  }
}

/**
 * A running gateway's agents as recorded: the jobs of members deleted while it was down removed (`leftAgents`, then
 * cleared), a stopped agent's enabled jobs disabled (remembered in its `quietJobs`), those a stop had disabled enabled
 * again once it runs. Run after every change of the roster and every time the gateway is ready (an agent stopped while
 * it slept). `save` stores an agent's changed record.
 */
export async function settleRoster<A extends RosterAgent>(options: {
  on: <T>(fn: (conn: GatewayConnection) => Promise<T>) => Promise<T>;
  gateway: A;
  members: readonly A[];
  save: (agent: A) => Promise<void>;
  log: (line: string) => void;
}): Promise<void> {
  const { gateway, on, log } = options;
  const left = gateway.record.leftAgents ?? [];
  for (const openclawId of left) {
    const removed = await on((conn) => forgetAgentJobs(conn, openclawId));
    log(`[host] agent ${openclawId} left while the gateway was down: ${removed} job(s) of it removed`);
  }
  if (left.length > 0) {
    gateway.record.leftAgents = [];
    await options.save(gateway);
  }
  const seats: Array<[A, string, boolean]> = [
    [gateway, OWN_GATEWAY_AGENT_ID, gateway.record.agentStopped === true || gateway.record.retired === true],
    ...options.members.map((member): [A, string, boolean] => [
      member,
      openclawAgentIdOf(member.record.agentId),
      member.record.desired !== 'running',
    ]),
  ];
  for (const [agent, openclawId, stopped] of seats) {
    const quiet = agent.record.quietJobs ?? [];
    if (stopped) {
      const { disabled, kept } = await on((conn) => quietAgentJobs(conn, openclawId));
      if (disabled.length === 0 && kept.length === 0) continue;
      agent.record.quietJobs = [...new Set([...quiet, ...disabled])];
      const system = kept.length > 0 ? `; ${kept.length} system job(s) refused it and keep their schedule` : '';
      log(`[host] agent ${openclawId} is stopped: ${disabled.length} job(s) disabled${system}`);
    } else if (quiet.length > 0) {
      const resumed = await on((conn) => resumeAgentJobs(conn, quiet));
      agent.record.quietJobs = [];
      log(`[host] agent ${openclawId} runs again: ${resumed.length} job(s) enabled again`);
    } else continue;
    await options.save(agent);
  }
}
