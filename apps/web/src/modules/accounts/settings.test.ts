import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshIp, login, mailTo, mailedToken, register, startWeb, type TestWeb } from '../../web.test-support.js';

// Spec §4.1 settings and password change; shapes from research/not-shown-facts.md (Settings, Password change).
describe('settings', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb({ TRUST_PROXY: '127.0.0.1', REGISTER_LIMIT_PER_HOUR: '1000' });
  });
  afterAll(async () => {
    await web.close();
  });

  const newEmail = () => `${crypto.randomUUID()}@example.com`;
  /** Each register/login call gets its own rate-limit bucket. */
  const fromFreshIp = () => ({ 'x-forwarded-for': freshIp() });

  interface Account {
    id: string;
    email: string;
    name: string;
    password: string;
    cookie: string;
  }

  async function signInAs(email: string, password: string): Promise<string> {
    const res = await login(web.url, email, password, fromFreshIp());
    expect(res.status).toBe(200);
    expect(res.cookie).toBeDefined();
    return res.cookie as string;
  }

  /** Registers through the API, then signs in through the API. */
  async function registered(password = 'correct horse battery'): Promise<Account> {
    const email = newEmail();
    const name = `User ${email.slice(0, 8)}`;
    const res = await register(web.url, { email, password, name }, fromFreshIp());
    expect(res.status).toBe(200);
    return { id: res.body.id, email, name, password, cookie: await signInAs(email, password) };
  }

  const asCookie = (cookie?: string): Record<string, string> => (cookie ? { cookie } : {});
  const getSettings = (cookie?: string) => request(`${web.url}/api/settings`, { headers: asCookie(cookie) });
  const postSettings = (cookie: string | undefined, json: unknown) =>
    request(`${web.url}/api/settings`, { method: 'POST', headers: asCookie(cookie), json });
  const patchSettings = (cookie: string | undefined, json: unknown) =>
    request(`${web.url}/api/settings`, { method: 'PATCH', headers: asCookie(cookie), json });
  const changePassword = (cookie: string | undefined, json: unknown) =>
    request(`${web.url}/api/settings/password`, { method: 'POST', headers: asCookie(cookie), json });
  const sessionUser = async (cookie: string) => (await request(`${web.url}/api/auth/session`, { headers: { cookie } })).body.user;

  const expectError = (res: { status: number; body: unknown }, status: number, error: string) => {
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error });
  };

  describe('GET /api/settings', () => {
    it('401 { error: Unauthorized } without a session', async () => {
      expectError(await getSettings(), 401, 'Unauthorized');
      expectError(await getSettings('service-session=' + 'a'.repeat(64)), 401, 'Unauthorized');
    });

    it('answers the profile of a registered user', async () => {
      const user = await registered();
      const res = await getSettings(user.cookie);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: user.id,
        email: user.email,
        emailVerified: false,
        pendingEmail: null,
        name: user.name,
        plan: 'free',
        credits: 0,
        twoFactorEnabled: false,
        notifications: {},
        runtime: { managed: true, instanceId: null, url: null },
      });
    });
  });

  describe('POST /api/settings', () => {
    it('a field of the wrong type is refused with that field’s word, not taken as text; anonymous callers get 401 first', async () => {
      const user = await registered();
      expectError(await postSettings(user.cookie, { name: 5 }), 400, 'Name must not be empty');
      expectError(await postSettings(user.cookie, { email: ['a@example.com'] }), 400, 'Invalid email format');
      expectError(await postSettings(user.cookie, { email: 'b@example.com', currentPassword: 7 }), 400, 'currentPassword must be a string');
      expectError(await patchSettings(user.cookie, { name: { first: 'Grace' } }), 400, 'Name must not be empty');
      expect((await getSettings(user.cookie)).body.name).toBe(user.name);
      expectError(await postSettings(undefined, { name: 5 }), 401, 'Unauthorized');
      expectError(await patchSettings(undefined, { name: 5 }), 401, 'Unauthorized');
    });

    it('updates the name (trimmed) and a later GET shows it', async () => {
      const user = await registered();
      const res = await postSettings(user.cookie, { name: '  Grace Hopper  ' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: user.id, email: user.email, name: 'Grace Hopper' });
      expect((await getSettings(user.cookie)).body.name).toBe('Grace Hopper');
    });

    it('an email change waits for the link mailed to the new address; the old one gets a notice; both are audited', async () => {
      const user = await registered();
      const mixed = `New.${crypto.randomUUID()}@Example.COM`;
      const target = mixed.toLowerCase();
      const res = await postSettings(user.cookie, { email: mixed, currentPassword: user.password });
      expect(res.status).toBe(200);
      // Nothing changes yet: the account keeps its address, which still signs in; the new one does not.
      expect(res.body).toMatchObject({ id: user.id, email: user.email, pendingEmail: target, name: user.name });
      expect((await getSettings(user.cookie)).body).toMatchObject({ email: user.email, pendingEmail: target });
      expect((await login(web.url, target, user.password, fromFreshIp())).status).toBe(401);
      expect((await mailTo(web, user.email, 'email-change-notice')).text).toContain(`to ${target}`);

      const token = await mailedToken(web, target, 'email-verification', '/verify-email');
      const verified = await request(`${web.url}/api/auth/verify-email`, { json: { token } });
      expect(verified.body).toEqual({ message: 'Email address changed', email: target });
      expect((await getSettings(user.cookie)).body).toMatchObject({ email: target, emailVerified: true, pendingEmail: null });
      await signInAs(mixed, user.password);
      expect((await login(web.url, user.email, user.password, fromFreshIp())).status).toBe(401);
      // The link works once.
      expectError(await request(`${web.url}/api/auth/verify-email`, { json: { token } }), 400, 'Invalid or expired verification link');

      const audit = await web.database.db.kysely
        .selectFrom('audit_log')
        .select(['action', 'metadata'])
        .where('user_id', '=', user.id)
        .where('action', 'like', 'email.%')
        .orderBy('created_at')
        .execute();
      expect(audit).toEqual([
        { action: 'email.change_requested', metadata: { to: target } },
        { action: 'email.change', metadata: { from: user.email, to: target } },
      ]);
    });

    it('an email change needs the current password: 400 without it, 401 when wrong, and nothing is mailed', async () => {
      const user = await registered();
      const target = newEmail();
      expectError(await postSettings(user.cookie, { email: target }), 400, 'Current password required');
      expectError(
        await postSettings(user.cookie, { email: target, currentPassword: 'not the password' }),
        401,
        'Current password is incorrect',
      );
      expect((await getSettings(user.cookie)).body).toMatchObject({ email: user.email, pendingEmail: null });
      await expect(mailTo({ database: web.database }, target, 'email-verification').catch(() => 'none')).resolves.toBe('none');
    });

    it('a password change cancels a pending email change (its link may be in the wrong hands)', async () => {
      const user = await registered();
      const target = newEmail();
      expect((await postSettings(user.cookie, { email: target, currentPassword: user.password })).status).toBe(200);
      const token = await mailedToken(web, target, 'email-verification', '/verify-email');
      expect((await changePassword(user.cookie, { currentPassword: user.password, newPassword: 'a fresh password' })).status).toBe(200);
      expectError(await request(`${web.url}/api/auth/verify-email`, { json: { token } }), 400, 'Invalid or expired verification link');
      expect((await getSettings(user.cookie)).body).toMatchObject({ email: user.email, pendingEmail: null });
    });

    it('409 at the link when another account took the address meanwhile; the link stays usable', async () => {
      const user = await registered();
      const target = newEmail();
      expect((await postSettings(user.cookie, { email: target, currentPassword: user.password })).status).toBe(200);
      const token = await mailedToken(web, target, 'email-verification', '/verify-email');
      const squatter = await register(web.url, { email: target, password: 'squatter password' }, fromFreshIp());
      expect(squatter.status).toBe(200);
      expectError(await request(`${web.url}/api/auth/verify-email`, { json: { token } }), 409, 'Email already in use');
      expect((await getSettings(user.cookie)).body.email).toBe(user.email);
      await web.database.db.kysely.deleteFrom('users').where('id', '=', squatter.body.id).execute();
      expect((await request(`${web.url}/api/auth/verify-email`, { json: { token } })).status).toBe(200);
    });

    it('accepts the own address in another case', async () => {
      const user = await registered();
      const res = await postSettings(user.cookie, { email: user.email.toUpperCase() });
      expect(res.status).toBe(200);
      expect(res.body.email).toBe(user.email);
    });

    it('400 Invalid email format, and nothing changes', async () => {
      const user = await registered();
      for (const email of ['not-an-email', 'a@b', 'two words@example.com', '', `${'x'.repeat(250)}@example.com`]) {
        expectError(await postSettings(user.cookie, { email, name: 'Changed' }), 400, 'Invalid email format');
      }
      expect((await getSettings(user.cookie)).body).toMatchObject({ email: user.email, name: user.name });
    });

    it('409 Email already in use when another user has it (case-insensitive)', async () => {
      const [user, other] = await Promise.all([registered(), registered()]);
      const currentPassword = user.password;
      expectError(await postSettings(user.cookie, { email: other.email, currentPassword }), 409, 'Email already in use');
      expectError(await postSettings(user.cookie, { email: other.email.toUpperCase(), currentPassword }), 409, 'Email already in use');
      expect((await getSettings(user.cookie)).body.email).toBe(user.email);
      expect((await getSettings(other.cookie)).body.email).toBe(other.email);
    });

    it('400 for an empty or blank name', async () => {
      const user = await registered();
      for (const name of ['', '   ']) expectError(await postSettings(user.cookie, { name }), 400, 'Name must not be empty');
      expect((await getSettings(user.cookie)).body.name).toBe(user.name);
    });

    it('400 for a name over 100 characters; exactly 100 is accepted', async () => {
      const user = await registered();
      expectError(await postSettings(user.cookie, { name: 'n'.repeat(101) }), 400, 'Name must be at most 100 characters');
      expect((await getSettings(user.cookie)).body.name).toBe(user.name);
      const res = await postSettings(user.cookie, { name: 'n'.repeat(100) });
      expect(res.status).toBe(200);
      expect(res.body.name).toBe('n'.repeat(100));
    });

    it('401 Unauthorized without a session', async () => {
      expectError(await postSettings(undefined, { name: 'Nobody' }), 401, 'Unauthorized');
    });
  });

  describe('PATCH /api/settings', () => {
    const notifications = { email: true, digest: 'weekly', channels: { sms: false, push: ['mobile', 'desktop'] }, quietHours: null };

    it('stores the name and notifications, and a later GET returns them', async () => {
      const user = await registered();
      const res = await patchSettings(user.cookie, { name: 'Patched Name', notifications });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: user.id, email: user.email, name: 'Patched Name', notifications });
      const later = await getSettings(user.cookie);
      expect(later.body).toMatchObject({ name: 'Patched Name', notifications });
    });

    it('a name-only patch keeps the stored notifications', async () => {
      const user = await registered();
      expect((await patchSettings(user.cookie, { notifications })).status).toBe(200);
      expect((await patchSettings(user.cookie, { name: 'Only Name' })).status).toBe(200);
      expect((await getSettings(user.cookie)).body).toMatchObject({ name: 'Only Name', notifications });
    });

    it('400 for notifications that are not an object, and nothing is stored', async () => {
      const user = await registered();
      for (const bad of ['yes', 42, true, null, ['email']]) {
        expectError(
          await patchSettings(user.cookie, { name: 'Should Not Stick', notifications: bad }),
          400,
          'body/notifications must be object',
        );
      }
      expect((await getSettings(user.cookie)).body).toMatchObject({ name: user.name, notifications: {} });
    });

    it('400 for an empty name; 401 without a session', async () => {
      const user = await registered();
      expectError(await patchSettings(user.cookie, { name: ' ' }), 400, 'Name must not be empty');
      expectError(await patchSettings(undefined, { name: 'Nobody' }), 401, 'Unauthorized');
    });
  });

  describe('POST /api/settings/password', () => {
    const NEW_PASSWORD = 'a brand new secret';

    it('401 Not authenticated without a session', async () => {
      expectError(await changePassword(undefined, { currentPassword: 'whatever1', newPassword: NEW_PASSWORD }), 401, 'Not authenticated');
    });

    it('400 Current and new password required when either is missing or the body is not JSON', async () => {
      const user = await registered();
      const bodies = [
        {},
        { currentPassword: user.password },
        { newPassword: NEW_PASSWORD },
        { currentPassword: '', newPassword: NEW_PASSWORD },
        { currentPassword: user.password, newPassword: '' },
      ];
      for (const json of bodies) expectError(await changePassword(user.cookie, json), 400, 'Current and new password required');
      for (const [body, type] of [
        ['{not json', 'application/json'],
        [`currentPassword=${user.password}&newPassword=x`, 'application/x-www-form-urlencoded'],
        ['plain', 'text/plain'],
      ]) {
        const res = await request(`${web.url}/api/settings/password`, {
          method: 'POST',
          body,
          headers: { cookie: user.cookie, 'content-type': type as string },
        });
        expectError(res, 400, 'Current and new password required');
      }
      // Nothing changed: the old password still signs in.
      await signInAs(user.email, user.password);
    });

    it('400 Password must be at least 8 characters', async () => {
      const user = await registered();
      expectError(
        await changePassword(user.cookie, { currentPassword: user.password, newPassword: '1234567' }),
        400,
        'Password must be at least 8 characters',
      );
      await signInAs(user.email, user.password);
    });

    it('401 Current password is incorrect', async () => {
      const user = await registered();
      expectError(
        await changePassword(user.cookie, { currentPassword: `${user.password}x`, newPassword: NEW_PASSWORD }),
        401,
        'Current password is incorrect',
      );
      expect((await login(web.url, user.email, NEW_PASSWORD, fromFreshIp())).status).toBe(401);
    });

    it('200 { success: true }: the old password stops working, the new one signs in', async () => {
      const user = await registered();
      const res = await changePassword(user.cookie, { currentPassword: user.password, newPassword: NEW_PASSWORD });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      const old = await login(web.url, user.email, user.password, fromFreshIp());
      expect(old.status).toBe(401);
      expect(old.body).toEqual({ error: 'Invalid credentials' });
      await signInAs(user.email, NEW_PASSWORD);
    });

    it("ends the user's other sessions and keeps the one that changed it", async () => {
      const user = await registered();
      const other = await signInAs(user.email, user.password);
      expect(other).not.toBe(user.cookie);
      expect((await sessionUser(other))?.id).toBe(user.id);

      expect((await changePassword(user.cookie, { currentPassword: user.password, newPassword: NEW_PASSWORD })).status).toBe(200);

      expect(await sessionUser(other)).toBeNull();
      expectError(await getSettings(other), 401, 'Unauthorized');
      expect(await sessionUser(user.cookie)).toEqual({ id: user.id, name: user.name, email: user.email, isAdmin: false });
      expect((await getSettings(user.cookie)).status).toBe(200);
    });

    it('a user without a password gets 400 pointing to "Forgot password"; no current password works', async () => {
      const email = newEmail();
      const { cookie } = await web.signIn({ email });
      for (const currentPassword of ['anything', 'null', 'undefined', ' ', 'x'.repeat(200)]) {
        const res = await changePassword(cookie, { currentPassword, newPassword: NEW_PASSWORD });
        expect(res.status).toBe(400);
        expect(Object.keys(res.body)).toEqual(['error']);
        expect(res.body.error).toContain('Forgot password');
      }
      const attempt = await login(web.url, email, NEW_PASSWORD, fromFreshIp());
      expect(attempt.status).toBe(401);
      expect(attempt.body).toEqual({ error: 'Invalid credentials' });
    });
  });

  it('400 when moving to an address in the wallet accounts’ reserved domain', async () => {
    const account = await registered();
    const res = await postSettings(account.cookie, { email: '0x2222222222222222222222222222222222222222@wallet.service' });
    expectError(res, 400, 'This email address is reserved');
  });

  it('an API key may rename the account but never change its email or password', async () => {
    const account = await registered();
    const created = await request(`${web.url}/api/keys`, { headers: { cookie: account.cookie }, json: { name: 'automation' } });
    expect(created.status).toBe(201);
    const bearer = { authorization: `Bearer ${created.body.key}` };
    const rename = await request(`${web.url}/api/settings`, { method: 'POST', headers: bearer, json: { name: 'Renamed by key' } });
    expect(rename.status).toBe(200);
    expect(rename.body.name).toBe('Renamed by key');
    const message = 'This action needs a signed-in session, not an API key';
    expectError(await request(`${web.url}/api/settings`, { method: 'POST', headers: bearer, json: { email: newEmail() } }), 403, message);
    expectError(
      await request(`${web.url}/api/settings/password`, {
        method: 'POST',
        headers: bearer,
        json: { currentPassword: account.password, newPassword: 'taken over!!' },
      }),
      403,
      message,
    );
    expect((await getSettings(account.cookie)).body.email).toBe(account.email);
    expect((await login(web.url, account.email, account.password, fromFreshIp())).status).toBe(200);
  });

  it("user A's changes never affect user B", async () => {
    const [a, b] = await Promise.all([registered(), registered()]);
    const before = await getSettings(b.cookie);
    expect(before.status).toBe(200);

    expect((await postSettings(a.cookie, { name: 'A Renamed', email: newEmail(), currentPassword: a.password })).status).toBe(200);
    expect((await patchSettings(a.cookie, { notifications: { email: false } })).status).toBe(200);
    expect((await changePassword(a.cookie, { currentPassword: a.password, newPassword: 'another new secret' })).status).toBe(200);

    const after = await getSettings(b.cookie);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before.body);
    expect(after.body).toMatchObject({ id: b.id, email: b.email, name: b.name, notifications: {} });
    // B's password and sessions are untouched by A's password change.
    await signInAs(b.email, b.password);
  });
});
