import { type Static, type TSchema, Type } from '@sinclair/typebox';

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** One of `GET /api/agents`' agents (agents.service.ts `listAgents`). */
export const AgentSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  model: nullable(Type.String()),
  status: Type.String(),
  url: nullable(Type.String()),
  websocketUrl: nullable(Type.String({ description: 'the gateway URL with `ws` for `http`' })),
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
  model: nullable(Type.String()),
  status: Type.String(),
  subdomain: nullable(Type.String()),
  url: nullable(Type.String()),
  websocketUrl: nullable(Type.String()),
  plan: nullable(Type.String()),
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
// `GET /api/agents/:id/events` (server-sent events, written by hand: these schemas type the payloads, they serialize
// nothing).

/** A `status` event: the record's status or the gateway's liveness/readiness changed. */
export const AgentStatusEvent = Type.Object({
  agentId: Type.String(),
  status: Type.String(),
  url: nullable(Type.String()),
  live: Type.Boolean(),
  ready: Type.Boolean(),
  at: Type.String(),
});
export type AgentStatusEvent = Static<typeof AgentStatusEvent>;

/** The `done` event ending the stream: the gateway is ready or the agent is in `error`; `deleted` (no `ready`) when the record went away. */
export const AgentDoneEvent = Type.Object({ status: Type.String(), ready: Type.Optional(Type.Boolean()) });
export type AgentDoneEvent = Static<typeof AgentDoneEvent>;
