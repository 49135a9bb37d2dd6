import { type App, DomainError } from '@aop/core';
import { FleetBookingsSchema, FleetCostsSchema, FleetGraphSchema, FleetTracesSchema } from '@aop/core/mission-control';
import type { AgentHost } from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../../config.js';
import { readUserContext, requireInternalKey } from '../../plugins/auth.js';
import { createFleetFitness } from '../../services/fleet-fitness.js';
import { type MissionControlDeps, fleetBookings, fleetCosts, fleetGraph, fleetTraces } from '../../services/mission-control.js';

export interface MissionControlRoutesOptions {
  config: BackendConfig;
  /** Absent when no provisioner is configured: the graph is then the fallback node and traces are empty. */
  host: AgentHost | undefined;
}

/** Our user ids are strings (`usr_…`); the spec's "number" ids are accepted as their digits. */
const USER_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const Query = Type.Object({
  userId: Type.Optional(Type.Unknown({ description: 'the user whose fleet is shown (required)' })),
});

/**
 * The user the fleet belongs to (spec §4.17, §5): the `userId` query, required (401 `Unauthorized` without it: no user
 * is named), 400 `Invalid userId` when it cannot be a user id. When the caller also sends a user context (the web
 * service does), it is verified as on every backend route and must name the same user (403 `Forbidden`).
 */
function fleetUser(request: FastifyRequest, config: BackendConfig): string {
  const raw = (request.query as { userId?: unknown }).userId;
  if (raw === undefined || raw === '') throw new DomainError('UNAUTHORIZED');
  if (typeof raw !== 'string' || !USER_ID.test(raw)) throw new DomainError('INVALID_USERID');
  if (request.headers['x-user-id'] !== undefined || request.headers['x-user-signature'] !== undefined) {
    const context = readUserContext(request.headers, config.userContextSecret, request.server.clock());
    if (context.userId !== raw) throw new DomainError('FORBIDDEN');
  }
  return raw;
}

/**
 * Spec §4.17 mission control (backend): the fleet graph, traces, costs and bookings of one user. Bearer internal key
 * (401 `Unauthorized`, 403 `Forbidden`, 500 `Server misconfigured`) plus the `userId` query.
 */
export async function missionControlRoutes(app: App, { config, host }: MissionControlRoutesOptions): Promise<void> {
  app.addHook('onRequest', requireInternalKey(config.internalApiKey));
  const fitness = createFleetFitness({ gatewayUrl: config.x402.gatewayUrl, timeoutMs: config.x402.fitnessTimeoutMs, log: app.log });
  const deps: MissionControlDeps = { config, db: app.db, host, log: app.log, fitness };
  const schema = (response: object, summary: string) => ({
    tags: ['mission-control'],
    summary,
    querystring: Query,
    response: { 200: response },
  });

  app.get(
    '/mission-control/fleet/graph',
    { schema: schema(FleetGraphSchema, "The user's agents as a graph, live from the agent host") },
    async (request) => fleetGraph(deps, fleetUser(request, config), app.clock()),
  );

  app.get(
    '/mission-control/fleet/traces',
    { schema: schema(FleetTracesSchema, "Up to 20 sessions of the user's running agents, newest first") },
    async (request) => fleetTraces(deps, fleetUser(request, config)),
  );

  app.get('/mission-control/fleet/costs', { schema: schema(FleetCostsSchema, "Spend from the user's usage ledger") }, async (request) =>
    fleetCosts(app.db, fleetUser(request, config)),
  );

  app.get(
    '/mission-control/fleet/bookings',
    { schema: schema(FleetBookingsSchema, "Booking negotiations of the user's agents, most recently moved first") },
    async (request) => fleetBookings(app.db, fleetUser(request, config)),
  );
}
