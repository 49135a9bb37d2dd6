import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireUser } from '../../platform/http/auth.js';
import { ChatReply } from './chat.schemas.js';
import {
  HISTORY_DEFAULT_LIMIT,
  HISTORY_MAX_LIMIT,
  chatHistory,
  checkMessage,
  checkSessionKey,
  gatewayChat,
  gatewayStatus,
  restAgentChat,
} from './agent-chat.service.js';

const MINUTE = 60_000;

/** Spec §8 "Web rate: chat 60/min". */
export const CHAT_LIMIT_PER_MINUTE = 60;

/** 401 before the body is looked at: an anonymous caller learns nothing about what a valid body is. */
const authenticate = async (request: FastifyRequest) => {
  await requireUser(request);
};

/**
 * Spec §4.4 chat with one's agent: `POST /api/chat` (OpenAI-style REST, stored history, `GET /api/chat`), the
 * WebSocket fallback `POST /api/gateway/chat`, and `GET /api/gateway/status`. Bodies are read leniently by the schema
 * and checked in the service, so each bad body gets the spec's words.
 */
export async function chatRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const deps = { db: app.db, backend: app.backend, config };
  // One budget for every chat path of a client: both open a turn on an agent.
  const chatLimit = app.rateLimit({ name: 'chat', max: CHAT_LIMIT_PER_MINUTE, windowMs: MINUTE, message: 'Too many requests' });

  app.post(
    '/api/gateway/chat',
    {
      onRequest: chatLimit,
      preValidation: authenticate,
      config: { invalidBodyMessage: 'Message required' },
      schema: {
        tags: ['chat'],
        body: Type.Object({ message: Type.Optional(Type.Unknown()), sessionKey: Type.Optional(Type.Unknown()) }),
        response: {
          200: Type.Object({ success: Type.Literal(true), reply: Type.String(), agentId: Type.String(), agentName: Type.String() }),
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const message = checkMessage(request.body.message);
      const sessionKey = checkSessionKey(request.body.sessionKey);
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
      config: { invalidBodyMessage: 'Message required' },
      schema: {
        tags: ['chat'],
        body: Type.Object({
          message: Type.Optional(Type.Unknown()),
          sessionKey: Type.Optional(Type.Unknown()),
          agentId: Type.Optional(Type.Unknown()),
        }),
        response: {
          200: ChatReply,
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { agentId } = request.body;
      const message = checkMessage(request.body.message);
      const sessionKey = checkSessionKey(request.body.sessionKey);
      if (agentId !== undefined && agentId !== null && (typeof agentId !== 'string' || agentId.length === 0 || agentId.length > 64)) {
        throw new DomainError('INVALID_AGENTID');
      }
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
