/**
 * The known keys of the agent configuration (interface spec §2.2) as form fields, with the same checks the API makes
 * (`apps/web/src/modules/agent-config/agent-config.service.ts`), so a mistake shows next to its field before anything is sent. Keys not
 * listed here stay untouched and are edited in the JSON view.
 */

export type ConfigObject = Record<string, unknown>;

export type FieldKind = 'text' | 'duration' | 'integer' | 'boolean' | 'choice';

export interface ConfigField {
  path: string;
  label: string;
  kind: FieldKind;
  options?: readonly string[];
  min?: number;
  max?: number;
  hint?: string;
}

export interface FieldGroup {
  title: string;
  fields: readonly ConfigField[];
}

const channel = (name: string, key: string): ConfigField[] => [
  { path: `channels.${key}.enabled`, label: `${name} enabled`, kind: 'boolean' },
  { path: `channels.${key}.dmPolicy`, label: `${name} DM policy`, kind: 'choice', options: ['pairing', 'allowlist'] },
];

export const CONFIG_GROUPS: readonly FieldGroup[] = [
  {
    title: 'Model and workspace',
    fields: [
      {
        path: 'agents.defaults.model.primary',
        label: 'Model',
        kind: 'text',
        hint: 'Router-style identifier, for example openrouter/anthropic/claude-sonnet-4.5',
      },
      { path: 'agents.defaults.workspace', label: 'Workspace directory', kind: 'text' },
      { path: 'logging.level', label: 'Log level', kind: 'text', hint: 'For example debug, info, warn or error' },
    ],
  },
  {
    title: 'Heartbeat (runtime defaults)',
    fields: [
      { path: 'agents.defaults.heartbeat.every', label: 'Heartbeat interval', kind: 'duration', hint: 'A number and a unit: 30m, 1h, 2d' },
      { path: 'agents.defaults.heartbeat.lightContext', label: 'Heartbeat light context', kind: 'boolean' },
      { path: 'agents.defaults.heartbeat.isolatedSession', label: 'Heartbeat in an isolated session', kind: 'boolean' },
    ],
  },
  {
    title: 'Tools',
    fields: [
      {
        path: 'tools.profile',
        label: 'Tool profile',
        kind: 'choice',
        options: ['minimal', 'coding', 'messaging', 'full'],
        hint: 'Set at provisioning from your plan and normally kept for the life of the agent',
      },
      { path: 'tools.exec.backgroundMs', label: 'Move commands to the background after (ms)', kind: 'integer', min: 0 },
      { path: 'tools.exec.timeoutSec', label: 'Command timeout (seconds)', kind: 'integer', min: 1 },
      { path: 'tools.web.search.enabled', label: 'Web search', kind: 'boolean' },
      { path: 'tools.web.fetch.enabled', label: 'Web fetch', kind: 'boolean' },
      { path: 'tools.web.fetch.maxChars', label: 'Web fetch limit (characters)', kind: 'integer', min: 1 },
    ],
  },
  {
    title: 'Gateway',
    fields: [
      { path: 'gateway.bind', label: 'Gateway bind', kind: 'choice', options: ['lan', 'loopback', 'tailnet', 'auto', 'custom'] },
      { path: 'gateway.auth.mode', label: 'Gateway auth mode', kind: 'choice', options: ['token', 'password', 'none', 'trusted-proxy'] },
    ],
  },
  {
    title: 'Channels',
    fields: [
      ...channel('Telegram', 'telegram'),
      ...channel('Discord', 'discord'),
      ...channel('WhatsApp', 'whatsapp'),
      { path: 'channels.webchat.enabled', label: 'Web chat enabled', kind: 'boolean' },
    ],
  },
  {
    title: 'Scheduled jobs',
    fields: [
      { path: 'cron.enabled', label: 'Scheduled jobs enabled', kind: 'boolean' },
      { path: 'cron.maxConcurrentRuns', label: 'Concurrent job runs', kind: 'integer', min: 1 },
      { path: 'cron.sessionRetention', label: 'Job session retention', kind: 'duration', hint: 'For example 24h' },
    ],
  },
  {
    title: 'Sessions',
    fields: [
      { path: 'session.scope', label: 'Session scope', kind: 'text', hint: 'For example per-sender' },
      { path: 'session.reset.mode', label: 'Session reset mode', kind: 'text', hint: 'For example daily' },
      { path: 'session.reset.atHour', label: 'Session reset hour', kind: 'integer', min: 0, max: 23, hint: '0 to 23' },
      { path: 'session.maintenance.mode', label: 'Session maintenance mode', kind: 'choice', options: ['warn', 'silent'] },
      { path: 'session.maintenance.pruneAfter', label: 'Prune sessions after', kind: 'duration', hint: 'For example 30d' },
      { path: 'session.maintenance.maxEntries', label: 'Maximum sessions kept', kind: 'integer', min: 1 },
    ],
  },
  {
    title: 'Skills',
    fields: [{ path: 'skills.install.nodeManager', label: 'Skill install package manager', kind: 'text', hint: 'For example npm' }],
  },
];

export const ALL_FIELDS: readonly ConfigField[] = CONFIG_GROUPS.flatMap((g) => g.fields);

const isObject = (value: unknown): value is ConfigObject => typeof value === 'object' && value !== null && !Array.isArray(value);

export function getPath(config: unknown, path: string): unknown {
  let current: unknown = config;
  for (const key of path.split('.')) {
    if (!isObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

/**
 * A copy of `config` with `path` set to `value`; `undefined` removes the key (every key is optional to the API).
 * Missing or non-object parents on the way become objects.
 */
export function setPath(config: ConfigObject, path: string, value: unknown): ConfigObject {
  const [key, ...rest] = path.split('.') as [string, ...string[]];
  const copy: ConfigObject = { ...config };
  if (rest.length === 0) {
    if (value === undefined) delete copy[key];
    else copy[key] = value;
    return copy;
  }
  const child = isObject(config[key]) ? (config[key] as ConfigObject) : {};
  copy[key] = setPath(child, rest.join('.'), value);
  return copy;
}

const DURATION = /^\d+(ms|s|m|h|d)$/;

/** What is wrong with a field's value in the API's terms, or null. An absent value is fine: every key is optional. */
export function fieldProblem(field: ConfigField, value: unknown): string | null {
  if (value === undefined) return null;
  switch (field.kind) {
    case 'text':
      return typeof value === 'string' && value.length > 0 ? null : 'Must be a non-empty text';
    case 'duration':
      return typeof value === 'string' && DURATION.test(value) ? null : 'Use a whole number and a unit: ms, s, m, h or d (for example 30m)';
    case 'boolean':
      return typeof value === 'boolean' ? null : 'Must be true or false';
    case 'choice':
      return typeof value === 'string' && field.options?.includes(value) ? null : `Must be one of ${field.options?.join(', ')}`;
    case 'integer': {
      if (typeof value !== 'number' || !Number.isInteger(value)) return 'Must be a whole number';
      if (field.min !== undefined && value < field.min) return `Must be at least ${field.min}`;
      if (field.max !== undefined && value > field.max) return `Must be at most ${field.max}`;
      return null;
    }
  }
}

/** Every known field with a problem, by path. */
export function configProblems(config: ConfigObject): Map<string, string> {
  const problems = new Map<string, string>();
  for (const field of ALL_FIELDS) {
    const problem = fieldProblem(field, getPath(config, field.path));
    if (problem) problems.set(field.path, problem);
  }
  return problems;
}

/** The JSON text of the JSON view: a configuration object, or the reason it is not one. */
export function parseConfigText(text: string): { config: ConfigObject } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: `Not valid JSON: ${(err as Error).message}` };
  }
  if (!isObject(value)) return { error: 'The configuration must be a JSON object ({ … })' };
  return { config: value };
}
