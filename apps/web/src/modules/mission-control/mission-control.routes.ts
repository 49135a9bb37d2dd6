import type { App } from '@aop/core';
import { FleetBookingsSchema, FleetGraphSchema, FleetTracesSchema, fallbackFleetGraph } from '@aop/core/mission-control';
import { ledgerSpend, roundMoney } from '@aop/db';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { FastifyRequest } from 'fastify';
import { BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { type AuthUser, backendCaller } from '../../platform/sessions.js';
import { WebCosts } from './mission-control.schemas.js';

/** The fleet graph can take a few host probes (5 s each at most, run in parallel) on the backend. */
const BACKEND_TIMEOUT_MS = 15_000;

interface Area {
  path: string;
  summary: string;
  /** What the backend must answer for it to be relayed. */
  backendSchema: TSchema;
  responseSchema: TSchema;
  /** The answer for a caller without a session (spec §4.17). */
  unauthenticated: (now: Date) => unknown;
  /** The answer when the backend cannot give one (down, or no usable answer). */
  fallback: (now: Date) => unknown;
}

/**
 * Spec §4.17: the views relayed from the backend, with their unauthenticated defaults and their fallbacks when the
 * backend is down. Costs are not among them: see `costs` below.
 */
const AREAS: Area[] = [
  {
    path: 'graph',
    summary: "The signed-in user's agents as a graph",
    backendSchema: FleetGraphSchema,
    responseSchema: FleetGraphSchema,
    unauthenticated: (now) => fallbackFleetGraph('unauthenticated', now),
    fallback: (now) => fallbackFleetGraph('fallback', now),
  },
  {
    path: 'traces',
    summary: "Up to 20 sessions of the signed-in user's agents, newest first",
    backendSchema: FleetTracesSchema,
    responseSchema: FleetTracesSchema,
    unauthenticated: () => [],
    fallback: () => [],
  },
  {
    path: 'bookings',
    summary: 'Bookings (currently empty)',
    backendSchema: FleetBookingsSchema,
    responseSchema: FleetBookingsSchema,
    unauthenticated: () => ({ bookings: [] }),
    fallback: () => ({ bookings: [] }),
  },
];

/**
 * Spec §4.17 mission control (web): the session's user's fleet views, relayed from the backend (costs excepted) (internal key, signed
 * user context and the `userId` query). A caller without a session gets 200 with the spec's defaults; when the backend
 * is unreachable or gives no usable answer, the same shapes with the graph's `source: 'fallback'`.
 */
export async function missionControlRoutes(app: App): Promise<void> {
  async function relay(area: Area, request: FastifyRequest, user: AuthUser): Promise<unknown> {
    const now = new Date(app.clock());
    try {
      const answer = await app.backend.request(`/api/mission-control/fleet/${area.path}`, {
        caller: backendCaller(user),
        query: { userId: user.id },
        timeoutMs: BACKEND_TIMEOUT_MS,
      });
      if (answer.status === 200 && Value.Check(area.backendSchema, answer.body)) return answer.body;
      request.log.warn({ status: answer.status, area: area.path }, 'mission control: backend gave no usable answer');
    } catch (err) {
      if (!(err instanceof BackendUnavailableError)) throw err;
      request.log.warn({ reason: err.message, area: area.path }, 'mission control: backend unreachable');
    }
    return area.fallback(now);
  }

  // Spend is read from this service's own usage ledger, the one the cost dashboard (`/api/dashboard/cost`) reads and
  // every web chat writes, with the same sum (`ledgerSpend`). Relayed from the backend it came from the backend's
  // ledger, which with embedded databases is another database holding only the backend's own AI calls: mission
  // control showed $0.00 while Costs showed the agent's spend (issue #19).
  app.get(
    '/api/mission-control/fleet/costs',
    {
      schema: {
        tags: ['mission-control'],
        summary: "Spend from the signed-in user's usage ledger (all time)",
        response: { 200: WebCosts },
      },
    },
    async (request) => {
      const user = await request.currentUser();
      if (!user) return { costs: [] };
      const spend = await app.db.withUser(user.id, (trx) => ledgerSpend(trx, user.id));
      return { costs: [], totalSpend: roundMoney(spend.total), managedAiCost: roundMoney(spend.managed), coordinationRevenue: 0 };
    },
  );

  for (const area of AREAS) {
    app.get(
      `/api/mission-control/fleet/${area.path}`,
      { schema: { tags: ['mission-control'], summary: area.summary, response: { 200: area.responseSchema } } },
      async (request) => {
        const user = await request.currentUser();
        if (!user) return area.unauthenticated(new Date(app.clock()));
        return relay(area, request, user);
      },
    );
  }
}
