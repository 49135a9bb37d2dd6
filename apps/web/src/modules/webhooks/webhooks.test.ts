import { createHmac, randomBytes } from 'node:crypto';
import { request, startSmtpServer } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// Spec §4.18 "Hosting webhooks", §6 (email provider and hosting provider events). Deliveries are signed here the way
// the providers sign them (Standard Webhooks / Svix: HMAC-SHA256 over "<id>.<timestamp>.<body>" with the base64 key
// after `whsec_`), independently of the service's own code; mail goes over real SMTP to a local server.

const EMAIL_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const HOSTING_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const INTERNAL_KEY = 'internal-key-for-webhook-tests-0123';

function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

let seq = 0;
const deliveryId = () => `msg_${Date.now().toString(36)}${++seq}`;

interface DeliverOptions {
  id?: string;
  /** Seconds since the epoch; now by default. */
  timestamp?: number;
  secret?: string;
  /** Header family: `svix` (email provider) or `webhook` (hosting provider). */
  family?: 'svix' | 'webhook';
  tamper?: (body: string) => string;
  signature?: string;
  omit?: 'id' | 'timestamp' | 'signature';
}

describe('provider webhooks', () => {
  let web: TestWeb;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let admin: { userId: string; cookie: string };
  let user: { userId: string; cookie: string };

  beforeAll(async () => {
    smtp = await startSmtpServer();
    web = await startWeb({
      EMAIL_WEBHOOK_SECRET: EMAIL_SECRET,
      HOSTING_WEBHOOK_SECRET: HOSTING_SECRET,
      INTERNAL_API_KEY: INTERNAL_KEY,
      SMTP_URL: smtp.url,
      MAIL_FROM: 'platform@example.com',
    });
    admin = await web.signIn({ isAdmin: true, name: 'Ada Admin' });
    user = await web.signIn({ name: 'Una User' });
  });
  afterAll(async () => {
    await web?.close();
    await smtp?.close();
  });

  function deliver(path: string, payload: unknown, options: DeliverOptions = {}) {
    const family = options.family ?? (path.endsWith('/email') ? 'svix' : 'webhook');
    const secret = options.secret ?? (path.endsWith('/email') ? EMAIL_SECRET : HOSTING_SECRET);
    const id = options.id ?? deliveryId();
    const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
    const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      [`${family}-id`]: id,
      [`${family}-timestamp`]: String(timestamp),
      [`${family}-signature`]: options.signature ?? sign(secret, id, timestamp, body),
    };
    if (options.omit) delete headers[`${family}-${options.omit}`];
    return request(`${web.url}${path}`, { method: 'POST', headers, body: options.tamper ? options.tamper(body) : body });
  }

  const emailEvent = (type: string, data: Record<string, unknown>) => ({
    type,
    created_at: new Date().toISOString(),
    data: { email_id: `em_${randomBytes(6).toString('hex')}`, from: 'Platform <platform@example.com>', subject: 'Hello', ...data },
  });

  describe('POST /api/webhooks/email', () => {
    it('accepts a correctly signed delivery and stores it', async () => {
      const id = deliveryId();
      const res = await deliver('/api/webhooks/email', emailEvent('email.delivered', { to: ['Dee <dee@example.com>'] }), { id });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, id, type: 'delivered', duplicate: false });
      const row = await web.database.db.kysely.selectFrom('email_events').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        type: 'delivered',
        from_address: 'platform@example.com',
        to_addresses: ['dee@example.com'],
        subject: 'Hello',
      });
    });

    it('stores each of the spec’s delivery events and inbound mail', async () => {
      for (const type of ['sent', 'delivered', 'opened', 'clicked']) {
        const res = await deliver('/api/webhooks/email', emailEvent(`email.${type}`, { to: ['ev@example.com'] }));
        expect(res.body).toMatchObject({ received: true, type, duplicate: false });
      }
      const id = deliveryId();
      const inbound = await deliver(
        '/api/webhooks/email',
        emailEvent('email.received', {
          from: 'Sam <sam@example.org>',
          to: ['support@example.com'],
          subject: 'Help',
          text: 'My agent is down',
        }),
        { id },
      );
      expect(inbound.body).toMatchObject({ received: true, type: 'inbound' });
      const row = await web.database.db.kysely.selectFrom('email_events').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ type: 'inbound', from_address: 'sam@example.org', subject: 'Help', text_body: 'My agent is down' });
    });

    it('stores a redelivered event once', async () => {
      const id = deliveryId();
      const payload = emailEvent('email.opened', { to: ['once@example.com'] });
      expect((await deliver('/api/webhooks/email', payload, { id })).body.duplicate).toBe(false);
      const again = await deliver('/api/webhooks/email', payload, { id });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ received: true, id, type: 'opened', duplicate: true });
      const rows = await web.database.db.kysely.selectFrom('email_events').select('id').where('id', '=', id).execute();
      expect(rows).toHaveLength(1);
    });

    it('acknowledges event types it does not keep without storing them', async () => {
      const id = deliveryId();
      const res = await deliver('/api/webhooks/email', emailEvent('email.delivery_delayed', { to: ['x@example.com'] }), { id });
      expect(res.body).toEqual({ received: true, id, ignored: true });
      expect(await web.database.db.kysely.selectFrom('email_events').select('id').where('id', '=', id).execute()).toEqual([]);
    });

    it('refuses a tampered body, a wrong secret and a forged signature (403)', async () => {
      const payload = emailEvent('email.delivered', { to: ['t@example.com'] });
      const tampered = await deliver('/api/webhooks/email', payload, { tamper: (b) => b.replace('Hello', 'Hullo') });
      expect(tampered.status).toBe(403);
      expect(tampered.body).toEqual({ error: 'Invalid signature' });
      const wrongSecret = await deliver('/api/webhooks/email', payload, { secret: `whsec_${randomBytes(24).toString('base64')}` });
      expect(wrongSecret.status).toBe(403);
      const forged = await deliver('/api/webhooks/email', payload, { signature: 'v1,AAAA' });
      expect(forged.status).toBe(403);
      const wrongVersion = await deliver('/api/webhooks/email', payload, {
        signature: sign(EMAIL_SECRET, 'x', 1, '').replace('v1,', 'v2,'),
      });
      expect(wrongVersion.status).toBe(403);
    });

    it('accepts any one matching signature among several (secret rotation)', async () => {
      const id = deliveryId();
      const timestamp = Math.floor(Date.now() / 1000);
      const payload = emailEvent('email.sent', { to: ['rot@example.com'] });
      const body = JSON.stringify(payload);
      const old = sign(`whsec_${randomBytes(24).toString('base64')}`, id, timestamp, body);
      const res = await deliver('/api/webhooks/email', payload, {
        id,
        timestamp,
        signature: `${old} ${sign(EMAIL_SECRET, id, timestamp, body)}`,
      });
      expect(res.status).toBe(200);
    });

    it('refuses a stale or future timestamp (403) and missing headers (401)', async () => {
      const payload = emailEvent('email.delivered', { to: ['s@example.com'] });
      const now = Math.floor(Date.now() / 1000);
      for (const timestamp of [now - 6 * 60, now + 6 * 60]) {
        const res = await deliver('/api/webhooks/email', payload, { timestamp });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'Webhook timestamp outside the tolerance zone' });
      }
      // Inside the 5-minute window either way is fine.
      expect((await deliver('/api/webhooks/email', payload, { timestamp: now - 4 * 60 })).status).toBe(200);
      for (const omit of ['id', 'timestamp', 'signature'] as const) {
        const res = await deliver('/api/webhooks/email', payload, { omit });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ error: 'Missing webhook signature' });
      }
    });

    it('answers 400 for a signed body that is not an event', async () => {
      for (const body of ['[1,2]', '"text"', '{"data":{}}', '{"type":5}', 'not json']) {
        const res = await deliver('/api/webhooks/email', body);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'Invalid payload' });
      }
      const empty = await request(`${web.url}/api/webhooks/email`, { method: 'POST', headers: { 'content-type': 'application/json' } });
      expect(empty.status).toBe(401);
    });

    it('answers 400 Invalid payload for a signed event holding U+0000 or nested deeper than 64 levels, and stores neither', async () => {
      const nulId = deliveryId();
      const nul = await deliver('/api/webhooks/email', emailEvent('email.received', { to: ['n@example.com'], text: 'a\u0000b' }), {
        id: nulId,
      });
      const deepId = deliveryId();
      const deep = await deliver(
        '/api/webhooks/hosting-status',
        { type: 'deploy_ended', data: JSON.parse(`${'['.repeat(65)}${']'.repeat(65)}`) },
        {
          id: deepId,
        },
      );
      for (const res of [nul, deep])
        expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'Invalid payload' } });
      const stored = await web.database.db.kysely.selectFrom('email_events').select('id').where('id', '=', nulId).execute();
      expect(stored).toEqual([]);
    });

    it('refuses every delivery when no secret is configured', async () => {
      const bare = await startWeb({});
      try {
        const body = JSON.stringify(emailEvent('email.delivered', { to: ['n@example.com'] }));
        const id = deliveryId();
        const timestamp = Math.floor(Date.now() / 1000);
        for (const path of ['/api/webhooks/email', '/api/webhooks/hosting-status']) {
          const res = await request(`${bare.url}${path}`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'svix-id': id,
              'svix-timestamp': String(timestamp),
              'svix-signature': sign(EMAIL_SECRET, id, timestamp, body),
            },
            body,
          });
          expect(res.status).toBe(503);
          expect(res.body).toEqual({ error: 'Webhook signing secret is not configured' });
        }
        expect(await bare.database.db.kysely.selectFrom('email_events').select('id').execute()).toEqual([]);
      } finally {
        await bare.close();
      }
    });

    it('suppresses hard-bounced and complaining addresses, so the mailer stops writing to them', async () => {
      // A soft bounce is recorded but suppresses nothing.
      const soft = await deliver(
        '/api/webhooks/email',
        emailEvent('email.bounced', { to: ['full@example.com'], bounce: { type: 'Transient' } }),
      );
      expect(soft.body.type).toBe('bounced');
      const hard = await deliver(
        '/api/webhooks/email',
        emailEvent('email.bounced', { to: ['Gone <GONE@example.com>'], bounce: { type: 'Permanent', subType: 'General' } }),
      );
      expect(hard.body.type).toBe('bounced');
      await deliver('/api/webhooks/email', emailEvent('email.complained', { to: ['angry@example.com'] }));
      const suppressed = await web.database.db.kysely
        .selectFrom('email_suppressions')
        .select(['address', 'reason'])
        .orderBy('address')
        .execute();
      expect(suppressed).toEqual([
        { address: 'angry@example.com', reason: 'complained' },
        { address: 'gone@example.com', reason: 'bounced' },
      ]);

      // The invite mail goes out over SMTP to a normal address and not to a suppressed one.
      const invite = (email: string) => request(`${web.url}/api/invite`, { json: { email }, headers: { cookie: admin.cookie } });
      const ok = await invite('full@example.com');
      expect(ok.status).toBe(201);
      expect(ok.body.emailSent).toBe(true);
      await smtp.waitForMail('full@example.com');
      for (const address of ['gone@example.com', 'Angry@Example.com']) {
        const res = await invite(address);
        expect(res.status).toBe(201);
        expect(res.body.emailSent).toBe(false);
      }
      await new Promise((r) => setTimeout(r, 200));
      expect(smtp.mails.some((m) => m.to.includes('gone@example.com') || m.to.includes('angry@example.com'))).toBe(false);
    });
  });

  describe('hosting status', () => {
    const hostingEvent = (type: string, data: Record<string, unknown>, timestamp = new Date().toISOString()) => ({
      type,
      timestamp,
      data: { id: `evt-${randomBytes(4).toString('hex')}`, ...data },
    });
    const poll = (query = '', headers: Record<string, string> = { cookie: admin.cookie }) =>
      request(`${web.url}/api/webhooks/hosting-status${query}`, { headers });

    it('POST stores platform and deployment events once, signed with webhook-* headers', async () => {
      const id = deliveryId();
      const event = hostingEvent('deploy_started', { serviceId: 'srv-web', serviceName: 'web' });
      const res = await deliver('/api/webhooks/hosting-status', event, { id });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, id, type: 'deploy_started', category: 'deployment', duplicate: false });
      const again = await deliver('/api/webhooks/hosting-status', event, { id });
      expect(again.body.duplicate).toBe(true);
      expect(await web.database.db.kysely.selectFrom('hosting_events').select('id').where('id', '=', id).execute()).toHaveLength(1);

      const tampered = await deliver('/api/webhooks/hosting-status', event, { tamper: (b) => b.replace('srv-web', 'srv-evil') });
      expect(tampered.status).toBe(403);
      const stale = await deliver('/api/webhooks/hosting-status', event, { timestamp: Math.floor(Date.now() / 1000) - 3600 });
      expect(stale.status).toBe(403);
      const unsigned = await request(`${web.url}/api/webhooks/hosting-status`, { json: event });
      expect(unsigned.status).toBe(401);
      const bad = await deliver('/api/webhooks/hosting-status', { type: 'Not A Type!', data: {} });
      expect(bad.status).toBe(400);
    });

    it('GET needs an administrator session or the internal key', async () => {
      expect((await poll('', {})).status).toBe(401);
      const other = await poll('', { cookie: user.cookie });
      expect(other.status).toBe(403);
      expect(other.body).toEqual({ error: 'Forbidden' });
      expect((await poll('', { authorization: 'Bearer wrong-key-000000000000' })).status).toBe(403);
      expect((await poll('', { authorization: `Bearer ${INTERNAL_KEY}` })).status).toBe(200);
      expect((await poll('', { cookie: admin.cookie })).status).toBe(200);
    });

    it('GET gives the platform status per service and events after a cursor, in arrival order', async () => {
      const start = await poll();
      expect(start.status).toBe(200);
      const cursor = start.body.cursor as string;
      expect(cursor).toMatch(/^\d+$/);

      await deliver(
        '/api/webhooks/hosting-status',
        hostingEvent('deploy_ended', { serviceId: 'srv-web', serviceName: 'web', status: 'succeeded' }),
      );
      await deliver('/api/webhooks/hosting-status', hostingEvent('server_available', { serviceId: 'srv-web', serviceName: 'web' }));
      await deliver('/api/webhooks/hosting-status', hostingEvent('server_available', { serviceId: 'srv-backend', serviceName: 'backend' }));
      await deliver('/api/webhooks/hosting-status', hostingEvent('server_failed', { serviceId: 'srv-backend', serviceName: 'backend' }));

      const next = await poll(`?after=${cursor}`);
      expect(next.body.events.map((e: { type: string }) => e.type)).toEqual([
        'deploy_ended',
        'server_available',
        'server_available',
        'server_failed',
      ]);
      expect(next.body.events[0]).toMatchObject({ category: 'deployment', serviceId: 'srv-web', serviceName: 'web', status: 'succeeded' });
      expect(next.body.events[3]).toMatchObject({ category: 'platform', status: 'failed' });
      expect(next.body.events[0].payload.data.serviceId).toBe('srv-web');
      expect(next.body.status).toBe('degraded');
      const services = Object.fromEntries(next.body.services.map((s: { serviceId: string }) => [s.serviceId, s]));
      expect(services['srv-web']).toMatchObject({ state: 'up', lastDeployment: { type: 'deploy_ended', status: 'succeeded' } });
      expect(services['srv-backend']).toMatchObject({ state: 'down', serviceName: 'backend' });

      // Nothing new since the last cursor; filters; a bad cursor.
      const empty = await poll(`?after=${next.body.cursor}`);
      expect(empty.body.events).toEqual([]);
      expect(empty.body.cursor).toBe(next.body.cursor);
      const deploys = await poll(`?after=${cursor}&category=deployment`);
      expect(deploys.body.events.map((e: { type: string }) => e.type)).toEqual(['deploy_ended']);
      const backendOnly = await poll(`?after=${cursor}&serviceId=srv-backend&limit=1`);
      expect(backendOnly.body.events.map((e: { type: string }) => e.type)).toEqual(['server_available']);
      expect((await poll('?after=abc')).status).toBe(400);
      expect((await poll('?category=other')).status).toBe(400);
      expect((await poll('?limit=x')).body).toEqual({ error: 'limit must be an integer' });

      // Recovery brings the platform back to operational.
      await deliver('/api/webhooks/hosting-status', hostingEvent('server_restarted', { serviceId: 'srv-backend', serviceName: 'backend' }));
      expect((await poll()).body.status).toBe('operational');
    });

    it('the platform-status data feed reads the same events', async () => {
      const res = await request(`${web.url}/api/data-feeds?feed=platform-status`, { headers: { cookie: user.cookie } });
      expect(res.status).toBe(200);
      expect(res.body.feed).toBe('platform-status');
      expect(res.body.data.status).toBe('operational');
      expect(res.body.data.services.map((s: { serviceId: string }) => s.serviceId).sort()).toEqual(['srv-backend', 'srv-web']);
    });
  });
});
