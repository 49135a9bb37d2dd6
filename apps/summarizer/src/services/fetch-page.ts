/**
 * Fetches one HTML page for the summarizer, defensively: the URL comes from an
 * untrusted caller, so every hop is checked against an SSRF guard, the whole
 * fetch runs under one deadline, and the body is capped and decoded here.
 *
 * Uses node:http(s) rather than global fetch so the connection can be pinned to
 * the address the guard approved (custom `lookup`), and so the body can be
 * streamed and cut off at the byte cap.
 */
import dns from 'node:dns';
import type { IncomingMessage } from 'node:http';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import net from 'node:net';
import type { Transform } from 'node:stream';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TextDecoder } from 'node:util';
import zlib from 'node:zlib';
import ipaddr from 'ipaddr.js';

export interface FetchPageOptions {
  /** Sent as `User-Agent`, e.g. 'service-WebSummarizer/1.0'. */
  userAgent: string;
  /** One deadline for DNS, connect, headers and the whole body, across all redirects. */
  timeoutMs: number;
  /** Cap on the (decompressed) body; reading stops and the fetch fails past it. */
  maxBytes: number;
  /** Redirects followed before giving up. */
  maxRedirects: number;
  /** Turns the SSRF guard off: for local use and tests only. */
  allowPrivate: boolean;
  /**
   * Validators of a copy we already hold for a URL: sent as If-None-Match /
   * If-Modified-Since on the hop to that URL, so an unchanged page costs a 304
   * instead of a download. Asked on every hop, since the final URL is only known
   * after the redirects.
   */
  validatorsFor?: (url: string) => Validators | undefined;
}

/** A response's cache validators, as the server sent them. */
export interface Validators {
  etag?: string;
  lastModified?: string;
}

export interface FetchedPage {
  /** Final URL, after redirects. */
  url: string;
  html: string;
  /** The Content-Type header as the server sent it. */
  contentType: string;
  /** ETag / Last-Modified of the response, when it had them (only set if present). */
  etag?: string;
  lastModified?: string;
  /**
   * Set when the server answered 304 to the validators from `validatorsFor(url)`:
   * the copy held for `url` is still current, and `html` is empty.
   */
  notModified?: true;
}

/** `status` is what the HTTP layer should answer: 400 for the caller's fault, 500 for the page's. */
export class FetchPageError extends Error {
  override readonly name = 'FetchPageError';

  constructor(
    public readonly status: 400 | 500,
    message: string,
  ) {
    super(message);
  }
}

export const DEFAULT_FETCH_PAGE_OPTIONS: Readonly<FetchPageOptions> = {
  userAgent: 'service-WebSummarizer/1.0',
  timeoutMs: 10_000,
  maxBytes: 5 * 1024 * 1024,
  maxRedirects: 5,
  allowPrivate: false,
};

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);
// Names that must never be fetched even if some resolver maps them somewhere odd.
const BLOCKED_HOSTNAMES = new Set(['metadata.google.internal']);
const SNIFF_BYTES = 2048;

/**
 * Fetches `rawUrl` and returns its HTML as a string. Throws FetchPageError only:
 * 400 for a URL we refuse (bad scheme, private address), 500 for anything that
 * went wrong fetching it.
 */
export async function fetchPage(rawUrl: string, opts: FetchPageOptions = DEFAULT_FETCH_PAGE_OPTIONS): Promise<FetchedPage> {
  let url = parseHttpUrl(rawUrl);
  // Unref'd timer inside; nothing to clear when we finish early.
  const signal = AbortSignal.timeout(opts.timeoutMs);
  try {
    for (let redirects = 0; ; redirects++) {
      const validators = opts.validatorsFor?.(url.href);
      const res = await requestOnce(url, opts, signal, validators);
      // Only a 304 to validators we sent means "your copy is current"; any other 304 stays an error below.
      if (res.statusCode === 304 && validators) {
        res.destroy();
        return { url: url.href, html: '', contentType: res.headers['content-type'] ?? '', notModified: true };
      }
      const location = res.headers.location;
      if (!REDIRECT_STATUSES.has(res.statusCode ?? 0) || !location) {
        return await readPage(res, url, opts, signal);
      }
      // Don't drain a redirect's body: it may be arbitrarily large.
      res.destroy();
      if (redirects >= opts.maxRedirects) throw new FetchPageError(500, 'Too many redirects');
      url = parseRedirect(location, url);
    }
  } catch (err) {
    throw toFetchPageError(err, url, opts, signal);
  }
}

/** Only absolute http(s) URLs; anything else (ftp:, file:, garbage) is the caller's error. */
function parseHttpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchPageError(400, 'Invalid url: must be an http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new FetchPageError(400, 'Invalid url: must be an http(s) URL');
  }
  return url;
}

function parseRedirect(location: string, from: URL): URL {
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw new FetchPageError(500, `Invalid redirect location ${JSON.stringify(location)} at ${from.href}`);
  }
  // Re-checks the scheme, so a redirect to file:// or ftp:// is refused like a direct request.
  return parseHttpUrl(next.href);
}

// ---------------------------------------------------------------------------
// SSRF guard

/**
 * True only for globally routable unicast addresses. Everything ipaddr.js puts in
 * a special range (loopback, private, link-local incl. 169.254.169.254, CGNAT,
 * unspecified, multicast, broadcast, reserved, unique-local, 6to4/Teredo/NAT64
 * which can tunnel to IPv4 …) is refused, and IPv4-mapped IPv6 is judged as the
 * IPv4 address it maps to. Unparsable input is not public.
 */
export function isPublicAddress(ip: string): boolean {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (!ipaddr.isValid(bare)) return false;
  const addr = ipaddr.parse(bare);
  if (addr instanceof ipaddr.IPv6) {
    if (addr.isIPv4MappedAddress()) return addr.toIPv4Address().range() === 'unicast';
    // Deprecated IPv4-compatible ::a.b.c.d: ipaddr.js calls it unicast, but it embeds an IPv4 address.
    if (addr.parts.slice(0, 6).every((part) => part === 0)) return false;
  }
  return addr.range() === 'unicast';
}

function refuse(): FetchPageError {
  return new FetchPageError(400, 'Refusing to fetch a private or loopback address');
}

/** URL hostnames keep IPv6 brackets and may end in a root dot; DNS and ipaddr want neither. */
function bareHostname(url: URL): string {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return host.replace(/\.+$/, '').toLowerCase();
}

/**
 * Resolves the URL's host once, and (unless allowPrivate) refuses it if ANY
 * address is not public: a name with one public and one private address could
 * otherwise reach the private one.
 */
async function resolveHost(url: URL, allowPrivate: boolean, signal: AbortSignal): Promise<dns.LookupAddress[]> {
  const host = bareHostname(url);
  if (!allowPrivate && BLOCKED_HOSTNAMES.has(host)) throw refuse();

  const family = net.isIP(host);
  const addresses =
    family !== 0 ? [{ address: host, family }] : await abortable(dns.promises.lookup(host, { all: true, verbatim: true }), signal);

  if (addresses.length === 0) throw new FetchPageError(500, `Failed to fetch ${url.href}: no address for ${host}`);
  if (!allowPrivate && !addresses.every((a) => isPublicAddress(a.address))) throw refuse();
  return addresses;
}

/**
 * A `lookup` for http.request that answers with the addresses we already
 * checked, so a DNS answer that changes between check and connect (rebinding)
 * is never used. Handles both the single-address and the `all: true` form
 * (Node's autoSelectFamily asks for all).
 */
function pinnedLookup(addresses: dns.LookupAddress[]): LookupFunction {
  return (hostname, options, callback) => {
    const wanted = familyNumber(options.family);
    const candidates = wanted === 0 ? addresses : addresses.filter((a) => a.family === wanted);
    const first = candidates[0];
    if (!first) {
      const err: NodeJS.ErrnoException = new Error(`No IPv${wanted} address for ${hostname}`);
      err.code = 'ENOTFOUND';
      callback(err, '');
    } else if (options.all) {
      callback(null, candidates);
    } else {
      callback(null, first.address, first.family);
    }
  };
}

function familyNumber(family: dns.LookupOptions['family']): number {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

// ---------------------------------------------------------------------------
// One request

/** Resolves (and checks) the host, sends the GET, and resolves with the response headers received. */
async function requestOnce(url: URL, opts: FetchPageOptions, signal: AbortSignal, validators?: Validators): Promise<IncomingMessage> {
  // The SSRF guard runs on every hop of every fetch, conditional or not: a cached copy never skips it.
  const addresses = await resolveHost(url, opts.allowPrivate, signal);
  const request = url.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'GET',
        headers: {
          'User-Agent': opts.userAgent,
          Accept: 'text/html,application/xhtml+xml',
          'Accept-Encoding': 'gzip, deflate, br',
          ...(validators?.etag ? { 'If-None-Match': validators.etag } : {}),
          ...(validators?.lastModified ? { 'If-Modified-Since': validators.lastModified } : {}),
        },
        // Hostname (so Host and TLS SNI) stays the original; only the address is pinned.
        lookup: pinnedLookup(addresses),
        // No pooling: a shared agent could hand us a socket opened without our lookup.
        agent: false,
        signal,
      },
      resolve,
    );
    // Stays attached for the request's lifetime: errors after the response
    // (e.g. when we destroy the socket) hit a settled promise instead of
    // becoming an uncaught 'error' event.
    req.on('error', reject);
    req.end();
  });
}

/** Checks status and type of the final response, then reads and decodes its body. */
async function readPage(res: IncomingMessage, url: URL, opts: FetchPageOptions, signal: AbortSignal): Promise<FetchedPage> {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) {
    res.destroy();
    throw new FetchPageError(500, `HTTP ${status} fetching ${url.href}`);
  }

  const contentType = res.headers['content-type'] ?? '';
  const mimeType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (!HTML_TYPES.has(mimeType)) {
    res.destroy();
    throw new FetchPageError(500, `Unsupported content type ${mimeType || '(none)'} at ${url.href}`);
  }

  const decoder = decompressorFor(res.headers['content-encoding'], url);
  // Fail fast on an honest Content-Length; the streaming count below catches the rest.
  if (!decoder && Number(res.headers['content-length']) > opts.maxBytes) {
    res.destroy();
    throw tooLarge(opts.maxBytes);
  }

  const body = await readCapped(res, decoder, opts.maxBytes, signal);
  const page: FetchedPage = {
    url: url.href,
    html: decodeHtml(body, charsetFromContentType(contentType)),
    contentType,
  };
  const { etag, 'last-modified': lastModified } = res.headers;
  if (etag) page.etag = etag;
  if (lastModified) page.lastModified = lastModified;
  return page;
}

function tooLarge(maxBytes: number): FetchPageError {
  return new FetchPageError(500, `Page exceeds ${maxBytes} bytes`);
}

/** A zlib stream for the Content-Encoding, or undefined for identity. */
function decompressorFor(header: string | undefined, url: URL): Transform | undefined {
  const encoding = (header ?? '').trim().toLowerCase();
  switch (encoding) {
    case '':
    case 'identity':
      return undefined;
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      throw new FetchPageError(500, `Unsupported content encoding ${encoding} at ${url.href}`);
  }
}

/**
 * Reads the body through the optional decompressor, counting decompressed
 * bytes, and stops past `maxBytes` (so a small gzip bomb can't exhaust memory).
 * pipeline() tears down every stream on error, abort or early exit, which keeps
 * destroyed sockets and half-read zlib streams from emitting unhandled errors.
 */
async function readCapped(res: IncomingMessage, decoder: Transform | undefined, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    await pipeline(
      res,
      decoder ?? new PassThrough(),
      async (source: AsyncIterable<Buffer>) => {
        for await (const chunk of source) {
          total += chunk.length;
          if (total > maxBytes) throw tooLarge(maxBytes);
          chunks.push(chunk);
        }
      },
      { signal },
    );
  } catch (err) {
    // pipeline() may report its own teardown (an AbortError) instead of what the sink threw.
    throw total > maxBytes ? tooLarge(maxBytes) : err;
  }
  return Buffer.concat(chunks, total);
}

// ---------------------------------------------------------------------------
// Charset

/**
 * Decodes the body like a browser would, in order of precedence: byte-order
 * mark, Content-Type charset, a <meta> charset in the first 2 KB, utf-8.
 */
export function decodeHtml(bytes: Uint8Array, headerCharset?: string): string {
  const label = bomCharset(bytes) ?? headerCharset ?? sniffMetaCharset(bytes) ?? 'utf-8';
  const decoder = textDecoder(label);
  const text = decoder.decode(bytes);
  // Every latin1/ascii label also lands here, as in the WHATWG Encoding Standard.
  return decoder.encoding === 'windows-1252' ? fixWindows1252(text) : text;
}

// WHATWG windows-1252 code points for bytes 0x80–0x9F (the five undefined bytes map to themselves).
const WINDOWS_1252_C1 = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f, 0x90, 0x2018, 0x2019,
  0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

/**
 * Node 20.18.3+ decodes windows-1252 as plain latin1, turning € ‘ ’ “ ” – — into
 * C1 control characters (nodejs/node#60888). Those controls never come out of a
 * correct decoder except for the five self-mapped bytes, so remapping them is
 * right with or without the bug.
 */
function fixWindows1252(text: string): string {
  return text.replace(/[\u0080-\u009f]/g, (c) => String.fromCharCode(WINDOWS_1252_C1[c.charCodeAt(0) - 0x80] ?? c.charCodeAt(0)));
}

function charsetFromContentType(contentType: string): string | undefined {
  return /;\s*charset\s*=\s*["']?([^"';\s]+)/i.exec(contentType)?.[1];
}

function bomCharset(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  return undefined;
}

/** Matches both `<meta charset="x">` and `<meta http-equiv="Content-Type" content="text/html; charset=x">`. */
function sniffMetaCharset(bytes: Uint8Array): string | undefined {
  // latin1 maps every byte to one char, so ASCII markup survives whatever the real encoding is.
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, SNIFF_BYTES)).toString('latin1');
  const label = /<meta\b[^>]*?charset\s*=\s*["']?\s*([^"'\s;/>]+)/i.exec(head)?.[1];
  // A document whose markup we could read as ASCII is not UTF-16, whatever it claims (HTML spec rule).
  return label && /^utf-?16/i.test(label) ? 'utf-8' : label;
}

function textDecoder(label: string): TextDecoder {
  try {
    return new TextDecoder(label);
  } catch {
    return new TextDecoder('utf-8'); // unknown label
  }
}

// ---------------------------------------------------------------------------
// Errors and deadline

/** Rejects with the signal's reason as soon as it aborts (dns lookups can't be cancelled). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Maps whatever was thrown to a FetchPageError. After the deadline fires, the
 * underlying error may be an AbortError, ECONNRESET or a zlib error depending on
 * where it hit, so the signal decides, not the error.
 */
function toFetchPageError(err: unknown, url: URL, opts: FetchPageOptions, signal: AbortSignal): FetchPageError {
  if (err instanceof FetchPageError) return err;
  if (signal.aborted) {
    return new FetchPageError(500, `Timed out after ${opts.timeoutMs / 1000}s fetching ${url.href}`);
  }
  return new FetchPageError(500, `Failed to fetch ${url.href}: ${shortReason(err)}`);
}

/** `ECONNREFUSED` rather than `connect ECONNREFUSED 127.0.0.1:1234`; the message for anything else. */
function shortReason(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as NodeJS.ErrnoException).code;
  return code && /^E[A-Z0-9]+$/.test(code) ? code : err.message;
}
