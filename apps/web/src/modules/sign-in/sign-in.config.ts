import { Env, splitList } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

/**
 * Sign-in's variables: the account rate limits (`rate-limits.ts`, also applied by the accounts routes), the identity
 * provider, the code host, wallet sign-in and token gating, social identity.
 */
export const SignInEnvSchema = Type.Object({
  REGISTER_LIMIT_PER_HOUR: Env.int(10, 1),
  LOGIN_LIMIT_WINDOW_SECONDS: Env.int(900, 1),
  FORGOT_PASSWORD_LIMIT_PER_15_MIN: Env.int(5, 1),
  RESET_PASSWORD_LIMIT_PER_15_MIN: Env.int(10, 1),
  IDP_CLIENT_ID: Env.optional(Type.String()),
  IDP_CLIENT_SECRET: Env.optional(Type.String()),
  IDP_ISSUER: Env.url(),
  RISC_AUDIENCES: Env.optional(Type.String()),
  CODEHOST_CLIENT_ID: Env.optional(Type.String()),
  CODEHOST_CLIENT_SECRET: Env.optional(Type.String()),
  CODEHOST_AUTHORIZE_URL: Env.str('https://github.com/login/oauth/authorize'),
  CODEHOST_TOKEN_URL: Env.str('https://github.com/login/oauth/access_token'),
  CODEHOST_USER_URL: Env.str('https://api.github.com/user'),
  CODEHOST_EMAILS_URL: Env.str('https://api.github.com/user/emails'),
  GATING_RPC_URL: Env.url(),
  GATING_CHAIN_ID: Env.int(8453, 1),
  GATE_TOKEN_ADDRESS: Env.optional(Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })),
  GATE_MIN_BALANCE: Env.str('1250000'),
  SIWE_DOMAIN: Env.optional(Type.String()),
  WALLET_NONCE_TTL_MS: Env.int(600_000, 1000),
  SOCIAL_VERIFY_URL: Env.url(),
  SOCIAL_SESSION_SECRET: Env.optional(Type.String({ minLength: 16 })),
  AUTH_SECRET: Env.optional(Type.String({ minLength: 16 })),
});

export interface SignInConfig {
  limits: { registerPerHour: number; loginWindowMs: number; forgotPasswordPer15Min: number; resetPasswordPer15Min: number };
  /** OIDC identity provider; sign-in is "not configured" unless id, secret and issuer are set. */
  idp: { clientId: string | undefined; clientSecret: string | undefined; issuer: string | undefined };
  /** Audiences accepted on security-event tokens: the IdP client id and RISC_AUDIENCES. */
  riscAudiences: string[];
  /** OAuth 2 code-hosting provider (GitHub-compatible endpoints by default). */
  codehost: {
    clientId: string | undefined;
    clientSecret: string | undefined;
    authorizeUrl: string;
    tokenUrl: string;
    userUrl: string;
    emailsUrl: string;
  };
  /** The network wallets sign in on and gate tokens live on (also read by the wallets and streaming modules). */
  gating: { rpcUrl: string | undefined; chainId: number; tokenAddress: `0x${string}` | undefined; minBalance: string };
  /** The SIWE `domain` a message must name: SIWE_DOMAIN, else the host of PUBLIC_URL. */
  siweDomain: string;
  walletNonceTtlMs: number;
  social: { verifyUrl: string | undefined; sessionSecret: string };
}

/**
 * `shared.publicUrl` is PUBLIC_URL as set (else `http://127.0.0.1:<PORT>`), `shared.sessionSecret` the resolved
 * SESSION_SECRET: both are config.ts's.
 */
export function toSignInConfig(env: Static<typeof SignInEnvSchema>, shared: { publicUrl: string; sessionSecret: string }): SignInConfig {
  return {
    idp: { clientId: env.IDP_CLIENT_ID, clientSecret: env.IDP_CLIENT_SECRET, issuer: env.IDP_ISSUER },
    riscAudiences: [...new Set([env.IDP_CLIENT_ID, ...splitList(env.RISC_AUDIENCES)].filter((a): a is string => Boolean(a)))],
    codehost: {
      clientId: env.CODEHOST_CLIENT_ID,
      clientSecret: env.CODEHOST_CLIENT_SECRET,
      authorizeUrl: env.CODEHOST_AUTHORIZE_URL,
      tokenUrl: env.CODEHOST_TOKEN_URL,
      userUrl: env.CODEHOST_USER_URL,
      emailsUrl: env.CODEHOST_EMAILS_URL,
    },
    gating: {
      rpcUrl: env.GATING_RPC_URL,
      chainId: env.GATING_CHAIN_ID,
      tokenAddress: env.GATE_TOKEN_ADDRESS as `0x${string}` | undefined,
      minBalance: env.GATE_MIN_BALANCE,
    },
    siweDomain: env.SIWE_DOMAIN ?? new URL(shared.publicUrl).host,
    walletNonceTtlMs: env.WALLET_NONCE_TTL_MS,
    // Social session tokens: their own secret, else AUTH_SECRET, else one derived from the session secret.
    social: {
      verifyUrl: env.SOCIAL_VERIFY_URL,
      sessionSecret: env.SOCIAL_SESSION_SECRET ?? env.AUTH_SECRET ?? `social:${shared.sessionSecret}`,
    },
    limits: {
      registerPerHour: env.REGISTER_LIMIT_PER_HOUR,
      loginWindowMs: env.LOGIN_LIMIT_WINDOW_SECONDS * 1000,
      forgotPasswordPer15Min: env.FORGOT_PASSWORD_LIMIT_PER_15_MIN,
      resetPasswordPer15Min: env.RESET_PASSWORD_LIMIT_PER_15_MIN,
    },
  };
}
