import {
  BaseError,
  type Chain,
  ContractFunctionRevertedError,
  type Hex,
  HttpRequestError,
  TimeoutError,
  WaitForTransactionReceiptTimeoutError,
  concatHex,
  createWalletClient,
  encodeFunctionData,
  http,
  keccak256,
  parseAbi,
  parseSignature,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { Eip3009Authorization } from './payment-auth.js';
import { ChainUnavailableError, PAYMENT_RPC_TIMEOUT_MS, type PaymentsConfig, checkedPaymentClient } from './onchain.js';

/**
 * Settlement of EIP-3009 authorizations (the standard `evm` charge credential): the configured settler account
 * submits the payer's signed `transferWithAuthorization` to the payment token, which moves the tokens from the payer
 * to the recipient. The settler pays only gas; the token checks the signature, the validity window and the
 * authorization's single use.
 */

/** How long a request waits for its settlement to be mined (and confirmed) before answering 503. */
export const SETTLEMENT_TIMEOUT_MS = 30_000;

/** EIP-3009 as USDC (FiatToken v2) has it: the (v, r, s) form every EIP-3009 token implements. */
const eip3009Abi = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
]);

/** The token would not execute the authorization (bad signature, expired, already used, balance too low…). */
export class SettlementRefusedError extends Error {
  override readonly name = 'SettlementRefusedError';
}

/**
 * The settlement transaction was handed to the RPC but its answer was lost: it may be on its way. Its hash is already
 * stored with the challenge, so the credential must not be freed; presenting it again looks the transaction up.
 */
export class SettlementOutcomeUnknownError extends ChainUnavailableError {}

/** The settlement account's wallet client, built once per config object. */
const makeWallet = (payments: PaymentsConfig, key: Hex, chain: Chain | undefined) =>
  createWalletClient({
    account: privateKeyToAccount(key),
    chain,
    // No retries: a raw transaction resent after a lost answer is refused as known and would look like a failure.
    transport: http(payments.rpcUrl, { timeout: PAYMENT_RPC_TIMEOUT_MS, retryCount: 0 }),
  });
const wallets = new WeakMap<PaymentsConfig, ReturnType<typeof makeWallet>>();

/** One settlement at a time per settler account in this process: each takes the next nonce only after the last was sent. */
const queues = new Map<string, Promise<unknown>>();
function oneAtATime<T>(settler: string, task: () => Promise<T>): Promise<T> {
  const run = (queues.get(settler) ?? Promise.resolve()).then(task, task);
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  queues.set(settler, tail);
  void tail.then(() => {
    if (queues.get(settler) === tail) queues.delete(settler);
  });
  return run;
}

const isNetworkFailure = (err: unknown) =>
  err instanceof BaseError && Boolean(err.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError));

/**
 * Submits `authorization` to the payment token with `memo` appended to the call data, and answers the transaction's
 * hash. `beforeSend(hash)` runs once the transaction is signed and before it leaves: it records the hash, so no
 * payment can be on chain without the challenge knowing it (a failure there sends nothing).
 *
 * Throws SettlementRefusedError when the token refuses the authorization (found by simulating the call: nothing is
 * sent and no gas spent), ChainUnavailableError when the RPC cannot be asked or refuses the transaction (nothing was
 * sent), SettlementOutcomeUnknownError when the answer to the send was lost.
 */
export async function settleAuthorization(
  payments: PaymentsConfig,
  { authorization, memo }: { authorization: Eip3009Authorization; memo: Hex },
  beforeSend: (hash: Hex) => Promise<void>,
): Promise<Hex> {
  if (!payments.settlerKey) throw new ChainUnavailableError('No settlement account (PAYMENT_SETTLER_KEY) is configured');
  const client = await checkedPaymentClient(payments);
  const wallet = wallets.get(payments) ?? makeWallet(payments, payments.settlerKey, client.chain);
  wallets.set(payments, wallet);
  const { account } = wallet;

  const { r, s, v, yParity } = parseSignature(authorization.signature);
  const args = [
    authorization.from,
    authorization.to,
    authorization.value,
    authorization.validAfter,
    authorization.validBefore,
    authorization.nonce,
    Number(v ?? BigInt(yParity + 27)),
    r,
    s,
  ] as const;

  try {
    await client.simulateContract({
      account,
      address: payments.tokenAddress,
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args,
    });
  } catch (err) {
    const reverted = err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError) : null;
    if (reverted instanceof ContractFunctionRevertedError) {
      throw new SettlementRefusedError(reverted.reason ?? reverted.shortMessage);
    }
    throw new ChainUnavailableError(`Payment RPC failed: ${(err as Error).message}`);
  }

  const data = concatHex([encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args }), memo]);
  return oneAtATime(account.address, async () => {
    let serializedTransaction: Hex;
    try {
      const prepared = await wallet.prepareTransactionRequest({ account, to: payments.tokenAddress, data, chain: client.chain });
      serializedTransaction = await wallet.signTransaction({ ...prepared, chain: client.chain });
    } catch (err) {
      throw new ChainUnavailableError(`Settlement not prepared: ${(err as Error).message}`);
    }
    const hash = keccak256(serializedTransaction);
    await beforeSend(hash);
    try {
      await wallet.sendRawTransaction({ serializedTransaction });
    } catch (err) {
      // The node already holds it (a proxy on the way resent it): it is sent.
      if (/already known/i.test((err as Error).message)) return hash;
      if (isNetworkFailure(err)) throw new SettlementOutcomeUnknownError(`Settlement ${hash} sent, no answer: ${(err as Error).message}`);
      // The node said no (nonce taken by another replica, no gas money…): nothing is on its way.
      throw new ChainUnavailableError(`Settlement refused by the RPC: ${(err as BaseError).shortMessage ?? (err as Error).message}`);
    }
    return hash;
  });
}

/** Waits until `hash` is mined with the configured confirmations; ChainUnavailableError when that takes too long. */
export async function awaitSettlement(payments: PaymentsConfig, hash: Hex): Promise<void> {
  const client = await checkedPaymentClient(payments);
  try {
    await client.waitForTransactionReceipt({ hash, confirmations: payments.minConfirmations, timeout: SETTLEMENT_TIMEOUT_MS });
  } catch (err) {
    if (err instanceof WaitForTransactionReceiptTimeoutError) {
      throw new ChainUnavailableError(`Settlement ${hash} not mined within ${SETTLEMENT_TIMEOUT_MS / 1000} s`);
    }
    throw new ChainUnavailableError(`Payment RPC failed: ${(err as Error).message}`);
  }
}
