import { BaseEnvSchema, type BaseConfig, ConfigError, Env, parseEnv, resolveSecrets, splitList, toBaseConfig } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { AccountsEnvSchema, type AccountsConfig, toAccountsConfig } from './modules/accounts/accounts.config.js';
import { AgentsEnvSchema, type AgentsConfig, toAgentsConfig } from './modules/agents/agents.config.js';
import {
  type BillingCatalog,
  DEFAULT_CREDIT_PACKS_GBP,
  DEFAULT_PLAN_PRICES_GBP,
  parseCreditPacks,
  parsePlanPrices,
  parseStoragePrice,
} from './modules/billing/billing-catalog.js';
import { BridgeEnvSchema, type BridgeConfig, toBridgeConfig } from './modules/bridge/bridge.config.js';
import { DemoEnvSchema, type DemoConfig, toDemoConfig } from './modules/demo/demo.config.js';
import { PaymentsEnvSchema, type PaymentsConfig, toPaymentsConfig } from './modules/payments/payments.config.js';
import { PluginGatewayEnvSchema, type PluginGatewayConfig, toPluginGatewayConfig } from './modules/plugin-gateway/plugin-gateway.config.js';
import { StreamingEnvSchema, type StreamingConfig, toStreamingConfig } from './modules/streaming/streaming.config.js';
import { TradingEnvSchema, type TradingConfig, toTradingConfig } from './modules/trading/trading.config.js';
import { VideoEnvSchema, type VideoConfig, toVideoConfig } from './modules/video/video.config.js';
import { WebhooksEnvSchema, type WebhooksConfig, toWebhooksConfig } from './modules/webhooks/webhooks.config.js';

/** What several modules (or the platform) read, so no one module owns it. */
const SharedEnvSchema = Type.Object({
  PORT: Env.port(3000),
  DATABASE_URL: Env.url(),
  BACKEND_API_URL: Env.str('http://127.0.0.1:3001'),
  BACKEND_API_FALLBACK_URL: Env.url(),
  SUMMARIZER_URL: Env.str('http://127.0.0.1:3100'),
  INTERNAL_API_KEY: Env.optional(Type.String({ minLength: 16 })),
  HMAC_SECRET: Env.optional(Type.String({ minLength: 16 })),
  SESSION_SECRET: Env.optional(Type.String({ minLength: 32 })),
  ENCRYPTION_KEY: Env.optional(Type.String({ minLength: 32 })),
  ADMIN_EMAILS: Env.optional(Type.String()),
  COOKIE_SECURE: Env.optional(Type.Boolean()),
  PUBLIC_URL: Env.url(),
  DASHBOARD_DIR: Env.optional(Type.String({ minLength: 1 })),
  SMTP_URL: Env.url(),
  MAIL_FROM: Env.optional(Type.String()),
  // The demo chat and the plugin gateway's generate-text and speech fallback call the same LLM.
  LLM_BASE_URL: Env.url(),
  LLM_API_KEY: Env.optional(Type.String()),
  GATEWAY_URL: Env.url(),
  GATEWAY_CHAT_TIMEOUT_MS: Env.int(30_000, 100),
  GATEWAY_REQUEST_TIMEOUT_MS: Env.int(10_000, 100),
});

/** The sign-in, wallets and billing variables: they stay here until those modules own their slices (issue #17). */
const PendingEnvSchema = Type.Object({
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
  STRIPE_SECRET_KEY: Env.optional(Type.String({ pattern: '^(sk|rk)_' })),
  STRIPE_WEBHOOK_SECRET: Env.optional(Type.String({ minLength: 8 })),
  STRIPE_API_BASE: Env.url(),
  STRIPE_TIMEOUT_MS: Env.int(20_000, 100),
  PLAN_PRICES_GBP: Env.str(DEFAULT_PLAN_PRICES_GBP),
  CREDIT_PACKS_GBP: Env.str(DEFAULT_CREDIT_PACKS_GBP),
  STORAGE_UPGRADE_GB: Env.int(10, 1),
  STORAGE_UPGRADE_PRICE_GBP: Env.str('5'),
  WALLET_PROVIDER_URL: Env.url(),
  WALLET_PROVIDER_API_KEY: Env.optional(Type.String()),
  WALLET_PROVIDER_TIMEOUT_MS: Env.int(15_000, 100),
  BASENAME_RPC_URL: Env.url(),
  BASENAME_RESOLVER_ADDRESS: Env.optional(Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })),
  BASENAME_REVERSE_NAMESPACE: Env.str('80002105.reverse'),
});

/** Every variable the web service reads: the shared ones, then each module's slice (`modules/<feature>/<feature>.config.ts`). */
export const WebEnvSchema = Type.Composite([
  BaseEnvSchema,
  SharedEnvSchema,
  PendingEnvSchema,
  WebhooksEnvSchema,
  AccountsEnvSchema,
  PaymentsEnvSchema,
  AgentsEnvSchema,
  BridgeEnvSchema,
  DemoEnvSchema,
  PluginGatewayEnvSchema,
  TradingEnvSchema,
  StreamingEnvSchema,
  VideoEnvSchema,
]);

export interface WebConfig
  extends BaseConfig,
    WebhooksConfig,
    AccountsConfig,
    PaymentsConfig,
    AgentsConfig,
    BridgeConfig,
    DemoConfig,
    PluginGatewayConfig,
    TradingConfig,
    StreamingConfig,
    VideoConfig {
  port: number;
  databaseUrl: string | undefined;
  /** The backend, then its fallback: tried in order. */
  backendUrls: string[];
  summarizerUrl: string;
  internalApiKey: string | undefined;
  /** Signs user-context headers for the backend: HMAC_SECRET, else INTERNAL_API_KEY (spec §5). */
  userContextSecret: string | undefined;
  sessionSecret: string;
  encryptionKey: string;
  adminEmails: ReadonlySet<string>;
  /** Session cookies carry `Secure`; on by default in production. */
  cookieSecure: boolean;
  /** Where users reach the platform; links in emails start with it. */
  publicUrl: string;
  /** The dashboard build served at `/` (DASHBOARD_DIR); apps/dashboard/dist when unset. */
  dashboardDir: string | undefined;
  mail: { smtpUrl: string | undefined; from: string };
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
  /** The network wallets sign in on and gate tokens live on. */
  gating: { rpcUrl: string | undefined; chainId: number; tokenAddress: `0x${string}` | undefined; minBalance: string };
  /** The SIWE `domain` a message must name: SIWE_DOMAIN, else the host of PUBLIC_URL. */
  siweDomain: string;
  walletNonceTtlMs: number;
  social: { verifyUrl: string | undefined; sessionSecret: string };
  /**
   * Card payments through Stripe (spec §4.18 Billing): undefined unless STRIPE_SECRET_KEY is set. `webhookSecret`
   * verifies `POST /api/wallet/top-up`; `api` (from STRIPE_API_BASE) points the SDK elsewhere than api.stripe.com.
   */
  stripe:
    | {
        secretKey: string;
        webhookSecret: string | undefined;
        api: { protocol: 'http' | 'https'; host: string; port: number } | undefined;
        timeoutMs: number;
      }
    | undefined;
  /** What card payments sell, in GBP: plans by the month, credit packs, storage. */
  billing: BillingCatalog;
  /** A custodial wallet provider (`POST /api/wallet/create`, `/api/wallet-provider`); undefined = 503. */
  walletProvider: { url: string; apiKey: string | undefined; timeoutMs: number } | undefined;
  /**
   * `GET /api/basename`: an ENS-style resolver (`name(bytes32)`, `addr(bytes32)`) read through `rpcUrl`
   * (BASENAME_RPC_URL, else GATING_RPC_URL); reverse nodes are `<address>.<reverseNamespace>`. Undefined = no names.
   */
  basename: { rpcUrl: string; resolver: `0x${string}`; reverseNamespace: string } | undefined;
  /**
   * Agent gateways. `sharedUrl` is the shared platform gateway used for users who have no agent of their own (its
   * token comes from the backend); `chatTimeoutMs` bounds `/api/gateway/chat` (spec: 30 s); `requestTimeoutMs` bounds
   * every other gateway call (connect + one request).
   */
  gateway: { sharedUrl: string | undefined; chatTimeoutMs: number; requestTimeoutMs: number };
}

/** STRIPE_API_BASE (`http://127.0.0.1:12111`) as the SDK's `protocol`, `host` and `port`. */
function stripeApiBase(value: string): { protocol: 'http' | 'https'; host: string; port: number } {
  const url = new URL(value);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`Invalid configuration:\n  STRIPE_API_BASE: http or https URL required (got ${JSON.stringify(value)})`);
  }
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { protocol, host: url.hostname, port: url.port ? Number(url.port) : protocol === 'http' ? 80 : 443 };
}

export function loadWebConfig(env: NodeJS.ProcessEnv = process.env): WebConfig {
  const parsed = parseEnv(WebEnvSchema, env);
  const base = toBaseConfig(parsed);
  const bridge = toBridgeConfig(parsed, base.production);
  const secrets = resolveSecrets(['INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY'], env, base);
  const llm = parsed.LLM_BASE_URL && parsed.LLM_API_KEY ? { baseUrl: parsed.LLM_BASE_URL, apiKey: parsed.LLM_API_KEY } : undefined;
  return Object.freeze({
    ...base,
    port: parsed.PORT,
    databaseUrl: parsed.DATABASE_URL,
    ...toWebhooksConfig(parsed),
    backendUrls: [parsed.BACKEND_API_URL, parsed.BACKEND_API_FALLBACK_URL].filter((u): u is string => Boolean(u)),
    summarizerUrl: parsed.SUMMARIZER_URL,
    internalApiKey: secrets.INTERNAL_API_KEY,
    userContextSecret: secrets.HMAC_SECRET ?? secrets.INTERNAL_API_KEY,
    sessionSecret: secrets.SESSION_SECRET,
    encryptionKey: secrets.ENCRYPTION_KEY,
    adminEmails: new Set(splitList(parsed.ADMIN_EMAILS).map((e) => e.toLowerCase())),
    cookieSecure: parsed.COOKIE_SECURE ?? base.production,
    publicUrl: (parsed.PUBLIC_URL ?? `http://127.0.0.1:${parsed.PORT}`).replace(/\/+$/, ''),
    dashboardDir: parsed.DASHBOARD_DIR,
    mail: { smtpUrl: parsed.SMTP_URL, from: parsed.MAIL_FROM ?? `no-reply@${parsed.PRODUCT_NAME}.localhost` },
    ...toAccountsConfig(parsed),
    idp: { clientId: parsed.IDP_CLIENT_ID, clientSecret: parsed.IDP_CLIENT_SECRET, issuer: parsed.IDP_ISSUER },
    riscAudiences: [...new Set([parsed.IDP_CLIENT_ID, ...splitList(parsed.RISC_AUDIENCES)].filter((a): a is string => Boolean(a)))],
    codehost: {
      clientId: parsed.CODEHOST_CLIENT_ID,
      clientSecret: parsed.CODEHOST_CLIENT_SECRET,
      authorizeUrl: parsed.CODEHOST_AUTHORIZE_URL,
      tokenUrl: parsed.CODEHOST_TOKEN_URL,
      userUrl: parsed.CODEHOST_USER_URL,
      emailsUrl: parsed.CODEHOST_EMAILS_URL,
    },
    gating: {
      rpcUrl: parsed.GATING_RPC_URL,
      chainId: parsed.GATING_CHAIN_ID,
      tokenAddress: parsed.GATE_TOKEN_ADDRESS as `0x${string}` | undefined,
      minBalance: parsed.GATE_MIN_BALANCE,
    },
    ...toPaymentsConfig(parsed),
    siweDomain: parsed.SIWE_DOMAIN ?? new URL(parsed.PUBLIC_URL ?? `http://127.0.0.1:${parsed.PORT}`).host,
    walletNonceTtlMs: parsed.WALLET_NONCE_TTL_MS,
    ...toAgentsConfig(parsed),
    ...bridge,
    ...toDemoConfig(parsed, llm),
    ...toPluginGatewayConfig(parsed, llm),
    stripe: parsed.STRIPE_SECRET_KEY
      ? {
          secretKey: parsed.STRIPE_SECRET_KEY,
          webhookSecret: parsed.STRIPE_WEBHOOK_SECRET,
          api: parsed.STRIPE_API_BASE ? stripeApiBase(parsed.STRIPE_API_BASE) : undefined,
          timeoutMs: parsed.STRIPE_TIMEOUT_MS,
        }
      : undefined,
    billing: {
      plans: parsePlanPrices(parsed.PLAN_PRICES_GBP),
      creditPacks: parseCreditPacks(parsed.CREDIT_PACKS_GBP),
      storageUpgrade: { gb: parsed.STORAGE_UPGRADE_GB, amountPence: parseStoragePrice(parsed.STORAGE_UPGRADE_PRICE_GBP) },
    },
    walletProvider: parsed.WALLET_PROVIDER_URL
      ? {
          url: parsed.WALLET_PROVIDER_URL.replace(/\/+$/, ''),
          apiKey: parsed.WALLET_PROVIDER_API_KEY,
          timeoutMs: parsed.WALLET_PROVIDER_TIMEOUT_MS,
        }
      : undefined,
    basename:
      (parsed.BASENAME_RPC_URL ?? parsed.GATING_RPC_URL) && parsed.BASENAME_RESOLVER_ADDRESS
        ? {
            rpcUrl: (parsed.BASENAME_RPC_URL ?? parsed.GATING_RPC_URL) as string,
            resolver: parsed.BASENAME_RESOLVER_ADDRESS as `0x${string}`,
            reverseNamespace: parsed.BASENAME_REVERSE_NAMESPACE,
          }
        : undefined,
    gateway: {
      sharedUrl: parsed.GATEWAY_URL?.replace(/\/+$/, ''),
      chatTimeoutMs: parsed.GATEWAY_CHAT_TIMEOUT_MS,
      requestTimeoutMs: parsed.GATEWAY_REQUEST_TIMEOUT_MS,
    },
    ...toTradingConfig(parsed),
    ...toStreamingConfig(parsed),
    ...toVideoConfig(parsed),
    // Social session tokens: their own secret, else AUTH_SECRET, else one derived from the session secret.
    social: {
      verifyUrl: parsed.SOCIAL_VERIFY_URL,
      sessionSecret: parsed.SOCIAL_SESSION_SECRET ?? parsed.AUTH_SECRET ?? `social:${secrets.SESSION_SECRET}`,
    },
    limits: {
      registerPerHour: parsed.REGISTER_LIMIT_PER_HOUR,
      loginWindowMs: parsed.LOGIN_LIMIT_WINDOW_SECONDS * 1000,
      forgotPasswordPer15Min: parsed.FORGOT_PASSWORD_LIMIT_PER_15_MIN,
      resetPasswordPer15Min: parsed.RESET_PASSWORD_LIMIT_PER_15_MIN,
    },
  });
}
