import { type App, DomainError } from '@aop/core';
import { GatewayError, connectGateway, messageText } from '@aop/gateway-client';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import { BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { BackendGatewayConnection } from '../../platform/clients/backend-gateway.js';
import { backendCaller } from '../../platform/sessions.js';
import { findMessagesAgent } from './messages.service.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

interface HistoryMessage {
  role?: string;
  content?: string | { type?: string; text?: string }[];
  timestamp?: number | string;
  model?: string;
}

/**
 * `GET /api/agents/:id/messages` (spec §4.15): the conversation history of one of
 * the caller's agents, read from its gateway (`chat.history` over the gateway
 * WebSocket, authenticated with the agent's token from the backend).
 */
export async function agentMessageRoutes(app: App): Promise<void> {
  app.get(
    '/api/agents/:id/messages',
    {
      schema: {
        tags: ['agents'],
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object({ sessionKey: Type.Optional(Type.String({ maxLength: 200 })), limit: Type.Optional(Type.String()) }),
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const agent = await findMessagesAgent(app.db, user.id, request.params.id);
      if (!agent) throw new DomainError('AGENT_NOT_FOUND');
      if (!agent.url) throw new DomainError('AGENT_NOT_DEPLOYED');
      const sessionKey = request.query.sessionKey || 'main';
      const asked = Number(request.query.limit);
      const limit = Number.isInteger(asked) && asked > 0 ? Math.min(asked, MAX_LIMIT) : DEFAULT_LIMIT;

      let token: string | undefined;
      let viaBackend = false;
      try {
        const answer = await app.backend.request<{ token?: string; error?: string; control?: string }>(
          `/api/agents/${encodeURIComponent(agent.id)}/token`,
          { caller: backendCaller(user) },
        );
        if (answer.status !== 200 || !answer.body.token)
          throw new DomainError('GATEWAY_TOKEN_UNAVAILABLE', { detail: answer.body.error ?? `backend answered ${answer.status}` });
        token = answer.body.token;
        // A container or hosted agent gives our token-only socket no scopes: the backend reads it with its device.
        viaBackend = answer.body.control === 'backend';
      } catch (err) {
        if (err instanceof BackendUnavailableError) throw new DomainError('BACKEND_UNREACHABLE');
        throw err;
      }

      let conn: Awaited<ReturnType<typeof connectGateway>> | undefined;
      try {
        conn = viaBackend
          ? new BackendGatewayConnection(
              { backend: app.backend, caller: backendCaller(user), agentId: agent.id },
              performance.now() + 25_000,
            )
          : await connectGateway({ url: agent.url.replace(/^http/, 'ws'), token, handshakeTimeoutMs: 10_000, retryDeadlineMs: 10_000 });
        const history = (await conn.request('chat.history', { sessionKey, limit }, { timeoutMs: 15_000 })) as {
          sessionKey?: string;
          messages?: HistoryMessage[];
          totalMessages?: number;
          hasMore?: boolean;
        };
        const messages = (history.messages ?? []).map((m) => ({
          role: m.role ?? 'unknown',
          content: messageText({ role: m.role ?? 'unknown', content: m.content ?? '' } as Parameters<typeof messageText>[0]),
          timestamp: m.timestamp ?? null,
          model: m.model ?? null,
        }));
        return {
          agentId: agent.id,
          sessionKey: history.sessionKey ?? sessionKey,
          messages,
          total: history.totalMessages ?? messages.length,
          hasMore: history.hasMore ?? false,
        };
      } catch (err) {
        if (err instanceof GatewayError) throw new DomainError('AGENT_GATEWAY_ERROR', { detail: err.message });
        throw err;
      } finally {
        conn?.close();
      }
    },
  );
}
