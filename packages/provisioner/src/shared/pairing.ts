import {
  type DeviceIdentity,
  GatewayError,
  type GatewayConnection,
  connectGateway,
  devicePairApprove,
  devicePairList,
} from '@aop/gateway-client';

/**
 * Approves one pending pairing request of the platform device on the gateway's own host, where OpenClaw trusts the
 * caller: e.g. `openclaw devices approve <requestId>` run inside the agent's container. Rejects when it could not.
 */
export type PairingApprover = (request: { requestId: string; deviceId: string }) => Promise<void>;

interface PairingCommonOptions {
  /** The gateway token. */
  token: string;
  /** The platform's persistent Ed25519 identity (`createDeviceIdentity`, `loadPlatformDevice`). */
  identity: DeviceIdentity;
  /** Per connection attempt, socket open to `hello-ok` (default 15 000 ms). */
  handshakeTimeoutMs?: number;
  /** How long a gateway still starting (`UNAVAILABLE`) is retried (default 30 000 ms: this runs right after a start). */
  retryDeadlineMs?: number;
}

export type ApprovePlatformDeviceOptions = PairingCommonOptions &
  (
    | {
        /**
         * The gateway as reached from its own host or network namespace (`ws://127.0.0.1:<port>/`): there a token-only
         * `gateway-client`/`backend` connection gets its full scopes without a device (OpenClaw's local backend path),
         * and approves the request over `device.pair.approve`.
         */
        loopbackUrl: string;
        /**
         * Where the platform reaches the gateway remotely (default `loopbackUrl`). The first signed connect there leaves
         * the pending request this function approves; the last one returns the device token.
         */
        deviceUrl?: string;
        approve?: undefined;
      }
    | {
        /** Where the platform reaches the gateway (remotely). */
        deviceUrl: string;
        /** Approves the request `NOT_PAIRED` named, on the gateway's host (no loopback connection from here). */
        approve: PairingApprover;
        loopbackUrl?: undefined;
      }
  );

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
 * 2. Approve it where the gateway trusts the caller: with `loopbackUrl`, connect there without a device,
 *    `device.pair.list` and `device.pair.approve` the pending request whose `deviceId` is the platform's (never another
 *    device's); with `approve`, hand it the request `NOT_PAIRED` named (it was made for this device's connect).
 * 3. Connect with the device again: `hello-ok.auth.deviceToken` is returned for the caller to store.
 *
 * Safe to repeat: on a gateway that already paired the identity it only does step 1.
 */
export async function approvePlatformDevice(opts: ApprovePlatformDeviceOptions): Promise<PlatformDevicePairing> {
  const deviceUrl = opts.deviceUrl ?? (opts.loopbackUrl as string);
  const timing = { handshakeTimeoutMs: opts.handshakeTimeoutMs ?? 15_000, retryDeadlineMs: opts.retryDeadlineMs ?? 30_000 };
  const { deviceId } = opts.identity;

  let asked: { requestId?: unknown; deviceId?: unknown } | undefined;
  try {
    return {
      deviceId,
      deviceToken: await platformDeviceToken({ url: deviceUrl, token: opts.token, identity: opts.identity, ...timing }),
      requestId: null,
    };
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'NOT_PAIRED') throw err;
    asked = err.details as typeof asked;
  }
  const askedRequestId = typeof asked?.requestId === 'string' ? asked.requestId : undefined;

  let requestId: string | null = null;
  if (opts.approve) {
    if (!askedRequestId || (asked?.deviceId !== undefined && asked.deviceId !== deviceId)) {
      throw new GatewayError('PAIRING_REQUEST_MISSING', `NOT_PAIRED named no pairing request for device ${deviceId}`, { details: asked });
    }
    await opts.approve({ requestId: askedRequestId, deviceId });
    requestId = askedRequestId;
  } else {
    const admin = await connectGateway({ url: opts.loopbackUrl, token: opts.token, ...timing });
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
  }

  return {
    deviceId,
    deviceToken: await platformDeviceToken({ url: deviceUrl, token: opts.token, identity: opts.identity, ...timing }),
    requestId,
  };
}

/**
 * One signed connect with the platform device: resolves with `hello-ok.auth.deviceToken` when the gateway admits it
 * (paired), rejects with the gateway's `NOT_PAIRED` (its `details.requestId` names the pending request) otherwise.
 */
export async function platformDeviceToken(opts: {
  url: string;
  token: string;
  identity: DeviceIdentity;
  handshakeTimeoutMs?: number;
  retryDeadlineMs?: number;
}): Promise<string> {
  let conn: GatewayConnection | undefined;
  try {
    conn = await connectGateway({
      url: opts.url,
      token: opts.token,
      device: opts.identity,
      handshakeTimeoutMs: opts.handshakeTimeoutMs ?? 15_000,
      retryDeadlineMs: opts.retryDeadlineMs ?? 30_000,
    });
    const deviceToken = conn.hello.auth?.deviceToken;
    if (!deviceToken) throw new GatewayError('PROTOCOL_ERROR', 'hello-ok carries no auth.deviceToken for a paired device');
    return deviceToken;
  } finally {
    await conn?.close();
  }
}

/**
 * The gateway has not approved the platform device and the host cannot approve it itself (a hosted agent: no way into
 * its container). `userMessage` says what a person must do; the pending request stays until approved (or expires,
 * and the next control call makes a new one).
 */
export class PlatformDeviceNotPairedError extends Error {
  override readonly name = 'PlatformDeviceNotPairedError';
  readonly userMessage: string;
  constructor(
    readonly agentId: string,
    readonly deviceId: string,
    readonly requestId: string | null,
  ) {
    super(
      `Agent ${agentId}: the gateway has not approved the platform device ${deviceId}${requestId ? ` (pending request ${requestId})` : ''}`,
    );
    this.userMessage = `pairing required: approve the platform device ${deviceId.slice(0, 12)} once in the agent's Control UI (Devices)`;
  }
}
