import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyHealth } from '../../platform/clients/system-metrics.js';
import { startWeb, type TestWeb } from '../../web.test-support.js';

// Spec §4.10: GET /api/health and the admin-only GET /api/admin/health.
describe('GET /api/health', () => {
  let web: TestWeb;
  let broken: TestWeb;
  beforeAll(async () => {
    web = await startWeb({ ADMIN_EMAILS: 'Ops@Example.com' });
    // The operating system's counters cannot be read: the spec's 500 shape.
    broken = await startWeb({}, { metrics: { read: () => Promise.reject(new Error('/proc unreadable')) } });
  });
  afterAll(async () => {
    await web.close();
    await broken.close();
  });

  it('answers 200 with status, health and timestamp only, no auth needed', async () => {
    const res = await request(`${web.url}/api/health`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['health', 'status', 'timestamp']);
    expect(res.body.status).toBe('ok');
    expect(['healthy', 'degraded', 'unhealthy']).toContain(res.body.health);
    expect(new Date(res.body.timestamp).toISOString()).toBe(res.body.timestamp);
  });

  it('answers 500 { status: error, health: unhealthy, timestamp } when metrics fail', async () => {
    const res = await request(`${broken.url}/api/health`);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ status: 'error', health: 'unhealthy', timestamp: expect.any(String) });
  });

  it('classifies with the 70 / 85 % thresholds on the higher of CPU and memory', () => {
    expect(classifyHealth(0, 0)).toBe('healthy');
    expect(classifyHealth(70, 70)).toBe('healthy');
    expect(classifyHealth(70.01, 10)).toBe('degraded');
    expect(classifyHealth(10, 85)).toBe('degraded');
    expect(classifyHealth(85.01, 0)).toBe('unhealthy');
    expect(classifyHealth(20, 99)).toBe('unhealthy');
    expect(() => classifyHealth(Number.NaN, 0)).toThrow();
  });

  describe('GET /api/admin/health', () => {
    it('401 without a session', async () => {
      const res = await request(`${web.url}/api/admin/health`);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    });

    it('401 with a forged or malformed session cookie', async () => {
      for (const cookie of ['service-session=' + 'f'.repeat(64), 'service-session=not-a-token', 'service-session=']) {
        const res = await request(`${web.url}/api/admin/health`, { headers: { cookie } });
        expect(res.status).toBe(401);
      }
    });

    it('403 for a signed-in user who is not an admin', async () => {
      const { cookie } = await web.signIn({ email: 'someone@example.com' });
      const res = await request(`${web.url}/api/admin/health`, { headers: { cookie } });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'Forbidden' });
    });

    it('carries cpu, memory and uptime for an admin (ADMIN_EMAILS, case-insensitive, or the user flag)', async () => {
      for (const admin of [{ email: 'ops@example.com' }, { email: 'flagged@example.com', isAdmin: true }]) {
        const { cookie } = await web.signIn(admin);
        const res = await request(`${web.url}/api/admin/health`, { headers: { cookie } });
        expect(res.status).toBe(200);
        expect(res.body.status).toBe('ok');
        expect(res.body.cpu.usagePercent).toBeGreaterThanOrEqual(0);
        expect(res.body.cpu.usagePercent).toBeLessThanOrEqual(100);
        expect(res.body.cpu.cores).toBeGreaterThan(0);
        expect(res.body.memory.totalBytes).toBeGreaterThan(res.body.memory.usedBytes);
        expect(res.body.uptime.processSeconds).toBeGreaterThanOrEqual(0);
      }
    });

    it('an expired session is no session', async () => {
      const { userId, cookie } = await web.signIn({ isAdmin: true });
      await web.database.db.kysely
        .updateTable('sessions')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('user_id', '=', userId)
        .execute();
      const res = await request(`${web.url}/api/admin/health`, { headers: { cookie } });
      expect(res.status).toBe(401);
    });
  });

  it('serves its OpenAPI document at /api/openapi.json', async () => {
    const res = await request(`${web.url}/api/openapi.json`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(['/api/health', '/api/admin/health']));
  });
});
