import { Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

export const VideoEnvSchema = Type.Object({
  VIDEO_API_URL: Env.url(),
  VIDEO_API_KEY: Env.optional(Type.String()),
  VIDEO_TIMEOUT_MS: Env.int(300_000, 100),
  VIDEO_POLL_INTERVAL_MS: Env.int(2_000, 10),
  VIDEO_MAX_BYTES: Env.int(104_857_600, 1),
  BLOB_URL: Env.url(),
  BLOB_BUCKET: Env.optional(Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' })),
  BLOB_ACCESS_KEY: Env.optional(Type.String()),
  BLOB_SECRET_KEY: Env.optional(Type.String()),
  BLOB_REGION: Env.str('us-east-1'),
  BLOB_PUBLIC_URL: Env.url(),
});

export interface VideoConfig {
  /**
   * `POST /api/generate-video`: the render API (documented JSON contract in video.service.ts); undefined unless URL
   * and key are set. `timeoutMs` is the spec's 5-minute bound on the whole job (render, download, upload).
   */
  video: { apiUrl: string; apiKey: string; timeoutMs: number; pollIntervalMs: number; maxBytes: number } | undefined;
  /**
   * S3-compatible blob storage (path-style `PUT <url>/<bucket>/<key>`, SigV4-signed) for generated videos; undefined
   * unless URL, bucket and both keys are set. Objects are linked as `<publicUrl>/<key>`, else by their object URL.
   */
  blob: { url: string; bucket: string; accessKey: string; secretKey: string; region: string; publicUrl: string | undefined } | undefined;
}

export function toVideoConfig(env: Static<typeof VideoEnvSchema>): VideoConfig {
  return {
    video:
      env.VIDEO_API_URL && env.VIDEO_API_KEY
        ? {
            apiUrl: env.VIDEO_API_URL.replace(/\/+$/, ''),
            apiKey: env.VIDEO_API_KEY,
            timeoutMs: env.VIDEO_TIMEOUT_MS,
            pollIntervalMs: env.VIDEO_POLL_INTERVAL_MS,
            maxBytes: env.VIDEO_MAX_BYTES,
          }
        : undefined,
    blob:
      env.BLOB_URL && env.BLOB_BUCKET && env.BLOB_ACCESS_KEY && env.BLOB_SECRET_KEY
        ? {
            url: env.BLOB_URL.replace(/\/+$/, ''),
            bucket: env.BLOB_BUCKET,
            accessKey: env.BLOB_ACCESS_KEY,
            secretKey: env.BLOB_SECRET_KEY,
            region: env.BLOB_REGION,
            publicUrl: env.BLOB_PUBLIC_URL?.replace(/\/+$/, ''),
          }
        : undefined,
  };
}
