import type { App } from '@aop/core';
import type { WebConfig } from '../../config.js';
import { Providers } from './sign-in.schemas.js';

/**
 * `GET /api/auth/providers` (no auth; not in the spec): which sign-in methods this deployment offers, so a sign-in
 * page shows only the buttons that lead somewhere. Says nothing secret: only whether a client id is set.
 */
export async function providerRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  app.get('/api/auth/providers', { schema: { tags: ['accounts'], response: { 200: Providers } } }, async () => ({
    idp: Boolean(config.idp.clientId && config.idp.clientSecret && config.idp.issuer),
    codehost: Boolean(config.codehost.clientId && config.codehost.clientSecret),
    wallet: { chainId: config.gating.chainId, domain: config.siweDomain, uri: new URL(config.publicUrl).origin },
  }));
}
