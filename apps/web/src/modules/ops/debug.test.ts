import { request } from '@aop/testing';
import { loadMigrations } from '@aop/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// Spec §4.18 Other: POST /api/debug (administrators; no secrets). §4.14/§9: POST /api/test-usage was removed.

const SECRETS = {
  INTERNAL_API_KEY: 'internal-key-debug-test-0123456789',
  HMAC_SECRET: 'hmac-secret-debug-test-0123456789',
  SESSION_SECRET: 'session-secret-debug-test-0123456789abcdef',
  EMAIL_WEBHOOK_SECRET: `whsec_${Buffer.from('email-webhook-secret-for-debug').toString('base64')}`,
  SMTP_URL: 'smtp://mailuser:mailpassword@127.0.0.1:1',
  STRIPE_SECRET_KEY: 'sk_test_debug_0123456789',
};

describe('POST /api/debug', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb({ ...SECRETS, BACKEND_API_URL: 'http://127.0.0.1:1' });
  });
  afterAll(async () => {
    await web?.close();
  });

  it('is for administrators only', async () => {
    expect((await request(`${web.url}/api/debug`, { method: 'POST' })).status).toBe(401);
    const user = await web.signIn();
    const res = await request(`${web.url}/api/debug`, { method: 'POST', headers: { cookie: user.cookie } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'Forbidden' });
  });

  it('answers live diagnostics without any secret', async () => {
    const admin = await web.signIn({ isAdmin: true });
    const res = await request(`${web.url}/api/debug`, { method: 'POST', json: {}, headers: { cookie: admin.cookie } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      service: 'web',
      environment: 'development',
      database: { kind: process.env.DATABASE_URL ? 'postgres' : 'pglite', reachable: true, schemaVersion: { version: expect.any(Number) } },
      backend: { configured: true, reachable: false },
      mail: { transport: 'smtp', suppressedAddresses: 0 },
      webhooks: { email: { configured: true, events: 0, lastEventAt: null }, hosting: { configured: false } },
      integrations: { cardPayments: true },
      caller: { id: admin.userId, via: 'session' },
    });
    // The newest migration on disk is the one the database reports.
    expect(res.body.database.schemaVersion.version).toBe(Math.max(...loadMigrations().map((m) => m.version)));
    for (const secret of [...Object.values(SECRETS), 'mailpassword', 'email-webhook-secret']) expect(res.text).not.toContain(secret);
  });
});

describe('removed endpoints', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(async () => {
    await web?.close();
  });

  it('POST /api/test-usage answers 404, signed in or not', async () => {
    const admin = await web.signIn({ isAdmin: true });
    for (const headers of [{}, { cookie: admin.cookie }] as Record<string, string>[]) {
      const res = await request(`${web.url}/api/test-usage`, { method: 'POST', json: { tokens: 100 }, headers });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Not found' });
    }
    expect((await request(`${web.url}/api/test-usage`)).status).toBe(404);
    const rows = await web.database.db.kysely.selectFrom('usage_events').select('id').execute();
    expect(rows).toEqual([]);
  });
});
