import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireUser } from '../../platform/http/auth.js';
import { BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { backendCaller } from '../../platform/sessions.js';
import { findWalletAddress } from './agents.service.js';
import { requireCallersAgent } from '../../platform/owned-agent.js';

const Params = Type.Object({ id: Type.String({ maxLength: 64 }) });

// The type is the backend's to check, and it does so only after the web has found the agent among the caller's (404
// otherwise): a type here would answer 400 for someone else's agent, so it stays untyped and passes through.
const VerifyBody = Type.Object({
  type: Type.Optional(Type.Unknown({ description: 'the verification type (checked by the backend)' })),
});

/**
 * Per-agent calls the web passes to the backend for the signed-in owner (spec
 * §4.15): verification — where the web itself sets `verified: true` and
 * computes `verifierAddress` and `metadata`. An agent's configuration is the
 * agent-config module's (`/api/agents/:id/config*`).
 */
export async function agentProxyRoutes(app: App): Promise<void> {
  async function forward(
    request: FastifyRequest,
    reply: FastifyReply,
    method: 'GET' | 'PUT' | 'POST' | 'DELETE',
    suffix: string,
    body?: unknown,
  ) {
    const user = await requireUser(request);
    const { id } = request.params as { id: string };
    await requireCallersAgent(app.db, user.id, id);
    try {
      const answer = await app.backend.request(`/api/agents/${encodeURIComponent(id)}${suffix}`, {
        method,
        caller: backendCaller(user),
        ...(body === undefined ? {} : { body }),
      });
      return reply.code(answer.status).send(answer.body);
    } catch (err) {
      if (err instanceof BackendUnavailableError) throw new DomainError('BACKEND_UNREACHABLE');
      throw err;
    }
  }

  app.post('/api/agents/:id/verify', { schema: { tags: ['agents'], params: Params, body: VerifyBody } }, async (request, reply) => {
    const user = await requireUser(request);
    const walletAddress = await findWalletAddress(app.db, user.id);
    return forward(request, reply, 'POST', '/verify', {
      type: request.body.type,
      verified: true,
      verifierAddress: walletAddress,
      metadata: { verifiedBy: user.id, source: 'web', requestId: request.id },
    });
  });

  app.delete('/api/agents/:id/verify', { schema: { tags: ['agents'], params: Params } }, (request, reply) =>
    forward(request, reply, 'DELETE', '/verify'),
  );
}
