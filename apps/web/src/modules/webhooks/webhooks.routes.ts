import { type App, DomainError, checkJsonText, safeEqual } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireUser } from '../../platform/http/auth.js';
import { InvalidEmailEventError, parseEmailEvent, storeEmailEvent } from '../../platform/clients/email-events.js';
import {
  type HostingCategory,
  InvalidHostingEventError,
  latestCursor,
  listHostingEvents,
  parseHostingEvent,
  platformStatus,
  storeHostingEvent,
} from '../agents/hosting-events.service.js';
import { verifyWebhook } from '../../platform/http/webhook-signature.js';
import { intQuery } from '../../platform/http/query.js';

const tags = ['webhooks'];

/** The raw body, parsed as JSON only after the signature over its exact bytes has been checked. */
function signedJson(request: FastifyRequest, secret: string | undefined, now: number) {
  const raw = request.body;
  if (!Buffer.isBuffer(raw) || raw.length === 0) {
    // Unsigned junk is refused for the missing signature first, so probing says nothing about the body rules.
    verifyWebhook(secret, request.headers, Buffer.alloc(0), now);
    throw new DomainError('INVALID_PAYLOAD');
  }
  const delivery = verifyWebhook(secret, request.headers, raw, now);
  const text = raw.toString('utf8');
  // The shared JSON parser never saw these bytes: its rules apply here, once they are known to be the provider's. The
  // payload is stored as jsonb, which refuses U+0000 and half surrogate pairs (a 500 the provider would retry forever).
  checkJsonText(text, 'INVALID_PAYLOAD');
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    throw new DomainError('INVALID_PAYLOAD');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new DomainError('INVALID_PAYLOAD');
  return { delivery, payload: payload as Record<string, unknown> };
}

/**
 * Polling is for operators: an administrator's session, or `Authorization: Bearer <INTERNAL_API_KEY>` for monitors
 * and the backend (401 without either, 403 for a signed-in non-administrator).
 */
async function requireOperator(request: FastifyRequest, internalApiKey: string | undefined): Promise<void> {
  const header = request.headers.authorization;
  if (internalApiKey && header?.startsWith('Bearer ') && !header.startsWith('Bearer sk_')) {
    if (safeEqual(header.slice('Bearer '.length).trim(), internalApiKey)) return;
    throw new DomainError('FORBIDDEN');
  }
  const user = await requireUser(request);
  if (!user.isAdmin) throw new DomainError('FORBIDDEN');
}

const CATEGORIES: readonly HostingCategory[] = ['deployment', 'platform'];

/** Spec §4.18 "Hosting webhooks" and §6: the email provider's and the hosting provider's signed events. */
export async function webhookRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  // The signature covers the exact bytes the provider sent: these routes read their bodies raw.
  await app.register(async (scope) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    scope.post(
      '/api/webhooks/email',
      {
        schema: {
          tags,
          description:
            'Email provider webhook (Svix-signed: `svix-id`, `svix-timestamp`, `svix-signature`; 5-minute tolerance): inbound mail (`email.received`) and the events `sent`, `delivered`, `bounced`, `opened`, `clicked`, `complained`, each delivery stored once. A hard bounce or a complaint suppresses the recipient. Other event types are acknowledged and not kept.',
        },
      },
      async (request) => {
        const now = app.clock();
        const { delivery, payload } = signedJson(request, config.webhooks.emailSecret, now);
        let event: ReturnType<typeof parseEmailEvent>;
        try {
          event = parseEmailEvent(payload, delivery.timestampMs);
        } catch (err) {
          if (err instanceof InvalidEmailEventError) throw new DomainError('INVALID_PAYLOAD');
          throw err;
        }
        if (!event) return { received: true, id: delivery.id, ignored: true };
        const stored = await storeEmailEvent(app.db.kysely, delivery.id, event, payload);
        if (stored.suppressed.length > 0) request.log.info({ event: delivery.id, type: event.type }, 'email addresses suppressed');
        return { received: true, id: delivery.id, type: event.type, duplicate: !stored.stored };
      },
    );

    scope.post(
      '/api/webhooks/hosting-status',
      {
        schema: {
          tags,
          description:
            'Hosting provider webhook (Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`; 5-minute tolerance): platform status and deployment events `{ type, timestamp, data: { serviceId, serviceName, status? } }`, stored once per delivery for polling with GET.',
        },
      },
      async (request) => {
        const now = app.clock();
        const { delivery, payload } = signedJson(request, config.webhooks.hostingSecret, now);
        let event: ReturnType<typeof parseHostingEvent>;
        try {
          event = parseHostingEvent(payload, delivery.timestampMs);
        } catch (err) {
          if (err instanceof InvalidHostingEventError) throw new DomainError('INVALID_PAYLOAD');
          throw err;
        }
        const stored = await storeHostingEvent(app.db.kysely, delivery.id, event, payload);
        return { received: true, id: delivery.id, type: event.type, category: event.category, duplicate: !stored };
      },
    );
  });

  app.get(
    '/api/webhooks/hosting-status',
    {
      schema: {
        tags,
        description:
          'Stored hosting events for polling (administrator session or the internal key): the platform status per service and the events in arrival order, after `after` (a cursor from an earlier answer) or the latest `limit` (default 50, at most 200).',
        querystring: Type.Object({
          after: Type.Optional(Type.String()),
          limit: Type.Optional(Type.String()),
          category: Type.Optional(Type.String()),
          serviceId: Type.Optional(Type.String({ maxLength: 200 })),
        }),
      },
    },
    async (request) => {
      await requireOperator(request, config.internalApiKey);
      const { category, serviceId } = request.query;
      if (category !== undefined && !(CATEGORIES as readonly string[]).includes(category)) {
        throw new DomainError('CATEGORY_DEPLOYMENT_PLATFORM');
      }
      const raw = request.query.after;
      if (raw !== undefined && !/^\d{1,18}$/.test(raw)) throw new DomainError('AFTER_CURSOR_FROM_EARLIER_ANSWER');
      const after = raw === undefined ? undefined : Number(raw);
      const limit = intQuery(request.query.limit, 'limit', 50, 1, 200);
      const events = await listHostingEvents(app.db.kysely, {
        after,
        limit,
        category: category as HostingCategory | undefined,
        serviceId: serviceId || undefined,
      });
      const last = events.at(-1)?.cursor;
      return {
        ...(await platformStatus(app.db.kysely)),
        events,
        // Where the next poll starts: the last event returned, else where this one started, else the newest stored.
        cursor: last ?? raw ?? (await latestCursor(app.db.kysely)),
        configured: Boolean(config.webhooks.hostingSecret),
      };
    },
  );
}
