import {
  type Address,
  type Hex,
  type PublicClient,
  TransactionReceiptNotFoundError,
  createPublicClient,
  defineChain,
  erc20Abi,
  http,
  isAddressEqual,
  parseEventLogs,
} from 'viem';
import type { WebConfig } from '../../config.js';

export type PaymentsConfig = NonNullable<WebConfig['payments']>;

/** Every call to the payment chain's RPC gives up after this long (one retry on a network error). */
export const PAYMENT_RPC_TIMEOUT_MS = 10_000;

/**
 * Block timestamps are whole seconds and the chain's clock is not ours: a transfer may carry a timestamp up to this
 * much before the challenge it pays and still count as made for it. The real replay guard is the single use of each
 * transaction hash; this check only refuses transfers made long before the challenge existed.
 */
export const BLOCK_TIME_SKEW_MS = 30_000;

/** The RPC cannot be reached, answers for another chain, or fails: nothing was decided about the payment. */
export class ChainUnavailableError extends Error {
  override readonly name = 'ChainUnavailableError';
}

const clients = new WeakMap<PaymentsConfig, { client: PublicClient; chainChecked?: Promise<void> }>();

function entry(payments: PaymentsConfig) {
  let found = clients.get(payments);
  if (!found) {
    const chain = defineChain({
      id: payments.chainId,
      name: `Payment chain ${payments.chainId}`,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [payments.rpcUrl] } },
    });
    found = {
      client: createPublicClient({
        chain,
        transport: http(payments.rpcUrl, { timeout: PAYMENT_RPC_TIMEOUT_MS, retryCount: 1, retryDelay: 100 }),
        pollingInterval: 1_000,
      }),
    };
    clients.set(payments, found);
  }
  return found;
}

/** A viem public client for the payment chain; one per config object. */
export const paymentClient = (payments: PaymentsConfig): PublicClient => entry(payments).client;

/**
 * The client, once the RPC has said it serves `PAYMENT_CHAIN_ID`: a payment on a test network must never count as one
 * on the configured chain. The answer is remembered; a failure to ask is not.
 */
export async function checkedPaymentClient(payments: PaymentsConfig): Promise<PublicClient> {
  const found = entry(payments);
  found.chainChecked ??= (async () => {
    let id: number;
    try {
      id = await found.client.getChainId();
    } catch (err) {
      found.chainChecked = undefined;
      throw new ChainUnavailableError(`Payment RPC unreachable: ${(err as Error).message}`);
    }
    if (id !== payments.chainId) throw new ChainUnavailableError(`Payment RPC serves chain ${id}, PAYMENT_CHAIN_ID is ${payments.chainId}`);
  })();
  await found.chainChecked;
  return found.client;
}

export interface TransferCheck {
  txHash: Hex;
  /** The least the transaction must move to the recipient, in the token's smallest unit. */
  minAmount: bigint;
  /** Only transfers from this address count (a session deposit comes from the session's wallet). */
  from?: Address;
  /** The block must not be older than this (epoch ms, less BLOCK_TIME_SKEW_MS): an MPP challenge's issue time. */
  notBeforeMs?: number;
  /** 32 bytes the transaction's data must contain: binds an MPP payment to its challenge. */
  memo?: Hex;
}

export type TransferVerdict = { ok: true; payer: Address; amount: bigint; blockNumber: bigint } | { ok: false; reason: string };

/**
 * Reads a transaction from the payment chain and says whether it paid: mined successfully with enough confirmations,
 * with ERC-20 `Transfer` logs emitted by the configured token to the configured recipient (from `from` when given)
 * adding up to at least `minAmount`, in a block not older than `notBeforeMs`, carrying `memo` when asked. The hash's
 * single use is the caller's business (a unique row). Throws ChainUnavailableError when the chain cannot answer.
 */
export async function verifyTokenTransfer(payments: PaymentsConfig, check: TransferCheck): Promise<TransferVerdict> {
  const client = await checkedPaymentClient(payments);
  const rpc = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (err) {
      if (err instanceof TransactionReceiptNotFoundError) throw err;
      throw new ChainUnavailableError(`Payment RPC failed: ${(err as Error).message}`);
    }
  };

  let receipt: Awaited<ReturnType<PublicClient['getTransactionReceipt']>>;
  try {
    receipt = await rpc(() => client.getTransactionReceipt({ hash: check.txHash }));
  } catch (err) {
    if (err instanceof TransactionReceiptNotFoundError) return { ok: false, reason: 'transaction not found or not mined yet' };
    throw err;
  }
  if (receipt.status !== 'success') return { ok: false, reason: 'transaction failed' };

  if (payments.minConfirmations > 1) {
    const head = await rpc(() => client.getBlockNumber({ cacheTime: 0 }));
    if (head - receipt.blockNumber + 1n < BigInt(payments.minConfirmations)) {
      return { ok: false, reason: 'transaction not confirmed yet' };
    }
  }

  const transfers = parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: receipt.logs, strict: true }).filter(
    (log) =>
      isAddressEqual(log.address, payments.tokenAddress) &&
      isAddressEqual(log.args.to, payments.recipient) &&
      (!check.from || isAddressEqual(log.args.from, check.from)),
  );
  if (transfers.length === 0) {
    return {
      ok: false,
      reason: check.from
        ? 'no transfer of the payment token from that wallet to the recipient'
        : 'no transfer of the payment token to the recipient',
    };
  }
  const amount = transfers.reduce((sum, log) => sum + log.args.value, 0n);
  if (amount < check.minAmount) return { ok: false, reason: 'amount below the price' };

  if (check.notBeforeMs !== undefined) {
    const block = await rpc(() => client.getBlock({ blockNumber: receipt.blockNumber }));
    if (Number(block.timestamp) * 1000 < check.notBeforeMs - BLOCK_TIME_SKEW_MS) {
      return { ok: false, reason: 'transaction predates the challenge' };
    }
  }

  if (check.memo) {
    const tx = await rpc(() => client.getTransaction({ hash: check.txHash }));
    if (!tx.input.toLowerCase().includes(check.memo.slice(2).toLowerCase())) {
      return { ok: false, reason: 'transaction does not carry the challenge memo' };
    }
  }

  return { ok: true, payer: transfers[0]!.args.from.toLowerCase() as Address, amount, blockNumber: receipt.blockNumber };
}
