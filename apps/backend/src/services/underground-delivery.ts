import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, type LookupFunction, isIP } from 'node:net';
import { DomainError, hmacSha256Hex } from '@aop/core';

/**
 * Delivery of bus messages to agents' webhooks. A webhook URL is chosen by a user, and the backend POSTs to it from
 * inside the platform's network, so unless `allowPrivate` is set every connection is checked against an SSRF guard
 * and pinned to the address that was checked (custom `lookup`: DNS cannot answer differently between the check and
 * the connection). Redirects are not followed.
 */

// Everything that is not globally routable unicast: loopback, private, link-local (cloud metadata), CGNAT,
// documentation, benchmarking, multicast, reserved; IPv6 unique-local, link-local, and the forms that embed or
// tunnel to IPv4 (mapped, compatible, NAT64, 6to4, Teredo), judged unsafe as a whole.
const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 96],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/** True only for a globally routable unicast address; anything unparsable is not public. */
export function isPublicAddress(ip: string): boolean {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = isIP(bare);
  if (family === 0) return false;
  return !NOT_PUBLIC.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

const NOT_PUBLIC_CODE = 'ENOTPUBLIC';

/** Resolves like the system resolver, then refuses the connection unless every address is public. */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as dns.LookupAddress[];
      if (list.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      if (!allowPrivate && list.some((a) => !isPublicAddress(a.address))) {
        return callback(Object.assign(new Error('webhook address is not public'), { code: NOT_PUBLIC_CODE }), '', 0);
      }
      if (options.all) return callback(null, list);
      const first = list[0] as dns.LookupAddress;
      return callback(null, first.address, first.family);
    });
  };
}

export const WEBHOOK_URL_MAX = 2048;

/**
 * A webhook URL a user registers: absolute http(s), no credentials in it, and (unless private addresses are allowed)
 * not a literal private address or a `localhost` name. Names are checked again, resolved, at every delivery.
 */
export function checkWebhookUrl(raw: string, allowPrivate: boolean): string {
  // Type and length are the body schema's (`WebhookBody`); what `new URL` reads is checked here.
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DomainError('URL_NOT_HTTP');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) throw new DomainError('URL_NOT_HTTP');
  if (url.username || url.password) throw new DomainError('URL_NOT_CONTAIN_CREDENTIALS');
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const local = host === 'localhost' || host.endsWith('.localhost');
  if (!allowPrivate && (local || (isIP(host) !== 0 && !isPublicAddress(host)))) {
    throw new DomainError('URL_PUBLIC_ADDRESS');
  }
  return url.href;
}

export interface DeliveryOptions {
  attempts: number;
  timeoutMs: number;
  /** Wait before the second attempt; doubled before each later one. */
  backoffMs: number;
  allowPrivate: boolean;
  userAgent: string;
  /** The app's clock (ms): the signed `t` is a date the recipient compares with its own. */
  clock: () => number;
}

export interface DeliveryResult {
  delivered: boolean;
  attempts: number;
  /** Why the last attempt failed, in fixed words (never the URL, which belongs to the recipient's owner). */
  error?: string;
}

interface AttemptResult {
  ok: boolean;
  retryable: boolean;
  error?: string;
}

function describe(err: NodeJS.ErrnoException, signal: AbortSignal, timeoutMs: number): AttemptResult {
  if (signal.aborted) return { ok: false, retryable: true, error: `timed out after ${timeoutMs} ms` };
  if (err.code === NOT_PUBLIC_CODE) return { ok: false, retryable: false, error: 'webhook address is not public' };
  return { ok: false, retryable: true, error: `connection failed (${err.code ?? err.name})` };
}

/** One POST; 2xx is delivered. Network errors, timeouts, 5xx, 408 and 429 may succeed later; other answers will not. */
function attempt(url: URL, body: string, headers: Record<string, string>, options: DeliveryOptions): Promise<AttemptResult> {
  return new Promise((resolve) => {
    const signal = AbortSignal.timeout(options.timeoutMs);
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: guardedLookup(options.allowPrivate),
        signal,
        // A fresh connection each time: a pooled socket would skip the address check.
        agent: false,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        // The answer's body is not needed (and may be large): stop reading it.
        res.on('error', () => {});
        res.destroy();
        if (status >= 200 && status < 300) resolve({ ok: true, retryable: false });
        else resolve({ ok: false, retryable: status >= 500 || status === 408 || status === 429, error: `HTTP ${status}` });
      },
    );
    req.on('error', (err) => resolve(describe(err, signal, options.timeoutMs)));
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * POSTs `body` to the webhook, up to `attempts` times with exponential back-off. Each attempt is signed with the
 * webhook's secret: `x-underground-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.
 */
export async function deliverToWebhook(
  webhook: { url: string; secret: string },
  body: string,
  extraHeaders: Record<string, string>,
  options: DeliveryOptions,
): Promise<DeliveryResult> {
  let url: URL;
  try {
    url = new URL(webhook.url);
  } catch {
    return { delivered: false, attempts: 0, error: 'invalid webhook URL' };
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // Literal addresses never go through `lookup`: check them here.
  if (!options.allowPrivate && isIP(host) !== 0 && !isPublicAddress(host)) {
    return { delivered: false, attempts: 0, error: 'webhook address is not public' };
  }
  let last: AttemptResult = { ok: false, retryable: false };
  for (let n = 1; n <= options.attempts; n++) {
    const t = Math.floor(options.clock() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': options.userAgent,
      ...extraHeaders,
      'x-underground-attempt': String(n),
      'x-underground-signature': `t=${t},v1=${hmacSha256Hex(webhook.secret, `${t}.${body}`)}`,
    };
    last = await attempt(url, body, headers, options);
    if (last.ok) return { delivered: true, attempts: n };
    if (!last.retryable || n === options.attempts) return { delivered: false, attempts: n, ...(last.error ? { error: last.error } : {}) };
    await sleep(options.backoffMs * 2 ** (n - 1));
  }
  return { delivered: false, attempts: options.attempts, ...(last.error ? { error: last.error } : {}) };
}
