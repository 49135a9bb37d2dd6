import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebContext } from '../../platform/context.js';
import { requireUser } from '../../platform/http/auth.js';
import { ChatBody, ChatHistory, ChatReply, GatewayChatBody } from './chat.schemas.js';
import {
  CHAT_RATE_LIMIT,
  DEFAULT_SESSION_KEY,
  HISTORY_DEFAULT_LIMIT,
  HISTORY_MAX_LIMIT,
  chatHistory,
  gatewayChat,
  gatewayStatus,
  restAgentChat,
} from './agent-chat.service.js';

/** 401 before the body is looked at: an anonymous caller learns nothing about what a valid body is. */
const authenticate = async (request: FastifyRequest) => {
  await requireUser(request);
};

/**
 * Spec §4.4 chat with one's agent: `POST /api/chat` (OpenAI-style REST, stored history, `GET /api/chat`), the
 * WebSocket fallback `POST /api/gateway/chat`, and `GET /api/gateway/status`. Each body field answers with the spec's
 * words for it (chat.schemas.ts).
 */
export async function chatRoutes(app: App, { config, afterStart }: Pick<WebContext, 'config' | 'afterStart'>): Promise<void> {
  const deps = { db: app.db, backend: app.backend, config, clock: app.clock, afterStart };
  const chatLimit = app.rateLimit(CHAT_RATE_LIMIT);

  app.post(
    '/api/gateway/chat',
    {
      onRequest: chatLimit,
      preValidation: authenticate,
      config: { invalidBody: 'MESSAGE_REQUIRED' },
      schema: {
        tags: ['chat'],
        body: GatewayChatBody,
        response: {
          200: Type.Object({ success: Type.Literal(true), reply: Type.String(), agentId: Type.String(), agentName: Type.String() }),
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { message } = request.body;
      const sessionKey = request.body.sessionKey || DEFAULT_SESSION_KEY;
      return gatewayChat(deps, request.log, user, { message, sessionKey });
    },
  );

  app.get('/api/gateway/status', { schema: { tags: ['chat'] } }, async (request) => {
    const user = await requireUser(request);
    return gatewayStatus(deps, request.log, user);
  });

  app.post(
    '/api/chat',
    {
      onRequest: chatLimit,
      preValidation: authenticate,
      config: { invalidBody: 'MESSAGE_REQUIRED' },
      schema: {
        tags: ['chat'],
        body: ChatBody,
        response: {
          200: ChatReply,
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { message, agentId } = request.body;
      const sessionKey = request.body.sessionKey || DEFAULT_SESSION_KEY;
      return restAgentChat(deps, request.log, user, { message, sessionKey, agentId: agentId || undefined });
    },
  );

  app.get(
    '/api/chat',
    {
      onRequest: chatLimit,
      preValidation: authenticate,
      schema: {
        tags: ['chat'],
        querystring: Type.Object({
          agentId: Type.Optional(Type.String({ maxLength: 64 })),
          sessionKey: Type.Optional(Type.String({ maxLength: 100 })),
          limit: Type.Optional(Type.String({ maxLength: 10 })),
          before: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        response: { 200: ChatHistory },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const asked = Number(request.query.limit);
      const limit = Number.isInteger(asked) && asked > 0 ? Math.min(asked, HISTORY_MAX_LIMIT) : HISTORY_DEFAULT_LIMIT;
      return chatHistory(app.db, user.id, {
        agentId: request.query.agentId || undefined,
        sessionKey: request.query.sessionKey || undefined,
        before: request.query.before || undefined,
        limit,
      });
    },
  );
}
