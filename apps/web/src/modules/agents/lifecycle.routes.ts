import { type App, DomainError } from '@aop/core';
import { AGENT_ACTIONS, type AgentAction, targetState } from '@aop/core/agent-state';
import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { requireUser } from '../../platform/http/auth.js';
import type { AuthUser } from '../../platform/sessions.js';
import { AgentHealthView, LifecycleAnswer, PrimaryAnswer } from './agents.schemas.js';
import { setPrimaryAgent } from './agents.service.js';
import { requireCallersAgent } from '../../platform/owned-agent.js';
import { eventsPath, type LifecycleDeps, readAgentState, runLifecycle } from './lifecycle.service.js';
import type { AfterStart } from './after-start.service.js';
import type { WebContext } from '../../platform/context.js';

/** The failure shape of the lifecycle routes (`/api/instance/:userId/*` answered it first; the per-agent ones match). */
export const FAILED = { success: false, status: 'error' } as const;

/** The lifecycle routes' rate limit: `/api/instance/*`'s (spec §8, 30/min), one count for both ways to the same actions. */
export const lifecycleLimit = (app: App) => app.rateLimit({ name: 'instance', max: 30, windowMs: 60_000, message: 'Too many requests' });

const Params = Type.Object({ id: Type.String({ maxLength: 64 }) });
const UpdateBody = Type.Optional(
  Type.Object(
    { image: Type.Optional(Type.Unknown({ description: 'the OpenClaw version to install (checked by the backend)' })) },
    { additionalProperties: true },
  ),
);

/** The lifecycle routes' dependencies: the lifecycle's, and what follows a start once the agent is live. */
export type LifecycleRouteDeps = LifecycleDeps & { afterStart: AfterStart };

/** The dependencies of a plugin serving lifecycle actions. */
export function lifecycleRouteDeps(app: App, { config, afterStart }: WebContext): LifecycleRouteDeps {
  return { db: app.db, backend: app.backend, clock: app.clock, waitMs: config.lifecycleWaitMs, afterStart };
}

/**
 * Runs a lifecycle action on one of `user`'s agents and answers it: 200 once the agent is in the state the action
 * asked for, 202 with the state it is in when the wait ran out (follow `events`), 500 when it ended `failed` (spec
 * §4.15: failures are 500 with a message), the backend's own status and body when it refused, 502 when no backend
 * answered. An action that starts the agent is followed until it is live, after the answer (`AfterStart`). Shared by
 * `POST /api/agents/:id/<action>` and `POST /api/instance/:userId/<action>`.
 */
export async function answerLifecycle(
  deps: LifecycleRouteDeps,
  reply: FastifyReply,
  user: AuthUser,
  agentId: string,
  action: AgentAction,
  body: unknown,
): Promise<FastifyReply> {
  let outcome: Awaited<ReturnType<typeof runLifecycle>>;
  try {
    outcome = await runLifecycle(deps, user, agentId, action, body);
  } catch (err) {
    if (err instanceof BackendUnavailableError) return reply.code(502).send({ ...FAILED, error: 'Backend unreachable' });
    throw err;
  }
  if (outcome.kind === 'refused') return reply.code(outcome.status).send({ ...FAILED, ...outcome.body });
  const { state } = outcome;
  // Started (or on its way): what was saved for it while it was stopped goes onto its gateway once it is live.
  if (targetState(action) === 'live' && outcome.kind !== 'failed') deps.afterStart.follow(user, agentId, state, reply.log);
  const facts = {
    agentId,
    action,
    state: state.state,
    reason: state.reason,
    actions: state.actions,
    live: state.live,
    ready: state.ready,
    events: eventsPath(agentId),
  };
  if (outcome.kind === 'failed') {
    // The host gave up on the agent after the backend accepted the action: the reason is the host's, relayed.
    return reply.code(500).send({ ...FAILED, error: `The agent failed: ${state.reason}`, ...facts });
  }
  if (outcome.kind === 'pending') {
    // Not there yet: the backend's `status` would claim the end state, so the answer says where the agent is now.
    return reply.code(202).send({ ...outcome.body, success: true, status: state.state, ...facts, pending: true });
  }
  return reply.code(200).send({ ...outcome.body, success: true, ...facts, pending: false });
}

/**
 * Issue #19: every agent of a customer by its own id. `POST /api/agents/:id/{start,stop,restart,update,repair,
 * reset-memory}`, `GET /api/agents/:id/health` (its state from the one state machine) and `PUT /api/agents/:id/primary`
 * (the account's primary agent, the one `/api/instance/:userId` and `/api/user/runtime` mean). Session or API key; only
 * the owner — another user's agent is 404 like a missing one.
 */
export async function lifecycleRoutes(app: App, context: WebContext): Promise<void> {
  const limit = lifecycleLimit(app);
  const agentsLimit = app.rateLimit({ name: 'agents', max: 100, windowMs: 60_000, message: 'Too many requests' });
  const deps = lifecycleRouteDeps(app, context);

  const owned = async (user: AuthUser, agentId: string) => {
    await requireCallersAgent(app.db, user.id, agentId);
  };

  for (const action of AGENT_ACTIONS) {
    app.post(
      `/api/agents/:id/${action}`,
      {
        onRequest: limit,
        schema: {
          tags: ['agents'],
          params: Params,
          ...(action === 'update' ? { body: UpdateBody } : {}),
          response: { 200: LifecycleAnswer, 202: LifecycleAnswer },
        },
      },
      async (request, reply) => {
        const user = await requireUser(request);
        await owned(user, request.params.id);
        return answerLifecycle(deps, reply, user, request.params.id, action, request.body ?? {});
      },
    );
  }

  app.get(
    '/api/agents/:id/health',
    // A read, listed per agent by the dashboard: the `/api/agents` limit (spec §8, 100/min), not the actions' 30/min.
    { onRequest: agentsLimit, schema: { tags: ['agents'], params: Params, response: { 200: AgentHealthView } } },
    async (request) => {
      const user = await requireUser(request);
      const state = await readAgentState(deps, user, request.params.id);
      if (!state) throw new DomainError('AGENT_NOT_FOUND');
      return state;
    },
  );

  app.put(
    '/api/agents/:id/primary',
    { onRequest: agentsLimit, schema: { tags: ['agents'], params: Params, response: { 200: PrimaryAnswer } } },
    async (request) => {
      const user = await requireUser(request);
      const set = await setPrimaryAgent(app.db, user.id, request.params.id);
      if (!set) throw new DomainError('AGENT_NOT_FOUND');
      return { success: true as const, primaryAgentId: request.params.id, url: set.url };
    },
  );
}
