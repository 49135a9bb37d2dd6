import { type DB, sql } from '@aop/db';
import type { Kysely } from 'kysely';

/**
 * Hosting provider events (spec §6, `POST /api/webhooks/hosting-status`): platform status and deployment events,
 * stored for polling. The payload is the hosting provider's (Render-style) `{ type, timestamp, data: { id,
 * serviceId, serviceName, status?, … } }`; `type` names the event (`deploy_started`, `deploy_ended`,
 * `build_ended`, `server_available`, `server_failed`, `service_suspended`, …).
 */

export type HostingCategory = 'deployment' | 'platform';

/** Build and deploy lifecycle events; everything else is about the running platform. */
const DEPLOYMENT_TYPE = /^(deploy|build|pre_deploy|image_pull|commit_ignored|initial_deploy|zero_downtime_redeploy)/;

export const hostingCategory = (type: string): HostingCategory => (DEPLOYMENT_TYPE.test(type) ? 'deployment' : 'platform');

/** Platform events that say whether a service is serving, and what they mean. */
const AVAILABILITY: Record<string, ServiceState> = {
  server_available: 'up',
  server_restarted: 'up',
  service_resumed: 'up',
  server_failed: 'down',
  server_hardware_failure: 'down',
  service_suspended: 'suspended',
};
export const AVAILABILITY_TYPES = Object.keys(AVAILABILITY);

export type ServiceState = 'up' | 'down' | 'suspended' | 'unknown';

const TYPE_FORMAT = /^[a-z][a-z0-9_.-]{0,99}$/;
const TEXT_MAX = 200;
const str = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value.slice(0, TEXT_MAX) : null);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export interface ParsedHostingEvent {
  type: string;
  category: HostingCategory;
  serviceId: string | null;
  serviceName: string | null;
  /** The provider's `status` (e.g. `succeeded`, `failed`), else what the type says (`started`, `available`, …). */
  status: string | null;
  occurredAt: Date;
}

export class InvalidHostingEventError extends Error {
  override name = 'InvalidHostingEventError';
}

/** The status an event reports: the provider's word when it gives one, else the type's last word (`deploy_started` → `started`). */
function eventStatus(type: string, data: Record<string, unknown>): string | null {
  const given = str(data.status);
  if (given) return given.toLowerCase();
  if (type === 'server_hardware_failure') return 'failed';
  const last = type.split(/[_.]/).pop();
  return last && last !== type ? last : null;
}

export function parseHostingEvent(payload: unknown, deliveredAtMs: number): ParsedHostingEvent {
  if (!isObject(payload) || typeof payload.type !== 'string') throw new InvalidHostingEventError('Invalid payload');
  const type = payload.type.trim().toLowerCase();
  if (!TYPE_FORMAT.test(type)) throw new InvalidHostingEventError('Invalid payload');
  const data = isObject(payload.data) ? payload.data : {};
  const when = Date.parse(str(payload.timestamp) ?? str(data.createdAt) ?? '');
  return {
    type,
    category: hostingCategory(type),
    serviceId: str(data.serviceId) ?? str(data.service_id),
    serviceName: str(data.serviceName) ?? str(data.service_name),
    status: eventStatus(type, data),
    occurredAt: new Date(Number.isFinite(when) ? when : deliveredAtMs),
  };
}

/** Stores one delivery; false when its id was stored before (a retry). */
export async function storeHostingEvent(
  db: Kysely<DB>,
  deliveryId: string,
  event: ParsedHostingEvent,
  payload: Record<string, unknown>,
): Promise<boolean> {
  const row = await db
    .insertInto('hosting_events')
    .values({
      id: deliveryId,
      type: event.type,
      category: event.category,
      service_id: event.serviceId,
      service_name: event.serviceName,
      status: event.status,
      occurred_at: event.occurredAt,
      payload: JSON.stringify(payload),
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export interface HostingEventView {
  id: string;
  /** The polling cursor of this event (a decimal string). */
  cursor: string;
  type: string;
  category: HostingCategory;
  serviceId: string | null;
  serviceName: string | null;
  status: string | null;
  occurredAt: string;
  receivedAt: string;
  payload: Record<string, unknown>;
}

export interface EventQuery {
  /** Only events after this cursor. */
  after?: number | undefined;
  limit: number;
  category?: HostingCategory | undefined;
  serviceId?: string | undefined;
}

/**
 * Events in the order they arrived (oldest first), so a poller handles them in order: after `after` when given (the
 * next `limit`), else the latest `limit`.
 */
export async function listHostingEvents(db: Kysely<DB>, query: EventQuery): Promise<HostingEventView[]> {
  let q = db.selectFrom('hosting_events').selectAll();
  if (query.after !== undefined) q = q.where('seq', '>', query.after);
  if (query.category) q = q.where('category', '=', query.category);
  if (query.serviceId) q = q.where('service_id', '=', query.serviceId);
  const rows =
    query.after !== undefined
      ? await q.orderBy('seq', 'asc').limit(query.limit).execute()
      : (await q.orderBy('seq', 'desc').limit(query.limit).execute()).reverse();
  return rows.map((r) => ({
    id: r.id,
    cursor: String(r.seq),
    type: r.type,
    category: r.category,
    serviceId: r.service_id,
    serviceName: r.service_name,
    status: r.status,
    occurredAt: r.occurred_at.toISOString(),
    receivedAt: r.received_at.toISOString(),
    payload: r.payload,
  }));
}

/** The newest cursor stored, or null when nothing was ever received. */
export async function latestCursor(db: Kysely<DB>): Promise<string | null> {
  const row = await db
    .selectFrom('hosting_events')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .executeTakeFirst();
  return row?.seq === null || row?.seq === undefined ? null : String(row.seq);
}

export interface ServiceStatus {
  serviceId: string;
  serviceName: string | null;
  /** From the newest availability event (`server_available`, `server_failed`, `service_suspended`, …). */
  state: ServiceState;
  stateSince: string | null;
  lastDeployment: { type: string; status: string | null; at: string } | null;
}

export interface PlatformStatus {
  /** `operational`: every service known to be up; `down`: none is; `degraded`: some are not; `unknown`: no events. */
  status: 'operational' | 'degraded' | 'down' | 'unknown';
  services: ServiceStatus[];
  updatedAt: string | null;
}

/** The current picture per service, from the newest availability and deployment events (two `distinct on` queries). */
export async function platformStatus(db: Kysely<DB>): Promise<PlatformStatus> {
  const availability = await sql<{ service_id: string; service_name: string | null; type: string; occurred_at: Date }>`
    select distinct on (service_id) service_id, service_name, type, occurred_at
    from hosting_events
    where service_id is not null and type in (${sql.join(AVAILABILITY_TYPES)})
    order by service_id, seq desc`.execute(db);
  const deployments = await sql<{
    service_id: string;
    service_name: string | null;
    type: string;
    status: string | null;
    occurred_at: Date;
  }>`
    select distinct on (service_id) service_id, service_name, type, status, occurred_at
    from hosting_events
    where service_id is not null and category = 'deployment'
    order by service_id, seq desc`.execute(db);
  const latest = await db
    .selectFrom('hosting_events')
    .select((eb) => eb.fn.max('received_at').as('at'))
    .executeTakeFirst();

  const services = new Map<string, ServiceStatus>();
  const entry = (id: string, name: string | null): ServiceStatus => {
    let s = services.get(id);
    if (!s) {
      s = { serviceId: id, serviceName: name, state: 'unknown', stateSince: null, lastDeployment: null };
      services.set(id, s);
    }
    s.serviceName ??= name;
    return s;
  };
  for (const r of availability.rows) {
    const s = entry(r.service_id, r.service_name);
    s.state = AVAILABILITY[r.type] ?? 'unknown';
    s.stateSince = new Date(r.occurred_at).toISOString();
  }
  for (const r of deployments.rows) {
    entry(r.service_id, r.service_name).lastDeployment = { type: r.type, status: r.status, at: new Date(r.occurred_at).toISOString() };
  }
  const list = [...services.values()].sort((a, b) => (a.serviceName ?? a.serviceId).localeCompare(b.serviceName ?? b.serviceId));
  const known = list.filter((s) => s.state !== 'unknown');
  const up = known.filter((s) => s.state === 'up').length;
  const status: PlatformStatus['status'] =
    known.length === 0 ? 'unknown' : up === known.length ? 'operational' : up === 0 ? 'down' : 'degraded';
  const at = latest?.at;
  return { status, services: list, updatedAt: at ? new Date(at as Date | string).toISOString() : null };
}
