import { randomBytes } from 'node:crypto';
import { decryptSecret, newId, parseEncryptionKey } from '@aop/core';
import { request } from '@aop/testing';
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookServer } from '../../apps/backend/src/routes/underground/webhooks.test-support.js';
import { type TestBackend, startBackend } from '../../apps/backend/src/backend.test-support.js';
import { walletKeyAad } from '../../apps/backend/src/services/underground.js';
import { signAgentMessage } from '../../apps/backend/src/services/underground-bus.js';
import { type TestWeb, startWeb } from '../../apps/web/src/web.test-support.js';

// Spec §4.11 (the agent bus's BOOKING_* negotiation) and §4.18 (the built-in skills booking-settlement and
// instant-split), end to end: two customers' agents agree a booking over the backend's real bus, signed with the
// wallets the platform made them; the web, on the same database as in production, settles it and splits the fee.
const SHARED = {
  INTERNAL_API_KEY: 'internal-key-for-booking-settlement',
  HMAC_SECRET: 'hmac-secret-for-booking-settlement',
  ENCRYPTION_KEY: randomBytes(32).toString('hex'),
};

describe('a booking agreed on the bus, settled and split through the web', () => {
  let backend: TestBackend;
  let web: TestWeb;
  let hooks: Awaited<ReturnType<typeof startWebhookServer>>;

  beforeAll(async () => {
    hooks = await startWebhookServer();
    backend = await startBackend({ ...SHARED, UNDERGROUND_WEBHOOK_ALLOW_PRIVATE: 'true', UNDERGROUND_WEBHOOK_BACKOFF_MS: '20' });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url }, { database: backend.database });
  });
  afterAll(async () => {
    await web?.close();
    await backend?.close();
    await hooks?.close();
  });

  const call = (path: string, cookie: string, json?: unknown, method?: string) =>
    request(`${web.url}${path}`, { headers: { cookie }, ...(json === undefined ? {} : { json }), ...(method ? { method } : {}) });

  /** A customer with a deployed agent, its bus wallet (made by the backend, through the web) and its bus webhook. */
  async function customer(name: string) {
    const user = await web.signIn();
    const agentId = newId('agent');
    const kysely = backend.database.db.kysely;
    await kysely.insertInto('agents').values({ id: agentId, user_id: user.userId, name }).execute();
    await kysely
      .insertInto('agent_deployments')
      .values({ id: agentId, user_id: user.userId, name, subdomain: agentId.toLowerCase(), plan: 'solo' })
      .execute();
    const wallet = await call('/api/underground/wallets', user.cookie, { agentId });
    expect(wallet.status).toBe(201);
    const inbox = hooks.hook(agentId);
    expect((await call(`/api/underground/agents/${agentId}/webhook`, user.cookie, { url: inbox.url }, 'PUT')).status).toBe(200);
    // What the agent's runtime holds: its wallet key (the API never returns it).
    const row = await kysely.selectFrom('underground_wallets').selectAll().where('agent_id', '=', agentId).executeTakeFirstOrThrow();
    const key = decryptSecret(parseEncryptionKey(SHARED.ENCRYPTION_KEY), row.private_key_enc, walletKeyAad(agentId, row.address)) as Hex;
    return { ...user, agentId, address: row.address, key, inbox: inbox.hook };
  }

  const send = async (from: { key: Hex; agentId: string }, message: { action: string; toAgentId: string; payload: unknown }) => {
    const signed = await signAgentMessage(from.key, {
      messageId: `msg_${randomBytes(8).toString('hex')}`,
      fromAgentId: from.agentId,
      ...message,
    });
    const res = await request(`${backend.url}/api/underground/bus/send`, { method: 'POST', json: signed });
    expect([res.status, res.body]).toEqual([200, { success: true, messageId: signed.messageId }]);
    return signed.messageId;
  };

  it('request and acceptance on the bus; the venue settles the fee once; the DJ splits it with the crew', async () => {
    const venue = await customer('Venue');
    const dj = await customer('DJ');
    const bookingId = await send(venue, {
      action: 'BOOKING_REQUEST',
      toAgentId: dj.agentId,
      payload: { terms: { fee: 480.25, date: '2026-07-04T22:00:00Z', venue: 'Warehouse' } },
    });
    // Not accepted yet: listed nowhere, not settleable.
    expect((await call('/api/skills/booking-settlement', venue.cookie)).body).toEqual({ bookings: [] });
    const early = await call('/api/skills/booking-settlement', venue.cookie, { bookingId, amount: '480.25' });
    expect([early.status, early.body]).toEqual([409, { error: 'Booking is open; only an accepted booking is settled' }]);

    await send(dj, { action: 'BOOKING_ACCEPT', toAgentId: venue.agentId, payload: { negotiationId: bookingId } });
    const listed = await call('/api/skills/booking-settlement', venue.cookie);
    expect(listed.body.bookings).toEqual([
      expect.objectContaining({
        bookingId,
        role: 'payer',
        payerAgentId: venue.agentId,
        payeeAgentId: dj.agentId,
        payeeAddress: dj.address,
        fee: '480.25',
        date: '2026-07-04T22:00:00.000Z',
        venue: 'Warehouse',
        settlement: null,
      }),
    ]);

    const settled = await call('/api/skills/booking-settlement', venue.cookie, { bookingId, amount: '480.25' });
    expect(settled.status).toBe(201);
    expect((await call('/api/skills/booking-settlement', venue.cookie, { bookingId, amount: '480.25' })).status).toBe(200);
    expect((await call('/api/skills/booking-settlement?status=settled', dj.cookie)).body.bookings[0]).toMatchObject({
      role: 'payee',
      settlement: settled.body.settlement,
    });

    const crew = [
      { address: dj.address, share: 80 },
      { address: `0x${randomBytes(20).toString('hex')}`, share: 20 },
    ];
    const split = await call('/api/skills/instant-split', dj.cookie, { bookingId, name: 'July 4th', recipients: crew });
    expect(split.status).toBe(201);
    expect(split.body.split).toMatchObject({
      bookingId,
      agentId: dj.agentId,
      amount: '480.25',
      recipients: [
        { address: crew[0]!.address, share: 80, amount: '384.20' },
        { address: crew[1]!.address, share: 20, amount: '96.05' },
      ],
    });
    // The booking is closed on the bus: no later move reopens it under the settlement.
    const late = await signAgentMessage(venue.key, {
      messageId: `msg_${randomBytes(8).toString('hex')}`,
      fromAgentId: venue.agentId,
      action: 'BOOKING_CANCEL',
      toAgentId: dj.agentId,
      payload: { negotiationId: bookingId },
    });
    const cancelled = await request(`${backend.url}/api/underground/bus/send`, { method: 'POST', json: late });
    expect([cancelled.status, cancelled.body]).toEqual([409, { error: 'Negotiation is accepted' }]);
  });
});
