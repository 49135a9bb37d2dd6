import type { Database, Tx } from '@aop/db';
import { sql } from '@aop/db';
import type { DevicePairingList, PairedDevice, PendingPairingRequest } from '@aop/gateway-client';

/**
 * The platform's record of the devices paired with a user's agent gateway (spec §2.8, §3.1, §4.12).
 *
 * The gateway holds the live pairing state; `devices` keeps what the platform knows and decided, per (user, agent,
 * device). Each gateway listing is mirrored in: new devices are added, names, addresses and times refreshed, and a
 * device the gateway shows paired while the record still says `pending` becomes `approved` (approved elsewhere, e.g. the
 * OpenClaw CLI). Nothing ever leaves `denied` or `revoked`, and an `approved` record is not demoted when the gateway
 * forgets the device (a re-created gateway): the owner's decisions outlive the gateway's state.
 */

export const DEVICE_ACTIONS = ['approve', 'deny', 'revoke'] as const;
export type DeviceAction = (typeof DEVICE_ACTIONS)[number];
export type DeviceStatus = 'pending' | 'approved' | 'denied' | 'revoked';

/** §2.8. `id` is the gateway's device id. */
export interface Device {
  id: string;
  name: string;
  ip: string;
  firstSeen: string;
  lastSeen: string;
  status: DeviceStatus;
}

export interface DeviceLists {
  pending: Device[];
  approved: Device[];
}

/** What each action needs and leaves (§3.1). */
export const DEVICE_MOVES: Record<
  DeviceAction,
  { from: DeviceStatus; to: DeviceStatus; refusal: 'DEVICE_NOT_PENDING' | 'DEVICE_NOT_APPROVED' }
> = {
  approve: { from: 'pending', to: 'approved', refusal: 'DEVICE_NOT_PENDING' },
  deny: { from: 'pending', to: 'denied', refusal: 'DEVICE_NOT_PENDING' },
  revoke: { from: 'approved', to: 'revoked', refusal: 'DEVICE_NOT_APPROVED' },
};

// Names and addresses come from the devices themselves (`client.displayName`): bounded before they are stored.
const NAME_MAX = 200;
const IP_MAX = 100;

interface MirrorRow {
  user_id: string;
  agent_id: string;
  device_id: string;
  name: string;
  ip: string;
  first_seen: Date;
  last_seen: Date;
  status: 'pending' | 'approved';
  request_id: string | null;
  updated_at: Date;
}

const text = (value: unknown, max: number) => (typeof value === 'string' ? value.trim().slice(0, max) : '');
const time = (ms: unknown, fallback: Date) => (typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? new Date(ms) : fallback);

function pendingRow(userId: string, agentId: string, r: PendingPairingRequest, now: Date): MirrorRow {
  const seen = time(r.ts, now);
  return {
    user_id: userId,
    agent_id: agentId,
    device_id: r.deviceId,
    name: text(r.displayName, NAME_MAX) || text(r.clientId, NAME_MAX),
    ip: text(r.remoteIp, IP_MAX),
    first_seen: seen,
    last_seen: seen,
    status: 'pending',
    request_id: r.requestId,
    updated_at: now,
  };
}

function pairedRow(userId: string, agentId: string, d: PairedDevice, now: Date): MirrorRow {
  const first = time(d.createdAtMs, now);
  // A device connected right now was seen now; otherwise its last device-token use, else its approval.
  const last = d.connected === true ? now : time(d.lastSeenAtMs ?? d.approvedAtMs, first);
  return {
    user_id: userId,
    agent_id: agentId,
    device_id: d.deviceId,
    name: text(d.operatorLabel, NAME_MAX) || text(d.displayName, NAME_MAX) || text(d.clientId, NAME_MAX),
    ip: text(d.remoteIp, IP_MAX),
    first_seen: first,
    last_seen: last,
    status: 'approved',
    request_id: null,
    updated_at: now,
  };
}

/**
 * Mirrors one `device.pair.list` answer (taken at `listedAt`) into the user's record for `agentId`. A `pending` record
 * whose request the gateway no longer lists (expired after 5 minutes, or resolved elsewhere) loses its request id and
 * drops out of the pending list until the device asks again; a record a fresher mirror touched after `listedAt` is
 * left alone.
 */
export async function mirrorPairingList(
  db: Database,
  userId: string,
  agentId: string,
  list: DevicePairingList,
  listedAt: Date,
  now: Date,
): Promise<void> {
  const rows = new Map<string, MirrorRow>();
  for (const d of list.paired) if (typeof d?.deviceId === 'string' && d.deviceId) rows.set(d.deviceId, pairedRow(userId, agentId, d, now));
  for (const r of list.pending) {
    if (typeof r?.deviceId !== 'string' || !r.deviceId || typeof r.requestId !== 'string' || !r.requestId) continue;
    const seen = rows.get(r.deviceId);
    // A pending request of a paired device asks for more scopes: the device stays approved.
    if (seen?.status === 'approved') continue;
    const row = pendingRow(userId, agentId, r, now);
    // One request per device on OpenClaw; should two be listed, the newest wins.
    if (!seen || row.last_seen >= seen.last_seen) rows.set(r.deviceId, row);
  }
  await db.withUser(userId, async (trx) => {
    if (rows.size > 0) {
      await trx
        .insertInto('devices')
        .values([...rows.values()])
        .onConflict((oc) =>
          oc.columns(['user_id', 'agent_id', 'device_id']).doUpdateSet({
            name: sql`coalesce(nullif(excluded.name, ''), devices.name)`,
            ip: sql`coalesce(nullif(excluded.ip, ''), devices.ip)`,
            first_seen: sql`least(devices.first_seen, excluded.first_seen)`,
            last_seen: sql`greatest(devices.last_seen, excluded.last_seen)`,
            // Only a pending record follows the gateway; every other state is the owner's decision and stays.
            status: sql`case when devices.status = 'pending' then excluded.status else devices.status end`,
            request_id: sql`case when devices.status = 'pending' then excluded.request_id else devices.request_id end`,
            updated_at: sql`excluded.updated_at`,
          }),
        )
        .execute();
    }
    let stale = trx
      .updateTable('devices')
      .set({ request_id: null, updated_at: now })
      .where('agent_id', '=', agentId)
      .where('status', '=', 'pending')
      .where('request_id', 'is not', null)
      .where('updated_at', '<', listedAt);
    if (rows.size > 0) stale = stale.where('device_id', 'not in', [...rows.keys()]);
    await stale.execute();
  });
}

function toDevice(row: { device_id: string; name: string; ip: string; first_seen: Date; last_seen: Date; status: DeviceStatus }): Device {
  return {
    id: row.device_id,
    name: row.name || 'Unknown device',
    ip: row.ip,
    firstSeen: row.first_seen.toISOString(),
    lastSeen: row.last_seen.toISOString(),
    status: row.status,
  };
}

/** The pending (with a live gateway request) and approved devices of the user's agent, most recently seen first. */
export async function listDevices(db: Database, userId: string, agentId: string): Promise<DeviceLists> {
  const rows = await db.withUser(userId, (trx) =>
    trx
      .selectFrom('devices')
      .select(['device_id', 'name', 'ip', 'first_seen', 'last_seen', 'status', 'request_id'])
      .where('agent_id', '=', agentId)
      .where((eb) => eb.or([eb.and([eb('status', '=', 'pending'), eb('request_id', 'is not', null)]), eb('status', '=', 'approved')]))
      .orderBy('last_seen', 'desc')
      .orderBy('device_id')
      .execute(),
  );
  return {
    pending: rows.filter((r) => r.status === 'pending').map(toDevice),
    approved: rows.filter((r) => r.status === 'approved').map(toDevice),
  };
}

export interface DeviceRecord {
  status: DeviceStatus;
  requestId: string | null;
}

export async function findDevice(db: Database, userId: string, agentId: string, deviceId: string): Promise<DeviceRecord | null> {
  const row = await db.withUser(userId, (trx) => byKey(trx, agentId, deviceId).executeTakeFirst());
  return row ? { status: row.status, requestId: row.request_id } : null;
}

const byKey = (trx: Tx, agentId: string, deviceId: string) =>
  trx.selectFrom('devices').select(['status', 'request_id']).where('agent_id', '=', agentId).where('device_id', '=', deviceId);

/** Whether `record` may take `action` now: a pending device also needs a live gateway request to act on. */
export function canMove(record: DeviceRecord, action: DeviceAction): boolean {
  const { from } = DEVICE_MOVES[action];
  return record.status === from && (from !== 'pending' || record.requestId !== null);
}

/**
 * Claims a move with one conditional UPDATE (`... where status = <from>`): of two concurrent calls exactly one gets the
 * row back, the other `null`. Returns the record as it was before the move.
 */
export async function claimMove(
  db: Database,
  userId: string,
  agentId: string,
  deviceId: string,
  action: DeviceAction,
  now: Date,
): Promise<DeviceRecord | null> {
  const { from, to } = DEVICE_MOVES[action];
  const row = await db.withUser(userId, (trx) => {
    let query = trx
      .updateTable('devices')
      .set({ status: to, updated_at: now })
      .where('agent_id', '=', agentId)
      .where('device_id', '=', deviceId)
      .where('status', '=', from);
    if (from === 'pending') query = query.where('request_id', 'is not', null);
    return query.returning(['request_id']).executeTakeFirst();
  });
  return row ? { status: from, requestId: row.request_id } : null;
}

/**
 * Undoes a claimed move the gateway did not carry out (`where status = <to>`, so a later move is never undone).
 * `requestGone`: the gateway no longer knows the request, so the device drops out of the pending list.
 */
export async function undoMove(
  db: Database,
  userId: string,
  agentId: string,
  deviceId: string,
  action: DeviceAction,
  now: Date,
  opts: { requestGone?: boolean } = {},
): Promise<void> {
  const { from, to } = DEVICE_MOVES[action];
  await db.withUser(userId, (trx) =>
    trx
      .updateTable('devices')
      .set({ status: from, updated_at: now, ...(opts.requestGone ? { request_id: null } : {}) })
      .where('agent_id', '=', agentId)
      .where('device_id', '=', deviceId)
      .where('status', '=', to)
      .execute(),
  );
}
