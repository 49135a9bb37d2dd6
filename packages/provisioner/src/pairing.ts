import {
  type DeviceIdentity,
  GatewayError,
  type GatewayConnection,
  connectGateway,
  devicePairApprove,
  devicePairList,
} from '@aop/gateway-client';

export interface ApprovePlatformDeviceOptions {
  /**
   * The gateway as reached from its own host or network namespace (`ws://127.0.0.1:<port>/`): there a token-only
   * `gateway-client`/`backend` connection gets its full scopes without a device (OpenClaw's local backend path).
   */
  loopbackUrl: string;
  /** The gateway token. */
  token: string;
  /** The platform's persistent Ed25519 identity (`createDeviceIdentity`). */
  identity: DeviceIdentity;
  /**
   * Where the platform reaches the gateway remotely (default `loopbackUrl`). The first signed connect there leaves the
   * pending request this function approves; the last one returns the device token.
   */
  deviceUrl?: string;
  /** Per connection attempt, socket open to `hello-ok` (default 15 000 ms). */
  handshakeTimeoutMs?: number;
  /** How long a gateway still starting (`UNAVAILABLE`) is retried (default 30 000 ms: this runs right after a start). */
  retryDeadlineMs?: number;
}

export interface PlatformDevicePairing {
  deviceId: string;
  /** `hello-ok.auth.deviceToken`: what the platform stores (sealed) for later remote connects. */
  deviceToken: string;
  /** The request approved now; null when the device was already paired (or paired silently on a local connect). */
  requestId: string | null;
}

/**
 * Pairs the platform's own device identity with a gateway, so remote (non-loopback) control connections get their
 * scopes: OpenClaw never auto-approves an operator device from a remote address, and without a paired device a remote
 * token connection is admitted with no scopes at all.
 *
 * 1. Connect with the device (at `deviceUrl`). Already paired: done. Otherwise the gateway answers `NOT_PAIRED` and
 *    records a pending request for the device.
 * 2. Connect over loopback without a device, `device.pair.list`, and `device.pair.approve` the pending request whose
 *    `deviceId` is the platform's (never another device's).
 * 3. Connect with the device again: `hello-ok.auth.deviceToken` is returned for the caller to store.
 *
 * Safe to repeat: on a gateway that already paired the identity it only does step 1.
 */
export async function approvePlatformDevice(opts: ApprovePlatformDeviceOptions): Promise<PlatformDevicePairing> {
  const deviceUrl = opts.deviceUrl ?? opts.loopbackUrl;
  const timing = { handshakeTimeoutMs: opts.handshakeTimeoutMs ?? 15_000, retryDeadlineMs: opts.retryDeadlineMs ?? 30_000 };
  const { deviceId } = opts.identity;

  let askedRequestId: string | undefined;
  try {
    return { deviceId, deviceToken: await deviceConnect(deviceUrl, opts, timing), requestId: null };
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'NOT_PAIRED') throw err;
    const details = err.details as { requestId?: unknown } | undefined;
    if (typeof details?.requestId === 'string') askedRequestId = details.requestId;
  }

  const admin = await connectGateway({ url: opts.loopbackUrl, token: opts.token, ...timing });
  let requestId: string | null = null;
  try {
    const list = await devicePairList(admin, { timeoutMs: timing.handshakeTimeoutMs });
    const mine = list.pending.filter((r) => r.deviceId === deviceId).sort((a, b) => b.ts - a.ts);
    // The request the gateway named in NOT_PAIRED, else the newest one of this device (a retry may have superseded it).
    const request = mine.find((r) => r.requestId === askedRequestId) ?? mine[0];
    if (request) {
      await devicePairApprove(admin, request.requestId, { timeoutMs: timing.handshakeTimeoutMs });
      requestId = request.requestId;
    } else if (!list.paired.some((d) => d.deviceId === deviceId)) {
      throw new GatewayError('PAIRING_REQUEST_MISSING', `the gateway lists no pending pairing request for device ${deviceId}`);
    }
  } finally {
    await admin.close();
  }

  return { deviceId, deviceToken: await deviceConnect(deviceUrl, opts, timing), requestId };
}

async function deviceConnect(
  url: string,
  opts: ApprovePlatformDeviceOptions,
  timing: { handshakeTimeoutMs: number; retryDeadlineMs: number },
): Promise<string> {
  let conn: GatewayConnection | undefined;
  try {
    conn = await connectGateway({ url, token: opts.token, device: opts.identity, ...timing });
    const deviceToken = conn.hello.auth?.deviceToken;
    if (!deviceToken) throw new GatewayError('PROTOCOL_ERROR', 'hello-ok carries no auth.deviceToken for a paired device');
    return deviceToken;
  } finally {
    await conn?.close();
  }
}
