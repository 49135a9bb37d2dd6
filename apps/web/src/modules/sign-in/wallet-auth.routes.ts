import { type App, DomainError, isPublicError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { hashMessage } from 'viem';
import { generateSiweNonce } from 'viem/siwe';
import type { WebConfig } from '../../config.js';
import { sessionCookieOptions } from '../../platform/http/auth.js';
import { detectWalletKind, gatingClient, nonceKey, verifyContractWalletSignature } from '../../platform/clients/chain.js';
import { acceptSiweMessage } from '../../platform/siwe.js';
import { SESSION_COOKIE } from '../../platform/sessions.js';
import { Nonce } from './sign-in.schemas.js';
import { startSession } from './sign-in.service.js';
import { findOrCreateWalletUser } from './wallet-auth.service.js';

const MINUTE = 60_000;

/** Where `GET|POST /api/auth/nonce` keeps an issued nonce until one signed message uses it. */
const WalletAuthBodySchema = Type.Object({
  address: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  signature: Type.Optional(Type.String()),
});

/**
 * Spec §4.1 wallet sign-in (SIWE, EIP-4361): `GET|POST /api/auth/nonce` and
 * `POST /api/wallet-auth`. Only smart-contract wallets sign in: a deployed
 * ERC-1271 wallet, or an undeployed one with an ERC-6492 signature. The message
 * must name our domain, URI origin and gating chain, be within its validity
 * window, and carry a nonce we issued and that was never used.
 */
export async function walletRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const nonceLimit = app.rateLimit({ name: 'siwe-nonce', max: 120, windowMs: MINUTE, message: 'Too many requests' });
  const authLimit = app.rateLimit({ name: 'wallet-auth', max: 60, windowMs: MINUTE, message: 'Too many requests' });
  const expectedOrigin = new URL(config.publicUrl).origin;
  const expectedScheme = new URL(config.publicUrl).protocol.slice(0, -1);

  async function issueNonce() {
    const nonce = generateSiweNonce();
    await app.counters.putIfAbsent(nonceKey(nonce), '1', config.walletNonceTtlMs);
    return { nonce };
  }
  const nonceRoute = { onRequest: nonceLimit, schema: { tags: ['accounts'], response: { 200: Nonce } } };
  app.get('/api/auth/nonce', nonceRoute, issueNonce);
  app.post('/api/auth/nonce', nonceRoute, issueNonce);

  app.post(
    '/api/wallet-auth',
    {
      onRequest: authLimit,
      config: { invalidBody: 'MISSING_ADDRESS_MESSAGE_SIGNATURE' },
      schema: {
        tags: ['accounts'],
        body: WalletAuthBodySchema,
        response: { 200: Type.Object({ ok: Type.Literal(true), user: Type.Object({ id: Type.String(), name: Type.String() }) }) },
      },
    },
    async (request, reply) => {
      const client = gatingClient(config.gating);
      if (!client) throw new DomainError('WALLET_SIGN_IN_NOT_CONFIGURED');
      const { address, message, signature } = request.body ?? {};
      if (!address || !message || !signature) throw new DomainError('MISSING_ADDRESS_MESSAGE_SIGNATURE');
      const now = app.clock();
      // Single use: the nonce is taken by the checks, gone from here on whatever happens next.
      const {
        wallet,
        signature: sig,
        nonce,
      } = await acceptSiweMessage(
        app.counters,
        { address, message, signature },
        { domain: config.siweDomain, origin: expectedOrigin, scheme: expectedScheme, chainId: config.gating.chainId },
        now,
      );

      try {
        // The wallet's code first: a node that cannot be reached is a failure here, not an "invalid signature".
        const kind = await detectWalletKind(client, wallet, sig);
        const valid = await client.verifySiweMessage({
          message,
          signature: sig,
          address: wallet,
          domain: config.siweDomain,
          nonce,
          time: new Date(now),
        });
        if (!valid) throw new DomainError('SIGNATURE_VERIFICATION_FAILED');
        // viem also accepts plain ECDSA signatures: the wallet must be a contract (not an EIP-7702-delegated EOA),
        // and its signature must hold through ERC-1271 / ERC-6492 alone.
        if (kind !== 'contract' && kind !== 'counterfactual') throw new DomainError('SMART_CONTRACT_WALLETS_ONLY');
        if (!(await verifyContractWalletSignature(client, { address: wallet, hash: hashMessage(message), signature: sig }))) {
          throw new DomainError('SMART_CONTRACT_WALLETS_ONLY');
        }

        const user = await findOrCreateWalletUser(app.db.kysely, {
          address: wallet,
          productName: config.productName,
          ip: request.ip,
          now: new Date(now),
        });
        if (user.disabled) throw new DomainError('ACCOUNT_DISABLED');
        const session = await startSession(
          app.db.kysely,
          {
            userId: user.id,
            ip: request.ip,
            userAgent: request.headers['user-agent'],
            metadata: { method: 'wallet', walletKind: kind, address: wallet },
          },
          app.clock(),
        );
        reply.setCookie(SESSION_COOKIE, session.token, sessionCookieOptions(config, session.expiresAt));
        return { ok: true as const, user: { id: user.id, name: user.name } };
      } catch (err) {
        if (isPublicError(err)) throw err;
        request.log.error({ err }, 'wallet sign-in failed');
        throw new DomainError('AUTH_FAILED');
      }
    },
  );
}
