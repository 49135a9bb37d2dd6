import { randomUUID } from 'node:crypto';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendCaller } from '../../platform/sessions.js';
import { type TestWeb, freshIp, login, mailTo, mailedToken, register, startWeb, verifyEmail } from '../../web.test-support.js';

const PASSWORD = 'correct horse battery';
const email = () => `${randomUUID()}@example.com`;

// Issue #16 item 1: privilege never follows from an address a user only typed. Spec §4.1 (register, settings,
// session), §4.10 (admin health), §4.15 (provisioning), §4.18 (invites); verification itself is ours
// (docs/decisions.md "Email verification").
describe('email verification and administrator rights', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb({
      TRUST_PROXY: '127.0.0.1',
      REGISTER_LIMIT_PER_HOUR: '1000',
      ADMIN_EMAILS: 'admin@example.test,boss@example.test',
    });
  });
  afterAll(() => web.close());

  const ip = () => ({ 'x-forwarded-for': freshIp() });
  const get = (path: string, cookie: string) => request(`${web.url}${path}`, { headers: { cookie } });
  const post = (path: string, cookie: string | undefined, json?: unknown) =>
    request(`${web.url}${path}`, { method: 'POST', headers: { ...ip(), ...(cookie ? { cookie } : {}) }, ...(json ? { json } : {}) });
  const isAdmin = async (cookie: string) => (await get('/api/auth/session', cookie)).body.user.isAdmin as boolean;

  async function account(address = email()): Promise<{ id: string; email: string; cookie: string }> {
    const res = await register(web.url, { email: address, password: PASSWORD }, ip());
    expect(res.status).toBe(200);
    const { cookie } = await login(web.url, address, PASSWORD, ip());
    return { id: res.body.id, email: address.toLowerCase(), cookie: cookie! };
  }

  /** What administrator rights open: the metrics endpoint, every user's invites, and provisioning without a plan. */
  async function expectNoAdminRights(cookie: string) {
    expect(await isAdmin(cookie)).toBe(false);
    expect((await get('/api/admin/health', cookie)).status).toBe(403);
    expect((await get('/api/admin/invites', cookie)).status).toBe(403);
    const provision = await post('/api/provision', cookie, { name: 'x', autoProvision: true });
    expect(provision.status).toBe(402);
  }

  it('the attack: changing one’s email to a listed address (any case) grants nothing; the link goes to that mailbox', async () => {
    const attacker = await account();
    // The request of the report, word for word, no longer even passes: an email change needs the current password.
    const bare = await post('/api/settings', attacker.cookie, { email: 'BOSS@example.test' });
    expect(bare.status).toBe(400);
    expect(bare.body).toEqual({ error: 'Current password required' });

    const res = await post('/api/settings', attacker.cookie, { email: 'BOSS@example.test', currentPassword: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ email: attacker.email, pendingEmail: 'boss@example.test' });
    expect((await get('/api/auth/session', attacker.cookie)).body.user).toMatchObject({ email: attacker.email, isAdmin: false });
    await expectNoAdminRights(attacker.cookie);
    // The only way on is the link, and it went to boss@example.test, not to the attacker.
    expect((await mailTo(web, 'boss@example.test', 'email-verification')).subject).toBe('Confirm your new email address');
    expect((await mailTo(web, attacker.email, 'email-change-notice')).text).toContain('boss@example.test');
  });

  it('the attack: registering a listed address nobody has claimed grants nothing until its link is followed', async () => {
    const squatter = await account('Admin@Example.test');
    expect((await get('/api/settings', squatter.cookie)).body).toMatchObject({ email: 'admin@example.test', emailVerified: false });
    await expectNoAdminRights(squatter.cookie);
    expect(backendCaller({ id: squatter.id, email: squatter.email, emailVerified: false })).toEqual({ id: squatter.id });

    // The mailbox's owner follows the link: now the address is proven, and the rights follow from it.
    expect((await mailTo(web, 'admin@example.test', 'email-verification')).subject).toBe('Confirm your email address');
    await verifyEmail(web, 'admin@example.test');
    expect(await isAdmin(squatter.cookie)).toBe(true);
    expect((await get('/api/admin/health', squatter.cookie)).status).toBe(200);
    expect((await get('/api/admin/invites', squatter.cookie)).status).toBe(200);
    expect(backendCaller({ id: squatter.id, email: squatter.email, emailVerified: true })).toEqual({
      id: squatter.id,
      email: squatter.email,
    });

    const audit = await web.database.db.kysely
      .selectFrom('audit_log')
      .select(['action', 'metadata'])
      .where('user_id', '=', squatter.id)
      .where('action', '=', 'email.verify')
      .execute();
    expect(audit).toEqual([{ action: 'email.verify', metadata: { email: 'admin@example.test' } }]);
  });

  it('an API key of an unverified listed address has no rights either', async () => {
    const user = await account();
    await web.database.db.kysely.updateTable('users').set({ email: 'boss@example.test' }).where('id', '=', user.id).execute();
    const key = (await post('/api/keys', user.cookie, { name: 'k' })).body.key as string;
    const session = await request(`${web.url}/api/auth/session`, { headers: { authorization: `Bearer ${key}` } });
    expect(session.body.user).toMatchObject({ email: 'boss@example.test', isAdmin: false });
    expect((await request(`${web.url}/api/admin/health`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(403);
  });

  it('400 for a malformed, unknown, used or expired link; nothing changes', async () => {
    const user = await account();
    for (const token of ['', 'x', 'f'.repeat(64), `${'a'.repeat(63)}\u00e9`]) {
      const res = await post('/api/auth/verify-email', undefined, { token });
      expect(res.status).toBe(400);
    }
    const token = await mailedToken(web, user.email, 'email-verification', '/verify-email');
    await web.database.db.kysely
      .updateTable('email_verification_tokens')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('user_id', '=', user.id)
      .execute();
    const expired = await post('/api/auth/verify-email', undefined, { token });
    expect(expired.body).toEqual({ error: 'Invalid or expired verification link' });
    expect((await get('/api/settings', user.cookie)).body.emailVerified).toBe(false);
  });

  it('resend: a new link for the unverified address, or for the pending change; 400 once verified; never by API key', async () => {
    const user = await account();
    const first = await mailedToken(web, user.email, 'email-verification', '/verify-email');
    const resent = await post('/api/auth/verify-email/resend', user.cookie);
    expect(resent.body).toEqual({ message: 'Verification link sent', email: user.email });
    const second = await mailedToken(web, user.email, 'email-verification', '/verify-email');
    expect(second).not.toBe(first);
    // Either link works (the first one that is followed uses up the other).
    expect((await post('/api/auth/verify-email', undefined, { token: first })).body).toEqual({
      message: 'Email address verified',
      email: user.email,
    });
    expect((await post('/api/auth/verify-email', undefined, { token: second })).status).toBe(400);
    expect((await post('/api/auth/verify-email/resend', user.cookie)).body).toEqual({ error: 'Email address already verified' });

    const target = email();
    expect((await post('/api/settings', user.cookie, { email: target, currentPassword: PASSWORD })).status).toBe(200);
    expect((await post('/api/auth/verify-email/resend', user.cookie)).body).toEqual({ message: 'Verification link sent', email: target });

    const key = (await post('/api/keys', user.cookie, { name: 'k' })).body.key as string;
    const byKey = await request(`${web.url}/api/auth/verify-email/resend`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect(byKey.status).toBe(403);
    expect((await post('/api/auth/verify-email/resend', undefined)).status).toBe(401);
  });

  it('a password reset proves the address too (its link went there)', async () => {
    const user = await account();
    await post('/api/auth/forgot-password', undefined, { email: user.email });
    const token = await mailedToken(web, user.email, 'password-reset', '/reset-password');
    expect((await post('/api/auth/reset-password', undefined, { token, password: 'a new password' })).status).toBe(200);
    const { cookie } = await login(web.url, user.email, 'a new password', ip());
    expect((await get('/api/settings', cookie!)).body.emailVerified).toBe(true);
  });

  it('invites need a verified address (the mail names its sender)', async () => {
    const user = await account();
    const refused = await post('/api/invite', user.cookie, { email: email() });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'Verify your email address before sending invites' });
    await verifyEmail(web, user.email);
    expect((await post('/api/invite', user.cookie, { email: email() })).status).toBe(201);
  });
});
