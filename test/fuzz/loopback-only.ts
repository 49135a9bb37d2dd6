/**
 * Preloaded into every service the fuzzer starts (`node --import`): the services may open connections to loopback
 * addresses only (and to the hosts of DATABASE_URL / REDIS_URL, named in FUZZ_ALLOWED_HOSTS). Upstreams are already
 * configured to closed local ports or left unset; this makes sure that a junk value that happens to name a host, or a
 * default that was missed, cannot send traffic anywhere else. A refused attempt fails like a refused connection and
 * is reported on stderr, where the fuzzer counts it.
 */
import dns from 'node:dns';
import net from 'node:net';

const allowedNames = new Set(['localhost', ...(process.env.FUZZ_ALLOWED_HOSTS ?? '').split(',').filter(Boolean)]);

function allowed(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (allowedNames.has(bare)) return true;
  if (net.isIPv4(bare)) return bare.startsWith('127.');
  if (net.isIPv6(bare)) return bare === '::1' || bare.startsWith('::ffff:127.');
  return false;
}

function refusal(host: string): NodeJS.ErrnoException {
  process.stderr.write(`fuzz-guard: refused outbound connection to ${host}\n`);
  return Object.assign(new Error(`connect ECONNREFUSED ${host} (the fuzzer allows loopback only)`), { code: 'ECONNREFUSED' });
}

const connect = net.Socket.prototype.connect;
// `net.connect` and `tls.connect` hand the socket one normalized [options, callback] array; direct calls pass
// (options), (port, host) or (path).
net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const options = (typeof first === 'object' && first !== null ? first : {}) as { host?: string; path?: string };
  const host = typeof first === 'object' ? options.host : typeof args[1] === 'string' ? args[1] : undefined;
  const isPipe = typeof first === 'string' || options.path !== undefined;
  if (!isPipe && host !== undefined && !allowed(host)) {
    const error = refusal(host);
    process.nextTick(() => this.destroy(error));
    return this;
  }
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof connect;

// Name resolution is traffic too (and the SSRF guards resolve before they connect): only allowed names resolve.
const lookup = dns.lookup;
dns.lookup = function guardedLookup(hostname: string, ...rest: unknown[]) {
  if (allowed(hostname)) return (lookup as (...a: unknown[]) => void)(hostname, ...rest);
  const callback = rest.at(-1) as (err: Error) => void;
  const error = refusal(hostname);
  process.nextTick(() => callback(error));
} as typeof dns.lookup;
const lookupPromise = dns.promises.lookup;
dns.promises.lookup = (async (hostname: string, options?: dns.LookupOptions) => {
  if (allowed(hostname)) return lookupPromise(hostname, options ?? {});
  throw refusal(hostname);
}) as typeof dns.promises.lookup;
