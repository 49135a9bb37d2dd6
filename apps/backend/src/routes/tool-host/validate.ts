import { DomainError, isPublicError } from '@aop/core';
import {
  CHANNEL_TOKEN_ENV,
  LLM_API_KEY_ENV,
  MESSAGING_CHANNELS,
  type OpenClawRuntime,
  RETIRED_KEYS,
  buildOpenClawConfig,
  runtimeProblem,
  validateOpenClawConfig,
} from '@aop/provisioner';

/**
 * `POST /api/tool-host/validate-config`: the stored config is translated exactly as provisioning translates it
 * (`buildOpenClawConfig`), then checked by the pinned OpenClaw's own `config validate`. The keys the translation
 * consumes (the runtime never sees the user's value for them) are checked here instead, so a bad value there is not
 * silently replaced.
 */

export interface ConfigIssue {
  path: string;
  message: string;
  source: 'platform' | 'openclaw';
}

export interface ConfigValidation {
  valid: boolean;
  errors: ConfigIssue[];
  warnings: Array<{ path: string; message: string }>;
  /** Keys of the stored config that do not reach OpenClaw as written (dropped or renamed), and what happens to them. */
  translated: Array<{ path: string; action: string }>;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

const at = (value: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), value);
const has = (value: unknown, path: string): boolean => {
  const parts = path.split('.');
  const last = parts.pop() as string;
  const holder = parts.length > 0 ? at(value, parts.join('.')) : value;
  return isObject(holder) && Object.hasOwn(holder, last);
};

const positiveInteger = (value: unknown) => typeof value === 'number' && Number.isInteger(value) && value >= 1;

/** Checks of the keys `buildOpenClawConfig` overrides or drops (renamed keys reach OpenClaw, which checks them). */
export function platformIssues(config: Json): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const issue = (path: string, message: string) => issues.push({ path, message, source: 'platform' });
  for (const channel of MESSAGING_CHANNELS) {
    const path = `channels.${channel}`;
    if (has(config, path) && !isObject(at(config, path))) issue(path, 'must be an object');
    const dmPolicy = at(config, `${path}.dmPolicy`);
    if (dmPolicy !== undefined && dmPolicy !== 'pairing' && dmPolicy !== 'allowlist')
      issue(`${path}.dmPolicy`, 'must be pairing or allowlist');
    const enabled = at(config, `${path}.enabled`);
    if (enabled !== undefined && typeof enabled !== 'boolean') issue(`${path}.enabled`, 'must be a boolean');
  }
  const webchat = at(config, 'channels.webchat.enabled');
  if (webchat !== undefined && typeof webchat !== 'boolean') issue('channels.webchat.enabled', 'must be a boolean');
  const maxRuns = at(config, 'cron.maxConcurrentRuns');
  if (maxRuns !== undefined && !positiveInteger(maxRuns)) issue('cron.maxConcurrentRuns', 'must be a whole number of at least 1');
  const bind = at(config, 'gateway.bind');
  if (bind !== undefined && !['lan', 'loopback', 'tailnet', 'auto', 'custom'].includes(bind as string)) {
    issue('gateway.bind', 'must be lan, loopback, tailnet, auto or custom');
  }
  const authMode = at(config, 'gateway.auth.mode');
  if (authMode !== undefined && !['token', 'password', 'none', 'trusted-proxy'].includes(authMode as string)) {
    issue('gateway.auth.mode', 'must be token, password, none or trusted-proxy');
  }
  return issues;
}

/** The retired keys present in a stored config. */
export function translatedKeys(config: Json): ConfigValidation['translated'] {
  const translated: ConfigValidation['translated'] = [];
  for (const { path, action } of RETIRED_KEYS) {
    const present = path.split(',').some((p) => {
      const key = p.trim();
      return key === '$include' ? JSON.stringify(config).includes('"$include"') : has(config, key);
    });
    if (present) translated.push({ path, action });
  }
  return translated;
}

/** OpenClaw reports paths of the translated config; the renamed key is reported under the name the user wrote. */
function storedPath(path: string, config: Json): string {
  if (has(config, 'tools.exec.timeoutSec') && path.startsWith('tools.exec.timeoutSeconds')) {
    return `tools.exec.timeoutSec${path.slice('tools.exec.timeoutSeconds'.length)}`;
  }
  return path;
}

const VALIDATE_TIMEOUT_MS = 60_000;
/** Each run is a Node process with 2–4 s of CPU: two at a time, a short queue, then 503. */
const MAX_RUNNING = 2;
const MAX_WAITING = 8;
let running = 0;
const waiting: Array<() => void> = [];

async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAX_RUNNING) {
    if (waiting.length >= MAX_WAITING) throw new DomainError('CONFIG_VALIDATION_BUSY_TRY_AGAIN');
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else running += 1;
  try {
    return await fn();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running -= 1;
  }
}

export async function validateStoredConfig(runtime: OpenClawRuntime, config: Json): Promise<ConfigValidation> {
  const problem = runtimeProblem(runtime);
  if (problem) throw new DomainError('CONFIG_VALIDATION_UNAVAILABLE', { problem });
  const errors = platformIssues(config);
  const translated = translatedKeys(config);
  // A channel the stored config marks enabled had its token given: validate it as enabled, with a stand-in
  // token (the reference must resolve; its value does not matter).
  const channelTokens = Object.fromEntries(
    MESSAGING_CHANNELS.filter((name) => at(config, `channels.${name}.enabled`) === true).map((name) => [name, 'validate']),
  );
  const openclawConfig = buildOpenClawConfig({ config, channelTokens }, { port: 18789, bind: 'loopback' });
  const env = { [CHANNEL_TOKEN_ENV.telegram]: 'validate', [CHANNEL_TOKEN_ENV.discord]: 'validate', [LLM_API_KEY_ENV]: 'validate' };
  const result = await withSlot(async () => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DomainError('CONFIG_VALIDATION_TIMED_OUT')), VALIDATE_TIMEOUT_MS);
    });
    try {
      return await Promise.race([validateOpenClawConfig(runtime, openclawConfig, env), timeout]);
    } catch (err) {
      if (isPublicError(err)) throw err;
      throw new DomainError('CONFIG_VALIDATION_FAILED', { detail: err instanceof Error ? err.message : String(err) });
    } finally {
      clearTimeout(timer);
    }
  });
  for (const issue of result.issues) errors.push({ path: storedPath(issue.path, config), message: issue.message, source: 'openclaw' });
  return {
    valid: errors.length === 0 && result.valid,
    errors,
    warnings: result.warnings.map((w) => ({ path: storedPath(w.path, config), message: w.message })),
    translated,
  };
}
