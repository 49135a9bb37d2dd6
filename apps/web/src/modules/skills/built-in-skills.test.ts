import { randomBytes } from 'node:crypto';
import { newId } from '@aop/core';
import { type TestResponse, request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// Spec §4.18 Skills: GET, POST /api/skills/booking-settlement; GET, POST /api/skills/instant-split. Their shapes are
// "not shown" in the spec: docs/decisions.md "Booking settlement and instant splits".
describe('built-in skills', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(async () => {
    await web?.close();
  });

  const db = () => web.database.db.kysely;
  const SETTLE = '/api/skills/booking-settlement';
  const SPLIT = '/api/skills/instant-split';
  type Auth = { cookie?: string; key?: string };
  const headersOf = (auth: Auth, extra: Record<string, string> = {}) => ({
    ...(auth.cookie ? { cookie: auth.cookie } : {}),
    ...(auth.key ? { authorization: `Bearer ${auth.key}` } : {}),
    ...extra,
  });
  const get = (path: string, auth: Auth) => request(`${web.url}${path}`, { headers: headersOf(auth) });
  const post = (path: string, auth: Auth, json: unknown, extra: Record<string, string> = {}) =>
    request(`${web.url}${path}`, { method: 'POST', headers: headersOf(auth, extra), json });
  const expectError = (res: TestResponse, status: number, error: string) => {
    expect([res.status, res.body]).toEqual([status, { error }]);
  };

  /** A signed-in user with one deployed agent holding an underground wallet (what the bus knows an agent by). */
  async function party() {
    const user = await web.signIn();
    const agentId = newId('agent');
    const address = `0x${randomBytes(20).toString('hex')}`;
    await db().insertInto('agents').values({ id: agentId, user_id: user.userId, name: 'Agent' }).execute();
    await db()
      .insertInto('agent_deployments')
      .values({ id: agentId, user_id: user.userId, name: 'Agent', subdomain: agentId.toLowerCase(), plan: 'solo' })
      .execute();
    await db()
      .insertInto('underground_wallets')
      .values({ address, agent_id: agentId, user_id: user.userId, private_key_enc: 'sealed' })
      .execute();
    return { ...user, agentId, address };
  }
  type Party = Awaited<ReturnType<typeof party>>;

  async function apiKey(cookie: string): Promise<string> {
    const res = await post('/api/keys', { cookie }, { name: 'skills' });
    expect(res.status).toBe(201);
    return res.body.key;
  }

  /**
   * A booking as the backend's bus leaves it (`underground-bus.ts`): the negotiation, and the bus message of its last
   * move, `delivered` once the other agent received it. `payer` requested, `payee` answered.
   */
  let clock = Date.parse('2026-03-01T12:00:00Z');
  async function booking(
    payer: Party,
    payee: Party,
    {
      fee = 250,
      status = 'accepted',
      delivered = true,
    }: { fee?: number; status?: 'open' | 'accepted' | 'declined'; delivered?: boolean } = {},
  ): Promise<string> {
    const id = `msg_${randomBytes(6).toString('hex')}`;
    clock += 60_000;
    const moved = new Date(clock);
    await db()
      .insertInto('underground_bus_messages')
      .values({
        message_id: `${id}-2`,
        action: status === 'open' ? 'BOOKING_REQUEST' : 'BOOKING_ACCEPT',
        kind: 'booking',
        from_agent_id: payee.agentId,
        from_address: payee.address,
        to_agent_id: payer.agentId,
        message: JSON.stringify({ payload: { negotiationId: id } }),
        status: delivered ? 'delivered' : 'delivering',
      })
      .execute();
    await db()
      .insertInto('underground_negotiations')
      .values({
        id,
        requester_agent_id: payer.agentId,
        responder_agent_id: payee.agentId,
        status,
        terms: JSON.stringify({ fee, date: '2026-06-01T20:00:00.000Z', venue: 'Basement', eventId: 7 }),
        round: 1,
        last_offer_by: payer.agentId,
        last_message_id: `${id}-2`,
        created_at: new Date(moved.getTime() - 1000),
        updated_at: moved,
      })
      .execute();
    return id;
  }

  describe('booking-settlement', () => {
    it('401 signed out; reading takes an API key, settling needs a session (403 for a key)', async () => {
      expectError(await get(SETTLE, {}), 401, 'Unauthorized');
      expectError(await post(SETTLE, {}, { bookingId: 'x', amount: 'bad' }), 401, 'Unauthorized');
      const payer = await party();
      const payee = await party();
      const id = await booking(payer, payee);
      const key = await apiKey(payer.cookie);
      const listed = await get(SETTLE, { key });
      expect(listed.status).toBe(200);
      expect(listed.body.bookings.map((b: { bookingId: string }) => b.bookingId)).toEqual([id]);
      expectError(
        await post(SETTLE, { key }, { bookingId: id, amount: '250.00' }),
        403,
        'This action needs a signed-in session, not an API key',
      );
      expect((await get(SETTLE, { cookie: payer.cookie })).body.bookings[0].settlement).toBeNull();
    });

    it('lists the accepted bookings of both parties, with their side, the wallets and the agreed terms', async () => {
      const payer = await party();
      const payee = await party();
      const id = await booking(payer, payee, { fee: 1234.5 });
      const mine = await get(SETTLE, { cookie: payer.cookie });
      expect(mine.status).toBe(200);
      expect(mine.body).toEqual({
        bookings: [
          {
            bookingId: id,
            role: 'payer',
            payerAgentId: payer.agentId,
            payeeAgentId: payee.agentId,
            payerAddress: payer.address,
            payeeAddress: payee.address,
            fee: '1234.50',
            currency: 'USDC',
            date: '2026-06-01T20:00:00.000Z',
            eventId: 7,
            venue: 'Basement',
            acceptedAt: expect.any(String),
            settlement: null,
          },
        ],
      });
      const theirs = await get(SETTLE, { cookie: payee.cookie });
      expect(theirs.body.bookings).toEqual([{ ...mine.body.bookings[0], role: 'payee' }]);
    });

    it('leaves out open, declined and still-undelivered bookings; filters by status and agent; newest first', async () => {
      const payer = await party();
      const payee = await party();
      const third = await party();
      await booking(payer, payee, { status: 'open' });
      await booking(payer, payee, { status: 'declined' });
      await booking(payer, payee, { delivered: false });
      const older = await booking(payer, payee, { fee: 10 });
      const newer = await booking(third, payer, { fee: 20 });
      const ids = (res: TestResponse) => res.body.bookings.map((b: { bookingId: string }) => b.bookingId);
      expect(ids(await get(SETTLE, { cookie: payer.cookie }))).toEqual([newer, older]);
      expect(ids(await get(`${SETTLE}?agentId=${payee.agentId}`, { cookie: payer.cookie }))).toEqual([older]);
      expect(ids(await get(`${SETTLE}?limit=1`, { cookie: payer.cookie }))).toEqual([newer]);

      expect((await post(SETTLE, { cookie: payer.cookie }, { bookingId: older, amount: '10' })).status).toBe(201);
      expect(ids(await get(`${SETTLE}?status=settled`, { cookie: payer.cookie }))).toEqual([older]);
      expect(ids(await get(`${SETTLE}?status=unsettled`, { cookie: payer.cookie }))).toEqual([newer]);
      expect(ids(await get(`${SETTLE}?status=settled`, { cookie: third.cookie }))).toEqual([]);
      for (const query of ['?status=paid', '?limit=0', '?limit=101', '?limit=x']) {
        expect((await get(`${SETTLE}${query}`, { cookie: payer.cookie })).status).toBe(400);
      }
    });

    it('the payer settles once: 201, then 200 with the same settlement; both parties see it', async () => {
      const payer = await party();
      const payee = await party();
      const id = await booking(payer, payee, { fee: 250 });
      const first = await post(SETTLE, { cookie: payer.cookie }, { bookingId: id, amount: '250.00' });
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        settlement: {
          bookingId: id,
          payerAgentId: payer.agentId,
          payeeAgentId: payee.agentId,
          amount: '250.00',
          currency: 'USDC',
          settledAt: expect.any(String),
        },
      });
      // The same figure written another way is the same amount; a retry answers the first settlement.
      const again = await post(SETTLE, { cookie: payer.cookie }, { bookingId: id, amount: '250' });
      expect([again.status, again.body]).toEqual([200, first.body]);
      for (const who of [payer, payee]) {
        expect((await get(SETTLE, { cookie: who.cookie })).body.bookings[0].settlement).toEqual(first.body.settlement);
      }
    });

    it('concurrent settlements of one booking record it once', async () => {
      const payer = await party();
      const payee = await party();
      const id = await booking(payer, payee, { fee: 99.99 });
      const results = await Promise.all(
        Array.from({ length: 6 }, () => post(SETTLE, { cookie: payer.cookie }, { bookingId: id, amount: '99.99' })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
      expect(new Set(results.map((r) => r.body.settlement.settledAt)).size).toBe(1);
      const rows = await db().selectFrom('booking_settlements').selectAll().where('booking_id', '=', id).execute();
      expect(rows.map((r) => [r.amount, r.payer_user_id, r.payee_user_id])).toEqual([['99.990000', payer.userId, payee.userId]]);
    });

    it('refuses the payee, strangers, unaccepted bookings and a figure other than the agreed fee', async () => {
      const payer = await party();
      const payee = await party();
      const stranger = await party();
      const id = await booking(payer, payee, { fee: 250 });
      expectError(
        await post(SETTLE, { cookie: payee.cookie }, { bookingId: id, amount: '250' }),
        403,
        'Only the payer of a booking can settle it',
      );
      expectError(await post(SETTLE, { cookie: stranger.cookie }, { bookingId: id, amount: '250' }), 404, 'Booking not found');
      expectError(await post(SETTLE, { cookie: payer.cookie }, { bookingId: 'msg_none', amount: '250' }), 404, 'Booking not found');
      expectError(
        await post(SETTLE, { cookie: payer.cookie }, { bookingId: id, amount: '250.01' }),
        409,
        'amount does not match the agreed fee (250.00 USDC)',
      );
      const open = await booking(payer, payee, { status: 'open' });
      expectError(
        await post(SETTLE, { cookie: payer.cookie }, { bookingId: open, amount: '250' }),
        409,
        'Booking is open; only an accepted booking is settled',
      );
      const inFlight = await booking(payer, payee, { delivered: false });
      expectError(
        await post(SETTLE, { cookie: payer.cookie }, { bookingId: inFlight, amount: '250' }),
        409,
        'Booking is still being accepted; only an accepted booking is settled',
      );
      const free = await booking(payer, payee, { fee: 0 });
      expectError(await post(SETTLE, { cookie: payer.cookie }, { bookingId: free, amount: '0' }), 409, 'Booking has no fee to settle');
      expect(await db().selectFrom('booking_settlements').select('booking_id').where('payer_user_id', '=', payer.userId).execute()).toEqual(
        [],
      );
    });

    it('400 for a malformed body, before anything is looked up', async () => {
      const { cookie } = await party();
      expectError(await post(SETTLE, { cookie }, { amount: '1' }), 400, 'bookingId is required');
      expectError(await post(SETTLE, { cookie }, { bookingId: 'msg_x' }), 400, 'amount is required');
      expectError(await post(SETTLE, { cookie }, { bookingId: 5, amount: '1' }), 400, 'bookingId must be a string');
      expectError(await post(SETTLE, { cookie }, { bookingId: '', amount: '1' }), 400, 'bookingId is required');
      expectError(
        await post(SETTLE, { cookie }, { bookingId: 'm'.repeat(129), amount: '1' }),
        400,
        'bookingId must be at most 128 characters',
      );
      for (const amount of ['1.1234567', '-1', '1e3', '', ' 1', '1.', 250, null, '1'.repeat(15)]) {
        expectError(
          await post(SETTLE, { cookie }, { bookingId: 'msg_x', amount }),
          400,
          'amount must be a decimal string with at most 6 decimal places',
        );
      }
      expectError(await post(SETTLE, { cookie }, ['not', 'an', 'object']), 400, 'Invalid request body');
      expectError(await post(SETTLE, { cookie }, { bookingId: 'msg\u0000x', amount: '1' }), 400, 'Invalid characters in request');
    });

    it('row-level security: a settlement is readable by its two parties only', async () => {
      const payer = await party();
      const payee = await party();
      const stranger = await party();
      const id = await booking(payer, payee, { fee: 5 });
      expect((await post(SETTLE, { cookie: payer.cookie }, { bookingId: id, amount: '5' })).status).toBe(201);
      const visible = (userId: string) =>
        web.database.db.readAsUser(userId, (trx) =>
          trx.selectFrom('booking_settlements').select('booking_id').where('booking_id', '=', id).execute(),
        );
      expect(await visible(payer.userId)).toHaveLength(1);
      expect(await visible(payee.userId)).toHaveLength(1);
      expect(await visible(stranger.userId)).toEqual([]);
      expect((await get(SETTLE, { cookie: stranger.cookie })).body).toEqual({ bookings: [] });
    });
  });

  describe('instant-split', () => {
    const recipients = (...shares: number[]) => shares.map((share) => ({ address: `0x${randomBytes(20).toString('hex')}`, share }));

    it('401 signed out; reading takes an API key, splitting needs a session (403 for a key)', async () => {
      expectError(await get(SPLIT, {}), 401, 'Unauthorized');
      expectError(await post(SPLIT, {}, { amount: 'x', recipients: 5 }), 401, 'Unauthorized');
      const { cookie } = await party();
      const key = await apiKey(cookie);
      expect((await get(SPLIT, { key })).body).toEqual({ splits: [] });
      expectError(
        await post(SPLIT, { key }, { amount: '1', recipients: recipients(100) }),
        403,
        'This action needs a signed-in session, not an API key',
      );
    });

    it('splits an amount exactly: the parts add up to it, leftovers to the largest remainders', async () => {
      const { cookie, agentId } = await party();
      const to = recipients(33.33, 33.33, 33.34);
      const res = await post(SPLIT, { cookie }, { amount: '100', name: '  Tour royalties ', agentId, recipients: to });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        split: {
          id: expect.stringMatching(/^isp_/),
          name: 'Tour royalties',
          agentId,
          bookingId: null,
          amount: '100.00',
          currency: 'USDC',
          recipients: [
            { address: to[0]!.address, share: 33.33, amount: '33.33' },
            { address: to[1]!.address, share: 33.33, amount: '33.33' },
            { address: to[2]!.address, share: 33.34, amount: '33.34' },
          ],
          createdAt: expect.any(String),
        },
      });
      // One millionth of a USDC cannot be halved: it goes to the largest share, the others get nothing.
      const tiny = await post(SPLIT, { cookie }, { amount: '0.000001', recipients: recipients(50, 25, 25) });
      expect(tiny.body.split.recipients.map((r: { amount: string }) => r.amount)).toEqual(['0.000001', '0.00', '0.00']);
      // Two millionths three ways: both go to the largest remainders, the earlier recipient first on a tie.
      const two = await post(SPLIT, { cookie }, { amount: '0.000002', recipients: recipients(33.33, 33.33, 33.34) });
      expect(two.body.split.recipients.map((r: { amount: string }) => r.amount)).toEqual(['0.000001', '0.00', '0.000001']);
      const odd = await post(SPLIT, { cookie }, { amount: '0.05', recipients: recipients(33.33, 33.34, 33.33, 0) });
      expect(odd.body.split.recipients.map((r: { amount: string }) => r.amount)).toEqual(['0.016665', '0.01667', '0.016665', '0.00']);
    });

    it('lists the caller’s splits newest first, by agent and booking; another user sees none', async () => {
      const a = await party();
      const b = await party();
      const first = await post(SPLIT, { cookie: a.cookie }, { amount: '1', agentId: a.agentId, recipients: recipients(100) });
      const second = await post(SPLIT, { cookie: a.cookie }, { amount: '2', recipients: recipients(60, 40) });
      const ids = (res: TestResponse) => res.body.splits.map((s: { id: string }) => s.id);
      const all = await get(SPLIT, { cookie: a.cookie });
      expect(ids(all)).toEqual([second.body.split.id, first.body.split.id]);
      expect(all.body.splits[1]).toEqual(first.body.split);
      expect(ids(await get(`${SPLIT}?agentId=${a.agentId}`, { cookie: a.cookie }))).toEqual([first.body.split.id]);
      expect(ids(await get(`${SPLIT}?limit=1`, { cookie: a.cookie }))).toEqual([second.body.split.id]);
      expect((await get(SPLIT, { cookie: b.cookie })).body).toEqual({ splits: [] });
      expect((await get(`${SPLIT}?agentId=${a.agentId}`, { cookie: b.cookie })).body).toEqual({ splits: [] });
      // Another user's agent cannot be named.
      expectError(
        await post(SPLIT, { cookie: b.cookie }, { amount: '1', agentId: a.agentId, recipients: recipients(100) }),
        404,
        'Agent not found',
      );
    });

    it('Idempotency-Key: a retry answers the first split (even concurrently); another request with the key is 409', async () => {
      const { cookie } = await party();
      const body = { amount: '42.42', recipients: recipients(50, 50) };
      const key = { 'idempotency-key': `split-${randomBytes(4).toString('hex')}` };
      const results = await Promise.all(Array.from({ length: 5 }, () => post(SPLIT, { cookie }, body, key)));
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 201]);
      expect(new Set(results.map((r) => JSON.stringify(r.body))).size).toBe(1);
      // Addresses compare case-insensitively, so the same request in capitals is still a retry.
      const shouted = { ...body, recipients: body.recipients.map((r) => ({ ...r, address: r.address.toUpperCase().replace('0X', '0x') })) };
      expect((await post(SPLIT, { cookie }, shouted, key)).status).toBe(200);
      expectError(
        await post(SPLIT, { cookie }, { ...body, amount: '42.43' }, key),
        409,
        'Idempotency-Key was already used for a different request',
      );
      expect((await get(SPLIT, { cookie })).body.splits).toHaveLength(1);
      // Without a key each request is a new split; another user's use of the same key is theirs alone.
      expect((await post(SPLIT, { cookie }, body)).status).toBe(201);
      expect((await post(SPLIT, { cookie }, body)).status).toBe(201);
      const other = await party();
      expect((await post(SPLIT, { cookie: other.cookie }, body, key)).status).toBe(201);
      expect((await get(SPLIT, { cookie })).body.splits).toHaveLength(3);
      for (const bad of ['', 'has space', 'k'.repeat(256), 'ünï']) {
        expectError(
          await post(SPLIT, { cookie }, body, { 'idempotency-key': bad }),
          400,
          'Idempotency-Key must be 1 to 255 visible ASCII characters',
        );
      }
    });

    it('the payee splits a settled booking’s fee once; the payer and strangers cannot', async () => {
      const payer = await party();
      const payee = await party();
      const stranger = await party();
      const id = await booking(payer, payee, { fee: 1000 });
      const to = recipients(70, 30);
      expectError(await post(SPLIT, { cookie: payee.cookie }, { bookingId: id, recipients: to }), 409, 'Booking is not settled yet');
      expect((await post(SETTLE, { cookie: payer.cookie }, { bookingId: id, amount: '1000' })).status).toBe(201);

      expectError(
        await post(SPLIT, { cookie: payer.cookie }, { bookingId: id, recipients: to }),
        403,
        'Only the payee of a booking can split its fee',
      );
      expectError(await post(SPLIT, { cookie: stranger.cookie }, { bookingId: id, recipients: to }), 404, 'Booking not found');
      expectError(
        await post(SPLIT, { cookie: payee.cookie }, { bookingId: id, agentId: stranger.agentId, recipients: to }),
        400,
        'agentId of a booking split must be the booking’s payee agent',
      );

      const split = await post(SPLIT, { cookie: payee.cookie }, { bookingId: id, recipients: to });
      expect(split.status).toBe(201);
      expect(split.body.split).toMatchObject({
        bookingId: id,
        agentId: payee.agentId,
        amount: '1000.00',
        recipients: [
          { address: to[0]!.address, share: 70, amount: '700.00' },
          { address: to[1]!.address, share: 30, amount: '300.00' },
        ],
      });
      const retried = await post(SPLIT, { cookie: payee.cookie }, { bookingId: id, agentId: payee.agentId, recipients: to });
      expect([retried.status, retried.body]).toEqual([200, split.body]);
      expectError(
        await post(SPLIT, { cookie: payee.cookie }, { bookingId: id, recipients: recipients(50, 50) }),
        409,
        'Booking fee already split with other recipients',
      );
      const listed = await get(`${SPLIT}?bookingId=${id}`, { cookie: payee.cookie });
      expect(listed.body.splits).toEqual([split.body.split]);
      expect((await get(`${SPLIT}?bookingId=${id}`, { cookie: payer.cookie })).body).toEqual({ splits: [] });
    });

    it('400 for bad fields, each with its own message; nothing recorded', async () => {
      const { cookie } = await party();
      const cases: [unknown, string][] = [
        [{ recipients: recipients(100) }, 'Send either amount or bookingId'],
        [{ amount: '1', bookingId: 'msg_x', recipients: recipients(100) }, 'Send either amount or bookingId'],
        [{ amount: '0', recipients: recipients(100) }, 'amount must be a positive decimal string'],
        [{ amount: '0.0000001', recipients: recipients(100) }, 'amount must be a decimal string with at most 6 decimal places'],
        [{ amount: 5, recipients: recipients(100) }, 'amount must be a decimal string with at most 6 decimal places'],
        [{ amount: '1', recipients: [] }, 'recipients must be a non-empty array'],
        [{ amount: '1' }, 'recipients must be a non-empty array'],
        [{ amount: '1', recipients: 'all' }, 'recipients must be a non-empty array'],
        [{ amount: '1', recipients: recipients(...Array(101).fill(0)) }, 'recipients must have at most 100 entries'],
        [{ amount: '1', recipients: recipients(50, 49.99) }, 'Shares must sum to exactly 100'],
        [
          { amount: '1', recipients: recipients(50, 50.001) },
          'recipients[1].share must be a number from 0 to 100 with at most 2 decimal places',
        ],
        [
          { amount: '1', recipients: recipients(-1, 101) },
          'recipients[0].share must be a number from 0 to 100 with at most 2 decimal places',
        ],
        [
          { amount: '1', recipients: [{ address: '0x12', share: 100 }] },
          'recipients[0].address must be an address (0x and 40 hex characters)',
        ],
        [{ amount: '1', recipients: [5] }, 'recipients[0].address must be an address (0x and 40 hex characters)'],
        [{ amount: '1', name: 7, recipients: recipients(100) }, 'name must be a string'],
        [{ amount: '1', name: 'n'.repeat(201), recipients: recipients(100) }, 'name must be at most 200 characters'],
        [{ amount: '1', agentId: 3, recipients: recipients(100) }, 'agentId must be a string'],
      ];
      for (const [body, error] of cases) expectError(await post(SPLIT, { cookie }, body), 400, error);
      const [one] = recipients(50);
      expectError(
        await post(
          SPLIT,
          { cookie },
          { amount: '1', recipients: [one, { ...one!, address: one!.address.toUpperCase().replace('0X', '0x') }] },
        ),
        400,
        'recipients[1].address is listed twice',
      );
      expect((await get(SPLIT, { cookie })).body).toEqual({ splits: [] });
    });
  });

  describe('beside the generic skill routes', () => {
    it('the built-in names cannot be installed; other names still install and update through /api/skills/:name', async () => {
      const { cookie } = await party();
      for (const name of ['booking-settlement', 'instant-split']) {
        expectError(await post('/api/skills', { cookie }, { name }), 409, 'Skill name is reserved for a built-in skill');
      }
      expect((await post('/api/skills', { cookie }, { name: 'web-search' })).status).toBe(201);
      const updated = await post('/api/skills/web-search', { cookie }, { enabled: false });
      expect([updated.status, updated.body.skill.enabled]).toEqual([200, false]);
      // A settlement body sent to the generic route's shape is the built-in skill's, not a skill update.
      expectError(await post(SETTLE, { cookie }, { enabled: false }), 400, 'bookingId is required');
    });
  });
});
