import { AGENT_ACTIONS, AGENT_STATES } from '@aop/core/agent-state';
import { type Static, type TSchema, Type } from '@sinclair/typebox';

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** Where an agent's model comes from; tells "OpenClaw's default" (nothing names one) from "unknown" (not readable). */
export const MODEL_SOURCES = ['platform', 'config', 'default', 'unknown'] as const;
export type ModelSourceName = (typeof MODEL_SOURCES)[number];
const ModelSource = Type.Union(
  MODEL_SOURCES.map((s) => Type.Literal(s)),
  {
    description:
      '`platform`: written from the agent’s AI provider key; `config`: its configuration names it; `default`: nothing names one (OpenClaw’s default); `unknown`: its applied configuration could not be read',
  },
);

const HostStatus = nullable(
  Type.String({
    description:
      "what the agent's host says of it now: `running`, `hibernated` (asleep after being idle; a message or its next due job wakes it), `starting`, `restarting`, `stopping`, `stopped` or `error`. `status` is the agent's record, which stays `running` while it sleeps. Null when the host could not be asked. The state with its evidence: `GET /api/agents/:id/health`",
  }),
);

/** One of `GET /api/agents`' agents (agents.service.ts `listAgents`). */
export const AgentSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  model: nullable(
    Type.String({
      description: 'the model the agent runs, read from the configuration its host applies; null when none is named or it cannot be read',
    }),
  ),
  modelSource: ModelSource,
  status: Type.String(),
  hostStatus: HostStatus,
  url: nullable(Type.String()),
  websocketUrl: nullable(Type.String({ description: 'the gateway URL with `ws` for `http`' })),
  primary: Type.Boolean({ description: 'the account’s primary agent: the one `/api/instance/:userId` and `/api/user/runtime` act on' }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type AgentSummary = Static<typeof AgentSummary>;

/** `GET /api/agents`: the caller's agents, newest first. */
export const AgentList = Type.Object({
  agents: Type.Array(AgentSummary),
  count: Type.Integer(),
  status: Type.Literal('ok'),
});
export type AgentList = Static<typeof AgentList>;

/** One of the caller's agents, as `GET /api/agents/:id` answers it (agents.service.ts `findAgent`). */
export const AgentRecord = Type.Object({
  id: Type.String(),
  name: Type.String(),
  model: nullable(
    Type.String({
      description: 'the model the agent runs, read from the configuration its host applies; null when none is named or it cannot be read',
    }),
  ),
  modelSource: ModelSource,
  status: Type.String(),
  hostStatus: HostStatus,
  subdomain: nullable(Type.String()),
  url: nullable(Type.String()),
  websocketUrl: nullable(Type.String()),
  plan: nullable(Type.String()),
  primary: Type.Boolean({ description: 'the account’s primary agent: the one `/api/instance/:userId` and `/api/user/runtime` act on' }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type AgentRecord = Static<typeof AgentRecord>;

/** `GET /api/agents/:id`. */
export const AgentAnswer = Type.Object({ status: Type.Literal('ok'), agent: AgentRecord });
export type AgentAnswer = Static<typeof AgentAnswer>;

/**
 * `POST /api/provision` (and `POST /api/agents/provision`), provisioning.service.ts `ProvisionResult`: deployed by the
 * backend (`running`), or, when no backend answered, deployed directly through the hosting provider (`deploying`, then
 * followed on the agent's event stream). Each shape has required fields the other lacks, so exactly one matches.
 */
export const Provisioned = Type.Union([
  Type.Object({
    success: Type.Literal(true),
    userId: Type.String(),
    agentId: Type.String(),
    subdomain: Type.String(),
    url: nullable(Type.String()),
    status: Type.String(),
    streamKey: nullable(Type.String()),
    liveStreamId: nullable(Type.String()),
  }),
  Type.Object({
    success: Type.Literal(true),
    userId: Type.String(),
    agentId: Type.String(),
    status: Type.Literal('deploying'),
    url: Type.String(),
    controlUiUrl: Type.String(),
  }),
]);
export type Provisioned = Static<typeof Provisioned>;

/**
 * `GET /api/instance/:userId/stats`: the gateway's own health check. `health` is the gateway's `/healthz` answer as it
 * came (usually an object with `ok`), or `{ ok: false, error }` when it did not answer; `cpu` and `memory` are the
 * spec's named fallback `N/A` (spec §4.15: no per-agent readings here).
 */
export const InstanceStats = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  agentId: Type.String(),
  health: Type.Unknown({ description: 'the gateway’s `/healthz` answer, or `{ ok: false, error }`' }),
  cpu: Type.String(),
  memory: Type.String(),
});
export type InstanceStats = Static<typeof InstanceStats>;

// ---------------------------------------------------------------------------------------------------------------------
// The agent state machine (`@aop/core/agent-state`, issue #19).

export const AgentLifecycleStateSchema = Type.Union(
  AGENT_STATES.map((s) => Type.Literal(s)),
  { description: 'provisioning → starting → live ⇄ degraded → stopping → stopped; failed; updating' },
);
export const AgentActionSchema = Type.Union(AGENT_ACTIONS.map((a) => Type.Literal(a)));

/** `GET /api/agents/:id/health`: the agent's state, why, which actions are valid, and the evidence it was derived from. */
export const AgentHealthView = Type.Object({
  agentId: Type.String(),
  state: AgentLifecycleStateSchema,
  reason: Type.String({ description: 'why, in words' }),
  actions: Type.Array(AgentActionSchema, { description: 'the actions valid in this state' }),
  host: nullable(Type.String({ description: 'the host’s word for the process/container; null when no host knows the agent' })),
  live: Type.Boolean({ description: 'the gateway answered `/healthz`' }),
  ready: nullable(Type.Boolean({ description: 'the gateway’s `/readyz`; null when it was not asked or did not answer' })),
  failing: Type.Array(Type.String(), { description: 'what `/readyz` reports as failing' }),
  sharesGatewayWith: Type.Array(Type.String(), {
    description:
      'the caller’s other agents in the same gateway (issue #20): a restart, update, repair or memory reset restarts them too; empty for a gateway of its own',
  }),
  wakesAt: nullable(
    Type.String({
      description:
        'while `hibernated`: by when its host starts it for its next due cron job or heartbeat (ISO 8601, ahead of the job by the wake lead; its last idle check before this time does it); null otherwise, or when no job is due (a message or Start wakes it)',
    }),
  ),
  source: Type.Union([Type.Literal('host'), Type.Literal('gateway')], {
    description: '`host`: derived by the backend from its host; `gateway`: no host knows the agent, derived from its record and gateway',
  }),
  checkedAt: Type.String(),
});
export type AgentHealthView = Static<typeof AgentHealthView>;

/**
 * `POST /api/agents/:id/{start,stop,restart,update,repair,reset-memory}` (and `/api/instance/:userId/<action>`): the
 * backend's answer, plus the state the agent is in when the call answers. 200: the state the action asked for was
 * reached (`live`, or `stopped` for stop); 202: still on the way after the wait (`pending: true`, follow `events`).
 */
export const LifecycleAnswer = Type.Object(
  {
    success: Type.Boolean(),
    agentId: Type.String(),
    action: AgentActionSchema,
    state: AgentLifecycleStateSchema,
    reason: Type.String(),
    actions: Type.Array(AgentActionSchema),
    live: Type.Boolean({ description: 'the gateway answered `/healthz` when the call answered' }),
    ready: nullable(Type.Boolean({ description: 'the gateway’s `/readyz` when the call answered; null when not asked or not answered' })),
    pending: Type.Boolean({ description: 'true: the state asked for is not reached yet; follow `events`' }),
    events: Type.String({ description: 'the agent’s event stream, which pushes each change of state' }),
    // The backend's own fields, passed on (spec §4.15 reference shapes).
    status: Type.Optional(
      Type.String({ description: 'the backend’s word when reached (`active`, `stopped`); the state on the way (202)' }),
    ),
    message: Type.Optional(Type.String()),
    openclawVersion: Type.Optional(Type.String()),
    image: Type.Optional(Type.String()),
    previousImage: Type.Optional(nullable(Type.String())),
  },
  { additionalProperties: true, description: 'the backend’s own fields (`status`, `message`, `openclawVersion`, …) are kept' },
);
export type LifecycleAnswer = Static<typeof LifecycleAnswer>;

/** `PUT /api/agents/:id/primary`: the account's primary agent is now this one. */
export const PrimaryAnswer = Type.Object({ success: Type.Literal(true), primaryAgentId: Type.String(), url: nullable(Type.String()) });
export type PrimaryAnswer = Static<typeof PrimaryAnswer>;

// ---------------------------------------------------------------------------------------------------------------------
// `GET /api/agents/:id/events` (server-sent events, written by hand: these schemas type the payloads, they serialize
// nothing).

/** A `status` event: the agent's state, the record's status or the gateway's liveness/readiness changed. */
export const AgentStatusEvent = Type.Object({
  agentId: Type.String(),
  status: Type.String(),
  url: nullable(Type.String()),
  live: Type.Boolean(),
  ready: Type.Boolean(),
  /** The state machine's state, why, and the valid actions (issue #19). */
  state: AgentLifecycleStateSchema,
  reason: Type.String(),
  actions: Type.Array(AgentActionSchema),
  /** The caller's other agents in the same gateway (issue #20; `AgentHealthView.sharesGatewayWith`). */
  sharesGatewayWith: Type.Array(Type.String()),
  /** `AgentHealthView.wakesAt`. */
  wakesAt: nullable(Type.String()),
  at: Type.String(),
});
export type AgentStatusEvent = Static<typeof AgentStatusEvent>;

/** The `done` event ending the stream: the gateway is ready or the agent is in `error`; `deleted` (no `ready`) when the record went away. */
export const AgentDoneEvent = Type.Object({ status: Type.String(), ready: Type.Optional(Type.Boolean()) });
export type AgentDoneEvent = Static<typeof AgentDoneEvent>;
