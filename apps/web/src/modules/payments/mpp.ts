import { randomHex } from '@aop/core';
import { type Database, isUniqueViolation } from '@aop/db';
import { type Hex, keccak256, parseUnits, stringToHex } from 'viem';
import type { WebConfig } from '../../config.js';
import { minimumTokenUnits } from './money.js';
import { ChainUnavailableError, type PaymentsConfig, verifyTokenTransfer } from './onchain.js';
import { type ChargeResult, PaymentError } from './types.js';

/** Not-shown facts: a challenge is valid for 5 minutes. */
export const MPP_CHALLENGE_TTL_MS = 5 * 60_000;
/** Unused challenges are deleted this long after they expired (a few at a time, when new ones are issued). */
const CHALLENGE_RETENTION_MS = 24 * 60 * 60_000;
const CREDENTIAL_MAX_LENGTH = 4_096;
const NONCE = /^[0-9a-f]{32}$/;
const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/** Spec §2.5 plugin purposes, for the challenge's `description`. */
const PLUGIN_PURPOSES: Record<string, string> = {
  agent: 'agent orchestrator for multi-step tasks',
  'generate-text': 'LLM text generation',
  tts: 'speech synthesis',
  stt: 'speech transcription',
};

export interface MppDeps {
  db: Database;
  config: WebConfig;
  clock?: () => number;
  /** Where an unreachable or misconfigured payment chain is reported (the client only sees 503). */
  logger?: { warn(obj: object, msg: string): void };
}

/** Spec §2.12 `mpp`, plus what a payer needs to build the transfer (`chainId`, `decimals`, `memo`). */
export interface MppOffer {
  scheme: 'Payment';
  /** USD, which is also the token amount (a USD stablecoin). */
  amount: string;
  /** The token contract. */
  currency: string;
  recipient: string;
  description: string;
  nonce: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  chainId: number;
  decimals: number;
  /** 32 bytes to append to the transfer's data; required when PAYMENT_REQUIRE_MEMO is set. */
  memo: Hex;
}

/**
 * The memo of a challenge: a hash of its nonce, so a payment can be bound to the challenge it answers without showing
 * the nonce on chain (whoever saw the nonce could spend the challenge first).
 */
export const challengeMemo = (nonce: string): Hex => keccak256(stringToHex(`mpp:${nonce}`));

/** Stores a fresh challenge for `plugin` at `priceUsd` and answers the offer that describes it. */
export async function issueChallenge(
  db: Database,
  payments: PaymentsConfig,
  { plugin, priceUsd, now }: { plugin: string; priceUsd: string; now: number },
): Promise<MppOffer> {
  const nonce = randomHex(16);
  const expiresAt = now + MPP_CHALLENGE_TTL_MS;
  await db.kysely
    .insertInto('payment_challenges')
    .values({
      nonce,
      plugin,
      amount_usd: priceUsd,
      amount_atomic: parseUnits(priceUsd, payments.tokenDecimals).toString(),
      currency: payments.tokenAddress,
      recipient: payments.recipient,
      chain_id: payments.chainId,
      issued_at: new Date(now),
      expires_at: new Date(expiresAt),
    })
    .execute();
  // Housekeeping: every 402 answer writes a row, so every issue removes a few long-expired unused ones.
  await db.kysely
    .deleteFrom('payment_challenges')
    .where('nonce', 'in', (eb) =>
      eb
        .selectFrom('payment_challenges')
        .select('nonce')
        .where('used_at', 'is', null)
        .where('expires_at', '<', new Date(now - CHALLENGE_RETENTION_MS))
        .limit(20),
    )
    .execute();
  return {
    scheme: 'Payment',
    amount: priceUsd,
    currency: payments.tokenAddress,
    recipient: payments.recipient,
    description: `${plugin} plugin call (${PLUGIN_PURPOSES[plugin] ?? 'plugin'})`,
    nonce,
    expiresAt,
    chainId: payments.chainId,
    decimals: payments.tokenDecimals,
    memo: challengeMemo(nonce),
  };
}

/** A WWW-Authenticate auth-param value: quoted, with `\` and `"` escaped (RFC 9110 quoted-string). */
const quoted = (value: string | number) => `"${String(value).replace(/[\\"]/g, '\\$&')}"`;

/**
 * Spec §2.12 / §4.4: the 402 answer with a fresh challenge. `reason` says why a credential was refused. The card
 * option points at the card checkout; its `amount` is the same USD price.
 */
export async function paymentRequired(
  deps: MppDeps,
  payments: PaymentsConfig,
  { plugin, priceUsd, reason }: { plugin: string; priceUsd: string; reason?: string },
): Promise<PaymentError> {
  const now = (deps.clock ?? Date.now)();
  const mpp = await issueChallenge(deps.db, payments, { plugin, priceUsd, now });
  const checkoutUrl = `${deps.config.publicUrl}/api/payments/card/checkout?plan=solo`;
  return new PaymentError(
    402,
    {
      error: 'payment_required',
      message: `Payment required for ${plugin}. Choose payment method: mpp (pay ${priceUsd} USD on chain, then send Authorization: Payment), card (sign in; metered) or session (X-Payment-Method: session with a funded payment session).`,
      ...(reason ? { reason } : {}),
      mpp,
      card: { checkoutUrl, amount: priceUsd, currency: 'usd' },
      pricing: { plugin, amount: priceUsd, currency: 'usd', prices: deps.config.plugins.prices },
    },
    {
      'WWW-Authenticate': `Payment amount=${quoted(mpp.amount)}, currency=${quoted(mpp.currency)}, recipient=${quoted(mpp.recipient)}, nonce=${quoted(mpp.nonce)}, expires=${quoted(mpp.expiresAt)}, chainId=${quoted(mpp.chainId)}`,
    },
  );
}

export interface MppCredential {
  transaction: Hex;
  challengeNonce: string;
}

/**
 * The credential of `Authorization: Payment <credential>`: JSON `{ scheme: 'Payment', transaction, challengeNonce }`
 * (not-shown facts), also accepted base64url-encoded. Null when malformed.
 */
export function parseCredential(authorization: string | undefined): MppCredential | null {
  const match = authorization?.match(/^Payment\s+(.+)$/is);
  const raw = match?.[1]?.trim();
  if (!raw || raw.length > CREDENTIAL_MAX_LENGTH) return null;
  let value: unknown;
  try {
    value = JSON.parse(raw.startsWith('{') ? raw : Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { scheme, transaction, challengeNonce } = value as Record<string, unknown>;
  if (scheme !== undefined && scheme !== 'Payment') return null;
  if (typeof transaction !== 'string' || !TX_HASH.test(transaction)) return null;
  if (typeof challengeNonce !== 'string' || !NONCE.test(challengeNonce)) return null;
  return { transaction: transaction.toLowerCase() as Hex, challengeNonce };
}

/** A credential that cannot pay: the caller answers 402 with a fresh challenge and this reason. */
class Refusal extends Error {}

/**
 * Spec §4.4 MPP: verifies `Authorization: Payment <credential>` on chain and consumes it, or throws PaymentError (402
 * with a fresh challenge and a `reason`; 503 when the chain cannot answer, the credential left untouched for a retry).
 *
 * The credential must name an unexpired, unused challenge of this plugin; its transaction must have succeeded and
 * moved at least the price (less 0.0001) of the configured token to the recipient, in a block not older than the
 * challenge, and never have paid before. Consuming the challenge and recording the transaction happen in one
 * database transaction behind a unique key, so a credential pays once however many requests present it at once.
 */
export async function chargeMpp(
  deps: MppDeps,
  { plugin, priceUsd, authorization }: { plugin: string; priceUsd: string; authorization: string | undefined },
): Promise<ChargeResult> {
  const payments = deps.config.payments;
  if (!payments) {
    throw new PaymentError(503, { error: 'payment_unavailable', message: 'Machine payments (MPP) are not configured on this server' });
  }
  const clock = deps.clock ?? Date.now;
  // No credential yet (X-Payment-Method: mpp alone): the challenge, with nothing refused.
  if (!authorization) throw await paymentRequired(deps, payments, { plugin, priceUsd });
  try {
    const credential = parseCredential(authorization);
    if (!credential) throw new Refusal('malformed credential');
    const { transaction: txHash, challengeNonce: nonce } = credential;
    const db = deps.db.kysely;

    const challenge = await db.selectFrom('payment_challenges').selectAll().where('nonce', '=', nonce).executeTakeFirst();
    if (!challenge) throw new Refusal('unknown challenge');
    if (challenge.plugin !== plugin) throw new Refusal('challenge is for another plugin');
    if (challenge.used_at) throw new Refusal('challenge already used');
    if (challenge.expires_at.getTime() <= clock()) throw new Refusal('challenge expired');
    const used = await db.selectFrom('payment_transactions').select('tx_hash').where('tx_hash', '=', txHash).executeTakeFirst();
    if (used) throw new Refusal('transaction already used');

    const verdict = await verifyTokenTransfer(payments, {
      txHash,
      minAmount: minimumTokenUnits(challenge.amount_usd, payments.tokenDecimals),
      notBeforeMs: challenge.issued_at.getTime(),
      ...(payments.requireMemo ? { memo: challengeMemo(nonce) } : {}),
    });
    if (!verdict.ok) throw new Refusal(verdict.reason);

    // One transaction: the challenge is consumed only if it is still free, and the hash is recorded only once (primary
    // key). A concurrent request with the same credential waits on the challenge row and then finds it used; one with
    // the same transaction and another challenge meets the primary key. Either way it rolls back and is refused.
    const now = clock();
    try {
      await db.transaction().execute(async (trx) => {
        const consumed = await trx
          .updateTable('payment_challenges')
          .set({ used_at: new Date(now), tx_hash: txHash })
          .where('nonce', '=', nonce)
          .where('used_at', 'is', null)
          .where('expires_at', '>', new Date(now))
          .returning('nonce')
          .executeTakeFirst();
        if (!consumed) throw new Refusal('challenge already used');
        await trx
          .insertInto('payment_transactions')
          .values({
            tx_hash: txHash,
            purpose: 'mpp',
            challenge_nonce: nonce,
            payer: verdict.payer,
            amount_atomic: verdict.amount.toString(),
            block_number: Number(verdict.blockNumber),
          })
          .execute();
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new Refusal('transaction already used');
      throw err;
    }

    return {
      method: 'mpp',
      receipt: txHash,
      headers: { 'Payment-Receipt': txHash },
      // The plugin could not answer: the transaction and the challenge are free again (the challenge for another full
      // validity period), so the same credential can be presented once more.
      release: () =>
        deps.db.kysely.transaction().execute(async (trx) => {
          const freed = await trx
            .deleteFrom('payment_transactions')
            .where('tx_hash', '=', txHash)
            .where('challenge_nonce', '=', nonce)
            .returning('tx_hash')
            .executeTakeFirst();
          if (!freed) return;
          await trx
            .updateTable('payment_challenges')
            .set({ used_at: null, tx_hash: null, expires_at: new Date(Math.max(clock(), now) + MPP_CHALLENGE_TTL_MS) })
            .where('nonce', '=', nonce)
            .execute();
        }),
    };
  } catch (err) {
    if (err instanceof Refusal) throw await paymentRequired(deps, payments, { plugin, priceUsd, reason: err.message });
    if (err instanceof ChainUnavailableError) {
      deps.logger?.warn({ err: err.message }, 'MPP credential not verified: payment chain unavailable');
      throw new PaymentError(
        503,
        { error: 'payment_unavailable', message: 'The payment network cannot be reached; present the same credential again later' },
        { 'Retry-After': '5' },
      );
    }
    throw err;
  }
}
