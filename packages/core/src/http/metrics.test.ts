import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { metricsAccess } from './metrics.js';

/** The parts of a request `metricsAccess` reads: the socket's peer and the headers. */
const from = (remoteAddress: string | undefined, headers: Record<string, string> = {}) =>
  ({ raw: { socket: { remoteAddress } }, headers }) as unknown as FastifyRequest;

// Issue #21: who may read /metrics. The services' own tests scrape over HTTP from 127.0.0.1; these are the addresses a
// test server cannot be reached from.
describe('metricsAccess (issue #21)', () => {
  it('without a token, admits loopback in every spelling and nothing else', () => {
    for (const address of ['127.0.0.1', '127.3.2.1', '::1', '::ffff:127.0.0.1']) expect(metricsAccess(from(address), undefined)).toBe('ok');
    for (const address of ['10.0.0.1', '192.168.1.5', '::ffff:10.0.0.1', 'fe80::1', '1.127.0.0', undefined]) {
      expect(metricsAccess(from(address), undefined)).toBe('forbidden');
    }
  });

  it('without a token, refuses loopback when a proxy relayed the request', () => {
    expect(metricsAccess(from('127.0.0.1', { 'x-forwarded-for': '203.0.113.9' }), undefined)).toBe('forbidden');
    expect(metricsAccess(from('::1', { forwarded: 'for=203.0.113.9' }), undefined)).toBe('forbidden');
  });

  it('with a token, admits the exact bearer token from anywhere and nothing else', () => {
    const token = 'a-metrics-token-of-some-length';
    expect(metricsAccess(from('203.0.113.9', { authorization: `Bearer ${token}` }), token)).toBe('ok');
    expect(metricsAccess(from('203.0.113.9', { authorization: `bearer ${token}` }), token)).toBe('ok');
    for (const authorization of ['', token, `Bearer ${token}x`, `Bearer ${token.slice(1)}`, `Basic ${token}`, `Bearer ${token} extra`]) {
      expect(metricsAccess(from('127.0.0.1', { authorization }), token)).toBe('unauthorized');
    }
  });
});
