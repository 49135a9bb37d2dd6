import { AsyncLocalStorage } from 'node:async_hooks';
import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Env } from './config.js';

/**
 * OpenTelemetry tracing behind one switch, `OTEL_EXPORTER_OTLP_ENDPOINT` (issue #21; the choices are in
 * docs/decisions.md, "Tracing").
 *
 * Each app instance gets its own tracer provider (its own `service.name` resource and exporter), started by
 * `tracingPlugin` and flushed when the app closes: web and backend run in one process in the tests, and a global
 * provider would give both services' spans one name. Nothing is registered globally with the OpenTelemetry API.
 *
 * A request's span travels with it in an AsyncLocalStorage of this module, together with the tracer of the app that
 * received it. Outgoing calls (`traceOutgoing`: the web's backend client, the gateway client) read it from there, so
 * a client deep in a service needs no tracer handed to it, and its span lands in the provider of the app whose request
 * made the call. Outside a traced request (tracing off, background jobs) `traceOutgoing` calls straight through.
 *
 * With the switch off nothing of the SDK is loaded: it is imported only when an endpoint is set.
 */

/** The variables each app's config composes (`Type.Composite([... , TracingEnvSchema])`). */
export const TracingEnvSchema = Type.Object({
  // OTLP/HTTP base URL of a collector (`http://collector:4318`); traces go to `<it>/v1/traces`. Unset: no tracing.
  OTEL_EXPORTER_OTLP_ENDPOINT: Env.optional(Type.String({ pattern: '^https?://[^/?#]+' })),
  // The `service.name` of this process's spans; each app has its own default.
  OTEL_SERVICE_NAME: Env.optional(Type.String({ minLength: 1, maxLength: 128 })),
});

export interface TracingConfig {
  /** OTLP/HTTP base URL; undefined turns tracing off. */
  endpoint: string | undefined;
  serviceName: string;
}

export function toTracingConfig(env: Static<typeof TracingEnvSchema>, defaultServiceName: string): TracingConfig {
  return { endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: env.OTEL_SERVICE_NAME ?? defaultServiceName };
}

/** Where an OTLP/HTTP base URL takes traces (the specification's rule for `OTEL_EXPORTER_OTLP_ENDPOINT`). */
export const tracesUrl = (endpoint: string) => `${endpoint.replace(/\/+$/, '')}/v1/traces`;

/** Attribute names: OpenTelemetry's stable HTTP conventions, plus our request id. */
export const ATTR = {
  requestId: 'aop.request_id',
  method: 'http.request.method',
  route: 'http.route',
  path: 'url.path',
  urlFull: 'url.full',
  status: 'http.response.status_code',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
  rpcSystem: 'rpc.system',
  rpcMethod: 'rpc.method',
} as const;

type OtelApi = typeof import('@opentelemetry/api');

/** The tracer of one app instance, and the API module it was built with (loaded only when tracing is on). */
interface AppTracer {
  api: OtelApi;
  tracer: Tracer;
}

/** What travels with a traced request: its app's tracer and the context whose span is the parent of new ones. */
interface Scope {
  app: AppTracer;
  context: Context;
}

// Never entered while tracing is off, so it costs nothing then: `getStore()` on it is a property read.
const storage = new AsyncLocalStorage<Scope>();

/** A span for a call to another service, as the caller's code sees it. */
export interface OutgoingSpan {
  /** The W3C trace-context headers (`traceparent`, `tracestate`) naming this span as the callee's parent; empty when untraced. */
  readonly headers: Readonly<Record<string, string>>;
  /** Adds attributes (never credentials: no tokens, cookies or Authorization values). */
  set(attributes: Attributes): void;
  /** Marks the call failed (`error.type`), e.g. with an HTTP status of 5xx that did not throw. */
  fail(errorType: string): void;
}

const UNTRACED: OutgoingSpan = Object.freeze({ headers: Object.freeze({}), set() {}, fail() {} });

/**
 * Runs `fn` (one call to an upstream) inside a CLIENT span child of the current request's span. A thrown error marks
 * the span failed with its `code` (a `GatewayError`'s) or its name; the span ends when `fn` settles. Spans started
 * inside `fn` are its children. `attributes` may be a function, so an untraced call does not compute them. Without a
 * traced request: `fn(UNTRACED)`.
 */
export async function traceOutgoing<T>(
  name: string,
  attributes: Attributes | (() => Attributes),
  fn: (span: OutgoingSpan) => Promise<T>,
): Promise<T> {
  const scope = storage.getStore();
  if (!scope) return fn(UNTRACED);
  const { api, tracer } = scope.app;
  const span = tracer.startSpan(
    name,
    { kind: api.SpanKind.CLIENT, attributes: typeof attributes === 'function' ? attributes() : attributes },
    scope.context,
  );
  const handle: OutgoingSpan = {
    headers: traceHeaders(span),
    set: (more) => void span.setAttributes(more),
    fail: (errorType) => markFailed(api, span, errorType),
  };
  try {
    return await storage.run({ app: scope.app, context: api.trace.setSpan(scope.context, span) }, () => fn(handle));
  } catch (err) {
    markFailed(api, span, errorTypeOf(err));
    throw err;
  } finally {
    span.end();
  }
}

/**
 * `fetch` to another of our services or an agent's gateway (`peer` names it in the span: `backend GET`), in a CLIENT
 * span that ends when the response headers arrive, with `traceparent` added to the request. The URL is recorded
 * without its query string or credentials; 5xx answers mark the span failed.
 */
export function tracedFetch(peer: string, url: URL | string, init: RequestInit = {}): Promise<Response> {
  if (!storage.getStore()) return fetch(url, init);
  const target = new URL(url);
  const method = (init.method ?? 'GET').toUpperCase();
  const attributes: Attributes = {
    [ATTR.method]: method,
    [ATTR.urlFull]: `${target.protocol}//${target.host}${target.pathname}`,
    [ATTR.serverAddress]: target.hostname,
    [ATTR.serverPort]: Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
  };
  return traceOutgoing(`${peer} ${method}`, attributes, async (span) => {
    const headers = new Headers(init.headers);
    for (const [name, value] of Object.entries(span.headers)) headers.set(name, value);
    const res = await fetch(url, { ...init, headers });
    span.set({ [ATTR.status]: res.status });
    if (res.status >= 500) span.fail(String(res.status));
    return res;
  });
}

function markFailed(api: OtelApi, span: Span, errorType: string): void {
  span.setAttribute(ATTR.errorType, errorType);
  span.setStatus({ code: api.SpanStatusCode.ERROR });
}

/** A short, non-secret name for what went wrong: an error code or class, never the message (it may quote a URL or input). */
function errorTypeOf(err: unknown): string {
  if (err && typeof err === 'object') {
    const { code, name } = err as { code?: unknown; name?: unknown };
    if (typeof code === 'string' && code) return code;
    if (typeof name === 'string' && name) return name;
  }
  return 'Error';
}

/** `traceparent` (version 00) and `tracestate` for a span, as W3C Trace Context writes them. */
function traceHeaders(span: Span): Record<string, string> {
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  const headers: Record<string, string> = { traceparent: `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}` };
  const state = traceState?.serialize();
  if (state) headers.tracestate = state;
  return headers;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * The remote parent a `traceparent` header names, or the root context when it is absent or invalid (W3C Trace Context
 * level 1: version `ff` is invalid, version 00 has exactly four fields, all-zero ids are invalid).
 */
export function extractParent(api: OtelApi, headers: Record<string, string | string[] | undefined>): Context {
  const header = headers.traceparent;
  const match = typeof header === 'string' ? TRACEPARENT.exec(header.trim()) : null;
  if (!match) return api.ROOT_CONTEXT;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return api.ROOT_CONTEXT;
  if (!api.isValidTraceId(traceId) || !api.isValidSpanId(spanId)) return api.ROOT_CONTEXT;
  const state = headers.tracestate;
  return api.trace.setSpanContext(api.ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & 1,
    isRemote: true,
    ...(typeof state === 'string' && state ? { traceState: api.createTraceState(state) } : {}),
  });
}

export interface TracingPluginOptions extends TracingConfig {
  /**
   * Continue a trace the caller names in `traceparent`. Yes for the backend (only the web calls it); no for a public
   * edge (web, summarizer), where anyone could otherwise choose our trace ids and switch sampling off for their calls.
   */
  acceptIncomingContext: boolean;
}

/** The provider of one app instance: spans named by `serviceName`, sent to `<endpoint>/v1/traces` as OTLP/HTTP JSON. */
async function startProvider(opts: TracingPluginOptions & { endpoint: string }) {
  const [api, { BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  // Batched (every 5 s, or 512 spans) so a request never waits on the collector; `shutdown` sends what is left.
  const exporter = new OTLPTraceExporter({ url: tracesUrl(opts.endpoint) });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.serviceName }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  return { api, provider, tracer: provider.getTracer('@aop/core') };
}

/**
 * Server spans for every request of the app it is registered on, and the scope outgoing calls read. Register it first
 * (before other plugins and routes), so its hooks run before theirs and the whole request runs in its scope. With no
 * endpoint it adds nothing: no hooks, no SDK.
 */
async function tracing(app: FastifyInstance, opts: TracingPluginOptions): Promise<void> {
  if (!opts.endpoint) return;
  const { api, provider, tracer } = await startProvider({ ...opts, endpoint: opts.endpoint });
  const appTracer: AppTracer = { api, tracer };
  // Spans still queued are sent before the app is gone; `shutdown` flushes, then stops the exporter.
  app.addHook('onClose', async () => provider.shutdown());

  const scopes = new WeakMap<FastifyRequest, Scope>();
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const parent = opts.acceptIncomingContext ? extractParent(api, request.headers) : api.ROOT_CONTEXT;
    const path = request.url.split('?', 1)[0] ?? '/';
    // Attributes never include the query string, headers or body: they can carry tokens (and cookies are credentials).
    const span = tracer.startSpan(
      request.method,
      {
        kind: api.SpanKind.SERVER,
        attributes: { [ATTR.method]: request.method, [ATTR.path]: path, [ATTR.requestId]: String(request.id) },
      },
      parent,
    );
    const scope: Scope = { app: appTracer, context: api.trace.setSpan(parent, span) };
    scopes.set(request, scope);
    // `close` comes for every response: sent, aborted by the client, or written by hand after `reply.hijack()` (event
    // streams), where Fastify's own onResponse hooks do not run.
    reply.raw.once('close', () => {
      const route = request.routeOptions.url;
      if (route) {
        span.setAttribute(ATTR.route, route);
        span.updateName(`${request.method} ${route}`);
      }
      const status = reply.raw.statusCode;
      if (!reply.raw.writableFinished) markFailed(api, span, 'aborted');
      else {
        span.setAttribute(ATTR.status, status);
        if (status >= 500) markFailed(api, span, String(status));
      }
      span.end();
    });
    storage.run(scope, done);
  });
  // A body is read from socket events, which do not carry the request's scope: enter it again once the body is in, so
  // validation, preHandler hooks and the handler run in it.
  app.addHook('preValidation', (request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
    const scope = scopes.get(request);
    if (scope) storage.run(scope, done);
    else done();
  });
}

export const tracingPlugin = fp(tracing, { name: 'aop-tracing', fastify: '5.x' });
