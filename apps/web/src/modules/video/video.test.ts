import { createHash } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type FakeBlobStore,
  type FakeVideoApi,
  type RunningService,
  listen,
  request,
  startFakeBlobStore,
  startFakeVideoApi,
  testCounters,
  testEnv,
  unreachableUrl,
} from '@aop/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { loadWebConfig } from '../../config.js';
import { EMPTY_SHA256, amzDate, signV4, uriEncode } from '../../platform/clients/blob-store.js';
import { type TestWeb, startWeb } from '../../web.test-support.js';

const PATH = '/api/generate-video';
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

const BODIES = {
  demo: { type: 'demo', agentName: 'Atlas', agentDescription: 'Books meetings and answers email.' },
  marketing: { type: 'marketing', productName: 'Colony', features: ['Hosted agents', 'Pay per call'] },
  screenshot: { type: 'screenshot', imageUrl: 'https://example.com/shot.png', description: 'The dashboard at a glance' },
  tutorial: { type: 'tutorial', topic: 'Your first agent', steps: ['Sign up', 'Provision', 'Say hello'] },
} as const;

// Spec §4.16 POST /api/generate-video (session; 400 Invalid video type; 401; 500) and §8 (5-minute timeout, shortened
// here through VIDEO_TIMEOUT_MS). The render API and the S3-compatible store are local servers; the store verifies
// every PUT's AWS Signature Version 4 with the same access and secret keys.
describe('video generation: POST /api/generate-video', () => {
  let videoApi: FakeVideoApi;
  let store: FakeBlobStore;
  let web: TestWeb;
  let cookie: string;
  let userId: string;
  let baseEnv: Record<string, string>;
  const variants: RunningService[] = [];

  const startVariant = async (env: Record<string, string | undefined>): Promise<RunningService> => {
    const counters = testCounters();
    const running = await listen(
      await buildApp({ config: loadWebConfig(testEnv(web.config.dataDir, env)), db: web.database.db, counters }),
    );
    const variant = {
      ...running,
      async close() {
        await running.close();
        await counters.close();
      },
    };
    variants.push(variant);
    return variant;
  };

  const generate = (body: unknown, url = web.url, headers: Record<string, string> = { cookie }) =>
    request(`${url}${PATH}`, { json: body, headers });

  const jobs = () => web.database.db.withUser(userId, (trx) => trx.selectFrom('video_jobs').selectAll().orderBy('created_at').execute());

  beforeAll(async () => {
    videoApi = await startFakeVideoApi();
    store = await startFakeBlobStore();
    baseEnv = {
      VIDEO_API_URL: videoApi.url,
      VIDEO_API_KEY: videoApi.apiKey,
      VIDEO_POLL_INTERVAL_MS: '20',
      BLOB_URL: store.url,
      BLOB_BUCKET: store.bucket,
      BLOB_ACCESS_KEY: store.accessKey,
      BLOB_SECRET_KEY: store.secretKey,
      BLOB_REGION: store.region,
    };
    web = await startWeb(baseEnv);
    ({ cookie, userId } = await web.signIn());
  });
  afterEach(() => {
    videoApi.behaviour = {};
  });
  afterAll(async () => {
    for (const v of variants) await v.close();
    await web?.close();
    await videoApi?.close();
    await store?.close();
  });

  it.each(Object.entries(BODIES))('renders a %s video, stores it in blob storage and answers { url }', async (type, body) => {
    const res = await generate(body);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['url']);
    const job = (await jobs()).at(-1)!;
    const key = `videos/${userId}/${job.id}.mp4`;
    expect(res.body.url).toBe(`${store.url}/${store.bucket}/${key}`);

    // The render API got the template and the type's fields, keyed by our job id.
    const { type: _type, ...fields } = body;
    const render = videoApi.renders.get(job.render_id!)!;
    expect(render).toMatchObject({ template: type, input: fields, output: { format: 'mp4', resolution: '1080p' }, idempotencyKey: job.id });

    // The store kept the rendered bytes under a SigV4 signature it verified with our keys.
    const object = store.objects.get(key)!;
    expect(object.body.equals(render.video!)).toBe(true);
    expect(object.contentType).toBe('video/mp4');
    expect(object.headers['x-amz-content-sha256']).toBe(sha256(object.body));
    expect(object.authorization).toMatch(
      new RegExp(
        `^AWS4-HMAC-SHA256 Credential=${store.accessKey}/\\d{8}/us-east-1/s3/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$`,
      ),
    );
    expect(object.body.subarray(4, 8).toString('latin1')).toBe('ftyp');
    expect(object.body.toString('utf8')).toContain(JSON.stringify({ render: render.id, template: type, input: fields }));

    // The URL serves the video.
    const fetched = await fetch(res.body.url);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await fetched.arrayBuffer()).equals(object.body)).toBe(true);

    expect(job).toMatchObject({
      type,
      status: 'completed',
      url: res.body.url,
      object_key: key,
      bytes: object.body.length,
      content_type: 'video/mp4',
      error: null,
    });
    expect(job.input).toEqual(fields);
  });

  it('401 without a session, whatever the body', async () => {
    for (const body of [BODIES.demo, { type: 'nope' }]) {
      const res = await generate(body, web.url, {});
      expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'Unauthorized' } });
    }
  });

  it.each([
    ['no type', {}],
    ['an unknown type', { type: 'movie' }],
    ['a type in another case', { type: 'Demo', agentName: 'a', agentDescription: 'b' }],
    ['a type that is not a string', { type: 1 }],
    ['a JSON array', [BODIES.demo]],
  ])('400 Invalid video type for %s', async (_name, body) => {
    const res = await generate(body);
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'Invalid video type' } });
  });

  it('400 Invalid video type for a missing or non-JSON body', async () => {
    const empty = await request(`${web.url}${PATH}`, { method: 'POST', headers: { cookie } });
    const text = await request(`${web.url}${PATH}`, { body: 'type=demo', headers: { cookie, 'content-type': 'text/plain' } });
    for (const res of [empty, text])
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'Invalid video type' } });
  });

  const listMessage = (field: string) => `${field} must be a list of 1 to 20 non-empty strings of at most 500 characters`;
  it.each([
    [{ type: 'demo', agentDescription: 'x' }, 'agentName is required'],
    [{ type: 'demo', agentName: '  ', agentDescription: 'x' }, 'agentName is required'],
    [{ type: 'demo', agentName: 'x' }, 'agentDescription is required'],
    [{ type: 'demo', agentName: 7, agentDescription: 'x' }, 'agentName must be a string'],
    [{ type: 'demo', agentName: 'x'.repeat(201), agentDescription: 'x' }, 'agentName must be at most 200 characters'],
    [{ type: 'marketing', features: ['a'] }, 'productName is required'],
    [{ type: 'marketing', productName: 'P' }, 'features is required'],
    [{ type: 'marketing', productName: 'P', features: 'fast' }, listMessage('features')],
    [{ type: 'marketing', productName: 'P', features: [] }, listMessage('features')],
    [{ type: 'marketing', productName: 'P', features: ['ok', 3] }, listMessage('features')],
    [{ type: 'marketing', productName: 'P', features: Array.from({ length: 21 }, (_, i) => `f${i}`) }, listMessage('features')],
    [{ type: 'screenshot', description: 'd' }, 'imageUrl is required'],
    [{ type: 'screenshot', imageUrl: 'ftp://example.com/a.png', description: 'd' }, 'imageUrl must be an http or https URL'],
    [{ type: 'screenshot', imageUrl: 'not a url', description: 'd' }, 'imageUrl must be an http or https URL'],
    [{ type: 'screenshot', imageUrl: 'https://example.com/a.png' }, 'description is required'],
    [{ type: 'tutorial', steps: ['a'] }, 'topic is required'],
    [{ type: 'tutorial', topic: 'T' }, 'steps is required'],
    [{ type: 'tutorial', topic: 'T', steps: [''] }, listMessage('steps')],
  ])('400 for %j: %s', async (body, error) => {
    const before = videoApi.renders.size;
    const res = await generate(body);
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error } });
    expect(videoApi.renders.size).toBe(before);
  });

  it('500 Video generation timed out after VIDEO_TIMEOUT_MS; the render is cancelled and the job recorded', async () => {
    const variant = await startVariant({ ...baseEnv, VIDEO_TIMEOUT_MS: '400' });
    videoApi.behaviour = { neverFinish: true };
    const started = Date.now();
    const res = await generate(BODIES.tutorial, variant.url);
    expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Video generation timed out' } });
    expect(Date.now() - started).toBeLessThan(3_000);
    const job = (await jobs()).at(-1)!;
    expect(job).toMatchObject({ status: 'timed_out', error: 'no result within 400 ms', url: null });
    await expect.poll(() => videoApi.renders.get(job.render_id!)?.status).toBe('cancelled');
  });

  it('500 Video generation failed when the render fails; the reason is kept on the job, not sent', async () => {
    videoApi.behaviour = { failWith: 'font missing' };
    const res = await generate(BODIES.demo);
    expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Video generation failed' } });
    expect((await jobs()).at(-1)).toMatchObject({ status: 'failed', error: 'render: render failed: font missing' });
  });

  it('500 Video generation failed when the render API refuses our key or cannot be reached', async () => {
    const wrongKey = await startVariant({ ...baseEnv, VIDEO_API_KEY: 'not-the-key' });
    const down = await startVariant({ ...baseEnv, VIDEO_API_URL: await unreachableUrl() });
    for (const variant of [wrongKey, down]) {
      const res = await generate(BODIES.marketing, variant.url);
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Video generation failed' } });
    }
  });

  it('500 Video upload failed when the store refuses the signature (another secret key); nothing is stored', async () => {
    const variant = await startVariant({ ...baseEnv, BLOB_SECRET_KEY: 'a-different-secret-key' });
    const objects = store.objects.size;
    const res = await generate(BODIES.screenshot, variant.url);
    expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Video upload failed' } });
    expect(store.requests.at(-1)).toMatchObject({ method: 'PUT', error: 'SignatureDoesNotMatch' });
    expect(store.objects.size).toBe(objects);
    expect((await jobs()).at(-1)).toMatchObject({ status: 'failed', error: 'upload: PUT answered 403 SignatureDoesNotMatch' });
  });

  it('500 Video generation is not configured without the render API or the blob store', async () => {
    const { VIDEO_API_KEY: _k, ...noVideo } = baseEnv;
    const { BLOB_SECRET_KEY: _s, ...noBlob } = baseEnv;
    for (const env of [noVideo, noBlob]) {
      const variant = await startVariant(env);
      const res = await generate(BODIES.demo, variant.url);
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Video generation is not configured' } });
    }
  });

  it('links objects under BLOB_PUBLIC_URL when set', async () => {
    const variant = await startVariant({ ...baseEnv, BLOB_PUBLIC_URL: 'https://cdn.example.com/media/' });
    const res = await generate(BODIES.demo, variant.url);
    const job = (await jobs()).at(-1)!;
    expect(res.body).toEqual({ url: `https://cdn.example.com/media/videos/${userId}/${job.id}.mp4` });
    expect(store.objects.has(`videos/${userId}/${job.id}.mp4`)).toBe(true);
  });

  it('fetches an output on another origin without the render API key, following its redirect', async () => {
    const seen: Array<{ url: string; authorization: string | undefined }> = [];
    const cdn: Server = createServer(async (req, res) => {
      seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
      if (req.url?.startsWith('/redirect/')) {
        res.writeHead(302, { location: `/files/${req.url.slice('/redirect/'.length)}` });
        res.end();
        return;
      }
      const id = req.url?.slice('/files/'.length) ?? '';
      const video = videoApi.renders.get(id)?.video;
      res.writeHead(video ? 200 : 404, { 'content-type': 'video/webm' });
      res.end(video);
    });
    await new Promise<void>((resolve) => cdn.listen(0, '127.0.0.1', resolve));
    try {
      const cdnUrl = `http://127.0.0.1:${(cdn.address() as AddressInfo).port}`;
      videoApi.behaviour = { outputUrl: (render) => `${cdnUrl}/redirect/${render.id}` };
      const res = await generate(BODIES.tutorial);
      expect(res.status).toBe(200);
      expect(seen.map((s) => s.authorization)).toEqual([undefined, undefined]);
      const job = (await jobs()).at(-1)!;
      expect(res.body.url).toMatch(new RegExp(`/videos/${userId}/${job.id}\\.webm$`));
      expect(store.objects.get(`videos/${userId}/${job.id}.webm`)?.contentType).toBe('video/webm');
    } finally {
      await new Promise<void>((resolve) => cdn.close(() => resolve()));
    }
  });

  it('refuses an output larger than VIDEO_MAX_BYTES', async () => {
    const variant = await startVariant({ ...baseEnv, VIDEO_MAX_BYTES: '4096' });
    videoApi.behaviour = { outputPaddingBytes: 10_000 };
    const res = await generate(BODIES.demo, variant.url);
    expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Video generation failed' } });
    expect((await jobs()).at(-1)).toMatchObject({ status: 'failed', error: 'download: output larger than 4096 bytes' });
  });

  it('keeps each user’s jobs to that user (row-level security)', async () => {
    const other = await web.signIn();
    expect((await generate(BODIES.demo, web.url, { cookie: other.cookie })).status).toBe(200);
    const mine = await jobs();
    const theirs = await web.database.db.withUser(other.userId, (trx) => trx.selectFrom('video_jobs').selectAll().execute());
    expect(theirs).toHaveLength(1);
    expect(mine.every((j) => j.user_id === userId)).toBe(true);
    expect(mine.map((j) => j.id)).not.toContain(theirs[0]!.id);
  });
});

describe('AWS Signature Version 4 (blob store client)', () => {
  const credentials = {
    accessKey: 'AKIAIOSFODNN7EXAMPLE',
    secretKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    region: 'us-east-1',
    service: 's3',
  };

  it('matches AWS’s published GET Object example', () => {
    const signed = signV4(
      {
        method: 'GET',
        path: '/test.txt',
        headers: {
          Host: 'examplebucket.s3.amazonaws.com',
          Range: 'bytes=0-9',
          'x-amz-content-sha256': EMPTY_SHA256,
          'x-amz-date': '20130524T000000Z',
        },
        payloadHash: EMPTY_SHA256,
      },
      credentials,
      '20130524T000000Z',
    );
    expect(signed.signature).toBe('f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
    expect(signed.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });

  it('matches AWS’s published PUT Object example (a key that needs encoding)', () => {
    const payloadHash = sha256('Welcome to Amazon S3.');
    const signed = signV4(
      {
        method: 'PUT',
        path: `/${uriEncode('test$file.text', true)}`,
        headers: {
          Date: 'Fri, 24 May 2013 00:00:00 GMT',
          Host: 'examplebucket.s3.amazonaws.com',
          'x-amz-date': '20130524T000000Z',
          'x-amz-storage-class': 'REDUCED_REDUNDANCY',
          'x-amz-content-sha256': payloadHash,
        },
        payloadHash,
      },
      credentials,
      '20130524T000000Z',
    );
    expect(signed.signature).toBe('98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd');
  });

  it('formats x-amz-date and encodes keys like S3', () => {
    expect(amzDate(new Date('2013-05-24T00:00:00.123Z'))).toBe('20130524T000000Z');
    expect(uriEncode('videos/a b/ü~._-.mp4', true)).toBe('videos/a%20b/%C3%BC~._-.mp4');
    expect(uriEncode('a/b')).toBe('a%2Fb');
  });

  it('the fake store refuses a body other than the one signed, and a signature made with another secret', async () => {
    const store = await startFakeBlobStore();
    try {
      const put = async (body: string, signedBody: string, secretKey: string) => {
        const url = new URL(`${store.url}/${store.bucket}/probe.txt`);
        const date = amzDate(new Date());
        const payloadHash = sha256(signedBody);
        const headers = { host: url.host, 'content-type': 'text/plain', 'x-amz-content-sha256': payloadHash, 'x-amz-date': date };
        const { authorization } = signV4(
          { method: 'PUT', path: url.pathname, headers, payloadHash },
          { accessKey: store.accessKey, secretKey, region: store.region, service: 's3' },
          date,
        );
        const { host: _h, ...sent } = headers;
        return fetch(url, { method: 'PUT', headers: { ...sent, authorization }, body });
      };
      expect((await put('hello', 'hello', store.secretKey)).status).toBe(200);
      const tampered = await put('HELLO', 'hello', store.secretKey);
      expect(tampered.status).toBe(400);
      expect(await tampered.text()).toContain('<Code>XAmzContentSHA256Mismatch</Code>');
      const forged = await put('hello', 'hello', 'guessed-secret');
      expect(forged.status).toBe(403);
      expect(await forged.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
      expect(store.objects.get('probe.txt')?.body.toString()).toBe('hello');
    } finally {
      await store.close();
    }
  });
});
