import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local S3-compatible object store (path-style `/<bucket>/<key>`): `PUT` stores an object in memory after
 * verifying its AWS Signature Version 4 `Authorization` header for real (access key, credential scope, signed
 * headers, `x-amz-content-sha256` against the body, `x-amz-date` within 15 minutes, the signature recomputed from
 * the canonical request with the secret key); `GET`/`HEAD` serve stored objects without credentials (a public-read
 * bucket) and check a signature when one is sent. Errors are S3's XML `<Error><Code>…</Code>…</Error>`.
 */

export interface StoredObject {
  body: Buffer;
  contentType: string | undefined;
  etag: string;
  /** The request headers of the PUT, lower-case names. */
  headers: IncomingMessage['headers'];
  /** The verified `Authorization` header. */
  authorization: string;
}

export interface BlobStoreRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  /** S3 error code when the request was refused. */
  error: string | undefined;
}

export interface FakeBlobStore {
  /** `http://127.0.0.1:<port>`: BLOB_URL. */
  url: string;
  bucket: string;
  accessKey: string;
  secretKey: string;
  region: string;
  /** Keys are the decoded object keys (`videos/usr_1/vid_2.mp4`). */
  readonly objects: Map<string, StoredObject>;
  readonly requests: BlobStoreRequest[];
  close(): Promise<void>;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
const MAX_SKEW_MS = 15 * 60_000;

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function sendError(res: ServerResponse, err: S3Error, resource: string): void {
  res.writeHead(err.status, { 'content-type': 'application/xml' });
  res.end(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${err.code}</Code><Message>${err.message}</Message><Resource>${resource}</Resource></Error>`,
  );
}

/** S3's own encoding of a canonical URI/query component: unreserved characters stay, the rest is %XX. */
function encode(value: string, keepSlash: boolean): string {
  return Array.from(Buffer.from(value, 'utf8'))
    .map((b) => {
      const c = String.fromCharCode(b);
      return /[A-Za-z0-9\-_.~]/.test(c) || (keepSlash && c === '/') ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
}

/** Parses `AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=a;b, Signature=hex`. */
function parseAuthorization(header: string) {
  if (!header.startsWith(`${ALGORITHM} `)) throw new S3Error(400, 'AuthorizationHeaderMalformed', 'Unsupported authorization type');
  const fields = new Map<string, string>();
  for (const part of header.slice(ALGORITHM.length + 1).split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credential = fields.get('Credential')?.split('/');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (credential?.length !== 5 || !signedHeaders || !signature || !/^[0-9a-f]{64}$/.test(signature)) {
    throw new S3Error(400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed');
  }
  const [accessKey, day, region, service, terminator] = credential as [string, string, string, string, string];
  return { accessKey, day, region, service, terminator, signedHeaders: signedHeaders.split(';'), signature };
}

export async function startFakeBlobStore(
  options: { bucket?: string; accessKey?: string; secretKey?: string; region?: string; now?: () => number } = {},
): Promise<FakeBlobStore> {
  const bucket = options.bucket ?? 'videos-test';
  const accessKey = options.accessKey ?? 'AKIAFAKEBLOBSTORE001';
  const secretKey = options.secretKey ?? 'fake/blob+store/secret/key/0123456789abcd';
  const region = options.region ?? 'us-east-1';
  const now = options.now ?? Date.now;
  const objects = new Map<string, StoredObject>();
  const requests: BlobStoreRequest[] = [];

  /** Verifies the request's SigV4 signature; throws an S3Error naming what is wrong. */
  function verify(req: IncomingMessage, rawPath: string, rawQuery: string, body: Buffer): string {
    const header = req.headers.authorization;
    if (!header) throw new S3Error(403, 'AccessDenied', 'Access Denied');
    const auth = parseAuthorization(header);
    if (auth.accessKey !== accessKey)
      throw new S3Error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
    if (auth.region !== region || auth.service !== 's3' || auth.terminator !== 'aws4_request') {
      throw new S3Error(
        400,
        'AuthorizationHeaderMalformed',
        `The authorization header is malformed; the region '${auth.region}' is wrong; expecting '${region}'`,
      );
    }
    const date = req.headers['x-amz-date'];
    if (typeof date !== 'string' || !/^\d{8}T\d{6}Z$/.test(date))
      throw new S3Error(403, 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
    if (date.slice(0, 8) !== auth.day) throw new S3Error(403, 'SignatureDoesNotMatch', 'Credential date does not match x-amz-date');
    const at = Date.UTC(
      +date.slice(0, 4),
      +date.slice(4, 6) - 1,
      +date.slice(6, 8),
      +date.slice(9, 11),
      +date.slice(11, 13),
      +date.slice(13, 15),
    );
    if (Math.abs(now() - at) > MAX_SKEW_MS)
      throw new S3Error(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
    const contentSha = req.headers['x-amz-content-sha256'];
    if (typeof contentSha !== 'string')
      throw new S3Error(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
    if (contentSha !== 'UNSIGNED-PAYLOAD' && contentSha !== sha256(body)) {
      throw new S3Error(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.");
    }
    for (const required of ['host', 'x-amz-date', 'x-amz-content-sha256']) {
      if (!auth.signedHeaders.includes(required)) throw new S3Error(403, 'AccessDenied', `${required} must be signed`);
    }
    const canonicalHeaders = auth.signedHeaders.map((name) => {
      const value = req.headers[name];
      const joined = Array.isArray(value) ? value.join(',') : (value ?? '');
      return `${name}:${joined.trim().replace(/\s+/g, ' ')}`;
    });
    const canonicalQuery = rawQuery
      .split('&')
      .filter(Boolean)
      .map((pair) => {
        const [k = '', v = ''] = pair.split('=');
        return [encode(decodeURIComponent(k), false), encode(decodeURIComponent(v.replace(/\+/g, '%20')), false)] as const;
      })
      .sort(([a, av], [b, bv]) => (a === b ? (av < bv ? -1 : 1) : a < b ? -1 : 1))
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    const canonicalRequest = [
      req.method,
      encode(decodeURIComponent(rawPath), true),
      canonicalQuery,
      ...canonicalHeaders,
      '',
      auth.signedHeaders.join(';'),
      contentSha,
    ].join('\n');
    const stringToSign = [ALGORITHM, date, `${auth.day}/${region}/s3/aws4_request`, sha256(canonicalRequest)].join('\n');
    const key = hmac(hmac(hmac(hmac(`AWS4${secretKey}`, auth.day), region), 's3'), 'aws4_request');
    const expected = createHmac('sha256', key).update(stringToSign).digest();
    if (!timingSafeEqual(expected, Buffer.from(auth.signature, 'hex'))) {
      throw new S3Error(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.');
    }
    return header;
  }

  const server: Server = createServer(async (req, res) => {
    const [rawPath = '/', rawQuery = ''] = (req.url ?? '/').split('?');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const entry: BlobStoreRequest = {
      method: req.method ?? 'GET',
      path: rawPath,
      authorization: req.headers.authorization,
      error: undefined,
    };
    requests.push(entry);
    try {
      const segments = rawPath.split('/');
      const pathBucket = decodeURIComponent(segments[1] ?? '');
      const key = decodeURIComponent(segments.slice(2).join('/'));
      if (pathBucket !== bucket) throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist');
      if (!key) throw new S3Error(400, 'InvalidRequest', 'An object key is required');

      if (req.method === 'PUT') {
        const authorization = verify(req, rawPath, rawQuery, body);
        const etag = `"${createHash('md5').update(body).digest('hex')}"`;
        const contentType = typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : undefined;
        objects.set(key, { body, contentType, etag, headers: req.headers, authorization });
        res.writeHead(200, { etag });
        res.end();
        return;
      }
      if (req.method === 'GET' || req.method === 'HEAD') {
        if (req.headers.authorization) verify(req, rawPath, rawQuery, body);
        const object = objects.get(key);
        if (!object) throw new S3Error(404, 'NoSuchKey', 'The specified key does not exist.');
        res.writeHead(200, {
          'content-type': object.contentType ?? 'binary/octet-stream',
          'content-length': object.body.length,
          etag: object.etag,
        });
        res.end(req.method === 'HEAD' ? undefined : object.body);
        return;
      }
      throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
    } catch (err) {
      if (!(err instanceof S3Error)) throw err;
      entry.error = err.code;
      sendError(res, err, rawPath);
    }
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake: FakeBlobStore = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bucket,
    accessKey,
    secretKey,
    region,
    objects,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
