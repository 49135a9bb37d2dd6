#!/usr/bin/env node
// Root `postinstall`: installs the pinned OpenClaw runtime in `runtime/` (a separate npm project, not a
// workspace) with the Node 24 binary from the `node` package (a dependency of @aop/provisioner).
// OpenClaw needs Node >= 24.16 and its install scripts run with whatever `node` is first on PATH.
//
//   AOP_SKIP_RUNTIME=1 npm install   skips this step (agents on the local provider then cannot start)
//   node scripts/install-runtime.mjs  installs or repairs the runtime by hand
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runtimeDir = join(root, 'runtime');
const nodeBinDir = join(root, 'node_modules', 'node', 'bin');
const node24 = join(nodeBinDir, 'node');
const skip = process.env.AOP_SKIP_RUNTIME === '1';

const log = (message) => console.log(`[install-runtime] ${message}`);

function fail(message) {
  console.error(`[install-runtime] ERROR: ${message}`);
  console.error('[install-runtime] Agents on the local provider cannot start until the runtime is installed.');
  console.error('[install-runtime] Retry with `node scripts/install-runtime.mjs`, or set AOP_SKIP_RUNTIME=1 to install without it.');
  process.exit(skip ? 0 : 1);
}

// The `node` package links `node_modules/.bin/node`, which would make every `npm run`/`npx` script of the
// platform run on Node 24. Our services run on the machine's Node: drop that shim (the provisioner uses the
// absolute path of the binary).
const shim = join(root, 'node_modules', '.bin', 'node');
try {
  if (lstatSync(shim).isSymbolicLink() && readlinkSync(shim).replaceAll('\\', '/').endsWith('node/bin/node')) rmSync(shim);
} catch {
  // no shim: nothing to do
}

if (skip) {
  log('AOP_SKIP_RUNTIME=1: skipping the OpenClaw runtime install.');
  process.exit(0);
}

const pinned = JSON.parse(readFileSync(join(runtimeDir, 'package.json'), 'utf8')).dependencies?.openclaw;
const installedManifest = join(runtimeDir, 'node_modules', 'openclaw', 'package.json');
if (pinned && existsSync(installedManifest) && JSON.parse(readFileSync(installedManifest, 'utf8')).version === pinned) {
  log(`openclaw@${pinned} is already installed in runtime/.`);
  process.exit(0);
}
if (!existsSync(node24)) fail(`the Node 24 binary is missing (${node24}); run \`npm install\` at the repository root first.`);

// A clean environment for the nested npm: nothing of the root install's workspace selection leaks in.
const env = { ...process.env, PATH: `${nodeBinDir}:${process.env.PATH ?? ''}` };
for (const key of Object.keys(env)) {
  if (/^npm_(package|lifecycle)_/.test(key)) delete env[key];
  if (/^npm_config_(workspaces?|include_workspace_root|prefix|local_prefix|global|save.*|package_lock_only|dry_run)$/i.test(key)) {
    delete env[key];
  }
}

const command = existsSync(join(runtimeDir, 'package-lock.json')) ? 'ci' : 'install';
const nodeVersion = spawnSync(node24, ['-v'], { encoding: 'utf8' }).stdout.trim();
log(`installing openclaw@${pinned} in runtime/ (npm ${command} with Node ${nodeVersion}); this takes about a minute…`);
const started = Date.now();
const result = spawnSync('npm', [command, '--no-audit', '--no-fund'], { cwd: runtimeDir, env, stdio: 'inherit' });
if (result.error) fail(`could not run npm: ${result.error.message}`);
if (result.status !== 0) fail(`\`npm ${command}\` in runtime/ exited with ${result.status ?? result.signal}.`);
if (!existsSync(installedManifest)) fail('npm finished but runtime/node_modules/openclaw is missing.');
log(`openclaw@${pinned} installed in ${Math.round((Date.now() - started) / 1000)} s.`);
