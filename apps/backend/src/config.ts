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

const BackendEnvSchema = Type.Composite([
  BaseEnvSchema,
  MetricsEnvSchema,
  TracingEnvSchema,
  Type.Object({
    BACKEND_PORT: Env.port(3001),
    DATABASE_URL: Env.url(),
    INTERNAL_API_KEY: Env.optional(Type.String({ minLength: 16 })),
    HMAC_SECRET: Env.optional(Type.String({ minLength: 16 })),
    ADMIN_EMAILS: Env.optional(Type.String()),
    PROVISIONER: Env.oneOf(['local', 'docker', 'kubernetes', 'hosting'] as const, 'local'),
    DOCKER_SOCKET: Env.str('/var/run/docker.sock'),
    DOCKER_AGENT_IMAGE: Env.optional(Type.String({ minLength: 1 })),
    DOCKER_NETWORK: Env.optional(Type.String({ minLength: 1 })),
    KUBECONFIG: Env.optional(Type.String({ minLength: 1 })),
    KUBE_CONTEXT: Env.optional(Type.String({ minLength: 1 })),
    KUBE_NAMESPACE: Env.str('aop-agents'),
    KUBE_AGENT_IMAGE: Env.optional(Type.String({ minLength: 1 })),
    KUBE_UTILITY_IMAGE: Env.optional(Type.String({ minLength: 1 })),
    KUBE_IMAGE_PULL_SECRETS: Env.optional(Type.String()),
    KUBE_STORAGE_CLASS: Env.optional(Type.String({ minLength: 1 })),
    KUBE_STORAGE_SIZE: Env.str('5Gi'),
    KUBE_AGENT_URL: Env.optional(Type.String({ minLength: 1 })),
    HOSTING_API_URL: Env.url(),
    HOSTING_API_KEY: Env.optional(Type.String()),
    HOSTING_PROJECT_ID: Env.optional(Type.String()),
    HOSTING_ENVIRONMENT_ID: Env.optional(Type.String()),
    HOSTING_AGENT_IMAGE: Env.str('ghcr.io/openclaw/openclaw:2026.9.6'),
    ENCRYPTION_KEY: Env.optional(Type.String({ minLength: 32 })),
    PLATFORM_DEVICE_KEY: Env.optional(Type.String({ minLength: 32 })),
    GATEWAY_SHARED_TOKEN: Env.optional(Type.String({ minLength: 16 })),
    PLATFORM_GATEWAY_TOKEN: Env.optional(Type.String({ minLength: 16 })),
    AGENT_DOMAIN: Env.optional(Type.String()),
    AGENT_READY_TIMEOUT_MS: Env.int(120_000, 1000),
    AGENT_MEMORY_BYTES: Env.int(1_610_612_736, 1),
    // A measured gateway is budgeted at its peak PSS times this (local provider).
    AGENT_MEMORY_MARGIN: Type.Number({ minimum: 1, default: 1.2 }),
    AGENT_MAX: Env.optional(Type.Integer({ minimum: 0 })),
    // Warm gateways kept ready for new agents (local provider): a number, or `auto` (sized from free memory).
    AGENT_WARM_POOL: Env.optional(Type.String({ pattern: '^(auto|[0-9]|[12][0-9]|3[0-2])$' })),
    // Idle agents hibernate after this many minutes (local provider); 0 keeps every agent awake.
    AGENT_IDLE_MINUTES: Env.int(15, 0),
    AGENT_EVICT_IDLE_MINUTES: Env.int(2, 0),
    // A customer's agents share one gateway, up to this many (local provider); 1 gives every agent its own.
    AGENTS_PER_GATEWAY: Env.int(8, 1),
    // 0 (no cap) or at least 512: at 256 a gateway ran out of heap within ten chat turns, at 384 its turns took 3–10
    // times as long (garbage collection near the cap); npm run bench:heap-soak, docs/operations.md "Memory cap".
    AGENT_MAX_HEAP_MB: Env.optional(Type.String({ pattern: '^(0|51[2-9]|5[2-9][0-9]|[6-9][0-9]{2}|[1-9][0-9]{3,5})$' })),
    OPENROUTER_BASE_URL: Env.str('https://openrouter.ai/api/v1'),
    GEMINI_BASE_URL: Env.str('https://generativelanguage.googleapis.com/v1beta/openai'),
    GROQ_BASE_URL: Env.str('https://api.groq.com/openai/v1'),
    ANTHROPIC_BASE_URL: Env.str('https://api.anthropic.com/v1'),
    OPENAI_BASE_URL: Env.str('https://api.openai.com/v1'),
    OPENROUTER_API_KEY: Env.optional(Type.String()),
    GEMINI_API_KEY: Env.optional(Type.String()),
    GROQ_API_KEY: Env.optional(Type.String()),
    ANTHROPIC_API_KEY: Env.optional(Type.String()),
    OPENAI_API_KEY: Env.optional(Type.String()),
    AI_FALLBACK_PROVIDER: Env.optional(Type.Union(['gemini', 'google', 'groq', 'anthropic', 'openai'].map((p) => Type.Literal(p)))),
    AI_TIMEOUT_MS: Env.int(60_000, 100),
    UNDERGROUND_RPC_URL: Env.url(),
    UNDERGROUND_USDC_ADDRESS: Env.optional(Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })),
    UNDERGROUND_RPC_TIMEOUT_MS: Env.int(10_000, 100),
    UNDERGROUND_WEBHOOK_TIMEOUT_MS: Env.int(5_000, 100),
    UNDERGROUND_WEBHOOK_BACKOFF_MS: Env.int(500, 0),
    UNDERGROUND_WEBHOOK_ALLOW_PRIVATE: Env.bool(false),
    UNDERGROUND_BUS_URL: Env.url(),
    X402_GATEWAY_URL: Env.url(),
    X402_FITNESS_TIMEOUT_MS: Env.int(2_000, 100),
  }),
]);

export interface BackendConfig extends BaseConfig, MetricsConfig {
  port: number;
  databaseUrl: string | undefined;
  /** Bearer key of the internal API; undefined only when deliberately unset (routes answer 500). */
  internalApiKey: string | undefined;
  /** Key of the user-context signature: HMAC_SECRET, else INTERNAL_API_KEY (spec §5). */
  userContextSecret: string | undefined;
  adminEmails: ReadonlySet<string>;
  provisioner: 'local' | 'docker' | 'kubernetes' | 'hosting';
  dockerSocket: string;
  hostingApiUrl: string | undefined;
  hostingApiKey: string | undefined;
  /** Options of the container providers; unset values take the host's defaults. */
  docker: { image: string | undefined; network: string | undefined };
  kubernetes: {
    kubeconfig: string | undefined;
    context: string | undefined;
    namespace: string;
    image: string | undefined;
    /** Image of the short-lived Jobs (backups, memory reset); the agent image when unset. */
    utilityImage: string | undefined;
    imagePullSecrets: string[];
    storageClass: string | undefined;
    storageSize: string;
    /** Gateway URL template with `{name}`, `{namespace}`, `{agentId}`; in-cluster service DNS when unset. */
    agentUrl: string | undefined;
  };
  /** The hosting provider's project, environment and agent image (with `hostingApiUrl`/`hostingApiKey`). */
  hosting: { projectId: string | undefined; environmentId: string | undefined; image: string };
  /** Seals the agent host's secrets (gateway and channel tokens, LLM keys) at rest. */
  encryptionKey: string;
  /**
   * `PLATFORM_DEVICE_KEY`: the Ed25519 private key (PKCS#8 PEM, or base64 of the DER) of the platform device that
   * controls container and hosted agents; unset → generated once into `DATA_DIR/platform-device.json`, sealed.
   */
  platformDeviceKey: string | undefined;
  /** One gateway token for every agent; unset → each agent gets 24 random bytes as 48 hex characters. */
  gatewaySharedToken: string | undefined;
  /** Token of the shared platform gateway (web `GATEWAY_URL`), handed to the web service only. */
  platformGatewayToken: string | undefined;
  /** Agents are reached at `https://<subdomain>.<AGENT_DOMAIN>` when set; at their gateway URL otherwise. */
  agentDomain: string | undefined;
  agents: {
    readyTimeoutMs: number;
    memoryPerAgentBytes: number;
    memoryMargin: number;
    maxAgents: number | undefined;
    /** `AGENT_WARM_POOL`; unset: 1 on the embedded set-up (no DATABASE_URL), else `auto`. */
    warmPool: number | 'auto';
    /** `AGENT_IDLE_MINUTES` in ms; 0: never hibernate. */
    idleMs: number;
    /** `AGENT_EVICT_IDLE_MINUTES` in ms: an agent idle this long is hibernated early when a start needs its room; 0: never. */
    evictIdleMs: number;
    /** `AGENTS_PER_GATEWAY`: a customer's agents one gateway holds (customer-scoped gateways); 1: each its own. */
    agentsPerGateway: number;
    /** `AGENT_MAX_HEAP_MB`: each local gateway's V8 heap cap (`--max-old-space-size`); 0: none (the default). */
    maxHeapMb: number;
  };
  /** OpenAI-compatible base URL per AI provider (`aiProvider` of a deployment). */
  aiBaseUrls: Record<'openrouter' | 'gemini' | 'groq' | 'anthropic' | 'openai', string>;
  /**
   * `/api/ai/*`: the platform's key per provider (unset → that provider answers 503), the fallback-only
   * provider tried when the chosen one fails (never `openrouter`, the default), and the upstream timeout.
   */
  ai: {
    keys: Record<'openrouter' | 'gemini' | 'groq' | 'anthropic' | 'openai', string | undefined>;
    fallbackProvider: 'gemini' | 'groq' | 'anthropic' | 'openai' | undefined;
    timeoutMs: number;
  };
  /**
   * Underground (spec §4.11): wallet balances are the USDC contract's `balanceOf` read through `rpcUrl` (both unset →
   * balance answers 500); bus deliveries to agents' webhooks: `attempts` tries per recipient, waiting `backoffMs`,
   * then twice that, between them; `allowPrivate` lets webhooks live on loopback/private addresses (local use, tests).
   */
  underground: {
    rpcUrl: string | undefined;
    usdcAddress: `0x${string}` | undefined;
    rpcTimeoutMs: number;
    webhook: { attempts: number; timeoutMs: number; backoffMs: number; allowPrivate: boolean };
    /**
     * `UNDERGROUND_BUS_URL`: where agents post their signed bus messages (this backend's
     * `/api/underground/bus/send` as agents reach it); handed to each agent with a wallet as `AOP_AGENT_BUS_URL`.
     */
    busUrl: string | undefined;
  };
  /**
   * The colony gateway behind x402 (`X402_GATEWAY_URL`, the web's `/api/x402` upstream): mission control shows each
   * agent's fitness from it. `fitnessTimeoutMs` bounds one fitness call, so the fleet graph stays fast; unset URL =
   * no fitness on the graph.
   */
  x402: { gatewayUrl: string | undefined; fitnessTimeoutMs: number };
  /** OpenTelemetry: OTEL_EXPORTER_OTLP_ENDPOINT (unset: off) and OTEL_SERVICE_NAME (`aop-backend`). */
  tracing: TracingConfig;
}

export interface LoadOptions {
  /** Generate development secrets in DATA_DIR when unset (default: yes, except in production where they are required). */
  devSecrets?: boolean;
}

/** `AGENT_WARM_POOL` as checked by its pattern: `auto` or 0–32. */
const warmPoolOf = (value: string): number | 'auto' => (value === 'auto' ? 'auto' : Number(value));

export function loadBackendConfig(env: NodeJS.ProcessEnv = process.env, options: LoadOptions = {}): BackendConfig {
  const parsed = parseEnv(BackendEnvSchema, env);
  const base = toBaseConfig(parsed);
  const secrets =
    options.devSecrets === false
      ? { INTERNAL_API_KEY: parsed.INTERNAL_API_KEY, HMAC_SECRET: parsed.HMAC_SECRET }
      : resolveSecrets(['INTERNAL_API_KEY', 'HMAC_SECRET'], env, base);
  const { ENCRYPTION_KEY } = resolveSecrets(['ENCRYPTION_KEY'], env, base);
  return Object.freeze({
    ...base,
    ...toMetricsConfig(parsed),
    port: parsed.BACKEND_PORT,
    databaseUrl: parsed.DATABASE_URL,
    internalApiKey: secrets.INTERNAL_API_KEY,
    userContextSecret: secrets.HMAC_SECRET ?? secrets.INTERNAL_API_KEY,
    adminEmails: new Set(splitList(parsed.ADMIN_EMAILS).map((e) => e.toLowerCase())),
    provisioner: parsed.PROVISIONER,
    dockerSocket: parsed.DOCKER_SOCKET,
    hostingApiUrl: parsed.HOSTING_API_URL,
    hostingApiKey: parsed.HOSTING_API_KEY,
    docker: { image: parsed.DOCKER_AGENT_IMAGE, network: parsed.DOCKER_NETWORK },
    kubernetes: {
      kubeconfig: parsed.KUBECONFIG,
      context: parsed.KUBE_CONTEXT,
      namespace: parsed.KUBE_NAMESPACE,
      image: parsed.KUBE_AGENT_IMAGE,
      utilityImage: parsed.KUBE_UTILITY_IMAGE,
      imagePullSecrets: splitList(parsed.KUBE_IMAGE_PULL_SECRETS),
      storageClass: parsed.KUBE_STORAGE_CLASS,
      storageSize: parsed.KUBE_STORAGE_SIZE,
      agentUrl: parsed.KUBE_AGENT_URL,
    },
    hosting: { projectId: parsed.HOSTING_PROJECT_ID, environmentId: parsed.HOSTING_ENVIRONMENT_ID, image: parsed.HOSTING_AGENT_IMAGE },
    encryptionKey: ENCRYPTION_KEY,
    platformDeviceKey: parsed.PLATFORM_DEVICE_KEY,
    gatewaySharedToken: parsed.GATEWAY_SHARED_TOKEN,
    platformGatewayToken: parsed.PLATFORM_GATEWAY_TOKEN,
    agentDomain: parsed.AGENT_DOMAIN,
    agents: {
      readyTimeoutMs: parsed.AGENT_READY_TIMEOUT_MS,
      memoryPerAgentBytes: parsed.AGENT_MEMORY_BYTES,
      memoryMargin: parsed.AGENT_MEMORY_MARGIN,
      maxAgents: parsed.AGENT_MAX,
      idleMs: parsed.AGENT_IDLE_MINUTES * 60_000,
      evictIdleMs: parsed.AGENT_EVICT_IDLE_MINUTES * 60_000,
      maxHeapMb: Number(parsed.AGENT_MAX_HEAP_MB ?? 0),
      agentsPerGateway: parsed.AGENTS_PER_GATEWAY,
      warmPool: parsed.AGENT_WARM_POOL === undefined ? (parsed.DATABASE_URL ? 'auto' : 1) : warmPoolOf(parsed.AGENT_WARM_POOL),
    },
    aiBaseUrls: {
      openrouter: parsed.OPENROUTER_BASE_URL,
      gemini: parsed.GEMINI_BASE_URL,
      groq: parsed.GROQ_BASE_URL,
      anthropic: parsed.ANTHROPIC_BASE_URL,
      openai: parsed.OPENAI_BASE_URL,
    },
    ai: {
      keys: {
        openrouter: parsed.OPENROUTER_API_KEY,
        gemini: parsed.GEMINI_API_KEY,
        groq: parsed.GROQ_API_KEY,
        anthropic: parsed.ANTHROPIC_API_KEY,
        openai: parsed.OPENAI_API_KEY,
      },
      fallbackProvider:
        parsed.AI_FALLBACK_PROVIDER === 'google' ? 'gemini' : (parsed.AI_FALLBACK_PROVIDER as BackendConfig['ai']['fallbackProvider']),
      timeoutMs: parsed.AI_TIMEOUT_MS,
    },
    underground: {
      rpcUrl: parsed.UNDERGROUND_RPC_URL,
      usdcAddress: parsed.UNDERGROUND_USDC_ADDRESS as `0x${string}` | undefined,
      rpcTimeoutMs: parsed.UNDERGROUND_RPC_TIMEOUT_MS,
      webhook: {
        attempts: 3,
        timeoutMs: parsed.UNDERGROUND_WEBHOOK_TIMEOUT_MS,
        backoffMs: parsed.UNDERGROUND_WEBHOOK_BACKOFF_MS,
        allowPrivate: parsed.UNDERGROUND_WEBHOOK_ALLOW_PRIVATE,
      },
      busUrl: parsed.UNDERGROUND_BUS_URL,
    },
    x402: { gatewayUrl: parsed.X402_GATEWAY_URL?.replace(/\/+$/, ''), fitnessTimeoutMs: parsed.X402_FITNESS_TIMEOUT_MS },
    tracing: toTracingConfig(parsed, 'aop-backend'),
  });
}
