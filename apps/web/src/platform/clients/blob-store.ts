import { createHash, createHmac } from 'node:crypto';
import type { WebConfig } from '../../config.js';

/**
 * S3-compatible blob storage (AWS S3, Cloudflare R2, MinIO, …): path-style `PUT <BLOB_URL>/<bucket>/<key>` signed
 * with AWS Signature Version 4 (header-based, the payload's SHA-256 signed too), written here with node:crypto so
 * no SDK is needed. Nothing sets an ACL: public reads are the bucket policy's (or BLOB_PUBLIC_URL's CDN's) business,
 * since buckets with ACLs disabled refuse `x-amz-acl`.
 */

export type BlobConfig = NonNullable<WebConfig['blob']>;

export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const ALGORITHM = 'AWS4-HMAC-SHA256';

const sha256Hex = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 percent-encoding as SigV4 wants it: everything but `A-Z a-z 0-9 - _ . ~` (and `/` in paths), upper-case hex. */
export function uriEncode(value: string, keepSlash = false): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-_.~]/.test(ch) || (keepSlash && ch === '/')) out += ch;
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** `20130524T000000Z` */
export const amzDate = (date: Date): string =>
  date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

export interface SigV4Request {
  method: string;
  /** The path exactly as sent (already URI-encoded, as `uriEncode(…, true)` gives it). */
  path: string;
  /** Decoded query parameters; encoded and sorted here. */
  query?: Array<[string, string]>;
  /** Every header to sign, `host` and `x-amz-date` included; names in any case. */
  headers: Record<string, string>;
  /** Hex SHA-256 of the body (or `UNSIGNED-PAYLOAD`); the same value as `x-amz-content-sha256`. */
  payloadHash: string;
}

export interface SigV4Credentials {
  accessKey: string;
  secretKey: string;
  region: string;
  service: string;
}

/**
 * AWS Signature Version 4 for the `Authorization` header: canonical request → string to sign → key derived from
 * the secret, date, region and service → HMAC. `amzDate` must equal the signed `x-amz-date` header.
 */
export function signV4(
  request: SigV4Request,
  credentials: SigV4Credentials,
  date: string,
): { authorization: string; signature: string; signedHeaders: string; canonicalRequest: string } {
  const headers = Object.entries(request.headers)
    .map(([name, value]) => [name.toLowerCase(), value.trim().replace(/\s+/g, ' ')] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const signedHeaders = headers.map(([name]) => name).join(';');
  const canonicalQuery = (request.query ?? [])
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonicalRequest = [
    request.method.toUpperCase(),
    request.path || '/',
    canonicalQuery,
    ...headers.map(([name, value]) => `${name}:${value}`),
    '',
    signedHeaders,
    request.payloadHash,
  ].join('\n');
  const day = date.slice(0, 8);
  const scope = `${day}/${credentials.region}/${credentials.service}/aws4_request`;
  const stringToSign = [ALGORITHM, date, scope, sha256Hex(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretKey}`, day), credentials.region), credentials.service), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return {
    authorization: `${ALGORITHM} Credential=${credentials.accessKey}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    signature,
    signedHeaders,
    canonicalRequest,
  };
}

/** `<BLOB_URL>/<bucket>/<key>`, each key segment encoded. */
export const objectUrl = (blob: BlobConfig, key: string): string => `${blob.url}/${blob.bucket}/${uriEncode(key, true)}`;

/** Where the object is read: `<BLOB_PUBLIC_URL>/<key>`, else the object URL. */
export const publicObjectUrl = (blob: BlobConfig, key: string): string =>
  blob.publicUrl ? `${blob.publicUrl}/${uriEncode(key, true)}` : objectUrl(blob, key);

/** A PUT the store refused or that never reached it; `reason` is safe to log (no key, no signature). */
export class BlobStoreError extends Error {
  constructor(
    readonly reason: string,
    readonly status?: number,
  ) {
    super(`Blob store request failed: ${reason}`);
    this.name = 'BlobStoreError';
  }
}

/** PUT Object; answers the public URL. `signal` bounds the upload. */
export async function putObject(
  blob: BlobConfig,
  {
    key,
    body,
    contentType,
    signal,
    now = new Date(),
  }: { key: string; body: Uint8Array; contentType: string; signal?: AbortSignal; now?: Date },
): Promise<{ url: string; etag: string | undefined }> {
  const url = new URL(objectUrl(blob, key));
  const date = amzDate(now);
  const payloadHash = sha256Hex(body);
  const headers: Record<string, string> = {
    host: url.host,
    'content-type': contentType,
    'x-amz-content-sha256': payloadHash,
    'x-amz-date': date,
  };
  const { authorization } = signV4(
    { method: 'PUT', path: url.pathname, headers, payloadHash },
    { accessKey: blob.accessKey, secretKey: blob.secretKey, region: blob.region, service: 's3' },
    date,
  );
  const { host: _host, ...sent } = headers;
  let res: Response;
  try {
    res = await fetch(url, { method: 'PUT', headers: { ...sent, authorization }, body, redirect: 'manual', signal });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new BlobStoreError('unreachable');
  }
  const text = await res.text().catch(() => '');
  if (res.status !== 200) {
    // S3 errors are XML: `<Error><Code>SignatureDoesNotMatch</Code>…`; only the code is kept.
    const code = /<Code>([^<]{1,100})<\/Code>/.exec(text)?.[1];
    throw new BlobStoreError(`PUT answered ${res.status}${code ? ` ${code}` : ''}`, res.status);
  }
  return { url: publicObjectUrl(blob, key), etag: res.headers.get('etag') ?? undefined };
}
