import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { requireUser } from '../../platform/http/auth.js';
import { GenerateVideoBody } from './video.schemas.js';
import { VIDEO_TYPES, generateVideo, parseVideoRequest } from './video.service.js';

const ErrorSchema = Type.Object({ error: Type.String() });

/**
 * Spec §4.16 `POST /api/generate-video` (session; §8: 5-minute timeout): `type` is `demo` (`agentName`,
 * `agentDescription`), `marketing` (`productName`, `features[]`), `screenshot` (`imageUrl`, `description`) or
 * `tutorial` (`topic`, `steps[]`); answers `{ url }` of the video in blob storage.
 */
export async function videoRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  app.post(
    '/api/generate-video',
    {
      // Authentication before the body is looked at: an anonymous caller gets 401 whatever it sent.
      onRequest: async (request) => {
        await requireUser(request);
      },
      config: { invalidBody: 'INVALID_VIDEO_TYPE' },
      schema: {
        tags: ['video'],
        description: `Renders a ${VIDEO_TYPES.join(' | ')} video (at most 5 minutes) and answers its blob-storage URL.`,
        body: GenerateVideoBody,
        response: { 200: Type.Object({ url: Type.String() }), 400: ErrorSchema, 401: ErrorSchema, 500: ErrorSchema },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const input = parseVideoRequest(request.body);
      const { url } = await generateVideo(
        app.db,
        { video: config.video, blob: config.blob },
        { userId: user.id, input, log: request.log, now: () => app.clock() },
      );
      return { url };
    },
  );
}
