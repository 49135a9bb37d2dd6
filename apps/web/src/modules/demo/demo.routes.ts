import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import { demoChatBody } from './demo.schemas.js';
import { DEMO_ENTRY_MAX_CHARS, DEMO_READY_MESSAGE, DEMO_UNAVAILABLE, askDemo, demoHistory } from './demo-chat.service.js';

const MINUTE = 60_000;

const Model = Type.Object({ id: Type.String(), name: Type.String(), provider: Type.String() });
const Usage = Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), total_tokens: Type.Integer() });

/**
 * Spec §4.6 demo chat: no account, the platform's LLM key, a fixed list of models, per-IP limit.
 * Each body field answers with the spec's `Message required` (or a field-specific message) rather than a schema error
 * (demo.schemas.ts).
 */
export async function demoRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const { models } = config.demo;
  const limit = app.rateLimit({ name: 'demo-chat', max: config.demo.limitPerMinute, windowMs: MINUTE, message: 'Too many requests' });

  app.get(
    '/api/demo/chat',
    {
      schema: {
        tags: ['demo'],
        response: { 200: Type.Object({ models: Type.Array(Model), mode: Type.Literal('demo'), message: Type.String() }) },
      },
    },
    async () => ({ models, mode: 'demo' as const, message: config.demo.llm ? DEMO_READY_MESSAGE : DEMO_UNAVAILABLE }),
  );

  app.post(
    '/api/demo/chat',
    {
      onRequest: limit,
      config: { invalidBody: 'MESSAGE_REQUIRED' },
      schema: {
        tags: ['demo'],
        body: demoChatBody(models.map((m) => m.id)),
        response: {
          200: Type.Object({ id: Type.String(), model: Type.String(), message: Type.String(), usage: Usage, done: Type.Literal(true) }),
        },
      },
    },
    async (request) => {
      const { message, model, conversation } = request.body;
      // The schema took only the listed ids (or none).
      const chosen = model ? models.find((m) => m.id === model) : models[0];
      if (!chosen) throw new DomainError('UNSUPPORTED_DEMO_MODEL');
      if (!config.demo.llm) throw new DomainError('DEMO_UNAVAILABLE');
      // The visitor's own message obeys the same 4000-character cap as the history.
      const messages = [...demoHistory(conversation ?? []), { role: 'user' as const, content: message.slice(0, DEMO_ENTRY_MAX_CHARS) }];
      return askDemo(app.db, config, chosen, messages, request.log);
    },
  );
}
