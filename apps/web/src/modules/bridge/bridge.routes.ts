import { type App, DomainError, safeEqual } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireUser } from '../../platform/http/auth.js';
import { BRIDGE_CHANNELS, BRIDGE_CONTENT_MAX, BridgeHealth, BridgeInbox, BridgeSent, bridgeSendBody } from './bridge.schemas.js';
import { bridgeStats, readBridgeInbox, sendBridgeMessage } from './bridge.service.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 100;
const DEFAULT_WINDOW_MS = 24 * 60 * 60 * 1000;
const READER_MAX = 100;

const clampLimit = (raw: unknown) => {
  const n = Number(raw);
  if (raw === undefined || raw === '' || !Number.isFinite(n) || n < 1) return DEFAULT_LIMIT;
  return Math.min(Math.floor(n), MAX_LIMIT);
};

/**
 * Spec §4.8: the bridge message bus, an operator tool. With BRIDGE_SECRET set, callers present it in
 * `X-Bridge-Secret` (scripts and bots have no session). The spec lets the check be skipped without a secret, but not
 * to open the bus to every account: then only administrators' sessions (or their API keys) may use it, and production
 * refuses to start that way (config.ts). BRIDGE_ENABLED=false leaves the routes out.
 */
export async function bridgeRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  if (!config.bridge.enabled) return;
  const senders = ['atlas-main', 'atlas-service', config.bridge.operatorIdentity];

  // Hooks of this plugin apply to its routes only.
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const secret = config.bridge.secret;
    if (secret) {
      const presented = request.headers['x-bridge-secret'];
      if (typeof presented !== 'string' || !safeEqual(presented, secret)) throw new DomainError('UNAUTHORIZED_LOWERCASE');
      return;
    }
    const user = await requireUser(request, 'UNAUTHORIZED_LOWERCASE');
    if (!user.isAdmin) throw new DomainError('FORBIDDEN');
  });

  app.post(
    '/api/bridge/send',
    {
      config: { invalidBody: 'SENDER_CONTENT_ARE_REQUIRED' },
      schema: {
        tags: ['bridge'],
        body: bridgeSendBody(senders),
        response: { 200: BridgeSent },
      },
    },
    async (request) => {
      // The schema's defaults fill `channel` and `priority` in; the type still calls them optional.
      const { sender, content, channel = 'general', priority = 'normal' } = request.body;
      // Checked last, as it always was: an unknown sender, channel or priority is named before an over-long content.
      if (content.length > BRIDGE_CONTENT_MAX) throw new DomainError('FIELD_TOO_LONG', { field: 'content', max: BRIDGE_CONTENT_MAX });
      try {
        const row = await sendBridgeMessage(app.db, { sender, content, channel, priority, createdAt: new Date(app.clock()) });
        return { ok: true as const, message: { ...row, created_at: row.created_at.toISOString() } };
      } catch (err) {
        request.log.error({ err }, 'bridge send failed');
        throw new DomainError('FAILED_SEND_MESSAGE');
      }
    },
  );

  app.get(
    '/api/bridge/inbox',
    {
      schema: {
        tags: ['bridge'],
        querystring: Type.Object({
          channel: Type.Optional(Type.String()),
          since: Type.Optional(Type.String()),
          reader: Type.Optional(Type.String()),
          limit: Type.Optional(Type.String()),
        }),
        response: {
          200: BridgeInbox,
        },
      },
    },
    async (request) => {
      const channel = request.query.channel || 'general';
      const reader = (request.query.reader || 'unknown').slice(0, READER_MAX);
      const limit = clampLimit(request.query.limit);
      const since = request.query.since ? new Date(request.query.since) : new Date(app.clock() - DEFAULT_WINDOW_MS);
      if (Number.isNaN(since.getTime())) throw new DomainError('INVALID_SINCE');
      try {
        const messages = await readBridgeInbox(app.db, { channel, reader, since, limit }, () => app.clock());
        return {
          ok: true as const,
          channel,
          count: messages.length,
          messages: messages.map((m) => ({ ...m, created_at: m.created_at.toISOString() })),
        };
      } catch (err) {
        request.log.error({ err }, 'bridge inbox failed');
        throw new DomainError('FAILED_FETCH_MESSAGES');
      }
    },
  );

  app.get('/api/bridge/health', { schema: { tags: ['bridge'], response: { 200: BridgeHealth } } }, async (request, reply) => {
    try {
      const { total, last } = await bridgeStats(app.db);
      return {
        status: 'ok' as const,
        total_messages: total,
        last_message: last ? { created_at: last.created_at.toISOString(), sender: last.sender, channel: last.channel } : null,
        channels: [...BRIDGE_CHANNELS],
        senders,
        timestamp: new Date(app.clock()).toISOString(),
      };
    } catch (err) {
      request.log.error({ err }, 'bridge health failed');
      // Not an error through the error handler but this answer of its own, which the 200 schema does not describe: sent on
      // the untyped reply (no 500 schema, which would also apply to the error handler's 500 answers).
      return (reply as FastifyReply).code(500).send({ status: 'error', error: 'Database unreachable' });
    }
  });
}
