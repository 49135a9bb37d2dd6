import {
  type Address,
  CallExecutionError,
  type Hex,
  type PublicClient,
  createPublicClient,
  defineChain,
  encodeDeployData,
  erc20Abi,
  erc6492SignatureValidatorAbi,
  erc6492SignatureValidatorByteCode,
  formatUnits,
  hexToBool,
  http,
  isErc6492Signature,
  parseUnits,
} from 'viem';
import type { WebConfig } from '../../config.js';

type GatingConfig = WebConfig['gating'];

/** Every call to the gating network's RPC gives up after this long (one retry on a network error). */
export const CHAIN_RPC_TIMEOUT_MS = 10_000;

const clients = new WeakMap<GatingConfig, PublicClient>();

/**
 * A viem public client for the gating network (spec §4.1: wallets sign in on it,
 * gate tokens live on it), or undefined when `GATING_RPC_URL` is not set. One
 * client per config object.
 */
export function gatingClient(gating: GatingConfig): PublicClient | undefined {
  if (!gating.rpcUrl) return undefined;
  let client = clients.get(gating);
  if (!client) {
    const chain = defineChain({
      id: gating.chainId,
      name: `Gating network ${gating.chainId}`,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [gating.rpcUrl] } },
    });
    client = createPublicClient({
      chain,
      transport: http(gating.rpcUrl, { timeout: CHAIN_RPC_TIMEOUT_MS, retryCount: 1, retryDelay: 100 }),
      pollingInterval: 1_000,
    });
    clients.set(gating, client);
  }
  return client;
}

/**
 * What signed: a deployed contract wallet, a counterfactual (not yet deployed)
 * wallet presenting an ERC-6492 signature, an EOA with an EIP-7702 delegation
 * (code `0xef0100‖delegate`), or a plain EOA.
 */
export type WalletKind = 'contract' | 'counterfactual' | 'eip7702-delegated-eoa' | 'eoa';

/** EIP-7702 delegation designator: an EOA's code is `0xef0100` followed by the 20-byte delegate. */
const EIP7702_PREFIX = '0xef0100';

export async function detectWalletKind(client: PublicClient, address: Address, signature: Hex): Promise<WalletKind> {
  const code = await client.getCode({ address });
  if (code && code !== '0x') return code.toLowerCase().startsWith(EIP7702_PREFIX) ? 'eip7702-delegated-eoa' : 'contract';
  return isErc6492Signature(signature) ? 'counterfactual' : 'eoa';
}

/**
 * ERC-1271 / ERC-6492 verification with no ECDSA fallback: runs the ERC-6492
 * universal validator in a deployless `eth_call`. For a deployed contract it
 * asks the contract (`isValidSignature`); for a 6492-wrapped signature it
 * deploys the wallet inside the simulation first. viem's `verifyHash` falls
 * back to ecrecover when this fails, so a signature only an EOA could make
 * would pass there; here it does not. Call it only for `contract` or
 * `counterfactual` wallets: for an address without code and without a 6492
 * wrapper the validator itself does ecrecover.
 */
export async function verifyContractWalletSignature(
  client: PublicClient,
  { address, hash, signature }: { address: Address; hash: Hex; signature: Hex },
): Promise<boolean> {
  try {
    const { data } = await client.call({
      data: encodeDeployData({
        abi: erc6492SignatureValidatorAbi,
        args: [address, hash, signature],
        bytecode: erc6492SignatureValidatorByteCode,
      }),
    });
    return hexToBool(data ?? '0x0');
  } catch (err) {
    // The validator reverts on a refused signature or a failed counterfactual deployment.
    if (err instanceof CallExecutionError && !isTransportFailure(err)) return false;
    throw err;
  }
}

/** A call that never reached a node (refused connection, timeout, HTTP error) as opposed to one the EVM reverted. */
function isTransportFailure(err: CallExecutionError): boolean {
  return Boolean(err.walk((e) => (e as { name?: string }).name === 'HttpRequestError' || (e as { name?: string }).name === 'TimeoutError'));
}

export interface GateBalance {
  /** In the token's smallest unit. */
  balance: bigint;
  decimals: number;
  /** The threshold in the token's smallest unit: `minBalance` whole tokens scaled by `decimals`. */
  required: bigint;
  allowed: boolean;
}

/** Gate tokens are checked only when both the RPC URL and the token address are set. */
export const gateConfigured = (gating: GatingConfig): gating is GatingConfig & { rpcUrl: string; tokenAddress: Address } =>
  Boolean(gating.rpcUrl && gating.tokenAddress);

/** Reads `balanceOf(holder)` and `decimals()` of the gate token and compares with `minBalance` whole tokens. */
export async function readGateBalance(
  client: PublicClient,
  { token, holder, minBalance }: { token: Address; holder: Address; minBalance: string },
): Promise<GateBalance> {
  const [balance, decimals] = await Promise.all([
    client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] }),
    client.readContract({ address: token, abi: erc20Abi, functionName: 'decimals' }),
  ]);
  const required = parseUnits(minBalance, decimals);
  return { balance, decimals, required, allowed: balance >= required };
}

/** A base-unit amount as a decimal string of whole tokens: 1250000000000000000000000n with 18 decimals → '1250000'. */
export const wholeTokens = (amount: bigint, decimals: number): string => formatUnits(amount, decimals);

/** The counter key of a sign-in nonce: issued by `/api/auth/nonce`, taken once by wallet sign-in or wallet linking. */
export const nonceKey = (nonce: string) => `siwe-nonce:${nonce}`;
