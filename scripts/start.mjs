#!/usr/bin/env node
// `npm start`: builds if needed, then runs web, backend and summarizer together,
// wired to each other, on embedded defaults. Ctrl-C stops all three cleanly.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { announceWhenReady } from './ready-banner.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');

if (existsSync(tsc)) {
  // Incremental: a second start with nothing changed takes a moment.
  const build = spawnSync(tsc, ['-b'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
} else if (!existsSync(join(root, 'apps/web/dist/server.js'))) {
  console.error('TypeScript is not installed and there is no build: run `npm install` first.');
  process.exit(1);
}

// The dashboard the web serves at `/`: a Vite build takes about a second, so it is simply rebuilt on every start.
const vite = join(root, 'node_modules', '.bin', 'vite');
if (existsSync(vite)) {
  const build = spawnSync(vite, ['build', '--logLevel', 'warn'], { cwd: join(root, 'apps', 'dashboard'), stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
} else if (!existsSync(join(root, 'apps/dashboard/dist/index.html'))) {
  console.warn('Vite is not installed and the dashboard is not built: the API runs, `/` answers 503 until `npm run build`.');
}

const env = { ...process.env, DATA_DIR: process.env.DATA_DIR ?? join(root, '.data') };
// The services write to a pipe (prefixed below), so they cannot see the terminal themselves: a person at one reads
// one line per event; anything else (a file, a collector, production) gets JSON.
if (process.stdout.isTTY && env.NODE_ENV !== 'production') {
  env.LOG_FORMAT ??= 'pretty';
  env.FORCE_COLOR ??= '1';
}
const webPort = env.PORT ?? '3000';
const backendPort = env.BACKEND_PORT ?? '3001';
const summarizerPort = env.SUMMARIZER_PORT ?? '3100';
env.BACKEND_API_URL ??= `http://127.0.0.1:${backendPort}`;
env.SUMMARIZER_URL ??= `http://127.0.0.1:${summarizerPort}`;

const services = ['backend', 'summarizer', 'web'];
const children = new Map();
let stopping = false;
let exitCode = 0;

function prefixLines(stream, name, out) {
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) out.write(`[${name}] ${line}\n`);
  });
  stream.on('end', () => pending && out.write(`[${name}] ${pending}\n`));
}

function stopAll(signal) {
  if (stopping) return;
  stopping = true;
  for (const child of children.values()) child.kill(signal);
  // A service that ignores the signal is not allowed to hold the terminal forever.
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, 15_000).unref();
}

for (const name of services) {
  // The backend's callers are the web service on this host, which forwards each browser's address: trust it there,
  // so the backend's per-client limits count browsers, not the web service (the web itself trusts nothing by default).
  const serviceEnv = name === 'backend' ? { ...env, TRUST_PROXY: env.TRUST_PROXY ?? '127.0.0.1' } : env;
  const child = spawn(process.execPath, [join(root, 'apps', name, 'dist', 'server.js')], {
    cwd: root,
    env: serviceEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  prefixLines(child.stdout, name, process.stdout);
  prefixLines(child.stderr, name, process.stderr);
  children.set(name, child);
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      console.error(`[${name}] exited (${signal ?? code}); stopping the others`);
      exitCode = code || 1;
      stopAll('SIGTERM');
    }
    if (children.size === 0) process.exit(exitCode);
  });
}

/** Whether the agents' runtime is there (the local provider runs it), read from the build like the backend reads it. */
async function runtimeLine() {
  const provider = env.PROVISIONER ?? 'local';
  if (provider !== 'local') return `run on the ${provider} provider (PROVISIONER)`;
  try {
    const { openClawRuntime, runtimeProblem, PINNED_OPENCLAW_VERSION } = await import('../packages/provisioner/dist/index.js');
    const problem = runtimeProblem(openClawRuntime(PINNED_OPENCLAW_VERSION));
    const perGateway = Number(env.AGENTS_PER_GATEWAY ?? 8);
    const sharing = perGateway > 1 ? `a customer's agents share a local gateway (up to ${perGateway})` : 'one local gateway per agent';
    return problem ? `cannot start: ${problem}` : `OpenClaw ${PINNED_OPENCLAW_VERSION} installed (runtime/), ${sharing}`;
  } catch (error) {
    return `unknown: the provisioner build could not be read (${error.message})`;
  }
}

/** Where the data lives, without the credentials a DATABASE_URL may hold. */
function dataLine() {
  if (!env.DATABASE_URL) return `${env.DATA_DIR} (embedded Postgres, one per service)`;
  try {
    const url = new URL(env.DATABASE_URL);
    return `Postgres at ${url.host}${url.pathname}${env.REDIS_URL ? ', Redis for shared counters' : ''}`;
  } catch {
    return 'the Postgres server of DATABASE_URL';
  }
}

const web = env.PUBLIC_URL ?? `http://127.0.0.1:${webPort}`;
void announceWhenReady({
  checks: {
    web: `http://127.0.0.1:${webPort}/api/health`,
    backend: `http://127.0.0.1:${backendPort}/health`,
    summarizer: `http://127.0.0.1:${summarizerPort}/health`,
  },
  rows: async () => [
    ['dashboard', `${web}/`],
    ['API', `${web}/api (OpenAPI: ${web}/api/openapi.json)`],
    ['backend', `http://127.0.0.1:${backendPort} (internal)`],
    ['summarizer', `http://127.0.0.1:${summarizerPort}`],
    ['data', dataLine()],
    ['agents', await runtimeLine()],
  ],
  stopped: () => stopping,
});

process.on('SIGINT', () => stopAll('SIGINT'));
process.on('SIGTERM', () => stopAll('SIGTERM'));
