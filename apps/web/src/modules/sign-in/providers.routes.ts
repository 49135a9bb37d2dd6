import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';

const ProvidersSchema = Type.Object({
  idp: Type.Boolean({ description: 'GET /api/auth/idp leads to the identity provider' }),
  codehost: Type.Boolean({ description: 'GET /api/auth/codehost leads to the code-hosting provider' }),
  wallet: Type.Object({
    chainId: Type.Integer({ description: 'chain id a SIWE message for POST /api/wallet-auth must name' }),
    domain: Type.String({ description: 'the SIWE domain it must name' }),
    uri: Type.String({ description: 'the SIWE URI it must name (this service)' }),
  }),
});

/**
 * `GET /api/auth/providers` (no auth; not in the spec): which sign-in methods this deployment offers, so a sign-in
 * page shows only the buttons that lead somewhere. Says nothing secret: only whether a client id is set.
 */
export async function providerRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  app.get('/api/auth/providers', { schema: { tags: ['accounts'], response: { 200: ProvidersSchema } } }, async () => ({
    idp: Boolean(config.idp.clientId && config.idp.clientSecret && config.idp.issuer),
    codehost: Boolean(config.codehost.clientId && config.codehost.clientSecret),
    wallet: { chainId: config.gating.chainId, domain: config.siweDomain, uri: new URL(config.publicUrl).origin },
  }));
}
