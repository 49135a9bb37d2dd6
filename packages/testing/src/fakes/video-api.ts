import { randomUUID } from 'node:crypto';
import { type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody as readJson } from '../fake-http.js';

/**
 * A local render API with the contract documented in apps/web/src/modules/video/video.service.ts:
 * `POST /v1/renders` `{ template, input, output }` (201 `{ id, status: 'queued' }`; 422 for an unknown template or
 * a missing input field), `GET /v1/renders/:id` (`queued` → `rendering` → `succeeded` over `pollsUntilDone` polls,
 * then `output.url`), `GET /v1/renders/:id/output` (the MP4 bytes; needs the bearer key like every call),
 * `DELETE /v1/renders/:id` (cancels). Every call needs `Authorization: Bearer <apiKey>` (401 otherwise).
 */

export type FakeRenderStatus = 'queued' | 'rendering' | 'succeeded' | 'failed' | 'cancelled';

export interface FakeRender {
  id: string;
  template: string;
  input: Record<string, unknown>;
  output: unknown;
  idempotencyKey: string | undefined;
  status: FakeRenderStatus;
  polls: number;
  /** The rendered file, once succeeded. */
  video: Buffer | undefined;
}

export interface VideoApiBehaviour {
  /** Status polls before a render succeeds (2 unless told). */
  pollsUntilDone?: number;
  /** Renders fail with this message instead of succeeding. */
  failWith?: string;
  /** Renders never finish (stay `rendering`). */
  neverFinish?: boolean;
  /** `output.url` points here instead of this server (e.g. a CDN or a redirecting URL). */
  outputUrl?: (render: FakeRender) => string;
  /** The output endpoint answers with this content type (`video/mp4` unless told). */
  outputContentType?: string;
  /** The output endpoint answers with this many bytes of padding after the header, to exercise size limits. */
  outputPaddingBytes?: number;
}

export interface VideoApiRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: unknown;
}

export interface FakeVideoApi {
  /** VIDEO_API_URL */
  url: string;
  apiKey: string;
  readonly renders: Map<string, FakeRender>;
  readonly requests: VideoApiRequest[];
  behaviour: VideoApiBehaviour;
  close(): Promise<void>;
}

/** Required input fields of each template. */
export const VIDEO_TEMPLATE_FIELDS: Record<string, string[]> = {
  demo: ['agentName', 'agentDescription'],
  marketing: ['productName', 'features'],
  screenshot: ['imageUrl', 'description'],
  tutorial: ['topic', 'steps'],
};

/**
 * A small, well-formed ISO-BMFF file start (`ftyp` box, brand `isom`) followed by a `free` box carrying the render's
 * template and input as JSON, so a test can tell which render's bytes were stored.
 */
export function fakeVideoBytes(render: Pick<FakeRender, 'id' | 'template' | 'input'>, paddingBytes = 0): Buffer {
  const ftyp = Buffer.alloc(24);
  ftyp.writeUInt32BE(24, 0);
  ftyp.write('ftyp', 4, 'latin1');
  ftyp.write('isom', 8, 'latin1');
  ftyp.writeUInt32BE(0x200, 12);
  ftyp.write('isomiso2', 16, 'latin1');
  const payload = Buffer.concat([
    Buffer.from(JSON.stringify({ render: render.id, template: render.template, input: render.input })),
    Buffer.alloc(paddingBytes),
  ]);
  const free = Buffer.alloc(8);
  free.writeUInt32BE(8 + payload.length, 0);
  free.write('free', 4, 'latin1');
  return Buffer.concat([ftyp, free, payload]);
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status);
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

export async function startFakeVideoApi(options: { apiKey?: string } = {}): Promise<FakeVideoApi> {
  const apiKey = options.apiKey ?? `vk_${randomUUID().replaceAll('-', '')}`;
  const renders = new Map<string, FakeRender>();
  const requests: VideoApiRequest[] = [];
  const fake: FakeVideoApi = { url: '', apiKey, renders, requests, behaviour: {}, close: async () => {} };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake-video.local');
    const body = await readJson(req);
    const authorization = typeof req.headers.authorization === 'string' ? req.headers.authorization : undefined;
    requests.push({ method: req.method ?? 'GET', path: url.pathname, authorization, body });
    if (authorization !== `Bearer ${apiKey}`) return send(res, 401, { error: 'Invalid API key' });

    if (req.method === 'POST' && url.pathname === '/v1/renders') {
      const input = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
      const template = typeof input.template === 'string' ? input.template : '';
      const fields = VIDEO_TEMPLATE_FIELDS[template];
      if (!fields) return send(res, 422, { error: `Unknown template: ${template}` });
      const values = typeof input.input === 'object' && input.input !== null ? (input.input as Record<string, unknown>) : {};
      const missing = fields.find(
        (f) => values[f] === undefined || values[f] === '' || (Array.isArray(values[f]) && (values[f] as unknown[]).length === 0),
      );
      if (missing) return send(res, 422, { error: `Missing input field: ${missing}` });
      const idempotencyKey = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined;
      const existing = idempotencyKey ? [...renders.values()].find((r) => r.idempotencyKey === idempotencyKey) : undefined;
      if (existing) return send(res, 201, { id: existing.id, status: existing.status });
      const render: FakeRender = {
        id: `rnd_${randomUUID().replaceAll('-', '').slice(0, 20)}`,
        template,
        input: values,
        output: input.output,
        idempotencyKey,
        status: 'queued',
        polls: 0,
        video: undefined,
      };
      renders.set(render.id, render);
      return send(res, 201, { id: render.id, status: render.status });
    }

    const match = /^\/v1\/renders\/([^/]+)(\/output)?$/.exec(url.pathname);
    const render = match ? renders.get(decodeURIComponent(match[1] ?? '')) : undefined;
    if (match && !render) return send(res, 404, { error: 'Render not found' });
    if (render && match?.[2] && req.method === 'GET') {
      if (render.status !== 'succeeded' || !render.video) return send(res, 409, { error: 'Render not finished' });
      res.writeHead(200, { 'content-type': fake.behaviour.outputContentType ?? 'video/mp4', 'content-length': render.video.length });
      res.end(render.video);
      return;
    }
    if (render && req.method === 'GET') {
      const { pollsUntilDone = 2, failWith, neverFinish } = fake.behaviour;
      if (render.status === 'queued' || render.status === 'rendering') {
        render.polls += 1;
        if (failWith) render.status = 'failed';
        else if (!neverFinish && render.polls >= pollsUntilDone) {
          render.status = 'succeeded';
          render.video = fakeVideoBytes(render, fake.behaviour.outputPaddingBytes);
        } else render.status = 'rendering';
      }
      const progress = render.status === 'succeeded' ? 100 : Math.min(90, render.polls * 30);
      return send(res, 200, {
        id: render.id,
        status: render.status,
        progress,
        ...(render.status === 'failed' ? { error: failWith } : {}),
        ...(render.status === 'succeeded'
          ? {
              output: {
                url: fake.behaviour.outputUrl?.(render) ?? `${fake.url}/v1/renders/${render.id}/output`,
                contentType: 'video/mp4',
                bytes: render.video?.length,
              },
            }
          : {}),
      });
    }
    if (render && req.method === 'DELETE') {
      if (render.status === 'queued' || render.status === 'rendering') render.status = 'cancelled';
      return send(res, 204);
    }
    send(res, 404, { error: 'Not found' });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
