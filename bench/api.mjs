#!/usr/bin/env node
// Authenticated reads of the web API at concurrency 64: GET /api/config and
// GET /api/bridge/inbox, and the dashboard's page and main script as a browser
// fetches them, beside a bare node:http JSON server. Run: npm run bench:api
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { freePort, waitFor } from './lib/listen.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const duration = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const dataDir = mkdtempSync(join(tmpdir(), 'aop-bench-'));

const children = [];
function start(args, env = {}) {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  return child;
}
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

const [barePort, webPort] = [await freePort(), await freePort()];
const BRIDGE = 'bench-bridge-secret';
start([join(here, 'lib/bare-json.mjs'), String(barePort)]);
start([join(root, 'apps/web/dist/server.js')], {
  PORT: String(webPort),
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  HOST: '127.0.0.1',
  // The bridge is for operators: callers present its secret (without one only administrators' sessions get in).
  BRIDGE_SECRET: BRIDGE,
  DATABASE_URL: process.env.DATABASE_URL ?? '',
  REDIS_URL: process.env.REDIS_URL ?? '',
});
const web = `http://127.0.0.1:${webPort}`;
await Promise.all([waitFor(`http://127.0.0.1:${barePort}/`), waitFor(`${web}/api/health`, 120_000)]);

// A real account and session, through the API.
const json = (body, headers = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const email = `bench-${Date.now()}@example.com`;
await fetch(`${web}/api/register`, json({ email, password: 'benchmark password' }));
const { csrfToken } = await (await fetch(`${web}/api/auth/csrf`)).json();
const login = await fetch(`${web}/api/auth/login`, json({ email, password: 'benchmark password' }, { 'x-csrf-token': csrfToken }));
const cookie = login.headers
  .getSetCookie()
  .find((c) => c.startsWith('service-session='))
  ?.split(';')[0];
if (!cookie) throw new Error(`login failed: ${login.status}`);
await fetch(`${web}/api/config`, json({ config: { logging: { level: 'info' } } }, { cookie }));
for (let i = 0; i < 50; i++)
  await fetch(`${web}/api/bridge/send`, json({ sender: 'atlas-main', content: `message ${i}` }, { 'x-bridge-secret': BRIDGE }));

function run(name, url, headers = {}) {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration, headers }, (err, r) =>
      err
        ? reject(err)
        : resolve({ name, requestsPerSecond: r.requests.average, p99Ms: r.latency.p99, errors: r.errors, non2xx: r.non2xx }),
    );
  });
}

await run('warm-up', `${web}/api/config`, { cookie });
const bare = await run('bare node:http JSON', `http://127.0.0.1:${barePort}/`);
const config = await run('GET /api/config', `${web}/api/config`, { cookie });
const inbox = await run('GET /api/bridge/inbox', `${web}/api/bridge/inbox?limit=50`, { 'x-bridge-secret': BRIDGE });
const page = await run('GET /dashboard (index.html)', `${web}/dashboard`, { accept: 'text/html' });
const script = (await (await fetch(`${web}/dashboard`)).text()).match(/\/assets\/index-[^"]+\.js/)?.[0];
if (!script) throw new Error('the dashboard build is missing: npm run build');
const asset = await run('GET /assets/index-*.js (brotli)', `${web}${script}`, { 'accept-encoding': 'br' });
const rows = [bare, config, inbox, page, asset].map((r) => ({ ...r, ratio: (r.requestsPerSecond / bare.requestsPerSecond).toFixed(3) }));
console.table(rows);
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(
  join(here, 'results', 'api.json'),
  JSON.stringify(
    { at: new Date().toISOString(), connections, duration, database: process.env.DATABASE_URL ? 'postgres' : 'pglite', rows },
    null,
    2,
  ),
);
process.exit(0);
