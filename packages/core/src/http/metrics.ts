import { isIP } from 'node:net';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { Env } from '../config.js';
import { safeEqual } from '../crypto.js';
import { RateLimitRefusal } from './rate-limit.js';

/**
 * `GET /metrics` in the Prometheus text format (issue #21). Each app has its own `Registry` (tests run several services
 * in one process, and the global registry would refuse a second `aop_http_requests_total`); app-specific families are
 * made by the app's features with `registers: [app.metrics.registry]`.
 */

/** The environment slice every service composes into its config (`METRICS_TOKEN`). */
export const MetricsEnvSchema = Type.Object({
  // A bearer token for scrapers; unset: /metrics answers only loopback callers that came through no proxy.
  METRICS_TOKEN: Env.optional(Type.String({ minLength: 16 })),
});

export interface MetricsConfig {
  metrics: {
    /** Bearer token of `GET /metrics`; undefined: loopback callers only (see `metricsAccess`). */
    token: string | undefined;
  };
}

export function toMetricsConfig(env: Static<typeof MetricsEnvSchema>): MetricsConfig {
  return { metrics: { token: env.METRICS_TOKEN } };
}

export const METRICS_PATH = '/metrics';

// The metric classes for the apps' own families, so apps depend on @aop/core alone (prom-client is its dependency).
export { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What a connection pool says of itself (`Database.pool()` of @aop/db, typed here so core needs no database). */
export interface PoolStats {
  /** Connections the pool may open. */
  max: number;
  /** Connections lent out to a query or transaction now. */
  inUse: number;
  /** Open and idle. */
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
}

export interface MetricsOptions {
  config: MetricsConfig;
  /** The service's database pool, read at each scrape; absent for a service without a database (summarizer). */
  pool?: () => PoolStats;
}

export interface AppMetrics {
  readonly registry: Registry;
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: AppMetrics;
  }
}

/** One queue of a background worker and how many items wait in it now. */
export interface QueueDepth {
  queue: string;
  depth: number;
}

/**
 * `aop_queue_depth{queue}`: how much waits for each background worker of a service (web: its jobs' due rows; summarizer:
 * pages waiting for an extraction thread), read from `read` at each scrape. One definition for every service.
 */
export function registerQueueDepths(registry: Registry, read: () => QueueDepth[] | Promise<QueueDepth[]>): void {
  new Gauge({
    name: 'aop_queue_depth',
    help: 'Items waiting for a background worker (due rows of a job, pages waiting for a thread), by queue.',
    labelNames: ['queue'] as const,
    registers: [registry],
    async collect() {
      for (const { queue, depth } of await read()) this.set({ queue }, depth);
    },
  });
}

/** Buckets in seconds: API answers are milliseconds, agent chat turns and provisioning calls take tens of seconds. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** Headers a reverse proxy adds: a request carrying one came from elsewhere even if its socket is loopback. */
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'];

const isLoopback = (address: string | undefined): boolean => {
  if (!address) return false;
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
  return (isIP(plain) === 4 && plain.startsWith('127.')) || plain === '::1';
};

/**
 * Who may read /metrics. With METRICS_TOKEN: whoever sends `Authorization: Bearer <token>` (compared in constant
 * time), from anywhere. Without: only a caller on this machine — the socket's own peer address (not `request.ip`,
 * which TRUST_PROXY lets a header choose) is loopback and no proxy header is present (a reverse proxy on the same
 * host connects from loopback on behalf of the internet).
 */
export function metricsAccess(request: FastifyRequest, token: string | undefined): 'ok' | 'unauthorized' | 'forbidden' {
  if (token !== undefined) {
    const header = request.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match?.[1] !== undefined && safeEqual(match[1], token) ? 'ok' : 'unauthorized';
  }
  if (!isLoopback(request.raw.socket.remoteAddress)) return 'forbidden';
  return FORWARDING_HEADERS.some((name) => request.headers[name] !== undefined) ? 'forbidden' : 'ok';
}

/** The label of a request's route: its pattern (`/api/agents/:id`), never the raw URL, so ids add no series. */
const routeLabel = (request: FastifyRequest): string => request.routeOptions.url ?? 'unmatched';

/**
 * Process CPU, memory, event-loop lag, GC: the families every Node service exports. They describe the process, so one
 * registry serves every app in it, and the event-loop monitor and GC observer they start run once per process (per
 * app, a test worker building hundreds of apps would keep hundreds of them running).
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

async function metrics(app: FastifyInstance, opts: MetricsOptions): Promise<void> {
  const registry = new Registry();
  const processFamilies = processMetrics();

  const requests = new Counter({
    name: 'aop_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'aop_http_request_duration_seconds',
    help: 'Time from the request arriving to the answer sent, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'aop_rate_limit_refusals_total',
    help: 'Requests answered 429, by rate-limit rule (`other`: a 429 of another kind, e.g. too many log streams or one relayed from upstream).',
    labelNames: ['rule', 'route'] as const,
    registers: [registry],
  });
  const pool = opts.pool;
  if (pool) {
    new Gauge({
      name: 'aop_db_pool_connections',
      help: 'Database connections by state: in_use (lent to a query or transaction), idle, max (the pool size).',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        const stats = pool();
        this.set({ state: 'in_use' }, stats.inUse);
        this.set({ state: 'idle' }, stats.idle);
        this.set({ state: 'max' }, stats.max);
      },
    });
    new Gauge({
      name: 'aop_db_pool_waiting',
      help: 'Queries and transactions waiting for a database connection.',
      registers: [registry],
      collect() {
        this.set(pool().waiting);
      },
    });
  }

  app.decorate('metrics', { registry });

  // The rule of a refused request, from the error its rate-limit hook threw, for the answer's count.
  const refusedBy = new WeakMap<FastifyRequest, string>();
  app.addHook('onError', (request, _reply, error, done) => {
    if (error instanceof RateLimitRefusal) refusedBy.set(request, error.rule);
    done();
  });
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    const route = routeLabel(request);
    // Scrapes are not the traffic being watched (and would dominate its counts).
    if (route === METRICS_PATH) return done();
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    if (reply.statusCode === 429) refusals.inc({ rule: refusedBy.get(request) ?? 'other', route });
    done();
  });

  app.get(METRICS_PATH, { schema: { hide: true } }, async (request, reply) => {
    const access = metricsAccess(request, opts.config.metrics.token);
    // Answered here rather than thrown: the words are the same on every service, whatever its error handler.
    if (access === 'unauthorized') return reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'Unauthorized' });
    if (access === 'forbidden') return reply.code(403).send({ error: 'Forbidden' });
    // Two sets of families with no name in common: the text format allows them one after the other.
    const text = `${await registry.metrics()}\n${await processFamilies.metrics()}`;
    return reply.type(registry.contentType).header('cache-control', 'no-store').send(text);
  });
}

/**
 * Registers the registry (`app.metrics`), the HTTP and rate-limit families, the pool gauges and `GET /metrics`.
 * Registered right after `createServer`, before any route, so its hooks see every request.
 */
export const metricsPlugin = fp(metrics, { name: 'metrics', fastify: '5.x' });
