import { type CounterStore, DomainError, isDomainError } from '@aop/core';
import { type Database, isUniqueViolation, writeAudit } from '@aop/db';
import {
  type Address,
  type PublicClient,
  createPublicClient,
  erc20Abi,
  formatUnits,
  getAddress,
  http,
  isAddress,
  isAddressEqual,
  namehash,
  parseAbi,
  verifyMessage,
  zeroAddress,
} from 'viem';
import type { WebConfig } from '../../config.js';
import { CHAIN_RPC_TIMEOUT_MS, detectWalletKind, gatingClient } from '../../platform/clients/chain.js';
import { acceptSiweMessage } from '../../platform/siwe.js';
import type { WalletView } from './wallets.schemas.js';

/**
 * Wallets linked to an account (spec §4.18 Wallets): external wallets proven by a signed message, custodial wallets
 * made by a configured provider, ERC-20 balances on the payment chain and reverse names. No wallet is ever invented:
 * what is not configured answers 503.
 */

/** The statement a link message must carry, so a sign-in signature cannot be replayed to link a wallet. */
export const WALLET_LINK_STATEMENT = 'Link this wallet to my account.';

/** `POST /api/wallet/provider` actions (defined with the schemas, whose request schema lists them). */

export type { WalletView } from './wallets.schemas.js';

/** The account's wallets: its sign-in wallet first, then linked ones, oldest first. */
export async function listWallets(db: Database, userId: string): Promise<WalletView[]> {
  return db.withUser(userId, async (trx) => {
    const user = await trx.selectFrom('users').select('wallet_address').where('id', '=', userId).executeTakeFirstOrThrow();
    const rows = await trx
      .selectFrom('wallets')
      .select(['address', 'kind', 'signer', 'created_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const wallets: WalletView[] = rows.map((r) => ({
      address: r.address,
      kind: r.kind,
      signer: r.signer,
      createdAt: r.created_at.toISOString(),
    }));
    if (user.wallet_address && !wallets.some((w) => w.address === user.wallet_address)) {
      wallets.unshift({ address: user.wallet_address, kind: 'sign-in', signer: null, createdAt: null });
    }
    return wallets;
  });
}

/** The address the wallet endpoints act on: the sign-in wallet, else the oldest linked one. */
export const primaryAddress = (wallets: WalletView[]): string | null => wallets[0]?.address ?? null;

/** The route's schema (`LinkWalletBody`) has made each a non-empty string. */
export interface LinkRequest {
  address: string;
  message: string;
  signature: string;
}

/**
 * Links an external wallet: `message` is an EIP-4361 message with our domain, URI origin, the gating chain, the link
 * statement and a nonce from `GET /api/auth/nonce` (single use), signed by `address` (EIP-191). EOAs are checked by
 * recovery; with `GATING_RPC_URL` set, contract wallets (ERC-1271, ERC-6492) are accepted too. An address belongs to
 * one account. Answers the wallet and whether it was linked just now.
 */
export async function linkWallet(
  deps: { db: Database; counters: CounterStore; config: WebConfig },
  userId: string,
  body: LinkRequest,
  now: number,
  ip: string,
): Promise<{ wallet: WalletView; created: boolean }> {
  const { config } = deps;
  const { address, message, signature } = body;
  // Single use: the nonce is taken by the checks, gone from here on whatever happens next.
  const { wallet, signature: sig } = await acceptSiweMessage(
    deps.counters,
    { address, message, signature },
    {
      domain: config.siweDomain,
      origin: new URL(config.publicUrl).origin,
      chainId: config.gating.chainId,
      statement: WALLET_LINK_STATEMENT,
    },
    now,
  );

  const client = gatingClient(config.gating);
  let signer: string;
  if (client) {
    // The chain's answer covers EOAs (ecrecover), deployed contract wallets and counterfactual ones.
    signer = await detectWalletKind(client, wallet, sig);
    if (!(await client.verifyMessage({ address: wallet, message, signature: sig }))) throw new DomainError('SIGNATURE_VERIFICATION_FAILED');
  } else {
    // No chain to ask: only a plain ECDSA signature by the address's own key proves it.
    let valid = false;
    try {
      valid = await verifyMessage({ address: wallet, message, signature: sig });
    } catch {}
    if (!valid) throw new DomainError('SIGNATURE_VERIFICATION_FAILED');
    signer = 'eoa';
  }

  const owner = await deps.db.kysely.selectFrom('users').select('id').where('wallet_address', '=', wallet).executeTakeFirst();
  if (owner && owner.id !== userId) throw new DomainError('WALLET_ALREADY_LINKED_ANOTHER_ACCOUNT');
  try {
    const created = await deps.db.withUser(userId, async (trx) => {
      const existing = await trx.selectFrom('wallets').select(['created_at']).where('address', '=', wallet).executeTakeFirst();
      if (existing) return { createdAt: existing.created_at, created: false };
      const row = await trx
        .insertInto('wallets')
        .values({ user_id: userId, address: wallet, kind: 'external', signer })
        .returning('created_at')
        .executeTakeFirstOrThrow();
      await writeAudit(trx, { userId, action: 'wallet.link', target: wallet, ip, metadata: { signer } });
      return { createdAt: row.created_at, created: true };
    });
    return { wallet: { address: wallet, kind: 'external', signer, createdAt: created.createdAt.toISOString() }, created: created.created };
  } catch (err) {
    // Row-level security hides other accounts' wallets; the unique index still sees them.
    if (isUniqueViolation(err, 'wallets_address_key')) throw new DomainError('WALLET_ALREADY_LINKED_ANOTHER_ACCOUNT');
    throw err;
  }
}

type ProviderConfig = NonNullable<WebConfig['walletProvider']>;

/**
 * One call to the custodial wallet provider: JSON over HTTPS with `Authorization: Bearer WALLET_PROVIDER_API_KEY`
 * (docs/operations.md, "Wallet provider"). Anything but a 2xx JSON object is 502.
 */
export async function callWalletProvider(
  provider: ProviderConfig,
  path: string,
  body: Record<string, unknown>,
  log: { warn(obj: object, msg: string): void },
): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(`${provider.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(provider.apiKey ? { authorization: `Bearer ${provider.apiKey}` } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(provider.timeoutMs),
    });
  } catch (err) {
    log.warn({ path, reason: (err as Error).name }, 'wallet provider unreachable');
    throw new DomainError('WALLET_PROVIDER_REQUEST_FAILED');
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  if (!res.ok || typeof json !== 'object' || json === null || Array.isArray(json)) {
    log.warn({ path, status: res.status }, 'wallet provider refused');
    throw new DomainError('WALLET_PROVIDER_REQUEST_FAILED');
  }
  return json as Record<string, unknown>;
}

const requireProvider = (config: WebConfig): ProviderConfig => {
  if (!config.walletProvider) throw new DomainError('PROVIDER_UNCONFIGURED');
  return config.walletProvider;
};

/** The account's custodial wallet, made by the provider the first time (`POST /api/wallet/create`, `create_wallet`). */
export async function createCustodialWallet(
  deps: { db: Database; config: WebConfig; log: { warn(obj: object, msg: string): void } },
  userId: string,
  ip: string,
): Promise<{ wallet: WalletView; created: boolean }> {
  const provider = requireProvider(deps.config);
  const view = (r: { address: string; created_at: Date }): WalletView => ({
    address: r.address,
    kind: 'custodial',
    signer: null,
    createdAt: r.created_at.toISOString(),
  });
  const existing = await deps.db.withUser(userId, (trx) =>
    trx
      .selectFrom('wallets')
      .select(['address', 'created_at'])
      .where('user_id', '=', userId)
      .where('kind', '=', 'custodial')
      .executeTakeFirst(),
  );
  if (existing) return { wallet: view(existing), created: false };
  // The provider keys wallets by our user id, so asking twice gives the same wallet.
  const answer = await callWalletProvider(provider, '/wallets', { userId }, deps.log);
  if (typeof answer.address !== 'string' || !isAddress(answer.address, { strict: false }) || isAddressEqual(answer.address, zeroAddress)) {
    deps.log.warn({ path: '/wallets' }, 'wallet provider answered without an address');
    throw new DomainError('WALLET_PROVIDER_REQUEST_FAILED');
  }
  const address = answer.address.toLowerCase();
  try {
    const row = await deps.db.withUser(userId, async (trx) => {
      const inserted = await trx
        .insertInto('wallets')
        .values({ user_id: userId, address, kind: 'custodial', signer: null })
        .returning(['address', 'created_at'])
        .executeTakeFirstOrThrow();
      await writeAudit(trx, { userId, action: 'wallet.create', target: address, ip });
      return inserted;
    });
    return { wallet: view(row), created: true };
  } catch (err) {
    if (isUniqueViolation(err, 'wallets_address_key')) throw new DomainError('WALLET_ALREADY_LINKED_ANOTHER_ACCOUNT');
    throw err;
  }
}

const AMOUNT = /^\d{1,12}(\.\d{1,18})?$/;

/** `create_payment`: the provider sends `amount` tokens from the account's custodial wallet to `to`. */
export async function createProviderPayment(
  deps: { db: Database; config: WebConfig; log: { warn(obj: object, msg: string): void } },
  userId: string,
  body: { to?: unknown; amount?: unknown },
  ip: string,
) {
  const provider = requireProvider(deps.config);
  if (typeof body.to !== 'string' || !isAddress(body.to, { strict: false })) throw new DomainError('TO_NOT_WALLET_ADDRESS');
  if (typeof body.amount !== 'string' || !AMOUNT.test(body.amount) || Number(body.amount) <= 0) {
    throw new DomainError('AMOUNT_POSITIVE_DECIMAL_STRING');
  }
  const wallets = await listWallets(deps.db, userId);
  const from = wallets.find((w) => w.kind === 'custodial');
  if (!from) throw new DomainError('NO_CUSTODIAL_WALLET_CREATE_ONE');
  const answer = await callWalletProvider(
    provider,
    '/payments',
    { userId, from: from.address, to: body.to.toLowerCase(), amount: body.amount, token: deps.config.payments?.tokenAddress ?? null },
    deps.log,
  );
  await deps.db.withUser(userId, (trx) =>
    writeAudit(trx, {
      userId,
      action: 'wallet.payment',
      target: body.to as string,
      ip,
      metadata: { amount: body.amount, id: answer.id ?? null },
    }),
  );
  return { payment: answer };
}

/** `onramp`: a provider page where the user buys tokens into their wallet. */
export async function providerOnramp(
  deps: { db: Database; config: WebConfig; log: { warn(obj: object, msg: string): void } },
  userId: string,
  body: { amount?: unknown },
) {
  const provider = requireProvider(deps.config);
  if (body.amount !== undefined && (typeof body.amount !== 'string' || !AMOUNT.test(body.amount) || Number(body.amount) <= 0)) {
    throw new DomainError('AMOUNT_POSITIVE_DECIMAL_STRING');
  }
  const address = primaryAddress(await listWallets(deps.db, userId));
  if (!address) throw new DomainError('NO_WALLET_LINKED');
  const answer = await callWalletProvider(
    provider,
    '/onramp',
    { userId, address, ...(body.amount ? { amount: body.amount } : {}) },
    deps.log,
  );
  if (typeof answer.url !== 'string' || !/^https?:\/\//.test(answer.url)) {
    deps.log.warn({ path: '/onramp' }, 'wallet provider answered without a URL');
    throw new DomainError('WALLET_PROVIDER_REQUEST_FAILED');
  }
  return { url: answer.url, address };
}

const clients = new Map<string, PublicClient>();
/** A viem client per RPC URL, created once. */
function rpcClient(rpcUrl: string): PublicClient {
  let client = clients.get(rpcUrl);
  if (!client) {
    client = createPublicClient({ transport: http(rpcUrl, { timeout: CHAIN_RPC_TIMEOUT_MS, retryCount: 1, retryDelay: 100 }) });
    clients.set(rpcUrl, client);
  }
  return client;
}

/** An address of the account's (lower-case), or the primary one when none is named. */
async function ownAddress(db: Database, userId: string, requested: unknown): Promise<Address> {
  const wallets = await listWallets(db, userId);
  if (requested === undefined || requested === null || requested === '') {
    const primary = primaryAddress(wallets);
    if (!primary) throw new DomainError('NO_WALLET_LINKED');
    return primary as Address;
  }
  if (typeof requested !== 'string' || !isAddress(requested, { strict: false })) throw new DomainError('INVALID_WALLET_ADDRESS');
  const lower = requested.toLowerCase();
  if (!wallets.some((w) => w.address === lower)) throw new DomainError('WALLET_NOT_LINKED_ACCOUNT');
  return lower as Address;
}

/** `get_balance`: the payment token's `balanceOf` for one of the account's wallets, on the payment chain. */
export async function walletBalance(
  deps: { db: Database; config: WebConfig; log: { warn(obj: object, msg: string): void } },
  userId: string,
  requested: unknown,
) {
  const payments = deps.config.payments;
  if (!payments) throw new DomainError('PAYMENT_CHAIN_UNCONFIGURED');
  const address = await ownAddress(deps.db, userId, requested);
  let balance: bigint;
  try {
    balance = await rpcClient(payments.rpcUrl).readContract({
      address: payments.tokenAddress,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [address],
    });
  } catch (err) {
    deps.log.warn({ reason: (err as Error).name }, 'payment chain balance read failed');
    throw new DomainError('PAYMENT_CHAIN_REQUEST_FAILED');
  }
  const formatted = formatUnits(balance, payments.tokenDecimals);
  return {
    address,
    chainId: payments.chainId,
    token: getAddress(payments.tokenAddress),
    decimals: payments.tokenDecimals,
    balance: balance.toString(),
    formatted,
    // The payment token is a USD stablecoin (1 token = 1 USD): the spec's wallet balance field.
    balance_usdc: Number(formatted),
  };
}

const resolverAbi = parseAbi(['function name(bytes32 node) view returns (string)', 'function addr(bytes32 node) view returns (address)']);

/**
 * `GET /api/basename`: the reverse name of one of the account's wallets from an ENS-style resolver: `name(node)` of
 * `<address>.<namespace>`, kept only when the name's forward record (`addr`) points back at the address.
 */
export async function reverseName(
  deps: { db: Database; config: WebConfig; log: { warn(obj: object, msg: string): void } },
  userId: string,
  requested: unknown,
): Promise<{ address: string | null; basename: string | null }> {
  let address: Address;
  try {
    address = await ownAddress(deps.db, userId, requested);
  } catch (err) {
    if (isDomainError(err, 'NO_WALLET_LINKED')) return { address: null, basename: null };
    throw err;
  }
  const basename = deps.config.basename;
  if (!basename) return { address, basename: null };
  const client = rpcClient(basename.rpcUrl);
  try {
    const node = namehash(`${address.slice(2)}.${basename.reverseNamespace}`);
    const name = await client.readContract({ address: basename.resolver, abi: resolverAbi, functionName: 'name', args: [node] });
    if (!name) return { address, basename: null };
    const forward = await client.readContract({
      address: basename.resolver,
      abi: resolverAbi,
      functionName: 'addr',
      args: [namehash(name)],
    });
    return { address, basename: isAddressEqual(forward, address) ? name : null };
  } catch (err) {
    deps.log.warn({ reason: (err as Error).name }, 'reverse name lookup failed');
    throw new DomainError('NAME_LOOKUP_FAILED');
  }
}
