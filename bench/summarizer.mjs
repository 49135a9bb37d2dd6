#!/usr/bin/env node
// Throughput of POST /api/summarize on a ~100 KB page at concurrency 32, beside a
// bare node:http server that only fetches the same page. Run: npm run bench:summarizer
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { freePort, waitFor } from './lib/listen.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const duration = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

const children = [];
function start(args, env = {}) {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  return child;
}
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

const [fixturePort, barePort, summarizerPort] = [await freePort(), await freePort(), await freePort()];
start([join(here, 'lib/fixture-server.mjs'), String(fixturePort)]);
start([join(here, 'lib/bare-fetcher.mjs'), String(barePort)]);
start([join(root, 'apps/summarizer/dist/server.js')], {
  SUMMARIZER_PORT: String(summarizerPort),
  SUMMARIZER_ALLOW_PRIVATE: 'true',
  SUMMARIZER_RATE_LIMIT_PER_MINUTE: '100000000',
  LOG_LEVEL: 'warn',
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
});
const pageUrl = `http://127.0.0.1:${fixturePort}/article`;
await Promise.all([
  waitFor(pageUrl),
  waitFor(`http://127.0.0.1:${barePort}/`).catch(() => {}),
  waitFor(`http://127.0.0.1:${summarizerPort}/health`),
]);

function run(name, url) {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        connections,
        duration,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: pageUrl }),
      },
      (err, result) =>
        err
          ? reject(err)
          : resolve({
              name,
              requestsPerSecond: result.requests.average,
              p99Ms: result.latency.p99,
              errors: result.errors,
              non2xx: result.non2xx,
            }),
    );
  });
}

// Warm both up (JIT, connection pools) before measuring.
await run('warm-up', `http://127.0.0.1:${barePort}/`);
await run('warm-up', `http://127.0.0.1:${summarizerPort}/api/summarize`);
const bare = await run('bare node:http fetch', `http://127.0.0.1:${barePort}/`);
const summarizer = await run('POST /api/summarize', `http://127.0.0.1:${summarizerPort}/api/summarize`);
const ratio = summarizer.requestsPerSecond / bare.requestsPerSecond;

console.table([bare, summarizer]);
console.log(`summarizer / bare = ${ratio.toFixed(2)} (concurrency ${connections}, ${duration}s each, ~100 KB page)`);
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(
  join(here, 'results', 'summarizer.json'),
  JSON.stringify({ at: new Date().toISOString(), connections, duration, bare, summarizer, ratio }, null, 2),
);
process.exit(0);
