import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../api-keys/api-keys.service.js';
import { type TestWeb, freshIp, login, mailedToken, register, startWeb, verifyEmail } from '../../web.test-support.js';

// Spec §4.18 Coordination: POST /api/invite (session), POST /api/invites/verify (no auth, limited per client),
// GET/POST /api/admin/invites (administrators). Mail goes to the outbox table (no SMTP configured), where the test
// reads the code the invitee received.

const HOUR = 3_600_000;

describe('invites', () => {
  let web: TestWeb;
  let now = Date.now();
  let admin: { userId: string; cookie: string };
  let alice: { userId: string; cookie: string };
  let bob: { userId: string; cookie: string };

  beforeAll(async () => {
    web = await startWeb(
      { INVITE_MAX_OUTSTANDING: '3', INVITE_TTL_HOURS: '48', INVITE_VERIFY_LIMIT_PER_MINUTE: '30', TRUST_PROXY: '127.0.0.1' },
      { clock: () => now },
    );
    admin = await web.signIn({ isAdmin: true, name: 'Ada Admin', email: 'ada.admin@example.com' });
    alice = await web.signIn({ name: 'Alice', email: 'alice@example.com' });
    bob = await web.signIn({ name: 'Bob', email: 'bob@example.com' });
  });
  afterAll(async () => {
    await web?.close();
  });

  const invite = (cookie: string | undefined, json: unknown, headers: Record<string, string> = {}) =>
    request(`${web.url}/api/invite`, { json, headers: { ...(cookie ? { cookie } : {}), ...headers } });
  const verify = (json: unknown, ip = freshIp()) => request(`${web.url}/api/invites/verify`, { json, headers: { 'x-forwarded-for': ip } });
  const adminList = (query = '', cookie = admin.cookie) => request(`${web.url}/api/admin/invites${query}`, { headers: { cookie } });
  const adminPost = (json: unknown, cookie = admin.cookie) => request(`${web.url}/api/admin/invites`, { json, headers: { cookie } });
  const outboxFor = (to: string) =>
    web.database.db.kysely.selectFrom('email_outbox').selectAll().where('to_address', '=', to).orderBy('created_at', 'desc').execute();

  it('POST /api/invite needs a signed-in session (401; 403 for an API key)', async () => {
    const anon = await invite(undefined, { email: 'x@example.com' });
    expect(anon.status).toBe(401);
    expect(anon.body).toEqual({ error: 'Unauthorized' });
    const { key } = await web.database.db.withUser(alice.userId, (trx) => createApiKey(trx, alice.userId, 'ci'));
    const byKey = await invite(undefined, { email: 'x@example.com' }, { authorization: `Bearer ${key}` });
    expect(byKey.status).toBe(403);
  });

  it('POST /api/invite validates the address', async () => {
    expect((await invite(alice.cookie, {})).body).toEqual({ error: 'Email is required' });
    expect((await invite(alice.cookie, { email: '' })).body).toEqual({ error: 'Email is required' });
    expect((await invite(alice.cookie, { email: 42 })).body).toEqual({ error: 'Invalid email format' });
    expect((await invite(alice.cookie, { email: 'not-an-email' })).body).toEqual({ error: 'Invalid email format' });
    expect((await invite(alice.cookie, { email: '0xabc@wallet.service' })).body).toEqual({ error: 'This email address is reserved' });
    // The body schema answers as the handler did: null or empty is "required", any other non-string a bad format.
    expect((await invite(alice.cookie, { email: null })).body).toEqual({ error: 'Email is required' });
    for (const email of [true, ['a@example.com'], { address: 'a@example.com' }, '   ']) {
      const res = await invite(alice.cookie, { email });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid email format' });
    }
    const text = await request(`${web.url}/api/invite`, {
      body: 'email=x@example.com',
      headers: { cookie: alice.cookie, 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(400);
    const taken = await invite(alice.cookie, { email: 'BOB@example.com' });
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual({ error: 'User already exists' });
  });

  let carolCode: string;
  it('creates an invite, shows the code once and mails it', async () => {
    const res = await invite(alice.cookie, { email: ' Carol@Example.com ' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      invite: { email: 'carol@example.com', status: 'pending', acceptedAt: null, revokedAt: null },
      emailSent: true,
    });
    expect(res.body.code).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(Date.parse(res.body.invite.expiresAt) - Date.parse(res.body.invite.createdAt)).toBe(48 * HOUR);
    carolCode = res.body.code;
    const [mail] = await outboxFor('carol@example.com');
    expect(mail).toMatchObject({ kind: 'invite', user_id: alice.userId, subject: 'You are invited to service' });
    expect(mail?.body_text).toContain('Alice invited you');
    expect(mail?.body_text).toContain(`${web.config.publicUrl}/register?invite=${carolCode}`);
    // Only the code's hash is stored.
    const row = await web.database.db.kysely
      .selectFrom('invites')
      .selectAll()
      .where('email', '=', 'carol@example.com')
      .executeTakeFirstOrThrow();
    expect(row.code_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(carolCode);

    const again = await invite(alice.cookie, { email: 'carol@example.com' });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: 'An invite for this email is already pending' });
  });

  it(`caps a user's pending invites (429), but not an administrator's`, async () => {
    expect((await invite(alice.cookie, { email: 'dan@example.com' })).status).toBe(201);
    expect((await invite(alice.cookie, { email: 'erin@example.com' })).status).toBe(201);
    const over = await invite(alice.cookie, { email: 'frank@example.com' });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'Maximum of 3 pending invites reached' });
    // Another user has their own allowance.
    expect((await invite(bob.cookie, { email: 'frank@example.com' })).status).toBe(201);
    for (const email of ['g1@example.com', 'g2@example.com', 'g3@example.com', 'g4@example.com']) {
      expect((await invite(admin.cookie, { email })).status).toBe(201);
    }
  });

  it('POST /api/invites/verify needs no authentication and tells whether a code works', async () => {
    const ok = await verify({ code: carolCode });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ valid: true, email: 'carol@example.com', expiresAt: expect.any(String) });
    expect(await verify({ code: 'AAAAAAAAAAAAAAAAAAAAAAAA' }).then((r) => r.body)).toEqual({
      valid: false,
      reason: 'unknown',
      expiresAt: null,
    });
    expect(await verify({ code: 'short' }).then((r) => r.body)).toEqual({ valid: false, reason: 'unknown', expiresAt: null });
    expect((await verify({})).body).toEqual({ error: 'code is required' });
    expect((await verify({ code: 7 })).status).toBe(400);
    for (const code of [7, null, '', ' \t\n', ['x']]) expect((await verify({ code })).body).toEqual({ error: 'code is required' });
    // Surrounding spaces are ignored.
    expect((await verify({ code: `  ${carolCode} ` })).body).toMatchObject({ valid: true });
  });

  it('POST /api/invites/verify is limited per client address', async () => {
    const ip = freshIp();
    let last = await verify({ code: carolCode }, ip);
    for (let i = 1; i < 30; i++) last = await verify({ code: carolCode }, ip);
    expect(last.status).toBe(200);
    const limited = await verify({ code: carolCode }, ip);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: 'Too many requests' });
    expect(limited.headers.get('ratelimit-limit')).toBe('30');
    expect((await verify({ code: carolCode }, freshIp())).status).toBe(200);
  });

  it('an invite is accepted when its address signs up and is verified, not by a mere registration of it', async () => {
    const res = await register(
      web.url,
      { email: 'carol@example.com', password: 'correct horse battery' },
      { 'x-forwarded-for': freshIp() },
    );
    expect(res.status).toBe(200);
    // Anyone may type Carol's address: the invite waits for its mailbox.
    expect((await verify({ code: carolCode })).body).toMatchObject({ valid: true });
    await verifyEmail(web, 'carol@example.com');
    expect((await verify({ code: carolCode })).body).toMatchObject({ valid: false, reason: 'accepted' });
    const list = await adminList('?status=accepted');
    expect(list.body.invites).toHaveLength(1);
    expect(list.body.invites[0]).toMatchObject({
      email: 'carol@example.com',
      status: 'accepted',
      acceptedUserId: res.body.id,
      invitedBy: { id: alice.userId, email: 'alice@example.com', name: 'Alice' },
    });
  });

  it('GET /api/admin/invites: administrators only; lists every invite with filters and pages', async () => {
    expect((await request(`${web.url}/api/admin/invites`)).status).toBe(401);
    const denied = await adminList('', alice.cookie);
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'Forbidden' });
    const all = await adminList();
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(8);
    expect(all.body.invites).toHaveLength(8);
    // Newest first.
    const created = all.body.invites.map((i: { createdAt: string }) => Date.parse(i.createdAt));
    expect([...created].sort((a, b) => b - a)).toEqual(created);
    const page = await adminList('?limit=4&offset=6');
    expect(page.body).toMatchObject({ total: 8, limit: 4, offset: 6 });
    expect(page.body.invites).toHaveLength(2);
    expect((await adminList('?status=pending')).body.total).toBe(7);
    expect((await adminList('?status=nope')).status).toBe(400);
    expect((await adminList('?limit=abc')).status).toBe(400);
  });

  it('POST /api/admin/invites creates and revokes', async () => {
    expect((await adminPost({ email: 'h@example.com' }, alice.cookie)).status).toBe(403);
    const created = await adminPost({ action: 'create', email: 'hank@example.com' });
    expect(created.status).toBe(201);
    expect(created.body.invite.status).toBe('pending');

    const revoked = await adminPost({ action: 'revoke', id: created.body.invite.id });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ success: true, invite: { id: created.body.invite.id, status: 'revoked' } });
    expect((await verify({ code: created.body.code })).body).toMatchObject({ valid: false, reason: 'revoked' });
    const twice = await adminPost({ action: 'revoke', id: created.body.invite.id });
    expect(twice.status).toBe(409);
    expect(twice.body).toEqual({ error: 'Invite is revoked' });
    expect((await adminPost({ action: 'revoke', id: 'inv_missing' })).status).toBe(404);
    expect((await adminPost({ action: 'revoke' })).body).toEqual({ error: 'id is required' });
    expect((await adminPost({ action: 'delete', id: 'x' })).body).toEqual({ error: 'Invalid action. Must be: create or revoke' });
    for (const action of [5, '', 'CREATE', ['create']]) {
      expect((await adminPost({ action, email: 'x@example.com' })).body).toEqual({ error: 'Invalid action. Must be: create or revoke' });
    }
    for (const id of [5, '', 'x'.repeat(101)])
      expect((await adminPost({ action: 'revoke', id })).body).toEqual({ error: 'id is required' });
    // Each action reads only its own field: a revoke ignores `email`, a create ignores `id`.
    expect((await adminPost({ action: 'revoke', id: 'inv_missing', email: 42 })).status).toBe(404);
    const withId = await adminPost({ action: null, email: 'hugo@example.com', id: 42 });
    expect(withId.status).toBe(201);
    expect((await adminPost({ action: 'revoke', id: withId.body.invite.id })).status).toBe(200);
    // A revoked invite frees the address for a new one.
    expect((await adminPost({ email: 'hank@example.com' })).status).toBe(201);
  });

  it('invites expire after their lifetime', async () => {
    const res = await invite(bob.cookie, { email: 'ivy@example.com' });
    expect((await verify({ code: res.body.code })).body.valid).toBe(true);
    now += 48 * HOUR + 1000;
    const expired = await verify({ code: res.body.code });
    expect(expired.body).toEqual({ valid: false, reason: 'expired', expiresAt: res.body.invite.expiresAt });
    expect((await adminPost({ action: 'revoke', id: res.body.invite.id })).body).toEqual({ error: 'Invite is expired' });
    // Expired invites no longer count against the cap: Alice can invite again.
    expect((await invite(alice.cookie, { email: 'jay@example.com' })).status).toBe(201);
    const list = await adminList('?status=expired');
    expect(list.body.invites.map((i: { email: string }) => i.email)).toContain('ivy@example.com');
  });

  it('an account that moves to an invited address accepts the invite once the change is verified', async () => {
    const invited = await adminPost({ email: 'kim@example.com' });
    expect(invited.status).toBe(201);
    const ip = { 'x-forwarded-for': freshIp() };
    const dave = await register(web.url, { email: 'dave@example.com', password: 'correct horse battery' }, ip);
    await verifyEmail(web, 'dave@example.com');
    const { cookie } = await login(web.url, 'dave@example.com', 'correct horse battery', ip);
    const change = await request(`${web.url}/api/settings`, {
      json: { email: 'kim@example.com', currentPassword: 'correct horse battery' },
      headers: { cookie: cookie! },
    });
    expect(change.body.pendingEmail).toBe('kim@example.com');
    expect((await verify({ code: invited.body.code })).body.valid).toBe(true);

    const token = await mailedToken(web, 'kim@example.com', 'email-verification', '/verify-email');
    expect((await request(`${web.url}/api/auth/verify-email`, { json: { token } })).status).toBe(200);
    expect((await verify({ code: invited.body.code })).body).toMatchObject({ valid: false, reason: 'accepted' });
    const accepted = (await adminList('?status=accepted')).body.invites.find((i: { email: string }) => i.email === 'kim@example.com');
    expect(accepted.acceptedUserId).toBe(dave.body.id);
  });
});
