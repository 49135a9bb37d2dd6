import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PINNED_OPENCLAW_VERSION } from '@aop/provisioner';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalAgents, startLocalAgents, userHeaders } from '../../services/agent-access.test-support.js';
import { type ToolCatalog, enabledTools, frontMatter, githubRepository, toolPolicy } from './catalog.js';

/** The provisioning template of spec §2.2 (as the web service stores it for a collective plan). */
function storedDefaults(): Record<string, unknown> {
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
      profile: 'coding',
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

// Spec §4.18 "Tool host (backend)"; shapes are ours (docs/decisions.md). Catalog, skills, docs and repository data
// come from the pinned OpenClaw package installed in runtime/; validation runs its own `config validate`.
describe('tool host', () => {
  let env: LocalAgents;
  const get = (userId: string, path: string) => env.call(userId, 'GET', `/tool-host${path}`);

  beforeAll(async () => {
    env = await startLocalAgents('aop-tool-host-');
    const res = await env.call('usr_tools', 'POST', '/deployments', {
      agentId: 'agt_tools',
      config: {
        telegramToken: 'tg-secret-token',
        plan: 'solo',
        agentConfig: {
          tools: { profile: 'messaging', alsoAllow: ['web_fetch'], deny: ['sessions_send', 'group:ui'] },
          channels: { telegram: { dmPolicy: 'allowlist' } },
          skills: { allowBundled: ['weather'], entries: { summarize: { enabled: false } } },
        },
      },
    });
    expect(res.status).toBe(201);
    await env.host.waitUntilReady('agt_tools', { timeoutMs: 10_000 });
    const skill = join(env.host.paths('agt_tools').workspace, 'skills', 'team', 'standup');
    await mkdir(skill, { recursive: true });
    await writeFile(join(skill, 'SKILL.md'), '---\nname: standup\ndescription: "Write the daily stand-up."\n---\n\n# Stand-up\n');
  });
  afterAll(() => env.close());

  it('needs the internal key and a signed user context', async () => {
    const noKey = await request(`${env.backend.url}/api/tool-host/health`, { headers: { ...userHeaders('usr_tools'), authorization: '' } });
    expect(noKey.status).toBe(401);
    const forged = await request(`${env.backend.url}/api/tool-host/tools`, {
      headers: { ...userHeaders('usr_tools'), 'x-user-id': 'usr_x' },
    });
    expect(forged.body).toEqual({ error: 'INVALID_SIGNATURE' });
  });

  it('health and info describe the pinned runtime', async () => {
    const health = await get('usr_tools', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({
      status: 'ok',
      timestamp: expect.any(String),
      backend: { status: 'ok', node: process.version, uptimeSeconds: expect.any(Number) },
      runtime: { available: true, version: PINNED_OPENCLAW_VERSION, problem: null },
      toolCatalog: { available: true, tools: expect.any(Number), problem: null },
      provisioning: 'enabled',
      provider: 'local',
    });
    expect(health.body.toolCatalog.tools).toBeGreaterThan(40);

    const info = await get('usr_tools', '/info');
    expect(info.body).toEqual({
      runtime: {
        name: 'openclaw',
        version: PINNED_OPENCLAW_VERSION,
        installed: true,
        description: expect.any(String),
        license: 'MIT',
        homepage: 'https://github.com/openclaw/openclaw#readme',
        nodeRange: expect.stringContaining('24.16'),
        node: expect.stringMatching(/^v24\./),
      },
      provider: 'local',
      provisioning: 'enabled',
      profiles: expect.arrayContaining([
        { id: 'coding', label: 'Coding' },
        { id: 'messaging', label: 'Messaging' },
      ]),
      capabilities: {
        toolCatalog: true,
        configValidation: true,
        workspaceBrowse: true,
        workspaceSkills: true,
        logHistory: true,
        logStream: true,
      },
    });
  });

  it('tools lists the runtime catalog and bundled skills', async () => {
    const res = await get('usr_tools', '/tools');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ agentId: null, runtimeVersion: PINNED_OPENCLAW_VERSION, catalogVersion: PINNED_OPENCLAW_VERSION });
    expect(res.body.policy).toBeUndefined();
    const exec = res.body.tools.find((t: { id: string }) => t.id === 'exec');
    expect(exec).toEqual({ id: 'exec', section: 'runtime', description: 'Run shell now.', profiles: ['coding'] });
    expect(res.body.sections).toEqual(expect.arrayContaining([{ id: 'fs', label: 'Files' }]));
    expect(res.body.groups['group:runtime']).toEqual(expect.arrayContaining(['exec', 'process']));
    const weather = res.body.skills.find((s: { name: string }) => s.name === 'weather');
    expect(weather).toEqual({ name: 'weather', description: expect.any(String), source: 'bundled' });
    expect(res.body.counts).toEqual({ tools: res.body.tools.length, skills: res.body.skills.length });
    expect(res.body.skills.length).toBeGreaterThan(20);
  });

  it("tools for an agent apply its tool policy and add its workspace skills; others' agents are 404", async () => {
    const res = await get('usr_tools', '/tools?agentId=agt_tools');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      agentId: 'agt_tools',
      runtimeVersion: '1.0.0',
      // The stand-in runtime ships no catalog: the pinned one's is used.
      catalogVersion: PINNED_OPENCLAW_VERSION,
      policy: {
        profile: 'messaging',
        allow: [],
        alsoAllow: ['web_fetch'],
        deny: ['sessions_send', 'group:ui'],
        webSearchEnabled: true,
        webFetchEnabled: true,
      },
      workspaceSkillsListed: true,
    });
    const enabled = Object.fromEntries(res.body.tools.map((t: { id: string; enabled: boolean }) => [t.id, t.enabled]));
    expect(enabled).toMatchObject({
      message: true,
      sessions_list: true,
      web_fetch: true, // alsoAllow
      sessions_send: false, // deny
      theme: false, // messaging profile, but group:ui is denied
      exec: false, // not in the messaging profile
      web_search: false,
    });
    const skills = Object.fromEntries(res.body.skills.map((s: { name: string }) => [s.name, s]));
    expect(skills.standup).toEqual({
      name: 'standup',
      description: 'Write the daily stand-up.',
      source: 'workspace',
      path: 'skills/team/standup',
      enabled: true,
    });
    expect(skills.weather).toMatchObject({ source: 'bundled', enabled: true });
    expect(skills.summarize).toMatchObject({ source: 'bundled', enabled: false });
    expect(skills.github).toMatchObject({ source: 'bundled', enabled: false }); // not in allowBundled
    // Every agent's workspace also holds the platform's own skill (OpenClaw's `.agents/skills` folder).
    expect(skills['underground-bus']).toMatchObject({ source: 'workspace', path: '.agents/skills/underground-bus', enabled: true });
    expect(res.body.counts).toMatchObject({ enabledTools: Object.values(enabled).filter(Boolean).length, enabledSkills: 3 });

    for (const path of ['/tools?agentId=agt_tools', '/setup?agentId=agt_tools']) {
      const other = await get('usr_other', path);
      expect([path, other.status, other.body]).toEqual([path, 404, { error: 'Agent not found' }]);
    }
    expect((await get('usr_tools', '/tools?agentId=bad%20id')).body).toEqual({ error: 'Invalid agentId' });
  });

  it('setup lists the steps, and for an agent which are done (never the secrets)', async () => {
    const generic = await get('usr_tools', '/setup');
    expect(generic.body.agentId).toBeNull();
    expect(generic.body.steps.map((s: { id: string }) => s.id)).toEqual(['channel', 'llm', 'dm-policy', 'tools', 'skills']);
    expect(generic.body.steps[0]).toMatchObject({ required: true, title: 'Connect a messaging channel', settings: expect.any(Array) });

    const res = await get('usr_tools', '/setup?agentId=agt_tools');
    const steps = Object.fromEntries(res.body.steps.map((s: { id: string }) => [s.id, s]));
    expect(steps.channel).toMatchObject({ configured: true, current: { deployed: true, telegram: true, discord: false, whatsapp: false } });
    expect(steps.llm).toMatchObject({ configured: false, current: { aiProvider: 'openrouter', ownKey: false } });
    expect(steps['dm-policy']).toMatchObject({ current: { telegram: 'allowlist', discord: 'pairing', whatsapp: 'pairing' } });
    expect(steps.tools).toMatchObject({ configured: true, current: { profile: 'messaging' } });
    expect(res.text).not.toContain('tg-secret-token');
  });

  it('examples, docs and github are accurate reference data', async () => {
    const examples = await get('usr_tools', '/examples');
    expect(examples.body.examples.length).toBeGreaterThan(3);
    for (const example of examples.body.examples) {
      expect(example).toMatchObject({
        id: expect.any(String),
        title: expect.any(String),
        request: { method: expect.any(String), path: expect.stringMatching(/^\/api\//) },
      });
    }
    const docs = await get('usr_tools', '/docs');
    expect(docs.body.runtimeVersion).toBe(PINNED_OPENCLAW_VERSION);
    expect(docs.body.endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`)).toEqual([
      'GET /api/tool-host/health',
      'GET /api/tool-host/info',
      'GET /api/tool-host/setup',
      'GET /api/tool-host/tools',
      'GET /api/tool-host/examples',
      'GET /api/tool-host/docs',
      'GET /api/tool-host/github',
      'POST /api/tool-host/validate-config',
    ]);
    expect(docs.body.runtimeTopics).toEqual(
      expect.arrayContaining([
        {
          id: 'tools/skills',
          title: 'Skills',
          summary: expect.stringContaining('Skills teach'),
          url: 'https://docs.openclaw.ai/tools/skills',
        },
      ]),
    );
    const github = await get('usr_tools', '/github');
    expect(github.body).toEqual({
      package: 'openclaw',
      version: PINNED_OPENCLAW_VERSION,
      license: 'MIT',
      repository: { type: 'git', url: 'git+https://github.com/openclaw/openclaw.git' },
      owner: 'openclaw',
      name: 'openclaw',
      htmlUrl: 'https://github.com/openclaw/openclaw',
      issuesUrl: 'https://github.com/openclaw/openclaw/issues',
      homepage: 'https://github.com/openclaw/openclaw#readme',
    });
  });

  it('validate-config checks a config with the pinned OpenClaw', async () => {
    const invalid = storedDefaults();
    (invalid.channels as Record<string, Record<string, unknown>>).discord = { enabled: false, dmPolicy: 'open' };
    (invalid.tools as Record<string, unknown>).profile = 'superuser';
    const [good, bad] = await Promise.all([
      env.call('usr_tools', 'POST', '/tool-host/validate-config', { config: storedDefaults() }),
      env.call('usr_tools', 'POST', '/tool-host/validate-config', { config: invalid }),
    ]);
    expect(good.status).toBe(200);
    expect(good.body).toEqual({
      valid: true,
      errors: [],
      warnings: expect.any(Array),
      translated: expect.arrayContaining([
        { path: 'cron.maxConcurrentRuns', action: expect.stringContaining('dropped') },
        { path: 'channels.webchat', action: expect.stringContaining('dropped') },
        { path: 'tools.exec.timeoutSec', action: 'renamed to tools.exec.timeoutSeconds' },
      ]),
    });
    expect(bad.status).toBe(200);
    expect(bad.body.valid).toBe(false);
    expect(bad.body.errors).toEqual(
      expect.arrayContaining([
        { path: 'channels.discord.dmPolicy', message: 'must be pairing or allowlist', source: 'platform' },
        expect.objectContaining({ path: expect.stringMatching(/^tools/), source: 'openclaw' }),
      ]),
    );

    for (const [json, error] of [
      [{}, 'config is required'],
      [{ config: [] }, 'Invalid config object'],
      [{ config: 'x' }, 'Invalid config object'],
    ] as const) {
      const res = await env.call('usr_tools', 'POST', '/tool-host/validate-config', json);
      expect([res.status, res.body]).toEqual([400, { error }]);
    }
  }, 120_000);
});

describe('tool policy and package metadata', () => {
  const catalog: ToolCatalog = {
    sections: [],
    tools: [
      { id: 'exec', section: 'runtime', description: '', profiles: ['coding'] },
      { id: 'read', section: 'fs', description: '', profiles: ['coding'] },
      { id: 'message', section: 'messaging', description: '', profiles: ['messaging'] },
      { id: 'session_status', section: 'sessions', description: '', profiles: ['minimal', 'coding', 'messaging'] },
      { id: 'automations', section: 'automation', description: '', profiles: ['coding'] },
      { id: 'web_search', section: 'web', description: '', profiles: ['coding'] },
    ],
    groups: { 'group:fs': ['read'], 'group:runtime': ['exec'] },
    profiles: [],
  };
  const on = (config: unknown) => [...enabledTools(catalog, toolPolicy(config))].sort();

  it('follows profile, allow, alsoAllow, deny (with groups, globs and aliases) and the web switches', () => {
    expect(on({})).toEqual(['automations', 'exec', 'message', 'read', 'session_status', 'web_search']);
    expect(on({ tools: { profile: 'full' } })).toHaveLength(6);
    expect(on({ tools: { profile: 'minimal' } })).toEqual(['session_status']);
    expect(on({ tools: { profile: 'messaging', alsoAllow: ['group:fs'] } })).toEqual(['message', 'read', 'session_status']);
    expect(on({ tools: { profile: 'coding', deny: ['BASH', 'cron'] } })).toEqual(['read', 'session_status', 'web_search']);
    expect(on({ tools: { allow: ['se*', 'read'] } })).toEqual(['read', 'session_status']);
    expect(on({ tools: { profile: 'coding', web: { search: { enabled: false } } } })).toEqual([
      'automations',
      'exec',
      'read',
      'session_status',
    ]);
  });

  it('reads front matter and GitHub repository URLs', () => {
    expect(
      frontMatter('---\nname: x\ndescription: "A \\"quoted\\" one"\nsummary: >\n  folded\n  text\ntitle: \'It\'\'s\'\n---\nbody'),
    ).toEqual({
      name: 'x',
      description: 'A "quoted" one',
      summary: 'folded text',
      title: "It's",
    });
    expect(frontMatter('no front matter')).toEqual({});
    for (const url of [
      'git+https://github.com/openclaw/openclaw.git',
      'git@github.com:openclaw/openclaw.git',
      'github:openclaw/openclaw',
      'openclaw/openclaw',
    ]) {
      expect(githubRepository(url)).toEqual({ owner: 'openclaw', name: 'openclaw' });
    }
    expect(githubRepository('https://gitlab.com/a/b.git')).toBeNull();
  });
});
