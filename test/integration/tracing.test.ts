import { mkdtemp, rm } from 'node:fs/promises';
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { LocalAgentHost } from '@aop/provisioner';
import { request } from '@aop/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const SHARED = { INTERNAL_API_KEY: 'internal-key-for-tracing-tests', HMAC_SECRET: 'hmac-secret-for-tracing-tests' };
/** OTLP's SpanKind and StatusCode numbers. */
const SERVER = 2;
const CLIENT = 3;
const STATUS_ERROR = 2;

/** One span as the OTLP/HTTP JSON export carries it, with its resource's service name and attributes flattened. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  status: number;
  attributes: Record<string, unknown>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpAttribute = { key: string; value: OtlpValue };

const otlpValue = (v: OtlpValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue;
const attributesOf = (list: OtlpAttribute[] = []) => Object.fromEntries(list.map((a) => [a.key, otlpValue(a.value)]));

/**
 * A local OTLP/HTTP receiver, as a collector listens on 4318: `POST /v1/traces` with an `ExportTraceServiceRequest` as
 * JSON (the exporter of `@opentelemetry/exporter-trace-otlp-http`), gzip or not. It keeps every span and every request.
 */
async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const posts: { path: string; contentType: string | undefined }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', contentType: req.headers['content-type'] });
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      const body = JSON.parse(raw.toString('utf8'));
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attributesOf(rs.resource?.attributes)['service.name']);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              service,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind,
              status: s.status?.code ?? 0,
              attributes: attributesOf(s.attributes),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, spans, posts, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The one span matching `where`, failing with what there is when there is none or several. */
function one(spans: ReceivedSpan[], where: (s: ReceivedSpan) => boolean, what: string): ReceivedSpan {
  const found = spans.filter(where);
  if (found.length !== 1)
    throw new Error(`${found.length} spans for ${what}; received: ${spans.map((s) => `${s.service} ${s.name}`).join(', ')}`);
  return found[0]!;
}

// Issue #21, "Metrics and traces": with OTEL_EXPORTER_OTLP_ENDPOINT set, one user request's spans from web and backend
// (and the backend's calls to the agent's gateway) reach an OTLP receiver as one trace; unset, nothing is sent.
describe('OpenTelemetry tracing (issue #21)', () => {
  let work: string;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let owner: { userId: string; cookie: string };
  /** The answers to the requests whose traces are checked, read once both services have closed (and so flushed). */
  let metrics: { status: number; requestId: string | null };
  let fleet: { status: number; requestId: string | null; body: unknown };

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-tracing-'));
    receiver = await startOtlpReceiver();
    // Stand-in gateways speaking OpenClaw's WebSocket protocol (connect, sessions.list), as real processes.
    host = await fakeRuntimeHost(work, { gatewayProtocol: true });
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url };
    backend = await startBackend({ ...SHARED, ...otel }, { host });
    web = await startWeb({ ...SHARED, ...otel, BACKEND_API_URL: backend.url });
    // An administrator may provision without a paid plan.
    owner = await web.signIn({ isAdmin: true });
    const provisioned = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie: owner.cookie } });
    expect([provisioned.status, provisioned.body.error]).toEqual([200, undefined]);
    await host.waitUntilReady(provisioned.body.agentId, { timeoutMs: 20_000 });

    // web → backend, relayed with the caller's request id (and a `traceparent` of the caller's own, which the public
    // web service must not continue).
    const m = await request(`${web.url}/api/metrics/${owner.userId}/summary`, {
      headers: { cookie: owner.cookie, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    });
    metrics = { status: m.status, requestId: m.headers.get('x-request-id') };
    // web → backend → the agent's gateway: the backend reads the running agent's sessions over its WebSocket.
    const f = await request(`${web.url}/api/mission-control/fleet/traces`, { headers: { cookie: owner.cookie } });
    fleet = { status: f.status, requestId: f.headers.get('x-request-id'), body: f.body };

    // Closing flushes each app's exporter: every span ended so far is at the receiver when this resolves.
    await web.close();
    await backend.close();
  });
  afterAll(async () => {
    await host?.shutdown();
    await receiver?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('exports OTLP/HTTP JSON to <endpoint>/v1/traces, each service under its own name', () => {
    expect(receiver.posts.length).toBeGreaterThan(0);
    for (const post of receiver.posts) expect(post).toEqual({ path: '/v1/traces', contentType: 'application/json' });
    expect(new Set(receiver.spans.map((s) => s.service))).toEqual(new Set(['aop-web', 'aop-backend']));
  });

  it('links the web request, its backend call and the backend request in one trace, with the request id', () => {
    expect(metrics.status).toBe(200);
    expect(metrics.requestId).toMatch(/^req_/);
    const route = '/api/metrics/:userId/summary';
    const webServer = one(
      receiver.spans,
      (s) => s.service === 'aop-web' && s.kind === SERVER && s.attributes['aop.request_id'] === metrics.requestId,
      'the web request',
    );
    expect(webServer).toMatchObject({
      name: `GET ${route}`,
      attributes: {
        'http.request.method': 'GET',
        'http.route': route,
        'url.path': `/api/metrics/${owner.userId}/summary`,
        'http.response.status_code': 200,
      },
    });
    // The caller's own traceparent started nothing here: a new trace, no parent.
    expect(webServer.traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
    expect(webServer.parentSpanId).toBe('');

    const trace = receiver.spans.filter((s) => s.traceId === webServer.traceId);
    const backendCall = one(trace, (s) => s.service === 'aop-web' && s.kind === CLIENT, 'the backend call');
    expect(backendCall).toMatchObject({
      name: 'backend GET',
      parentSpanId: webServer.spanId,
      attributes: { 'url.full': `${backend.url}${route.replace(':userId', owner.userId)}`, 'http.response.status_code': 200 },
    });
    const backendServer = one(trace, (s) => s.service === 'aop-backend', 'the backend request');
    expect(backendServer).toMatchObject({
      kind: SERVER,
      name: `GET ${route}`,
      parentSpanId: backendCall.spanId,
      // The web relays its request id (x-request-id), and the backend keeps it: the same id on both sides.
      attributes: { 'aop.request_id': metrics.requestId, 'http.route': route, 'http.response.status_code': 200 },
    });
    expect(trace).toHaveLength(3);
  });

  it('follows the request on to the agent gateway the backend calls', () => {
    expect(fleet.status).toBe(200);
    expect(Array.isArray(fleet.body)).toBe(true);
    const webServer = one(
      receiver.spans,
      (s) => s.service === 'aop-web' && s.kind === SERVER && s.attributes['aop.request_id'] === fleet.requestId,
      'the web request',
    );
    expect(webServer.name).toBe('GET /api/mission-control/fleet/traces');
    const trace = receiver.spans.filter((s) => s.traceId === webServer.traceId);
    const backendCall = one(trace, (s) => s.service === 'aop-web' && s.kind === CLIENT, 'the backend call');
    expect(backendCall.parentSpanId).toBe(webServer.spanId);
    const backendServer = one(trace, (s) => s.service === 'aop-backend' && s.kind === SERVER, 'the backend request');
    expect(backendServer).toMatchObject({ name: 'GET /api/mission-control/fleet/traces', parentSpanId: backendCall.spanId });
    expect(backendServer.attributes['aop.request_id']).toMatch(/^req_/);

    const agentPort = (url: string) => Number(new URL(url).port);
    const connect = one(trace, (s) => s.name === 'gateway connect', 'the gateway handshake');
    const sessions = one(trace, (s) => s.name === 'gateway sessions.list', 'the gateway request');
    for (const span of [connect, sessions]) {
      expect(span).toMatchObject({ service: 'aop-backend', kind: CLIENT, parentSpanId: backendServer.spanId });
      expect(span.status).not.toBe(STATUS_ERROR);
      expect(span.attributes).toMatchObject({ 'rpc.system': 'openclaw', 'server.address': '127.0.0.1' });
      expect(agentPort(`http://x:${span.attributes['server.port']}`)).toBeGreaterThan(0);
    }
    expect(sessions.attributes['rpc.method']).toBe('sessions.list');
  });

  it('puts no credentials in any span', () => {
    const everything = JSON.stringify(receiver.spans);
    for (const secret of [SHARED.INTERNAL_API_KEY, SHARED.HMAC_SECRET, owner.cookie.split('=')[1]!, 'authorization', 'cookie']) {
      expect(everything).not.toContain(secret);
    }
  });
});

describe('OpenTelemetry tracing switched off (issue #21)', () => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let upstream: Server;
  const seen: IncomingHttpHeaders[] = [];
  let web: TestWeb | undefined;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // A stand-in backend that records what the web sends it.
    upstream = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  });
  afterEach(async () => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    await web?.close();
  });
  afterAll(async () => {
    await receiver.close();
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  it('sends nothing and adds no traceparent when OTEL_EXPORTER_OTLP_ENDPOINT is unset', async () => {
    // Set in this process's environment but not in the service's configuration: nothing may read it behind config's back.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    const backendUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backendUrl });
    expect(web.config.tracing).toEqual({ endpoint: undefined, serviceName: 'aop-web' });
    const user = await web.signIn();
    const res = await request(`${web.url}/api/metrics/${user.userId}/summary`, { headers: { cookie: user.cookie } });
    expect([res.status, res.body]).toEqual([200, { ok: true }]);
    await web.close();
    web = undefined;

    expect(seen).toHaveLength(1);
    expect(seen[0]!['x-request-id']).toBe(res.headers.get('x-request-id'));
    expect(seen[0]).not.toHaveProperty('traceparent');
    expect(receiver.posts).toEqual([]);
  });
});
