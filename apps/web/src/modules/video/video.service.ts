import { DomainError, type Logger, newId } from '@aop/core';
import type { Database, VideoJobStatus } from '@aop/db';
import type { WebConfig } from '../../config.js';
import { type BlobConfig, BlobStoreError, putObject } from '../../platform/clients/blob-store.js';
import type { GenerateVideoBody } from './video.schemas.js';

/**
 * `POST /api/generate-video` (spec §4.16, §8): renders a short video through a render API, stores it in blob
 * storage and answers its URL, all within VIDEO_TIMEOUT_MS (the spec's 5 minutes).
 *
 * Render API contract (VIDEO_API_URL, `Authorization: Bearer <VIDEO_API_KEY>`, JSON both ways):
 *
 *   POST /v1/renders                 `Idempotency-Key: <our job id>`
 *     { "template": "demo" | "marketing" | "screenshot" | "tutorial",
 *       "input": { …the type's fields… },
 *       "output": { "format": "mp4", "resolution": "1080p" } }
 *     → 201 (or 202) { "id": "<render id>", "status": "queued" | "rendering" }
 *     → 4xx { "error": "…" } for a template or input it refuses
 *
 *   GET /v1/renders/<id>
 *     → 200 { "id", "status": "queued" | "rendering" | "succeeded" | "failed", "progress"?: 0-100,
 *             "error"?: "…",                                     (when failed)
 *             "output"?: { "url": "…", "contentType"?: "video/mp4", "bytes"?: n } }   (when succeeded)
 *
 *   GET <output.url>                  → the video bytes. The bearer key is sent only while the URL is on the render
 *                                        API's own origin; redirects elsewhere (a CDN, a presigned URL) go without it.
 *
 *   DELETE /v1/renders/<id>           → cancels a render (best effort; sent when our time runs out).
 *
 * Inputs per template: demo `{ agentName, agentDescription }`; marketing `{ productName, features: string[] }`;
 * screenshot `{ imageUrl, description }`; tutorial `{ topic, steps: string[] }`.
 */

export const VIDEO_TYPES = ['demo', 'marketing', 'screenshot', 'tutorial'] as const;
export type VideoType = (typeof VIDEO_TYPES)[number];

export type VideoInput =
  | { type: 'demo'; agentName: string; agentDescription: string }
  | { type: 'marketing'; productName: string; features: string[] }
  | { type: 'screenshot'; imageUrl: string; description: string }
  | { type: 'tutorial'; topic: string; steps: string[] };

/** Limits on what is sent to the render API (characters, list items). */
export const VIDEO_LIMITS = { name: 200, text: 2_000, url: 2_048, items: 20, item: 500 } as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function text(body: Record<string, unknown>, field: string, max: number): string {
  const value = body[field];
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    throw new DomainError('FIELD_REQUIRED', { field });
  }
  if (typeof value !== 'string') throw new DomainError('FIELD_NOT_STRING', { field });
  const trimmed = value.trim();
  if (trimmed.length > max) throw new DomainError('FIELD_TOO_LONG', { field, max });
  return trimmed;
}

function list(body: Record<string, unknown>, field: string): string[] {
  const value = body[field];
  if (value === undefined || value === null) throw new DomainError('FIELD_REQUIRED', { field });
  const invalid = () => new DomainError('INVALID_TEXT_LIST', { field, max: VIDEO_LIMITS.items, length: VIDEO_LIMITS.item });
  if (!Array.isArray(value) || value.length === 0 || value.length > VIDEO_LIMITS.items) throw invalid();
  return value.map((item) => {
    if (typeof item !== 'string' || item.trim() === '' || item.trim().length > VIDEO_LIMITS.item) throw invalid();
    return item.trim();
  });
}

function httpUrl(body: Record<string, unknown>, field: string): string {
  const value = text(body, field, VIDEO_LIMITS.url);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new DomainError('FIELD_NOT_HTTP_URL', { field });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DomainError('FIELD_NOT_HTTP_URL', { field });
  return url.href;
}

/**
 * The request body as one of the four inputs, or a field's own code. The route's schema has checked `type`; the
 * other fields are read here, since which of them count depends on the type.
 */
export function parseVideoRequest(body: GenerateVideoBody): VideoInput {
  switch (body.type) {
    case 'demo':
      return {
        type: 'demo',
        agentName: text(body, 'agentName', VIDEO_LIMITS.name),
        agentDescription: text(body, 'agentDescription', VIDEO_LIMITS.text),
      };
    case 'marketing':
      return { type: 'marketing', productName: text(body, 'productName', VIDEO_LIMITS.name), features: list(body, 'features') };
    case 'screenshot':
      return { type: 'screenshot', imageUrl: httpUrl(body, 'imageUrl'), description: text(body, 'description', VIDEO_LIMITS.text) };
    case 'tutorial':
      return { type: 'tutorial', topic: text(body, 'topic', VIDEO_LIMITS.name), steps: list(body, 'steps') };
  }
}

/** Why a job did not complete; `reason` is logged and stored, never sent to the caller. */
export class VideoJobError extends Error {
  constructor(
    readonly kind: 'render' | 'download' | 'upload',
    readonly reason: string,
  ) {
    super(`${kind}: ${reason}`);
    this.name = 'VideoJobError';
  }
}

type VideoConfig = NonNullable<WebConfig['video']>;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** JSON from the render API; 2xx required. */
async function renderCall(
  video: VideoConfig,
  method: string,
  path: string,
  signal: AbortSignal,
  init: { body?: unknown; headers?: Record<string, string> } = {},
) {
  let res: Response;
  try {
    res = await fetch(`${video.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${video.apiKey}`,
        accept: 'application/json',
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      redirect: 'manual',
      signal,
    });
  } catch (err) {
    if (signal.aborted) throw err;
    throw new VideoJobError('render', `${method} ${path.split('/').slice(0, 3).join('/')} unreachable`);
  }
  const raw = await res.text();
  let json: unknown;
  try {
    json = raw === '' ? undefined : JSON.parse(raw);
  } catch {
    json = undefined;
  }
  if (res.status < 200 || res.status >= 300) {
    const detail = isObject(json) && typeof json.error === 'string' ? `: ${json.error.slice(0, 200)}` : '';
    throw new VideoJobError('render', `render API answered ${res.status}${detail}`);
  }
  if (!isObject(json)) throw new VideoJobError('render', 'render API answered without a JSON object');
  return json;
}

/** The render's input fields, without our `type` (it is the template). */
function templateInput(input: VideoInput): Record<string, unknown> {
  const { type: _type, ...fields } = input;
  return fields;
}

/** Renders and answers where the finished video is. */
async function render(video: VideoConfig, jobId: string, input: VideoInput, signal: AbortSignal, onRenderId: (id: string) => void) {
  const created = await renderCall(video, 'POST', '/v1/renders', signal, {
    body: { template: input.type, input: templateInput(input), output: { format: 'mp4', resolution: '1080p' } },
    headers: { 'idempotency-key': jobId },
  });
  if (typeof created.id !== 'string' || created.id === '') throw new VideoJobError('render', 'render API gave no render id');
  const renderId = created.id;
  onRenderId(renderId);
  for (;;) {
    await sleep(video.pollIntervalMs, signal);
    const state = await renderCall(video, 'GET', `/v1/renders/${encodeURIComponent(renderId)}`, signal);
    if (state.status === 'failed') {
      throw new VideoJobError('render', `render failed${typeof state.error === 'string' ? `: ${state.error.slice(0, 200)}` : ''}`);
    }
    if (state.status === 'succeeded') {
      const output = isObject(state.output) ? state.output : {};
      if (typeof output.url !== 'string') throw new VideoJobError('render', 'render succeeded without an output URL');
      return { renderId, outputUrl: output.url, contentType: typeof output.contentType === 'string' ? output.contentType : undefined };
    }
    // queued, rendering, or a state this contract does not name yet: keep waiting until the deadline.
  }
}

const MAX_REDIRECTS = 3;

/** Downloads the rendered video, at most `maxBytes`; the key goes only to the render API's own origin. */
async function download(
  video: VideoConfig,
  outputUrl: string,
  signal: AbortSignal,
): Promise<{ bytes: Buffer; contentType: string | undefined }> {
  const apiOrigin = new URL(video.apiUrl).origin;
  let url: URL;
  try {
    url = new URL(outputUrl, `${video.apiUrl}/`);
  } catch {
    throw new VideoJobError('download', 'output URL is not a URL');
  }
  for (let hop = 0; ; hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new VideoJobError('download', 'output URL is not http(s)');
    let res: Response;
    try {
      res = await fetch(url, {
        headers: url.origin === apiOrigin ? { authorization: `Bearer ${video.apiKey}` } : {},
        redirect: 'manual',
        signal,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new VideoJobError('download', 'output unreachable');
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      if (hop >= MAX_REDIRECTS) throw new VideoJobError('download', 'too many redirects');
      url = new URL(location, url);
      continue;
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new VideoJobError('download', `output answered ${res.status}`);
    }
    const declared = Number(res.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > video.maxBytes) {
      await res.body?.cancel();
      throw new VideoJobError('download', `output larger than ${video.maxBytes} bytes`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    if (res.body) {
      for await (const chunk of res.body) {
        size += chunk.byteLength;
        if (size > video.maxBytes) throw new VideoJobError('download', `output larger than ${video.maxBytes} bytes`);
        chunks.push(Buffer.from(chunk));
      }
    }
    if (size === 0) throw new VideoJobError('download', 'output is empty');
    return { bytes: Buffer.concat(chunks), contentType: res.headers.get('content-type') ?? undefined };
  }
}

const EXTENSIONS: Record<string, string> = { 'video/mp4': 'mp4', 'video/webm': 'webm', 'video/quicktime': 'mov' };

/** A video content type (parameters dropped); `video/mp4` when neither answer names one. */
function videoType(...candidates: Array<string | undefined>): string {
  for (const candidate of candidates) {
    const type = candidate?.split(';')[0]?.trim().toLowerCase();
    if (type && /^video\/[a-z0-9.+-]+$/.test(type)) return type;
  }
  return 'video/mp4';
}

/** Best effort: the render is no longer wanted. */
function cancelRender(video: VideoConfig, renderId: string, log: Logger) {
  void fetch(`${video.apiUrl}/v1/renders/${encodeURIComponent(renderId)}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${video.apiKey}` },
    redirect: 'manual',
    signal: AbortSignal.timeout(5_000),
  })
    .then((res) => res.body?.cancel())
    .catch(() => log.warn({ renderId }, 'render cancellation failed'));
}

/**
 * Runs one job for `userId`: records it (`rendering`), renders, downloads, uploads to `videos/<user>/<job>.<ext>`
 * and completes the row with the URL. Every failure is recorded on the row (`failed`, or `timed_out` when the
 * deadline passed) and refused in fixed words (`VIDEO_GENERATION_FAILED`, `VIDEO_UPLOAD_FAILED`,
 * `VIDEO_GENERATION_TIMED_OUT`).
 */
export async function generateVideo(
  db: Database,
  { video, blob }: { video: VideoConfig | undefined; blob: BlobConfig | undefined },
  { userId, input, log, now }: { userId: string; input: VideoInput; log: Logger; now: () => number },
): Promise<{ url: string; jobId: string }> {
  if (!video || !blob) {
    log.warn({ video: Boolean(video), blob: Boolean(blob) }, 'video generation needs VIDEO_API_URL/KEY and BLOB_* settings');
    throw new DomainError('VIDEO_NOT_CONFIGURED');
  }
  const jobId = newId('videoJob');
  await db.withUser(userId, (trx) =>
    trx
      .insertInto('video_jobs')
      .values({ id: jobId, user_id: userId, type: input.type, input: JSON.stringify(templateInput(input)), created_at: new Date(now()) })
      .execute(),
  );
  const finish = (values: {
    status: VideoJobStatus;
    render_id?: string | null;
    error?: string | null;
    object_key?: string;
    url?: string;
    bytes?: number;
    content_type?: string;
  }) =>
    db.withUser(userId, (trx) =>
      trx
        .updateTable('video_jobs')
        .set({ ...values, completed_at: new Date(now()) })
        .where('id', '=', jobId)
        .execute(),
    );

  const deadline = AbortSignal.timeout(video.timeoutMs);
  // Set from inside render(): the id is wanted for cancellation even when the render never finishes.
  const job: { renderId: string | null } = { renderId: null };
  try {
    const rendered = await render(video, jobId, input, deadline, (id) => {
      job.renderId = id;
    });
    const { bytes, contentType: served } = await download(video, rendered.outputUrl, deadline);
    const contentType = videoType(served, rendered.contentType);
    const key = `videos/${userId}/${jobId}.${EXTENSIONS[contentType] ?? 'mp4'}`;
    let url: string;
    try {
      ({ url } = await putObject(blob, { key, body: bytes, contentType, signal: deadline, now: new Date(now()) }));
    } catch (err) {
      if (err instanceof BlobStoreError) throw new VideoJobError('upload', err.reason);
      throw err;
    }
    await finish({
      status: 'completed',
      render_id: rendered.renderId,
      object_key: key,
      url,
      bytes: bytes.length,
      content_type: contentType,
    });
    log.info({ jobId, renderId: rendered.renderId, type: input.type, bytes: bytes.length }, 'video generated');
    return { url, jobId };
  } catch (err) {
    const { renderId } = job;
    if (deadline.aborted) {
      if (renderId) cancelRender(video, renderId, log);
      await finish({ status: 'timed_out', render_id: renderId, error: `no result within ${video.timeoutMs} ms` }).catch(() => {});
      log.warn({ jobId, renderId, timeoutMs: video.timeoutMs }, 'video generation timed out');
      throw new DomainError('VIDEO_GENERATION_TIMED_OUT');
    }
    const reason = err instanceof VideoJobError ? err.message : 'unexpected error';
    await finish({ status: 'failed', render_id: renderId, error: reason }).catch(() => {});
    if (err instanceof VideoJobError) {
      log.error({ jobId, renderId, reason }, 'video generation failed');
      throw new DomainError(err.kind === 'upload' ? 'VIDEO_UPLOAD_FAILED' : 'VIDEO_GENERATION_FAILED');
    }
    log.error({ err, jobId }, 'video generation failed');
    throw new DomainError('VIDEO_GENERATION_FAILED');
  }
}
