import type { GatewayConnection, RequestOptions } from './gateway-client.js';

/**
 * Typed calls for OpenClaw's device pairing methods (openclaw@2026.9.6 `src/gateway/server-methods/devices.ts`). They
 * need `operator.pairing` (or `operator.admin`), which the loopback backend connection has.
 *
 * A signed device that is not paired gets `NOT_PAIRED` on `connect` and leaves a pending request (one per device; it
 * expires after 5 minutes unless the device retries). Approving pairs the device and issues its token; rejecting only
 * drops the request (the device may ask again); removing unpairs the device, drops its tokens and connections.
 */

/** A pending request as listed (fields beyond these are kept, untyped). */
export interface PendingPairingRequest {
  requestId: string;
  deviceId: string;
  publicKey?: string;
  displayName?: string;
  platform?: string;
  deviceFamily?: string;
  clientId?: string;
  clientMode?: string;
  role?: string;
  roles?: string[];
  scopes?: string[];
  remoteIp?: string;
  silent?: boolean;
  isRepair?: boolean;
  /** When the request was made (ms). */
  ts: number;
  [k: string]: unknown;
}

/** A paired device as listed: bearer tokens are summarized, never included. */
export interface PairedDevice {
  deviceId: string;
  publicKey?: string;
  displayName?: string;
  /** The label an operator gave it (`device.pair.rename`). */
  operatorLabel?: string;
  platform?: string;
  clientId?: string;
  clientMode?: string;
  role?: string;
  roles?: string[];
  scopes?: string[];
  remoteIp?: string;
  approvedVia?: string;
  createdAtMs?: number;
  approvedAtMs?: number;
  lastSeenAtMs?: number;
  /** Whether the device has a live connection now. */
  connected?: boolean;
  tokens?: { role: string; scopes?: string[]; createdAtMs?: number; rotatedAtMs?: number; revokedAtMs?: number }[];
  [k: string]: unknown;
}

export interface DevicePairingList {
  pending: PendingPairingRequest[];
  paired: PairedDevice[];
}

export async function devicePairList(conn: GatewayConnection, opts?: RequestOptions): Promise<DevicePairingList> {
  const list = await conn.request<Partial<DevicePairingList>>('device.pair.list', {}, opts);
  return { pending: list?.pending ?? [], paired: list?.paired ?? [] };
}

/** Unknown (or expired) request ids fail with `INVALID_REQUEST` `unknown requestId`. */
export function devicePairApprove(
  conn: GatewayConnection,
  requestId: string,
  opts?: RequestOptions,
): Promise<{ requestId: string; device: PairedDevice }> {
  return conn.request('device.pair.approve', { requestId }, opts);
}

/** Unknown (or expired) request ids fail with `INVALID_REQUEST` `unknown requestId`. */
export function devicePairReject(
  conn: GatewayConnection,
  requestId: string,
  opts?: RequestOptions,
): Promise<{ requestId: string; deviceId: string }> {
  return conn.request('device.pair.reject', { requestId }, opts);
}

/** Unpairs a device (its tokens and any pending request of it go too); unknown ids fail with `unknown deviceId`. */
export function devicePairRemove(conn: GatewayConnection, deviceId: string, opts?: RequestOptions): Promise<{ deviceId: string }> {
  return conn.request('device.pair.remove', { deviceId }, opts);
}

/** Whether a gateway error says the request or device id is unknown to it (already resolved, expired, or removed). */
export function isUnknownPairingTarget(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === 'INVALID_REQUEST' && (e.message === 'unknown requestId' || e.message === 'unknown deviceId');
}
