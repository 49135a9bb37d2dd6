import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The OpenClaw version `runtime/package.json` pins (kept equal by a test). */
export const PINNED_OPENCLAW_VERSION = '2026.9.6';

/** The repository root (this file is `packages/provisioner/{src,dist}/runtime.*`). */
export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** The Node 24 binary installed by the `node` npm package (a dependency of @aop/provisioner). */
export const defaultNodeBin = (root = REPO_ROOT) => join(root, 'node_modules', 'node', 'bin', 'node');

/**
 * Where an OpenClaw version is installed: `runtime/` for the pinned one, `runtime/versions/<version>/` for others
 * (each an npm project with `node_modules/openclaw`), unless the host maps the version explicitly.
 */
export function defaultRuntimeDir(version: string, root = REPO_ROOT): string {
  return version === PINNED_OPENCLAW_VERSION ? join(root, 'runtime') : join(root, 'runtime', 'versions', version);
}

export interface OpenClawRuntime {
  version: string;
  /** The npm project holding `node_modules/openclaw`. */
  dir: string;
  /** `<dir>/node_modules/openclaw/openclaw.mjs` */
  entry: string;
  nodeBin: string;
}

export function openClawRuntime(version: string, options: { dir?: string; nodeBin?: string; root?: string } = {}): OpenClawRuntime {
  const dir = options.dir ?? defaultRuntimeDir(version, options.root);
  return {
    version,
    dir,
    entry: join(dir, 'node_modules', 'openclaw', 'openclaw.mjs'),
    nodeBin: options.nodeBin ?? defaultNodeBin(options.root),
  };
}

/** Why this runtime cannot run, or null when the Node binary and the right OpenClaw version are installed. */
export function runtimeProblem(runtime: OpenClawRuntime): string | null {
  if (!existsSync(runtime.nodeBin)) return `the Node 24 binary is missing (${runtime.nodeBin}); run \`npm install\``;
  const manifest = join(dirname(runtime.entry), 'package.json');
  if (!existsSync(runtime.entry) || !existsSync(manifest)) {
    return `OpenClaw ${runtime.version} is not installed (${runtime.entry} is missing); run \`node scripts/install-runtime.mjs\``;
  }
  try {
    const installed = (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string }).version;
    if (installed !== runtime.version) return `${runtime.dir} holds OpenClaw ${installed}, not ${runtime.version}`;
  } catch (error) {
    return `cannot read ${manifest}: ${(error as Error).message}`;
  }
  return null;
}

export interface ValidationIssue {
  path: string;
  message: string;
}

export interface ValidationResult {
  valid: boolean;
  issues: ValidationIssue[];
  warnings: ValidationIssue[];
}

/**
 * Runs the runtime's own `openclaw config validate --json` on a config (offline, about 2–4 s of CPU).
 * `env` adds variables (e.g. the channel token variables the config references); `cacheDir` is the child's TMPDIR.
 */
export async function validateOpenClawConfig(
  runtime: OpenClawRuntime,
  config: Record<string, unknown>,
  env: Record<string, string> = {},
  options: { cacheDir?: string } = {},
): Promise<ValidationResult> {
  const problem = runtimeProblem(runtime);
  if (problem) throw new Error(`Cannot validate: ${problem}`);
  const dir = await mkdtemp(join(tmpdir(), 'aop-openclaw-validate-'));
  try {
    const configPath = join(dir, 'openclaw.json');
    await mkdir(options.cacheDir ?? join(tmpdir(), 'aop-openclaw-cache'), { recursive: true, mode: 0o700 });
    await writeFile(configPath, JSON.stringify(config, null, 2), { mode: 0o600 });
    const childEnv: Record<string, string> = {
      PATH: `${dirname(runtime.nodeBin)}:/usr/local/bin:/usr/bin:/bin`,
      HOME: dir,
      // A stable temp dir keeps OpenClaw's Node compile cache warm between runs (about half the time).
      TMPDIR: options.cacheDir ?? join(tmpdir(), 'aop-openclaw-cache'),
      LANG: 'C.UTF-8',
      OPENCLAW_STATE_DIR: join(dir, 'state'),
      OPENCLAW_CONFIG_PATH: configPath,
      OPENCLAW_NO_AUTO_UPDATE: '1',
      OPENCLAW_OFFLINE: '1',
      ...env,
    };
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(runtime.nodeBin, [runtime.entry, 'config', 'validate', '--json'], { cwd: dir, env: childEnv });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
      });
      child.stderr.on('data', (chunk: Buffer) => {
        err += chunk.toString('utf8');
      });
      child.once('error', reject);
      child.once('close', (exitCode) => resolve({ code: exitCode, stdout: out, stderr: err }));
    });
    const start = stdout.indexOf('{');
    if (start < 0) throw new Error(`openclaw config validate exited with ${code} and no JSON: ${stderr || stdout}`);
    const parsed = JSON.parse(stdout.slice(start)) as { valid?: boolean; issues?: ValidationIssue[]; warnings?: ValidationIssue[] };
    return { valid: parsed.valid === true, issues: parsed.issues ?? [], warnings: parsed.warnings ?? [] };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
