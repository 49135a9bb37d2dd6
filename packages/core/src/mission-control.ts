import { type Static, Type } from '@sinclair/typebox';

/**
 * Mission-control objects (spec §2.10) and the answers both services give when there is nothing live to show
 * (spec §4.17): the backend builds them, the web service relays them or answers its defaults. One definition keeps
 * the two services' shapes and fallbacks identical.
 */

/** Spec §8: traces are listed up to 20, newest first. */
export const FLEET_TRACES_MAX = 20;

/** Where the graph is drawn around: the orchestrator (and the fallback node) sits here. */
export const FLEET_CENTER = Object.freeze({ x: 400, y: 300 });

export const FleetNodeSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Type.Union([Type.Literal('orchestrator'), Type.Literal('specialist'), Type.Literal('worker')]),
  status: Type.Union([Type.Literal('active'), Type.Literal('idle'), Type.Literal('stale'), Type.Literal('offline')]),
  x: Type.Number(),
  y: Type.Number(),
  load: Type.Number({ minimum: 0, maximum: 100, description: 'CPU of the agent, percent of one core, clamped to 0-100' }),
  memory: Type.Number({ minimum: 0, maximum: 100, description: "resident memory, percent of the plan's memory limit" }),
  fitness: Type.Optional(
    Type.Number({ minimum: 0, maximum: 100, description: "live only: the agent's colony fitness score, when the x402 gateway gives one" }),
  ),
  walletAddress: Type.Optional(Type.String({ description: "live only: the agent's underground wallet, when it has one" })),
  sharesGatewayWith: Type.Optional(
    Type.Array(Type.String(), {
      description:
        "live only: the user's other agents in the same gateway (issue #20); its load and memory are then that gateway's, the same figures for each of them",
    }),
  ),
  asleep: Type.Optional(
    Type.Boolean({
      description:
        'live only: the agent is hibernated (issue #20): `idle`, with no process, so load and memory are 0; a message or its next due job wakes it',
    }),
  ),
  children: Type.Optional(Type.Number({ description: 'parent only: how many other agents it coordinates' })),
  url: Type.Optional(Type.String({ description: "parent only: the agent's public URL" })),
});
export type FleetNode = Static<typeof FleetNodeSchema>;
export type FleetRole = FleetNode['role'];
export type FleetNodeStatus = FleetNode['status'];

export const FleetEdgeSchema = Type.Object({
  id: Type.String(),
  from: Type.String(),
  to: Type.String(),
  strength: Type.Number({ minimum: 0, maximum: 1 }),
  basis: Type.Optional(
    Type.Union([Type.Literal('messages'), Type.Literal('work')], {
      description:
        "live only: what `strength` measures. `messages`: what one agent sent the other over the underground bus in the last 7 days, relative to the busiest pair. `work`: the agents have not messaged each other, so each edge links the orchestrator to an agent and `strength` is that agent's share of the fleet's recent work (ledger tokens, relative to the busiest)",
    }),
  ),
});
export type FleetEdge = Static<typeof FleetEdgeSchema>;

export const FleetGraphSchema = Type.Object({
  nodes: Type.Array(FleetNodeSchema),
  edges: Type.Array(FleetEdgeSchema),
  timestamp: Type.String({ description: 'ISO 8601' }),
  source: Type.Union([Type.Literal('soul'), Type.Literal('fallback'), Type.Literal('unauthenticated')]),
  nodeCount: Type.Optional(Type.Integer({ description: 'present with `source: soul`' })),
});
export type FleetGraph = Static<typeof FleetGraphSchema>;

export const FleetTraceSchema = Type.Object({
  id: Type.String(),
  status: Type.Union([Type.Literal('completed'), Type.Literal('running'), Type.Literal('idle')]),
  description: Type.String(),
  startedAt: Type.String({ description: 'ISO 8601' }),
  completedAt: Type.Union([Type.String({ description: 'ISO 8601' }), Type.Null()]),
  tokensUsed: Type.Number(),
  costUSD: Type.Number({ description: 'currently always 0' }),
  model: Type.String(),
});
export type FleetTrace = Static<typeof FleetTraceSchema>;

export const FleetTracesSchema = Type.Array(FleetTraceSchema, { maxItems: FLEET_TRACES_MAX });

export const FleetCostsSchema = Type.Object({
  costs: Type.Array(Type.Unknown(), { description: 'currently empty' }),
  totalSpend: Type.Number({ description: "USD: every call on the user's usage ledger" }),
  managedAiCost: Type.Number({ description: 'USD: the calls the platform runs on its own AI provider keys' }),
  coordinationRevenue: Type.Number({ description: 'USD: currently always 0' }),
});
export type FleetCosts = Static<typeof FleetCostsSchema>;

/** A booking negotiation one of the user's agents takes part in (the underground bus's `BOOKING_*` messages). */
export const FleetBookingSchema = Type.Object({
  id: Type.String({ description: 'the messageId of the BOOKING_REQUEST that opened it' }),
  status: Type.Union([Type.Literal('open'), Type.Literal('accepted'), Type.Literal('declined'), Type.Literal('cancelled')]),
  round: Type.Integer(),
  requesterAgentId: Type.String(),
  responderAgentId: Type.String(),
  terms: Type.Record(Type.String(), Type.Unknown(), {
    description: '`fee` (USDC), `date` (ISO 8601); optional `eventId`, `venue`, `notes`',
  }),
  lastOfferBy: Type.String(),
  createdAt: Type.String({ description: 'ISO 8601' }),
  updatedAt: Type.String({ description: 'ISO 8601' }),
});
export type FleetBooking = Static<typeof FleetBookingSchema>;

export const FleetBookingsSchema = Type.Object({ bookings: Type.Array(FleetBookingSchema) });
export type FleetBookings = Static<typeof FleetBookingsSchema>;

/**
 * The graph when no agent can be shown (spec §4.17): one offline `atlas` orchestrator at the centre, no load, no
 * memory, no edges, and no `nodeCount`. `fallback` when none of the user's agents is reachable, `unauthenticated`
 * for a caller without a session (web).
 */
export function fallbackFleetGraph(source: 'fallback' | 'unauthenticated', now: Date): FleetGraph {
  return {
    nodes: [{ id: 'atlas', name: 'atlas', role: 'orchestrator', status: 'offline', ...FLEET_CENTER, load: 0, memory: 0 }],
    edges: [],
    timestamp: now.toISOString(),
    source,
  };
}
