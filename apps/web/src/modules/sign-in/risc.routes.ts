import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import {
  InvalidSecurityEventToken,
  SUPPORTED_SECURITY_EVENTS,
  SecurityEventKeysUnavailable,
  acceptSecurityEvent,
  createSecurityEventValidator,
  createSecurityEventWorker,
  pendingSecurityEvents,
} from './security-events.service.js';

export const RISC_PATH = '/api/security/risc';
export const LEGACY_RISC_PATH = '/api/auth/idp/risc';
const ErrorSchema = Type.Object({ error: Type.String() });

/** The raw JWT arrives under these types; a JSON string body is taken too. */
export const SECURITY_EVENT_CONTENT_TYPES = ['application/secevent+jwt', 'application/jwt', 'text/plain'];

/**
 * Spec §4.1 identity-provider account-protection receivers, §6, §8.
 * `POST /api/security/risc` validates (400 `Invalid security event token`),
 * stores once per `jti`, answers 202 with an empty body and processes after the
 * response. The legacy `POST /api/auth/idp/risc` takes the same validation
 * (unauthenticated input is never acted on) and matches users by email only.
 */
export async function riscRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  // In this plugin's scope only: the rest of the API stays JSON-only.
  app.addContentTypeParser(SECURITY_EVENT_CONTENT_TYPES, { parseAs: 'string' }, (_request, body, done) => done(null, body));

  const validator = createSecurityEventValidator({
    issuer: config.idp.issuer,
    audiences: config.riscAudiences,
    now: () => app.clock(),
    log: app.log,
  });
  // Events accepted before a crash or restart are processed once the service is ready; failures are retried each minute.
  const worker = app.jobs.add({
    name: 'security events (RISC)',
    everyMs: 60_000,
    catchUp: true,
    worker: createSecurityEventWorker(app.db.kysely, { clock: () => app.clock(), log: app.log }),
    depth: () => pendingSecurityEvents(app.db.kysely),
  });

  async function receive(request: FastifyRequest, reply: FastifyReply, source: 'risc' | 'legacy') {
    let event: Awaited<ReturnType<typeof validator.validate>>;
    try {
      event = await validator.validate(request.body);
    } catch (err) {
      if (err instanceof InvalidSecurityEventToken) {
        request.log.warn({ source, reason: err.message }, 'security event token rejected');
        throw new DomainError('INVALID_TOKEN');
      }
      if (err instanceof SecurityEventKeysUnavailable) {
        // Our side cannot check it right now: the provider should retry, not drop it.
        request.log.error({ source, reason: err.message }, 'security event signing keys unavailable');
        throw new DomainError('SECURITY_EVENT_KEYS_UNAVAILABLE');
      }
      throw err;
    }
    const stored = await acceptSecurityEvent(app.db.kysely, app.counters, {
      jti: event.jti,
      source,
      issuer: event.issuer,
      subject: event.subject,
      email: event.email,
      eventTypes: event.eventTypes,
      payload: event.payload,
    });
    request.log.info({ source, jti: event.jti, eventTypes: event.eventTypes, duplicate: !stored }, 'security event accepted');
    await reply.code(202).send();
    if (stored) setImmediate(() => void worker.kick());
    return reply;
  }

  const postSchema = (summary: string, deprecated = false) => ({
    tags: ['security'],
    summary,
    ...(deprecated ? { deprecated: true } : {}),
    consumes: ['application/secevent+jwt', 'application/jwt', 'text/plain', 'application/json'],
    body: Type.String({ description: 'The security event token (compact JWT); a JSON string is accepted too.' }),
    response: {
      202: Type.Null({ description: 'Accepted (also a repeated jti); empty body; processing follows the response.' }),
      400: ErrorSchema,
      503: ErrorSchema,
    },
  });
  const postConfig = { invalidBody: 'INVALID_TOKEN' as const };

  app.post(
    RISC_PATH,
    { config: postConfig, schema: postSchema('Receives an account-protection security event token (202, empty body).') },
    (request, reply) => receive(request, reply, 'risc'),
  );

  app.post(
    LEGACY_RISC_PATH,
    { config: postConfig, schema: postSchema('Legacy receiver: validated like /api/security/risc, users matched by email only.', true) },
    (request, reply) => receive(request, reply, 'legacy'),
  );

  app.get(
    RISC_PATH,
    {
      schema: {
        tags: ['security'],
        response: {
          200: Type.Object({
            status: Type.Literal('ok'),
            endpoint: Type.String(),
            configured: Type.Boolean(),
            supportedEvents: Type.Array(Type.String()),
          }),
        },
      },
    },
    async () => ({
      status: 'ok' as const,
      endpoint: RISC_PATH,
      configured: validator.configured,
      supportedEvents: [...SUPPORTED_SECURITY_EVENTS],
    }),
  );
}
