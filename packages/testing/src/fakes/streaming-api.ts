import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody as readJson } from '../fake-http.js';

/**
 * A local streaming provider speaking the Mux Video REST API the web service uses:
 * `POST /video/v1/live-streams` (201 `{ data }`), `GET /video/v1/live-streams?status=&limit=&page=`,
 * `GET|DELETE /video/v1/live-streams/:id`, `GET|DELETE /video/v1/assets/:id`. Every request needs HTTP Basic
 * `<token id>:<token secret>` (401 in Mux's error shape otherwise). Streams start `idle`; tests make them live
 * with `setStatus`. Webhooks are signed with `signStreamingWebhook`, as the provider signs them.
 */

export interface FakeLiveStream {
  id: string;
  stream_key: string;
  status: 'idle' | 'active' | 'disabled';
  playback_ids: Array<{ id: string; policy: 'public' | 'signed' }>;
  /** Unix seconds as a string, as Mux sends it. */
  created_at: string;
  passthrough?: string;
  new_asset_settings?: unknown;
  latency_mode: string;
  reconnect_window: number;
}

export interface FakeAsset {
  id: string;
  status: 'preparing' | 'ready' | 'errored';
  live_stream_id?: string;
  duration?: number;
  resolution_tier?: string;
}

export interface StreamingApiRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  body: unknown;
}

export interface StreamingApiBehaviour {
  /** `POST /video/v1/live-streams` answers 500. */
  failCreate?: boolean;
  /** `GET /video/v1/live-streams` answers 500. */
  failList?: boolean;
  /** `DELETE /video/v1/assets/:id` answers 500. */
  failDeleteAsset?: boolean;
  /** Ignore the `status` filter of the list (a provider that lists everything). */
  ignoreStatusFilter?: boolean;
  /** Wait this long before answering. */
  delayMs?: number;
}

export interface FakeStreamingApi {
  /** `http://127.0.0.1:<port>`: STREAMING_API_URL. */
  url: string;
  /** `<token id>:<token secret>`: STREAMING_API_KEY. */
  apiKey: string;
  readonly liveStreams: Map<string, FakeLiveStream>;
  readonly assets: Map<string, FakeAsset>;
  /** Asset ids in the order DELETE removed them. */
  readonly deletedAssets: string[];
  readonly requests: StreamingApiRequest[];
  behaviour: StreamingApiBehaviour;
  /** A stream created outside the platform (the provider's dashboard, another app). */
  addLiveStream(options?: {
    status?: FakeLiveStream['status'];
    playback?: 'public' | 'signed' | 'none';
    createdAt?: number;
  }): FakeLiveStream;
  setStatus(id: string, status: FakeLiveStream['status']): void;
  addAsset(asset: Omit<FakeAsset, 'status'> & { status?: FakeAsset['status'] }): FakeAsset;
  close(): Promise<void>;
}

/** Mux-style ids: 43 characters of base62-ish text. */
const muxId = () => randomBytes(32).toString('base64url').replace(/[-_]/g, 'x').slice(0, 43);

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the `streaming-signature` header value. */
export function signStreamingWebhook(secret: string, body: string | Buffer, timestampSeconds = Math.floor(Date.now() / 1000)): string {
  const signature = createHmac('sha256', secret).update(`${timestampSeconds}.`).update(body).digest('hex');
  return `t=${timestampSeconds},v1=${signature}`;
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

const muxError = (type: string, message: string) => ({ error: { type, messages: [message] } });

export async function startFakeStreamingApi(options: { tokenId?: string; tokenSecret?: string } = {}): Promise<FakeStreamingApi> {
  const tokenId = options.tokenId ?? `tok_${randomUUID()}`;
  const tokenSecret = options.tokenSecret ?? randomBytes(24).toString('base64url');
  const expected = `Basic ${Buffer.from(`${tokenId}:${tokenSecret}`).toString('base64')}`;
  const liveStreams = new Map<string, FakeLiveStream>();
  const assets = new Map<string, FakeAsset>();
  const deletedAssets: string[] = [];
  const requests: StreamingApiRequest[] = [];

  const newStream = (
    input: Record<string, unknown>,
    status: FakeLiveStream['status'],
    playback: 'public' | 'signed' | 'none',
    createdAt: number,
  ) => {
    const stream: FakeLiveStream = {
      id: muxId(),
      stream_key: randomUUID(),
      status,
      playback_ids: playback === 'none' ? [] : [{ id: muxId(), policy: playback }],
      created_at: String(createdAt),
      ...(typeof input.passthrough === 'string' ? { passthrough: input.passthrough } : {}),
      ...(input.new_asset_settings !== undefined ? { new_asset_settings: input.new_asset_settings } : {}),
      latency_mode: typeof input.latency_mode === 'string' ? input.latency_mode : 'standard',
      reconnect_window: typeof input.reconnect_window === 'number' ? input.reconnect_window : 60,
    };
    liveStreams.set(stream.id, stream);
    return stream;
  };

  const fake: FakeStreamingApi = {
    url: '',
    apiKey: `${tokenId}:${tokenSecret}`,
    liveStreams,
    assets,
    deletedAssets,
    requests,
    behaviour: {},
    addLiveStream({ status = 'active', playback = 'public', createdAt = Math.floor(Date.now() / 1000) } = {}) {
      return newStream({}, status, playback, createdAt);
    },
    setStatus(id, status) {
      const stream = liveStreams.get(id);
      if (!stream) throw new Error(`No live stream ${id}`);
      stream.status = status;
    },
    addAsset(asset) {
      const stored: FakeAsset = { status: 'ready', ...asset };
      assets.set(stored.id, stored);
      return stored;
    },
    close: async () => {},
  };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake-streaming.local');
    const body = await readJson(req);
    const authorization = typeof req.headers.authorization === 'string' ? req.headers.authorization : undefined;
    requests.push({ method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), authorization, body });
    const { delayMs = 0 } = fake.behaviour;
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (res.destroyed) return;
    if (authorization !== expected) return send(res, 401, muxError('unauthorized', 'Unauthorized request'));

    const path = url.pathname;
    if (path === '/video/v1/live-streams' && req.method === 'POST') {
      if (fake.behaviour.failCreate) return send(res, 500, muxError('internal_error', 'Internal error'));
      const input = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
      const policies = Array.isArray(input.playback_policy)
        ? input.playback_policy
        : Array.isArray(input.playback_policies)
          ? input.playback_policies
          : [];
      const policy = policies.includes('public') ? 'public' : policies.includes('signed') ? 'signed' : 'none';
      return send(res, 201, { data: newStream(input, 'idle', policy, Math.floor(Date.now() / 1000)) });
    }
    if (path === '/video/v1/live-streams' && req.method === 'GET') {
      if (fake.behaviour.failList) return send(res, 500, muxError('internal_error', 'Internal error'));
      const status = url.searchParams.get('status');
      const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 25) || 25, 1), 100);
      const page = Math.max(Number(url.searchParams.get('page') ?? 1) || 1, 1);
      // Newest first, as the provider sorts them.
      const all = [...liveStreams.values()]
        .filter((s) => !status || fake.behaviour.ignoreStatusFilter || s.status === status)
        .sort((a, b) => Number(b.created_at) - Number(a.created_at));
      return send(res, 200, { data: all.slice((page - 1) * limit, page * limit) });
    }
    const streamMatch = /^\/video\/v1\/live-streams\/([^/]+)$/.exec(path);
    if (streamMatch) {
      const id = decodeURIComponent(streamMatch[1] ?? '');
      const stream = liveStreams.get(id);
      if (!stream) return send(res, 404, muxError('not_found', 'Live stream not found'));
      if (req.method === 'GET') return send(res, 200, { data: stream });
      if (req.method === 'DELETE') {
        liveStreams.delete(id);
        return send(res, 204);
      }
    }
    const assetMatch = /^\/video\/v1\/assets\/([^/]+)$/.exec(path);
    if (assetMatch) {
      const id = decodeURIComponent(assetMatch[1] ?? '');
      if (req.method === 'DELETE') {
        if (fake.behaviour.failDeleteAsset) return send(res, 500, muxError('internal_error', 'Internal error'));
        if (!assets.has(id)) return send(res, 404, muxError('not_found', 'Asset not found'));
        assets.delete(id);
        deletedAssets.push(id);
        return send(res, 204);
      }
      const asset = assets.get(id);
      if (req.method === 'GET') return asset ? send(res, 200, { data: asset }) : send(res, 404, muxError('not_found', 'Asset not found'));
    }
    send(res, 404, muxError('not_found', 'Not found'));
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
