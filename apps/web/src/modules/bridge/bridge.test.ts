import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWebConfig } from '../../config.js';
import { startWeb, type TestWeb } from '../../web.test-support.js';

const SECRET = 'bridge-secret-value';

// Spec §4.8 bridge bus, §2.6 message, §8 (inbox default 50, max 100, 24 h window).
describe('bridge bus', () => {
  let web: TestWeb;
  let open: TestWeb;
  let now = Date.parse('2026-11-20T12:00:00Z');
  beforeAll(async () => {
    web = await startWeb({ BRIDGE_SECRET: SECRET, BRIDGE_OPERATOR_IDENTITY: 'ops-bot' }, { clock: () => now });
    open = await startWeb({ ADMIN_EMAILS: 'ops@example.test,boss@example.test' });
  });
  afterAll(async () => {
    await web.close();
    await open.close();
  });

  const auth = { 'x-bridge-secret': SECRET };
  const send = (json: unknown, headers: Record<string, string> = auth) => request(`${web.url}/api/bridge/send`, { json, headers });
  const inbox = (query: string, headers: Record<string, string> = auth) => request(`${web.url}/api/bridge/inbox?${query}`, { headers });

  it('401 { error: unauthorized } with a missing or wrong secret, on every route', async () => {
    const variants: Record<string, string>[] = [{}, { 'x-bridge-secret': 'wrong' }, { 'x-bridge-secret': `${SECRET}x` }];
    for (const headers of variants) {
      for (const res of [
        await send({ sender: 'atlas-main', content: 'x' }, headers),
        await inbox('', headers),
        await request(`${web.url}/api/bridge/health`, { headers }),
      ]) {
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ error: 'unauthorized' });
      }
    }
  });

  it('without a secret, the bus is for administrators only: 401 signed out, 403 for other accounts (API keys too)', async () => {
    const message = { sender: 'operator', content: 'hello' };
    const asUser = { cookie: (await open.signIn()).cookie };
    // An address in no list and an unverified one in ADMIN_EMAILS are both ordinary accounts.
    const asUnverifiedListed = { cookie: (await open.signIn({ email: 'boss@example.test', emailVerified: false })).cookie };
    for (const [headers, status, error] of [
      [{}, 401, 'unauthorized'],
      [asUser, 403, 'Forbidden'],
      [asUnverifiedListed, 403, 'Forbidden'],
    ] as const) {
      for (const res of [
        await request(`${open.url}/api/bridge/send`, { json: message, headers }),
        await request(`${open.url}/api/bridge/inbox?reader=r`, { headers }),
        await request(`${open.url}/api/bridge/health`, { headers }),
      ]) {
        expect(res.status).toBe(status);
        expect(res.body).toEqual({ error });
      }
    }
    const key = await request(`${open.url}/api/keys`, { json: { name: 'k' }, headers: asUser });
    expect((await request(`${open.url}/api/bridge/inbox`, { headers: { authorization: `Bearer ${key.body.key}` } })).status).toBe(403);
  });

  it('without a secret, an administrator (verified ADMIN_EMAILS address or role) sends and reads', async () => {
    for (const admin of [{ email: 'ops@example.test' }, { isAdmin: true }]) {
      const headers = { cookie: (await open.signIn(admin)).cookie };
      const sent = await request(`${open.url}/api/bridge/send`, { json: { sender: 'operator', content: 'hello' }, headers });
      expect(sent.status).toBe(200);
      const read = await request(`${open.url}/api/bridge/inbox?reader=ops-${sent.body.message.id}`, { headers });
      expect(read.body.messages.map((m: { id: string }) => m.id)).toContain(sent.body.message.id);
    }
  });

  it('production refuses to start with the bridge enabled and no BRIDGE_SECRET', () => {
    const secrets = {
      SESSION_SECRET: 'a'.repeat(64),
      INTERNAL_API_KEY: 'b'.repeat(64),
      HMAC_SECRET: 'c'.repeat(64),
      ENCRYPTION_KEY: 'd'.repeat(64),
    };
    const production = { NODE_ENV: 'production', DATA_DIR: '/nonexistent', ...secrets };
    expect(() => loadWebConfig(production)).toThrow(/BRIDGE_SECRET: required in production while the bridge is enabled/);
    expect(loadWebConfig({ ...production, BRIDGE_SECRET: SECRET }).bridge).toMatchObject({ enabled: true, secret: SECRET });
    expect(loadWebConfig({ ...production, BRIDGE_ENABLED: 'false' }).bridge.enabled).toBe(false);
  });

  it('BRIDGE_ENABLED=false leaves the routes out (404)', async () => {
    const off = await startWeb({ BRIDGE_ENABLED: 'false', BRIDGE_SECRET: SECRET });
    try {
      expect((await request(`${off.url}/api/bridge/health`, { headers: auth })).status).toBe(404);
    } finally {
      await off.close();
    }
  });

  it('sends with defaults channel general and priority normal', async () => {
    const res = await send({ sender: 'atlas-service', content: 'deploy done' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      message: {
        id: expect.any(String),
        sender: 'atlas-service',
        channel: 'general',
        priority: 'normal',
        created_at: new Date(now).toISOString(),
      },
    });
  });

  it('accepts the configured operator identity and refuses other senders', async () => {
    expect((await send({ sender: 'ops-bot', content: 'hi', channel: 'alerts', priority: 'high' })).status).toBe(200);
    const bad = await send({ sender: 'mallory', content: 'hi' });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'invalid sender' });
  });

  it.each([[{ content: 'x' }], [{ sender: 'atlas-main' }], [{ sender: 'atlas-main', content: '' }], [{}]])(
    '400 sender and content are required: %j',
    async (json) => {
      const res = await send(json);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'sender and content are required' });
    },
  );

  it('400 for an unknown channel', async () => {
    expect((await send({ sender: 'atlas-main', content: 'x', channel: 'random' })).body).toEqual({ error: 'invalid channel' });
  });

  // The body schema answers each field's own message, in the order the handler always checked them.
  it.each([
    [{ sender: 5, content: 'x' }, 'sender and content are required'],
    [{ sender: 'atlas-main', content: 5 }, 'sender and content are required'],
    [{ sender: '', content: 'x' }, 'sender and content are required'],
    [{ sender: null, content: 'x' }, 'sender and content are required'],
    // A missing or empty content is named before an unknown sender.
    [{ sender: 'mallory', content: '' }, 'sender and content are required'],
    [{ sender: 'mallory' }, 'sender and content are required'],
    // The sender list is whole names, not a pattern's prefix.
    [{ sender: 'atlas-main2', content: 'x' }, 'invalid sender'],
    [{ sender: 'atlas', content: 'x' }, 'invalid sender'],
    [{ sender: 'atlas-main', content: 'x', channel: null }, 'invalid channel'],
    [{ sender: 'atlas-main', content: 'x', channel: 7 }, 'invalid channel'],
    [{ sender: 'atlas-main', content: 'x', priority: 'meh' }, 'invalid priority'],
    [{ sender: 'atlas-main', content: 'x', priority: null }, 'invalid priority'],
    [{ sender: 'atlas-main', content: 'x'.repeat(100_001) }, 'content must be at most 100000 characters'],
    // The content's length comes last.
    [{ sender: 'atlas-main', content: 'x'.repeat(100_001), channel: 'random' }, 'invalid channel'],
    [{ sender: 'mallory', content: 'x'.repeat(100_001) }, 'invalid sender'],
  ])('400 with the field’s own message: %j', async (json, error) => {
    const res = await send(json);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error });
  });

  it('accepts every channel and priority, and up to 100,000 characters of content', async () => {
    for (const priority of ['low', 'normal', 'high', 'urgent']) {
      const res = await send({ sender: 'atlas-main', content: 'x'.repeat(100_000), channel: 'alerts', priority });
      expect(res.status).toBe(200);
      expect(res.body.message).toMatchObject({ channel: 'alerts', priority });
    }
  });

  it('inbox: after since, ascending, unread per reader; reader unknown marks nothing', async () => {
    now += 60_000;
    const since = new Date(now - 1).toISOString();
    const ids = [];
    for (const text of ['one', 'two', 'three']) {
      now += 1000;
      ids.push((await send({ sender: 'atlas-main', content: text, channel: 'tasks' })).body.message.id);
    }
    const q = `channel=tasks&since=${encodeURIComponent(since)}`;
    const alice = await inbox(`${q}&reader=alice`);
    expect(alice.body).toMatchObject({ ok: true, channel: 'tasks', count: 3 });
    expect(alice.body.messages.map((m: { content: string }) => m.content)).toEqual(['one', 'two', 'three']);
    expect(alice.body.messages[0]).toEqual({
      id: ids[0],
      sender: 'atlas-main',
      channel: 'tasks',
      content: 'one',
      priority: 'normal',
      created_at: expect.any(String),
    });
    expect((await inbox(`${q}&reader=alice`)).body.count).toBe(0);
    // Another reader still sees everything.
    expect((await inbox(`${q}&reader=bob`)).body.count).toBe(3);
    // Unknown readers never mark anything read.
    expect((await inbox(q)).body.count).toBe(3);
    expect((await inbox(`${q}&reader=unknown`)).body.count).toBe(3);
    now += 1000;
    await send({ sender: 'atlas-main', content: 'four', channel: 'tasks' });
    const next = await inbox(`${q}&reader=alice`);
    expect(next.body.messages.map((m: { content: string }) => m.content)).toEqual(['four']);
  });

  it('inbox: the default window is the last 24 hours', async () => {
    now += 3_600_000;
    await send({ sender: 'atlas-main', content: 'old news', channel: 'alerts' });
    now += 25 * 3_600_000;
    await send({ sender: 'atlas-main', content: 'fresh', channel: 'alerts' });
    const res = await inbox('channel=alerts&reader=carol');
    expect(res.body.messages.map((m: { content: string }) => m.content)).toEqual(['fresh']);
  });

  it('inbox: limit defaults to 50 and is clamped to 100', async () => {
    const since = new Date(now).toISOString();
    for (let i = 0; i < 120; i++) {
      now += 10;
      await web.database.db.kysely
        .insertInto('bridge_messages')
        .values({
          id: `brg_bulk_${String(i).padStart(3, '0')}`,
          sender: 'atlas-main',
          channel: 'general',
          content: `m${i}`,
          priority: 'normal',
          created_at: new Date(now),
        })
        .execute();
    }
    const q = `since=${encodeURIComponent(since)}`;
    expect((await inbox(q)).body.count).toBe(50);
    expect((await inbox(`${q}&limit=500`)).body.count).toBe(100);
    expect((await inbox(`${q}&limit=7`)).body.count).toBe(7);
    expect((await inbox(`${q}&limit=nonsense`)).body.count).toBe(50);
    expect((await inbox(`${q}&limit=0`)).body.count).toBe(50);
  });

  it('inbox: two concurrent polls by one reader get each message once', async () => {
    const since = new Date(now).toISOString();
    for (let i = 0; i < 10; i++) {
      now += 10;
      await send({ sender: 'atlas-main', content: `c${i}`, channel: 'alerts' });
    }
    const q = `channel=alerts&reader=dave&since=${encodeURIComponent(since)}`;
    const [x, y] = await Promise.all([inbox(q), inbox(q)]);
    expect(x.body.count + y.body.count).toBe(10);
  });

  it('inbox: 400 for a since that is not a date', async () => {
    expect((await inbox('since=yesterday-ish')).status).toBe(400);
  });

  it('health reports totals, the last message, channels and senders', async () => {
    const res = await request(`${web.url}/api/bridge/health`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      total_messages: expect.any(Number),
      last_message: { created_at: expect.any(String), sender: 'atlas-main', channel: 'alerts' },
      channels: ['general', 'tasks', 'alerts'],
      senders: ['atlas-main', 'atlas-service', 'ops-bot'],
      timestamp: new Date(now).toISOString(),
    });
    expect(res.body.total_messages).toBeGreaterThan(130);
    const admin = { cookie: (await open.signIn({ isAdmin: true })).cookie };
    const other = await request(`${open.url}/api/bridge/health`, { headers: admin });
    expect(other.body.last_message).toEqual(expect.objectContaining({ sender: 'operator' }));
  });

  it('health: 500 { status: error, error } when the database is unreachable', async () => {
    const broken = await startWeb({ BRIDGE_SECRET: SECRET });
    try {
      await broken.database.db.close();
      const res = await request(`${broken.url}/api/bridge/health`, { headers: auth });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ status: 'error', error: 'Database unreachable' });
    } finally {
      await broken.close().catch(() => {});
    }
  });
});
