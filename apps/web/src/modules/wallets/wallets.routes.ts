import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { requireSessionUser } from '../../platform/http/auth.js';
import { perSession } from '../../platform/http/rate-limit-keys.js';
import {
  WALLET_LINK_STATEMENT,
  createCustodialWallet,
  createProviderPayment,
  linkWallet,
  listWallets,
  primaryAddress,
  providerOnramp,
  reverseName,
  walletBalance,
} from './wallets.service.js';
import { LinkWalletBody, ProviderInfo, WALLET_PROVIDER_ACTIONS, WalletList, WalletProviderBody } from './wallets.schemas.js';

const MINUTE = 60_000;

/** Wallets are the caller's money: a signed-in person only, 401 before any body check. */
const authenticate = async (request: FastifyRequest) => {
  await requireSessionUser(request);
};

/**
 * Spec §4.18 Wallets (the payment webhook `POST /api/wallet/top-up` lives with billing): the account's wallets, linking
 * an external wallet by signature, a custodial wallet and payments through a configured provider (503 without one),
 * the payment token balance on the payment chain (503 without one) and reverse names.
 */
export async function walletAccountRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const linkLimit = app.rateLimit({ name: 'wallet-link', keyBy: perSession, max: 20, windowMs: MINUTE, message: 'Too many requests' });
  const providerLimit = app.rateLimit({
    name: 'wallet-provider',
    keyBy: perSession,
    max: 30,
    windowMs: MINUTE,
    message: 'Too many requests',
  });
  const lookupLimit = app.rateLimit({ name: 'wallet-lookup', keyBy: perSession, max: 60, windowMs: MINUTE, message: 'Too many requests' });
  const deps = (request: FastifyRequest) => ({ db: app.db, config, counters: app.counters, log: request.log });

  const providerInfo = (): ProviderInfo => ({
    configured: Boolean(config.walletProvider),
    actions: [...WALLET_PROVIDER_ACTIONS],
    paymentChain: config.payments
      ? { chainId: config.payments.chainId, token: config.payments.tokenAddress, decimals: config.payments.tokenDecimals }
      : null,
  });

  async function providerAction(request: FastifyRequest, body: WalletProviderBody) {
    const user = await requireSessionUser(request);
    switch (body.action) {
      case 'create_wallet': {
        const { wallet, created } = await createCustodialWallet(deps(request), user.id, request.ip);
        return { wallet, created };
      }
      case 'get_balance':
        return walletBalance(deps(request), user.id, body.address);
      case 'create_payment':
        return createProviderPayment(deps(request), user.id, body, request.ip);
      case 'onramp':
        return providerOnramp(deps(request), user.id, body);
    }
  }

  app.get(
    '/api/wallet',
    {
      onRequest: authenticate,
      schema: { tags: ['wallets'], description: 'The caller’s wallets and the primary address.', response: { 200: WalletList } },
    },
    async (request) => {
      const user = await requireSessionUser(request);
      const wallets = await listWallets(app.db, user.id);
      return { address: primaryAddress(wallets), wallets, linkStatement: WALLET_LINK_STATEMENT };
    },
  );

  app.post(
    '/api/wallet',
    {
      onRequest: [authenticate, linkLimit],
      config: { invalidBody: 'MISSING_ADDRESS_MESSAGE_SIGNATURE' },
      schema: {
        tags: ['wallets'],
        description:
          `Links a wallet: \`message\` is an EIP-4361 message for this site with the statement "${WALLET_LINK_STATEMENT}" and a nonce ` +
          'from `GET /api/auth/nonce`, signed by `address` (EIP-191).',
        body: LinkWalletBody,
      },
    },
    async (request, reply) => {
      const user = await requireSessionUser(request);
      const { wallet, created } = await linkWallet(deps(request), user.id, request.body, app.clock(), request.ip);
      return reply.code(created ? 201 : 200).send({ wallet });
    },
  );

  app.get(
    '/api/wallet/address',
    {
      onRequest: authenticate,
      schema: { tags: ['wallets'], response: { 200: Type.Object({ address: Type.Union([Type.String(), Type.Null()]) }) } },
    },
    async (request) => {
      const user = await requireSessionUser(request);
      return { address: primaryAddress(await listWallets(app.db, user.id)) };
    },
  );

  app.post(
    '/api/wallet/create',
    {
      onRequest: [authenticate, providerLimit],
      schema: { tags: ['wallets'], description: 'The caller’s custodial wallet from the configured provider (503 without one).' },
    },
    async (request, reply) => {
      const user = await requireSessionUser(request);
      const { wallet, created } = await createCustodialWallet(deps(request), user.id, request.ip);
      return reply.code(created ? 201 : 200).send({ wallet });
    },
  );

  const providerPost = {
    onRequest: [authenticate, providerLimit],
    config: { invalidBody: 'INVALID_REQUEST_BODY' as const },
    schema: { tags: ['wallets'], description: `Actions: ${WALLET_PROVIDER_ACTIONS.join(', ')}.`, body: WalletProviderBody },
  };
  const providerGet = {
    onRequest: authenticate,
    schema: {
      tags: ['wallets'],
      description: 'Whether a wallet provider and a payment chain are configured.',
      response: { 200: ProviderInfo },
    },
  };
  app.get('/api/wallet/provider', providerGet, async () => providerInfo());
  app.post('/api/wallet/provider', providerPost, (request) => providerAction(request, request.body));
  app.get('/api/wallet-provider', providerGet, async () => providerInfo());
  app.post('/api/wallet-provider', providerPost, (request) => providerAction(request, request.body));

  app.get(
    '/api/basename',
    {
      onRequest: [authenticate, lookupLimit],
      schema: {
        tags: ['wallets'],
        description: 'The reverse name of the caller’s wallet (or `address`, one of theirs); `basename` is null without a resolver.',
        querystring: Type.Object({ address: Type.Optional(Type.String()) }),
      },
    },
    async (request) => {
      const user = await requireSessionUser(request);
      return reverseName(deps(request), user.id, request.query.address);
    },
  );
}
