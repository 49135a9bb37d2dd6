import { readFile } from 'node:fs/promises';
import type { AgentWorkspace } from './workspace.js';

/**
 * The `underground-bus` OpenClaw skill every agent gets: `SKILL.md` (how and when to send a signed bus message) and
 * `send.mjs` (signs with the wallet key in the gateway's environment and posts to `AOP_AGENT_BUS_URL`). OpenClaw
 * gates it on those variables, so it shows only to agents that have a wallet.
 *
 * It goes to `<workspace>/.agents/skills/underground-bus/` (OpenClaw's project-agent skills root), not
 * `<workspace>/skills/`: a `skills/<name>/SKILL.md` in a workspace OpenClaw has not seeded yet counts, for
 * OpenClaw, as user content, so it would skip seeding the new workspace (no BOOTSTRAP.md, no git repository).
 * A skill of the same name the agent or its owner puts under `skills/` takes precedence over this one.
 */
export const BUS_SKILL_NAME = 'underground-bus';
export const BUS_SKILL_DIR = ['.agents', 'skills', BUS_SKILL_NAME];
/** The skill's files, in the order `busSkillFiles()` answers them. */
export const BUS_SKILL_FILES = ['SKILL.md', 'send.mjs'] as const;

// `src/` in development, `dist/` once built: the package directory is one level up either way.
const PACKAGE_URL = new URL('../../', import.meta.url);
const SKILL_MD_URL = new URL(`skills/${BUS_SKILL_NAME}/SKILL.md`, PACKAGE_URL);
const SCRIPT_URL = new URL(`dist/skills/${BUS_SKILL_NAME}/send.mjs`, PACKAGE_URL);
const BUILD_SCRIPT_URL = new URL('scripts/build-skills.mjs', PACKAGE_URL);

export interface SkillFile {
  /** Path segments inside the workspace. */
  path: string[];
  content: Buffer;
}

let files: Promise<SkillFile[]> | null = null;

/**
 * The bundle is built by `npm run build`; a checkout that was not built (tests, `tsx` development) builds it here
 * once, with the same build script, rather than giving agents a skill without its script.
 */
async function loadScript(): Promise<Buffer> {
  try {
    return await readFile(SCRIPT_URL);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const build = (await import(BUILD_SCRIPT_URL.href)) as { buildSkills(): Promise<string[]> };
  await build.buildSkills();
  return readFile(SCRIPT_URL);
}

/** The skill's files (read once per process). */
export function busSkillFiles(): Promise<SkillFile[]> {
  files ??= (async () => [
    { path: [...BUS_SKILL_DIR, BUS_SKILL_FILES[0]], content: await readFile(SKILL_MD_URL) },
    { path: [...BUS_SKILL_DIR, BUS_SKILL_FILES[1]], content: await loadScript() },
  ])().catch((error: unknown) => {
    files = null; // a later call tries again (e.g. after `npm run build`)
    throw new Error(`The ${BUS_SKILL_NAME} skill is not available: ${(error as Error).message}`, { cause: error });
  });
  return files;
}

/**
 * Writes the skill into the agent's workspace, replacing what is there (so a repair or an update brings back the
 * current version). Goes through the workspace's confined writes: the agent controls its workspace, and a symlink it
 * left there must not make the host write anywhere else.
 */
export async function installBusSkill(workspace: AgentWorkspace): Promise<void> {
  for (const file of await busSkillFiles()) await workspace.write(file.path, file.content);
}
