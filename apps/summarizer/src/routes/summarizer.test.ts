import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type RunningService, request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSummarizer } from '../summarizer.test-support.js';

const RICH = readFileSync(new URL('../../test-fixtures/rich-page.html', import.meta.url), 'utf8');

/** The fixture site the summarizer fetches from, on 127.0.0.1. */
async function fixtureSite() {
  const seen: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req);
    const html = (body: string, status = 200) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
      res.end(body);
    };
    switch (req.url) {
      case '/rich':
        return html(RICH);
      case '/h1-only':
        return html('<html><body><h1>Only a heading</h1><p>Short.</p></body></html>');
      case '/hop1':
        res.writeHead(302, { location: '/hop2' });
        return res.end();
      case '/hop2':
        res.writeHead(301, { location: '/h1-only' });
        return res.end();
      case '/missing':
        return html('<h1>Not here</h1>', 404);
      case '/json':
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{"not":"html"}');
      case '/slow':
        setTimeout(() => html('<title>late</title>'), 2_000);
        return;
      case '/latin1':
        res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' });
        return res.end(Buffer.concat([Buffer.from('<title>Caf'), Buffer.from([0xe9]), Buffer.from('</title>')]));
      default:
        return html('<h1>?</h1>', 404);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { base: `http://127.0.0.1:${port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

// Spec §4.7 and §8 (summarizer limits).
describe('summarizer service', () => {
  let site: Awaited<ReturnType<typeof fixtureSite>>;
  let open: RunningService;
  let guarded: RunningService;

  beforeAll(async () => {
    site = await fixtureSite();
    open = await startSummarizer({
      SUMMARIZER_ALLOW_PRIVATE: 'true',
      SUMMARIZER_FETCH_TIMEOUT_MS: '400',
      PRODUCT_NAME: 'acme',
      SUMMARIZER_PAY_TO: '0x1111111111111111111111111111111111111111',
    });
    guarded = await startSummarizer({ SUMMARIZER_RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(async () => {
    await open.close();
    await guarded.close();
    await site.close();
  });

  const summarize = (svc: RunningService, body: unknown) => request(`${svc.url}/api/summarize`, { json: body });
  const extract = (svc: RunningService, body: unknown) => request(`${svc.url}/api/extract`, { json: body });

  it('GET / describes the service, its endpoints and payment details', async () => {
    const res = await request(`${open.url}/`);
    expect(res.status).toBe(200);
    expect(res.body.service).toBe('acme-web-summarizer');
    expect(typeof res.body.description).toBe('string');
    expect(Object.keys(res.body.endpoints)).toEqual(expect.arrayContaining(['POST /api/summarize', 'POST /api/extract']));
    expect(res.body.payment).toEqual({
      network: 'base',
      currency: 'USDC',
      payTo: '0x1111111111111111111111111111111111111111',
      note: expect.any(String),
    });
  });

  it('GET /health', async () => {
    const res = await request(`${open.url}/health`);
    expect(res.body).toEqual({ status: 'ok', service: 'acme-web-summarizer', version: '1.0.0' });
  });

  it('POST /api/summarize returns the summary of a page, fetched with the product user-agent', async () => {
    const url = `${site.base}/rich`;
    const res = await summarize(open, { url });
    expect(res.status).toBe(200);
    expect(res.body.url).toBe(url);
    expect(res.body.title).toBe('The Rich Fixture Page');
    expect(res.body.description).toBe('A page that exercises every summarizer rule.');
    expect(res.body.headings.length).toBeGreaterThan(0);
    expect(res.body.headings.length).toBeLessThanOrEqual(20);
    expect(new Set(res.body.headings).size).toBe(res.body.headings.length);
    expect(res.body.paragraphs.length).toBeLessThanOrEqual(10);
    expect(new Set(res.body.paragraphs).size).toBe(res.body.paragraphs.length);
    expect(res.body.wordCount).toBeGreaterThan(50);
    expect(new Date(res.body.fetchedAt).toISOString()).toBe(res.body.fetchedAt);
    const req = site.seen.at(-1)!;
    expect(req.headers['user-agent']).toBe('acme-WebSummarizer/1.0');
  });

  it('POST /api/extract returns absolute, deduplicated, capped links and images, and meta tags', async () => {
    const res = await extract(open, { url: `${site.base}/rich` });
    expect(res.status).toBe(200);
    expect(res.body.links).toHaveLength(50);
    expect(res.body.images).toHaveLength(20);
    for (const link of res.body.links) {
      expect(() => new URL(link.href)).not.toThrow();
      expect(link.text.length).toBeLessThanOrEqual(100);
      expect(link.href.toLowerCase().startsWith('javascript:')).toBe(false);
    }
    expect(new Set(res.body.links.map((l: { href: string }) => l.href)).size).toBe(50);
    expect(res.body.links).toContainEqual({ href: `${site.base}/about`, text: 'About us' });
    for (const img of res.body.images) expect(img.alt.length).toBeLessThanOrEqual(100);
    expect(res.body.meta['og:title']).toBe('Rich Fixture (OG)');
    expect(res.body.meta['twitter:card']).toBe('summary_large_image');
    expect(res.body.meta.description).toBe('A page that exercises every summarizer rule.');
    expect(res.body.meta.keywords).toBeUndefined();
  });

  it('takes the first h1 as title when there is no title tag, following redirects', async () => {
    const res = await summarize(open, { url: `${site.base}/hop1` });
    expect(res.status).toBe(200);
    expect(res.body.title).toBe('Only a heading');
  });

  it('decodes the declared charset', async () => {
    const res = await summarize(open, { url: `${site.base}/latin1` });
    expect(res.body.title).toBe('Café');
  });

  it.each([
    ['a 404', '/missing', /^HTTP 404 fetching http:\/\/127\.0\.0\.1:\d+\/missing$/],
    ['a non-HTML type', '/json', /application\/json/],
    ['a page slower than the timeout', '/slow', /Timed out/],
  ])('500 with a clear message for %s', async (_name, path, message) => {
    const res = await summarize(open, { url: `${site.base}${path}` });
    expect(res.status).toBe(500);
    expect(res.body.error).toMatch(message);
  });

  it.each([
    ['no body', undefined],
    ['an empty url', { url: '' }],
    ['a blank url', { url: '   ' }],
    ['a url that is not a string', { url: 42 }],
    ['no url field', { href: 'http://example.com' }],
  ])('400 url required with %s', async (_name, body) => {
    const res = body === undefined ? await request(`${open.url}/api/extract`, { method: 'POST' }) : await extract(open, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'url required' });
  });

  it('400 url required when the body is not JSON', async () => {
    const res = await request(`${open.url}/api/summarize`, {
      body: 'url=http://example.com',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'url required' });
  });

  it.each(['ftp://example.com/file', 'file:///etc/passwd', 'not a url', 'javascript:alert(1)'])('400 for %s', async (url) => {
    const res = await summarize(open, { url });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/url/i);
  });

  it('by default refuses loopback, private and metadata addresses before connecting', async () => {
    const before = site.seen.length;
    for (const url of [`${site.base}/rich`, 'http://169.254.169.254/latest/meta-data/']) {
      const res = await summarize(guarded, { url });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/private|loopback|refus/i);
    }
    expect(site.seen.length).toBe(before);
  });

  it('rate limits per IP with RateLimit-* headers', async () => {
    const res = await summarize(guarded, { url: 'http://10.0.0.1/' });
    expect(res.headers.get('ratelimit-limit')).toBe('3');
    expect(res.headers.get('ratelimit-remaining')).toBe('0');
    const over = await summarize(guarded, { url: 'http://10.0.0.1/' });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'Too many requests' });
    expect((await request(`${guarded.url}/health`)).status).toBe(200);
  });
});
