import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyRoster } from './roster.js';
import { CHANNEL_TOKEN_ENV, LLM_API_KEY_ENV, buildOpenClawConfig, carriesWarmUp, dreamingSchedule } from './openclaw-config.js';
import { PINNED_OPENCLAW_VERSION, REPO_ROOT, openClawRuntime, runtimeProblem, validateOpenClawConfig } from './runtime.js';

/** The provisioning template of spec §2.2, as the platform stores it (tools.profile depends on the plan). */
function storedDefaults(plan: string): Record<string, unknown> {
  const channel = { enabled: false, dmPolicy: 'pairing' };
  return {
    logging: { level: 'info' },
    agents: {
      defaults: {
        workspace: '/home/node/.openclaw/workspace',
        model: { primary: 'openrouter/anthropic/claude-sonnet-4.5' },
        heartbeat: { every: '30m', lightContext: true, isolatedSession: true },
      },
    },
    tools: {
      profile: ['free', 'solo', 'starter', 'underground'].includes(plan) ? 'messaging' : 'coding',
      exec: { backgroundMs: 10_000, timeoutSec: 1_800 },
      web: { search: { enabled: true }, fetch: { enabled: true, maxChars: 50_000 } },
    },
    gateway: { bind: 'lan', auth: { mode: 'token' } },
    channels: { telegram: { ...channel }, discord: { ...channel }, whatsapp: { ...channel }, webchat: { enabled: true } },
    cron: { enabled: true, maxConcurrentRuns: 2, sessionRetention: '24h' },
    session: {
      scope: 'per-sender',
      reset: { mode: 'daily', atHour: 4 },
      maintenance: { mode: 'warn', pruneAfter: '30d', maxEntries: 500 },
    },
    skills: { install: { nodeManager: 'npm' } },
  };
}

const PLANS = ['free', 'solo', 'starter', 'pro', 'collective', 'scale', 'label', 'enterprise', 'network'];
const llm = { baseUrl: 'http://127.0.0.1:18800/v1', apiKey: 'sk-local', model: 'anthropic/claude-sonnet-4.5' };
const tokens = { telegram: '123456:telegram-secret', discord: 'discord-secret', whatsapp: 'whatsapp-secret' };
const local = { port: 18789, bind: 'loopback' as const };

const at = (value: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], value);

describe('buildOpenClawConfig', () => {
  it('sets the gateway keys OpenClaw needs, whatever the stored config says', () => {
    const stored = storedDefaults('solo');
    (stored.gateway as Record<string, unknown>).auth = { mode: 'none', token: 'leaked', password: 'pw' };
    const config = buildOpenClawConfig({ config: stored }, local);
    expect(config.gateway).toEqual({
      mode: 'local',
      port: 18789,
      bind: 'loopback',
      auth: { mode: 'token' },
      http: { endpoints: { chatCompletions: { enabled: true } } },
    });
    expect(at(buildOpenClawConfig({ config: stored }, { port: 1234, bind: 'lan' }), 'gateway.bind')).toBe('lan');
  });

  it('drops and renames retired keys, and never changes the stored object', () => {
    const stored = storedDefaults('collective');
    const before = structuredClone(stored);
    const config = buildOpenClawConfig({ config: stored }, local);
    expect(at(config, 'cron')).toEqual({ enabled: true, sessionRetention: '24h' });
    expect(at(config, 'channels.webchat')).toBeUndefined();
    expect(at(config, 'tools.exec')).toEqual({ backgroundMs: 10_000, timeoutSeconds: 1_800 });
    expect(stored).toEqual(before);
    expect(at(stored, 'cron.maxConcurrentRuns')).toBe(2);
  });

  it('keeps the plan defaults it does not translate', () => {
    const config = buildOpenClawConfig({ config: storedDefaults('solo') }, local);
    expect(at(config, 'tools.profile')).toBe('messaging');
    expect(at(buildOpenClawConfig({ config: storedDefaults('network') }, local), 'tools.profile')).toBe('coding');
    expect(at(config, 'agents.defaults.heartbeat')).toEqual({ every: '30m', lightContext: true, isolatedSession: true });
    expect(at(config, 'session.reset.atHour')).toBe(4);
    expect(at(config, 'agents.defaults.model.primary')).toBe('openrouter/anthropic/claude-sonnet-4.5');
    expect(at(config, 'agents.defaults.workspace')).toBe('/home/node/.openclaw/workspace');
  });

  it('enables a channel exactly when its token is given, and references tokens from the environment', () => {
    const off = buildOpenClawConfig({ config: storedDefaults('solo') }, local);
    for (const name of ['telegram', 'discord', 'whatsapp'])
      expect(at(off, `channels.${name}`)).toEqual({ enabled: false, dmPolicy: 'pairing' });

    const stored = storedDefaults('solo');
    (stored.channels as Record<string, Record<string, unknown>>).discord = { enabled: false, dmPolicy: 'allowlist', token: 'plain-in-db' };
    const on = buildOpenClawConfig({ config: stored, channelTokens: tokens }, local);
    expect(at(on, 'channels.telegram')).toEqual({
      enabled: true,
      dmPolicy: 'pairing',
      botToken: { source: 'env', provider: 'default', id: CHANNEL_TOKEN_ENV.telegram },
    });
    expect(at(on, 'channels.discord')).toEqual({
      enabled: true,
      dmPolicy: 'allowlist',
      token: { source: 'env', provider: 'default', id: CHANNEL_TOKEN_ENV.discord },
    });
    expect(at(on, 'channels.whatsapp')).toEqual({ enabled: true, dmPolicy: 'pairing' });
    const text = JSON.stringify(on);
    for (const secret of [...Object.values(tokens), 'plain-in-db']) expect(text).not.toContain(secret);
  });

  it('adds the platform LLM as an openai-completions provider and makes it the primary model', () => {
    const config = buildOpenClawConfig({ config: storedDefaults('pro'), llm }, local);
    expect(at(config, 'agents.defaults.model.primary')).toBe('platform/anthropic/claude-sonnet-4.5');
    expect(at(config, 'models.mode')).toBe('merge');
    const provider = at(config, 'models.providers.platform') as Record<string, unknown>;
    expect(provider).toMatchObject({ baseUrl: llm.baseUrl, api: 'openai-completions', apiKey: { source: 'env', id: LLM_API_KEY_ENV } });
    expect(JSON.stringify(config)).not.toContain('sk-local');
  });

  it('carries the warm-up provider (the gateway asking itself) only beside a named model', () => {
    const keyed = buildOpenClawConfig({ config: storedDefaults('pro'), llm }, local);
    expect(carriesWarmUp(keyed)).toBe(true);
    expect(at(keyed, 'models.providers.aop-warm-up')).toMatchObject({
      baseUrl: `http://127.0.0.1:${local.port}/v1`,
      apiKey: { source: 'env', id: 'OPENCLAW_GATEWAY_TOKEN' },
    });
    // A model named by the configuration itself (string or { primary }) is warmed too.
    expect(carriesWarmUp(buildOpenClawConfig({ config: { agents: { defaults: { model: 'openai/gpt-5' } } } }, local))).toBe(true);
    expect(carriesWarmUp(buildOpenClawConfig({ config: { agents: { defaults: { model: { primary: 'openai/gpt-5' } } } } }, local))).toBe(
      true,
    );
    // None named: OpenClaw would take the warm-up provider's model for its default, so it is not there.
    const plain = buildOpenClawConfig({ config: {} }, local);
    expect(carriesWarmUp(plain)).toBe(false);
    expect(JSON.stringify(plain)).not.toContain('aop-warm-up');
  });

  it('places the workspace and OpenClaw log in the agent directory when asked, and strips host-reaching keys', () => {
    const stored = {
      ...storedDefaults('solo'),
      $include: '/etc/passwd',
      secrets: { providers: { x: { source: 'exec', command: '/bin/sh' } } },
    };
    (stored as Record<string, unknown>).env = { vars: { A: 'b' }, shellEnv: { enabled: true } };
    const config = buildOpenClawConfig(
      { config: stored },
      { ...local, workspaceDir: '/data/a/state/workspace', logFile: '/data/a/logs/o.log' },
    );
    expect(at(config, 'agents.defaults.workspace')).toBe('/data/a/state/workspace');
    expect(at(config, 'logging')).toEqual({ level: 'info', file: '/data/a/logs/o.log' });
    expect(config.$include).toBeUndefined();
    expect(config.secrets).toBeUndefined();
    expect(config.env).toEqual({ vars: { A: 'b' } });
  });
});

// OpenClaw's nightly memory maintenance wakes a sleeping agent; at its default 03:00 every agent would wake at once.
describe('nightly memory maintenance, spread', () => {
  const dreaming = (config: Record<string, unknown>) => at(config, 'plugins.entries.memory-core.config.dreaming');

  it('gives each agent a minute of its own between 01:00 and 04:59, the same at every write', () => {
    const times = Array.from({ length: 400 }, (_, i) => dreamingSchedule(`agt_${i.toString(36)}x`));
    const minutes = times.map((cron) => {
      const match = /^(\d+) (\d+) \* \* \*$/.exec(cron);
      expect(match, cron).not.toBeNull();
      const [minute, hour] = [Number(match?.[1]), Number(match?.[2])];
      expect(minute).toBeLessThan(60);
      expect(hour).toBeGreaterThanOrEqual(1);
      expect(hour).toBeLessThanOrEqual(4);
      return (hour - 1) * 60 + minute;
    });
    // Spread over the window, not bunched: 400 agents use most of its 240 minutes, and every hour of it.
    expect(new Set(minutes).size).toBeGreaterThan(150);
    expect(new Set(minutes.map((m) => Math.floor(m / 60)))).toEqual(new Set([0, 1, 2, 3]));
    expect(dreamingSchedule('agt_a')).toBe(dreamingSchedule('agt_a'));
    const config = buildOpenClawConfig({ agentId: 'agt_a', config: storedDefaults('pro') }, local);
    expect(dreaming(config)).toEqual({ frequency: dreamingSchedule('agt_a') });
    expect(buildOpenClawConfig({ agentId: 'agt_a', config: storedDefaults('pro') }, local)).toEqual(config);
  });

  it("keeps the agent's own time, dreaming turned off, another memory plugin, and a config built for no agent", () => {
    const own = {
      ...storedDefaults('pro'),
      plugins: { entries: { 'memory-core': { config: { dreaming: { frequency: '30 23 * * *' } } } } },
    };
    expect(dreaming(buildOpenClawConfig({ agentId: 'agt_a', config: own }, local))).toEqual({ frequency: '30 23 * * *' });
    const off = { ...storedDefaults('pro'), plugins: { entries: { 'memory-core': { config: { dreaming: { enabled: false } } } } } };
    expect(dreaming(buildOpenClawConfig({ agentId: 'agt_a', config: off }, local))).toEqual({ enabled: false });
    const other = { ...storedDefaults('pro'), plugins: { slots: { memory: 'memory-lancedb' } } };
    expect(buildOpenClawConfig({ agentId: 'agt_a', config: other }, local).plugins).toEqual({ slots: { memory: 'memory-lancedb' } });
    expect(buildOpenClawConfig({ config: storedDefaults('pro') }, local).plugins).toBeUndefined();
  });
});

describe('the pinned OpenClaw', () => {
  const runtime = openClawRuntime(PINNED_OPENCLAW_VERSION);

  it('runtime/package.json pins the version the provisioner expects', () => {
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'runtime', 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(manifest.dependencies.openclaw).toBe(PINNED_OPENCLAW_VERSION);
  });

  it('accepts the generated config of every plan, with and without channels and LLM (openclaw config validate)', async () => {
    const problem = runtimeProblem(runtime);
    if (problem) throw new Error(`The OpenClaw runtime is required for this test: ${problem}`);
    const cases = new Map<string, Record<string, unknown>>();
    for (const plan of PLANS) {
      for (const variant of [{}, { channelTokens: tokens, llm }]) {
        const config = buildOpenClawConfig({ config: storedDefaults(plan), ...variant }, { ...local, workspaceDir: '/tmp/ws' });
        cases.set(JSON.stringify(config), config); // plans differ only in tools.profile: validate each distinct config once
      }
    }
    // The local host's form: every secret a SecretRef into the gateway's secret file, the warm pool's with the warm-up.
    const secretFile = '/dev/shm/aop-config-test/secrets.json';
    const fileMode = buildOpenClawConfig(
      { agentId: 'agt_Night0wl', config: storedDefaults('pro'), channelTokens: tokens, llm },
      { ...local, workspaceDir: '/tmp/ws', secretFile },
    );
    expect(at(fileMode, 'plugins.entries.memory-core.config.dreaming.frequency')).toBe(dreamingSchedule('agt_Night0wl'));
    cases.set('file', fileMode);
    cases.set('warm', buildOpenClawConfig({ config: {} }, { ...local, workspaceDir: '/tmp/ws', secretFile, alwaysWarmUp: true }));
    // A customer-scoped gateway: the first agent's config with two more agents, one of them stopped (shared/roster.ts).
    const member = (id: string, stopped: boolean) => ({ id, workspace: `/tmp/ws-${id}`, llm, config: storedDefaults('pro'), stopped });
    cases.set('roster', applyRoster(structuredClone(fileMode), [member('agt_2', false), member('agt_3', true)], { mainStopped: false }));
    expect(cases.size).toBe(7);
    const env = { TELEGRAM_BOT_TOKEN: 't', DISCORD_BOT_TOKEN: 'd', AOP_LLM_API_KEY: 'k' };
    const configs = [...cases.values()];
    for (let i = 0; i < configs.length; i += 2) {
      // Two at a time: each run is about 2 s of CPU.
      const results = await Promise.all(configs.slice(i, i + 2).map((config) => validateOpenClawConfig(runtime, config, env)));
      for (const result of results) {
        expect(result.issues).toEqual([]);
        expect(result.valid).toBe(true);
      }
    }
    // The validator is a real check: the stored (untranslated) config fails it.
    const raw = await validateOpenClawConfig(runtime, { ...storedDefaults('solo'), gateway: { mode: 'local', auth: { mode: 'token' } } });
    expect(raw.valid).toBe(false);
    expect(raw.issues.map((i) => i.path)).toEqual(expect.arrayContaining([expect.stringMatching(/^(tools\.exec|channels\.webchat|cron)/)]));
  }, 180_000);
});
