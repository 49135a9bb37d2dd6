import { toolsProfileFor } from '@aop/core';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

export const DEFAULT_MODEL = 'openrouter/anthropic/claude-sonnet-4.5';
export const DEFAULT_WORKSPACE = '/home/node/.openclaw/workspace';

/** The provisioning template (spec §2.2): what a user with no saved configuration receives. */
export function defaultAgentConfig(plan: string): Record<string, unknown> {
  const channel = { enabled: false, dmPolicy: 'pairing' };
  return {
    logging: { level: 'info' },
    agents: {
      defaults: {
        workspace: DEFAULT_WORKSPACE,
        model: { primary: DEFAULT_MODEL },
        heartbeat: { every: '30m', lightContext: true, isolatedSession: true },
      },
    },
    tools: {
      profile: toolsProfileFor(plan),
      exec: { backgroundMs: 10_000, timeoutSec: 1_800 },
      web: { search: { enabled: true }, fetch: { enabled: true, maxChars: 50_000 } },
    },
    gateway: { bind: 'lan', auth: { mode: 'token' } },
    channels: {
      telegram: { ...channel },
      discord: { ...channel },
      whatsapp: { ...channel },
      webchat: { enabled: true },
    },
    cron: { enabled: true, maxConcurrentRuns: 2, sessionRetention: '24h' },
    session: {
      scope: 'per-sender',
      reset: { mode: 'daily', atHour: 4 },
      maintenance: { mode: 'warn', pruneAfter: '30d', maxEntries: 500 },
    },
    skills: { install: { nodeManager: 'npm' } },
  };
}

// Every object is open: unknown keys are kept, only the known ones are typed.
const Open = <T extends Record<string, TSchema>>(props: T) => Type.Partial(Type.Object(props, { additionalProperties: true }));
const Duration = Type.String({ pattern: '^\\d+(ms|s|m|h|d)$' });
const DmPolicy = Type.Union([Type.Literal('pairing'), Type.Literal('allowlist')]);
const Channel = Open({ enabled: Type.Boolean(), dmPolicy: DmPolicy });

/** The known keys of §2.2 and their types. */
export const AgentConfigSchema = Open({
  logging: Open({ level: Type.String({ minLength: 1 }) }),
  agents: Open({
    defaults: Open({
      workspace: Type.String({ minLength: 1 }),
      model: Open({ primary: Type.String({ minLength: 1 }) }),
      heartbeat: Open({ every: Duration, lightContext: Type.Boolean(), isolatedSession: Type.Boolean() }),
    }),
  }),
  tools: Open({
    profile: Type.Union([Type.Literal('minimal'), Type.Literal('coding'), Type.Literal('messaging'), Type.Literal('full')]),
    exec: Open({ backgroundMs: Type.Integer({ minimum: 0 }), timeoutSec: Type.Integer({ minimum: 1 }) }),
    web: Open({
      search: Open({ enabled: Type.Boolean() }),
      fetch: Open({ enabled: Type.Boolean(), maxChars: Type.Integer({ minimum: 1 }) }),
    }),
  }),
  gateway: Open({
    bind: Type.Union([
      Type.Literal('lan'),
      Type.Literal('loopback'),
      Type.Literal('tailnet'),
      Type.Literal('auto'),
      Type.Literal('custom'),
    ]),
    auth: Open({
      mode: Type.Union([Type.Literal('token'), Type.Literal('password'), Type.Literal('none'), Type.Literal('trusted-proxy')]),
    }),
  }),
  channels: Open({ telegram: Channel, discord: Channel, whatsapp: Channel, webchat: Open({ enabled: Type.Boolean() }) }),
  cron: Open({ enabled: Type.Boolean(), maxConcurrentRuns: Type.Integer({ minimum: 1 }), sessionRetention: Duration }),
  session: Open({
    scope: Type.String({ minLength: 1 }),
    reset: Open({ mode: Type.String({ minLength: 1 }), atHour: Type.Integer({ minimum: 0, maximum: 23 }) }),
    maintenance: Open({
      mode: Type.Union([Type.Literal('warn'), Type.Literal('silent')]),
      pruneAfter: Duration,
      maxEntries: Type.Integer({ minimum: 1 }),
    }),
  }),
  skills: Open({ install: Open({ nodeManager: Type.String({ minLength: 1 }) }) }),
});
export type AgentConfig = Static<typeof AgentConfigSchema>;

/** The first problem with a config's known keys as `path: reason`, or null when it is valid. */
export function configProblem(config: Record<string, unknown>): string | null {
  const first = Value.Errors(AgentConfigSchema, config).First();
  if (!first) return null;
  const path = first.path.replace(/^\//, '').replaceAll('/', '.') || '(root)';
  return `${path}: ${first.message}`;
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
