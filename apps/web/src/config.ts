import { BaseEnvSchema, type BaseConfig, Env, parseEnv, resolveSecrets, splitList, toBaseConfig } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { DEFAULT_DEMO_MODELS, type DemoModel, parseDemoModels } from './services/demo-chat.js';

const WebEnvSchema = Type.Composite([
  BaseEnvSchema,
  Type.Object({
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
    SMTP_URL: Env.url(),
    MAIL_FROM: Env.optional(Type.String()),
    BOT_CHECK_SECRET: Env.optional(Type.String()),
    BOT_CHECK_URL: Env.url(),
    REFERRAL_CREDITS_REFERRED: Env.int(50),
    REFERRAL_CREDITS_REFERRER: Env.int(50),
    PASSWORD_RESET_TTL_MINUTES: Env.int(60, 1),
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
    BRIDGE_SECRET: Env.optional(Type.String()),
    BRIDGE_OPERATOR_IDENTITY: Env.str('operator'),
    LLM_BASE_URL: Env.url(),
    LLM_API_KEY: Env.optional(Type.String()),
    DEMO_MODELS: Env.str(DEFAULT_DEMO_MODELS),
    DEMO_CHAT_LIMIT_PER_MINUTE: Env.int(10, 1),
    DEMO_CHAT_TIMEOUT_MS: Env.int(30_000, 100),
    TRADING_API_URL: Env.str('https://api.bankr.bot'),
    TRADING_API_KEY: Env.optional(Type.String()),
    TRADING_TIMEOUT_MS: Env.int(30_000, 100),
    FORGOT_PASSWORD_LIMIT_PER_15_MIN: Env.int(5, 1),
    GATEWAY_URL: Env.url(),
    GATEWAY_CHAT_TIMEOUT_MS: Env.int(30_000, 100),
    GATEWAY_REQUEST_TIMEOUT_MS: Env.int(10_000, 100),
    RESET_PASSWORD_LIMIT_PER_15_MIN: Env.int(10, 1),
  }),
]);

export interface WebConfig extends BaseConfig {
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
  mail: { smtpUrl: string | undefined; from: string };
  /** A Turnstile-style challenge verifier; off unless both are set. */
  botCheck: { secret: string; url: string } | undefined;
  referralCredits: { referred: number; referrer: number };
  passwordResetTtlMs: number;
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
  /** `X-Bridge-Secret`; the check is skipped when unset (spec §4.8). */
  bridge: { secret: string | undefined; operatorIdentity: string };
  /** Demo chat (spec §4.6): the OpenAI-compatible LLM it calls (unset → 503), its six models, per-IP limit, timeout. */
  demo: { llm: { baseUrl: string; apiKey: string } | undefined; models: DemoModel[]; limitPerMinute: number; timeoutMs: number };
  /** Trading service: base URL, the platform key (used when a user has none), request timeout. */
  trading: { apiUrl: string; platformKey: string | undefined; timeoutMs: number };
  /**
   * Agent gateways. `sharedUrl` is the shared platform gateway used for users who have no agent of their own (its
   * token comes from the backend); `chatTimeoutMs` bounds `/api/gateway/chat` (spec: 30 s); `requestTimeoutMs` bounds
   * every other gateway call (connect + one request).
   */
  gateway: { sharedUrl: string | undefined; chatTimeoutMs: number; requestTimeoutMs: number };
}

export function loadWebConfig(env: NodeJS.ProcessEnv = process.env): WebConfig {
  const parsed = parseEnv(WebEnvSchema, env);
  const base = toBaseConfig(parsed);
  const secrets = resolveSecrets(['INTERNAL_API_KEY', 'HMAC_SECRET', 'SESSION_SECRET', 'ENCRYPTION_KEY'], env, base);
  return Object.freeze({
    ...base,
    port: parsed.PORT,
    databaseUrl: parsed.DATABASE_URL,
    backendUrls: [parsed.BACKEND_API_URL, parsed.BACKEND_API_FALLBACK_URL].filter((u): u is string => Boolean(u)),
    summarizerUrl: parsed.SUMMARIZER_URL,
    internalApiKey: secrets.INTERNAL_API_KEY,
    userContextSecret: secrets.HMAC_SECRET ?? secrets.INTERNAL_API_KEY,
    sessionSecret: secrets.SESSION_SECRET,
    encryptionKey: secrets.ENCRYPTION_KEY,
    adminEmails: new Set(splitList(parsed.ADMIN_EMAILS).map((e) => e.toLowerCase())),
    cookieSecure: parsed.COOKIE_SECURE ?? base.production,
    publicUrl: (parsed.PUBLIC_URL ?? `http://127.0.0.1:${parsed.PORT}`).replace(/\/+$/, ''),
    mail: { smtpUrl: parsed.SMTP_URL, from: parsed.MAIL_FROM ?? `no-reply@${parsed.PRODUCT_NAME}.localhost` },
    botCheck: parsed.BOT_CHECK_SECRET && parsed.BOT_CHECK_URL ? { secret: parsed.BOT_CHECK_SECRET, url: parsed.BOT_CHECK_URL } : undefined,
    referralCredits: { referred: parsed.REFERRAL_CREDITS_REFERRED, referrer: parsed.REFERRAL_CREDITS_REFERRER },
    passwordResetTtlMs: parsed.PASSWORD_RESET_TTL_MINUTES * 60_000,
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
    bridge: { secret: parsed.BRIDGE_SECRET, operatorIdentity: parsed.BRIDGE_OPERATOR_IDENTITY },
    demo: {
      llm: parsed.LLM_BASE_URL && parsed.LLM_API_KEY ? { baseUrl: parsed.LLM_BASE_URL, apiKey: parsed.LLM_API_KEY } : undefined,
      models: parseDemoModels(parsed.DEMO_MODELS),
      limitPerMinute: parsed.DEMO_CHAT_LIMIT_PER_MINUTE,
      timeoutMs: parsed.DEMO_CHAT_TIMEOUT_MS,
    },
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
