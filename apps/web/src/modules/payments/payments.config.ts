import { Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

export const PaymentsEnvSchema = Type.Object({
  PAYMENT_RPC_URL: Env.url(),
  PAYMENT_CHAIN_ID: Env.int(8453, 1),
  PAYMENT_TOKEN_ADDRESS: Env.optional(Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })),
  PAYMENT_TOKEN_DECIMALS: Type.Integer({ minimum: 0, maximum: 36, default: 6 }),
  PAYMENT_RECIPIENT: Env.optional(Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })),
  PAYMENT_MIN_CONFIRMATIONS: Env.int(1, 1),
  PAYMENT_REQUIRE_MEMO: Env.bool(false),
  PAYMENT_SETTLER_KEY: Env.optional(Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' })),
  X402_GATEWAY_URL: Env.url(),
  X402_TIMEOUT_MS: Env.int(10_000, 100),
  X402_JOIN_TIMEOUT_MS: Env.int(10_000, 100),
});

export interface PaymentsConfig {
  /**
   * On-chain payments of the plugin gateway (MPP credentials, payment-session deposits): an ERC-20 (USDC: 1 token =
   * 1 USD) paid to `recipient` on `chainId`, read through `rpcUrl`. Undefined unless the RPC URL, the token and the
   * recipient are all set. `minConfirmations` blocks (the paying one included) must exist; `requireMemo` makes an MPP
   * payment carry its challenge's memo in the transaction data. `settlerKey` (a secret) is the private key of an
   * account holding only gas money: with it the gateway also accepts the Payment authentication scheme's standard `evm`
   * charge (an EIP-3009 authorization the payer signs and this account submits to the token), as the mppx client pays.
   */
  payments:
    | {
        rpcUrl: string;
        chainId: number;
        tokenAddress: `0x${string}`;
        tokenDecimals: number;
        recipient: `0x${string}`;
        minConfirmations: number;
        requireMemo: boolean;
        settlerKey: `0x${string}` | undefined;
      }
    | undefined;
  /**
   * The upstream colony gateway behind `/api/x402` (spec §4.5); unset = health 503 and the spec's fallbacks.
   * `joinTimeoutMs` is the spec's fixed 10 s for `join-colony` (tests shorten it); `timeoutMs` bounds every other call.
   */
  x402: { gatewayUrl: string | undefined; timeoutMs: number; joinTimeoutMs: number };
}

export function toPaymentsConfig(env: Static<typeof PaymentsEnvSchema>): PaymentsConfig {
  return {
    payments:
      env.PAYMENT_RPC_URL && env.PAYMENT_TOKEN_ADDRESS && env.PAYMENT_RECIPIENT
        ? {
            rpcUrl: env.PAYMENT_RPC_URL,
            chainId: env.PAYMENT_CHAIN_ID,
            tokenAddress: env.PAYMENT_TOKEN_ADDRESS.toLowerCase() as `0x${string}`,
            tokenDecimals: env.PAYMENT_TOKEN_DECIMALS,
            recipient: env.PAYMENT_RECIPIENT.toLowerCase() as `0x${string}`,
            minConfirmations: env.PAYMENT_MIN_CONFIRMATIONS,
            requireMemo: env.PAYMENT_REQUIRE_MEMO,
            settlerKey: env.PAYMENT_SETTLER_KEY as `0x${string}` | undefined,
          }
        : undefined,
    x402: {
      gatewayUrl: env.X402_GATEWAY_URL?.replace(/\/+$/, ''),
      timeoutMs: env.X402_TIMEOUT_MS,
      joinTimeoutMs: env.X402_JOIN_TIMEOUT_MS,
    },
  };
}
