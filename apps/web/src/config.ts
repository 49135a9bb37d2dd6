import {
  BaseEnvSchema,
  type BaseConfig,
  Env,
  MetricsEnvSchema,
  type MetricsConfig,
  parseEnv,
  resolveSecrets,
  splitList,
  toBaseConfig,
  toMetricsConfig,
} from '@aop/core';
import { TracingEnvSchema, type TracingConfig, toTracingConfig } from '@aop/core/tracing';
import { Type } from '@sinclair/typebox';
import { AccountsEnvSchema, type AccountsConfig, toAccountsConfig } from './modules/accounts/accounts.config.js';
import { AgentsEnvSchema, type AgentsConfig, toAgentsConfig } from './modules/agents/agents.config.js';
import { BillingEnvSchema, type BillingConfig, toBillingConfig } from './modules/billing/billing.config.js';
import { BridgeEnvSchema, type BridgeConfig, toBridgeConfig } from './modules/bridge/bridge.config.js';
import { DemoEnvSchema, type DemoConfig, toDemoConfig } from './modules/demo/demo.config.js';
import { PaymentsEnvSchema, type PaymentsConfig, toPaymentsConfig } from './modules/payments/payments.config.js';
import { PluginGatewayEnvSchema, type PluginGatewayConfig, toPluginGatewayConfig } from './modules/plugin-gateway/plugin-gateway.config.js';
import { SignInEnvSchema, type SignInConfig, toSignInConfig } from './modules/sign-in/sign-in.config.js';
import { StreamingEnvSchema, type StreamingConfig, toStreamingConfig } from './modules/streaming/streaming.config.js';
import { TradingEnvSchema, type TradingConfig, toTradingConfig } from './modules/trading/trading.config.js';
import { VideoEnvSchema, type VideoConfig, toVideoConfig } from './modules/video/video.config.js';
import { WalletsEnvSchema, type WalletsConfig, toWalletsConfig } from './modules/wallets/wallets.config.js';
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
  // How long a chat message to an agent that is still starting waits for it to be live (then the turn has its own bound).
  AGENT_START_WAIT_MS: Env.int(90_000, 0),
  // Who a session cookie or API key belongs to is kept this long (0: looked up on every request); see platform/auth-cache.ts.
  SESSION_CACHE_TTL_MS: Env.int(5_000),
  SESSION_CACHE_MAX_ENTRIES: Env.int(10_000, 1),
});

/** Every variable the web service reads: the shared ones, then each module's slice (`modules/<feature>/<feature>.config.ts`). */
// Sign-in, billing and wallets come first: their variables keep the place (and so the order of the errors) they had
// before they moved into their modules.
export const WebEnvSchema = Type.Composite([
  BaseEnvSchema,
  SharedEnvSchema,
  SignInEnvSchema,
  BillingEnvSchema,
  WalletsEnvSchema,
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
  MetricsEnvSchema,
  TracingEnvSchema,
]);

export interface WebConfig
  extends BaseConfig,
    MetricsConfig,
    WebhooksConfig,
    AccountsConfig,
    SignInConfig,
    PaymentsConfig,
    AgentsConfig,
    BridgeConfig,
    DemoConfig,
    PluginGatewayConfig,
    BillingConfig,
    WalletsConfig,
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
  /** How long, and for how many credentials, who a session or key belongs to is kept in memory. */
  authCache: { ttlMs: number; maxEntries: number };
  /** Where users reach the platform; links in emails start with it. */
  publicUrl: string;
  /** The dashboard build served at `/` (DASHBOARD_DIR); apps/dashboard/dist when unset. */
  dashboardDir: string | undefined;
  mail: { smtpUrl: string | undefined; from: string };
  /**
   * Agent gateways. `sharedUrl` is the shared platform gateway used for users who have no agent of their own (its
   * token comes from the backend); `chatTimeoutMs` bounds `/api/gateway/chat` (spec: 30 s); `requestTimeoutMs` bounds
   * every other gateway call (connect + one request); `startWaitMs` is how long a chat message to one of the user's
   * agents that is starting waits for it to be live before its turn begins.
   */
  gateway: { sharedUrl: string | undefined; chatTimeoutMs: number; requestTimeoutMs: number; startWaitMs: number };
  /** OpenTelemetry: OTEL_EXPORTER_OTLP_ENDPOINT (unset: off) and OTEL_SERVICE_NAME (`aop-web`). */
  tracing: TracingConfig;
}

export function loadWebConfig(env: NodeJS.ProcessEnv = process.env): WebConfig {
  const parsed = parseEnv(WebEnvSchema, env);
  const base = toBaseConfig(parsed);
  const bridge = toBridgeConfig(parsed, base.production);
  const secrets = resolveSecrets(['INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY'], env, base);
  const publicUrl = parsed.PUBLIC_URL ?? `http://127.0.0.1:${parsed.PORT}`;
  const llm = parsed.LLM_BASE_URL && parsed.LLM_API_KEY ? { baseUrl: parsed.LLM_BASE_URL, apiKey: parsed.LLM_API_KEY } : undefined;
  return Object.freeze({
    ...base,
    ...toMetricsConfig(parsed),
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
    authCache: { ttlMs: parsed.SESSION_CACHE_TTL_MS, maxEntries: parsed.SESSION_CACHE_MAX_ENTRIES },
    publicUrl: publicUrl.replace(/\/+$/, ''),
    dashboardDir: parsed.DASHBOARD_DIR,
    mail: { smtpUrl: parsed.SMTP_URL, from: parsed.MAIL_FROM ?? `no-reply@${parsed.PRODUCT_NAME}.localhost` },
    ...toAccountsConfig(parsed),
    ...toPaymentsConfig(parsed),
    ...toSignInConfig(parsed, { publicUrl, sessionSecret: secrets.SESSION_SECRET }),
    ...toAgentsConfig(parsed),
    ...bridge,
    ...toDemoConfig(parsed, llm),
    ...toPluginGatewayConfig(parsed, llm),
    ...toBillingConfig(parsed),
    ...toWalletsConfig(parsed, parsed.GATING_RPC_URL),
    gateway: {
      sharedUrl: parsed.GATEWAY_URL?.replace(/\/+$/, ''),
      chatTimeoutMs: parsed.GATEWAY_CHAT_TIMEOUT_MS,
      startWaitMs: parsed.AGENT_START_WAIT_MS,
      requestTimeoutMs: parsed.GATEWAY_REQUEST_TIMEOUT_MS,
    },
    ...toTradingConfig(parsed),
    ...toStreamingConfig(parsed),
    ...toVideoConfig(parsed),
    tracing: toTracingConfig(parsed, 'aop-web'),
  });
}
