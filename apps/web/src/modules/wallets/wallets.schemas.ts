import { invalidAs, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { WALLET_PROVIDER_ACTIONS } from './wallets.service.js';

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
