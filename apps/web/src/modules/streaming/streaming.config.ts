import { Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

export const StreamingEnvSchema = Type.Object({
  STREAMING_API_URL: Env.str('https://api.mux.com'),
  STREAMING_API_KEY: Env.optional(Type.String({ pattern: '^[^:]+:.+$' })),
  STREAMING_RTMP_URL: Env.str('rtmps://global-live.mux.com:443/app'),
  STREAMING_PLAYBACK_URL: Env.str('https://stream.mux.com'),
  STREAMING_EMBED_URL: Env.str('https://player.mux.com'),
  STREAMING_TIMEOUT_MS: Env.int(10_000, 100),
  STREAMING_LIVE_CACHE_MS: Env.int(5_000, 0),
  STREAM_SIGNING_SECRET: Env.optional(Type.String()),
  STREAM_WEBHOOK_SECRET: Env.optional(Type.String()),
  STREAM_ASSET_DELETE_DELAY_MINUTES: Env.int(1_440, 0),
});

export interface StreamingConfig {
  /**
   * Live streaming (spec §2.11, §4.16, §6) through a Mux-compatible REST API at `apiUrl`; `apiKey` is
   * `<token id>:<token secret>` sent as HTTP Basic (unset = the radio endpoints answer 500). `rtmpUrl` is the ingest
   * server handed to encoders; `playbackUrl`/`embedUrl` build `hlsUrl`/`embedUrl`. `liveCacheMs` keeps the provider's
   * active list that long (0 = never cached). `webhookSecret` (STREAM_SIGNING_SECRET, else STREAM_WEBHOOK_SECRET)
   * verifies `streaming-signature`; unset = every webhook is refused. Assets queued for deletion are deleted at the
   * provider `assetDeleteDelayMs` after the decision.
   */
  streaming: {
    apiUrl: string;
    apiKey: string | undefined;
    rtmpUrl: string;
    playbackUrl: string;
    embedUrl: string;
    timeoutMs: number;
    liveCacheMs: number;
    webhookSecret: string | undefined;
    assetDeleteDelayMs: number;
  };
}

export function toStreamingConfig(env: Static<typeof StreamingEnvSchema>): StreamingConfig {
  return {
    streaming: {
      apiUrl: env.STREAMING_API_URL.replace(/\/+$/, ''),
      apiKey: env.STREAMING_API_KEY,
      rtmpUrl: env.STREAMING_RTMP_URL.replace(/\/+$/, ''),
      playbackUrl: env.STREAMING_PLAYBACK_URL.replace(/\/+$/, ''),
      embedUrl: env.STREAMING_EMBED_URL.replace(/\/+$/, ''),
      timeoutMs: env.STREAMING_TIMEOUT_MS,
      liveCacheMs: env.STREAMING_LIVE_CACHE_MS,
      webhookSecret: env.STREAM_SIGNING_SECRET ?? env.STREAM_WEBHOOK_SECRET,
      assetDeleteDelayMs: env.STREAM_ASSET_DELETE_DELAY_MINUTES * 60_000,
    },
  };
}
