import { randomHex } from '@aop/core';
import { type Database, type PaymentChallengesTable, isUniqueViolation } from '@aop/db';
import type { Selectable } from 'kysely';
import { type Address, type Hex, isAddressEqual, keccak256, parseUnits, stringToHex } from 'viem';
import type { WebConfig } from '../../config.js';
import { minimumTokenUnits } from './money.js';
import { ChainUnavailableError, type PaymentsConfig, type TransferVerdict, verifyTokenTransfer } from './onchain.js';
import {
  type AuthorizationCredential,
  CHARGE_INTENT,
  EVM_METHOD,
  authorizationNonce,
  evmChargeRequest,
  parseAuthorizationCredential,
  paymentReceipt,
  standardChallengeParams,
} from './payment-auth.js';
import { SettlementOutcomeUnknownError, SettlementRefusedError, awaitSettlement, settleAuthorization } from './settlement.js';
import { type ChargeResult, PaymentError } from './types.js';

/** Not-shown facts: a challenge is valid for 5 minutes. */
export const MPP_CHALLENGE_TTL_MS = 5 * 60_000;
/** Unused challenges are deleted this long after they expired (a few at a time, when new ones are issued). */
const CHALLENGE_RETENTION_MS = 24 * 60 * 60_000;
/** A standard credential echoes its whole challenge (about 1.5 kB base64url); 8 kB leaves room and bounds parsing. */
const CREDENTIAL_MAX_LENGTH = 8_192;
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

/** The realm of the standard challenge: our public host. The payer signs it into the authorization's nonce. */
const realmOf = (config: WebConfig) => new URL(config.publicUrl).host;

/**
 * The `WWW-Authenticate` value of a 402: the spec's `Payment amount=…, currency=…, recipient=…` (§4.4) with our
 * `nonce`, `expires` and `chainId`, then — when a settlement account is configured — the Payment authentication
 * scheme's own parameters for an `evm` charge (`id` = the nonce, `realm`, `method`, `intent`, `request`,
 * `description`). One challenge that both kinds of client read; docs/decisions.md says why not two. `expires` is
 * RFC 3339, as the scheme requires; the body's `expiresAt` stays epoch milliseconds (§2.12).
 */
export function challengeHeader(config: WebConfig, payments: PaymentsConfig, mpp: MppOffer): string {
  const params: [string, string | number][] = [
    ['amount', mpp.amount],
    ['currency', mpp.currency],
    ['recipient', mpp.recipient],
    ['nonce', mpp.nonce],
    ['expires', new Date(mpp.expiresAt).toISOString()],
    ['chainId', mpp.chainId],
  ];
  if (payments.settlerKey) {
    const request = evmChargeRequest({
      amountAtomic: parseUnits(mpp.amount, mpp.decimals),
      currency: mpp.currency,
      recipient: mpp.recipient,
      chainId: mpp.chainId,
      decimals: mpp.decimals,
    });
    params.push(...standardChallengeParams({ id: mpp.nonce, realm: realmOf(config), request, description: mpp.description }));
  }
  return `Payment ${params.map(([name, value]) => `${name}=${quoted(value)}`).join(', ')}`;
}

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
    { 'WWW-Authenticate': challengeHeader(deps.config, payments, mpp) },
  );
}

/** The spec's credential (not-shown facts): the hash of a transfer the payer made, and the challenge it pays. */
export interface TransactionCredential {
  kind: 'transaction';
  transaction: Hex;
  challengeNonce: string;
}

/** The Payment authentication scheme's `evm` charge credential: an EIP-3009 authorization for a challenge. */
export interface StandardCredential extends AuthorizationCredential {
  kind: 'authorization';
  challengeNonce: string;
}

export type MppCredential = TransactionCredential | StandardCredential;

/**
 * The credential of `Authorization: Payment <credential>`, either form, or null when malformed:
 * - the spec's: JSON `{ scheme: 'Payment', transaction, challengeNonce }`, also base64url-encoded;
 * - the Payment authentication scheme's: base64url JSON `{ challenge, payload, source? }` (payment-auth.ts).
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
  if ('challenge' in value) {
    const standard = parseAuthorizationCredential(value);
    return standard ? { kind: 'authorization', challengeNonce: standard.challenge.id, ...standard } : null;
  }
  const { scheme, transaction, challengeNonce } = value as Record<string, unknown>;
  if (scheme !== undefined && scheme !== 'Payment') return null;
  if (typeof transaction !== 'string' || !TX_HASH.test(transaction)) return null;
  if (typeof challengeNonce !== 'string' || !NONCE.test(challengeNonce)) return null;
  return { kind: 'transaction', transaction: transaction.toLowerCase() as Hex, challengeNonce };
}

/** A credential that cannot pay: the caller answers 402 with a fresh challenge and this reason. */
class Refusal extends Error {}

type Challenge = Selectable<PaymentChallengesTable>;
type Db = Database['kysely'];
type Paid = { txHash: Hex; receipt: string };

/**
 * Spec §4.4 MPP: verifies `Authorization: Payment <credential>` on chain and consumes it, or throws PaymentError (402
 * with a fresh challenge and a `reason`; 503 when the chain cannot answer, the credential left usable for a retry).
 *
 * The credential must name an unexpired, unused challenge of this plugin. The spec's form names a transaction the
 * payer made; the standard form carries an EIP-3009 authorization that the settlement account submits first. Either
 * way the transaction must have succeeded and moved at least the price (less 0.0001) of the configured token to the
 * recipient, in a block not older than the challenge (with its memo when PAYMENT_REQUIRE_MEMO is set), and never have
 * paid before. The challenge is consumed and the transaction recorded in one database transaction behind a unique
 * key, so a credential pays once however many requests present it at once.
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
    const nonce = credential.challengeNonce;
    const challenge = await deps.db.kysely.selectFrom('payment_challenges').selectAll().where('nonce', '=', nonce).executeTakeFirst();
    if (!challenge) throw new Refusal('unknown challenge');
    if (challenge.plugin !== plugin) throw new Refusal('challenge is for another plugin');

    const { txHash, receipt } =
      credential.kind === 'transaction'
        ? await payWithTransaction(deps, payments, challenge, credential.transaction)
        : await payWithAuthorization(deps, payments, challenge, credential);
    const paidAt = clock();
    return {
      method: 'mpp',
      receipt: txHash,
      headers: { 'Payment-Receipt': receipt },
      // The plugin could not answer: the transaction is free again and the challenge restored for another full
      // validity period, still bound to that transaction, so the same credential can be presented once more.
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
            .set({ used_at: null, expires_at: new Date(Math.max(clock(), paidAt) + MPP_CHALLENGE_TTL_MS) })
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

const transferCheck = (payments: PaymentsConfig, challenge: Challenge, txHash: Hex) => ({
  txHash,
  minAmount: minimumTokenUnits(challenge.amount_usd, payments.tokenDecimals),
  notBeforeMs: challenge.issued_at.getTime(),
  ...(payments.requireMemo ? { memo: challengeMemo(challenge.nonce) } : {}),
});

/**
 * Records `txHash` as the payment of `nonce` inside `consume`'s database transaction; a hash recorded before (the
 * primary key) is `duplicate`.
 */
async function recordPayment(
  db: Db,
  { txHash, nonce, verdict, duplicate }: { txHash: Hex; nonce: string; verdict: Extract<TransferVerdict, { ok: true }>; duplicate: string },
  consume: (trx: Db) => Promise<void>,
): Promise<void> {
  try {
    await db.transaction().execute(async (trx) => {
      await consume(trx);
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
    if (isUniqueViolation(err)) throw new Refusal(duplicate);
    throw err;
  }
}

/** The spec's credential: a transfer the payer already made. */
async function payWithTransaction(deps: MppDeps, payments: PaymentsConfig, challenge: Challenge, txHash: Hex): Promise<Paid> {
  const db = deps.db.kysely;
  const clock = deps.clock ?? Date.now;
  const { nonce } = challenge;
  if (challenge.used_at) throw new Refusal('challenge already used');
  if (challenge.expires_at.getTime() <= clock()) throw new Refusal('challenge expired');
  // A challenge released after a failed plugin run stays bound to the transaction that paid it.
  if (challenge.tx_hash && challenge.tx_hash !== txHash) throw new Refusal('challenge already used');
  const used = await db.selectFrom('payment_transactions').select('tx_hash').where('tx_hash', '=', txHash).executeTakeFirst();
  if (used) throw new Refusal('transaction already used');

  const verdict = await verifyTokenTransfer(payments, transferCheck(payments, challenge, txHash));
  if (!verdict.ok) throw new Refusal(verdict.reason);

  // The challenge is consumed only if it is still free. A concurrent request with the same credential waits on the
  // challenge row and then finds it used; one with the same transaction and another challenge meets the primary key.
  const now = clock();
  await recordPayment(db, { txHash, nonce, verdict, duplicate: 'transaction already used' }, async (trx) => {
    const consumed = await trx
      .updateTable('payment_challenges')
      .set({ used_at: new Date(now), tx_hash: txHash })
      .where('nonce', '=', nonce)
      .where('used_at', 'is', null)
      .where('expires_at', '>', new Date(now))
      .where((eb) => eb.or([eb('tx_hash', 'is', null), eb('tx_hash', '=', txHash)]))
      .returning('nonce')
      .executeTakeFirst();
    if (!consumed) throw new Refusal('challenge already used');
  });
  return { txHash, receipt: txHash };
}

/** The echoed challenge is the one we issued: this server, the `evm` charge, and the request we stored. */
function echoesChallenge(echoed: AuthorizationCredential['challenge'], challenge: Challenge, realm: string): boolean {
  const { request } = echoed;
  const details = request.methodDetails as Record<string, unknown> | undefined;
  return (
    echoed.method === EVM_METHOD &&
    echoed.intent === CHARGE_INTENT &&
    echoed.realm === realm &&
    request.amount === String(challenge.amount_atomic) &&
    typeof request.currency === 'string' &&
    request.currency.toLowerCase() === challenge.currency &&
    typeof request.recipient === 'string' &&
    request.recipient.toLowerCase() === challenge.recipient &&
    details?.chainId === challenge.chain_id
  );
}

/** Frees a challenge claimed for a settlement that moved nothing. */
const unclaim = (db: Db, nonce: string) =>
  db.updateTable('payment_challenges').set({ used_at: null, tx_hash: null }).where('nonce', '=', nonce).execute();

/** Gives up the claim but keeps the settlement's hash: the next presentation verifies it instead of settling again. */
const suspend = (db: Db, nonce: string) => db.updateTable('payment_challenges').set({ used_at: null }).where('nonce', '=', nonce).execute();

/**
 * The standard credential: an EIP-3009 authorization the settlement account submits to the token, after which the
 * resulting transfer is verified like any other. The challenge is claimed (`used_at`) while a request works on it, so
 * concurrent presentations settle once, and the settlement's hash is stored with it before the transaction leaves.
 *
 * A challenge that keeps a hash without being used holds a settlement already made for it — its answer was lost or
 * not yet final (503), or its plugin run failed (release): the next presentation verifies that transaction, even past
 * the challenge's expiry (it was paid in time). Nothing is ever submitted twice for one challenge.
 */
async function payWithAuthorization(
  deps: MppDeps,
  payments: PaymentsConfig,
  challenge: Challenge,
  credential: StandardCredential,
): Promise<Paid> {
  const db = deps.db.kysely;
  const clock = deps.clock ?? Date.now;
  const { nonce } = challenge;
  const realm = realmOf(deps.config);
  if (!payments.settlerKey) throw new Refusal('evm authorization credentials are not accepted here');
  const { authorization } = credential;
  // What is signed must pay this challenge, whatever the echoed copy says: the token only executes the signature.
  if (!isAddressEqual(authorization.to, challenge.recipient as Address)) throw new Refusal('authorization pays another recipient');
  if (authorization.value < minimumTokenUnits(challenge.amount_usd, payments.tokenDecimals)) throw new Refusal('amount below the price');
  if (authorization.nonce !== authorizationNonce(nonce, realm)) throw new Refusal('authorization is for another challenge');
  if (!echoesChallenge(credential.challenge, challenge, realm)) throw new Refusal('credential does not match the challenge');
  if (challenge.currency !== payments.tokenAddress || challenge.chain_id !== payments.chainId) {
    throw new Refusal('challenge is for another token or chain');
  }
  if (challenge.used_at) throw new Refusal('challenge already used');

  const now = clock();
  const settled = challenge.tx_hash as Hex | null;
  if (!settled) {
    if (challenge.expires_at.getTime() <= now) throw new Refusal('challenge expired');
    const nowSeconds = BigInt(Math.floor(now / 1000));
    if (authorization.validAfter >= nowSeconds) throw new Refusal('authorization not valid yet');
    if (authorization.validBefore <= nowSeconds) throw new Refusal('authorization expired');
  }
  const claimed = await db
    .updateTable('payment_challenges')
    .set({ used_at: new Date(now) })
    .where('nonce', '=', nonce)
    .where('used_at', 'is', null)
    .where((eb) => (settled ? eb('tx_hash', '=', settled) : eb('tx_hash', 'is', null)))
    .returning('nonce')
    .executeTakeFirst();
  if (!claimed) throw new Refusal('challenge already used');

  const txHash = settled ?? (await settle(db, payments, nonce, authorization));
  let verdict: TransferVerdict;
  try {
    if (!settled) await awaitSettlement(payments, txHash);
    verdict = await verifyTokenTransfer(payments, transferCheck(payments, challenge, txHash));
  } catch (err) {
    await suspend(db, nonce);
    throw err;
  }
  if (!verdict.ok) {
    // A reverted settlement moved nothing and left the authorization unspent: the challenge is entirely free again.
    await (verdict.reason === 'transaction failed' ? unclaim(db, nonce) : suspend(db, nonce));
    throw new Refusal(verdict.reason);
  }
  if (!isAddressEqual(verdict.payer, authorization.from)) {
    await suspend(db, nonce);
    throw new Refusal('transaction was not made for this credential');
  }

  await recordPayment(db, { txHash, nonce, verdict, duplicate: 'challenge already used' }, async (trx) => {
    const held = await trx
      .selectFrom('payment_challenges')
      .select('nonce')
      .where('nonce', '=', nonce)
      .where('used_at', 'is not', null)
      .where('tx_hash', '=', txHash)
      .forUpdate()
      .executeTakeFirst();
    if (!held) throw new Refusal('challenge already used');
  });
  return { txHash, receipt: paymentReceipt({ reference: txHash, timestamp: clock() }) };
}

/**
 * Submits the authorization (the claimed challenge's memo appended) and answers the settlement's hash, stored with the
 * challenge before it is sent. When nothing was sent the challenge is freed; when the send's answer was lost it keeps
 * the hash for the next presentation.
 */
async function settle(db: Db, payments: PaymentsConfig, nonce: string, authorization: StandardCredential['authorization']): Promise<Hex> {
  try {
    return await settleAuthorization(payments, { authorization, memo: challengeMemo(nonce) }, async (hash) => {
      const stored = await db
        .updateTable('payment_challenges')
        .set({ tx_hash: hash })
        .where('nonce', '=', nonce)
        .where('used_at', 'is not', null)
        .where('tx_hash', 'is', null)
        .returning('nonce')
        .executeTakeFirst();
      if (!stored) throw new Error(`Challenge ${nonce} lost its claim before its settlement was sent`);
    });
  } catch (err) {
    await (err instanceof SettlementOutcomeUnknownError ? suspend(db, nonce) : unclaim(db, nonce));
    if (err instanceof SettlementRefusedError) throw new Refusal(`authorization refused by the token: ${err.message}`);
    throw err;
  }
}
