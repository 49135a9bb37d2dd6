import { newId } from '@aop/core';
import { type TestDatabase, createTestDatabase } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSavedHeartbeat, releaseSavedHeartbeat, savedHeartbeatCount, unclaimedSavedHeartbeats } from './heartbeat.service.js';

// Spec §4.10 keeps a heartbeat in the database while the agent's gateway cannot take it; issue #20: it is put there
// once the agent is live, by a start's follow-up or the web's sweep, in every replica. Whoever applies one claims it
// first (migration 0024), on PGlite and on the Postgres server alike (this file runs in both CI passes).

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

async function ownerWithSaved(frequency = '2h', verified = true) {
  const userId = newId('user');
  const agentId = newId('agent');
  const db = database.db.kysely;
  await db
    .insertInto('users')
    .values({ id: userId, email: `${userId}@example.com`, name: 'Owner', email_verified_at: verified ? new Date() : null })
    .execute();
  await db.insertInto('agents').values({ id: agentId, user_id: userId, name: 'Agent' }).execute();
  await db.insertInto('heartbeat_settings').values({ user_id: userId, agent_id: agentId, frequency }).execute();
  return { userId, agentId };
}

describe('saved heartbeat claims', () => {
  it('two claims at once: exactly one holds it until it is released or its time has passed', async () => {
    const { userId, agentId } = await ownerWithSaved();
    const now = Date.now();
    const claims = await Promise.all(Array.from({ length: 4 }, () => claimSavedHeartbeat(database.db, userId, agentId, now)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await claimSavedHeartbeat(database.db, userId, agentId, now + 60_000)).toBe(false);
    // A claim left by a process that died ends by itself.
    expect(await claimSavedHeartbeat(database.db, userId, agentId, now + 121_000)).toBe(true);
    await releaseSavedHeartbeat(database.db, userId, agentId);
    expect(await claimSavedHeartbeat(database.db, userId, agentId, now)).toBe(true);
  });

  it('nothing saved, or another user’s agent: no claim', async () => {
    const { userId } = await ownerWithSaved();
    const other = await ownerWithSaved();
    expect(await claimSavedHeartbeat(database.db, userId, newId('agent'), Date.now())).toBe(false);
    // Row-level security: a user cannot claim (or release) what another user saved.
    expect(await claimSavedHeartbeat(database.db, userId, other.agentId, Date.now())).toBe(false);
    await releaseSavedHeartbeat(database.db, userId, other.agentId);
    expect(await claimSavedHeartbeat(database.db, other.userId, other.agentId, Date.now())).toBe(true);
  });

  it('the sweep lists the unclaimed ones with their owners, page by page in agent id order', async () => {
    await database.db.kysely.deleteFrom('heartbeat_settings').execute();
    const saved = [await ownerWithSaved('1h'), await ownerWithSaved('3h', false), await ownerWithSaved('6h')];
    const claimed = saved[2] as { userId: string; agentId: string };
    const now = Date.now();
    expect(await claimSavedHeartbeat(database.db, claimed.userId, claimed.agentId, now)).toBe(true);
    expect(await savedHeartbeatCount(database.db.kysely)).toBe(3);

    // Pages in the database's own order of agent ids (its collation), each after the last one the page before ended on.
    const unclaimed = saved.filter((s) => s !== claimed).map((s) => s.agentId);
    const first = await unclaimedSavedHeartbeats(database.db.kysely, { now, after: null, limit: 1 });
    const rest = await unclaimedSavedHeartbeats(database.db.kysely, { now, after: first[0]?.agentId ?? null, limit: 1 });
    expect([...first, ...rest].map((s) => s.agentId).sort()).toEqual(unclaimed.sort());
    // The owner as the backend may be told of them: the address only once verified (`backendCaller`).
    const unverified = [...first, ...rest].find((s) => s.agentId === saved[1]?.agentId);
    expect(unverified?.owner).toEqual({ id: saved[1]?.userId, email: `${saved[1]?.userId}@example.com`, emailVerified: false });
    expect(await unclaimedSavedHeartbeats(database.db.kysely, { now, after: rest[0]?.agentId ?? null, limit: 1 })).toEqual([]);
    // Once its claim has run out, the claimed one is listed again.
    expect((await unclaimedSavedHeartbeats(database.db.kysely, { now: now + 121_000, after: null, limit: 10 })).length).toBe(3);
  });
});
