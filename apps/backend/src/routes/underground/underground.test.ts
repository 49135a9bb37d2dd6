import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decryptSecret, hmacSha256Hex, parseEncryptionKey, userContextHeaders } from '@aop/core';
import { type TestChain, request, startTestChain } from '@aop/testing';
import type { Address, Hex } from 'viem';
import { verifyMessage } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { startWebhookServer } from './webhooks.test-support.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestBackend, startBackend } from '../../backend.test-support.js';
import { allocateByShares } from '@aop/core/money';
import { walletKeyAad } from '../../services/underground.js';
import { type UnsignedAgentMessage, signAgentMessage, signingText } from '../../services/underground-bus.js';

const KEY = 'internal-key-for-underground-tests';
const HMAC = 'hmac-secret-for-underground-tests';
const ENCRYPTION_KEY = randomBytes(32).toString('hex');

/** Headers the web service sends for a user (spec §5); `email: null` leaves `x-user-email` out (and unsigned). */
function as(userId: string | null, email: string | null = `${userId}@example.com`): Record<string, string> {
  return { authorization: `Bearer ${KEY}`, ...userContextHeaders({ userId: userId ?? undefined, email: email ?? undefined }, HMAC) };
}

/** An address nothing listens on. */
async function closedPortUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** An agent the backend runs for `userId`, as `POST /api/deployments` records it. */
async function addAgent(backend: TestBackend, userId: string, id: string) {
  await backend.database.db.kysely
    .insertInto('agent_deployments')
    .values({
      id,
      user_id: userId,
      user_email: `${userId}@example.com`,
      name: id,
      subdomain: `${id}-sub`.replace(/_/g, '-'),
      plan: 'label',
      config: '{}',
    })
    .execute();
}

/** What the agent's runtime holds: its wallet key, opened from the sealed row (the API never returns it). */
async function walletKey(backend: TestBackend, encryptionKey: string, agentId: string): Promise<{ address: Address; key: Hex }> {
  const row = await backend.database.db.kysely
    .selectFrom('underground_wallets')
    .selectAll()
    .where('agent_id', '=', agentId)
    .executeTakeFirstOrThrow();
  const key = decryptSecret(parseEncryptionKey(encryptionKey), row.private_key_enc, walletKeyAad(agentId, row.address)) as Hex;
  return { address: privateKeyToAccount(key).address, key };
}

// Spec §4.11 underground (backend), §2.9 shapes, §3.4 splits processed synchronously, §5 internal key + user context,
// §8 limits (names 200, ticket defaults 0/100, shares 0-100 summing to exactly 100). Balances are read from a real
// chain in process (hardhat) holding a 6-decimal test USDC; recipients' webhooks are a local HTTP server.
describe('backend underground: events, wallets, splits, bus', () => {
  let chain: TestChain;
  let usdc: Address;
  let hooks: Awaited<ReturnType<typeof startWebhookServer>>;
  let backend: TestBackend;

  beforeAll(async () => {
    [chain, hooks] = await Promise.all([startTestChain(), startWebhookServer()]);
    usdc = await chain.deployToken({ name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    backend = await startBackend({
      INTERNAL_API_KEY: KEY,
      HMAC_SECRET: HMAC,
      ENCRYPTION_KEY,
      TRUST_PROXY: '127.0.0.1',
      UNDERGROUND_RPC_URL: chain.rpcUrl,
      UNDERGROUND_USDC_ADDRESS: usdc,
      UNDERGROUND_WEBHOOK_ALLOW_PRIVATE: 'true',
      UNDERGROUND_WEBHOOK_BACKOFF_MS: '20',
      UNDERGROUND_WEBHOOK_TIMEOUT_MS: '2000',
    });
    for (const [user, agent] of [
      ['usr_a', 'agt_a1'],
      ['usr_a', 'agt_a2'],
      ['usr_b', 'agt_b1'],
      ['usr_b', 'agt_b2'],
      ['usr_b', 'agt_b3'],
    ] as const) {
      await addAgent(backend, user, agent);
    }
  });
  afterAll(async () => {
    await backend?.close();
    await hooks?.close();
    await chain?.close();
  });

  // The general limit is 120/min per client: each call comes from its own address.
  let client = 0;
  const forwarded = () => ({ 'x-forwarded-for': `198.51.100.${(++client % 250) + 1}` });
  const call = (userId: string, method: string, path: string, json?: unknown, target = backend) =>
    request(`${target.url}/api/underground${path}`, {
      method,
      headers: { ...as(userId), ...forwarded() },
      ...(json === undefined ? {} : { json }),
    });
  const send = (message: unknown, target = backend) =>
    request(`${target.url}/api/underground/bus/send`, { method: 'POST', headers: forwarded(), json: message });

  describe('authentication (spec §4.11, §5)', () => {
    const routes: [string, string, unknown?][] = [
      ['GET', '/events'],
      ['POST', '/events', { agentId: 'agt_a1', name: 'x' }],
      ['POST', '/wallets', { agentId: 'agt_a1' }],
      ['GET', `/wallets/0x${'1'.repeat(40)}/balance`],
      ['POST', '/splits', { agentId: 'agt_a1', name: 'x', totalAmount: 1, recipients: [{ address: `0x${'1'.repeat(40)}`, share: 100 }] }],
      ['PUT', '/agents/agt_a1/webhook', { url: 'http://127.0.0.1:9/x' }],
    ];
    const hit = (method: string, path: string, json: unknown, headers: Record<string, string>) =>
      request(`${backend.url}/api/underground${path}`, {
        method,
        headers: { ...headers, ...forwarded() },
        ...(json === undefined ? {} : { json }),
      });

    it('401 without x-user-id, without x-user-email, or without both (even when the context is signed)', async () => {
      for (const [method, path, json] of routes) {
        for (const headers of [as(null), as('usr_a', null), as(null, null)]) {
          const res = await hit(method, path, json, headers);
          expect([method, path, res.status, res.body]).toEqual([method, path, 401, { error: 'User context required' }]);
        }
      }
    });

    it('401 for a missing internal key, a forged context or a missing signature', async () => {
      for (const [method, path, json] of routes) {
        const noKey = await hit(method, path, json, { ...as('usr_a'), authorization: '' });
        expect([path, noKey.status, noKey.body]).toEqual([path, 401, { error: 'Unauthorized' }]);
        const forged = await hit(method, path, json, { ...as('usr_a'), 'x-user-id': 'usr_b' });
        expect([path, forged.status, forged.body]).toEqual([path, 401, { error: 'INVALID_SIGNATURE' }]);
        const { 'x-user-signature': _, ...unsigned } = as('usr_a');
        const missing = await hit(method, path, json, unsigned);
        expect([path, missing.status, missing.body]).toEqual([path, 401, { error: 'SIGNATURE_REQUIRED' }]);
      }
      const wrongKey = await hit('GET', '/events', undefined, { ...as('usr_a'), authorization: 'Bearer not-the-key-at-all' });
      expect(wrongKey.status).toBe(403);
      expect(wrongKey.body).toEqual({ error: 'Forbidden' });
    });

    it("403 for another user's agent or an unknown agent, on every route that names one", async () => {
      const posts: [string, Record<string, unknown>][] = [
        ['/events', { name: 'Night' }],
        ['/wallets', {}],
        ['/splits', { name: 'Royalties', totalAmount: 10, recipients: [{ address: `0x${'2'.repeat(40)}`, share: 100 }] }],
      ];
      for (const agentId of ['agt_b1', 'agt_nobody']) {
        for (const [path, json] of posts) {
          const res = await call('usr_a', 'POST', path, { ...json, agentId });
          expect([path, agentId, res.status, res.body]).toEqual([path, agentId, 403, { error: 'Agent not owned' }]);
        }
        const hook = await call('usr_a', 'PUT', `/agents/${agentId}/webhook`, { url: 'http://127.0.0.1:9/x' });
        expect(hook.status).toBe(403);
      }
    });
  });

  describe('events (spec §2.9, §4.11, §8)', () => {
    it('POST validates every field with its own message', async () => {
      const cases: [unknown, string][] = [
        [{}, 'agentId is required'],
        [{ agentId: '' }, 'agentId is required'],
        [{ agentId: 42, name: 'x' }, 'Invalid agentId'],
        [{ agentId: 'bad id!', name: 'x' }, 'Invalid agentId'],
        [{ agentId: 'agt_a1' }, 'name is required'],
        [{ agentId: 'agt_a1', name: '   ' }, 'name is required'],
        [{ agentId: 'agt_a1', name: 7 }, 'name is required'],
        [{ agentId: 'agt_a1', name: 'n'.repeat(201) }, 'name must be at most 200 characters'],
        [{ agentId: 'agt_a1', name: 'x', description: 5 }, 'description must be a string'],
        [{ agentId: 'agt_a1', name: 'x', venue: {} }, 'venue must be a string'],
        [{ agentId: 'agt_a1', name: 'x', eventDate: 'next friday' }, 'eventDate must be an ISO 8601 date'],
        [{ agentId: 'agt_a1', name: 'x', eventDate: '2025-02-30' }, 'eventDate must be an ISO 8601 date'],
        [{ agentId: 'agt_a1', name: 'x', eventDate: '2025-06-01T25:00:00Z' }, 'eventDate must be an ISO 8601 date'],
        [{ agentId: 'agt_a1', name: 'x', eventDate: 1735689600000 }, 'eventDate must be an ISO 8601 date'],
        [{ agentId: 'agt_a1', name: 'x', ticketPriceUsdc: -1 }, 'ticketPriceUsdc must be a non-negative number'],
        [{ agentId: 'agt_a1', name: 'x', ticketPriceUsdc: '5' }, 'ticketPriceUsdc must be a non-negative number'],
        [{ agentId: 'agt_a1', name: 'x', ticketPriceUsdc: 0.0000001 }, 'ticketPriceUsdc must be a non-negative number'],
        [{ agentId: 'agt_a1', name: 'x', totalTickets: 0 }, 'totalTickets must be a positive integer'],
        [{ agentId: 'agt_a1', name: 'x', totalTickets: -3 }, 'totalTickets must be a positive integer'],
        [{ agentId: 'agt_a1', name: 'x', totalTickets: 1.5 }, 'totalTickets must be a positive integer'],
        [{ agentId: 'agt_a1', name: 'x', totalTickets: '100' }, 'totalTickets must be a positive integer'],
        [[1, 2], 'agentId is required'],
      ];
      for (const [json, error] of cases) {
        const res = await call('usr_a', 'POST', '/events', json);
        expect([json, res.status, res.body]).toEqual([json, 400, { error }]);
      }
      const text = await request(`${backend.url}/api/underground/events`, {
        method: 'POST',
        headers: { ...as('usr_a'), ...forwarded(), 'content-type': 'text/plain' },
        body: 'agentId=agt_a1',
      });
      expect(text.status).toBe(400);
      expect(text.body).toEqual({ error: 'agentId is required' });
    });

    it('POST answers 201 with the §2.9 event, defaults price 0, tickets 100, nulls', async () => {
      const res = await call('usr_a', 'POST', '/events', { agentId: 'agt_a1', name: '  Warehouse Night  ' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(Number),
        agent_id: 'agt_a1',
        name: 'Warehouse Night',
        description: null,
        venue: null,
        event_date: null,
        ticket_price_usdc: 0,
        total_tickets: 100,
      });
      const full = await call('usr_a', 'POST', '/events', {
        agentId: 'agt_a1',
        name: 'n'.repeat(200),
        description: 'Four rooms',
        venue: 'The Basement',
        eventDate: '2025-06-01T20:00:00+02:00',
        ticketPriceUsdc: 12.5,
        totalTickets: 250,
      });
      expect(full.status).toBe(201);
      expect(full.body).toMatchObject({
        name: 'n'.repeat(200),
        description: 'Four rooms',
        venue: 'The Basement',
        event_date: '2025-06-01T18:00:00.000Z',
        ticket_price_usdc: 12.5,
        total_tickets: 250,
      });
      expect(full.body.id).toBeGreaterThan(res.body.id);
      const free = await call('usr_a', 'POST', '/events', {
        agentId: 'agt_a1',
        name: 'Free',
        ticketPriceUsdc: 0,
        eventDate: null,
        venue: null,
      });
      expect(free.body).toMatchObject({ ticket_price_usdc: 0, event_date: null, venue: null });
      // A date alone is midnight UTC; a date-time without an offset is read as UTC (never the server's zone).
      for (const [eventDate, stored] of [
        ['2025-12-31', '2025-12-31T00:00:00.000Z'],
        ['2025-12-31T23:30', '2025-12-31T23:30:00.000Z'],
        ['2024-02-29T12:00:00.123456Z', '2024-02-29T12:00:00.123Z'],
        ['2025-01-01T01:00:00-05:30', '2025-01-01T06:30:00.000Z'],
      ]) {
        const dated = await call('usr_a', 'POST', '/events', { agentId: 'agt_a1', name: 'Dated', eventDate });
        expect([eventDate, dated.body.event_date]).toEqual([eventDate, stored]);
      }
    });

    it('GET lists only the caller’s events, newest event_date first and undated last; userId in body or query is ignored', async () => {
      for (const [name, eventDate] of [
        ['Spring', '2026-03-01'],
        ['Undated', undefined],
        ['Winter', '2026-12-24T22:00:00Z'],
        ['Summer', '2026-07-15T18:30:00Z'],
      ] as const) {
        const res = await call('usr_b', 'POST', '/events', { agentId: 'agt_b1', name, ...(eventDate ? { eventDate } : {}) });
        expect(res.status).toBe(201);
      }
      // A body naming another user changes nothing: the event is the caller's, on the caller's agent.
      const smuggled = await call('usr_b', 'POST', '/events', {
        agentId: 'agt_b2',
        name: 'Smuggled',
        userId: 'usr_a',
        eventDate: '2026-05-01',
      });
      expect(smuggled.status).toBe(201);
      const listB = await call('usr_b', 'GET', '/events?userId=usr_a');
      expect(listB.status).toBe(200);
      expect(listB.body.map((e: { name: string }) => e.name)).toEqual(['Winter', 'Summer', 'Smuggled', 'Spring', 'Undated']);
      expect(listB.body.map((e: { event_date: string | null }) => e.event_date)).toEqual([
        '2026-12-24T22:00:00.000Z',
        '2026-07-15T18:30:00.000Z',
        '2026-05-01T00:00:00.000Z',
        '2026-03-01T00:00:00.000Z',
        null,
      ]);
      const listA = await call('usr_a', 'GET', '/events?userId=usr_b');
      expect(listA.body.some((e: { name: string }) => e.name === 'Smuggled' || e.name === 'Winter')).toBe(false);
      expect(listA.body.every((e: { agent_id: string }) => e.agent_id === 'agt_a1')).toBe(true);
      const none = await call('usr_nobody', 'GET', '/events');
      expect(none.body).toEqual([]);
    });
  });

  describe('wallets (spec §2.9, §4.11)', () => {
    it('POST validates agentId, creates a real key pair sealed at rest, and answers the same wallet again', async () => {
      expect((await call('usr_a', 'POST', '/wallets', {})).body).toEqual({ error: 'agentId is required' });
      expect((await call('usr_a', 'POST', '/wallets', { agentId: ['agt_a1'] })).body).toEqual({ error: 'Invalid agentId' });

      const res = await call('usr_a', 'POST', '/wallets', { agentId: 'agt_a1', userId: 'usr_b' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/), agentId: 'agt_a1' });
      const again = await call('usr_a', 'POST', '/wallets', { agentId: 'agt_a1' });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(res.body);

      const row = await backend.database.db.kysely
        .selectFrom('underground_wallets')
        .selectAll()
        .where('agent_id', '=', 'agt_a1')
        .executeTakeFirstOrThrow();
      expect(row.user_id).toBe('usr_a');
      const { key, address } = await walletKey(backend, ENCRYPTION_KEY, 'agt_a1');
      expect(address).toBe(res.body.address);
      expect(row.private_key_enc).not.toContain(key.slice(2));
      expect(res.text).not.toContain(key.slice(2));
      // Bound to its agent: the sealed key does not open as another agent's.
      expect(() => decryptSecret(parseEncryptionKey(ENCRYPTION_KEY), row.private_key_enc, walletKeyAad('agt_a2', row.address))).toThrow();
    });

    it('balance reads balanceOf on the configured USDC with its decimals; only the caller’s wallets', async () => {
      const wallet = (await call('usr_a', 'POST', '/wallets', { agentId: 'agt_a2' })).body as { address: Address };
      expect((await call('usr_a', 'GET', `/wallets/${wallet.address}/balance`)).body).toEqual({ address: wallet.address, balance_usdc: 0 });
      await chain.mintTokens(usdc, wallet.address, '1234.56');
      const res = await call('usr_a', 'GET', `/wallets/${wallet.address.toLowerCase()}/balance?userId=usr_b`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ address: wallet.address, balance_usdc: 1234.56 });
      await chain.mintTokens(usdc, wallet.address, '0.000001');
      expect((await call('usr_a', 'GET', `/wallets/${wallet.address}/balance`)).body.balance_usdc).toBe(1234.560001);

      const other = await call('usr_b', 'GET', `/wallets/${wallet.address}/balance`);
      expect(other.status).toBe(404);
      expect(other.body).toEqual({ error: 'Wallet not found' });
      const unknown = await call('usr_a', 'GET', `/wallets/0x${'3'.repeat(40)}/balance`);
      expect(unknown.status).toBe(404);
      const bad = await call('usr_a', 'GET', '/wallets/not-an-address/balance');
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ error: 'Invalid address' });
    });
  });

  describe('royalty splits (spec §3.4, §4.11, §8)', () => {
    const r = (n: number) => `0x${String(n).repeat(40).slice(0, 40)}`;
    const split = (json: Record<string, unknown>) => call('usr_a', 'POST', '/splits', { agentId: 'agt_a1', name: 'Royalties', ...json });
    const payouts = (splitId: string) =>
      backend.database.db.kysely
        .selectFrom('underground_split_payouts')
        .select(['address', 'share', 'amount'])
        .where('split_id', '=', splitId)
        .orderBy('ordinal')
        .execute();

    it('validates every field with its own message', async () => {
      const one = [{ address: r(1), share: 100 }];
      const cases: [Record<string, unknown>, string][] = [
        [{ agentId: undefined }, 'agentId is required'],
        [{ name: '' }, 'name is required'],
        [{ name: 'n'.repeat(201), totalAmount: 10, recipients: one }, 'name must be at most 200 characters'],
        [{ totalAmount: undefined }, 'totalAmount must be a positive number'],
        [{ totalAmount: null }, 'totalAmount must be a positive number'],
        [{ totalAmount: 0, recipients: one }, 'totalAmount must be a positive number'],
        [{ totalAmount: -5, recipients: one }, 'totalAmount must be a positive number'],
        [{ totalAmount: '100', recipients: one }, 'totalAmount must be a positive number'],
        [{ totalAmount: 10.001, recipients: one }, 'totalAmount must have at most 2 decimal places'],
        [{ totalAmount: 0.001, recipients: one }, 'totalAmount must have at most 2 decimal places'],
        [{ totalAmount: 10, recipients: undefined }, 'recipients must be a non-empty array'],
        [{ totalAmount: 10, recipients: [] }, 'recipients must be a non-empty array'],
        [{ totalAmount: 10, recipients: { address: r(1), share: 100 } }, 'recipients must be a non-empty array'],
        [
          { totalAmount: 10, recipients: [{ address: '0x123', share: 100 }] },
          'recipients[0].address must be an address (0x and 40 hex characters)',
        ],
        [
          { totalAmount: 10, recipients: [{ address: `0x${'g'.repeat(40)}`, share: 100 }] },
          'recipients[0].address must be an address (0x and 40 hex characters)',
        ],
        [{ totalAmount: 10, recipients: ['x'] }, 'recipients[0].address must be an address (0x and 40 hex characters)'],
        [
          {
            totalAmount: 10,
            recipients: [
              { address: `0x${'ab'.repeat(20)}`, share: 50 },
              { address: `0x${'AB'.repeat(20)}`, share: 50 },
            ],
          },
          'recipients[1].address is listed twice',
        ],
        [
          { totalAmount: 10, recipients: [{ address: r(1), share: 101 }] },
          'recipients[0].share must be a number from 0 to 100 with at most 2 decimal places',
        ],
        [
          { totalAmount: 10, recipients: [{ address: r(1), share: -1 }] },
          'recipients[0].share must be a number from 0 to 100 with at most 2 decimal places',
        ],
        [
          { totalAmount: 10, recipients: [{ address: r(1), share: '100' }] },
          'recipients[0].share must be a number from 0 to 100 with at most 2 decimal places',
        ],
        [
          {
            totalAmount: 10,
            recipients: [
              { address: r(1), share: 33.333 },
              { address: r(2), share: 66.667 },
            ],
          },
          'recipients[0].share must be a number from 0 to 100 with at most 2 decimal places',
        ],
        [{ totalAmount: 10, recipients: [{ address: r(1), share: 99.99 }] }, 'Shares must sum to exactly 100'],
        [
          {
            totalAmount: 10,
            recipients: [
              { address: r(1), share: 60 },
              { address: r(2), share: 40.01 },
            ],
          },
          'Shares must sum to exactly 100',
        ],
      ];
      for (const [json, error] of cases) {
        const res = await split({ totalAmount: 10, recipients: one, ...json });
        expect([json, res.status, res.body]).toEqual([json, 400, { error }]);
      }
    });

    it('records a completed split whose payouts add up to the total to the cent (largest remainder)', async () => {
      const cases: { totalAmount: number; shares: number[]; amounts: string[] }[] = [
        { totalAmount: 100, shares: [33.33, 33.33, 33.34], amounts: ['33.33', '33.33', '33.34'] },
        // Three equal-ish thirds of 100.00: the leftover cent goes to the largest remainder.
        { totalAmount: 100.0, shares: [33.34, 33.33, 33.33], amounts: ['33.34', '33.33', '33.33'] },
        { totalAmount: 10, shares: [33.33, 33.33, 33.34], amounts: ['3.33', '3.33', '3.34'] },
        // 1 cent cannot be cut: it goes to the largest exact share.
        { totalAmount: 0.01, shares: [33.33, 33.33, 33.34], amounts: ['0.00', '0.00', '0.01'] },
        { totalAmount: 0.01, shares: [50, 50], amounts: ['0.01', '0.00'] },
        { totalAmount: 0.02, shares: [33.33, 33.34, 33.33], amounts: ['0.01', '0.01', '0.00'] },
        { totalAmount: 99.99, shares: [0, 100], amounts: ['0.00', '99.99'] },
        // Floating point would make this 100.00000000000001: shares are summed as integers.
        { totalAmount: 1, shares: [0.1, 0.2, 99.7], amounts: ['0.00', '0.00', '1.00'] },
        { totalAmount: 1234567.89, shares: [12.5, 12.5, 25, 50], amounts: ['154320.99', '154320.99', '308641.97', '617283.94'] },
      ];
      let lastSplitId = '';
      for (const { totalAmount, shares, amounts } of cases) {
        const recipients = shares.map((share, i) => ({ address: r(i + 1), share }));
        const res = await split({ totalAmount, recipients, fromAddress: r(9), userId: 'usr_b' });
        expect([totalAmount, shares, res.status]).toEqual([totalAmount, shares, 200]);
        expect(res.body).toEqual({ success: true, splitId: expect.stringMatching(/^spl_/), status: 'completed' });
        const rows = await payouts(res.body.splitId);
        expect([totalAmount, shares, rows.map((p) => p.amount)]).toEqual([totalAmount, shares, amounts]);
        const cents = rows.reduce((sum, p) => sum + Math.round(Number(p.amount) * 100), 0);
        expect(cents).toBe(Math.round(totalAmount * 100));
        lastSplitId = res.body.splitId;
      }
      const last = await backend.database.db.kysely
        .selectFrom('underground_splits')
        .selectAll()
        .where('id', '=', lastSplitId)
        .executeTakeFirstOrThrow();
      // Owned by the caller whatever the body said; paid from the agent's wallet, not a `fromAddress` in the body.
      expect(last).toMatchObject({ user_id: 'usr_a', agent_id: 'agt_a1', name: 'Royalties', status: 'completed' });
      expect(last.from_address).toBe((await walletKey(backend, ENCRYPTION_KEY, 'agt_a1')).address.toLowerCase());
    });

    it('never loses or invents a cent, for any total and any shares', () => {
      let seed = 42;
      const random = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      for (let run = 0; run < 2000; run++) {
        const total = BigInt(1 + random(run % 3 === 0 ? 10 : 100_000_000));
        const count = 1 + random(12);
        const shares: bigint[] = [];
        let left = 10_000;
        for (let i = 0; i < count - 1; i++) {
          const share = random(left + 1);
          shares.push(BigInt(share));
          left -= share;
        }
        shares.push(BigInt(left));
        const parts = allocateByShares(total, shares);
        expect(parts.reduce((a, b) => a + b, 0n)).toBe(total);
        parts.forEach((part, i) => {
          const exact = total * (shares[i] as bigint);
          // Within one cent of the exact share, never below its floor, and nothing for a zero share.
          expect(part * 10_000n >= exact - (exact % 10_000n)).toBe(true);
          expect(part * 10_000n < exact + 10_000n).toBe(true);
          if (shares[i] === 0n) expect(part).toBe(0n);
        });
      }
    });
  });

  describe('agent bus (spec §4.11 POST /api/underground/bus/send)', () => {
    let a1: { address: Address; key: Hex };
    let b1: { address: Address; key: Hex };
    const b1Hook = () => hooks.hook('b1');
    let b1Inbox: ReturnType<typeof b1Hook>;
    let b1Secret: string;
    let seq = 0;
    const nextId = () => `msg-${Date.now()}-${++seq}`;
    /** A message signed by an agent's wallet key, with a fresh messageId. */
    const signed = (key: Hex, message: Pick<UnsignedAgentMessage, 'action' | 'fromAgentId' | 'toAgentId' | 'payload'>) =>
      signAgentMessage(key, { messageId: nextId(), ...message });
    const setHook = async (userId: string, agentId: string, url: string) => {
      const res = await call(userId, 'PUT', `/agents/${agentId}/webhook`, { url });
      expect(res.status).toBe(200);
      return res.body.secret as string;
    };

    beforeAll(async () => {
      await call('usr_b', 'POST', '/wallets', { agentId: 'agt_b1' });
      a1 = await walletKey(backend, ENCRYPTION_KEY, 'agt_a1');
      b1 = await walletKey(backend, ENCRYPTION_KEY, 'agt_b1');
      b1Inbox = b1Hook();
      b1Secret = await setHook('usr_b', 'agt_b1', b1Inbox.url);
    });

    it('webhook registration validates the URL and shows the signing secret once', async () => {
      for (const url of [undefined, '', 'ftp://example.com/x', 'not a url', 42]) {
        const res = await call('usr_b', 'PUT', '/agents/agt_b3/webhook', { url });
        expect([url, res.status, res.body]).toEqual([url, 400, { error: 'url must be an http(s) URL' }]);
      }
      const creds = await call('usr_b', 'PUT', '/agents/agt_b3/webhook', { url: 'https://user:pw@example.com/hook' });
      expect(creds.body).toEqual({ error: 'url must not contain credentials' });
      const ok = await call('usr_b', 'PUT', '/agents/agt_b3/webhook', { url: 'https://agents.example.com/b3' });
      expect(ok.body).toEqual({
        agentId: 'agt_b3',
        url: 'https://agents.example.com/b3',
        secret: expect.stringMatching(/^whsec_[0-9a-f]{48}$/),
      });
      const row = await backend.database.db.kysely
        .selectFrom('underground_webhooks')
        .selectAll()
        .where('agent_id', '=', 'agt_b3')
        .executeTakeFirstOrThrow();
      expect(row.secret_enc).not.toContain(ok.body.secret);
      const removed = await call('usr_b', 'DELETE', '/agents/agt_b3/webhook');
      expect(removed.body).toEqual({ success: true, agentId: 'agt_b3' });
    });

    it('delivers a signed message to the recipient’s webhook, signed by the platform, and answers { success, messageId }', async () => {
      const message = await signed(a1.key, {
        action: 'HELLO',
        fromAgentId: 'agt_a1',
        toAgentId: 'agt_b1',
        payload: { text: 'gig tonight?', n: 1 },
      });
      const res = await send(message);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, messageId: message.messageId });

      const delivery = b1Inbox.hook.delivered.at(-1);
      expect(delivery?.body).toEqual({
        message,
        sender: { agentId: 'agt_a1', address: a1.address },
        recipientAgentId: 'agt_b1',
      });
      // The receiver can check the platform's HMAC and, independently, the sending agent's own signature.
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(delivery?.headers['x-underground-signature'])) ?? [];
      expect(v1).toBe(hmacSha256Hex(b1Secret, `${t}.${delivery?.raw}`));
      expect(delivery?.headers['x-underground-message-id']).toBe(message.messageId);
      expect(await verifyMessage({ address: a1.address, message: signingText(delivery?.body.message), signature: message.signature })).toBe(
        true,
      );

      const rows = await backend.database.db.kysely
        .selectFrom('underground_bus_deliveries')
        .selectAll()
        .where('message_id', '=', message.messageId)
        .execute();
      expect(rows).toEqual([expect.objectContaining({ agent_id: 'agt_b1', status: 'delivered', attempts: 1 })]);
    });

    it('identifies the sender from the signature when fromAgentId is absent; key order does not matter', async () => {
      const message = await signed(a1.key, { action: 'PING', toAgentId: 'agt_b1', payload: { b: 2, a: [1, { z: 1, y: 2 }] } });
      // The same message with its keys written in another order still verifies (canonical JSON).
      const reordered = JSON.parse(JSON.stringify({ payload: { a: [1, { y: 2, z: 1 }], b: 2 }, toAgentId: 'agt_b1', ...message }));
      const res = await send(reordered);
      expect(res.status).toBe(200);
      expect(b1Inbox.hook.delivered.at(-1)?.body.sender).toEqual({ agentId: 'agt_a1', address: a1.address });
    });

    it('refuses forged, tampered and unknown signatures with 401 Invalid signature, and malformed messages with 400', async () => {
      const before = b1Inbox.hook.seen.length;
      // A key that is no agent's wallet.
      const stranger: Hex = `0x${'5'.repeat(64)}`;
      expect(privateKeyToAccount(stranger).address).not.toBe(a1.address);
      const forged = await signAgentMessage(stranger, { messageId: nextId(), action: 'HELLO', fromAgentId: 'agt_a1', toAgentId: 'agt_b1' });
      const unknownSigner = await signAgentMessage(stranger, { messageId: nextId(), action: 'HELLO', toAgentId: 'agt_b1' });
      const genuine = await signed(a1.key, { action: 'HELLO', fromAgentId: 'agt_a1', toAgentId: 'agt_b1', payload: { amount: 10 } });
      const tampered = { ...genuine, payload: { amount: 1000 } };
      const redirected = { ...genuine, toAgentId: 'agt_b2' };
      const impersonated = { ...(await signed(b1.key, { action: 'HELLO', toAgentId: 'agt_b1' })), fromAgentId: 'agt_a1' };
      for (const message of [
        forged,
        unknownSigner,
        tampered,
        redirected,
        impersonated,
        { ...genuine, signature: '0x1234' },
        { ...genuine, signature: 'not-hex' },
        { ...genuine, signature: `0x${'0'.repeat(130)}` },
        { ...genuine, fromAgentId: 'agt_nobody' },
      ]) {
        const res = await send(message);
        expect([res.status, res.body]).toEqual([401, { error: 'Invalid signature' }]);
      }
      for (const message of [{}, { messageId: 'm', action: 'HELLO' }, { ...genuine, messageId: 7 }, { ...genuine, action: '' }, []]) {
        const res = await send(message);
        expect([res.status, res.body]).toEqual([400, { error: 'messageId, action and signature are required' }]);
      }
      expect((await send({ ...genuine, messageId: 'has spaces' })).body).toEqual({ error: 'Invalid messageId' });
      expect((await send({ ...genuine, action: 'hello' })).body).toEqual({ error: 'Invalid action' });
      const text = await request(`${backend.url}/api/underground/bus/send`, {
        method: 'POST',
        headers: { ...forwarded(), 'content-type': 'text/plain' },
        body: 'hello',
      });
      expect([text.status, text.body]).toEqual([400, { error: 'messageId, action and signature are required' }]);
      // Nothing reached the recipient.
      expect(b1Inbox.hook.seen.length).toBe(before);
    });

    it('refuses a replayed messageId with 409 and delivers it once', async () => {
      const message = await signed(a1.key, { action: 'HELLO', fromAgentId: 'agt_a1', toAgentId: 'agt_b1' });
      const [first, second] = await Promise.all([send(message), send(message)]);
      expect([first.status, second.status].sort()).toEqual([200, 409]);
      const replay = await send(message);
      expect([replay.status, replay.body]).toEqual([409, { error: 'Message already received' }]);
      expect(b1Inbox.hook.delivered.filter((d) => d.body.message.messageId === message.messageId)).toHaveLength(1);
    });

    it('needs a recipient on the bus: toAgentId required (400), an agent without a webhook is 404', async () => {
      const noTo = await send(await signed(a1.key, { action: 'HELLO' }));
      expect([noTo.status, noTo.body]).toEqual([400, { error: 'toAgentId is required' }]);
      const nullTo = await send(await signed(a1.key, { action: 'HELLO', toAgentId: null as unknown as string }));
      expect([nullTo.status, nullTo.body]).toEqual([400, { error: 'toAgentId is required' }]);
      const badTo = await send(await signed(a1.key, { action: 'HELLO', toAgentId: 'not an id' }));
      expect([badTo.status, badTo.body]).toEqual([400, { error: 'Invalid toAgentId' }]);
      const unknown = await send(await signed(a1.key, { action: 'HELLO', toAgentId: 'agt_b2' }));
      expect([unknown.status, unknown.body]).toEqual([404, { error: 'Recipient agent not found' }]);
    });

    it('retries a failing webhook (3 attempts, back-off) and succeeds', async () => {
      const flaky = hooks.hook('flaky', 2, 503);
      await setHook('usr_b', 'agt_b2', flaky.url);
      const message = await signed(a1.key, { action: 'HELLO', toAgentId: 'agt_b2' });
      const started = Date.now();
      const res = await send(message);
      expect(res.body).toEqual({ success: true, messageId: message.messageId });
      expect(Date.now() - started).toBeGreaterThanOrEqual(20 + 40);
      expect(flaky.hook.seen.map((s) => s.headers['x-underground-attempt'])).toEqual(['1', '2', '3']);
      expect(flaky.hook.delivered).toHaveLength(1);
      const row = await backend.database.db.kysely
        .selectFrom('underground_bus_deliveries')
        .selectAll()
        .where('message_id', '=', message.messageId)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'delivered', attempts: 3 });
    });

    it('answers 500 Delivery failed with details outside production after 3 attempts; client errors are not retried', async () => {
      const down = hooks.hook('down', 100, 500);
      await setHook('usr_b', 'agt_b2', down.url);
      const message = await signed(a1.key, { action: 'HELLO', toAgentId: 'agt_b2' });
      const res = await send(message);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'Delivery failed', details: [{ agentId: 'agt_b2', attempts: 3, error: 'HTTP 500' }] });
      expect(down.hook.seen).toHaveLength(3);
      const stored = await backend.database.db.kysely
        .selectFrom('underground_bus_messages')
        .select('status')
        .where('message_id', '=', message.messageId)
        .executeTakeFirstOrThrow();
      expect(stored.status).toBe('failed');

      const gone = hooks.hook('gone', 100, 410);
      await setHook('usr_b', 'agt_b2', gone.url);
      const once = await send(await signed(a1.key, { action: 'HELLO', toAgentId: 'agt_b2' }));
      expect(once.body.details).toEqual([{ agentId: 'agt_b2', attempts: 1, error: 'HTTP 410' }]);

      await setHook('usr_b', 'agt_b2', `${await closedPortUrl()}/hook`);
      const refused = await send(await signed(a1.key, { action: 'HELLO', toAgentId: 'agt_b2' }));
      expect(refused.body.details).toEqual([{ agentId: 'agt_b2', attempts: 3, error: 'connection failed (ECONNREFUSED)' }]);
    });

    it('BOOKING_* messages negotiate: request, counter, accept in turn; bad moves refused; terms normalised', async () => {
      const a1Inbox = hooks.hook('a1');
      await setHook('usr_a', 'agt_a1', a1Inbox.url);
      const event = await call('usr_b', 'POST', '/events', { agentId: 'agt_b1', name: 'Booked night', eventDate: '2026-09-01' });

      const badTerms = await send(
        await signed(a1.key, { action: 'BOOKING_REQUEST', toAgentId: 'agt_b1', payload: { terms: { fee: -1, date: '2026-09-01' } } }),
      );
      expect([badTerms.status, badTerms.body]).toEqual([400, { error: 'payload.terms.fee must be a non-negative number' }]);
      const noDate = await send(await signed(a1.key, { action: 'BOOKING_REQUEST', toAgentId: 'agt_b1', payload: { terms: { fee: 1 } } }));
      expect(noDate.body).toEqual({ error: 'payload.terms.date must be an ISO 8601 date' });
      const strangeEvent = await send(
        await signed(a1.key, {
          action: 'BOOKING_REQUEST',
          toAgentId: 'agt_b1',
          payload: { terms: { fee: 1, date: '2026-09-01', eventId: 999_999 } },
        }),
      );
      expect(strangeEvent.body).toEqual({ error: 'payload.terms.eventId is not an event of either agent' });
      const unknownAction = await send(await signed(a1.key, { action: 'BOOKING_MAYBE', toAgentId: 'agt_b1' }));
      expect(unknownAction.body).toEqual({ error: 'Unknown booking action' });

      const request1 = await signed(a1.key, {
        action: 'BOOKING_REQUEST',
        toAgentId: 'agt_b1',
        payload: { terms: { fee: 250, date: '2026-09-01T21:00:00+01:00', eventId: event.body.id, venue: 'Main room' } },
      });
      expect((await send(request1)).status).toBe(200);
      expect(b1Inbox.hook.delivered.at(-1)?.body.negotiation).toEqual({
        id: request1.messageId,
        status: 'open',
        round: 1,
        requesterAgentId: 'agt_a1',
        responderAgentId: 'agt_b1',
        terms: { fee: 250, date: '2026-09-01T20:00:00.000Z', eventId: event.body.id, venue: 'Main room' },
        lastOfferBy: 'agt_a1',
      });
      const negotiationId = request1.messageId;

      const ownCounter = await send(
        await signed(a1.key, {
          action: 'BOOKING_COUNTER',
          toAgentId: 'agt_b1',
          payload: { negotiationId, terms: { fee: 200, date: '2026-09-01' } },
        }),
      );
      expect([ownCounter.status, ownCounter.body]).toEqual([409, { error: 'Waiting for the other party' }]);
      const counter = await signed(b1.key, {
        action: 'BOOKING_COUNTER',
        toAgentId: 'agt_a1',
        payload: { negotiationId, terms: { fee: 300.5, date: '2026-09-02' } },
      });
      expect((await send(counter)).status).toBe(200);
      expect(a1Inbox.hook.delivered.at(-1)?.body.negotiation).toMatchObject({
        status: 'open',
        round: 2,
        terms: { fee: 300.5, date: '2026-09-02T00:00:00.000Z' },
        lastOfferBy: 'agt_b1',
      });
      const ownAccept = await send(await signed(b1.key, { action: 'BOOKING_ACCEPT', toAgentId: 'agt_a1', payload: { negotiationId } }));
      expect(ownAccept.body).toEqual({ error: 'Waiting for the other party' });
      const outsider = await send(await signed(a1.key, { action: 'BOOKING_ACCEPT', toAgentId: 'agt_b2', payload: { negotiationId } }));
      expect([outsider.status, outsider.body]).toEqual([404, { error: 'Negotiation not found' }]);
      const accept = await send(await signed(a1.key, { action: 'BOOKING_ACCEPT', toAgentId: 'agt_b1', payload: { negotiationId } }));
      expect(accept.status).toBe(200);
      expect(b1Inbox.hook.delivered.at(-1)?.body.negotiation).toMatchObject({ status: 'accepted', round: 2, terms: { fee: 300.5 } });
      const late = await send(await signed(b1.key, { action: 'BOOKING_CANCEL', toAgentId: 'agt_a1', payload: { negotiationId } }));
      expect([late.status, late.body]).toEqual([409, { error: 'Negotiation is accepted' }]);
      const missing = await send(
        await signed(a1.key, { action: 'BOOKING_CANCEL', toAgentId: 'agt_b1', payload: { negotiationId: 'no-such' } }),
      );
      expect([missing.status, missing.body]).toEqual([404, { error: 'Negotiation not found' }]);
      const noId = await send(await signed(a1.key, { action: 'BOOKING_CANCEL', toAgentId: 'agt_b1', payload: {} }));
      expect(noId.body).toEqual({ error: 'payload.negotiationId is required' });

      const row = await backend.database.db.kysely
        .selectFrom('underground_negotiations')
        .selectAll()
        .where('id', '=', negotiationId)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'accepted', round: 2, last_offer_by: 'agt_b1' });
    });

    it('a booking move whose message is not delivered is undone', async () => {
      const down = hooks.hook('booking-down', 100, 503);
      await setHook('usr_b', 'agt_b2', down.url);
      const req = await signed(a1.key, {
        action: 'BOOKING_REQUEST',
        toAgentId: 'agt_b2',
        payload: { terms: { fee: 10, date: '2026-10-01' } },
      });
      expect((await send(req)).status).toBe(500);
      const row = await backend.database.db.kysely
        .selectFrom('underground_negotiations')
        .select('id')
        .where('id', '=', req.messageId)
        .executeTakeFirst();
      expect(row).toBeUndefined();
    });

    it('AMPLIFY_* messages fan out to toAgentId and payload.targets (sender left out), each delivery recorded', async () => {
      const b2Inbox = hooks.hook('b2-amp');
      await setHook('usr_b', 'agt_b2', b2Inbox.url);
      const before = b1Inbox.hook.delivered.length;
      const message = await signed(a1.key, {
        action: 'AMPLIFY_POST',
        toAgentId: 'agt_b1',
        payload: { targets: ['agt_b2', 'agt_b1', 'agt_a1'], text: 'new track out' },
      });
      const res = await send(message);
      expect(res.body).toEqual({ success: true, messageId: message.messageId });
      expect(b1Inbox.hook.delivered.length).toBe(before + 1);
      expect(b2Inbox.hook.delivered.at(-1)?.body).toMatchObject({ recipientAgentId: 'agt_b2', amplification: { targets: 2 }, message });
      const rows = await backend.database.db.kysely
        .selectFrom('underground_bus_deliveries')
        .select(['agent_id', 'status'])
        .where('message_id', '=', message.messageId)
        .orderBy('agent_id')
        .execute();
      expect(rows).toEqual([
        { agent_id: 'agt_b1', status: 'delivered' },
        { agent_id: 'agt_b2', status: 'delivered' },
      ]);
      const alone = await send(await signed(a1.key, { action: 'AMPLIFY_POST', payload: { targets: ['agt_a1'] } }));
      expect([alone.status, alone.body]).toEqual([400, { error: 'Amplification needs at least one target' }]);
      const bad = await send(await signed(a1.key, { action: 'AMPLIFY_POST', payload: { targets: 'agt_b1' } }));
      expect(bad.body).toEqual({ error: 'payload.targets must be an array of agent ids' });
      const many = await send(
        await signed(a1.key, { action: 'AMPLIFY_POST', payload: { targets: Array.from({ length: 26 }, (_, i) => `agt_t${i}`) } }),
      );
      expect(many.body).toEqual({ error: 'Amplification has at most 25 targets' });
    });
  });

  describe('in production and without a chain', () => {
    let prod: TestBackend;
    const PROD_KEY = randomBytes(32).toString('hex');

    beforeAll(async () => {
      prod = await startBackend({
        NODE_ENV: 'production',
        INTERNAL_API_KEY: KEY,
        HMAC_SECRET: HMAC,
        ENCRYPTION_KEY: PROD_KEY,
        TRUST_PROXY: '127.0.0.1',
        UNDERGROUND_RPC_URL: await closedPortUrl(),
        UNDERGROUND_USDC_ADDRESS: usdc,
        UNDERGROUND_RPC_TIMEOUT_MS: '1000',
        UNDERGROUND_WEBHOOK_BACKOFF_MS: '10',
      });
      await addAgent(prod, 'usr_p', 'agt_p1');
      await addAgent(prod, 'usr_q', 'agt_q1');
    });
    afterAll(() => prod?.close());

    it('hides delivery failure details in production; refuses private webhook addresses', async () => {
      const privateHook = await call('usr_q', 'PUT', '/agents/agt_q1/webhook', { url: 'http://127.0.0.1:9/hook' }, prod);
      expect([privateHook.status, privateHook.body]).toEqual([400, { error: 'url must be a public address' }]);
      for (const url of ['http://localhost:8080/x', 'http://[::1]/x', 'http://169.254.169.254/latest', 'http://10.1.2.3/x']) {
        expect((await call('usr_q', 'PUT', '/agents/agt_q1/webhook', { url }, prod)).status).toBe(400);
      }
      // A name is resolved when delivering: one that leads to a private address is never connected to.
      expect((await call('usr_q', 'PUT', '/agents/agt_q1/webhook', { url: 'https://agents.example.com/q1' }, prod)).status).toBe(200);
      const never = hooks.hook('never');
      const viaName = never.url.replace('127.0.0.1', 'localhost');
      await prod.database.db.kysely.updateTable('underground_webhooks').set({ url: viaName }).where('agent_id', '=', 'agt_q1').execute();

      expect((await call('usr_p', 'POST', '/wallets', { agentId: 'agt_p1' }, prod)).status).toBe(201);
      const { key } = await walletKey(prod, PROD_KEY, 'agt_p1');
      const message = await signAgentMessage(key, { messageId: `prod-${Date.now()}`, action: 'HELLO', toAgentId: 'agt_q1' });
      const res = await send(message, prod);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'Delivery failed' });
      const row = await prod.database.db.kysely
        .selectFrom('underground_bus_deliveries')
        .selectAll()
        .where('message_id', '=', message.messageId)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'failed', attempts: 1, last_error: 'webhook address is not public' });
      expect(never.hook.seen).toHaveLength(0);

      // A literal private address is refused before any connection, too.
      await prod.database.db.kysely.updateTable('underground_webhooks').set({ url: never.url }).where('agent_id', '=', 'agt_q1').execute();
      const literal = await signAgentMessage(key, { messageId: `prod-literal-${Date.now()}`, action: 'HELLO', toAgentId: 'agt_q1' });
      expect((await send(literal, prod)).body).toEqual({ error: 'Delivery failed' });
      expect(never.hook.seen).toHaveLength(0);
    });

    it('balance answers 500 when the RPC is down', async () => {
      const wallet = await call('usr_p', 'POST', '/wallets', { agentId: 'agt_p1' }, prod);
      const res = await call('usr_p', 'GET', `/wallets/${wallet.body.address}/balance`, undefined, prod);
      expect([res.status, res.body]).toEqual([500, { error: 'Failed to fetch balance' }]);
    });
  });

  describe('typed bodies (spec §4.11, §7): each field keeps its message whatever the JSON type sent', () => {
    const r = (n: number) => `0x${String(n).repeat(40).slice(0, 40)}`;
    const one = [{ address: r(1), share: 100 }];
    const event = { agentId: 'agt_a1', name: 'Night' };
    const splitBody = { agentId: 'agt_a1', name: 'Royalties', totalAmount: 10, recipients: one };

    it('a wrong JSON type, a missing field or a body that is not an object answers the field’s own 400', async () => {
      const cases: [string, string, unknown, string][] = [
        ['POST', '/events', { ...event, agentId: { id: 'agt_a1' } }, 'Invalid agentId'],
        ['POST', '/events', { ...event, agentId: null }, 'agentId is required'],
        ['POST', '/events', { agentId: 'agt_a1', name: ['Night'] }, 'name is required'],
        ['POST', '/events', { name: 'Night' }, 'agentId is required'],
        ['POST', '/events', { ...event, description: ['d'] }, 'description must be a string'],
        ['POST', '/events', { ...event, description: 'd'.repeat(5001) }, 'description must be at most 5000 characters'],
        ['POST', '/events', { ...event, venue: 'v'.repeat(201) }, 'venue must be at most 200 characters'],
        ['POST', '/events', { ...event, eventDate: { at: '2025-06-01' } }, 'eventDate must be an ISO 8601 date'],
        ['POST', '/events', { ...event, ticketPriceUsdc: [5] }, 'ticketPriceUsdc must be a non-negative number'],
        ['POST', '/events', { ...event, totalTickets: true }, 'totalTickets must be a positive integer'],
        ['POST', '/events', 'agt_a1', 'agentId is required'],
        ['POST', '/wallets', { agentId: 7 }, 'Invalid agentId'],
        ['POST', '/wallets', { agentId: null }, 'agentId is required'],
        ['POST', '/wallets', ['agt_a1'], 'agentId is required'],
        ['POST', '/splits', { ...splitBody, name: 5 }, 'name is required'],
        ['POST', '/splits', { ...splitBody, name: undefined }, 'name is required'],
        ['POST', '/splits', { ...splitBody, totalAmount: [10] }, 'totalAmount must be a positive number'],
        ['POST', '/splits', { ...splitBody, totalAmount: 1e13 }, 'totalAmount must be a positive number'],
        ['POST', '/splits', { ...splitBody, recipients: 'x' }, 'recipients must be a non-empty array'],
        [
          'POST',
          '/splits',
          { ...splitBody, recipients: Array.from({ length: 101 }, (_, i) => ({ address: r(i), share: 1 })) },
          'recipients must have at most 100 entries',
        ],
        ['POST', '/splits', { ...splitBody, recipients: [null] }, 'recipients[0].address must be an address (0x and 40 hex characters)'],
        ['PUT', '/agents/agt_a1/webhook', { url: ['https://agents.example.com/a1'] }, 'url must be an http(s) URL'],
        ['PUT', '/agents/agt_a1/webhook', { url: `https://agents.example.com/${'a'.repeat(2048)}` }, 'url must be an http(s) URL'],
        ['PUT', '/agents/agt_a1/webhook', [], 'url must be an http(s) URL'],
      ];
      for (const [method, path, json, error] of cases) {
        const res = await call('usr_a', method, path, json);
        expect([path, json, res.status, res.body]).toEqual([path, json, 400, { error }]);
      }
      const message = { messageId: 'm-typed', action: 'HELLO', toAgentId: 'agt_b1', signature: `0x${'0'.repeat(130)}` };
      const bus: [unknown, number, string][] = [
        [{ ...message, signature: 5 }, 400, 'messageId, action and signature are required'],
        [{ ...message, signature: null }, 400, 'messageId, action and signature are required'],
        [{ ...message, action: ['HELLO'] }, 400, 'messageId, action and signature are required'],
        [{ ...message, fromAgentId: 5 }, 400, 'Invalid fromAgentId'],
        [{ ...message, toAgentId: ['agt_b1'] }, 400, 'Invalid toAgentId'],
        [{ ...message, signature: `0x${'g'.repeat(130)}` }, 401, 'Invalid signature'],
        ['hello', 400, 'messageId, action and signature are required'],
      ];
      for (const [json, status, error] of bus) {
        const res = await send(json);
        expect([json, res.status, res.body]).toEqual([json, status, { error }]);
      }
    });

    it('a caller without a full user context gets 401 whatever the body holds', async () => {
      const bad: [string, string, unknown][] = [
        ['POST', '/events', { agentId: 42, name: [] }],
        ['POST', '/wallets', ['agt_a1']],
        ['POST', '/splits', { totalAmount: 'ten' }],
        ['PUT', '/agents/agt_a1/webhook', { url: 42 }],
      ];
      for (const [method, path, json] of bad) {
        const res = await request(`${backend.url}/api/underground${path}`, { method, headers: { ...as(null), ...forwarded() }, json });
        expect([path, res.status, res.body]).toEqual([path, 401, { error: 'User context required' }]);
      }
    });

    it('U+0000 in any field is 400 Invalid characters in request, nothing recorded', async () => {
      const refused = [400, { error: 'Invalid characters in request' }];
      const before = (await call('usr_a', 'GET', '/events')).body.length;
      for (const [method, path, json] of [
        ['POST', '/events', { ...event, name: 'Ni\u0000ght' }],
        ['POST', '/events', { ...event, venue: '\u0000' }],
        ['POST', '/splits', { ...splitBody, name: 'R\u0000' }],
        ['PUT', '/agents/agt_a1/webhook', { url: 'https://agents.example.com/\u0000' }],
      ] as const) {
        const res = await call('usr_a', method, path, json);
        expect([path, res.status, res.body]).toEqual([path, ...refused]);
      }
      expect((await call('usr_a', 'GET', '/events')).body.length).toBe(before);
      const bus = await send({ messageId: 'm\u0000', action: 'HELLO', toAgentId: 'agt_b1', signature: `0x${'0'.repeat(130)}` });
      expect([bus.status, bus.body]).toEqual(refused);
    });

    it('the OpenAPI document shows every field of the underground bodies', async () => {
      const doc = (await request(`${backend.url}/openapi.json`)).body;
      const fields = (path: string, method: string) => {
        const schema = doc.paths[path][method].requestBody.content['application/json'].schema;
        return { properties: Object.keys(schema.properties), required: schema.required };
      };
      expect(fields('/api/underground/events', 'post')).toEqual({
        properties: ['agentId', 'name', 'description', 'venue', 'eventDate', 'ticketPriceUsdc', 'totalTickets'],
        required: ['agentId'],
      });
      expect(fields('/api/underground/wallets', 'post')).toEqual({ properties: ['agentId'], required: ['agentId'] });
      expect(fields('/api/underground/splits', 'post')).toEqual({
        properties: ['agentId', 'name', 'totalAmount', 'recipients'],
        required: ['agentId', 'totalAmount', 'recipients'],
      });
      expect(fields('/api/underground/agents/{agentId}/webhook', 'put')).toEqual({ properties: ['url'], required: ['url'] });
      expect(fields('/api/underground/bus/send', 'post')).toEqual({
        properties: ['messageId', 'action', 'fromAgentId', 'toAgentId', 'payload', 'signature'],
        required: ['messageId', 'action', 'signature'],
      });
    });
  });
});
