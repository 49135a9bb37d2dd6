import { type App, DomainError } from '@aop/core';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey, verifyUserContext } from '../../plugins/auth.js';

/**
 * `GET /api/gateway/token` (spec §4.4: the web service authenticates to the shared platform gateway "using a gateway
 * token fetched from the backend"). Only the web service holds the internal key, and it never shows this token to a
 * user: users without an agent of their own reach the shared gateway through the web service's own calls.
 */
export async function gatewayTokenRoute(app: App, { config }: { config: BackendConfig }): Promise<void> {
  app.get(
    '/gateway/token',
    { onRequest: [requireInternalKey(config.internalApiKey), verifyUserContext(config.userContextSecret)], schema: { tags: ['gateway'] } },
    async () => {
      if (!config.platformGatewayToken) throw new DomainError('NO_GATEWAY_TOKEN');
      return { token: config.platformGatewayToken };
    },
  );
}
