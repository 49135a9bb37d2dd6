import { type App, DomainError } from '@aop/core';
import { GatewayError, messageText } from '@aop/gateway-client';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import {
  type GatewayTarget,
  GatewayUnavailableError,
  agentSessionKey,
  ownAgentGateway,
  withGateway,
} from '../../platform/clients/user-gateway.js';

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
      const sessionKey = request.query.sessionKey || 'main';
      const asked = Number(request.query.limit);
      const limit = Number.isInteger(asked) && asked > 0 ? Math.min(asked, MAX_LIMIT) : DEFAULT_LIMIT;

      let target: GatewayTarget;
      try {
        // 404 / 409 when the agent is not the caller's or has no address yet.
        target = await ownAgentGateway(app, user, request.params.id);
      } catch (err) {
        if (!(err instanceof GatewayUnavailableError)) throw err;
        if (err.reason === 'backend-unreachable') throw new DomainError('BACKEND_UNREACHABLE');
        throw new DomainError('GATEWAY_TOKEN_UNAVAILABLE', { detail: 'the backend gave none' });
      }

      try {
        // A gateway still starting (`UNAVAILABLE`) is asked again for up to 10 s, as a history read may come just then.
        const history = await withGateway(
          target,
          25_000,
          (conn) =>
            conn.request<{ sessionKey?: string; messages?: HistoryMessage[]; totalMessages?: number; hasMore?: boolean }>(
              'chat.history',
              { sessionKey: agentSessionKey(target, sessionKey), limit },
              { timeoutMs: 15_000 },
            ),
          { retryDeadlineMs: 10_000 },
        );
        const messages = (history.messages ?? []).map((m) => ({
          role: m.role ?? 'unknown',
          content: messageText({ role: m.role ?? 'unknown', content: m.content ?? '' } as Parameters<typeof messageText>[0]),
          timestamp: m.timestamp ?? null,
          model: m.model ?? null,
        }));
        return {
          agentId: request.params.id,
          sessionKey: history.sessionKey ?? sessionKey,
          messages,
          total: history.totalMessages ?? messages.length,
          hasMore: history.hasMore ?? false,
        };
      } catch (err) {
        if (err instanceof GatewayError) throw new DomainError('AGENT_GATEWAY_ERROR', { detail: err.message });
        throw err;
      }
    },
  );
}
