import dns from 'node:dns';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FetchPageOptions } from './fetch-page.js';
import { decodeHtml, FetchPageError, fetchPage, isPublicAddress } from './fetch-page.js';

// ---------------------------------------------------------------------------
// Local test server: every route the tests fetch, and a log of what reached it.

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface SeenRequest {
  path: string;
  headers: IncomingHttpHeaders;
}

const PAGE = '<!doctype html><html><head><title>Hello</title></head><body><p>café – ok</p></body></html>';
const LATIN1_HTML = (before: string) =>
  Buffer.concat([Buffer.from(`${before}<p>caf`, 'latin1'), Buffer.from([0xe9, 0x20, 0x80]), Buffer.from('</p>')]);
// "こんにちは" in Shift_JIS.
const SJIS_HELLO = Buffer.from([0x82, 0xb1, 0x82, 0xf1, 0x82, 0xc9, 0x82, 0xbf, 0x82, 0xcd]);

const seen: SeenRequest[] = [];
let connections = 0;
const pendingTimers = new Set<NodeJS.Timeout>();
let server: http.Server;
let base = '';

/** setTimeout that is cleared if the client goes away, so a stalled route can't outlive its test. */
function later(req: IncomingMessage, ms: number, fn: () => void): void {
  const timer = setTimeout(() => {
    pendingTimers.delete(timer);
    fn();
  }, ms);
  pendingTimers.add(timer);
  req.on('close', () => {
    clearTimeout(timer);
    pendingTimers.delete(timer);
  });
}

function html(res: ServerResponse, body: string | Buffer, contentType = 'text/html; charset=utf-8', status = 200): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

function redirect(res: ServerResponse, status: number, location: string): void {
  res.writeHead(status, { Location: location, 'Content-Type': 'text/html' });
  res.end('<p>moved</p>');
}

function compressed(res: ServerResponse, encoding: string, body: Buffer): void {
  res.writeHead(200, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Encoding': encoding,
  });
  res.end(body);
}

/** Resolves when the client closes a streaming response (i.e. stopped reading). */
let endlessClosed: Promise<void> = Promise.resolve();

const routes: Record<string, Handler> = {
  '/page': (_req, res) => html(res, PAGE),
  '/xhtml': (_req, res) => html(res, '<html><title>x</title></html>', 'APPLICATION/XHTML+XML; Charset=UTF-8'),
  '/json': (_req, res) => html(res, '{"a":1}', 'application/json'),
  '/plain': (_req, res) => html(res, 'just text', 'text/plain; charset=utf-8'),
  '/no-type': (_req, res) => {
    res.writeHead(200, { 'Content-Length': 4 });
    res.end('<p/>');
  },
  '/missing': (_req, res) => html(res, '<h1>Not found</h1>', 'text/html', 404),
  '/error': (_req, res) => html(res, '<h1>Oops</h1>', 'text/html', 500),
  '/no-location': (_req, res) => html(res, '<p>no location</p>', 'text/html', 302),

  // Redirect chain: absolute, relative, root-relative with query, protocol-relative, dot-segments.
  '/chain/a': (_req, res) => redirect(res, 301, `${base}/chain/b`),
  '/chain/b': (_req, res) => redirect(res, 302, 'c'),
  '/chain/c': (_req, res) => redirect(res, 303, '/chain/d?x=1'),
  '/chain/d': (_req, res) => redirect(res, 307, `//${new URL(base).host}/chain/e`),
  '/chain/e': (_req, res) => redirect(res, 308, '../final'),
  '/final': (_req, res) => html(res, '<title>Final</title>'),
  '/to-missing': (_req, res) => redirect(res, 302, '/missing'),
  '/to-ftp': (_req, res) => redirect(res, 302, 'ftp://example.com/file'),
  '/to-file': (_req, res) => redirect(res, 301, 'file:///etc/passwd'),
  '/to-other-host': (_req, res) => redirect(res, 302, `http://second.test:${new URL(base).port}/page`),
  '/to-slow-hop': (req, res) => later(req, 150, () => redirect(res, 302, '/to-slow-hop')),

  // Timeouts.
  '/slow': (req, res) => later(req, 2000, () => html(res, PAGE)),
  '/stall-body': (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.write('<html><body><p>first bytes…'); // and never ends
  },

  // Size caps.
  '/big': (_req, res) => html(res, `<html><body>${'x'.repeat(50_000)}</body></html>`),
  '/big-chunked': (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' }); // no Content-Length: chunked
    for (let i = 0; i < 50; i++) res.write('y'.repeat(1000));
    res.end();
  },
  '/endless': (req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    const timer = setInterval(() => res.write('z'.repeat(1000)), 5);
    endlessClosed = new Promise((resolve) =>
      res.on('close', () => {
        clearInterval(timer);
        resolve();
      }),
    );
    req.resume();
  },
  '/exact': (_req, res) => html(res, 'e'.repeat(10_000)),
  '/bomb': (_req, res) => compressed(res, 'gzip', zlib.gzipSync(Buffer.alloc(5_000_000, 'a'))),

  // Content encodings.
  '/gzip': (_req, res) => compressed(res, 'gzip', zlib.gzipSync(PAGE)),
  '/deflate': (_req, res) => compressed(res, 'deflate', zlib.deflateSync(PAGE)),
  '/br': (_req, res) => compressed(res, 'br', zlib.brotliCompressSync(PAGE)),
  '/bad-gzip': (_req, res) => compressed(res, 'gzip', Buffer.from('this is not gzip data at all')),
  '/zstd': (_req, res) => compressed(res, 'zstd', Buffer.from('whatever')),
  '/reset-mid-body': (req, res) => {
    res.writeHead(200, {
      'Content-Type': 'text/html',
      'Content-Length': 100_000,
    });
    res.write('<p>partial', () => later(req, 20, () => req.socket.destroy()));
  },

  // Charsets.
  '/windows-1252': (_req, res) => html(res, LATIN1_HTML(''), 'text/html; charset=windows-1252'),
  '/iso-8859-1': (_req, res) => html(res, LATIN1_HTML(''), 'text/html; charset="ISO-8859-1"'),
  '/meta-charset': (_req, res) => html(res, LATIN1_HTML('<meta charset="windows-1252">'), 'text/html'),
  '/meta-http-equiv': (_req, res) =>
    html(res, LATIN1_HTML('<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'), 'text/html'),
  '/meta-too-late': (_req, res) => html(res, LATIN1_HTML(`<!--${' '.repeat(3000)}--><meta charset="windows-1252">`), 'text/html'),
  '/header-beats-meta': (_req, res) => html(res, '<meta charset="windows-1252"><p>café</p>', 'text/html; charset=utf-8'),
  '/no-charset': (_req, res) => html(res, '<p>café</p>', 'text/html'),
  '/unknown-charset': (_req, res) => html(res, '<p>café</p>', 'text/html; charset=x-no-such-charset'),
  '/shift-jis': (_req, res) =>
    html(res, Buffer.concat([Buffer.from('<p>'), SJIS_HELLO, Buffer.from('</p>')]), 'text/html; charset=Shift_JIS'),
};

function handle(req: IncomingMessage, res: ServerResponse): void {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  seen.push({ path, headers: req.headers });
  const loop = /^\/loop\/(\d+)$/.exec(path);
  const route = routes[path];
  if (loop) redirect(res, 302, `/loop/${Number(loop[1]) + 1}`);
  else if (route) route(req, res);
  else html(res, 'no such route', 'text/plain', 404);
}

const OPTS: FetchPageOptions = {
  userAgent: 'service-WebSummarizer/1.0',
  timeoutMs: 5_000,
  maxBytes: 5 * 1024 * 1024,
  maxRedirects: 5,
  allowPrivate: true,
};

/** The FetchPageError fetchPage rejects with; fails the test if it resolves or throws anything else. */
async function fetchError(url: string, overrides: Partial<FetchPageOptions> = {}): Promise<FetchPageError> {
  const outcome = await fetchPage(url, { ...OPTS, ...overrides }).then(
    (page) => ({ page }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected fetchPage(${url}) to fail, got ${outcome.page.url}`);
  expect(outcome.error).toBeInstanceOf(FetchPageError);
  return outcome.error as FetchPageError;
}

/** A port nothing listens on: bind one, then close it. */
async function closedPort(): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

type LookupResult = { address: string; family: number }[];
/** Replaces dns.promises.lookup (which fetchPage calls per hop) so tests never touch real DNS. */
function mockDns(impl: (host: string) => Promise<LookupResult>) {
  return vi.spyOn(dns.promises, 'lookup').mockImplementation(((host: string) => impl(host)) as never);
}

/** Makes any outgoing request an immediate failure, so a broken guard can't send traffic anywhere. */
function blockOutgoingRequests() {
  const fail = () => {
    throw new Error('network disabled in this test');
  };
  return [vi.spyOn(http, 'request').mockImplementation(fail), vi.spyOn(https, 'request').mockImplementation(fail)];
}

// Anything that escapes as an unhandled rejection or uncaught 'error' event lands here.
const leaked: unknown[] = [];
const onLeak = (err: unknown) => leaked.push(err);

beforeAll(async () => {
  process.on('unhandledRejection', onLeak);
  process.on('uncaughtException', onLeak);
  server = http.createServer(handle);
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

beforeEach(() => {
  seen.length = 0;
  connections = 0;
});

afterEach(() => {
  vi.restoreAllMocks();
});

afterAll(async () => {
  for (const timer of pendingTimers) clearTimeout(timer);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  // Give late socket/zlib errors a chance to surface before checking.
  await new Promise((resolve) => setTimeout(resolve, 100));
  process.off('unhandledRejection', onLeak);
  process.off('uncaughtException', onLeak);
  expect(leaked).toEqual([]);
});

// ---------------------------------------------------------------------------

describe('fetchPage: a normal page', () => {
  it('returns the HTML, final URL and content type', async () => {
    const page = await fetchPage(`${base}/page`, OPTS);
    expect(page).toEqual({
      url: `${base}/page`,
      html: PAGE,
      contentType: 'text/html; charset=utf-8',
    });
  });

  it('sends the User-Agent, Accept and Accept-Encoding headers', async () => {
    await fetchPage(`${base}/page`, OPTS);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.headers['user-agent']).toBe('service-WebSummarizer/1.0');
    expect(seen[0]?.headers.accept).toBe('text/html,application/xhtml+xml');
    expect(seen[0]?.headers['accept-encoding']).toBe('gzip, deflate, br');
  });

  it('accepts application/xhtml+xml regardless of case and parameters', async () => {
    const page = await fetchPage(`${base}/xhtml`, OPTS);
    expect(page.html).toBe('<html><title>x</title></html>');
  });
});

describe('fetchPage: URL validation', () => {
  for (const url of ['ftp://example.com/file', 'file:///etc/passwd', 'not a url', '', 'javascript:alert(1)', 'data:text/html,hi']) {
    it(`rejects ${JSON.stringify(url)} with 400 before any DNS or network`, async () => {
      const lookup = mockDns(async () => []);
      const requests = blockOutgoingRequests();
      const err = await fetchError(url);
      expect(err.status).toBe(400);
      expect(err.message).toBe('Invalid url: must be an http(s) URL');
      expect(lookup).not.toHaveBeenCalled();
      for (const spy of requests) expect(spy).not.toHaveBeenCalled();
    });
  }
});

describe('fetchPage: redirects', () => {
  it('follows 301/302/303/307/308 with absolute and relative Locations', async () => {
    const page = await fetchPage(`${base}/chain/a`, OPTS);
    expect(page.url).toBe(`${base}/final`);
    expect(page.html).toBe('<title>Final</title>');
    expect(seen.map((r) => r.path)).toEqual(['/chain/a', '/chain/b', '/chain/c', '/chain/d', '/chain/e', '/final']);
  });

  it('fails with "Too many redirects" one hop past maxRedirects', async () => {
    const err = await fetchError(`${base}/chain/a`, { maxRedirects: 4 });
    expect(err.status).toBe(500);
    expect(err.message).toBe('Too many redirects');
  });

  it('stops an endless redirect loop after maxRedirects hops', async () => {
    const err = await fetchError(`${base}/loop/0`, { maxRedirects: 3 });
    expect(err.message).toBe('Too many redirects');
    expect(seen.map((r) => r.path)).toEqual(['/loop/0', '/loop/1', '/loop/2', '/loop/3']);
  });

  it('follows no redirect at all with maxRedirects 0', async () => {
    const err = await fetchError(`${base}/to-missing`, { maxRedirects: 0 });
    expect(err.message).toBe('Too many redirects');
    expect(seen).toHaveLength(1);
  });

  it('reports the final URL in an HTTP error after a redirect', async () => {
    const err = await fetchError(`${base}/to-missing`);
    expect(err.message).toBe(`HTTP 404 fetching ${base}/missing`);
  });

  it('refuses redirects to non-http schemes with 400', async () => {
    for (const path of ['/to-ftp', '/to-file']) {
      const err = await fetchError(`${base}${path}`);
      expect(err.status).toBe(400);
      expect(err.message).toBe('Invalid url: must be an http(s) URL');
    }
  });

  it('treats a redirect status without Location as a final HTTP error', async () => {
    const err = await fetchError(`${base}/no-location`);
    expect(err.message).toBe(`HTTP 302 fetching ${base}/no-location`);
  });
});

describe('fetchPage: status and content type', () => {
  it('fails a 404 with "HTTP 404 fetching <url>"', async () => {
    const err = await fetchError(`${base}/missing`);
    expect(err.status).toBe(500);
    expect(err.message).toBe(`HTTP 404 fetching ${base}/missing`);
  });

  it('fails a 500 the same way', async () => {
    expect((await fetchError(`${base}/error`)).message).toBe(`HTTP 500 fetching ${base}/error`);
  });

  it('rejects non-HTML content types', async () => {
    const json = await fetchError(`${base}/json`);
    expect(json.status).toBe(500);
    expect(json.message).toBe(`Unsupported content type application/json at ${base}/json`);
    expect((await fetchError(`${base}/plain`)).message).toBe(`Unsupported content type text/plain at ${base}/plain`);
    expect((await fetchError(`${base}/no-type`)).message).toBe(`Unsupported content type (none) at ${base}/no-type`);
  });
});

describe('fetchPage: timeout', () => {
  it('gives up on a server that is slow to answer', async () => {
    const started = Date.now();
    const err = await fetchError(`${base}/slow`, { timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(err.status).toBe(500);
    expect(err.message).toBe(`Timed out after 0.3s fetching ${base}/slow`);
  });

  it('gives up on a body that stalls after the headers', async () => {
    const started = Date.now();
    const err = await fetchError(`${base}/stall-body`, { timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(err.message).toBe(`Timed out after 0.3s fetching ${base}/stall-body`);
  });

  it('applies one deadline across all redirect hops', async () => {
    // Each hop takes 150 ms, well under the limit on its own.
    const err = await fetchError(`${base}/to-slow-hop`, {
      timeoutMs: 400,
      maxRedirects: 50,
    });
    expect(err.message).toBe(`Timed out after 0.4s fetching ${base}/to-slow-hop`);
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen.length).toBeLessThanOrEqual(4);
  });

  it('covers DNS resolution', async () => {
    mockDns(() => new Promise(() => {})); // never answers
    const requests = blockOutgoingRequests();
    const err = await fetchError('http://hangs.test/', { timeoutMs: 200 });
    expect(err.message).toBe('Timed out after 0.2s fetching http://hangs.test/');
    for (const spy of requests) expect(spy).not.toHaveBeenCalled();
  });
});

describe('fetchPage: size cap', () => {
  it('rejects a body past maxBytes (Content-Length)', async () => {
    const err = await fetchError(`${base}/big`, { maxBytes: 10_000 });
    expect(err.status).toBe(500);
    expect(err.message).toBe('Page exceeds 10000 bytes');
  });

  it('rejects a chunked body past maxBytes', async () => {
    const err = await fetchError(`${base}/big-chunked`, { maxBytes: 10_000 });
    expect(err.message).toBe('Page exceeds 10000 bytes');
  });

  it('stops reading an endless body and closes the connection', async () => {
    const err = await fetchError(`${base}/endless`, { maxBytes: 20_000 });
    expect(err.message).toBe('Page exceeds 20000 bytes');
    await endlessClosed; // hangs (test timeout) if the client kept the socket open
  });

  it('accepts a body of exactly maxBytes', async () => {
    const page = await fetchPage(`${base}/exact`, {
      ...OPTS,
      maxBytes: 10_000,
    });
    expect(page.html).toHaveLength(10_000);
  });

  it('caps decompressed bytes: a small gzip bomb fails', async () => {
    const err = await fetchError(`${base}/bomb`, { maxBytes: 100_000 });
    expect(err.message).toBe('Page exceeds 100000 bytes');
  });
});

describe('fetchPage: content encoding', () => {
  for (const encoding of ['gzip', 'deflate', 'br']) {
    it(`decompresses ${encoding}`, async () => {
      const page = await fetchPage(`${base}/${encoding}`, OPTS);
      expect(page.html).toBe(PAGE);
    });
  }

  it('fails cleanly on a corrupt gzip body', async () => {
    const err = await fetchError(`${base}/bad-gzip`);
    expect(err.status).toBe(500);
    expect(err.message).toMatch(new RegExp(`^Failed to fetch ${base}/bad-gzip: \\S`));
  });

  it('rejects an unknown content encoding', async () => {
    expect((await fetchError(`${base}/zstd`)).message).toBe(`Unsupported content encoding zstd at ${base}/zstd`);
  });
});

describe('fetchPage: charset', () => {
  it('decodes windows-1252 from the Content-Type', async () => {
    expect((await fetchPage(`${base}/windows-1252`, OPTS)).html).toBe('<p>café €</p>');
  });

  it('decodes a quoted ISO-8859-1 label (as windows-1252, like browsers)', async () => {
    expect((await fetchPage(`${base}/iso-8859-1`, OPTS)).html).toBe('<p>café €</p>');
  });

  it('uses <meta charset> when the header has none', async () => {
    expect((await fetchPage(`${base}/meta-charset`, OPTS)).html).toBe('<meta charset="windows-1252"><p>café €</p>');
  });

  it('uses <meta http-equiv="Content-Type"> when the header has none', async () => {
    const page = await fetchPage(`${base}/meta-http-equiv`, OPTS);
    expect(page.html).toContain('<p>café €</p>');
  });

  it('only sniffs the first 2 KB for a meta charset', async () => {
    const page = await fetchPage(`${base}/meta-too-late`, OPTS);
    expect(page.html).toContain('<p>caf\uFFFD \uFFFD</p>'); // read as utf-8, where 0xE9 and 0x80 are invalid
  });

  it('lets the header charset win over a meta tag', async () => {
    expect((await fetchPage(`${base}/header-beats-meta`, OPTS)).html).toBe('<meta charset="windows-1252"><p>café</p>');
  });

  it('defaults to utf-8, also for an unknown label', async () => {
    expect((await fetchPage(`${base}/no-charset`, OPTS)).html).toBe('<p>café</p>');
    expect((await fetchPage(`${base}/unknown-charset`, OPTS)).html).toBe('<p>café</p>');
  });

  it('decodes Shift_JIS', async () => {
    expect((await fetchPage(`${base}/shift-jis`, OPTS)).html).toBe('<p>こんにちは</p>');
  });
});

describe('fetchPage: network errors', () => {
  it('reports a refused connection', async () => {
    const port = await closedPort();
    const err = await fetchError(`http://127.0.0.1:${port}/`);
    expect(err.status).toBe(500);
    expect(err.message).toBe(`Failed to fetch http://127.0.0.1:${port}/: ECONNREFUSED`);
  });

  it('reports an unknown host', async () => {
    mockDns(async (host) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), {
        code: 'ENOTFOUND',
      });
    });
    const err = await fetchError('http://no-such-host.test/');
    expect(err.message).toBe('Failed to fetch http://no-such-host.test/: ENOTFOUND');
  });

  it('reports a connection dropped mid-body', async () => {
    const err = await fetchError(`${base}/reset-mid-body`);
    expect(err.status).toBe(500);
    expect(err.message).toMatch(new RegExp(`^Failed to fetch ${base}/reset-mid-body: \\S`));
  });
});

describe('fetchPage: DNS pinning', () => {
  it('connects to the address it resolved, keeping the hostname in Host', async () => {
    const { port } = new URL(base);
    // First lookup answers; any second lookup (a re-resolve at connect time) would fail, as would
    // the system resolver, which doesn't know .test names.
    const lookup = mockDns(async () => {
      throw Object.assign(new Error('resolved twice'), { code: 'EREBIND' });
    });
    lookup.mockImplementationOnce((async () => [{ address: '127.0.0.1', family: 4 }]) as never);

    const page = await fetchPage(`http://pinned.test:${port}/page`, OPTS);
    expect(page.html).toBe(PAGE);
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(seen[0]?.headers.host).toBe(`pinned.test:${port}`);
  });

  it('resolves and checks every redirect hop', async () => {
    const { port } = new URL(base);
    const lookup = mockDns(async () => [{ address: '127.0.0.1', family: 4 }]);

    const page = await fetchPage(`http://first.test:${port}/to-other-host`, OPTS);
    expect(page.url).toBe(`http://second.test:${port}/page`);
    expect(lookup.mock.calls.map((call) => call[0])).toEqual(['first.test', 'second.test']);
    expect(seen.map((r) => r.headers.host)).toEqual([`first.test:${port}`, `second.test:${port}`]);
  });
});

describe('fetchPage: SSRF guard (allowPrivate: false)', () => {
  const guarded = { allowPrivate: false };

  it.each([
    ['127.0.0.1 with the test server port', () => `${base}/page`],
    ['localhost', () => `http://localhost:${new URL(base).port}/page`],
    ['IPv4-mapped loopback', () => `http://[::ffff:127.0.0.1]:${new URL(base).port}/page`],
    ['decimal-encoded loopback', () => `http://2130706433:${new URL(base).port}/page`],
    ['IPv6 loopback', () => 'http://[::1]/'],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data'],
    ['private 10/8', () => 'http://10.0.0.1/'],
    ['private 192.168/16', () => 'http://192.168.1.1/'],
    ['unspecified', () => 'http://0.0.0.0/'],
  ])('refuses %s with 400 and no connection', async (_name, url) => {
    const err = await fetchError(url(), guarded);
    expect(err.status).toBe(400);
    expect(err.message).toBe('Refusing to fetch a private or loopback address');
    expect(connections).toBe(0);
    expect(seen).toHaveLength(0);
  });

  it('refuses metadata.google.internal by name, without resolving it', async () => {
    const lookup = mockDns(async () => [{ address: '8.8.8.8', family: 4 }]);
    const requests = blockOutgoingRequests();
    const err = await fetchError('http://metadata.google.internal./computeMetadata/v1/', guarded);
    expect(err.status).toBe(400);
    expect(lookup).not.toHaveBeenCalled();
    for (const spy of requests) expect(spy).not.toHaveBeenCalled();
  });

  it('refuses a name if any of its addresses is private', async () => {
    mockDns(async () => [
      { address: '8.8.8.8', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ]);
    const requests = blockOutgoingRequests();
    const err = await fetchError('http://mixed.test/', guarded);
    expect(err.status).toBe(400);
    for (const spy of requests) expect(spy).not.toHaveBeenCalled();
  });

  it('refuses a name resolving to IPv6 unique-local', async () => {
    mockDns(async () => [{ address: 'fd00::1', family: 6 }]);
    const requests = blockOutgoingRequests();
    expect((await fetchError('http://ula.test/', guarded)).status).toBe(400);
    for (const spy of requests) expect(spy).not.toHaveBeenCalled();
  });

  it('passes a public name on to the request, pinned to its address', async () => {
    // The request itself is blocked: we only check that the guard let it through.
    mockDns(async () => [{ address: '93.184.215.14', family: 4 }]);
    const [httpRequest] = blockOutgoingRequests();
    const err = await fetchError('http://public.test/', guarded);
    expect(err.message).toBe('Failed to fetch http://public.test/: network disabled in this test');
    expect(httpRequest).toHaveBeenCalledTimes(1);
    const options = httpRequest?.mock.calls[0]?.[1] as http.RequestOptions;
    const pinned = await new Promise<unknown>((resolve) => options.lookup?.('public.test', {}, (_err, address) => resolve(address)));
    expect(pinned).toBe('93.184.215.14');
  });
});

describe('decodeHtml', () => {
  it('maps every windows-1252 byte 0x80-0x9F like the WHATWG table (works around nodejs/node#60888)', () => {
    const bytes = Uint8Array.from({ length: 32 }, (_, i) => 0x80 + i);
    expect(decodeHtml(bytes, 'windows-1252')).toBe('€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008dŽ\u008f\u0090‘’“”•–—˜™š›œ\u009džŸ');
  });

  it('leaves C1 characters alone in other encodings', () => {
    expect(decodeHtml(Buffer.from('a\u0080b', 'utf8'), 'utf-8')).toBe('a\u0080b');
  });

  it('lets a byte-order mark override the declared charset', () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<p>hé</p>', 'utf16le')]);
    expect(decodeHtml(utf16, 'windows-1252')).toBe('<p>hé</p>');
    const utf8 = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('<p>hé</p>')]);
    expect(decodeHtml(utf8, 'windows-1252')).toBe('<p>hé</p>');
  });

  it('reads a meta-declared UTF-16 as utf-8, since the markup was readable as ASCII', () => {
    expect(decodeHtml(Buffer.from('<meta charset="utf-16"><p>hé</p>'))).toBe('<meta charset="utf-16"><p>hé</p>');
  });
});

describe('isPublicAddress', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '11.0.0.1',
    '172.15.255.255',
    '172.32.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '192.169.0.1',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '[2606:4700::1111]',
    '::ffff:8.8.8.8',
  ])('%s is public', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
  });

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local metadata'],
    ['169.254.0.1', 'link-local'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['::1', 'IPv6 loopback'],
    ['[::1]', 'bracketed IPv6 loopback'],
    ['::', 'IPv6 unspecified'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fe80::1', 'IPv6 link-local'],
    ['ff02::1', 'IPv6 multicast'],
    ['2001:db8::1', 'IPv6 documentation'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['not an ip', 'garbage'],
    ['', 'empty'],
  ])('%s (%s) is not public', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });
});
