import { type App, DomainError } from '@aop/core';
import { createBatchWorker } from '../../platform/batch-worker.js';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { type Address, type Hex, isAddress } from 'viem';
import type { WebConfig } from '../../config.js';
import { formatUsd, parseUsd } from './money.js';
import { PaymentSession, SessionAnswer, SessionClosed, SessionList, Usd } from './payments.schemas.js';
import { paymentMeter } from './payments.metrics.js';
import {
  CLIENT_VOUCHER_NONCE,
  MAX_DEPOSIT_USD,
  MIN_DEPOSIT_USD,
  closeSession,
  findSession,
  isSessionId,
  listSessions,
  openSession,
  redeemVoucher,
  sessionView,
  settleDueSessions,
  unsettledVouchers,
  userOwnsWallet,
  verifyWalletProof,
} from './payment-sessions.service.js';

const MINUTE = 60_000;
/** How often due settlements (hourly, $5.00) are looked for when no call triggers them. */
const SETTLEMENT_SWEEP_MS = MINUTE;
const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
/** ERC-6492 wrappers carry the factory call, so smart-wallet signatures can be a few kilobytes. */
const SIGNATURE = /^0x(?:[0-9a-fA-F]{2}){65,16384}$/;
const TIMESTAMP = /^\d{1,16}$/;

const OwnershipHeaders = Type.Object({
  'x-wallet-signature': Type.Optional(Type.String({ description: 'EIP-191 signature of the wallet proof message' })),
  'x-wallet-timestamp': Type.Optional(Type.String({ description: 'epoch ms named in the signed message' })),
});

const header = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return (Array.isArray(value) ? value[0] : value)?.trim() || undefined;
};

/**
 * Payment sessions of the wallet API (not-shown facts; spec §3.4, §4.4 session billing): open with a deposit paid on
 * chain (a further deposit tops up the open session), read, close, and debit with vouchers the wallet signs.
 *
 * Who may act for a wallet: reading one session needs only its id (the id already lets its holder spend through the
 * gateway, so it is treated as a secret and never listed to strangers). Opening, listing a wallet's sessions and
 * closing need proof of the wallet: either a signed-in account the wallet belongs to (its SIWE wallet or a linked
 * wallet), or `X-Wallet-Signature` + `X-Wallet-Timestamp`, the wallet's EIP-191 signature of `walletProofMessage`
 * made within 5 minutes.
 */
export async function walletSessionRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const limit = app.rateLimit({ name: 'wallet-sessions', max: 60, windowMs: MINUTE, message: 'Too many requests' });
  const voucherLimit = app.rateLimit({ name: 'wallet-session-vouchers', max: 300, windowMs: MINUTE, message: 'Too many requests' });
  const deps = (request: FastifyRequest) => ({ db: app.db, config, clock: app.clock, logger: request.log });
  const payments = paymentMeter(app.metrics.registry);

  if (config.payments) {
    app.jobs.add({
      name: 'payment session settlement',
      everyMs: SETTLEMENT_SWEEP_MS,
      catchUp: false,
      worker: createBatchWorker(
        async () => {
          await settleDueSessions(app.db.kysely, app.clock());
          return false;
        },
        (err) => app.log.warn({ err }, 'payment session settlement sweep failed'),
      ),
      depth: () => unsettledVouchers(app.db.kysely),
    });
  }

  /** The wallet's own proof (signature headers), else a signed-in account that owns the wallet; 401/403 otherwise. */
  async function requireWalletOwner(request: FastifyRequest, address: string, action: 'open' | 'list' | 'close', target: string) {
    const signature = header(request, 'x-wallet-signature');
    const timestamp = header(request, 'x-wallet-timestamp');
    if (signature || timestamp) {
      const valid =
        signature !== undefined &&
        timestamp !== undefined &&
        SIGNATURE.test(signature) &&
        TIMESTAMP.test(timestamp) &&
        (await verifyWalletProof(deps(request), {
          action,
          address: address as Address,
          target,
          signature: signature as Hex,
          timestamp: Number(timestamp),
        }));
      if (!valid) throw new DomainError('INVALID_WALLET_SIGNATURE');
      return;
    }
    const user = await request.currentUser();
    if (!user) throw new DomainError('WALLET_SIGNATURE_REQUIRED');
    const owns = await userOwnsWallet(app.db.kysely, user.id, address);
    if (!owns) throw new DomainError('WALLET_DOES_NOT_BELONG_ACCOUNT');
  }

  app.post(
    '/api/wallet/sessions',
    {
      onRequest: limit,
      config: { invalidBody: 'MISSING_ADDRESS_DEPOSIT_TRANSACTION' },
      schema: {
        tags: ['payments'],
        headers: OwnershipHeaders,
        body: Type.Object({
          address: Type.Optional(Type.String()),
          deposit: Type.Optional(Type.Union([Type.String(), Type.Number()])),
          transaction: Type.Optional(Type.String({ description: 'hash of the deposit transfer' })),
        }),
        response: { 200: SessionAnswer, 201: SessionAnswer },
      },
    },
    async (request, reply) => {
      const { address, deposit, transaction } = request.body ?? {};
      if (!address || deposit === undefined || deposit === '' || !transaction) throw new DomainError('MISSING_ADDRESS_DEPOSIT_TRANSACTION');
      if (!isAddress(address, { strict: false })) throw new DomainError('INVALID_WALLET_ADDRESS');
      const micros = parseUsd(typeof deposit === 'number' ? String(deposit) : deposit.trim());
      if (micros === null || micros < (parseUsd(MIN_DEPOSIT_USD) as bigint) || micros > (parseUsd(MAX_DEPOSIT_USD) as bigint)) {
        throw new DomainError('DEPOSIT_OUT_OF_RANGE', { min: MIN_DEPOSIT_USD, max: MAX_DEPOSIT_USD });
      }
      if (!TX_HASH.test(transaction)) throw new DomainError('INVALID_TRANSACTION_HASH');
      if (!config.payments) throw new DomainError('PAYMENT_SESSIONS_ARE_NOT_CONFIGURED');
      await requireWalletOwner(request, address, 'open', transaction.toLowerCase());
      const opened = await openSession(deps(request), {
        address: address as Address,
        deposit: formatUsd(micros),
        txHash: transaction as Hex,
        ip: request.ip,
      });
      // 201 for a new session; 200 with a note when the deposit topped up the wallet's open session.
      if (!opened.created) return { session: opened.session, note: 'Deposit added to the active session' };
      return reply.code(201).send({ session: opened.session });
    },
  );

  app.get(
    '/api/wallet/sessions',
    {
      onRequest: limit,
      schema: {
        tags: ['payments'],
        headers: OwnershipHeaders,
        querystring: Type.Object({ address: Type.Optional(Type.String()), sessionId: Type.Optional(Type.String()) }),
        response: { 200: Type.Union([Type.Object({ session: PaymentSession }), SessionList]) },
      },
    },
    async (request) => {
      const { address, sessionId } = request.query;
      if (sessionId) {
        const row = await findSession(app.db.kysely, sessionId);
        if (!row) throw new DomainError('SESSION_NOT_FOUND');
        return { session: await sessionView(app.db.kysely, row) };
      }
      if (!address) throw new DomainError('MISSING_ADDRESS_SESSIONID');
      if (!isAddress(address, { strict: false })) throw new DomainError('INVALID_WALLET_ADDRESS');
      await requireWalletOwner(request, address, 'list', address.toLowerCase());
      return { sessions: await listSessions(app.db.kysely, address) };
    },
  );

  app.delete(
    '/api/wallet/sessions',
    {
      onRequest: limit,
      schema: {
        tags: ['payments'],
        headers: OwnershipHeaders,
        querystring: Type.Object({ sessionId: Type.Optional(Type.String()) }),
        response: { 200: SessionClosed },
      },
    },
    async (request) => {
      const { sessionId } = request.query;
      if (!sessionId) throw new DomainError('MISSING_SESSIONID');
      const row = isSessionId(sessionId) ? await findSession(app.db.kysely, sessionId) : undefined;
      if (!row) throw new DomainError('SESSION_NOT_FOUND');
      await requireWalletOwner(request, row.user_address, 'close', sessionId);
      const closed = await closeSession(deps(request), { sessionId, ip: request.ip });
      if (!closed) throw new DomainError('SESSION_NOT_FOUND');
      return { success: true as const, returned: closed.returned };
    },
  );

  app.post(
    '/api/wallet/sessions/voucher',
    {
      onRequest: voucherLimit,
      config: { invalidBody: 'MISSING_SESSIONID_USERADDRESS_PLUGIN_SIGNATURE' },
      schema: {
        tags: ['payments'],
        body: Type.Object({
          sessionId: Type.Optional(Type.String()),
          userAddress: Type.Optional(Type.String()),
          plugin: Type.Optional(Type.String({ maxLength: 100 })),
          signature: Type.Optional(Type.String()),
          nonce: Type.Optional(Type.String()),
        }),
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            session: Type.Object({ id: Type.String(), spent: Usd, remaining: Usd, pendingVouchers: Type.Integer() }),
            voucher: Type.Object({ amount: Usd, plugin: Type.String(), description: Type.String() }),
          }),
        },
      },
    },
    async (request) => {
      const { sessionId, userAddress, plugin, signature, nonce } = request.body ?? {};
      if (!sessionId || !userAddress || !plugin || !signature || !nonce) {
        throw new DomainError('MISSING_SESSIONID_USERADDRESS_PLUGIN_SIGNATURE');
      }
      if (!isAddress(userAddress, { strict: false })) throw new DomainError('INVALID_WALLET_ADDRESS');
      if (!SIGNATURE.test(signature)) throw new DomainError('INVALID_SIGNATURE_REQUEST');
      if (!CLIENT_VOUCHER_NONCE.test(nonce)) throw new DomainError('INVALID_NONCE');
      if (!isSessionId(sessionId)) throw new DomainError('SESSION_NOT_FOUND');
      const redeemed = await redeemVoucher(deps(request), {
        sessionId,
        userAddress: userAddress as Address,
        plugin,
        signature: signature as Hex,
        nonce,
      });
      payments.paid('voucher', 'charged', redeemed.voucher.amount);
      return redeemed;
    },
  );
}
