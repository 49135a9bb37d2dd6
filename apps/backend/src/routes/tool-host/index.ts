import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { type App, DomainError } from '@aop/core';
import {
  type AgentHost,
  LocalAgentHost,
  type OpenClawRuntime,
  PINNED_OPENCLAW_VERSION,
  openClawRuntime,
  runtimeProblem,
} from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey, verifyUserContext } from '../../plugins/auth.js';
import { type OwnedAgent, checkedAgentId, ownedAgent, requireCaller } from '../../services/agent-access.js';
import { onHost } from '../../services/agents.js';
import {
  CatalogUnavailableError,
  type Skill,
  type ToolCatalog,
  bundledSkills,
  enabledTools,
  githubRepository,
  listSkills,
  runtimePackage,
  skillEnabled,
  toolCatalog,
  toolPolicy,
} from './catalog.js';
import { EXAMPLES, SETUP_STEPS, TOOL_HOST_ENDPOINTS, runtimeTopics } from './docs.js';
import { ValidateConfigBody } from './schemas.js';
import { validateStoredConfig } from './validate.js';

export interface ToolHostRoutesOptions {
  config: BackendConfig;
  /** Absent when provisioning is not configured: the runtime endpoints still answer, agent-specific ones 500. */
  host?: AgentHost;
}

const MINUTE = 60_000;
/** Validation starts a Node process: 10 per minute per client, on top of the general limit. */
const VALIDATE_LIMIT = { name: 'backend-validate-config', max: 10, windowMs: MINUTE, message: 'Config validation rate limit exceeded.' };

const AgentQuery = Type.Object({ agentId: Type.Optional(Type.String({ maxLength: 200 })) });

/** The runtime's Node version (`node --version` of the Node 24 binary), read once. */
let runtimeNode: Promise<string | null> | undefined;
function runtimeNodeVersion(runtime: OpenClawRuntime): Promise<string | null> {
  runtimeNode ??= new Promise((resolve) => {
    execFile(runtime.nodeBin, ['--version'], { timeout: 5_000 }, (err, stdout) => resolve(err ? null : stdout.trim()));
  });
  return runtimeNode;
}

/**
 * The tool host (spec §4.18, shapes ours): what tools and skills the pinned OpenClaw gives agents, read from the
 * installed package (see `catalog.ts`), how a user sets an agent up, and validation of agent configs with the
 * runtime's own validator. Agent-specific answers (`?agentId=`) are limited to the caller's agents.
 */
export async function toolHostRoutes(app: App, { config, host }: ToolHostRoutesOptions): Promise<void> {
  app.addHook('onRequest', requireInternalKey(config.internalApiKey));
  app.addHook('onRequest', verifyUserContext(config.userContextSecret));

  const pinned = openClawRuntime(PINNED_OPENCLAW_VERSION);

  /** The catalog of the agent's OpenClaw version when it is installed here and ships one, else the pinned one's. */
  async function catalogFor(version: string | null): Promise<{ runtime: OpenClawRuntime; catalog: ToolCatalog }> {
    if (version && version !== PINNED_OPENCLAW_VERSION) {
      const runtime = host instanceof LocalAgentHost ? host.runtimeFor(version) : openClawRuntime(version);
      if (runtimeProblem(runtime) === null) {
        const catalog = await toolCatalog(runtime).catch((err) => {
          if (err instanceof CatalogUnavailableError) return null;
          throw err;
        });
        if (catalog) return { runtime, catalog };
      }
    }
    const problem = runtimeProblem(pinned);
    if (problem) throw new DomainError('OPENCLAW_RUNTIME_NOT_AVAILABLE', { problem });
    try {
      return { runtime: pinned, catalog: await toolCatalog(pinned) };
    } catch (err) {
      if (err instanceof CatalogUnavailableError) throw new DomainError('TOOL_CATALOG_NOT_AVAILABLE', { detail: err.message });
      throw err;
    }
  }

  async function agentFor(request: FastifyRequest, raw: string | undefined): Promise<OwnedAgent | null> {
    if (raw === undefined || raw === '') return null;
    const agentId = checkedAgentId(raw);
    if (!host) throw new DomainError('PROVISIONER_NOT_CONFIGURED', { provisioner: config.provisioner });
    return ownedAgent(app.db, host, requireCaller(request.userContext?.userId), agentId);
  }

  app.get('/tool-host/health', { schema: { tags: ['tool-host'] } }, async () => {
    const problem = runtimeProblem(pinned);
    let toolCatalogStatus: { available: boolean; tools: number; problem: string | null } = {
      available: false,
      tools: 0,
      problem: problem ? 'the runtime is not installed' : null,
    };
    if (!problem) {
      toolCatalogStatus = await toolCatalog(pinned).then(
        (catalog) => ({ available: true, tools: catalog.tools.length, problem: null }),
        (err: Error) => ({ available: false, tools: 0, problem: err.message }),
      );
    }
    return {
      status: problem === null && toolCatalogStatus.available ? 'ok' : 'degraded',
      timestamp: new Date().toISOString(),
      backend: { status: 'ok', node: process.version, uptimeSeconds: Math.floor(process.uptime()) },
      runtime: { available: problem === null, version: PINNED_OPENCLAW_VERSION, problem },
      toolCatalog: toolCatalogStatus,
      provisioning: host ? 'enabled' : 'disabled',
      provider: host?.provider ?? config.provisioner,
    };
  });

  app.get('/tool-host/info', { schema: { tags: ['tool-host'] } }, async () => {
    const pkg = runtimePackage(pinned);
    const installed = runtimeProblem(pinned) === null;
    const catalog = installed ? await toolCatalog(pinned).catch(() => null) : null;
    const local = host instanceof LocalAgentHost;
    return {
      runtime: {
        name: pkg?.name || 'openclaw',
        version: PINNED_OPENCLAW_VERSION,
        installed,
        description: pkg?.description ?? null,
        license: pkg?.license ?? null,
        homepage: pkg?.homepage ?? null,
        nodeRange: pkg?.node ?? null,
        node: installed ? await runtimeNodeVersion(pinned) : null,
      },
      provider: host?.provider ?? config.provisioner,
      provisioning: host ? 'enabled' : 'disabled',
      profiles: catalog?.profiles ?? [],
      capabilities: {
        toolCatalog: catalog !== null,
        configValidation: installed,
        workspaceBrowse: local,
        workspaceSkills: local,
        logHistory: host !== undefined,
        logStream: local,
      },
    };
  });

  app.get('/tool-host/setup', { schema: { tags: ['tool-host'], querystring: AgentQuery } }, async (request) => {
    const agent = await agentFor(request, request.query.agentId);
    if (!agent) return { agentId: null, steps: SETUP_STEPS };
    const stored = agent.row.config;
    // Only whether secrets are set is reported, never their values.
    const spec = agent.state && host ? await onHost(() => host.spec(agent.row.id)) : null;
    const channels = (stored as { channels?: Record<string, { dmPolicy?: unknown }> }).channels ?? {};
    const policy = toolPolicy(stored);
    const current: Record<string, Record<string, unknown>> = {
      channel: {
        deployed: agent.state !== null,
        telegram: Boolean(spec?.channelTokens?.telegram),
        discord: Boolean(spec?.channelTokens?.discord),
        whatsapp: Boolean(spec?.channelTokens?.whatsapp),
      },
      llm: { aiProvider: agent.row.ai_provider, ownKey: Boolean(spec?.llm) },
      'dm-policy': Object.fromEntries(
        ['telegram', 'discord', 'whatsapp'].map((name) => {
          const value = channels[name]?.dmPolicy;
          return [name, value === 'allowlist' ? 'allowlist' : 'pairing'];
        }),
      ),
      tools: { profile: policy.profile, deny: policy.deny, alsoAllow: policy.alsoAllow, allow: policy.allow },
      skills: { allowBundled: (stored as { skills?: { allowBundled?: unknown } }).skills?.allowBundled ?? null },
    };
    const configured: Record<string, boolean> = {
      channel: Boolean(spec?.channelTokens?.telegram || spec?.channelTokens?.discord || spec?.channelTokens?.whatsapp),
      llm: Boolean(spec?.llm),
      'dm-policy': true,
      tools: policy.profile !== null,
      skills: true,
    };
    return {
      agentId: agent.row.id,
      steps: SETUP_STEPS.map((step) => ({ ...step, configured: configured[step.id] ?? false, current: current[step.id] ?? {} })),
    };
  });

  app.get('/tool-host/tools', { schema: { tags: ['tool-host'], querystring: AgentQuery } }, async (request) => {
    const agent = await agentFor(request, request.query.agentId);
    const version = agent ? (agent.state?.version ?? agent.row.version ?? null) : null;
    const { runtime, catalog } = await catalogFor(version);
    const stored = agent?.row.config;
    const enabled = agent ? enabledTools(catalog, toolPolicy(stored)) : null;
    const tools = catalog.tools.map((tool) => ({ ...tool, ...(enabled ? { enabled: enabled.has(tool.id) } : {}) }));

    // Skills in OpenClaw's precedence: the workspace's own, then `.agents/skills`, then bundled ones not shadowed.
    let workspaceSkills: Skill[] = [];
    const workspaceListed = Boolean(agent?.state && host instanceof LocalAgentHost);
    if (agent?.state && host instanceof LocalAgentHost) {
      const workspace = host.paths(agent.row.id).workspace;
      workspaceSkills = [
        ...(await listSkills(join(workspace, 'skills'), 'workspace', workspace)),
        ...(await listSkills(join(workspace, '.agents', 'skills'), 'workspace', workspace)),
      ];
    }
    const seen = new Set<string>();
    const skills = [...workspaceSkills, ...(await bundledSkills(runtime))]
      .filter((skill) => !seen.has(skill.name) && Boolean(seen.add(skill.name)))
      .map((skill) => ({ ...skill, ...(agent ? { enabled: skillEnabled(skill, stored) } : {}) }));

    return {
      agentId: agent?.row.id ?? null,
      runtimeVersion: version ?? PINNED_OPENCLAW_VERSION,
      catalogVersion: runtime.version,
      ...(agent ? { policy: toolPolicy(stored) } : {}),
      profiles: catalog.profiles,
      sections: catalog.sections,
      groups: catalog.groups,
      tools,
      skills,
      workspaceSkillsListed: workspaceListed,
      counts: {
        tools: tools.length,
        ...(enabled ? { enabledTools: enabled.size } : {}),
        skills: skills.length,
        ...(agent ? { enabledSkills: skills.filter((s) => 'enabled' in s && s.enabled).length } : {}),
      },
    };
  });

  app.get('/tool-host/examples', { schema: { tags: ['tool-host'] } }, async () => ({ examples: EXAMPLES }));

  app.get('/tool-host/docs', { schema: { tags: ['tool-host'] } }, async () => ({
    runtimeVersion: PINNED_OPENCLAW_VERSION,
    endpoints: TOOL_HOST_ENDPOINTS,
    runtimeTopics: await runtimeTopics(pinned),
  }));

  app.get('/tool-host/github', { schema: { tags: ['tool-host'] } }, async () => {
    const pkg = runtimePackage(pinned);
    if (!pkg) throw new DomainError('OPENCLAW_RUNTIME_NOT_INSTALLED');
    if (!pkg.repository) throw new DomainError('RUNTIME_PACKAGE_NAMES_NO_REPOSITORY');
    const repo = githubRepository(pkg.repository.url);
    const htmlUrl = repo ? `https://github.com/${repo.owner}/${repo.name}` : null;
    return {
      package: pkg.name,
      version: pkg.version,
      license: pkg.license || null,
      repository: pkg.repository,
      owner: repo?.owner ?? null,
      name: repo?.name ?? null,
      htmlUrl,
      issuesUrl: pkg.bugs ?? (htmlUrl ? `${htmlUrl}/issues` : null),
      homepage: pkg.homepage,
    };
  });

  await app.register(async (limited: App) => {
    limited.addHook('onRequest', limited.rateLimit(VALIDATE_LIMIT));
    limited.post('/tool-host/validate-config', { schema: { tags: ['tool-host'], body: ValidateConfigBody } }, async (request) => {
      const value = request.body.config;
      if (value === undefined || value === null) throw new DomainError('FIELD_REQUIRED', { field: 'config' });
      return validateStoredConfig(pinned, value);
    });
  });
}
