import { refuse } from '@aop/core/request-schema';
import { type App, DomainError } from '@aop/core';
import { writeAudit } from '@aop/db';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireSessionUser, sessionUserBeforeBody } from '../../platform/http/auth.js';
import { SaveTradingKeyBody, Success, TradingKeyStatus, TradingPromptBody } from './trading.schemas.js';
import {
  DEFAULT_CHAINS,
  TRADING_KEY_MAX,
  TradingRequestError,
  type TradingCall,
  callTradingApi,
  deleteTradingKey,
  hasTradingKey,
  resolveTradingKey,
  saveTradingKey,
} from './trading.service.js';

const CHAINS_MAX = 500;

/**
 * Spec §4.13 trading service: the personal key (sealed at rest, never returned)
 * and the balance / prompt / job proxy. A signed-in session is required: a
 * leaked `sk_` key must neither trade with the user's funds nor swap their key.
 */
export async function tradingRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  /** Resolves the key, calls upstream and answers with the upstream's status and JSON. */
  async function proxy(request: FastifyRequest, reply: FastifyReply, userId: string, call: TradingCall) {
    const apiKey = await resolveTradingKey(app.db, config, userId);
    try {
      const answer = await callTradingApi(config, apiKey, call);
      return reply.code(answer.status).type('application/json; charset=utf-8').serializer(JSON.stringify).send(answer.body);
    } catch (err) {
      // Only the reason is logged: never the key, the headers or the upstream body.
      if (err instanceof TradingRequestError) request.log.warn({ reason: err.reason, method: call.method }, 'trading request failed');
      throw err;
    }
  }

  app.get('/api/user/trading-key', { schema: { tags: ['trading'], response: { 200: TradingKeyStatus } } }, async (request) => {
    const user = await requireSessionUser(request);
    return { configured: await app.db.withUser(user.id, (trx) => hasTradingKey(trx, user.id)) };
  });

  app.post(
    '/api/user/trading-key',
    {
      preValidation: sessionUserBeforeBody,
      config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'apiKey' }) },
      schema: { tags: ['trading'], body: SaveTradingKeyBody, response: { 200: Success } },
    },
    async (request) => {
      const user = await requireSessionUser(request);
      // Surrounding whitespace is a copy-and-paste accident, never part of a key.
      const apiKey = request.body.apiKey.trim();
      if (apiKey.length > TRADING_KEY_MAX) throw new DomainError('FIELD_TOO_LONG', { field: 'apiKey', max: TRADING_KEY_MAX });
      await app.db.withUser(user.id, async (trx) => {
        await saveTradingKey(trx, config, user.id, apiKey);
        await writeAudit(trx, { userId: user.id, action: 'trading_key.save', ip: request.ip });
      });
      return { success: true as const };
    },
  );

  app.delete('/api/user/trading-key', { schema: { tags: ['trading'], response: { 200: Success } } }, async (request) => {
    const user = await requireSessionUser(request);
    await app.db.withUser(user.id, async (trx) => {
      if (await deleteTradingKey(trx, user.id)) await writeAudit(trx, { userId: user.id, action: 'trading_key.delete', ip: request.ip });
    });
    return { success: true as const };
  });

  app.get(
    '/api/trading/balances',
    { schema: { tags: ['trading'], querystring: Type.Object({ chains: Type.Optional(Type.String({ maxLength: CHAINS_MAX })) }) } },
    async (request, reply) => {
      const user = await requireSessionUser(request);
      const chains = request.query.chains?.trim() || DEFAULT_CHAINS;
      return proxy(request, reply, user.id, { method: 'GET', path: `/agent/balances?${new URLSearchParams({ chains })}` });
    },
  );

  app.post(
    '/api/trading/prompt',
    {
      preValidation: sessionUserBeforeBody,
      config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'prompt' }) },
      schema: { tags: ['trading'], body: TradingPromptBody },
    },
    async (request, reply) => {
      const user = await requireSessionUser(request);
      const { prompt, threadId } = request.body;
      const json = threadId ? { prompt, threadId } : { prompt };
      return proxy(request, reply, user.id, { method: 'POST', path: '/agent/prompt', json });
    },
  );

  app.get(
    '/api/trading/prompt',
    { schema: { tags: ['trading'], querystring: Type.Object({ jobId: Type.Optional(Type.String({ maxLength: 200 })) }) } },
    async (request, reply) => {
      const user = await requireSessionUser(request);
      const jobId = request.query.jobId?.trim();
      if (!jobId) throw new DomainError('FIELD_REQUIRED', { field: 'jobId' });
      return proxy(request, reply, user.id, { method: 'GET', path: `/agent/job/${encodeURIComponent(jobId)}` });
    },
  );
}
