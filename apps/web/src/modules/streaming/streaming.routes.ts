import { type App, DomainError, checkJsonText } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { Address } from 'viem';
import type { WebConfig } from '../../config.js';
import {
  DEFAULT_DJ_NAME,
  DJ_NAME_MAX,
  type ProviderLiveStream,
  RECOMMENDED_AUDIO,
  StreamingApiError,
  checkStreamGate,
  createAssetDeletionWorker,
  dueAssetDeletions,
  createStream,
  handleStreamingEvent,
  liveDjs,
  parseStreamingEvent,
  streamingClient,
  verifyStreamingSignature,
} from './streaming.service.js';
import { CreateStreamBody } from './streaming.schemas.js';

export const STREAMING_WEBHOOK_PATH = '/api/webhooks/streaming';
const MINUTE = 60_000;
const ErrorSchema = Type.Object({ error: Type.String() });

const LiveDjSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  wallet: Type.Union([Type.String(), Type.Null()]),
  playbackId: Type.Union([Type.String(), Type.Null()]),
  streamKey: Type.String({ description: 'Masked: only the last four characters are shown publicly' }),
  status: Type.Literal('active'),
  startedAt: Type.Integer({ description: 'Unix seconds' }),
  hlsUrl: Type.Union([Type.String(), Type.Null()]),
  embedUrl: Type.Union([Type.String(), Type.Null()]),
});

const CreatedSchema = Type.Object({
  success: Type.Literal(true),
  stream: Type.Object({
    id: Type.String(),
    name: Type.String(),
    wallet: Type.String(),
    streamKey: Type.String(),
    rtmpUrl: Type.String(),
    fullRtmpUrl: Type.String(),
    playbackId: Type.Union([Type.String(), Type.Null()]),
    status: Type.Literal('created'),
  }),
  obsSettings: Type.Object({
    server: Type.String(),
    streamKey: Type.String(),
    recommended: Type.Object({
      audioBitrate: Type.Integer({ description: 'kbps' }),
      encoder: Type.String(),
      sampleRate: Type.Integer({ description: 'Hz' }),
      channels: Type.Integer(),
    }),
  }),
});

/**
 * Spec §2.11, §3.4, §4.16, §6, §8: the public list of live DJs, gate-token stream creation and the streaming
 * provider's signed webhook (asset archive-or-delete decisions, stream status), plus the worker that carries out
 * queued deletions at the provider.
 */
export async function streamingRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const client = streamingClient(config.streaming);

  // Deletions need the provider's API: without a key, queued assets simply wait until one is configured.
  // Deletions that fell due while the service was down run once it is ready.
  const deletion = client
    ? app.jobs.add({
        name: 'streaming asset deletions',
        everyMs: MINUTE,
        catchUp: true,
        worker: createAssetDeletionWorker(app.db.kysely, client, { now: () => app.clock(), log: app.log }),
        depth: () => dueAssetDeletions(app.db.kysely, app.clock()),
      })
    : undefined;

  // The provider's active list, shared by every caller for `liveCacheMs` (and while one request is in flight), so
  // a public endpoint cannot be used to hammer the provider's API.
  let cached: { at: number; streams: ProviderLiveStream[] } | undefined;
  let inflight: Promise<ProviderLiveStream[]> | undefined;
  async function activeStreams(): Promise<ProviderLiveStream[]> {
    if (!client) throw new DomainError('STREAMING_NOT_CONFIGURED');
    // The cache's age only (nothing stored is compared with it): monotonic.
    const now = performance.now();
    if (cached && now - cached.at < config.streaming.liveCacheMs) return cached.streams;
    inflight ??= client
      .listActiveLiveStreams()
      .then((streams) => {
        cached = { at: performance.now(), streams };
        return streams;
      })
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  }

  app.get(
    '/api/radio/live',
    {
      schema: {
        tags: ['streaming'],
        description: 'Live DJs: the streaming provider’s active streams with the names and wallets recorded here. No auth.',
        response: { 200: Type.Object({ djs: Type.Array(LiveDjSchema), count: Type.Integer() }), 500: ErrorSchema },
      },
    },
    async (request) => {
      let streams: ProviderLiveStream[];
      try {
        streams = await activeStreams();
      } catch (err) {
        if (err instanceof StreamingApiError) {
          request.log.error({ reason: err.reason }, 'live stream list failed');
          throw new DomainError('FAILED_FETCH_LIVE_STREAMS');
        }
        throw err;
      }
      const djs = await liveDjs(app.db.kysely, config.streaming, streams, app.clock());
      return { djs, count: djs.length };
    },
  );

  const createLimit = app.rateLimit({ name: 'radio-streams', max: 30, windowMs: MINUTE, message: 'Too many requests' });

  app.post(
    '/api/radio/streams',
    {
      onRequest: createLimit,
      config: { invalidBody: 'WALLET_ADDRESS_REQUIRED' },
      schema: {
        tags: ['streaming'],
        description: `Creates a live stream for a smart-contract wallet holding at least GATE_MIN_BALANCE (1,250,000) gate tokens. \`name\` defaults to \`${DEFAULT_DJ_NAME}\`.`,
        body: CreateStreamBody,
        response: { 200: CreatedSchema, 400: ErrorSchema, 403: ErrorSchema, 500: ErrorSchema, 502: ErrorSchema },
      },
    },
    async (request) => {
      // The schema has checked that the trimmed wallet is an address.
      const wallet = request.body.wallet.trim().toLowerCase() as Address;
      const name = request.body.name?.trim() || DEFAULT_DJ_NAME;
      if (name.length > DJ_NAME_MAX) throw new DomainError('NAME_TOO_LONG', { max: DJ_NAME_MAX });

      if (!client) {
        request.log.warn('stream creation needs STREAMING_API_KEY');
        throw new DomainError('STREAMING_NOT_CONFIGURED');
      }
      await checkStreamGate(config.gating, wallet, request.log);

      let stream: Awaited<ReturnType<typeof createStream>>;
      try {
        stream = await createStream(app.db.kysely, client, config.streaming, {
          wallet,
          name,
          now: new Date(app.clock()),
          log: request.log,
        });
      } catch (err) {
        request.log.error({ reason: err instanceof StreamingApiError ? err.reason : undefined, err }, 'live stream creation failed');
        throw new DomainError('FAILED_CREATE_STREAM');
      }
      request.log.info({ liveStreamId: stream.id, wallet }, 'live stream created');
      return {
        success: true as const,
        stream,
        obsSettings: { server: stream.rtmpUrl, streamKey: stream.streamKey, recommended: { ...RECOMMENDED_AUDIO } },
      };
    },
  );

  // The webhook reads its body raw, whatever its content type: the signature covers the exact bytes sent.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    scope.post(
      STREAMING_WEBHOOK_PATH,
      {
        schema: {
          tags: ['streaming'],
          description:
            'Streaming-provider webhook: `streaming-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (5-minute tolerance). `video.asset.ready` archives assets of 1080p or higher longer than 15 minutes and queues the rest for deletion; `video.live_stream.active|idle` are logged and update the stream. Each event id is handled once.',
          response: {
            200: Type.Object({ received: Type.Literal(true) }),
            400: ErrorSchema,
            401: ErrorSchema,
            403: ErrorSchema,
            500: ErrorSchema,
            503: ErrorSchema,
          },
        },
      },
      async (request) => {
        const secret = config.streaming.webhookSecret;
        if (!secret) {
          // Nothing can be verified, so nothing is accepted; the provider keeps retrying until a secret is set. A missing
          // setting is the service being unavailable, not a failure of this request: 503, like the other webhooks.
          request.log.warn('streaming webhook refused: STREAM_SIGNING_SECRET (or STREAM_WEBHOOK_SECRET) is not set');
          throw new DomainError('WEBHOOK_SIGNING_SECRET_NOT_CONFIGURED');
        }
        const header = request.headers['streaming-signature'];
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const check = verifyStreamingSignature(typeof header === 'string' ? header : undefined, body, secret, app.clock());
        if (check !== 'ok') request.log.warn({ check }, 'streaming webhook refused');
        if (check === 'missing') throw new DomainError('MISSING_SIGNATURE');
        if (check === 'malformed') throw new DomainError('MALFORMED_SIGNATURE');
        if (check === 'stale') throw new DomainError('SIGNATURE_TIMESTAMP_EXPIRED');
        if (check === 'mismatch') throw new DomainError('INVALID_SIGNATURE');

        const text = body.toString('utf8');
        // The shared JSON parser never saw these bytes: its rules apply here, once they are known to be the provider's
        // (U+0000 in an event id would fail the insert, and the provider would retry it forever).
        checkJsonText(text, 'INVALID_REQUEST_BODY');
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          throw new DomainError('INVALID_REQUEST_BODY');
        }
        const event = parseStreamingEvent(parsed);
        if (!event) throw new DomainError('INVALID_EVENT');

        let result: Awaited<ReturnType<typeof handleStreamingEvent>>;
        try {
          result = await handleStreamingEvent(app.db.kysely, event, {
            now: new Date(app.clock()),
            deleteDelayMs: config.streaming.assetDeleteDelayMs,
          });
        } catch (err) {
          // Nothing was stored: the provider retries the event later.
          request.log.error({ err, event: event.id, type: event.type }, 'streaming webhook processing failed');
          throw new DomainError('WEBHOOK_PROCESSING_FAILED');
        }
        request.log.info(
          {
            event: event.id,
            type: event.type,
            outcome: result.outcome,
            subject: result.subject,
            ...(result.decision ? { decision: result.decision.decision, reason: result.decision.reason } : {}),
          },
          'streaming webhook',
        );
        if (result.outcome === 'queued_for_deletion' && deletion) setImmediate(() => void deletion.kick());
        return { received: true as const };
      },
    );
  });
}
