import { PassThrough } from 'node:stream';
import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebContext } from '../../platform/context.js';
import type { AuthUser } from '../../platform/sessions.js';
import { CHAT_RATE_LIMIT, type ChatUsage } from '../chat/agent-chat.service.js';
import {
  ChatCompletion,
  ChatCompletionBody,
  type ChatCompletionChunk,
  ChatCompletionHeaders,
  Model,
  ModelList,
  OpenAiErrorBody,
} from './openai-compat.schemas.js';
import { type PreparedCompletion, findModel, listModels, prepareCompletion, runCompletion } from './openai-compat.service.js';
import { incorrectApiKey, missingApiKey, openAiErrorHandler, streamedRefusal, unknownUrl } from './openai-errors.js';

/** The caller behind `Authorization: Bearer sk_…`; this API is for code, so a dashboard session alone is refused. */
async function requireApiKey(request: FastifyRequest): Promise<AuthUser> {
  const user = await request.currentUser();
  if (user?.via === 'apiKey') return user;
  throw request.headers.authorization?.startsWith('Bearer ') ? incorrectApiKey() : missingApiKey();
}

const authenticate = async (request: FastifyRequest) => {
  await requireApiKey(request);
};

/** Aborted when the client goes away before its answer is complete: the agent's run is then cancelled. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, OpenAiErrorBody]));

/**
 * The answer as server-sent `chat.completion.chunk` events, each piece of the agent's reply relayed as its gateway
 * sends it. The response starts with the first piece: a turn that fails before (the agent asleep past its wait, a
 * timeout, a refused key) is still an ordinary error status. After it, a failure is an `error` event (OpenAI's shape,
 * which the OpenAI clients raise), then `[DONE]`. The usage chunk follows when `stream_options.include_usage` asks.
 */
async function streamCompletion(
  request: FastifyRequest,
  reply: FastifyReply,
  prepared: PreparedCompletion,
  includeUsage: boolean,
  run: (onDelta: (text: string) => void) => Promise<{ usage: ChatUsage }>,
): Promise<FastifyReply> {
  const sse = new PassThrough();
  const send = (data: unknown) => {
    if (!sse.destroyed && !sse.writableEnded) sse.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  };
  const { id, created, model } = prepared;
  const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finish: 'stop' | null = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    ...(includeUsage ? { usage: null } : {}),
  });
  let markStarted: () => void = () => undefined;
  const started = new Promise<'started'>((resolve) => {
    markStarted = () => resolve('started');
  });
  let begun = false;
  const begin = () => {
    if (begun) return;
    begun = true;
    send(chunk({ role: 'assistant', content: '' }));
    markStarted();
  };
  const running = run((text) => {
    begin();
    send(chunk({ content: text }));
  });
  const settled = () => 'settled' as const;
  if ((await Promise.race([started, running.then(settled, settled)])) === 'settled') {
    // Nothing was relayed: a failure is still an ordinary error answer.
    try {
      await running;
    } catch (err) {
      sse.destroy();
      throw err;
    }
  }
  void running.then(
    ({ usage }) => {
      begin(); // an empty reply still says who speaks
      send(chunk({}, 'stop'));
      if (includeUsage) send({ id, object: 'chat.completion.chunk', created, model, choices: [], usage });
      send('[DONE]');
      sse.end();
    },
    (err: unknown) => {
      send(streamedRefusal(err, request));
      send('[DONE]');
      sse.end();
    },
  );
  return reply
    .code(200)
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache, no-transform')
    .header('x-accel-buffering', 'no')
    .send(sse);
}

/**
 * Issue #22 "OpenAI-compatible endpoint": `POST /v1/chat/completions` and `GET /v1/models[/{model}]` for the caller's
 * agents, with a user API key. Refusals are in OpenAI's error shape (openai-errors.ts), unknown `/v1` paths included.
 */
export async function openAiCompatRoutes(app: App, { config, afterStart }: Pick<WebContext, 'config' | 'afterStart'>): Promise<void> {
  const deps = { db: app.db, backend: app.backend, config, clock: app.clock, afterStart };
  app.setErrorHandler(openAiErrorHandler);

  app.post(
    '/v1/chat/completions',
    {
      onRequest: [app.rateLimit(CHAT_RATE_LIMIT), authenticate],
      schema: {
        tags: ['openai'],
        summary: 'Chat with one of your agents (OpenAI Chat Completions)',
        description:
          'Authorization: Bearer sk_… (a user API key). `model` names one of your agents; the messages go to it as one ' +
          'turn. `user` or `X-Session-Key` keeps one agent session per conversation. With `stream: true` the answer is ' +
          'server-sent `chat.completion.chunk` events (`data: {…}`) ending with `data: [DONE]`. Counts against the chat ' +
          'rate limit (60 a minute per client); usage is recorded as a chat turn.',
        headers: ChatCompletionHeaders,
        body: ChatCompletionBody,
        response: { 200: ChatCompletion, ...errors(400, 401, 404, 429, 502, 503, 504) },
      },
    },
    async (request, reply) => {
      const user = await requireApiKey(request);
      const { body } = request;
      const prepared = await prepareCompletion(deps, user, { body, sessionKey: request.headers['x-session-key'] });
      const signal = clientGone(reply);
      if (body.stream) {
        const run = (onDelta: (text: string) => void) => runCompletion(deps, request.log, user, prepared, { signal, onDelta });
        return streamCompletion(request, reply, prepared, body.stream_options?.include_usage === true, run);
      }
      const { text, usage } = await runCompletion(deps, request.log, user, prepared, { signal });
      const answer: ChatCompletion = {
        id: prepared.id,
        object: 'chat.completion',
        created: prepared.created,
        model: prepared.model,
        choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, finish_reason: 'stop', logprobs: null }],
        usage,
      };
      return answer;
    },
  );

  app.get(
    '/v1/models',
    {
      onRequest: authenticate,
      schema: {
        tags: ['openai'],
        summary: 'Your agents, as OpenAI lists models',
        response: { 200: ModelList, ...errors(401) },
      },
    },
    async (request) => ({ object: 'list' as const, data: await listModels(app.db, await requireApiKey(request)) }),
  );

  app.get(
    '/v1/models/:model',
    {
      onRequest: authenticate,
      schema: {
        tags: ['openai'],
        summary: 'One of your agents, by id, `agent:<id>` or name',
        params: Type.Object({ model: Type.String({ maxLength: 200 }) }),
        response: { 200: Model, ...errors(401, 404) },
      },
    },
    async (request) => findModel(app.db, await requireApiKey(request), request.params.model),
  );

  // Every other `/v1` path: OpenAI's 404, not the dashboard's page (which answers unknown GETs).
  for (const path of ['/v1', '/v1/*']) {
    app.all(path, { schema: { hide: true } }, async (request) => {
      throw unknownUrl(request.method, (request.url.split('?')[0] ?? '').slice(0, 200));
    });
  }
}
