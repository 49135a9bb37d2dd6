import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../backend.test-support.js';

async function hit(url: string, times: number) {
  const answers = [];
  for (let i = 0; i < times; i++) answers.push(await request(url));
  return answers;
}

// Spec §8: backend general 120/min and AI 30/min per IP, RateLimit-* headers, never X-RateLimit-*.
describe('backend rate limits', () => {
  it('deployments: 5 POSTs per minute, then 429 "Deployment rate limit exceeded."', async () => {
    const other = await startBackend();
    try {
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await request(`${other.url}/api/deployments`, { json: { agentId: 'a' } }));
      expect(answers[0]!.headers.get('ratelimit-limit')).toBe('5');
      expect(answers.slice(0, 5).every((a) => a.status !== 429)).toBe(true);
      expect(answers[5]!.status).toBe(429);
      expect(answers[5]!.body).toEqual({ error: 'Deployment rate limit exceeded.' });
      // Reading is not deploying: GET stays under the general limit only.
      const get = await request(`${other.url}/api/deployments`);
      expect(get.status).not.toBe(429);
      expect(get.headers.get('ratelimit-limit')).toBe('120');
    } finally {
      await other.close();
    }
  });

  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend();
  });
  afterAll(() => backend.close());

  it('AI: 30 per minute, then 429 "AI rate limit exceeded."', async () => {
    const answers = await hit(`${backend.url}/api/ai/models`, 31);
    const first = answers[0]!;
    expect(first.headers.get('ratelimit-limit')).toBe('30');
    expect(first.headers.get('ratelimit-remaining')).toBe('29');
    expect(Number(first.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
    expect(Number(first.headers.get('ratelimit-reset'))).toBeLessThanOrEqual(60);
    expect(first.headers.get('x-ratelimit-limit')).toBeNull();
    expect(answers.slice(0, 30).every((a) => a.status !== 429)).toBe(true);
    const last = answers[30]!;
    expect(last.status).toBe(429);
    expect(last.body).toEqual({ error: 'AI rate limit exceeded.' });
    expect(last.headers.get('ratelimit-remaining')).toBe('0');
    expect(last.headers.get('retry-after')).not.toBeNull();
  });

  it('general: 120 per minute across /api, AI calls included, then 429 "Too many requests, please slow down."', async () => {
    // 31 requests were already counted by the AI test above (same client IP).
    const answers = await hit(`${backend.url}/api/anything`, 89);
    expect(answers.every((a) => a.status === 404)).toBe(true);
    expect(answers.at(-1)!.headers.get('ratelimit-limit')).toBe('120');
    expect(answers.at(-1)!.headers.get('ratelimit-remaining')).toBe('0');
    const over = await request(`${backend.url}/api/anything`);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'Too many requests, please slow down.' });
  });

  it('health is outside /api and never limited', async () => {
    const res = await request(`${backend.url}/health`);
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-limit')).toBeNull();
  });
});
