import { Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

export const WalletsEnvSchema = Type.Object({
  WALLET_PROVIDER_URL: Env.url(),
  WALLET_PROVIDER_API_KEY: Env.optional(Type.String()),
  WALLET_PROVIDER_TIMEOUT_MS: Env.int(15_000, 100),
  BASENAME_RPC_URL: Env.url(),
  BASENAME_RESOLVER_ADDRESS: Env.optional(Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })),
  BASENAME_REVERSE_NAMESPACE: Env.str('80002105.reverse'),
});

export interface WalletsConfig {
  /** A custodial wallet provider (`POST /api/wallet/create`, `/api/wallet-provider`); undefined = 503. */
  walletProvider: { url: string; apiKey: string | undefined; timeoutMs: number } | undefined;
  /**
   * `GET /api/basename`: an ENS-style resolver (`name(bytes32)`, `addr(bytes32)`) read through `rpcUrl`
   * (BASENAME_RPC_URL, else GATING_RPC_URL); reverse nodes are `<address>.<reverseNamespace>`. Undefined = no names.
   */
  basename: { rpcUrl: string; resolver: `0x${string}`; reverseNamespace: string } | undefined;
}

/** `gatingRpcUrl`: sign-in's GATING_RPC_URL (the network wallets sign in on), the basename resolver's fallback RPC. */
export function toWalletsConfig(env: Static<typeof WalletsEnvSchema>, gatingRpcUrl: string | undefined): WalletsConfig {
  const basenameRpcUrl = env.BASENAME_RPC_URL ?? gatingRpcUrl;
  return {
    walletProvider: env.WALLET_PROVIDER_URL
      ? {
          url: env.WALLET_PROVIDER_URL.replace(/\/+$/, ''),
          apiKey: env.WALLET_PROVIDER_API_KEY,
          timeoutMs: env.WALLET_PROVIDER_TIMEOUT_MS,
        }
      : undefined,
    basename:
      basenameRpcUrl && env.BASENAME_RESOLVER_ADDRESS
        ? {
            rpcUrl: basenameRpcUrl,
            resolver: env.BASENAME_RESOLVER_ADDRESS as `0x${string}`,
            reverseNamespace: env.BASENAME_REVERSE_NAMESPACE,
          }
        : undefined,
  };
}
