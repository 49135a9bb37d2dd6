import { BaseEnvSchema, type BaseConfig, ConfigError, Env, parseEnv, resolveSecrets, splitList, toBaseConfig } from '@aop/core';
import { Type } from '@sinclair/typebox';
import {
  type BillingCatalog,
  DEFAULT_CREDIT_PACKS_GBP,
  DEFAULT_PLAN_PRICES_GBP,
  parseCreditPacks,
  parsePlanPrices,
  parseStoragePrice,
} from './modules/billing/billing-catalog.js';
import { DEFAULT_DEMO_MODELS, type DemoModel, parseDemoModels } from './modules/demo/demo-chat.service.js';

/** A USD amount as a decimal string (`0.05`): kept exact, never a float. */
const usdPrice = (def: string) => Type.String({ pattern: '^\\d{1,4}(\\.\\d{1,6})?$', default: def });

/** A Standard Webhooks (Svix) signing secret: `whsec_` and base64 of the key (the prefix is optional). */
const WEBHOOK_SECRET_PATTERN = '^(whsec_)?[A-Za-z0-9+/]{16,}={0,2}$';

const WebEnvSchema = Type.Composite([
  BaseEnvSchema,
  Type.Object({
    PORT: Env.port(3000),
    DATABASE_URL: Env.url(),
    EMAIL_WEBHOOK_SECRET: Env.optional(Type.String({ pattern: WEBHOOK_SECRET_PATTERN })),
    HOSTING_WEBHOOK_SECRET: Env.optional(Type.String({ pattern: WEBHOOK_SECRET_PATTERN })),
    INVITE_TTL_HOURS: Env.int(168, 1),
    INVITE_MAX_OUTSTANDING: Env.int(5, 1),
    INVITE_VERIFY_LIMIT_PER_MINUTE: Env.int(20, 1),
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
    BOT_CHECK_SECRET: Env.optional(Type.String()),
    BOT_CHECK_URL: Env.url(),
    REFERRAL_CREDITS_REFERRED: Env.int(50),
    REFERRAL_CREDITS_REFERRER: Env.int(50),
    PASSWORD_RESET_TTL_MINUTES: Env.int(60, 1),
    EMAIL_VERIFICATION_TTL_HOURS: Env.int(48, 1),
    REGISTER_LIMIT_PER_HOUR: Env.int(10, 1),
    LOGIN_LIMIT_WINDOW_SECONDS: Env.int(900, 1),
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
    PAYMENT_RPC_URL: Env.url(),
    PAYMENT_CHAIN_ID: Env.int(8453, 1),
    PAYMENT_TOKEN_ADDRESS: Env.optional(Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })),
    PAYMENT_TOKEN_DECIMALS: Type.Integer({ minimum: 0, maximum: 36, default: 6 }),
    PAYMENT_RECIPIENT: Env.optional(Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })),
    PAYMENT_MIN_CONFIRMATIONS: Env.int(1, 1),
    PAYMENT_REQUIRE_MEMO: Env.bool(false),
    WALLET_NONCE_TTL_MS: Env.int(600_000, 1000),
    SOCIAL_VERIFY_URL: Env.url(),
    SOCIAL_SESSION_SECRET: Env.optional(Type.String({ minLength: 16 })),
    AUTH_SECRET: Env.optional(Type.String({ minLength: 16 })),
    PROVISIONING_DISABLED: Env.bool(false),
    HOSTING_API_URL: Env.url(),
    HOSTING_API_KEY: Env.optional(Type.String()),
    HOSTING_PROJECT_ID: Env.optional(Type.String()),
    HOSTING_ENVIRONMENT_ID: Env.optional(Type.String()),
    HOSTING_AGENT_IMAGE: Env.str('ghcr.io/openclaw/openclaw:2026.9.6'),
    HOSTING_STATUS_POLL_MS: Env.int(5_000, 10),
    HOSTING_DEPLOY_TIMEOUT_MS: Env.int(600_000, 100),
    BRIDGE_ENABLED: Env.bool(true),
    BRIDGE_SECRET: Env.optional(Type.String()),
    BRIDGE_OPERATOR_IDENTITY: Env.str('operator'),
    LLM_BASE_URL: Env.url(),
    LLM_API_KEY: Env.optional(Type.String()),
    DEMO_MODELS: Env.str(DEFAULT_DEMO_MODELS),
    DEMO_CHAT_LIMIT_PER_MINUTE: Env.int(10, 1),
    DEMO_CHAT_TIMEOUT_MS: Env.int(30_000, 100),
    PLUGIN_PRICE_AGENT: usdPrice('0.05'),
    PLUGIN_PRICE_GENERATE_TEXT: usdPrice('0.01'),
    PLUGIN_PRICE_TTS: usdPrice('0.03'),
    PLUGIN_PRICE_STT: usdPrice('0.02'),
    PLUGIN_TIMEOUT_MS: Env.int(60_000, 100),
    SPEECH_BASE_URL: Env.url(),
    SPEECH_API_KEY: Env.optional(Type.String()),
    TTS_MODEL: Env.str('gpt-4o-mini-tts'),
    TTS_VOICE: Env.str('alloy'),
    STT_MODEL: Env.str('whisper-1'),
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
    TRADING_API_URL: Env.str('https://api.bankr.bot'),
    TRADING_API_KEY: Env.optional(Type.String()),
    TRADING_TIMEOUT_MS: Env.int(30_000, 100),
    FORGOT_PASSWORD_LIMIT_PER_15_MIN: Env.int(5, 1),
    GATEWAY_URL: Env.url(),
    GATEWAY_CHAT_TIMEOUT_MS: Env.int(30_000, 100),
    GATEWAY_REQUEST_TIMEOUT_MS: Env.int(10_000, 100),
    RESET_PASSWORD_LIMIT_PER_15_MIN: Env.int(10, 1),
    X402_GATEWAY_URL: Env.url(),
    X402_TIMEOUT_MS: Env.int(10_000, 100),
    X402_JOIN_TIMEOUT_MS: Env.int(10_000, 100),
    STREAMING_API_URL: Env.str('https://api.mux.com'),
    STREAMING_API_KEY: Env.optional(Type.String({ pattern: '^[^:]+:.+$' })),
    STREAMING_RTMP_URL: Env.str('rtmps://global-live.mux.com:443/app'),
    STREAMING_PLAYBACK_URL: Env.str('https://stream.mux.com'),
    STREAMING_EMBED_URL: Env.str('https://player.mux.com'),
    STREAMING_TIMEOUT_MS: Env.int(10_000, 100),
    STREAMING_LIVE_CACHE_MS: Env.int(5_000, 0),
    STREAM_SIGNING_SECRET: Env.optional(Type.String()),
    STREAM_WEBHOOK_SECRET: Env.optional(Type.String()),
    STREAM_ASSET_DELETE_DELAY_MINUTES: Env.int(1_440, 0),
    VIDEO_API_URL: Env.url(),
    VIDEO_API_KEY: Env.optional(Type.String()),
    VIDEO_TIMEOUT_MS: Env.int(300_000, 100),
    VIDEO_POLL_INTERVAL_MS: Env.int(2_000, 10),
    VIDEO_MAX_BYTES: Env.int(104_857_600, 1),
    BLOB_URL: Env.url(),
    BLOB_BUCKET: Env.optional(Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' })),
    BLOB_ACCESS_KEY: Env.optional(Type.String()),
    BLOB_SECRET_KEY: Env.optional(Type.String()),
    BLOB_REGION: Env.str('us-east-1'),
    BLOB_PUBLIC_URL: Env.url(),
  }),
]);

export interface WebConfig extends BaseConfig {
  port: number;
  databaseUrl: string | undefined;
  /**
   * Signing secrets of the provider webhooks (Standard Webhooks / Svix scheme): `POST /api/webhooks/email` and
   * `POST /api/webhooks/hosting-status` refuse every delivery while theirs is unset.
   */
  webhooks: { emailSecret: string | undefined; hostingSecret: string | undefined };
  /** Invites: lifetime, pending invites per user, and `POST /api/invites/verify` calls per minute per client. */
  invites: { ttlMs: number; maxOutstanding: number; verifyPerMinute: number };
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
  /** A Turnstile-style challenge verifier; off unless both are set. */
  botCheck: { secret: string; url: string } | undefined;
  referralCredits: { referred: number; referrer: number };
  passwordResetTtlMs: number;
  /** How long an email verification link works (registration and email change). */
  emailVerificationTtlMs: number;
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
  /**
   * On-chain payments of the plugin gateway (MPP credentials, payment-session deposits): an ERC-20 (USDC: 1 token =
   * 1 USD) paid to `recipient` on `chainId`, read through `rpcUrl`. Undefined unless the RPC URL, the token and the
   * recipient are all set. `minConfirmations` blocks (the paying one included) must exist; `requireMemo` makes an MPP
   * payment carry its challenge's memo in the transaction data.
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
      }
    | undefined;
  /** The SIWE `domain` a message must name: SIWE_DOMAIN, else the host of PUBLIC_URL. */
  siweDomain: string;
  walletNonceTtlMs: number;
  social: { verifyUrl: string | undefined; sessionSecret: string };
  /** Direct deployment through the hosting provider's GraphQL API; used when no backend answers. */
  hosting:
    | {
        apiUrl: string;
        apiKey: string;
        projectId: string;
        environmentId: string;
        image: string;
        /** How often a direct deployment's status is polled until it settles, and when it counts as failed. */
        statusPollMs: number;
        deployTimeoutMs: number;
      }
    | undefined;
  /** The provisioning kill switch (spec §4.15: 503 while on). */
  provisioningDisabled: boolean;
  /**
   * The bridge bus (spec §4.8), an operator tool. With `secret`, callers present it in `X-Bridge-Secret`; without
   * one, only administrators' sessions may use it, and production refuses to start (see loadWebConfig). Disabled: the
   * routes are not served.
   */
  bridge: { enabled: boolean; secret: string | undefined; operatorIdentity: string };
  /** Demo chat (spec §4.6): the OpenAI-compatible LLM it calls (unset → 503), its six models, per-IP limit, timeout. */
  demo: { llm: { baseUrl: string; apiKey: string } | undefined; models: DemoModel[]; limitPerMinute: number; timeoutMs: number };
  /**
   * Plugin gateway (spec §2.5, §4.4): USD price per plugin (decimal strings, the reference prices by default); the
   * OpenAI-compatible audio API of `tts`/`stt` (SPEECH_BASE_URL with SPEECH_API_KEY, else the LLM's URL and key), its
   * models and default voice; `timeoutMs` bounds each generate-text, tts and stt call. `generate-text` calls `demo.llm`
   * with a `demo.models` model; `agent` goes through `gateway`.
   */
  plugins: {
    prices: Record<'agent' | 'generate-text' | 'tts' | 'stt', string>;
    speech: { baseUrl: string; apiKey: string } | undefined;
    ttsModel: string;
    ttsVoice: string;
    sttModel: string;
    timeoutMs: number;
  };
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
  /** Trading service: base URL, the platform key (used when a user has none), request timeout. */
  trading: { apiUrl: string; platformKey: string | undefined; timeoutMs: number };
  /**
   * Agent gateways. `sharedUrl` is the shared platform gateway used for users who have no agent of their own (its
   * token comes from the backend); `chatTimeoutMs` bounds `/api/gateway/chat` (spec: 30 s); `requestTimeoutMs` bounds
   * every other gateway call (connect + one request).
   */
  gateway: { sharedUrl: string | undefined; chatTimeoutMs: number; requestTimeoutMs: number };
  /**
   * The upstream colony gateway behind `/api/x402` (spec §4.5); unset = health 503 and the spec's fallbacks.
   * `joinTimeoutMs` is the spec's fixed 10 s for `join-colony` (tests shorten it); `timeoutMs` bounds every other call.
   */
  x402: { gatewayUrl: string | undefined; timeoutMs: number; joinTimeoutMs: number };
  /**
   * Live streaming (spec §2.11, §4.16, §6) through a Mux-compatible REST API at `apiUrl`; `apiKey` is
   * `<token id>:<token secret>` sent as HTTP Basic (unset = the radio endpoints answer 500). `rtmpUrl` is the ingest
   * server handed to encoders; `playbackUrl`/`embedUrl` build `hlsUrl`/`embedUrl`. `liveCacheMs` keeps the provider's
   * active list that long (0 = never cached). `webhookSecret` (STREAM_SIGNING_SECRET, else STREAM_WEBHOOK_SECRET)
   * verifies `streaming-signature`; unset = every webhook is refused. Assets queued for deletion are deleted at the
   * provider `assetDeleteDelayMs` after the decision.
   */
  streaming: {
    apiUrl: string;
    apiKey: string | undefined;
    rtmpUrl: string;
    playbackUrl: string;
    embedUrl: string;
    timeoutMs: number;
    liveCacheMs: number;
    webhookSecret: string | undefined;
    assetDeleteDelayMs: number;
  };
  /**
   * `POST /api/generate-video`: the render API (documented JSON contract in services/video.ts); undefined unless URL
   * and key are set. `timeoutMs` is the spec's 5-minute bound on the whole job (render, download, upload).
   */
  video: { apiUrl: string; apiKey: string; timeoutMs: number; pollIntervalMs: number; maxBytes: number } | undefined;
  /**
   * S3-compatible blob storage (path-style `PUT <url>/<bucket>/<key>`, SigV4-signed) for generated videos; undefined
   * unless URL, bucket and both keys are set. Objects are linked as `<publicUrl>/<key>`, else by their object URL.
   */
  blob: { url: string; bucket: string; accessKey: string; secretKey: string; region: string; publicUrl: string | undefined } | undefined;
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
  // Without a secret the bus is open to administrators' sessions only; a production deployment names its secret
  // (the bridge's own callers are scripts and bots, which have no session) or turns the bridge off.
  if (base.production && parsed.BRIDGE_ENABLED && !parsed.BRIDGE_SECRET) {
    throw new ConfigError(
      'Invalid configuration:\n  BRIDGE_SECRET: required in production while the bridge is enabled (or set BRIDGE_ENABLED=false)',
    );
  }
  const secrets = resolveSecrets(['INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY'], env, base);
  return Object.freeze({
    ...base,
    port: parsed.PORT,
    databaseUrl: parsed.DATABASE_URL,
    webhooks: { emailSecret: parsed.EMAIL_WEBHOOK_SECRET, hostingSecret: parsed.HOSTING_WEBHOOK_SECRET },
    invites: {
      ttlMs: parsed.INVITE_TTL_HOURS * 3_600_000,
      maxOutstanding: parsed.INVITE_MAX_OUTSTANDING,
      verifyPerMinute: parsed.INVITE_VERIFY_LIMIT_PER_MINUTE,
    },
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
    botCheck: parsed.BOT_CHECK_SECRET && parsed.BOT_CHECK_URL ? { secret: parsed.BOT_CHECK_SECRET, url: parsed.BOT_CHECK_URL } : undefined,
    referralCredits: { referred: parsed.REFERRAL_CREDITS_REFERRED, referrer: parsed.REFERRAL_CREDITS_REFERRER },
    passwordResetTtlMs: parsed.PASSWORD_RESET_TTL_MINUTES * 60_000,
    emailVerificationTtlMs: parsed.EMAIL_VERIFICATION_TTL_HOURS * 3_600_000,
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
    payments:
      parsed.PAYMENT_RPC_URL && parsed.PAYMENT_TOKEN_ADDRESS && parsed.PAYMENT_RECIPIENT
        ? {
            rpcUrl: parsed.PAYMENT_RPC_URL,
            chainId: parsed.PAYMENT_CHAIN_ID,
            tokenAddress: parsed.PAYMENT_TOKEN_ADDRESS.toLowerCase() as `0x${string}`,
            tokenDecimals: parsed.PAYMENT_TOKEN_DECIMALS,
            recipient: parsed.PAYMENT_RECIPIENT.toLowerCase() as `0x${string}`,
            minConfirmations: parsed.PAYMENT_MIN_CONFIRMATIONS,
            requireMemo: parsed.PAYMENT_REQUIRE_MEMO,
          }
        : undefined,
    siweDomain: parsed.SIWE_DOMAIN ?? new URL(parsed.PUBLIC_URL ?? `http://127.0.0.1:${parsed.PORT}`).host,
    walletNonceTtlMs: parsed.WALLET_NONCE_TTL_MS,
    provisioningDisabled: parsed.PROVISIONING_DISABLED,
    hosting:
      parsed.HOSTING_API_URL && parsed.HOSTING_API_KEY && parsed.HOSTING_PROJECT_ID && parsed.HOSTING_ENVIRONMENT_ID
        ? {
            apiUrl: parsed.HOSTING_API_URL,
            apiKey: parsed.HOSTING_API_KEY,
            projectId: parsed.HOSTING_PROJECT_ID,
            environmentId: parsed.HOSTING_ENVIRONMENT_ID,
            image: parsed.HOSTING_AGENT_IMAGE,
            statusPollMs: parsed.HOSTING_STATUS_POLL_MS,
            deployTimeoutMs: parsed.HOSTING_DEPLOY_TIMEOUT_MS,
          }
        : undefined,
    bridge: {
      enabled: parsed.BRIDGE_ENABLED,
      secret: parsed.BRIDGE_SECRET || undefined,
      operatorIdentity: parsed.BRIDGE_OPERATOR_IDENTITY,
    },
    demo: {
      llm: parsed.LLM_BASE_URL && parsed.LLM_API_KEY ? { baseUrl: parsed.LLM_BASE_URL, apiKey: parsed.LLM_API_KEY } : undefined,
      models: parseDemoModels(parsed.DEMO_MODELS),
      limitPerMinute: parsed.DEMO_CHAT_LIMIT_PER_MINUTE,
      timeoutMs: parsed.DEMO_CHAT_TIMEOUT_MS,
    },
    plugins: {
      prices: {
        agent: parsed.PLUGIN_PRICE_AGENT,
        'generate-text': parsed.PLUGIN_PRICE_GENERATE_TEXT,
        tts: parsed.PLUGIN_PRICE_TTS,
        stt: parsed.PLUGIN_PRICE_STT,
      },
      // A speech key is never sent to the LLM's host or the other way round: a separate URL needs its own key.
      speech: parsed.SPEECH_BASE_URL
        ? parsed.SPEECH_API_KEY
          ? { baseUrl: parsed.SPEECH_BASE_URL, apiKey: parsed.SPEECH_API_KEY }
          : undefined
        : parsed.LLM_BASE_URL && parsed.LLM_API_KEY
          ? { baseUrl: parsed.LLM_BASE_URL, apiKey: parsed.LLM_API_KEY }
          : undefined,
      ttsModel: parsed.TTS_MODEL,
      ttsVoice: parsed.TTS_VOICE,
      sttModel: parsed.STT_MODEL,
      timeoutMs: parsed.PLUGIN_TIMEOUT_MS,
    },
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
    trading: {
      apiUrl: parsed.TRADING_API_URL.replace(/\/+$/, ''),
      platformKey: parsed.TRADING_API_KEY,
      timeoutMs: parsed.TRADING_TIMEOUT_MS,
    },
    gateway: {
      sharedUrl: parsed.GATEWAY_URL?.replace(/\/+$/, ''),
      chatTimeoutMs: parsed.GATEWAY_CHAT_TIMEOUT_MS,
      requestTimeoutMs: parsed.GATEWAY_REQUEST_TIMEOUT_MS,
    },
    x402: {
      gatewayUrl: parsed.X402_GATEWAY_URL?.replace(/\/+$/, ''),
      timeoutMs: parsed.X402_TIMEOUT_MS,
      joinTimeoutMs: parsed.X402_JOIN_TIMEOUT_MS,
    },
    streaming: {
      apiUrl: parsed.STREAMING_API_URL.replace(/\/+$/, ''),
      apiKey: parsed.STREAMING_API_KEY,
      rtmpUrl: parsed.STREAMING_RTMP_URL.replace(/\/+$/, ''),
      playbackUrl: parsed.STREAMING_PLAYBACK_URL.replace(/\/+$/, ''),
      embedUrl: parsed.STREAMING_EMBED_URL.replace(/\/+$/, ''),
      timeoutMs: parsed.STREAMING_TIMEOUT_MS,
      liveCacheMs: parsed.STREAMING_LIVE_CACHE_MS,
      webhookSecret: parsed.STREAM_SIGNING_SECRET ?? parsed.STREAM_WEBHOOK_SECRET,
      assetDeleteDelayMs: parsed.STREAM_ASSET_DELETE_DELAY_MINUTES * 60_000,
    },
    video:
      parsed.VIDEO_API_URL && parsed.VIDEO_API_KEY
        ? {
            apiUrl: parsed.VIDEO_API_URL.replace(/\/+$/, ''),
            apiKey: parsed.VIDEO_API_KEY,
            timeoutMs: parsed.VIDEO_TIMEOUT_MS,
            pollIntervalMs: parsed.VIDEO_POLL_INTERVAL_MS,
            maxBytes: parsed.VIDEO_MAX_BYTES,
          }
        : undefined,
    blob:
      parsed.BLOB_URL && parsed.BLOB_BUCKET && parsed.BLOB_ACCESS_KEY && parsed.BLOB_SECRET_KEY
        ? {
            url: parsed.BLOB_URL.replace(/\/+$/, ''),
            bucket: parsed.BLOB_BUCKET,
            accessKey: parsed.BLOB_ACCESS_KEY,
            secretKey: parsed.BLOB_SECRET_KEY,
            region: parsed.BLOB_REGION,
            publicUrl: parsed.BLOB_PUBLIC_URL?.replace(/\/+$/, ''),
          }
        : undefined,
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
