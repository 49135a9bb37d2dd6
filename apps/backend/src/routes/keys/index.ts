import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey } from '../../plugins/auth.js';
import { findApiKey, markApiKeyUsed } from '../../services/keys.js';

const KEY_FORMAT = /^sk_[A-Za-z0-9_-]{20,128}$/;

/**
 * `POST /api/validate-key` (spec §4.18, backend; internal key): looks a user API
 * key up by the SHA-256 hex of the raw key. Keys are created by the web service;
 * the backend sees them when both share one database (`DATABASE_URL`).
 */
export async function validateKeyRoute(app: App, { config }: { config: BackendConfig }): Promise<void> {
  app.post(
    '/validate-key',
    {
      onRequest: requireInternalKey(config.internalApiKey),
      config: { invalidBody: 'APIKEY_REQUIRED' },
      schema: {
        tags: ['keys'],
        body: Type.Object({ apiKey: Type.Optional(Type.String()) }),
        response: {
          200: Type.Object({ valid: Type.Literal(true), userId: Type.String(), keyId: Type.String(), plan: Type.String() }),
          401: Type.Object({ valid: Type.Literal(false), error: Type.String() }),
        },
      },
    },
    async (request, reply) => {
      const apiKey = request.body?.apiKey;
      if (!apiKey) throw new DomainError('APIKEY_REQUIRED');
      const row = KEY_FORMAT.test(apiKey) ? await findApiKey(app.db, apiKey) : undefined;
      if (!row) return reply.code(401).send({ valid: false as const, error: 'Invalid API key' });
      await markApiKeyUsed(app.db, row.keyId);
      return { valid: true as const, userId: row.userId, keyId: row.keyId, plan: row.plan };
    },
  );
}
