import { randomUUID } from 'node:crypto';
import { request, startSmtpServer } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, freshIp, login, mailTo, register, startWeb } from '../../web.test-support.js';

const RESET_SUBJECT = 'Reset your password';
const email = () => `${randomUUID()}@example.com`;
const PASSWORD = 'original password';
const FORGOT_ANSWER = { message: 'If an account exists, a reset link has been sent' };

/** The token in the link of a mail (quoted-printable soft breaks removed). */
function tokenFrom(raw: string): string {
  const unfolded = raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
  const match = /reset-password\?token=([0-9a-f]{64})/.exec(unfolded);
  if (!match) throw new Error(`no reset link in:\n${raw}`);
  return match[1]!;
}

// Spec §4.1 forgot / reset password; reference shapes in research/not-shown-facts.md.
describe('password reset by email', () => {
  let web: TestWeb;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let now = Date.now();
  beforeAll(async () => {
    smtp = await startSmtpServer();
    web = await startWeb(
      {
        SMTP_URL: smtp.url,
        TRUST_PROXY: '127.0.0.1',
        PUBLIC_URL: 'https://app.example.test',
        FORGOT_PASSWORD_LIMIT_PER_15_MIN: '100',
        RESET_PASSWORD_LIMIT_PER_15_MIN: '100',
      },
      { clock: () => now },
    );
  });
  afterAll(async () => {
    await web.close();
    await smtp.close();
  });
  const ip = () => ({ 'x-forwarded-for': freshIp() });
  const forgot = (body: unknown) => request(`${web.url}/api/auth/forgot-password`, { json: body, headers: ip() });
  const reset = (body: unknown) => request(`${web.url}/api/auth/reset-password`, { json: body, headers: ip() });

  it('mails a single-use link over SMTP; the reset ends every session', async () => {
    const address = email();
    await register(web.url, { email: address, password: PASSWORD });
    const before = await login(web.url, address, PASSWORD, ip());
    const res = await forgot({ email: address.toUpperCase() });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(FORGOT_ANSWER);

    const mail = await smtp.waitForMail(address, 5_000, RESET_SUBJECT);
    expect(mail.raw).toContain('Subject: Reset your password');
    expect(mail.raw.replace(/=\r?\n/g, '')).toContain('https://app.example.test/reset-password?token=');
    const token = tokenFrom(mail.raw);

    const done = await reset({ token, password: 'brand new password' });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ message: 'Password reset successfully' });
    expect((await request(`${web.url}/api/auth/session`, { headers: { cookie: before.cookie! } })).body).toEqual({ user: null });
    expect((await login(web.url, address, PASSWORD, ip())).status).toBe(401);
    expect((await login(web.url, address, 'brand new password', ip())).status).toBe(200);

    const again = await reset({ token, password: 'third password!' });
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ error: 'Invalid or expired token' });
  });

  it('answers the same for an unknown email and sends nothing', async () => {
    const address = email();
    const res = await forgot({ email: address });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(FORGOT_ANSWER);
    await expect(smtp.waitForMail(address, 300)).rejects.toThrow(/No mail/);
  });

  it('a link expires', async () => {
    const address = email();
    await register(web.url, { email: address, password: PASSWORD });
    await forgot({ email: address });
    const token = tokenFrom((await smtp.waitForMail(address, 5_000, RESET_SUBJECT)).raw);
    const start = now;
    now += 61 * 60 * 1000;
    try {
      const res = await reset({ token, password: 'brand new password' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid or expired token' });
    } finally {
      now = start;
    }
    expect((await login(web.url, address, PASSWORD, ip())).status).toBe(200);
  });

  it('two concurrent resets with one token: exactly one wins', async () => {
    const address = email();
    await register(web.url, { email: address, password: PASSWORD });
    await forgot({ email: address });
    const token = tokenFrom((await smtp.waitForMail(address, 5_000, RESET_SUBJECT)).raw);
    const answers = await Promise.all([
      reset({ token, password: 'first new password' }),
      reset({ token, password: 'second new password' }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
  });

  it.each([
    ['no token', { password: 'long enough' }, 'Token and password are required'],
    ['no password', { token: 'a'.repeat(64) }, 'Token and password are required'],
    ['a short password', { token: 'a'.repeat(64), password: 'short' }, 'Password must be at least 8 characters'],
    ['an unknown token', { token: 'a'.repeat(64), password: 'long enough' }, 'Invalid or expired token'],
    ['a malformed token', { token: 'not-a-token', password: 'long enough' }, 'Invalid or expired token'],
  ])('reset: 400 with %s', async (_n, body, message) => {
    const res = await reset(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: message });
  });

  it('forgot: 400 without an email, 403 for a bot', async () => {
    expect((await forgot({})).body).toEqual({ error: 'Email is required' });
    const bot = await forgot({ email: email(), website: 'filled' });
    expect(bot.status).toBe(403);
  });

  it('forgot: limited per IP', async () => {
    const limited = await startWeb({ TRUST_PROXY: '127.0.0.1', FORGOT_PASSWORD_LIMIT_PER_15_MIN: '1' });
    try {
      const from = { 'x-forwarded-for': freshIp() };
      expect((await request(`${limited.url}/api/auth/forgot-password`, { json: { email: email() }, headers: from })).status).toBe(200);
      const second = await request(`${limited.url}/api/auth/forgot-password`, { json: { email: email() }, headers: from });
      expect(second.status).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe('password reset without SMTP', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(() => web.close());

  it('puts the mail in the outbox table for an operator', async () => {
    const address = email();
    await register(web.url, { email: address, password: PASSWORD });
    await request(`${web.url}/api/auth/forgot-password`, { json: { email: address } });
    const mail = await mailTo(web, address, 'password-reset');
    expect(mail.subject).toBe('Reset your password');
    expect(mail.text).toMatch(/\/reset-password\?token=[0-9a-f]{64}/);
  });
});
