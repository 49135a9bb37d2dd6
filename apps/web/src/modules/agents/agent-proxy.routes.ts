import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireUser } from '../../platform/http/auth.js';
import { backendPath, relayJson } from '../../platform/clients/backend-proxy.js';
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
  /** The caller's own agent only (404 otherwise), then the backend's same route. */
  async function forward(request: FastifyRequest, reply: FastifyReply, method: 'POST' | 'DELETE', body?: unknown) {
    const user = await requireUser(request);
    const params = request.params as { id: string };
    await requireCallersAgent(app.db, user.id, params.id);
    const path = backendPath('/api/agents/:id/verify', params);
    return relayJson(app.backend, request, reply, { method, path, user, ...(body === undefined ? {} : { body }) });
  }

  app.post('/api/agents/:id/verify', { schema: { tags: ['agents'], params: Params, body: VerifyBody } }, async (request, reply) => {
    const user = await requireUser(request);
    const walletAddress = await findWalletAddress(app.db, user.id);
    return forward(request, reply, 'POST', {
      type: request.body.type,
      verified: true,
      verifierAddress: walletAddress,
      metadata: { verifiedBy: user.id, source: 'web', requestId: request.id },
    });
  });

  app.delete('/api/agents/:id/verify', { schema: { tags: ['agents'], params: Params } }, (request, reply) =>
    forward(request, reply, 'DELETE'),
  );
}
