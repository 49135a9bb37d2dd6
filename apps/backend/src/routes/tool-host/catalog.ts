import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import type { OpenClawRuntime } from '@aop/provisioner';

/**
 * What the pinned OpenClaw says about its tools and skills, read from the installed package itself:
 *
 * - Core tools come from the package's tool catalog module (`src/agents/tool-catalog.ts`, bundled as
 *   `dist/tool-catalog-<hash>.mjs`; OpenClaw keeps it pure data for its Control UI). It is loaded by the runtime's
 *   own Node 24 in a short-lived child process (the backend runs Node 20, and nothing of the runtime is loaded into
 *   the backend); the chunk is found by its source marker and its exports by the names in its `export { … }` line,
 *   so a new build hash does not break it. Cached per runtime directory.
 * - Skills are `SKILL.md` files (front matter `name`, `description`): bundled ones in `<package>/skills`, the
 *   agent's own in `<workspace>/skills` and `<workspace>/.agents/skills` (OpenClaw's loading order).
 */

export interface CatalogTool {
  id: string;
  section: string;
  description: string;
  /** Built-in profiles that include the tool (`minimal`, `coding`, `messaging`). */
  profiles: string[];
}

export interface ToolCatalog {
  sections: Array<{ id: string; label: string }>;
  tools: CatalogTool[];
  /** `group:fs` → tool ids, as `tools.allow`/`tools.deny` expand them. */
  groups: Record<string, string[]>;
  profiles: Array<{ id: string; label: string }>;
}

export class CatalogUnavailableError extends Error {
  override readonly name = 'CatalogUnavailableError';
}

/** Runs in the runtime's Node: prints the catalog as JSON (or `{ error }`). */
const CATALOG_SCRIPT = String.raw`
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const dist = process.argv[1];
let file = null;
let source = '';
for (const name of readdirSync(dist)) {
  if (!/^tool-catalog(?:-[A-Za-z0-9_-]+)?\.m?js$/.test(name)) continue;
  const text = readFileSync(join(dist, name), 'utf8');
  if (text.includes('src/agents/tool-catalog.ts')) { file = join(dist, name); source = text; break; }
}
if (!file) { process.stdout.write(JSON.stringify({ error: 'this OpenClaw version ships no tool catalog' })); process.exit(0); }
const exported = /export\s*\{([^}]*)\}\s*;?\s*$/.exec(source.trim());
const names = {};
for (const part of (exported ? exported[1] : '').split(',')) {
  const [local, alias] = part.trim().split(/\s+as\s+/);
  if (local) names[local] = alias ?? local;
}
const mod = await import(pathToFileURL(file).href);
const pick = (name) => mod[names[name] ?? name];
const listSections = pick('listCoreToolSections');
const profilesOf = pick('resolveCoreToolProfiles');
if (typeof listSections !== 'function' || typeof profilesOf !== 'function') {
  process.stdout.write(JSON.stringify({ error: 'the tool catalog module has an unknown shape' }));
  process.exit(0);
}
const sections = listSections({ swarmEnabled: true, githubPublicationAvailable: true });
process.stdout.write(JSON.stringify({
  sections: sections.map((s) => ({ id: s.id, label: s.label, tools: s.tools.map((t) => ({ id: t.id, description: t.description, profiles: profilesOf(t.id) })) })),
  groups: pick('CORE_TOOL_GROUPS') ?? {},
  profiles: pick('PROFILE_OPTIONS') ?? [],
}));
`;

const CATALOG_TIMEOUT_MS = 15_000;
const CATALOG_MAX_BYTES = 4 * 1024 * 1024;

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

/** Checks the child's JSON field by field: it is data from a package, not trusted structure. */
function parseCatalog(raw: unknown): ToolCatalog {
  const data = (raw ?? {}) as Record<string, unknown>;
  if (typeof data.error === 'string') throw new CatalogUnavailableError(data.error);
  if (!Array.isArray(data.sections)) throw new CatalogUnavailableError('the tool catalog answered no sections');
  const sections: ToolCatalog['sections'] = [];
  const tools: CatalogTool[] = [];
  for (const entry of data.sections as Array<Record<string, unknown>>) {
    const id = str(entry?.id);
    if (!id) continue;
    sections.push({ id, label: str(entry.label) || id });
    for (const tool of Array.isArray(entry.tools) ? (entry.tools as Array<Record<string, unknown>>) : []) {
      if (str(tool?.id))
        tools.push({ id: str(tool.id), section: id, description: str(tool.description), profiles: strings(tool.profiles) });
    }
  }
  const groups: Record<string, string[]> = {};
  if (typeof data.groups === 'object' && data.groups !== null) {
    for (const [name, ids] of Object.entries(data.groups)) groups[name] = strings(ids);
  }
  const profiles = (Array.isArray(data.profiles) ? (data.profiles as Array<Record<string, unknown>>) : [])
    .filter((p) => str(p?.id))
    .map((p) => ({ id: str(p.id), label: str(p.label) || str(p.id) }));
  return { sections, tools, groups, profiles };
}

function runCatalogScript(runtime: OpenClawRuntime): Promise<ToolCatalog> {
  const dist = join(dirname(runtime.entry), 'dist');
  return new Promise((resolve, reject) => {
    const child = spawn(runtime.nodeBin, ['--input-type=module', '-e', CATALOG_SCRIPT, dist], {
      cwd: tmpdir(),
      env: { PATH: `${dirname(runtime.nodeBin)}:/usr/bin:/bin`, HOME: tmpdir(), LANG: 'C.UTF-8' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: CATALOG_TIMEOUT_MS,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      if (out.length < CATALOG_MAX_BYTES) out += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (err.length < 4096) err += chunk.toString('utf8');
    });
    child.once('error', (error) => reject(new CatalogUnavailableError(`cannot run the runtime's Node: ${error.message}`)));
    child.once('close', (code, signal) => {
      if (code !== 0) {
        const why = signal ? `was stopped (${signal})` : `exited with ${code}`;
        return reject(new CatalogUnavailableError(`reading the tool catalog ${why}: ${err.trim().split('\n')[0] ?? ''}`));
      }
      try {
        resolve(parseCatalog(JSON.parse(out)));
      } catch (error) {
        reject(error instanceof CatalogUnavailableError ? error : new CatalogUnavailableError('the tool catalog answered no JSON'));
      }
    });
  });
}

const catalogs = new Map<string, Promise<ToolCatalog>>();

/** The core tool catalog of a runtime (cached; a failure is not cached). */
export function toolCatalog(runtime: OpenClawRuntime): Promise<ToolCatalog> {
  const key = `${runtime.nodeBin}\0${runtime.dir}\0${runtime.version}`;
  let cached = catalogs.get(key);
  if (!cached) {
    cached = runCatalogScript(runtime);
    catalogs.set(key, cached);
    cached.catch(() => catalogs.delete(key));
  }
  return cached;
}

// ---------------------------------------------------------------- the agent's tool policy

export interface ToolPolicy {
  profile: string | null;
  allow: string[];
  alsoAllow: string[];
  deny: string[];
  webSearchEnabled: boolean;
  webFetchEnabled: boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The global tool policy of a stored agent config (`tools.*`). */
export function toolPolicy(config: unknown): ToolPolicy {
  const tools = isObject(config) && isObject(config.tools) ? config.tools : {};
  const web = isObject(tools.web) ? tools.web : {};
  const flag = (section: unknown) => !(isObject(section) && section.enabled === false);
  return {
    profile: typeof tools.profile === 'string' && tools.profile ? tools.profile : null,
    allow: strings(tools.allow),
    alsoAllow: strings(tools.alsoAllow),
    deny: strings(tools.deny),
    webSearchEnabled: flag(web.search),
    webFetchEnabled: flag(web.fetch),
  };
}

/** OpenClaw's accepted aliases (its tool-policy docs: `bash` for `exec`, `cron` for `automations`). */
const ALIASES: Record<string, string> = { bash: 'exec', cron: 'automations' };

/** One allow/deny entry as a test on tool ids: exact (case-insensitive), `group:<name>`, or a `*` glob. */
function entryMatcher(entry: string, groups: Record<string, string[]>): (id: string) => boolean {
  const normalized = entry.trim().toLowerCase();
  const name = ALIASES[normalized] ?? normalized;
  if (name.startsWith('group:')) {
    const members = new Set(groups[name] ?? []);
    return (id) => members.has(id);
  }
  if (name.includes('*')) {
    const pattern = new RegExp(`^${name.split('*').map(escapeRegExp).join('.*')}$`);
    return (id) => pattern.test(id.toLowerCase());
  }
  return (id) => id.toLowerCase() === name;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const LIMITED_PROFILES = new Set(['minimal', 'coding', 'messaging']);

/**
 * Whether each core tool is enabled by the agent's global policy, in OpenClaw's order: the profile's allowlist
 * (plus `alsoAllow`; `full`, unset or unknown profiles filter nothing), then `tools.allow` as a filter, then
 * `tools.deny` (deny wins), then the `tools.web.*.enabled` switches. Per-provider, per-agent and per-sender policies
 * and sandbox gates narrow this further at run time.
 */
export function enabledTools(catalog: ToolCatalog, policy: ToolPolicy): Set<string> {
  const matchesAny = (entries: string[]) => {
    const matchers = entries.map((entry) => entryMatcher(entry, catalog.groups));
    return (id: string) => matchers.some((match) => match(id));
  };
  const alsoAllowed = matchesAny(policy.alsoAllow);
  const allowed = matchesAny(policy.allow);
  const denied = matchesAny(policy.deny);
  const profile = policy.profile;
  const enabled = new Set<string>();
  for (const tool of catalog.tools) {
    if (profile && LIMITED_PROFILES.has(profile) && !tool.profiles.includes(profile) && !alsoAllowed(tool.id)) continue;
    if (policy.allow.length > 0 && !allowed(tool.id)) continue;
    if (denied(tool.id)) continue;
    if (tool.id === 'web_search' && !policy.webSearchEnabled) continue;
    if (tool.id === 'web_fetch' && !policy.webFetchEnabled) continue;
    enabled.add(tool.id);
  }
  return enabled;
}

// ---------------------------------------------------------------- skills

export interface Skill {
  name: string;
  description: string;
  source: 'bundled' | 'workspace';
  /** Workspace skills: the skill's directory, relative to the workspace. */
  path?: string;
}

const MAX_SKILLS = 500;
const SKILL_DEPTH = 6;

/** The top-level scalar keys of a Markdown file's YAML front matter (plain, quoted, `|` and `>` block scalars). */
export function frontMatter(text: string): Record<string, string> {
  const normalized = text.replace(/\r\n/g, '\n');
  if (!normalized.startsWith('---\n')) return {};
  const end = normalized.indexOf('\n---', 4);
  if (end < 0) return {};
  const lines = normalized.slice(4, end).split('\n');
  const result: Record<string, string> = {};
  for (let i = 0; i < lines.length; i += 1) {
    const match = /^([A-Za-z_][\w-]*):\s*(.*)$/.exec(lines[i] as string);
    if (!match) continue;
    const key = match[1] as string;
    let value = (match[2] as string).trim();
    if (/^[|>][+-]?$/.test(value)) {
      const block: string[] = [];
      while (i + 1 < lines.length && /^(\s+|$)/.test(lines[i + 1] as string) && (lines[i + 1] as string) !== '') {
        block.push((lines[i + 1] as string).trim());
        i += 1;
      }
      value = block.join(value.startsWith('|') ? '\n' : ' ');
    } else if (value.startsWith('"')) {
      try {
        value = JSON.parse(value) as string;
      } catch {
        value = value.slice(1, value.endsWith('"') ? -1 : undefined);
      }
    } else if (value.startsWith("'")) {
      value = value.slice(1, value.endsWith("'") ? -1 : undefined).replace(/''/g, "'");
    }
    result[key] = value;
  }
  return result;
}

/** Skills under a root: a directory holding `SKILL.md` is one skill (nothing below it is searched). */
export async function listSkills(root: string, source: Skill['source'], base = root): Promise<Skill[]> {
  const found: Skill[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (found.length >= MAX_SKILLS) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    if (entries.some((entry) => entry.isFile() && entry.name === 'SKILL.md')) {
      const text = await readFile(join(dir, 'SKILL.md'), 'utf8').catch(() => '');
      const meta = frontMatter(text.slice(0, 64 * 1024));
      const folder = dir.split(sep).pop() ?? '';
      found.push({
        name: meta.name || folder,
        description: meta.description ?? '',
        source,
        ...(source === 'workspace' ? { path: relative(base, dir).split(sep).join('/') } : {}),
      });
      return;
    }
    if (depth >= SKILL_DEPTH) return;
    // Directories only, never through symlinks (a workspace is agent-written).
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules') await walk(join(dir, entry.name), depth + 1);
    }
  };
  await walk(root, 0);
  return found;
}

/** Skills the pinned package ships (`<package>/skills`), cached per runtime directory. */
const bundled = new Map<string, Promise<Skill[]>>();
export function bundledSkills(runtime: OpenClawRuntime): Promise<Skill[]> {
  const dir = join(dirname(runtime.entry), 'skills');
  let cached = bundled.get(dir);
  if (!cached) {
    cached = listSkills(dir, 'bundled');
    bundled.set(dir, cached);
  }
  return cached;
}

/** Whether the agent's config lets a skill load: `skills.allowBundled` (bundled only) and `skills.entries.<name>.enabled`. */
export function skillEnabled(skill: Skill, config: unknown): boolean {
  const skills = isObject(config) && isObject(config.skills) ? config.skills : {};
  const entries = isObject(skills.entries) ? skills.entries : {};
  const entry = entries[skill.name];
  if (isObject(entry) && entry.enabled === false) return false;
  if (skill.source === 'bundled' && Array.isArray(skills.allowBundled)) return strings(skills.allowBundled).includes(skill.name);
  return true;
}

// ---------------------------------------------------------------- the package

export interface RuntimePackage {
  name: string;
  version: string;
  description: string;
  license: string;
  homepage: string | null;
  repository: { type: string; url: string } | null;
  bugs: string | null;
  author: string | null;
  /** The Node version range the package needs (`engines.node`). */
  node: string | null;
}

/** `<package>/package.json` of a runtime, or null when it is not installed. */
export function runtimePackage(runtime: OpenClawRuntime): RuntimePackage | null {
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(readFileSync(join(dirname(runtime.entry), 'package.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
  const repository = data.repository;
  const repo =
    typeof repository === 'string'
      ? { type: 'git', url: repository }
      : isObject(repository) && typeof repository.url === 'string'
        ? { type: str(repository.type) || 'git', url: repository.url }
        : null;
  const bugs = isObject(data.bugs) ? str(data.bugs.url) : str(data.bugs);
  const author = isObject(data.author) ? str(data.author.name) : str(data.author);
  const engines = isObject(data.engines) ? str(data.engines.node) : '';
  return {
    name: str(data.name),
    version: str(data.version),
    description: str(data.description),
    license: str(data.license),
    homepage: str(data.homepage) || null,
    repository: repo,
    bugs: bugs || null,
    author: author || null,
    node: engines || null,
  };
}

/**
 * `git+https://github.com/owner/repo.git`, `github:owner/repo`, `git@github.com:owner/repo.git` and the
 * `owner/repo` shorthand → `{ owner, name }`; null for repositories not on GitHub.
 */
export function githubRepository(url: string): { owner: string; name: string } | null {
  const patterns = [
    /^(?:git\+)?(?:https?|git|ssh):\/\/(?:[^@/]+@)?github\.com[/:]([^/]+)\/([^/#?]+?)(?:\.git)?(?:[#?].*)?\/?$/i,
    /^git@github\.com:([^/]+)\/([^/#?]+?)(?:\.git)?$/i,
    /^github:([^/]+)\/([^/#?]+?)(?:\.git)?$/i,
    /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/,
  ];
  for (const pattern of patterns) {
    const match = pattern.exec(url.trim());
    if (match) return { owner: match[1] as string, name: match[2] as string };
  }
  return null;
}
