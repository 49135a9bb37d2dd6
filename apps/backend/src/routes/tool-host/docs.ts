import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { OpenClawRuntime } from '@aop/provisioner';
import { frontMatter } from './catalog.js';

/**
 * The tool host's documentation: what its endpoints take and answer, worked examples, and the runtime's own
 * documentation pages on tools and skills (titles and summaries read from the pinned package's `docs/`). This is
 * reference text, not data: keep it in step with the routes in `index.ts`.
 */

/** Where OpenClaw publishes the pages of its `docs/` directory (the package README links there). */
export const RUNTIME_DOCS_BASE = 'https://docs.openclaw.ai';

/** Runtime pages on what agents can do, by path inside the package's `docs/` (without `.md`). */
const RUNTIME_TOPICS = [
  'tools/index',
  'gateway/config-tools/tool-policy',
  'tools/skills',
  'tools/skills-config',
  'tools/creating-skills',
  'tools/exec',
  'tools/web',
  'tools/web-fetch',
  'concepts/agent-workspace',
  'concepts/memory',
  'automation/cron-jobs',
  'gateway/configuration',
];

export interface RuntimeTopic {
  id: string;
  title: string;
  summary: string;
  url: string;
}

/** The runtime's pages that exist in the installed package, with their front matter title and summary. */
export async function runtimeTopics(runtime: OpenClawRuntime): Promise<RuntimeTopic[]> {
  const docs = join(dirname(runtime.entry), 'docs');
  const topics = await Promise.all(
    RUNTIME_TOPICS.map(async (id) => {
      const text = await readFile(join(docs, `${id}.md`), 'utf8').catch(() => null);
      if (text === null) return null;
      const meta = frontMatter(text.slice(0, 16 * 1024));
      return { id, title: meta.title || id, summary: meta.summary ?? '', url: `${RUNTIME_DOCS_BASE}/${id}` };
    }),
  );
  return topics.filter((topic): topic is RuntimeTopic => topic !== null);
}

const AUTH =
  'Authorization: Bearer <INTERNAL_API_KEY> and the signed user context (x-user-id, x-user-email, x-user-role, x-user-ts, x-user-signature)';

/** Every endpoint of the tool host, with its parameters and answer. */
export const TOOL_HOST_ENDPOINTS = [
  {
    method: 'GET',
    path: '/api/tool-host/health',
    description: 'Whether the backend, the pinned OpenClaw runtime and its tool catalog are usable.',
    response:
      '{ status: "ok" | "degraded", timestamp, backend, runtime: { available, version, problem }, toolCatalog, provisioning, provider }',
  },
  {
    method: 'GET',
    path: '/api/tool-host/info',
    description: 'The pinned runtime (name, version, license, Node range) and what this backend offers for it.',
    response: '{ runtime, provider, provisioning, profiles[], capabilities }',
  },
  {
    method: 'GET',
    path: '/api/tool-host/setup',
    query: { agentId: 'optional: report which steps that agent has done' },
    description: 'What a user configures for an agent: a messaging channel, a model provider key, DM policy, tool policy, skills.',
    response: '{ agentId, steps: [{ id, title, required, description, settings[], configured? }] }',
  },
  {
    method: 'GET',
    path: '/api/tool-host/tools',
    query: { agentId: "optional: mark each tool enabled or not by that agent's tool policy and add its workspace skills" },
    description: "The runtime's core tool catalog (id, section, description, profiles) and skills.",
    response: '{ agentId, runtimeVersion, sections[], tools[], skills[], policy?, counts }',
  },
  {
    method: 'GET',
    path: '/api/tool-host/examples',
    description: 'Worked examples of tool and config requests.',
    response: '{ examples[] }',
  },
  {
    method: 'GET',
    path: '/api/tool-host/docs',
    description: 'This reference and the runtime documentation pages.',
    response: '{ endpoints[], runtimeTopics[] }',
  },
  {
    method: 'GET',
    path: '/api/tool-host/github',
    description: "The pinned runtime's source repository, from its package.json.",
    response: '{ repository: { type, url }, owner, name, htmlUrl, issuesUrl, homepage, version, license }',
  },
  {
    method: 'POST',
    path: '/api/tool-host/validate-config',
    body: { config: 'an agent configuration object (spec §2.2 dialect, as stored by PUT /api/agents/:id/config)' },
    description:
      "Translates the config as provisioning would (retired keys dropped or renamed, gateway and channel settings set by the platform) and validates it with the pinned OpenClaw's own `config validate`.",
    response: '{ valid, errors: [{ path, message, source: "platform" | "openclaw" }], warnings[], translated: [{ path, action }] }',
  },
].map((endpoint) => ({ auth: AUTH, ...endpoint }));

/** Worked examples; each request is one that the backend accepts as shown. */
export const EXAMPLES = [
  {
    id: 'list-agent-tools',
    title: 'See which tools an agent can call',
    request: { method: 'GET', path: '/api/tool-host/tools?agentId=<agentId>' },
    notes:
      "Each tool has `enabled` from the agent's `tools.profile`, `tools.allow`/`tools.alsoAllow`/`tools.deny` and `tools.web.*.enabled`.",
  },
  {
    id: 'deny-shell',
    title: 'Take shell access away from an agent',
    request: {
      method: 'PUT',
      path: '/api/agents/<agentId>/config',
      body: { config: { '…': 'the rest of the stored config, unchanged', tools: { profile: 'coding', deny: ['group:runtime'] } } },
    },
    notes:
      '`group:runtime` covers `exec`, `process` and `code_execution`. PUT replaces the whole stored config: send it back complete. A running gateway reloads its config.',
  },
  {
    id: 'add-one-tool',
    title: 'Add one tool to a limited profile',
    request: {
      method: 'PUT',
      path: '/api/agents/<agentId>/config',
      body: { config: { '…': 'the rest of the stored config, unchanged', tools: { profile: 'messaging', alsoAllow: ['web_fetch'] } } },
    },
    notes: '`alsoAllow` extends the profile; `allow` and `alsoAllow` cannot both be set in the same scope.',
  },
  {
    id: 'disable-web-search',
    title: 'Turn web search off, keep fetching pages',
    request: {
      method: 'POST',
      path: '/api/tool-host/validate-config',
      body: { config: { tools: { web: { search: { enabled: false }, fetch: { enabled: true, maxChars: 50000 } } } } },
    },
    notes: 'Validate first, then save the same object with PUT /api/agents/<agentId>/config.',
  },
  {
    id: 'limit-bundled-skills',
    title: 'Allow only some bundled skills',
    request: {
      method: 'POST',
      path: '/api/tool-host/validate-config',
      body: { config: { skills: { allowBundled: ['weather', 'summarize'], entries: { weather: { enabled: true } } } } },
    },
    notes: 'Workspace skills (`<workspace>/skills/<name>/SKILL.md`) are not affected by `allowBundled`.',
  },
  {
    id: 'add-workspace-skill',
    title: 'Give an agent its own skill',
    request: {
      method: 'POST',
      path: '/api/browse/write',
      body: {
        agentId: '<agentId>',
        path: 'skills/standup/SKILL.md',
        content:
          "---\nname: standup\ndescription: Write the daily stand-up summary from yesterday's memory notes.\n---\n\n# Stand-up\n\n1. Read memory/ for yesterday.\n2. Summarise in three bullets.\n",
      },
    },
    notes: 'Workspace skills take precedence over bundled ones with the same name; the gateway picks them up on its next skills refresh.',
  },
];

/** How each setup step is done through this platform's API. */
export const SETUP_STEPS = [
  {
    id: 'channel',
    title: 'Connect a messaging channel',
    required: true,
    description:
      'A Telegram bot token (from @BotFather) or a Discord bot token. WhatsApp links by QR code and takes no token. Without a channel the agent is reachable through web chat only (deployments then need `autoProvision: true`).',
    settings: [
      'POST /api/deployments: config.telegramToken or config.discordToken',
      'PUT /api/agents/:id: channelTokens { telegram?, discord?, whatsapp? }',
    ],
  },
  {
    id: 'llm',
    title: 'Bring a model provider key',
    required: false,
    description:
      "The agent's own key for its `aiProvider` (openrouter, gemini, groq, anthropic, openai). Without one the agent uses the model in its config with the platform's defaults.",
    settings: ['PUT /api/agents/:id: aiProvider, apiKey'],
  },
  {
    id: 'dm-policy',
    title: 'Choose who may message the agent',
    required: false,
    description: '`pairing` (default): unknown senders get a pairing code to approve. `allowlist`: only listed senders.',
    settings: ['config.channels.<telegram|discord|whatsapp>.dmPolicy'],
  },
  {
    id: 'tools',
    title: 'Review the tool policy',
    required: false,
    description:
      '`tools.profile` is set at provisioning from the plan (`coding` for collective and higher plans, `messaging` for solo) and kept for the life of the agent. Narrow it with `tools.deny`, widen it with `tools.alsoAllow`.',
    settings: ['config.tools.profile', 'config.tools.deny', 'config.tools.alsoAllow'],
  },
  {
    id: 'skills',
    title: 'Add skills',
    required: false,
    description:
      'Bundled skills load when their requirements (binaries, environment) are met; `skills.allowBundled` limits them. Add your own as `skills/<name>/SKILL.md` in the workspace.',
    settings: ['config.skills.allowBundled', 'config.skills.entries.<name>.enabled', 'POST /api/browse/write'],
  },
] as const;
