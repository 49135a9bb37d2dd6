import * as api from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseEnv } from './config.js';
import { TracingEnvSchema, extractParent, toTracingConfig, traceOutgoing, tracesUrl } from './tracing.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const parentOf = (headers: Record<string, string | string[] | undefined>) => api.trace.getSpanContext(extractParent(api, headers));

// The mechanism behind issue #21's tracing; the services' spans end to end are in test/integration/tracing.test.ts.
describe('tracing helpers (issue #21)', () => {
  it('continues a W3C traceparent, with its tracestate, as a remote parent', () => {
    expect(parentOf({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'vendor=a,other=b' })).toMatchObject({
      traceId: TRACE,
      spanId: SPAN,
      traceFlags: 1,
      isRemote: true,
    });
    expect(parentOf({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'vendor=a' })?.traceState?.get('vendor')).toBe('a');
    // Unsampled stays unsampled; a later version may add fields after the four it shares with version 00.
    expect(parentOf({ traceparent: `00-${TRACE}-${SPAN}-00` })?.traceFlags).toBe(0);
    expect(parentOf({ traceparent: `01-${TRACE}-${SPAN}-01-future` })?.traceId).toBe(TRACE);
  });

  it('starts a new trace for a missing or invalid traceparent', () => {
    for (const traceparent of [
      undefined,
      '',
      [`00-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}-01`],
      `ff-${TRACE}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-01-extra`,
      `00-${'0'.repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}`,
    ]) {
      expect(parentOf({ traceparent }), String(traceparent)).toBeUndefined();
    }
  });

  it('calls straight through outside a traced request, adding no headers', async () => {
    const seen = await traceOutgoing(
      'backend GET',
      () => {
        throw new Error('attributes are not computed when nothing is traced');
      },
      async (span) => span.headers,
    );
    expect(seen).toEqual({});
  });

  it('reads its switch and service name from the configuration slice', () => {
    expect(toTracingConfig({}, 'aop-web')).toEqual({ endpoint: undefined, serviceName: 'aop-web' });
    expect(toTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'edge' }, 'aop-web')).toEqual({
      endpoint: 'http://c:4318',
      serviceName: 'edge',
    });
    // Validated at start: OTLP/HTTP needs an http(s) URL; an empty value is unset (off).
    expect(parseEnv(TracingEnvSchema, { OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toEqual({});
    expect(() => parseEnv(TracingEnvSchema, { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(ConfigError);
    expect(() => parseEnv(TracingEnvSchema, { OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    expect(tracesUrl('http://c:4318')).toBe('http://c:4318/v1/traces');
    expect(tracesUrl('https://c.example/otlp/')).toBe('https://c.example/otlp/v1/traces');
  });
});
