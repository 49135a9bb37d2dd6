import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type RunningService, request, tempDataDir, testEnv } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSummarizerConfig } from '../config.js';
import { startSummarizer as startTestSummarizer } from '../summarizer.test-support.js';
import { fetchPage } from '../services/fetch-page.js';
import { ExtractFailedError, PageService } from '../services/page-service.js';
import { extractPage } from '../services/summarize.js';

const LAST_MODIFIED = 'Wed, 01 Jan 2025 00:00:00 GMT';

/** A page per path whose body depends on the path and a version; answers 304 when the validators match. */
async function revalidatingSite() {
  const seen: { url: string; headers: IncomingHttpHeaders; status: number }[] = [];
  const versions = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    const version = versions.get(path) ?? 1;
    // The same ETag on every path: the cache must tell pages apart by URL, not by validator.
    const etag = `"v${version}"`;
    const byDate = path.startsWith('/dated/');
    const match = byDate ? req.headers['if-modified-since'] === LAST_MODIFIED : req.headers['if-none-match'] === etag;
    const status = match ? 304 : 200;
    seen.push({ url: path, headers: req.headers, status });
    const validators = byDate ? { 'last-modified': LAST_MODIFIED } : { etag };
    if (match) {
      res.writeHead(304, validators);
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...validators });
    res.end(
      `<html><head><title>Page ${path} v${version}</title></head><body><h1>Heading of ${path}</h1>` +
        `<p>Paragraph of ${path}, version ${version}, long enough.</p>${'<p>filler words here</p>'.repeat(100)}</body></html>`,
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    base: `http://127.0.0.1:${port}`,
    seen,
    bump: (path: string) => versions.set(path, (versions.get(path) ?? 1) + 1),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Private addresses allowed (the local site) and a rate limit the tests never reach. */
const startSummarizer = (env: Record<string, string>) =>
  startTestSummarizer({ SUMMARIZER_ALLOW_PRIVATE: 'true', SUMMARIZER_RATE_LIMIT_PER_MINUTE: '10000', ...env });

describe('revalidation cache', () => {
  let site: Awaited<ReturnType<typeof revalidatingSite>>;
  let svc: RunningService;
  let tiny: RunningService;

  beforeAll(async () => {
    site = await revalidatingSite();
    svc = await startSummarizer({});
    tiny = await startSummarizer({ SUMMARIZER_CACHE_MAX_ENTRIES: '1' });
  });
  afterAll(async () => {
    await svc.close();
    await tiny.close();
    await site.close();
  });

  const summarize = (s: RunningService, url: string) => request(`${s.url}/api/summarize`, { json: { url } });
  const hits = (path: string) => site.seen.filter((r) => r.url === path);

  it('sends If-None-Match on the second request and reuses the extraction on 304', async () => {
    const url = `${site.base}/etag/one`;
    const first = await summarize(svc, url);
    const second = await summarize(svc, url);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    const { fetchedAt: _a, ...firstBody } = first.body;
    const { fetchedAt: _b, ...secondBody } = second.body;
    expect(secondBody).toEqual(firstBody);
    expect(firstBody.title).toBe('Page /etag/one v1');
    const [a, b] = hits('/etag/one');
    expect(hits('/etag/one')).toHaveLength(2);
    expect(a?.headers['if-none-match']).toBeUndefined();
    expect(b?.headers['if-none-match']).toBe('"v1"');
    expect(b?.status).toBe(304);
  });

  it('sends If-Modified-Since for a page with only Last-Modified', async () => {
    const url = `${site.base}/dated/one`;
    const first = await summarize(svc, url);
    const second = await summarize(svc, url);
    expect(second.body.title).toBe(first.body.title);
    expect(hits('/dated/one').map((r) => [r.headers['if-modified-since'], r.status])).toEqual([
      [undefined, 200],
      [LAST_MODIFIED, 304],
    ]);
  });

  it('serves /api/extract from the same cached pass', async () => {
    const url = `${site.base}/etag/extract`;
    await summarize(svc, url);
    const res = await request(`${svc.url}/api/extract`, { json: { url } });
    expect(res.status).toBe(200);
    expect(res.body.links).toEqual([]);
    expect(hits('/etag/extract').map((r) => r.status)).toEqual([200, 304]);
  });

  it('never mixes up two URLs that share an ETag', async () => {
    const [a, b] = [`${site.base}/etag/a`, `${site.base}/etag/b`];
    for (let round = 0; round < 2; round++) {
      expect((await summarize(svc, a)).body.title).toBe('Page /etag/a v1');
      expect((await summarize(svc, b)).body.title).toBe('Page /etag/b v1');
    }
    expect(hits('/etag/a').map((r) => r.status)).toEqual([200, 304]);
    expect(hits('/etag/b').map((r) => r.status)).toEqual([200, 304]);
  });

  it('picks up a changed page (new ETag → 200) and caches the new version', async () => {
    const url = `${site.base}/etag/changing`;
    await summarize(svc, url);
    site.bump('/etag/changing');
    expect((await summarize(svc, url)).body.title).toBe('Page /etag/changing v2');
    expect((await summarize(svc, url)).body.title).toBe('Page /etag/changing v2');
    expect(hits('/etag/changing').map((r) => [r.headers['if-none-match'], r.status])).toEqual([
      [undefined, 200],
      ['"v1"', 200],
      ['"v2"', 304],
    ]);
  });

  it('evicts past SUMMARIZER_CACHE_MAX_ENTRIES: an evicted page is fetched unconditionally', async () => {
    const [x, y] = [`${site.base}/etag/x`, `${site.base}/etag/y`];
    await summarize(tiny, x);
    await summarize(tiny, y); // evicts x
    expect((await summarize(tiny, x)).body.title).toBe('Page /etag/x v1');
    expect((await summarize(tiny, x)).body.title).toBe('Page /etag/x v1');
    expect(hits('/etag/x').map((r) => [r.headers['if-none-match'], r.status])).toEqual([
      [undefined, 200],
      [undefined, 200],
      ['"v1"', 304],
    ]);
  });

  it('still runs the SSRF guard when it has validators to send', async () => {
    const before = site.seen.length;
    await expect(
      fetchPage(`${site.base}/etag/one`, {
        userAgent: 't',
        timeoutMs: 2000,
        maxBytes: 1e6,
        maxRedirects: 1,
        allowPrivate: false,
        validatorsFor: () => ({ etag: '"v1"' }),
      }),
    ).rejects.toMatchObject({ status: 400, message: 'Refusing to fetch a private or loopback address' });
    expect(site.seen.length).toBe(before);
  });
});

describe('extraction worker pool', () => {
  let site: Awaited<ReturnType<typeof revalidatingSite>>;
  beforeAll(async () => {
    site = await revalidatingSite();
  });
  afterAll(async () => {
    await site.close();
  });

  const fetchOptions = { userAgent: 't', timeoutMs: 5000, maxBytes: 1e7, maxRedirects: 1, allowPrivate: true };
  const cache = { maxEntries: 0, maxBytes: 0, maxAgeMs: 0 };

  it('extracts big pages in workers with the same result, and survives a crashing worker', async () => {
    const pages = new PageService({ fetch: fetchOptions, cache, workers: 2, workerMinBytes: 1000 });
    try {
      const url = `${site.base}/pool/one`;
      expect(pages.pool?.started).toBe(0); // workers start on first use
      const pooled = await pages.load(url);
      expect(pages.pool?.started).toBe(1);
      const page = await fetchPage(url, fetchOptions);
      expect(pooled).toStrictEqual(extractPage(page.html, page.url));

      const crashed = pages.load(url, { crashWorker: true });
      await expect(crashed).rejects.toBeInstanceOf(ExtractFailedError);
      await expect(crashed).rejects.toThrow(/^Failed to parse http:\/\/127\.0\.0\.1:\d+\/pool\/one: Extract worker exited with code 70$/);
      expect(pages.pool?.replaced).toBe(1);

      // The replacement (and the surviving worker) keep serving, several at once.
      const again = await Promise.all([pages.load(url), pages.load(url), pages.load(url)]);
      for (const result of again) expect(result).toStrictEqual(pooled);
    } finally {
      await pages.close();
    }
    await expect(pages.pool?.run('<p>x</p>', 'http://x/')).rejects.toThrow(/closed/);
  });

  it('the service starts and stops its workers with the app', async () => {
    const svc = await startSummarizer({ SUMMARIZER_WORKERS: '2', SUMMARIZER_WORKER_MIN_BYTES: '1000' });
    try {
      const res = await request(`${svc.url}/api/summarize`, { json: { url: `${site.base}/pool/app` } });
      expect(res.status).toBe(200);
      expect(res.body.title).toBe('Page /pool/app v1');
    } finally {
      await svc.close();
    }
  });

  it('reads SUMMARIZER_WORKERS as a count or auto, 0 and 1 meaning in-process', () => {
    const data = tempDataDir();
    try {
      const workers = (value: string) => loadSummarizerConfig(testEnv(data.dir, { SUMMARIZER_WORKERS: value })).workers;
      expect(workers('0')).toBe(0);
      expect(workers('1')).toBe(0);
      expect(workers('3')).toBe(3);
      expect(workers('auto')).toBeGreaterThanOrEqual(0);
      expect(() => workers('many')).toThrow(/SUMMARIZER_WORKERS/);
    } finally {
      data.remove();
    }
  });
});
