import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireSessionUser, requireUser, sessionUserBeforeBody } from '../../platform/http/auth.js';
import { createInstantSplit, listInstantSplits } from './instant-split.service.js';
import { InstantSplit, InstantSplitBody, InstantSplitQuery } from './skills.schemas.js';

/**
 * The built-in skill `instant-split` (spec §4.18; docs/decisions.md "Booking settlement and instant splits"): USDC
 * divided among wallets by shares, recorded at once. Reading takes a session or an API key; splitting takes a
 * signed-in session, as recording a royalty split does.
 */
export async function instantSplitRoutes(app: App): Promise<void> {
  app.get(
    '/api/skills/instant-split',
    {
      schema: {
        tags: ['skills'],
        summary: 'Your instant splits, newest first',
        querystring: InstantSplitQuery,
        response: { 200: Type.Object({ splits: Type.Array(InstantSplit) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { agentId, bookingId, limit = 50 } = request.query;
      return { splits: await listInstantSplits(app.db, user.id, { agentId, bookingId, limit }) };
    },
  );

  app.post(
    '/api/skills/instant-split',
    {
      preValidation: sessionUserBeforeBody,
      config: { invalidBody: 'INVALID_REQUEST_BODY' },
      schema: {
        tags: ['skills'],
        summary: 'Split an amount, or a settled booking’s fee, among wallets',
        description:
          '201 with the new split. A booking’s fee is split once, and a request with an `Idempotency-Key` is recorded once: repeating it answers 200 with the split already recorded; the same booking or key with a different request is 409.',
        headers: Type.Object({
          'idempotency-key': Type.Optional(Type.String({ description: '1 to 255 visible ASCII characters, unique per request you mean' })),
        }),
        body: InstantSplitBody,
        response: { 200: Type.Object({ split: InstantSplit }), 201: Type.Object({ split: InstantSplit }) },
      },
    },
    async (request, reply) => {
      const user = await requireSessionUser(request);
      const { split, created } = await createInstantSplit(app.db, user.id, {
        ...request.body,
        idempotencyKey: request.headers['idempotency-key'],
      });
      return reply.code(created ? 201 : 200).send({ split });
    },
  );
}
