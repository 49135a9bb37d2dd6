#!/usr/bin/env node
// Signed-in reads of the web API beside a bare node:http server doing the same work (bench/lib/bare-reads.mjs: the
// session look-up and the same rows, no framework), on Postgres and on embedded PGlite, at concurrency 64; then the
// dashboard's page and main script beside a bare fixed-JSON server. Each pair runs BENCH_ROUNDS times in alternating
// order, because this machine's speed drifts: compare ratios within a round, not absolute numbers across runs.
// Run: npm run bench:api   (BENCH_SECONDS, BENCH_ROUNDS, BENCH_CONNECTIONS, BENCH_ENGINES=postgres,pglite,
// BENCH_POSTGRES_URL: a server where the benchmark may create and drop its own scratch database)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { freePort, waitFor } from './lib/listen.mjs';
import { postJson, signedIn } from './lib/web-session.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const duration = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const engines = (process.env.BENCH_ENGINES ?? 'postgres,pglite').split(',').map((e) => e.trim());
const postgresServer = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dataDir = mkdtempSync(join(tmpdir(), 'aop-bench-'));

const children = [];
const cleanups = [];
function start(args, env = {}) {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return child;
}
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

/** CPU seconds a process has used (user + system), from /proc; with `children`, also its reaped children's. */
function cpuSeconds(pid, children = false) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const own = Number(fields[11]) + Number(fields[12]);
  return (children ? own + Number(fields[13]) + Number(fields[14]) : own) / 100;
}
/**
 * CPU seconds of the Postgres server: every live server process, plus what exited ones used (a backend that ends
 * hands its time to the postmaster, whose reaped-children figures carry it).
 */
function postgresCpuSeconds() {
  let total = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuSeconds(pid, true);
    } catch {}
  }
  return total;
}

function run(name, url, headers, pid, engine) {
  const before = { server: cpuSeconds(pid), postgres: engine === 'postgres' ? postgresCpuSeconds() : 0 };
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration, headers }, (err, r) => {
      if (err) return reject(err);
      const served = r.requests.total || 1;
      resolve({
        name,
        reqPerSec: Math.round(r.requests.average),
        p50Ms: r.latency.p50,
        p99Ms: r.latency.p99,
        cpuMsPerReq: Number((((cpuSeconds(pid) - before.server) * 1000) / served).toFixed(3)),
        ...(engine === 'postgres'
          ? { pgCpuMsPerReq: Number((((postgresCpuSeconds() - before.postgres) * 1000) / served).toFixed(3)) }
          : {}),
        errors: r.errors + r.non2xx,
      });
    });
  });
}

async function scratchDatabase() {
  const name = `aop_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresServer });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  cleanups.push(async () => {
    const c = new pg.Client({ connectionString: postgresServer });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`);
    await c.end();
  });
  const url = new URL(postgresServer);
  url.pathname = `/${name}`;
  return url.toString();
}

const json = postJson;

/** A web service with one account seeded through the API as the bare server seeds its own. */
async function startWeb(engine, databaseUrl) {
  const port = await freePort();
  const child = start([join(root, 'apps/web/dist/server.js')], {
    PORT: String(port),
    DATA_DIR: join(dataDir, engine),
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl ?? '',
    REDIS_URL: process.env.REDIS_URL ?? '',
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/api/health`, 120_000);
  const cookie = await signedIn(url, `bench-${Date.now()}@example.com`, 'benchmark password');
  // A saved configuration with 10 backups, and 5 workflows of 4 nodes: the bare server's rows.
  for (let i = 0; i <= 10; i++)
    await fetch(`${url}/api/config`, json({ config: { logging: { level: i < 10 ? 'debug' : 'info' }, i } }, { cookie }));
  for (let w = 0; w < 5; w++) {
    const nodes = Array.from({ length: 4 }, () => ({ type: 'action', config: { step: 1 }, position: { x: 0, y: 0 } }));
    const res = await fetch(`${url}/api/workflows`, json({ name: `workflow ${w}`, nodes }, { cookie }));
    if (res.status !== 201) throw new Error(`workflow seed failed: ${res.status} ${await res.text()}`);
  }
  return { url, pid: child.pid, cookie };
}

async function startBare(databaseUrl) {
  const port = await freePort();
  const child = start([join(here, 'lib/bare-reads.mjs'), String(port), databaseUrl ?? '']);
  const token = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /token=([0-9a-f]{64})/.exec(out);
      if (match) resolve(match[1]);
    });
    child.on('exit', (code) => reject(new Error(`bare server exited ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, pid: child.pid, cookie: `service-session=${token}` };
}

const rows = [];
const READS = [
  ['GET /api/config', '/api/config', '/config'],
  ['GET /api/workflows', '/api/workflows', '/workflows'],
];
try {
  for (const engine of engines) {
    const databaseUrl = engine === 'postgres' ? await scratchDatabase() : undefined;
    const web = await startWeb(engine, databaseUrl);
    const bare = await startBare(databaseUrl);
    await run('warm-up', `${web.url}/api/config`, { cookie: web.cookie }, web.pid, engine);
    await run('warm-up', `${bare.url}/config`, { cookie: bare.cookie }, bare.pid, engine);
    for (let round = 1; round <= rounds; round++) {
      for (const [name, webPath, barePath] of READS) {
        const pair = [
          () => run(`bare ${barePath}`, `${bare.url}${barePath}`, { cookie: bare.cookie }, bare.pid, engine),
          () => run(name, `${web.url}${webPath}`, { cookie: web.cookie }, web.pid, engine),
        ];
        if (round % 2 === 0) pair.reverse();
        const results = [];
        for (const go of pair) results.push(await go());
        const [b, w] = round % 2 === 0 ? results.reverse() : results;
        rows.push({ engine, round, ...b, ratio: 1 });
        rows.push({
          engine,
          round,
          ...w,
          ratio: Number((w.reqPerSec / b.reqPerSec).toFixed(2)),
          p99VsBare: Number((w.p99Ms / b.p99Ms).toFixed(2)),
        });
      }
    }
    if (engine === engines[0]) {
      // The dashboard as a browser loads it, beside a bare server answering fixed JSON.
      const port = await freePort();
      const fixed = start([join(here, 'lib/bare-json.mjs'), String(port)]);
      await waitFor(`http://127.0.0.1:${port}/`);
      const b = await run('bare node:http JSON', `http://127.0.0.1:${port}/`, {}, fixed.pid, 'none');
      const script = (await (await fetch(`${web.url}/dashboard`)).text()).match(/\/assets\/index-[^"]+\.js/)?.[0];
      if (!script) throw new Error('the dashboard build is missing: npm run build');
      for (const r of [
        b,
        await run('GET /dashboard (index.html)', `${web.url}/dashboard`, { accept: 'text/html' }, web.pid, 'none'),
        await run('GET /assets/index-*.js (brotli)', `${web.url}${script}`, { 'accept-encoding': 'br' }, web.pid, 'none'),
      ]) {
        rows.push({ engine: 'static', round: 1, ...r, ratio: Number((r.reqPerSec / b.reqPerSec).toFixed(3)) });
      }
    }
    for (const c of children.splice(0)) c.kill('SIGKILL');
  }
} finally {
  for (const c of children) c.kill('SIGKILL');
  for (const cleanup of cleanups) await cleanup().catch(() => {});
}

console.table(rows);
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(
  join(here, 'results', 'api.json'),
  `${JSON.stringify({ at: new Date().toISOString(), connections, duration, rounds, rows }, null, 2)}\n`,
);
process.exit(0);
