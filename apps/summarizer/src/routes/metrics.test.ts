import { type RunningService, request, scrapeMetrics } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSummarizer } from '../summarizer.test-support.js';

const TOKEN = 'metrics-token-for-the-summarizer-test';

// Issue #21 "Metrics": GET /metrics in the Prometheus text format, protected by METRICS_TOKEN (else loopback only).
describe('summarizer /metrics (issue #21)', () => {
  let open: RunningService;
  let guarded: RunningService;

  beforeAll(async () => {
    // No token: served to loopback callers only. Two summaries a minute, so the third is refused.
    open = await startSummarizer({ SUMMARIZER_RATE_LIMIT_PER_MINUTE: '2' });
    guarded = await startSummarizer({ METRICS_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await open?.close();
    await guarded?.close();
  });

  it('counts and times requests by route pattern and status, never by raw URL', async () => {
    const before = await scrapeMetrics(open.url);
    expect(before.status).toBe(200);
    expect(before.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const health = { method: 'GET', route: '/health', status: '200' };

    expect((await request(`${open.url}/health`)).status).toBe(200);
    // An id of letters: a number could appear in the process families' values (the resident memory, say).
    expect((await request(`${open.url}/no-such-page/page-id-qzx?secret=x`)).status).toBe(404);

    const after = await scrapeMetrics(open.url);
    expect(after.value('aop_http_requests_total', health)).toBe(before.value('aop_http_requests_total', health) + 1);
    expect(after.value('aop_http_request_duration_seconds_count', health)).toBe(
      before.value('aop_http_request_duration_seconds_count', health) + 1,
    );
    // Every observation lands in the +Inf bucket, and the histogram's sum grew by the request's (positive) time.
    expect(after.value('aop_http_request_duration_seconds_bucket', { ...health, le: '+Inf' })).toBe(
      after.value('aop_http_request_duration_seconds_count', health),
    );
    expect(after.value('aop_http_request_duration_seconds_sum', health)).toBeGreaterThan(
      before.value('aop_http_request_duration_seconds_sum', health),
    );
    // An unknown path is one series whatever its URL: the id and query string never become labels.
    expect(after.value('aop_http_requests_total', { route: 'unmatched', status: '404' })).toBe(
      before.value('aop_http_requests_total', { route: 'unmatched', status: '404' }) + 1,
    );
    expect(after.text).not.toContain('page-id-qzx');
    expect(after.text).not.toContain('secret');
    // Scrapes are not counted as traffic.
    expect(after.has('aop_http_requests_total', { route: '/metrics' })).toBe(false);
    // The process families come with every registry.
    expect(after.has('process_cpu_user_seconds_total')).toBe(true);
  });

  it('counts a 429 by its rate-limit rule and route', async () => {
    const labels = { rule: 'summarizer', route: '/api/summarize' };
    const before = await scrapeMetrics(open.url);
    const statuses: number[] = [];
    // The body is refused (400) after the limit counted it: no page is fetched.
    for (let i = 0; i < 3; i++) statuses.push((await request(`${open.url}/api/summarize`, { json: {} })).status);
    expect(statuses).toEqual([400, 400, 429]);
    const after = await scrapeMetrics(open.url);
    expect(after.value('aop_rate_limit_refusals_total', labels)).toBe(before.value('aop_rate_limit_refusals_total', labels) + 1);
    expect(after.value('aop_http_requests_total', { route: '/api/summarize', status: '429' })).toBe(1);
  });

  it('reports the extraction queue', async () => {
    const scrape = await scrapeMetrics(open.url);
    expect(scrape.has('aop_queue_depth', { queue: 'extract' })).toBe(true);
    expect(scrape.value('aop_queue_depth', { queue: 'extract' })).toBe(0);
  });

  it('without METRICS_TOKEN answers loopback callers only, never one relayed by a proxy', async () => {
    for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
      const relayed = await scrapeMetrics(open.url, { [header]: header === 'forwarded' ? 'for=198.51.100.7' : '198.51.100.7' });
      expect(relayed.status).toBe(403);
      expect(JSON.parse(relayed.text)).toEqual({ error: 'Forbidden' });
    }
  });

  it('with METRICS_TOKEN refuses a missing or wrong bearer token', async () => {
    const missing = await scrapeMetrics(guarded.url);
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.text)).toEqual({ error: 'Unauthorized' });
    expect(missing.text).not.toContain('aop_http_requests_total');
    for (const authorization of [`Bearer ${TOKEN.slice(0, -1)}x`, `Bearer ${TOKEN}-longer`, 'Bearer short', TOKEN, `Basic ${TOKEN}`]) {
      expect((await scrapeMetrics(guarded.url, { authorization })).status).toBe(401);
    }
    await request(`${guarded.url}/health`);
    const good = await scrapeMetrics(guarded.url, { authorization: `Bearer ${TOKEN}` });
    expect(good.status).toBe(200);
    expect(good.value('aop_http_requests_total', { route: '/health', status: '200' })).toBe(1);
    // With a token, where the scrape comes from does not matter.
    expect((await scrapeMetrics(guarded.url, { authorization: `Bearer ${TOKEN}`, 'x-forwarded-for': '198.51.100.7' })).status).toBe(200);
  });
});
