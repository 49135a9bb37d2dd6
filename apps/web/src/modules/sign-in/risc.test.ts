import { randomUUID } from 'node:crypto';
import { type Database, sql } from '@aop/db';
import { type RiscIssuer, createTestDatabase, request, startRiscIssuer, tempDataDir, testCounters, testEnv } from '@aop/testing';
import { SignJWT, UnsecuredJWT, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { loadWebConfig } from '../../config.js';
import { SECURITY_EVENT_TYPES as T, SUPPORTED_SECURITY_EVENTS, drainSecurityEvents } from './security-events.service.js';
import { createSession } from '../../platform/sessions.js';
import { type TestWeb, freshIp, login, register, startWeb } from '../../web.test-support.js';

const AUDIENCE = 'risc-client.apps.example';
const OTHER_AUDIENCE = 'second-client.apps.example';
const INVALID = { error: 'Invalid security event token' };
const PASSWORD = 'correct horse battery';

async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const eventRow = (db: Database, jti: string) =>
  db.kysely.selectFrom('security_events').selectAll().where('jti', '=', jti).executeTakeFirst();
const waitProcessed = (db: Database, jti: string) =>
  waitFor(async () => {
    const row = await eventRow(db, jti);
    return row?.processed_at ? row : undefined;
  }, `security event ${jti} to be processed`);
const auditRows = (db: Database, jti: string) =>
  db.kysely.selectFrom('audit_log').select(['user_id', 'action', 'metadata']).where('target', '=', jti).execute();
const eventCount = async (db: Database) =>
  Number(
    (
      await db.kysely
        .selectFrom('security_events')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

function post(url: string, token: string, contentType = 'application/secevent+jwt', path = '/api/security/risc') {
  return request(`${url}${path}`, { method: 'POST', body: token, headers: { 'content-type': contentType } });
}

async function sessionUser(url: string, cookie: string) {
  return (await request(`${url}/api/auth/session`, { headers: { cookie } })).body.user;
}

/** Links `userId` to a provider account `subject`, with stored (sealed) tokens. */
async function linkIdp(db: Database, userId: string, subject: string) {
  await db.kysely
    .insertInto('oauth_accounts')
    .values({
      id: randomUUID(),
      user_id: userId,
      provider: 'idp',
      provider_account_id: subject,
      access_token_enc: 'sealed-access',
      refresh_token_enc: 'sealed-refresh',
      id_token_enc: 'sealed-id',
      metadata: '{}',
    })
    .execute();
}

// Spec §4.1 account-protection receivers, §6, §8 (signing keys cached 24 hours).
describe('POST /api/security/risc', () => {
  let idp: RiscIssuer;
  let web: TestWeb;
  let db: Database;

  beforeAll(async () => {
    idp = await startRiscIssuer();
    idp.defaultAudience = AUDIENCE;
    web = await startWeb({
      IDP_ISSUER: idp.url,
      IDP_CLIENT_ID: AUDIENCE,
      IDP_CLIENT_SECRET: 'idp-client-secret',
      RISC_AUDIENCES: OTHER_AUDIENCE,
      TRUST_PROXY: '127.0.0.1',
      REGISTER_LIMIT_PER_HOUR: '1000',
    });
    db = web.database.db;
  });
  afterAll(async () => {
    await web.close();
    await idp.close();
  });

  it('sessions-revoked for a provider subject: 202 with an empty body, the event stored, then the sessions end and tokens are dropped', async () => {
    const { userId, cookie } = await web.signIn();
    const subject = `sub-${randomUUID()}`;
    await linkIdp(db, userId, subject);
    expect(await sessionUser(web.url, cookie)).toMatchObject({ id: userId });

    const jti = randomUUID();
    const token = await idp.sign({
      jti,
      events: { [T.sessionsRevoked]: { subject: { subject_type: 'iss-sub', iss: idp.url, sub: subject } } },
    });
    const res = await post(web.url, token);
    expect(res.status).toBe(202);
    expect(res.text).toBe('');

    const row = await waitProcessed(db, jti);
    expect(row).toMatchObject({
      source: 'risc',
      issuer: idp.url,
      subject,
      email: null,
      event_types: [T.sessionsRevoked],
      attempts: 1,
      last_error: null,
    });
    expect(row.payload).toMatchObject({ jti, aud: AUDIENCE, events: { [T.sessionsRevoked]: expect.any(Object) } });
    expect(await sessionUser(web.url, cookie)).toBeNull();
    const account = await db.kysely
      .selectFrom('oauth_accounts')
      .select(['access_token_enc', 'refresh_token_enc', 'id_token_enc'])
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    expect(account).toEqual({ access_token_enc: null, refresh_token_enc: null, id_token_enc: null });
    expect(await auditRows(db, jti)).toEqual([
      { user_id: userId, action: 'security.sessions-revoked', metadata: { source: 'risc', eventType: T.sessionsRevoked } },
    ]);
  });

  it('tokens-revoked matches by email, case-insensitively, when no provider account is linked (sub_id format)', async () => {
    const { userId, cookie } = await web.signIn();
    const other = await web.signIn();
    const email = (await db.kysely.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirstOrThrow()).email;
    const jti = randomUUID();
    const token = await idp.sign({
      jti,
      sub_id: { format: 'email', email: email.toUpperCase() },
      events: { [T.tokensRevoked]: {} },
    });
    expect((await post(web.url, token)).status).toBe(202);
    const row = await waitProcessed(db, jti);
    expect(row.email).toBe(email.toUpperCase());
    expect(await sessionUser(web.url, cookie)).toBeNull();
    expect(await sessionUser(web.url, other.cookie)).toMatchObject({ id: other.userId });
    expect((await auditRows(db, jti)).map((a) => a.action)).toEqual(['security.tokens-revoked']);
  });

  it('token-revoked ends the sessions of the subject named by the sub claim', async () => {
    const { userId, cookie } = await web.signIn();
    const subject = `sub-${randomUUID()}`;
    await linkIdp(db, userId, subject);
    const jti = randomUUID();
    expect((await post(web.url, await idp.sign({ jti, sub: subject, events: { [T.tokenRevoked]: { reason: 'revoked' } } }))).status).toBe(
      202,
    );
    await waitProcessed(db, jti);
    expect(await sessionUser(web.url, cookie)).toBeNull();
    expect(await auditRows(db, jti)).toEqual([
      { user_id: userId, action: 'security.token-revoked', metadata: { source: 'risc', eventType: T.tokenRevoked, reason: 'revoked' } },
    ]);
  });

  it('account-disabled blocks sign-in (403 Account disabled) and ends sessions; account-enabled restores sign-in', async () => {
    const email = `${randomUUID()}@example.com`;
    const ip = freshIp();
    const headers = { 'x-forwarded-for': ip };
    const registered = await register(web.url, { email, password: PASSWORD }, headers);
    expect(registered.status).toBe(200);
    const before = await login(web.url, email, PASSWORD, headers);
    expect(before.status).toBe(200);
    const cookie = before.cookie!;
    expect(await sessionUser(web.url, cookie)).toMatchObject({ email });

    const disabled = randomUUID();
    const token = await idp.sign({
      jti: disabled,
      events: { [T.accountDisabled]: { subject: { subject_type: 'email', email }, reason: 'hijacking' } },
    });
    expect((await post(web.url, token)).status).toBe(202);
    await waitProcessed(db, disabled);
    expect(await sessionUser(web.url, cookie)).toBeNull();
    const user = await db.kysely.selectFrom('users').select(['id', 'disabled_at']).where('email', '=', email).executeTakeFirstOrThrow();
    expect(user.disabled_at).toBeInstanceOf(Date);
    const refused = await login(web.url, email, PASSWORD, { 'x-forwarded-for': freshIp() });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'Account disabled' });
    expect(await auditRows(db, disabled)).toEqual([
      {
        user_id: user.id,
        action: 'security.account-disabled',
        metadata: { source: 'risc', eventType: T.accountDisabled, reason: 'hijacking' },
      },
    ]);

    const enabled = randomUUID();
    const enable = await idp.sign({ jti: enabled, events: { [T.accountEnabled]: { subject: { subject_type: 'email', email } } } });
    expect((await post(web.url, enable)).status).toBe(202);
    await waitProcessed(db, enabled);
    const after = await login(web.url, email, PASSWORD, { 'x-forwarded-for': freshIp() });
    expect(after.status).toBe(200);
    expect(await sessionUser(web.url, after.cookie!)).toMatchObject({ email });
    expect((await auditRows(db, enabled)).map((a) => a.action)).toEqual(['security.account-enabled']);
  });

  it('account-credential-change-required flags the account and keeps its sessions', async () => {
    const { userId, cookie } = await web.signIn();
    const subject = `sub-${randomUUID()}`;
    await linkIdp(db, userId, subject);
    const jti = randomUUID();
    const token = await idp.sign({
      jti,
      sub_id: { format: 'iss_sub', iss: idp.url, sub: subject },
      events: { [T.credentialChangeRequired]: {} },
    });
    expect((await post(web.url, token)).status).toBe(202);
    await waitProcessed(db, jti);
    const user = await db.kysely
      .selectFrom('users')
      .select(['credential_change_flagged_at', 'disabled_at'])
      .where('id', '=', userId)
      .executeTakeFirstOrThrow();
    expect(user.credential_change_flagged_at).toBeInstanceOf(Date);
    expect(user.disabled_at).toBeNull();
    expect(await sessionUser(web.url, cookie)).toMatchObject({ id: userId });
    expect((await auditRows(db, jti)).map((a) => a.action)).toEqual(['security.account-credential-change-required']);
  });

  it('a subject naming another issuer is not matched by subject id', async () => {
    const { userId, cookie } = await web.signIn();
    const subject = `sub-${randomUUID()}`;
    await linkIdp(db, userId, subject);
    const jti = randomUUID();
    const token = await idp.sign({
      jti,
      events: { [T.sessionsRevoked]: { subject: { subject_type: 'iss-sub', iss: 'https://elsewhere.example', sub: subject } } },
    });
    expect((await post(web.url, token)).status).toBe(202);
    await waitProcessed(db, jti);
    expect(await sessionUser(web.url, cookie)).toMatchObject({ id: userId });
    expect(await auditRows(db, jti)).toEqual([]);
  });

  it('verification and unknown event types are recorded and processed without any action', async () => {
    const { userId, cookie } = await web.signIn();
    const email = `${userId}@example.com`;
    const verification = randomUUID();
    const unknown = randomUUID();
    const unknownType = 'https://schemas.openid.net/secevent/risc/event-type/account-purged';
    expect((await post(web.url, await idp.sign({ jti: verification, events: { [T.verification]: { state: 'abc' } } }))).status).toBe(202);
    expect(
      (await post(web.url, await idp.sign({ jti: unknown, events: { [unknownType]: { subject: { subject_type: 'email', email } } } })))
        .status,
    ).toBe(202);
    expect((await waitProcessed(db, verification)).event_types).toEqual([T.verification]);
    expect((await waitProcessed(db, unknown)).event_types).toEqual([unknownType]);
    expect(await auditRows(db, verification)).toEqual([]);
    expect(await auditRows(db, unknown)).toEqual([]);
    expect(await sessionUser(web.url, cookie)).toMatchObject({ id: userId });
  });

  it.each([
    ['application/jwt', (t: string) => t],
    ['text/plain; charset=utf-8', (t: string) => `${t}\n`],
    ['application/json', (t: string) => JSON.stringify(t)],
  ])('takes the token as %s', async (contentType, encode) => {
    const jti = randomUUID();
    const res = await post(web.url, encode(await idp.sign({ jti, events: { [T.verification]: {} } })), contentType);
    expect(res.status).toBe(202);
    expect(await eventRow(db, jti)).toBeDefined();
  });

  it('accepts every configured audience (RISC_AUDIENCES) and an audience array', async () => {
    for (const aud of [OTHER_AUDIENCE, ['someone-else', AUDIENCE]]) {
      const jti = randomUUID();
      expect((await post(web.url, await idp.sign({ jti, aud, events: { [T.verification]: {} } }))).status).toBe(202);
      expect(await eventRow(db, jti)).toBeDefined();
    }
  });

  describe('400 Invalid security event token, nothing stored', () => {
    const verification = { [T.verification]: {} };
    const cases: [string, () => Promise<string>, string?][] = [
      ['a wrong issuer', () => idp.sign({ iss: 'https://accounts.elsewhere.example', events: verification })],
      ['no issuer', () => idp.sign({ iss: null, events: verification })],
      ['a wrong audience', () => idp.sign({ aud: 'not-our-client', events: verification })],
      ['no audience', () => idp.sign({ aud: null, events: verification })],
      [
        'a signature by another key under our kid',
        async () => idp.sign({ events: verification }, { key: (await generateKeyPair('RS256')).privateKey }),
      ],
      [
        'an unknown kid',
        async () => idp.sign({ events: verification }, { key: (await generateKeyPair('RS256')).privateKey, kid: 'unknown-kid' }),
      ],
      ['no kid', () => idp.sign({ events: verification }, { kid: null })],
      [
        'HS256',
        () =>
          new SignJWT({ iss: idp.url, aud: AUDIENCE, jti: randomUUID(), events: verification })
            .setProtectedHeader({ alg: 'HS256', kid: idp.kid, typ: 'secevent+jwt' })
            .setIssuedAt()
            .sign(new TextEncoder().encode('a-shared-secret-of-thirty-two-bytes!')),
      ],
      ['alg none', async () => new UnsecuredJWT({ iss: idp.url, aud: AUDIENCE, jti: randomUUID(), events: verification }).encode()],
      ['an expired token', () => idp.sign({ exp: Math.floor(Date.now() / 1000) - 3600, events: verification })],
      ['no jti', () => idp.sign({ jti: null, events: verification })],
      ['no events claim (not a SET)', () => idp.sign({ events: undefined as never, email: 'a@example.com' })],
      ['a body that is not a JWT', async () => 'this is not a token'],
      ['a JWT-shaped body that does not decode', async () => 'abc.def.ghi'],
      ['an empty body', async () => '', 'application/jwt'],
      ['a JSON object', async () => JSON.stringify({ token: await idp.sign({ events: verification }) }), 'application/json'],
      ['a form body', async () => `token=${await idp.sign({ events: verification })}`, 'application/x-www-form-urlencoded'],
    ];
    it.each(cases)('%s', async (_name, make, contentType) => {
      const before = await eventCount(db);
      const res = await post(web.url, await make(), contentType);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(INVALID);
      expect(await eventCount(db)).toBe(before);
    });
  });

  it('a repeated jti is acknowledged 202 but stored and processed once, even when the counter store has forgotten it', async () => {
    const { userId } = await web.signIn();
    const email = `${userId}@example.com`;
    const jti = randomUUID();
    const token = await idp.sign({ jti, events: { [T.credentialChangeRequired]: { subject: { subject_type: 'email', email } } } });
    expect((await post(web.url, token)).status).toBe(202);
    const again = await post(web.url, token);
    expect(again.status).toBe(202);
    expect(again.text).toBe('');
    await waitProcessed(db, jti);
    // The fast path forgets (a Redis flush, the week is over): the table still knows the jti.
    expect(await web.app.counters.take(`risc-jti:${jti}`)).toBe('1');
    expect((await post(web.url, token)).status).toBe(202);
    // Let any processing the repeats could have caused run.
    const other = randomUUID();
    await post(web.url, await idp.sign({ jti: other, events: { [T.verification]: {} } }));
    await waitProcessed(db, other);
    expect(await auditRows(db, jti)).toHaveLength(1);
    expect((await eventRow(db, jti))?.attempts).toBe(1);
  });

  it('a pending row (accepted but never processed) is picked up by the worker when it next runs', async () => {
    const { userId, cookie } = await web.signIn();
    const jti = randomUUID();
    await db.kysely
      .insertInto('security_events')
      .values({
        jti,
        source: 'risc',
        issuer: idp.url,
        email: `${userId}@example.com`,
        event_types: JSON.stringify([T.sessionsRevoked]),
        payload: JSON.stringify({
          jti,
          events: { [T.sessionsRevoked]: { subject: { subject_type: 'email', email: `${userId}@example.com` } } },
        }),
      })
      .execute();
    expect(await sessionUser(web.url, cookie)).toMatchObject({ id: userId });
    // Any accepted event wakes the worker, which drains everything pending.
    await post(web.url, await idp.sign({ events: { [T.verification]: {} } }));
    await waitProcessed(db, jti);
    expect(await sessionUser(web.url, cookie)).toBeNull();
  });

  it('GET answers the health shape with the supported event types', async () => {
    const res = await request(`${web.url}/api/security/risc`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      endpoint: '/api/security/risc',
      configured: true,
      supportedEvents: SUPPORTED_SECURITY_EVENTS,
    });
    expect(res.body.supportedEvents).toEqual([
      'https://schemas.openid.net/secevent/risc/event-type/sessions-revoked',
      'https://schemas.openid.net/secevent/oauth/event-type/tokens-revoked',
      'https://schemas.openid.net/secevent/oauth/event-type/token-revoked',
      'https://schemas.openid.net/secevent/risc/event-type/account-disabled',
      'https://schemas.openid.net/secevent/risc/event-type/account-enabled',
      'https://schemas.openid.net/secevent/risc/event-type/account-credential-change-required',
      'https://schemas.openid.net/secevent/risc/event-type/verification',
    ]);
  });

  describe('legacy POST /api/auth/idp/risc', () => {
    const legacy = (token: string) => post(web.url, token, 'application/secevent+jwt', '/api/auth/idp/risc');

    it('validates like the new receiver, then matches users by email only', async () => {
      const { userId, cookie } = await web.signIn();
      const jti = randomUUID();
      const token = await idp.sign({
        jti,
        events: { [T.sessionsRevoked]: { subject: { subject_type: 'email', email: `${userId}@example.com` } } },
      });
      const res = await legacy(token);
      expect(res.status).toBe(202);
      expect(res.text).toBe('');
      expect(await waitProcessed(db, jti)).toMatchObject({ source: 'legacy', email: `${userId}@example.com` });
      expect(await sessionUser(web.url, cookie)).toBeNull();
      expect(await auditRows(db, jti)).toEqual([
        { user_id: userId, action: 'security.sessions-revoked', metadata: { source: 'legacy', eventType: T.sessionsRevoked } },
      ]);
    });

    it('ignores a provider subject id (email only)', async () => {
      const { userId, cookie } = await web.signIn();
      const subject = `sub-${randomUUID()}`;
      await linkIdp(db, userId, subject);
      const jti = randomUUID();
      const token = await idp.sign({
        jti,
        events: { [T.sessionsRevoked]: { subject: { subject_type: 'iss-sub', iss: idp.url, sub: subject } } },
      });
      expect((await legacy(token)).status).toBe(202);
      expect(await waitProcessed(db, jti)).toMatchObject({ source: 'legacy', subject });
      expect(await sessionUser(web.url, cookie)).toMatchObject({ id: userId });
      expect(await auditRows(db, jti)).toEqual([]);
    });

    it('refuses an unverifiable token with 400 and acts on nothing', async () => {
      const { userId, cookie } = await web.signIn();
      const before = await eventCount(db);
      const forged = await idp.sign(
        { events: { [T.accountDisabled]: { subject: { subject_type: 'email', email: `${userId}@example.com` } } } },
        { key: (await generateKeyPair('RS256')).privateKey },
      );
      const res = await legacy(forged);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(INVALID);
      const unsigned = new UnsecuredJWT({
        iss: idp.url,
        aud: AUDIENCE,
        jti: randomUUID(),
        events: { [T.accountDisabled]: { subject: { subject_type: 'email', email: `${userId}@example.com` } } },
      }).encode();
      expect((await legacy(unsigned)).status).toBe(400);
      expect(await eventCount(db)).toBe(before);
      expect(await sessionUser(web.url, cookie)).toMatchObject({ id: userId });
    });

    it('shares the jti de-duplication with the new receiver', async () => {
      const jti = randomUUID();
      const token = await idp.sign({ jti, events: { [T.verification]: {} } });
      expect((await post(web.url, token)).status).toBe(202);
      expect((await legacy(token)).status).toBe(202);
      expect((await waitProcessed(db, jti)).source).toBe('risc');
    });
  });
});

describe('signing keys: discovery and the 24-hour cache', () => {
  it('fetches the OpenID configuration and the key set once across several events', async () => {
    const idp = await startRiscIssuer();
    idp.defaultAudience = AUDIENCE;
    const web = await startWeb({ IDP_ISSUER: idp.url, IDP_CLIENT_ID: AUDIENCE, IDP_CLIENT_SECRET: 'idp-client-secret' });
    try {
      for (let i = 0; i < 4; i++) {
        expect((await post(web.url, await idp.sign({ events: { [T.verification]: {} } }))).status).toBe(202);
      }
      expect(idp.jwksFetches).toBe(1);
      expect(idp.fetches['/jwks']).toBe(1);
      expect(idp.fetches['/.well-known/openid-configuration']).toBe(1);
      // The RISC configuration is asked first; this provider has none.
      expect(idp.fetches['/.well-known/risc-configuration']).toBe(1);
    } finally {
      await web.close();
      await idp.close();
    }
  });

  it('prefers the key set named by the RISC configuration, whose issuer carries a trailing slash', async () => {
    const idp = await startRiscIssuer({ riscConfiguration: true });
    idp.defaultAudience = AUDIENCE;
    const web = await startWeb({ IDP_ISSUER: idp.url, IDP_CLIENT_ID: AUDIENCE, IDP_CLIENT_SECRET: 'idp-client-secret' });
    try {
      expect((await post(web.url, await idp.sign({ iss: `${idp.url}/`, events: { [T.verification]: {} } }))).status).toBe(202);
      expect((await post(web.url, await idp.sign({ events: { [T.verification]: {} } }))).status).toBe(202);
      expect(idp.fetches['/risc/jwks']).toBe(1);
      expect(idp.fetches['/jwks']).toBeUndefined();
      expect(idp.fetches['/.well-known/openid-configuration']).toBeUndefined();
    } finally {
      await web.close();
      await idp.close();
    }
  });

  it('503 when the provider cannot be reached for its keys (the provider should retry), nothing stored', async () => {
    const idp = await startRiscIssuer();
    idp.defaultAudience = AUDIENCE;
    const web = await startWeb({ IDP_ISSUER: idp.url, IDP_CLIENT_ID: AUDIENCE, IDP_CLIENT_SECRET: 'idp-client-secret' });
    try {
      const token = await idp.sign({ events: { [T.verification]: {} } });
      await idp.close();
      const res = await post(web.url, token);
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: 'Security event keys unavailable' });
      expect(await eventCount(web.database.db)).toBe(0);
    } finally {
      await web.close();
    }
  });

  it('without IDP_ISSUER the receiver is not configured and refuses every token', async () => {
    const idp = await startRiscIssuer();
    const web = await startWeb({ IDP_CLIENT_ID: AUDIENCE });
    try {
      const health = await request(`${web.url}/api/security/risc`);
      expect(health.body).toMatchObject({ status: 'ok', configured: false });
      const res = await post(web.url, await idp.sign({ aud: AUDIENCE, events: { [T.verification]: {} } }));
      expect(res.status).toBe(400);
      expect(res.body).toEqual(INVALID);
      expect(idp.jwksFetches).toBe(0);
    } finally {
      await web.close();
      await idp.close();
    }
  });
});

describe('the security event queue', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
  });
  afterAll(() => database.close());

  async function user() {
    const id = `usr_${randomUUID()}`;
    const email = `${id}@example.com`;
    await db.kysely.insertInto('users').values({ id, email, name: email }).execute();
    return { id, email };
  }

  async function pending(jti: string, payload: Record<string, unknown>, receivedAt = new Date()) {
    await db.kysely
      .insertInto('security_events')
      .values({ jti, source: 'risc', issuer: 'https://idp.example', payload: JSON.stringify(payload), received_at: receivedAt })
      .execute();
  }

  const revoke = (email: string) => ({ events: { [T.sessionsRevoked]: { subject: { subject_type: 'email', email } } } });

  it('drains events accepted before a restart when the app becomes ready (onReady)', async () => {
    const { id, email } = await user();
    await createSession(db.kysely, id);
    const jti = randomUUID();
    await pending(jti, revoke(email));
    const data = tempDataDir();
    const counters = testCounters();
    const app = await buildApp({ config: loadWebConfig(testEnv(data.dir)), db, counters });
    try {
      await app.ready();
      await waitProcessed(db, jti);
      expect(await db.kysely.selectFrom('sessions').select('id').where('user_id', '=', id).execute()).toEqual([]);
    } finally {
      await app.close();
      await counters.close();
      data.remove();
    }
  });

  it('a failing event counts attempts and keeps its error without blocking the others, and is given up after the maximum', async () => {
    const { id, email } = await user();
    await createSession(db.kysely, id);
    const broken = randomUUID();
    const good = randomUUID();
    await pending(broken, { jti: broken, events: 'not an object' }, new Date(Date.now() - 60_000));
    await pending(good, revoke(email));

    expect(await drainSecurityEvents(db.kysely, { maxAttempts: 2 })).toEqual({ processed: 1, failed: 1 });
    expect(await eventRow(db, broken)).toMatchObject({
      processed_at: null,
      attempts: 1,
      last_error: 'Malformed security event: no events claim',
    });
    expect((await eventRow(db, good))?.processed_at).toBeInstanceOf(Date);
    expect(await db.kysely.selectFrom('sessions').select('id').where('user_id', '=', id).execute()).toEqual([]);

    expect(await drainSecurityEvents(db.kysely, { maxAttempts: 2 })).toEqual({ processed: 0, failed: 1 });
    expect((await eventRow(db, broken))?.attempts).toBe(2);
    expect(await drainSecurityEvents(db.kysely, { maxAttempts: 2 })).toEqual({ processed: 0, failed: 0 });
    expect((await eventRow(db, broken))?.attempts).toBe(2);
    // Under the default maximum it would be retried: out of the way of the next tests.
    await db.kysely.deleteFrom('security_events').where('jti', '=', broken).execute();
  });

  it('a failure part-way through an event rolls its changes back', async () => {
    const { id, email } = await user();
    await createSession(db.kysely, id);
    const jti = randomUUID();
    // The first event applies; the second one's audit row is refused (a check constraint for this jti only).
    await pending(jti, {
      events: {
        [T.sessionsRevoked]: { subject: { subject_type: 'email', email } },
        [T.credentialChangeRequired]: { subject: { subject_type: 'email', email } },
      },
    });
    await db.kysely.schema
      .alterTable('audit_log')
      .addCheckConstraint(
        'risc_test_fail',
        sql`target is distinct from ${sql.lit(jti)} or action <> 'security.account-credential-change-required'`,
      )
      .execute();
    try {
      expect(await drainSecurityEvents(db.kysely)).toEqual({ processed: 0, failed: 1 });
      expect(await db.kysely.selectFrom('sessions').select('id').where('user_id', '=', id).execute()).toHaveLength(1);
      expect(await auditRows(db, jti)).toEqual([]);
      expect((await eventRow(db, jti))?.last_error).toMatch(/risc_test_fail/);
    } finally {
      await db.kysely.schema.alterTable('audit_log').dropConstraint('risc_test_fail').execute();
    }
    expect(await drainSecurityEvents(db.kysely)).toEqual({ processed: 1, failed: 0 });
    expect((await auditRows(db, jti)).map((a) => a.action).sort()).toEqual([
      'security.account-credential-change-required',
      'security.sessions-revoked',
    ]);
  });

  it('concurrent drains process each event once', async () => {
    const events: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { email } = await user();
      const jti = randomUUID();
      events.push(jti);
      await pending(jti, revoke(email));
    }
    const results = await Promise.all([drainSecurityEvents(db.kysely), drainSecurityEvents(db.kysely), drainSecurityEvents(db.kysely)]);
    expect(results.reduce((n, r) => n + r.processed, 0)).toBe(6);
    for (const jti of events) {
      expect(await auditRows(db, jti)).toHaveLength(1);
      expect((await eventRow(db, jti))?.attempts).toBe(1);
    }
  });
});
