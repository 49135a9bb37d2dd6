import { PassThrough } from 'node:stream';
import { type App, DomainError, errorResponse, type HttpError, isPublicError } from '@aop/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebConfig } from '../../config.js';
import { chargeForPlugin } from '../payments/charge.js';
import { paymentMeter } from '../payments/payments.metrics.js';
import { type ChargeResult, PaymentError } from '../payments/types.js';
import { createPluginRegistry, routePlugin } from './plugins/registry.js';
import type { PluginAnswer, PluginCall, PluginLog } from './plugins/types.js';

const MINUTE = 60_000;

/** Spec §8 "Web rate: gateway 100/min". */
export const GATEWAY_LIMIT_PER_MINUTE = 100;

export const GATEWAY_PATH = '/api/v1/gateway';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const wantsEventStream = (accept: string | undefined) => /(^|[\s,])text\/event-stream([\s;,]|$)/i.test(accept ?? '');

/** Aborted when the client goes away before the answer is complete. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/**
 * Gives the payment back when the plugin failed; a failed release is logged (the plugin's failure is the answer). Not
 * called when the client went away first: the upstream call was made on its behalf.
 */
async function release(charge: ChargeResult, log: PluginLog, plugin: string): Promise<void> {
  try {
    await charge.release();
  } catch (err) {
    log.error({ err, plugin, method: charge.method }, 'gateway: payment release failed');
  }
}

/** What the client is told about a failure after the charge: the plugin's own answer or 500 `internal`. */
function failureAnswer(err: unknown, log: PluginLog, plugin: string | undefined): DomainError | HttpError {
  if (isPublicError(err)) return err;
  log.error({ err, plugin }, 'gateway: plugin crashed');
  return new DomainError('INTERNAL');
}

/**
 * Spec §4.4 `POST /api/v1/gateway`, the plugin gateway (the only versioned path, §9; 100/min per client, §8).
 *
 * 1. Routing: `X-Plugin-Id` over body `plugin`, default `agent`; no such plugin → 502 `no_plugin`.
 * 2. The plugin checks the other body fields and its configuration (400, 503) — nothing is charged for a call that
 *    cannot run.
 * 3. Payment (`chargeForPlugin`: card, MPP or payment session; it decides about authentication): a refusal is its
 *    status, body and headers (401, 402…).
 * 4. The plugin runs against its real upstream. When it fails the charge is released and the failure answered
 *    (502 `plugin_failed`, the plugin's own errors, 500 `internal` for anything unexpected).
 * 5. 200 `{ plugin, message, …plugin fields, timestamp, payment: { method, receipt } }` with `x-plugin-id` and the
 *    charge's headers (`Payment-Receipt`, `X-Session-Remaining`). With `Accept: text/event-stream` a streaming plugin
 *    answers server-sent events instead: `data: {"delta"}` pieces, then `event: done` carrying that same object (or
 *    `event: error` with `{ error, … }`); payment is taken before the stream starts and its headers open it.
 */
export async function pluginGatewayRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const plugins = createPluginRegistry({ db: app.db, backend: app.backend, config });
  const paymentDeps = { db: app.db, config, clock: app.clock, logger: app.log, meter: paymentMeter(app.metrics.registry) };
  const limit = app.rateLimit({ name: 'gateway', max: GATEWAY_LIMIT_PER_MINUTE, windowMs: MINUTE, message: 'Too many requests' });

  app.post(
    GATEWAY_PATH,
    {
      onRequest: limit,
      config: { invalidBody: 'BODY_NOT_OBJECT' },
      schema: { tags: ['gateway'], summary: 'Run a plugin (agent, generate-text, tts, stt), paid per call' },
    },
    async (request, reply) => {
      try {
        return await handle(request, reply);
      } catch (err) {
        // Spec §4.4: any server error is 500 `internal`, never the generic words of the other routes.
        throw failureAnswer(err, request.log, undefined);
      }
    },
  );

  async function handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const body = request.body;
    if (!isObject(body)) throw new DomainError('BODY_NOT_OBJECT');
    const id = routePlugin(request.headers, body);
    const plugin = plugins.get(id);
    if (!plugin) throw new DomainError('NO_PLUGIN');

    const user = await request.currentUser();
    const { plugin: _routed, ...fields } = body;
    const call = plugin.prepare(fields, { user, ip: request.ip });

    let charge: ChargeResult;
    try {
      charge = await chargeForPlugin(paymentDeps, {
        user,
        headers: request.headers,
        plugin: id,
        pluginAuth: plugin.auth,
        priceUsd: plugin.priceUsd,
        ip: request.ip,
      });
    } catch (err) {
      if (err instanceof PaymentError) return reply.code(err.statusCode).headers(err.headers).send(err.body);
      throw failureAnswer(err, request.log, id);
    }

    const success = (answer: PluginAnswer) => ({
      plugin: id,
      message: answer.message,
      ...answer.extra,
      timestamp: new Date(app.clock()).toISOString(),
      payment: { method: charge.method, receipt: charge.receipt },
    });
    const signal = clientGone(reply);
    if (plugin.streaming && wantsEventStream(request.headers.accept)) {
      return streamAnswer(request, reply, { id, call, charge, signal, success });
    }

    let answer: PluginAnswer;
    try {
      answer = await call({ log: request.log, signal });
    } catch (err) {
      if (!signal.aborted) await release(charge, request.log, id);
      throw failureAnswer(err, request.log, id);
    }
    return reply.header('x-plugin-id', id).headers(charge.headers).send(success(answer));
  }
}

interface StreamJob {
  id: string;
  call: PluginCall;
  charge: ChargeResult;
  signal: AbortSignal;
  success(answer: PluginAnswer): Record<string, unknown>;
}

/**
 * The server-sent-event answer. The response starts with the first piece of text (or the whole answer when there is
 * none): a plugin that fails before that still gets a plain error status and its charge released. Once started,
 * a failure becomes an `error` event (and releases the charge); a client that goes away does not undo the charge.
 */
async function streamAnswer(request: FastifyRequest, reply: FastifyReply, job: StreamJob): Promise<FastifyReply> {
  const sse = new PassThrough();
  const write = (data: unknown, event?: string) => {
    if (!sse.destroyed && !sse.writableEnded) sse.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
  };
  let markStarted: () => void = () => undefined;
  const started = new Promise<'started'>((resolve) => {
    markStarted = () => resolve('started');
  });
  const running = job.call({
    log: request.log,
    signal: job.signal,
    onDelta: (text) => {
      write({ delta: text });
      markStarted();
    },
  });
  const first = await Promise.race([
    started,
    running.then(
      () => 'settled' as const,
      () => 'settled' as const,
    ),
  ]);
  if (first === 'settled') {
    // Nothing was streamed yet: a failure is still an ordinary error answer.
    try {
      await running;
    } catch (err) {
      sse.destroy();
      if (!job.signal.aborted) await release(job.charge, request.log, job.id);
      throw failureAnswer(err, request.log, job.id);
    }
  }

  void running.then(
    (answer) => {
      write(job.success(answer), 'done');
      sse.end();
    },
    async (err: unknown) => {
      if (!job.signal.aborted) await release(job.charge, request.log, job.id);
      const failure = failureAnswer(err, request.log, job.id);
      const { status, body } = errorResponse(failure);
      write({ ...body, status }, 'error');
      sse.end();
    },
  );
  return reply
    .code(200)
    .header('x-plugin-id', job.id)
    .headers(job.charge.headers)
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache, no-transform')
    .header('x-accel-buffering', 'no')
    .send(sse);
}
