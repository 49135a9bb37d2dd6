import { type App, DomainError, isPaidPlan, planFeatures } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { requireSessionUser, requireUser } from '../../platform/http/auth.js';
import { CreatedKey, KeyView } from './api-keys.schemas.js';
import { KEY_NAME_MAX, createUserApiKey, findKeyOwner, getApiKey, listApiKeys, revokeApiKey } from './api-keys.service.js';

const IdParamsSchema = Type.Object({ id: Type.String({ maxLength: 100 }) });

/** Spec §5 user API keys; shapes from the reference (research/not-shown-facts.md). */
export async function keysRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  app.get('/api/keys', { schema: { tags: ['keys'], response: { 200: Type.Object({ keys: Type.Array(KeyView) }) } } }, async (request) => {
    const user = await requireUser(request);
    return { keys: await app.db.withUser(user.id, listApiKeys) };
  });

  app.post(
    '/api/keys',
    {
      config: { invalidBody: 'NAME_IS_REQUIRED' },
      schema: {
        tags: ['keys'],
        body: Type.Object({ name: Type.Optional(Type.String()) }),
        response: {
          201: CreatedKey,
        },
      },
    },
    async (request, reply) => {
      // A leaked key must not be able to mint more keys: creation needs a signed-in person.
      const user = await requireSessionUser(request);
      const name = request.body?.name?.trim();
      if (!name) throw new DomainError('NAME_IS_REQUIRED');
      if (name.length > KEY_NAME_MAX) throw new DomainError('NAME_TOO_LONG', { max: KEY_NAME_MAX });
      const created = await createUserApiKey(app.db, { userId: user.id, name, ip: request.ip });
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/api/keys/:id',
    { schema: { tags: ['keys'], params: IdParamsSchema, response: { 200: Type.Object({ key: KeyView }) } } },
    async (request) => {
      const user = await requireUser(request);
      const key = await app.db.withUser(user.id, (trx) => getApiKey(trx, request.params.id));
      if (!key) throw new DomainError('API_KEY_NOT_FOUND');
      return { key };
    },
  );

  app.delete(
    '/api/keys/:id',
    {
      schema: {
        tags: ['keys'],
        params: IdParamsSchema,
        response: { 200: Type.Object({ success: Type.Literal(true), id: Type.String() }) },
      },
    },
    async (request) => {
      // A leaked key must not lock its owner out of their other keys: revoking takes a signed-in session, except
      // that a key may always revoke itself.
      const user = await requireUser(request);
      if (user.via !== 'session' && user.keyId !== request.params.id) await requireSessionUser(request);
      const deleted = await revokeApiKey(app.db, { userId: user.id, id: request.params.id, ip: request.ip });
      if (!deleted) throw new DomainError('API_KEY_NOT_FOUND');
      return { success: true as const, id: request.params.id };
    },
  );

  app.post(
    '/api/keys/validate',
    {
      config: { invalidBody: 'APIKEY_REQUIRED' },
      schema: {
        tags: ['keys'],
        body: Type.Object({ apiKey: Type.Optional(Type.String()) }),
        response: {
          200: Type.Object({
            valid: Type.Literal(true),
            userId: Type.String(),
            email: Type.String(),
            plan: Type.String(),
            subscriptionStatus: Type.String(),
            features: Type.Array(Type.String()),
          }),
          401: Type.Object({ valid: Type.Literal(false), error: Type.String() }),
        },
      },
    },
    async (request, reply) => {
      const apiKey = request.body?.apiKey;
      if (!apiKey) throw new DomainError('APIKEY_REQUIRED');
      const owner = apiKey.startsWith('sk_') ? await findKeyOwner(app.db.kysely, apiKey, config.adminEmails, app.clock()) : null;
      if (!owner) return reply.code(401).send({ valid: false as const, error: 'Invalid API key' });
      return {
        valid: true as const,
        userId: owner.user.id,
        email: owner.user.email,
        plan: owner.plan,
        subscriptionStatus: isPaidPlan(owner.plan) ? 'active' : 'none',
        features: planFeatures(owner.plan),
      };
    },
  );
}
