import { invalidAs, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';

/**
 * `POST /api/wallet/provider` actions. Kept here rather than in wallets.service.ts (which re-exports it): the request
 * schema lists them, and a schemas file imports no service (the service imports the chain client and the database).
 */
export const WALLET_PROVIDER_ACTIONS = ['create_wallet', 'get_balance', 'create_payment', 'onramp'] as const;

/**
 * `POST /api/wallet`: the three fields are one requirement (spec: "Missing: address, message, signature" for any of
 * them absent, empty or not a string). The address format and the message length are checked after all three, so
 * they stay with the service.
 */
const linkField = { minLength: 1, ...invalidAs(refuse('MISSING_ADDRESS_MESSAGE_SIGNATURE')) };
export const LinkWalletBody = Type.Object({
  address: Type.String(linkField),
  message: Type.String({ ...linkField, description: 'EIP-4361 message' }),
  signature: Type.String({ ...linkField, description: 'EIP-191 signature, hex' }),
});
export type LinkWalletBody = Static<typeof LinkWalletBody>;

/**
 * `POST /api/wallet/provider`. Only `action` is typed: the other fields belong to one action each (the others
 * ignore them) and are checked after the provider's configuration (503 first), so they stay as sent.
 */
export const WalletProviderBody = Type.Object({
  action: Type.Union(
    WALLET_PROVIDER_ACTIONS.map((action) => Type.Literal(action)),
    invalidAs(refuse('INVALID_ACTION_CHOICE', { allowed: WALLET_PROVIDER_ACTIONS.join(', ') })),
  ),
  address: Type.Optional(Type.Unknown({ description: 'get_balance: one of the caller’s wallets (the primary one by default)' })),
  to: Type.Optional(Type.Unknown({ description: 'create_payment: recipient address' })),
  amount: Type.Optional(Type.Unknown({ description: 'create_payment, onramp: token amount as a decimal string' })),
});
export type WalletProviderBody = Static<typeof WalletProviderBody>;

/** A wallet of the account. */
export const WalletView = Type.Object({
  address: Type.String({ description: 'lower-case' }),
  kind: Type.Union([Type.Literal('external'), Type.Literal('custodial'), Type.Literal('sign-in')], {
    description: '`external` (linked by signature), `custodial` (made by the provider) or `sign-in` (the account’s SIWE wallet)',
  }),
  signer: Type.Union([Type.String({ description: '`eoa`, `contract` or `counterfactual`' }), Type.Null()]),
  createdAt: Type.Union([Type.String(), Type.Null()]),
});
export type WalletView = Static<typeof WalletView>;

/** `GET /api/wallet`: the account's wallets (sign-in wallet first, then linked ones, oldest first) and the primary address. */
export const WalletList = Type.Object({
  address: Type.Union([Type.String(), Type.Null()]),
  wallets: Type.Array(WalletView),
  linkStatement: Type.String({ description: 'the statement a link message must carry' }),
});
export type WalletList = Static<typeof WalletList>;

/** `GET /api/wallet/provider`: whether a wallet provider is configured, and the payment chain (null without one). */
export const ProviderInfo = Type.Object({
  configured: Type.Boolean(),
  actions: Type.Array(Type.Union(WALLET_PROVIDER_ACTIONS.map((action) => Type.Literal(action)))),
  paymentChain: Type.Union([Type.Object({ chainId: Type.Integer(), token: Type.String(), decimals: Type.Integer() }), Type.Null()]),
});
export type ProviderInfo = Static<typeof ProviderInfo>;
