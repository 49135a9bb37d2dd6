import { createHmac } from 'node:crypto';
import { DomainError, type Logger, safeEqual } from '@aop/core';
import type { DB } from '@aop/db';
import { type Kysely, sql } from 'kysely';
import type { Address } from 'viem';
import type { WebConfig } from '../../config.js';
import {
  type GateBalance,
  detectWalletKind,
  gateConfigured,
  gatingClient,
  readGateBalance,
  wholeTokens,
} from '../../platform/clients/chain.js';
import { type BatchWorker, createBatchWorker } from '../../platform/batch-worker.js';

/**
 * Live streaming (spec §2.11, §3.4, §4.16, §6) through a Mux-compatible REST API:
 * `POST /video/v1/live-streams`, `GET /video/v1/live-streams?status=active`,
 * `DELETE /video/v1/assets/:id`, HTTP Basic `<token id>:<token secret>`, answers
 * wrapped in `{ data }`. Knows nothing of HTTP on our side: refusals are catalogue codes.
 */

export const DEFAULT_DJ_NAME = 'Anonymous DJ';
export const DJ_NAME_MAX = 100;

/** §6: archived when the asset is at least this tall (short side)… */
export const ARCHIVE_MIN_RESOLUTION = 1080;
/** …and strictly longer than this (15 minutes). */
export const ARCHIVE_MIN_DURATION_SECONDS = 15 * 60;
/** §8: the webhook's timestamp tolerance. */
export const WEBHOOK_TOLERANCE_MS = 5 * 60_000;

/** What encoders are told to send (OBS: Settings → Audio / Output): AAC stereo at 48 kHz, 160 kbps. */
export const RECOMMENDED_AUDIO = Object.freeze({ audioBitrate: 160, encoder: 'AAC', sampleRate: 48_000, channels: 2 });

type StreamingConfig = WebConfig['streaming'];

export interface ProviderPlaybackId {
  id: string;
  policy: string;
}

/** The fields of the provider's live-stream object this service reads. */
export interface ProviderLiveStream {
  id: string;
  stream_key: string;
  status: string;
  playback_ids: ProviderPlaybackId[];
  /** Unix seconds, as a decimal string. */
  created_at: string | undefined;
}

/** A call to the streaming API that did not give the expected answer; `reason` is safe to log (no key, no body). */
export class StreamingApiError extends Error {
  constructor(
    readonly reason: string,
    readonly status?: number,
  ) {
    super(`Streaming API request failed: ${reason}`);
    this.name = 'StreamingApiError';
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function toLiveStream(value: unknown): ProviderLiveStream | undefined {
  if (!isObject(value) || typeof value.id !== 'string' || value.id === '') return undefined;
  const playbackIds = Array.isArray(value.playback_ids)
    ? value.playback_ids.filter(
        (p): p is ProviderPlaybackId => isObject(p) && typeof p.id === 'string' && p.id !== '' && typeof p.policy === 'string',
      )
    : [];
  return {
    id: value.id,
    stream_key: typeof value.stream_key === 'string' ? value.stream_key : '',
    status: typeof value.status === 'string' ? value.status : 'idle',
    playback_ids: playbackIds,
    created_at: typeof value.created_at === 'string' || typeof value.created_at === 'number' ? String(value.created_at) : undefined,
  };
}

/** The public playback id listeners can use; streams with only signed playback have none. */
export const publicPlaybackId = (stream: Pick<ProviderLiveStream, 'playback_ids'>): string | null =>
  stream.playback_ids.find((p) => p.policy === 'public')?.id ?? null;

/** The provider's list is read this many pages deep at most (100 streams a page). */
const LIST_PAGE_SIZE = 100;
const LIST_MAX_PAGES = 10;

export class StreamingClient {
  private readonly authorization: string;

  constructor(private readonly config: Pick<StreamingConfig, 'apiUrl' | 'timeoutMs'> & { apiKey: string }) {
    this.authorization = `Basic ${Buffer.from(config.apiKey, 'utf8').toString('base64')}`;
  }

  private async call(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    let res: Response;
    try {
      res = await fetch(`${this.config.apiUrl}${path}`, {
        method,
        headers: {
          authorization: this.authorization,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        // A redirect is not followed: the key must not travel to another host.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.config.timeoutMs),
      });
    } catch (err) {
      const name = (err as { name?: string }).name;
      throw new StreamingApiError(name === 'TimeoutError' ? 'timeout' : 'unreachable');
    }
    let text: string;
    try {
      text = await res.text();
    } catch {
      throw new StreamingApiError('body not read', res.status);
    }
    let json: unknown;
    if (text !== '') {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
    }
    return { status: res.status, json };
  }

  /** A new live stream with public playback (its recordings public too); `passthrough` is kept by the provider. */
  async createLiveStream(passthrough: string): Promise<ProviderLiveStream> {
    const { status, json } = await this.call('POST', '/video/v1/live-streams', {
      playback_policy: ['public'],
      new_asset_settings: { playback_policy: ['public'] },
      passthrough,
    });
    if (status !== 201 && status !== 200) throw new StreamingApiError(`create answered ${status}`, status);
    const stream = toLiveStream(isObject(json) ? json.data : undefined);
    if (!stream || stream.stream_key === '') throw new StreamingApiError('create answered without a stream id or key', status);
    return stream;
  }

  /** Every live stream the provider reports `active` (paged, at most 1,000). */
  async listActiveLiveStreams(): Promise<ProviderLiveStream[]> {
    const active: ProviderLiveStream[] = [];
    for (let page = 1; page <= LIST_MAX_PAGES; page++) {
      const { status, json } = await this.call('GET', `/video/v1/live-streams?status=active&limit=${LIST_PAGE_SIZE}&page=${page}`);
      if (status !== 200 || !isObject(json) || !Array.isArray(json.data)) throw new StreamingApiError(`list answered ${status}`, status);
      for (const item of json.data) {
        const stream = toLiveStream(item);
        // The filter is asked for, and checked again: a provider ignoring it must not list idle streams as live.
        if (stream && stream.status === 'active') active.push(stream);
      }
      if (json.data.length < LIST_PAGE_SIZE) break;
    }
    return active;
  }

  /** Removes a live stream (used when our record of a just-created stream cannot be written). */
  async deleteLiveStream(id: string): Promise<void> {
    const { status } = await this.call('DELETE', `/video/v1/live-streams/${encodeURIComponent(id)}`);
    if (status !== 204 && status !== 200 && status !== 404) throw new StreamingApiError(`delete stream answered ${status}`, status);
  }

  /** Deletes a recorded asset; one that is already gone counts as deleted. */
  async deleteAsset(id: string): Promise<'deleted' | 'already_gone'> {
    const { status } = await this.call('DELETE', `/video/v1/assets/${encodeURIComponent(id)}`);
    if (status === 204 || status === 200) return 'deleted';
    if (status === 404) return 'already_gone';
    throw new StreamingApiError(`delete asset answered ${status}`, status);
  }
}

/** A client when `STREAMING_API_KEY` is set. */
export function streamingClient(config: StreamingConfig): StreamingClient | undefined {
  return config.apiKey ? new StreamingClient({ apiUrl: config.apiUrl, timeoutMs: config.timeoutMs, apiKey: config.apiKey }) : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Gate

/**
 * Spec §4.16: the wallet must be a deployed smart-contract wallet (an address with code that is not an EIP-7702
 * delegation; EOAs and undeployed counterfactual wallets are refused) holding at least GATE_MIN_BALANCE (§8:
 * 1,250,000) whole gate tokens, scaled by the token's own decimals, on the gating network. `STREAMING_NOT_CONFIGURED`
 * when gating is not configured (streams cannot be created then), `GATE_CHECK_FAILED` when the network cannot answer,
 * `INSUFFICIENT_GATE_TOKENS` with the numbers otherwise.
 */
export async function checkStreamGate(gating: WebConfig['gating'], wallet: Address, log: Logger): Promise<GateBalance> {
  const client = gatingClient(gating);
  if (!client || !gateConfigured(gating)) {
    log.warn({}, 'stream creation needs GATING_RPC_URL and GATE_TOKEN_ADDRESS');
    throw new DomainError('STREAMING_NOT_CONFIGURED');
  }
  let kind: Awaited<ReturnType<typeof detectWalletKind>>;
  let gate: GateBalance;
  try {
    // No signature is involved here: `0x` makes an address without code an EOA.
    [kind, gate] = await Promise.all([
      detectWalletKind(client, wallet, '0x'),
      readGateBalance(client, { token: gating.tokenAddress, holder: wallet, minBalance: gating.minBalance }),
    ]);
  } catch (err) {
    log.error({ err }, 'stream gate check failed');
    throw new DomainError('GATE_CHECK_FAILED');
  }
  if (kind !== 'contract') throw new DomainError('WALLET_SMART_CONTRACT_WALLET');
  if (!gate.allowed) {
    const required = wholeTokens(gate.required, gate.decimals);
    const balance = wholeTokens(gate.balance, gate.decimals);
    throw new DomainError('INSUFFICIENT_GATE_TOKENS', { required, balance }, { required, balance });
  }
  return gate;
}

// ---------------------------------------------------------------------------------------------------------------
// Streams

export interface CreatedStream {
  id: string;
  name: string;
  wallet: string;
  streamKey: string;
  rtmpUrl: string;
  fullRtmpUrl: string;
  playbackId: string | null;
  status: 'created';
}

/**
 * Creates the stream at the provider and records it. When the record cannot be written the provider's stream is
 * deleted again, so no stream exists that we do not know about.
 */
export async function createStream(
  db: Kysely<DB>,
  client: StreamingClient,
  config: StreamingConfig,
  { wallet, name, now, log }: { wallet: string; name: string; now: Date; log: Logger },
): Promise<CreatedStream> {
  const stream = await client.createLiveStream(`radio:${wallet}`);
  const playbackId = publicPlaybackId(stream);
  try {
    await db
      .insertInto('live_streams')
      .values({ id: stream.id, name, wallet, playback_id: playbackId, status: 'created', created_at: now, updated_at: now })
      .execute();
  } catch (err) {
    await client.deleteLiveStream(stream.id).catch((cleanup: unknown) => {
      log.error({ err: cleanup, liveStreamId: stream.id }, 'orphan live stream could not be deleted at the provider');
    });
    throw err;
  }
  return {
    id: stream.id,
    name,
    wallet,
    streamKey: stream.stream_key,
    rtmpUrl: config.rtmpUrl,
    fullRtmpUrl: `${config.rtmpUrl}/${stream.stream_key}`,
    playbackId,
    status: 'created',
  };
}

/** §2.11 list item. */
export interface LiveDj {
  id: string;
  name: string;
  wallet: string | null;
  playbackId: string | null;
  streamKey: string;
  status: 'active';
  startedAt: number;
  hlsUrl: string | null;
  embedUrl: string | null;
}

/**
 * A stream key publishes to the stream: whoever holds it can broadcast as that DJ. The public list shows only its
 * last four characters (enough for a DJ to recognise their own stream); the full key goes to the creator alone.
 */
export const maskStreamKey = (key: string): string => (key.length > 8 ? `****${key.slice(-4)}` : '****');

/**
 * The provider's active streams joined with our records: name and wallet from the row that created the stream
 * (`Anonymous DJ` and null for streams made elsewhere), `startedAt` from the last `video.live_stream.active` event,
 * else the stream's creation time.
 */
export async function liveDjs(db: Kysely<DB>, config: StreamingConfig, active: ProviderLiveStream[], nowMs: number): Promise<LiveDj[]> {
  if (active.length === 0) return [];
  const rows = await db
    .selectFrom('live_streams')
    .select(['id', 'name', 'wallet', 'active_since'])
    .where(
      'id',
      'in',
      active.map((s) => s.id),
    )
    .execute();
  const records = new Map(rows.map((r) => [r.id, r]));
  return active.map((stream) => {
    const record = records.get(stream.id);
    const playbackId = publicPlaybackId(stream);
    const createdAt = Number(stream.created_at);
    const startedAt = record?.active_since
      ? Math.floor(record.active_since.getTime() / 1000)
      : Number.isFinite(createdAt) && createdAt > 0
        ? Math.floor(createdAt)
        : Math.floor(nowMs / 1000);
    return {
      id: stream.id,
      name: record?.name || DEFAULT_DJ_NAME,
      wallet: record?.wallet ?? null,
      playbackId,
      streamKey: maskStreamKey(stream.stream_key),
      status: 'active' as const,
      startedAt,
      hlsUrl: playbackId ? `${config.playbackUrl}/${playbackId}.m3u8` : null,
      embedUrl: playbackId ? `${config.embedUrl}/${playbackId}` : null,
    };
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Webhook

export type SignatureCheck = 'ok' | 'missing' | 'malformed' | 'stale' | 'mismatch';

/**
 * `streaming-signature: t=<unix seconds>,v1=<hex>` (several `v1` may be present while the provider rotates secrets):
 * HMAC-SHA256 with `secret` over `<t>.<raw body>`, compared in constant time. A timestamp more than five minutes
 * away from `nowMs`, in the past or in the future, is `stale`.
 */
export function verifyStreamingSignature(header: string | undefined, body: Buffer, secret: string, nowMs: number): SignatureCheck {
  if (header === undefined || header.trim() === '') return 'missing';
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && timestamp === undefined) timestamp = value;
    else if (key === 'v1' && value !== '') signatures.push(value.toLowerCase());
  }
  if (!timestamp || !/^\d{1,13}$/.test(timestamp) || signatures.length === 0) return 'malformed';
  if (Math.abs(nowMs - Number(timestamp) * 1000) > WEBHOOK_TOLERANCE_MS) return 'stale';
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  // Every candidate is compared, so the time taken does not say which one matched.
  let matched = false;
  for (const signature of signatures) if (safeEqual(signature, expected)) matched = true;
  return matched ? 'ok' : 'mismatch';
}

export interface StreamingEvent {
  id: string;
  type: string;
  createdAt: Date | undefined;
  objectId: string | undefined;
  data: Record<string, unknown>;
}

/** The provider's event envelope `{ id, type, created_at, object: { id }, data }`, or undefined when it is not one. */
export function parseStreamingEvent(value: unknown): StreamingEvent | undefined {
  if (!isObject(value) || typeof value.id !== 'string' || value.id === '' || value.id.length > 200) return undefined;
  if (typeof value.type !== 'string' || value.type === '' || value.type.length > 200) return undefined;
  const created = typeof value.created_at === 'string' ? new Date(value.created_at) : undefined;
  const object = isObject(value.object) && typeof value.object.id === 'string' ? value.object.id : undefined;
  return {
    id: value.id,
    type: value.type,
    createdAt: created && !Number.isNaN(created.getTime()) ? created : undefined,
    objectId: object,
    data: isObject(value.data) ? value.data : {},
  };
}

/** `max_stored_resolution` (older field) in pixels of the short side. */
const STORED_RESOLUTION: Record<string, number> = { 'Audio only': 0, SD: 480, HD: 720, FHD: 1080, UHD: 2160 };

/**
 * The asset's resolution as the short side in pixels: the provider's `resolution_tier` (`audio-only`, `720p`,
 * `1080p`, `1440p`, `2160p`), else the largest video track (`max_width` × `max_height`, so 1920×1080 and a portrait
 * 1080×1920 are both 1080), else `max_stored_resolution`; 0 for audio only, null when nothing usable was sent.
 */
export function assetResolution(asset: Record<string, unknown>): number | null {
  const tier = asset.resolution_tier;
  if (typeof tier === 'string') {
    if (tier === 'audio-only') return 0;
    const match = /^(\d{3,4})p$/.exec(tier);
    if (match) return Number(match[1]);
  }
  if (Array.isArray(asset.tracks)) {
    let best: number | null = null;
    let audio = false;
    for (const track of asset.tracks) {
      if (!isObject(track)) continue;
      if (track.type === 'audio') audio = true;
      if (track.type !== 'video') continue;
      const { max_width: w, max_height: h } = track;
      if (typeof w === 'number' && typeof h === 'number' && w > 0 && h > 0) best = Math.max(best ?? 0, Math.min(w, h));
    }
    if (best !== null) return best;
    if (audio) return 0;
  }
  const stored = asset.max_stored_resolution;
  if (typeof stored === 'string' && stored in STORED_RESOLUTION) return STORED_RESOLUTION[stored] ?? null;
  return null;
}

export interface AssetDecision {
  decision: 'archive' | 'delete';
  reason: string;
  resolution: number | null;
  durationSeconds: number | null;
}

const minutesSeconds = (s: number) => `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;

/**
 * §6: an asset of 1080p or higher AND longer than 15 minutes is archived; everything else (shorter, exactly 15
 * minutes, lower resolution, audio only, or with its resolution or duration unknown) is queued for deletion.
 */
export function decideAsset(asset: Record<string, unknown>): AssetDecision {
  const resolution = assetResolution(asset);
  const durationSeconds =
    typeof asset.duration === 'number' && Number.isFinite(asset.duration) && asset.duration >= 0 ? asset.duration : null;
  const reasons: string[] = [];
  if (resolution === null) reasons.push('resolution unknown');
  else if (resolution < ARCHIVE_MIN_RESOLUTION) reasons.push(resolution === 0 ? 'audio only' : `below 1080p (${resolution}p)`);
  if (durationSeconds === null) reasons.push('duration unknown');
  else if (durationSeconds <= ARCHIVE_MIN_DURATION_SECONDS) reasons.push(`not longer than 15 minutes (${minutesSeconds(durationSeconds)})`);
  if (reasons.length > 0) return { decision: 'delete', reason: reasons.join('; '), resolution, durationSeconds };
  return {
    decision: 'archive',
    reason: `${resolution}p, ${minutesSeconds(durationSeconds as number)}`,
    resolution,
    durationSeconds,
  };
}

export type EventOutcome = 'duplicate' | 'archived' | 'queued_for_deletion' | 'stream_active' | 'stream_idle' | 'ignored';

/**
 * Applies one verified event exactly once: its id is stored in the same transaction as its effects, so a redelivery
 * (or a replay within the signature tolerance) changes nothing. `video.asset.ready` records the archive-or-delete
 * decision (the first decision for an asset stands); `video.live_stream.active|idle` update our stream's status
 * (an event older than the last one applied is ignored, since deliveries can arrive out of order); other types are
 * acknowledged and logged by the caller.
 */
export async function handleStreamingEvent(
  db: Kysely<DB>,
  event: StreamingEvent,
  { now, deleteDelayMs }: { now: Date; deleteDelayMs: number },
): Promise<{ outcome: EventOutcome; subject?: string; decision?: AssetDecision }> {
  return db.transaction().execute(async (trx) => {
    const fresh = await trx
      .insertInto('stream_webhook_events')
      .values({ id: event.id, type: event.type, received_at: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!fresh) return { outcome: 'duplicate' as const };

    const subject = typeof event.data.id === 'string' && event.data.id !== '' ? event.data.id : event.objectId;
    switch (event.type) {
      case 'video.asset.ready': {
        if (!subject) return { outcome: 'ignored' as const };
        const decision = decideAsset(event.data);
        const archive = decision.decision === 'archive';
        const liveStreamId = typeof event.data.live_stream_id === 'string' ? event.data.live_stream_id : null;
        const playbackIds = Array.isArray(event.data.playback_ids) ? event.data.playback_ids : [];
        const playback = playbackIds.find((p): p is { id: string } => isObject(p) && typeof p.id === 'string');
        await trx
          .insertInto('stream_assets')
          .values({
            id: subject,
            live_stream_id: liveStreamId,
            playback_id: playback?.id ?? null,
            duration_seconds: decision.durationSeconds,
            resolution: decision.resolution,
            decision: decision.decision,
            reason: decision.reason,
            status: archive ? 'archived' : 'pending_deletion',
            delete_after: archive ? null : new Date(now.getTime() + deleteDelayMs),
            decided_at: now,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
        return { outcome: archive ? ('archived' as const) : ('queued_for_deletion' as const), subject, decision };
      }
      case 'video.live_stream.active':
      case 'video.live_stream.idle': {
        if (!subject) return { outcome: 'ignored' as const };
        const active = event.type === 'video.live_stream.active';
        const at = event.createdAt ?? now;
        await trx
          .updateTable('live_streams')
          .set({
            status: active ? 'active' : 'idle',
            // A reconnect within the same broadcast keeps the original start.
            active_since: active
              ? sql<Date>`case when status = 'active' and active_since is not null then active_since else ${at} end`
              : null,
            last_event_at: at,
            updated_at: now,
          })
          .where('id', '=', subject)
          .where((eb) => eb.or([eb('last_event_at', 'is', null), eb('last_event_at', '<=', at)]))
          .execute();
        return { outcome: active ? ('stream_active' as const) : ('stream_idle' as const), subject };
      }
      default:
        return { outcome: 'ignored' as const, ...(subject ? { subject } : {}) };
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Deletion worker

/** A claimed row is left alone by other replicas this long; a failed deletion is retried after it. */
const DELETION_LEASE_MS = 15 * 60_000;
const DELETION_BATCH = 20;
/** After this many failed attempts the asset is marked `deletion_failed` for an operator. */
export const DELETION_MAX_ATTEMPTS = 10;

/**
 * Deletes at the provider the assets whose `delete_after` has passed. Rows are claimed by moving `delete_after`
 * forward (a lease) under `for update skip locked`, so replicas never delete the same asset twice at once.
 */
export async function deleteDueAssets(
  db: Kysely<DB>,
  client: StreamingClient,
  { now, log }: { now: () => number; log?: Logger },
): Promise<{ deleted: number; failed: number }> {
  const started = now();
  const claimed = await db
    .updateTable('stream_assets')
    .set({ delete_after: new Date(started + DELETION_LEASE_MS) })
    .where('id', 'in', (qb) =>
      qb
        .selectFrom('stream_assets')
        .select('id')
        .where('status', '=', 'pending_deletion')
        .where('delete_after', '<=', new Date(started))
        .orderBy('delete_after')
        .limit(DELETION_BATCH)
        .forUpdate()
        .skipLocked(),
    )
    .returning(['id', 'deletion_attempts'])
    .execute();
  let deleted = 0;
  let failed = 0;
  for (const row of claimed) {
    try {
      const result = await client.deleteAsset(row.id);
      await db
        .updateTable('stream_assets')
        .set({ status: 'deleted', deleted_at: new Date(now()), delete_after: null, last_error: null })
        .where('id', '=', row.id)
        .execute();
      log?.info({ assetId: row.id, result }, 'stream asset deleted at the provider');
      deleted++;
    } catch (err) {
      const attempts = row.deletion_attempts + 1;
      const reason = err instanceof StreamingApiError ? err.reason : 'unexpected error';
      await db
        .updateTable('stream_assets')
        .set({
          deletion_attempts: attempts,
          last_error: reason,
          ...(attempts >= DELETION_MAX_ATTEMPTS ? { status: 'deletion_failed' as const, delete_after: null } : {}),
        })
        .where('id', '=', row.id)
        .execute();
      log?.warn({ assetId: row.id, attempts, reason }, 'stream asset deletion failed');
      failed++;
    }
  }
  return { deleted, failed };
}

/** The deletion worker's queue depth (/metrics): assets whose deletion is due now, claimed or not. */
export async function dueAssetDeletions(db: Kysely<DB>, now: number): Promise<number> {
  const row = await db
    .selectFrom('stream_assets')
    .select((eb) => eb.fn.countAll<number>().as('due'))
    .where('status', '=', 'pending_deletion')
    .where('delete_after', '<=', new Date(now))
    .executeTakeFirst();
  return Number(row?.due ?? 0);
}

export type AssetDeletionWorker = BatchWorker;

export function createAssetDeletionWorker(
  db: Kysely<DB>,
  client: StreamingClient,
  options: { now: () => number; log?: Logger },
): AssetDeletionWorker {
  return createBatchWorker(
    async () => {
      const { deleted, failed } = await deleteDueAssets(db, client, options);
      // A full batch: more may be due (a backlog after downtime).
      return deleted + failed >= DELETION_BATCH && deleted > 0;
    },
    (err) => options.log?.error({ err }, 'stream asset deletion pass failed'),
  );
}
