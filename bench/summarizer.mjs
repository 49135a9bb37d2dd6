#!/usr/bin/env node
// The summarizer benchmark, in one run (npm run bench:summarizer):
//   1. in-process, one ~100 KB page: htmlparser2's tokenizer with empty callbacks (the floor), the streaming
//      extractor, and the old DOM extractor (the test oracle, loaded from TypeScript through tsx);
//   2. over HTTP at concurrency 32: a bare node:http server that only fetches the page, POST /api/summarize on a
//      fresh page (no validators: fetched and extracted every time), the same with the worker pool forced on (its
//      default 256 KB threshold would keep this page in-process), and on a
//      revalidated page (ETag → 304, extraction reused).
// Prints req/s, p50, p99, CPU ms per request and ratios; writes bench/results/summarizer.json.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Parser } from 'htmlparser2';
import { tsImport } from 'tsx/esm/api';
import { fixturePage } from './lib/fixture-page.mjs';
import { freePort, waitFor } from './lib/listen.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const duration = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const microSeconds = Number(process.env.BENCH_MICRO_SECONDS ?? 3);

// ---------------------------------------------------------------------------
// 1. In-process extractors

const { extractPage } = await import(join(root, 'apps/summarizer/dist/services/summarize.js'));
const reference = await tsImport('../apps/summarizer/src/services/extract-reference.test-support.ts', import.meta.url);
const page = fixturePage();
const PAGE_URL = 'http://127.0.0.1/article';

/** Runs `fn` back to back for `seconds` after a warm-up; per-call wall times give p50/p99, process CPU the cost. */
function micro(name, fn, seconds = microSeconds) {
  const warmUntil = performance.now() + 500;
  while (performance.now() < warmUntil) fn();
  const times = [];
  const cpu = process.cpuUsage();
  const start = performance.now();
  const end = start + seconds * 1000;
  for (let t = start; t < end; ) {
    fn();
    const now = performance.now();
    times.push(now - t);
    t = now;
  }
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  times.sort((a, b) => a - b);
  return {
    name,
    requestsPerSecond: round((times.length / wall) * 1000),
    p50Ms: round(times[Math.floor(times.length * 0.5)]),
    p99Ms: round(times[Math.floor(times.length * 0.99)]),
    cpuMsPerRequest: round((used.user + used.system) / 1000 / times.length),
  };
}

const round = (n) => Math.round(n * 100) / 100;
const noop = () => {};
const tokenizer = micro('tokenizer only (htmlparser2, empty callbacks)', () =>
  new Parser({ onopentag: noop, ontext: noop, onclosetag: noop }, { xmlMode: false, decodeEntities: true }).end(page),
);
const streaming = micro('streaming extractor (extractPage)', () => extractPage(page, PAGE_URL));
const dom = micro('old DOM extractor (cheerio, summary + extract)', () => {
  reference.referenceSummarizeHtml(page, PAGE_URL);
  reference.referenceExtractHtml(page, PAGE_URL);
});
const domSummaryOnly = micro('old DOM extractor (cheerio, summary only)', () => reference.referenceSummarizeHtml(page, PAGE_URL));
// The streaming pass must agree with the oracle on the page it is timed on, or the numbers mean nothing.
const same =
  JSON.stringify(extractPage(page, PAGE_URL)) ===
  JSON.stringify({ summary: reference.referenceSummarizeHtml(page, PAGE_URL), extraction: reference.referenceExtractHtml(page, PAGE_URL) });
if (!same) throw new Error('streaming extractor and DOM extractor disagree on the benchmark page');

// ---------------------------------------------------------------------------
// 2. Over HTTP

const children = [];
function start(args, env = {}) {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  return child;
}
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** CPU seconds (user + system, all threads) a child has used so far, from /proc (Linux). */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return Number.NaN;
  }
}

async function summarizer(env = {}) {
  const port = await freePort();
  const child = start([join(root, 'apps/summarizer/dist/server.js')], {
    SUMMARIZER_PORT: String(port),
    SUMMARIZER_ALLOW_PRIVATE: 'true',
    SUMMARIZER_RATE_LIMIT_PER_MINUTE: '100000000',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    ...env,
  });
  await waitFor(`http://127.0.0.1:${port}/health`);
  return { url: `http://127.0.0.1:${port}/api/summarize`, pid: child.pid };
}

const [fixturePort, barePort] = [await freePort(), await freePort()];
start([join(here, 'lib/fixture-server.mjs'), String(fixturePort)]);
const bareChild = start([join(here, 'lib/bare-fetcher.mjs'), String(barePort)]);
const freshUrl = `http://127.0.0.1:${fixturePort}/article`;
const etagUrl = `http://127.0.0.1:${fixturePort}/article-etag`;
await Promise.all([waitFor(freshUrl), waitFor(`http://127.0.0.1:${barePort}/`).catch(() => {})]);
const inProcess = await summarizer({ SUMMARIZER_WORKERS: '0' });
const pooled = await summarizer({ SUMMARIZER_WORKERS: 'auto', SUMMARIZER_WORKER_MIN_BYTES: '0' });

function run(name, url, pid, pageUrl, seconds = duration) {
  return new Promise((resolve, reject) => {
    const cpuBefore = cpuMs(pid);
    autocannon(
      {
        url,
        method: 'POST',
        connections,
        duration: seconds,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: pageUrl }),
      },
      (err, result) =>
        err
          ? reject(err)
          : resolve({
              name,
              requestsPerSecond: result.requests.average,
              p50Ms: result.latency.p50,
              p99Ms: result.latency.p99,
              cpuMsPerRequest: round((cpuMs(pid) - cpuBefore) / Math.max(1, result.requests.total)),
              errors: result.errors,
              non2xx: result.non2xx,
            }),
    );
  });
}

const bareUrl = `http://127.0.0.1:${barePort}/`;
// Warm up (JIT, connection pools, the revalidation cache) before measuring.
const warm = Math.min(3, duration);
await run('warm-up', bareUrl, bareChild.pid, freshUrl, warm);
await run('warm-up', inProcess.url, inProcess.pid, freshUrl, warm);
await run('warm-up', inProcess.url, inProcess.pid, etagUrl, warm);
await run('warm-up', pooled.url, pooled.pid, freshUrl, warm);

const bare = await run('bare node:http fetch', bareUrl, bareChild.pid, freshUrl);
const fresh = await run('summarize, fresh page (in-process)', inProcess.url, inProcess.pid, freshUrl);
const freshPool = await run('summarize, fresh page (pool forced)', pooled.url, pooled.pid, freshUrl);
const stats0 = await (await fetch(`http://127.0.0.1:${fixturePort}/stats`)).json();
const revalidated = await run('summarize, revalidated page (304)', inProcess.url, inProcess.pid, etagUrl);
const stats1 = await (await fetch(`http://127.0.0.1:${fixturePort}/stats`)).json();

const ratios = {
  streamingVsDomExtractor: round(streaming.requestsPerSecond / dom.requestsPerSecond),
  streamingVsDomSummaryOnly: round(streaming.requestsPerSecond / domSummaryOnly.requestsPerSecond),
  streamingVsTokenizerFloor: round(streaming.requestsPerSecond / tokenizer.requestsPerSecond),
  freshVsBare: round(fresh.requestsPerSecond / bare.requestsPerSecond),
  freshPoolVsFreshInProcess: round(freshPool.requestsPerSecond / fresh.requestsPerSecond),
  revalidatedVsBare: round(revalidated.requestsPerSecond / bare.requestsPerSecond),
};
const revalidation = {
  requests: stats1['article-etag'] - stats0['article-etag'],
  notModified: stats1.notModified - stats0.notModified,
};

console.log(`\nIn-process, one ${Math.round(page.length / 1024)} KB page, ${microSeconds}s each:`);
console.table([tokenizer, streaming, dom, domSummaryOnly]);
console.log(`\nOver HTTP, concurrency ${connections}, ${duration}s each:`);
console.table([bare, fresh, freshPool, revalidated]);
console.log('ratios (req/s):', ratios);
console.log(`revalidated run: ${revalidation.notModified} of ${revalidation.requests} upstream requests answered 304`);

mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(
  join(here, 'results', 'summarizer.json'),
  JSON.stringify(
    {
      at: new Date().toISOString(),
      connections,
      duration,
      pageBytes: page.length,
      extractors: { tokenizer, streaming, dom, domSummaryOnly },
      http: { bare, fresh, freshPool, revalidated },
      revalidation,
      ratios,
    },
    null,
    2,
  ),
);
process.exit(0);
