import { createHash } from 'node:crypto';
import { WARM_UP_PROVIDER_ID } from '@aop/core/agent-state';
import type { AgentSpec, ChannelTokens } from '../host.js';
import { warmUpProvider } from './warm-up.js';

/**
 * Turns our stored agent configuration (spec §2.2) into a config the pinned OpenClaw accepts
 * (`openclaw config validate`).
 *
 * Secrets never reach the config file. Every provider's gateway (local, docker, kubernetes) gets `secretFile`: every
 * secret, the gateway token included, is a SecretRef into one JSON file (`secretFileContents`), so a running gateway
 * can be given other secrets without a restart (`config.apply` or `secrets.reload` re-read it), which is what adopting
 * a warm gateway needs. Without it (the config the backend validates and shows), channel tokens and the LLM key are
 * SecretRefs to environment variables (`{ source: 'env', provider: 'default', id: 'TELEGRAM_BOT_TOKEN' }`), and the
 * gateway token is left to `OPENCLAW_GATEWAY_TOKEN`.
 */

/** Environment variables holding each channel's token (OpenClaw's own default-account names). */
export const CHANNEL_TOKEN_ENV = { telegram: 'TELEGRAM_BOT_TOKEN', discord: 'DISCORD_BOT_TOKEN' } as const;
const CHANNEL_SECRET = { telegram: 'telegramBotToken', discord: 'discordBotToken' } as const;
/** Where each channel's token goes in OpenClaw's config. WhatsApp links by QR code: OpenClaw has no token for it. */
const CHANNEL_TOKEN_KEY = { telegram: 'botToken', discord: 'token' } as const;
/** Keys that would put a credential in the file; dropped from the stored config. */
const CHANNEL_SECRET_KEYS = ['botToken', 'token', 'tokenFile', 'webhookSecret'];
export const MESSAGING_CHANNELS = ['telegram', 'discord', 'whatsapp'] as const;

export const LLM_API_KEY_ENV = 'AOP_LLM_API_KEY';
/** The variable OpenClaw reads its gateway token from when the config names none (never written to the file). */
export const GATEWAY_TOKEN_ENV = 'OPENCLAW_GATEWAY_TOKEN';

/**
 * The agent's own secret variables (`AgentSpec.agentEnv`, e.g. its wallet key): names in the `AOP_AGENT_` namespace
 * only, so they can never replace OpenClaw's variables, the tokens above or the host's own (PATH, HOME, …).
 */
export const AGENT_ENV_NAME = /^AOP_AGENT_[A-Z0-9_]{1,64}$/;
/** Bounds on `agentEnv`: a handful of short values (each lands in a process environment or a provider's variables). */
export const AGENT_ENV_MAX_ENTRIES = 16;
export const AGENT_ENV_MAX_VALUE = 4096;

/**
 * `agentEnv` checked: every name `AOP_AGENT_*`, every value a non-empty string without NUL (which no environment can
 * hold) within the bounds. Throws naming the variable, never its value.
 */
export function checkAgentEnv(env: Record<string, string> | undefined): Record<string, string> {
  if (env === undefined) return {};
  if (typeof env !== 'object' || env === null || Array.isArray(env)) throw new Error('agentEnv must be an object of strings');
  const entries = Object.entries(env);
  if (entries.length > AGENT_ENV_MAX_ENTRIES) throw new Error(`agentEnv has more than ${AGENT_ENV_MAX_ENTRIES} variables`);
  for (const [name, value] of entries) {
    if (!AGENT_ENV_NAME.test(name)) throw new Error(`agentEnv: ${JSON.stringify(name.slice(0, 80))} is not an AOP_AGENT_* name`);
    if (typeof value !== 'string' || value === '' || value.length > AGENT_ENV_MAX_VALUE || value.includes('\0')) {
      throw new Error(`agentEnv: invalid value for ${name}`);
    }
  }
  return { ...env };
}

/** Same variables, same values (order aside). */
export function sameAgentEnv(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const left = Object.entries(a ?? {});
  return left.length === Object.keys(b ?? {}).length && left.every(([name, value]) => b?.[name] === value);
}
/** The `models.providers` id of the platform's LLM; the primary model becomes `platform/<model>`. */
export const LLM_PROVIDER_ID = 'platform';

export interface OpenClawConfigOptions {
  port: number;
  /** `loopback` when the gateway runs on the platform's own host (local provider); `lan` in a container. */
  bind: 'loopback' | 'lan';
  /** Replaces `agents.defaults.workspace` (the stored value is a container path). */
  workspaceDir?: string;
  /** `logging.file`: OpenClaw's JSONL log (by default a file in the OS temp dir shared by every gateway). */
  logFile?: string;
  /**
   * The secrets as SecretRefs into this JSON file (`secretFileContents`, provider `SECRET_FILE_PROVIDER`) instead of
   * environment variables; the gateway token is then `gateway.auth.token`.
   */
  secretFile?: string;
  /** Carry the warm-up provider even without a named model (a warm-pool gateway, which has no customer model yet). */
  alwaysWarmUp?: boolean;
}

/** The `secrets.providers` entry of `secretFile`. */
export const SECRET_FILE_PROVIDER = 'aop';

/** What the secret file holds, by JSON pointer (`/gatewayToken`), and which variable holds the same in a container. */
const SECRET_KEYS = {
  gatewayToken: GATEWAY_TOKEN_ENV,
  llmApiKey: LLM_API_KEY_ENV,
  telegramBotToken: CHANNEL_TOKEN_ENV.telegram,
  discordBotToken: CHANNEL_TOKEN_ENV.discord,
} as const;
type SecretKey = keyof typeof SECRET_KEYS;

/** The JSON of `secretFile`: every secret the config refers to, under its key. */
export function secretFileContents(spec: Pick<AgentSpec, 'gatewayToken' | 'channelTokens' | 'llm'>): Partial<Record<SecretKey, string>> {
  return {
    gatewayToken: spec.gatewayToken,
    ...(spec.llm ? { llmApiKey: spec.llm.apiKey } : {}),
    ...(spec.channelTokens?.telegram ? { telegramBotToken: spec.channelTokens.telegram } : {}),
    ...(spec.channelTokens?.discord ? { discordBotToken: spec.channelTokens.discord } : {}),
  };
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const objectAt = (parent: Json, key: string): Json => {
  const value = parent[key];
  if (isObject(value)) return value;
  const created: Json = {};
  parent[key] = created;
  return created;
};
const envRef = (id: string) => ({ source: 'env', provider: 'default', id });
/** The SecretRef of one secret: into `secretFile` when there is one, else to its environment variable. */
const secretRef = (options: OpenClawConfigOptions, key: SecretKey) =>
  options.secretFile ? { source: 'file', provider: SECRET_FILE_PROVIDER, id: `/${key}` } : envRef(SECRET_KEYS[key]);

/**
 * Keys of our stored config that the pinned OpenClaw rejects or ignores, and what happens to them. We keep
 * them in our record (the spec's config object has them) but they never reach OpenClaw.
 */
export const RETIRED_KEYS: ReadonlyArray<{ path: string; action: string }> = [
  { path: 'cron.maxConcurrentRuns', action: 'dropped (retired: "Unrecognized key")' },
  { path: 'channels.webchat', action: 'dropped (retired: WebChat has no config section; it is always on)' },
  { path: 'gateway.webchat', action: 'dropped (retired)' },
  { path: 'gateway.controlUi.dangerouslyDisableDeviceAuth', action: 'dropped (retired and inert)' },
  { path: 'tools.exec.timeoutSec', action: 'renamed to tools.exec.timeoutSeconds' },
  { path: '$include, secrets, env.shellEnv', action: 'dropped (would read host files or run host commands)' },
];

function stripIncludes(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) stripIncludes(item);
  } else if (isObject(value)) {
    delete value.$include;
    for (const child of Object.values(value)) stripIncludes(child);
  }
}

/** OpenClaw's memory plugin, whose nightly maintenance ("dreaming") is a cron job of the gateway. */
const MEMORY_PLUGIN_ID = 'memory-core';
/** The window an agent's nightly memory maintenance is spread over (`dreamingSchedule`): 01:00–04:59, 240 minutes. */
const DREAMING_FIRST_HOUR = 1;
const DREAMING_WINDOW_MINUTES = 240;

/**
 * The nightly time of an agent's memory maintenance, as a cron expression in the agent's timezone: a minute of
 * 01:00–04:59 fixed by its id. OpenClaw runs it at 03:00 (`0 3 * * *`) for every agent, and the job wakes a sleeping
 * agent (a cold start and a model call): every sleeping agent of one timezone would start at the same minute, a herd a
 * full host can only work through by eviction. Spread over four hours, a host of 150 registered agents wakes about one
 * every 1.6 minutes instead (docs/decisions.md "Nightly memory maintenance, spread").
 */
export function dreamingSchedule(agentId: string): string {
  const minute = createHash('sha256').update(agentId).digest().readUInt32BE(0) % DREAMING_WINDOW_MINUTES;
  return `${minute % 60} ${DREAMING_FIRST_HOUR + Math.floor(minute / 60)} * * *`;
}

/**
 * An agent's dreaming gets its own time (`dreamingSchedule`) unless its configuration sets one or turns dreaming off,
 * or the memory slot is another plugin's (whose settings are its own).
 */
function spreadDreaming(config: Json, agentId: string): void {
  const plugins = isObject(config.plugins) ? config.plugins : undefined;
  const slot = isObject(plugins?.slots) ? plugins.slots.memory : undefined;
  if (slot !== undefined && slot !== MEMORY_PLUGIN_ID) return;
  const entries = objectAt(objectAt(config, 'plugins'), 'entries');
  const dreaming = objectAt(objectAt(objectAt(entries, MEMORY_PLUGIN_ID), 'config'), 'dreaming');
  if (dreaming.enabled === false || dreaming.frequency !== undefined) return;
  dreaming.frequency = dreamingSchedule(agentId);
}

/**
 * The OpenClaw config for an agent. Pure: the same spec and options give the same config. With the agent's id, its
 * nightly memory maintenance gets a time of its own (`dreamingSchedule`).
 */
export function buildOpenClawConfig(
  spec: Pick<AgentSpec, 'config' | 'channelTokens' | 'llm'> & { agentId?: string | undefined },
  options: OpenClawConfigOptions,
): Json {
  const config = structuredClone(isObject(spec.config) ? spec.config : {}) as Json;

  // Host-reaching keys: an agent config must not make the gateway read host files or run host commands.
  stripIncludes(config);
  delete config.secrets;
  if (isObject(config.env)) delete config.env.shellEnv;

  // Retired keys.
  if (isObject(config.cron)) delete config.cron.maxConcurrentRuns;
  const tools = isObject(config.tools) ? config.tools : undefined;
  if (tools && isObject(tools.exec) && 'timeoutSec' in tools.exec) {
    const exec = tools.exec;
    if (exec.timeoutSeconds === undefined) exec.timeoutSeconds = exec.timeoutSec;
    delete exec.timeoutSec;
  }

  // Gateway: ours, whatever the stored config says.
  const gateway = objectAt(config, 'gateway');
  delete gateway.webchat;
  if (isObject(gateway.controlUi)) delete gateway.controlUi.dangerouslyDisableDeviceAuth;
  gateway.mode = 'local';
  gateway.port = options.port;
  gateway.bind = options.bind;
  gateway.auth = options.secretFile ? { mode: 'token', token: secretRef(options, 'gatewayToken') } : { mode: 'token' };
  if (options.secretFile) {
    config.secrets = { providers: { [SECRET_FILE_PROVIDER]: { source: 'file', path: options.secretFile, mode: 'json' } } };
  }
  const endpoints = objectAt(objectAt(gateway, 'http'), 'endpoints');
  endpoints.chatCompletions = { ...(isObject(endpoints.chatCompletions) ? endpoints.chatCompletions : {}), enabled: true };

  // Channels: a messaging channel is on exactly when its token was given.
  const channels = objectAt(config, 'channels');
  delete channels.webchat;
  const tokens: ChannelTokens = spec.channelTokens ?? {};
  for (const name of MESSAGING_CHANNELS) {
    const channel = objectAt(channels, name);
    for (const key of CHANNEL_SECRET_KEYS) delete channel[key];
    const token = tokens[name];
    channel.enabled = Boolean(token);
    if (channel.dmPolicy !== 'pairing' && channel.dmPolicy !== 'allowlist') channel.dmPolicy = 'pairing';
    if (token && name !== 'whatsapp') channel[CHANNEL_TOKEN_KEY[name]] = secretRef(options, CHANNEL_SECRET[name]);
  }

  const defaults = objectAt(objectAt(config, 'agents'), 'defaults');
  if (options.workspaceDir) defaults.workspace = options.workspaceDir;
  if (options.logFile) objectAt(config, 'logging').file = options.logFile;

  if (spec.llm) {
    const models = objectAt(config, 'models');
    if (models.mode === undefined) models.mode = 'merge';
    const providers = objectAt(models, 'providers');
    providers[LLM_PROVIDER_ID] = {
      baseUrl: spec.llm.baseUrl,
      apiKey: secretRef(options, 'llmApiKey'),
      api: 'openai-completions',
      models: [
        {
          id: spec.llm.model,
          name: spec.llm.model,
          reasoning: false,
          input: ['text'],
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
          contextWindow: spec.llm.contextWindow ?? 128_000,
          maxTokens: spec.llm.maxTokens ?? 4_096,
        },
      ],
    };
    objectAt(defaults, 'model').primary = `${LLM_PROVIDER_ID}/${spec.llm.model}`;
  }
  // The platform's warm-up turn (shared/warm-up.ts): the gateway asks itself, so no model is called. Only beside a
  // named model: with none, OpenClaw would take this provider's for its default, and such an agent has no model to warm.
  // A warm-pool gateway has no customer's model yet, and is not anyone's agent: its default may be the warm-up's.
  if (namesPrimaryModel(defaults.model) || options.alwaysWarmUp) {
    const models = objectAt(config, 'models');
    if (models.mode === undefined) models.mode = 'merge';
    objectAt(models, 'providers')[WARM_UP_PROVIDER_ID] = warmUpProvider(options.port, secretRef(options, 'gatewayToken'));
  }
  if (spec.agentId) spreadDreaming(config, spec.agentId);
  return config;
}

/** `agents.defaults.model` names a primary model (OpenClaw takes a string or `{ primary }`). */
const namesPrimaryModel = (model: unknown) =>
  (typeof model === 'string' && model !== '') || (isObject(model) && typeof model.primary === 'string' && model.primary !== '');

/** Whether a config built here carries the warm-up provider, i.e. whether a start should end with the warm-up turn. */
export const carriesWarmUp = (config: Record<string, unknown>): boolean => {
  const models = config.models;
  return isObject(models) && isObject(models.providers) && WARM_UP_PROVIDER_ID in models.providers;
};

/**
 * OpenClaw's own `meta` block of a config it wrote (parsed), to carry into the next write of it: OpenClaw adds `meta`
 * when it writes the file itself (`config.apply`, migrations), and a later file without it counts as clobbered — at its
 * next load it puts back its last good copy instead (`missing-meta-vs-last-good`). Undefined when there is none.
 */
export function configMeta(parsed: unknown): unknown {
  const meta = isObject(parsed) ? parsed.meta : undefined;
  return typeof meta === 'object' && meta !== null ? meta : undefined;
}

/** A key as one segment of a JSON Pointer (RFC 6901: `~` and `/` escaped). */
export const pointerSegment = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');
