import { createHash, createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';

/** A persistent Ed25519 identity a client presents to an OpenClaw gateway (`connect.params.device`). */
export interface DeviceIdentity {
  /** sha256 hex of the raw 32-byte public key. */
  deviceId: string;
  /** base64url of the raw 32-byte public key. */
  publicKeyRaw: string;
  /** PKCS#8 PEM of the private key. */
  privateKeyPem: string;
}

/** The fields covered by the v3 device signature. */
export interface ConnectSignatureFields {
  clientId: string;
  clientMode: string;
  role: string;
  scopes: readonly string[];
  /** `connect.challenge` payload `ts` (ms). */
  signedAtMs: number;
  /** The auth token, or '' when none is sent. */
  token?: string | undefined;
  /** `connect.challenge` payload `nonce`. */
  nonce: string;
  platform: string;
  deviceFamily?: string | undefined;
}

export function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64url');
}

/** The DER SPKI prefix of an Ed25519 public key (the raw 32 bytes follow it). */
export const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export function deviceIdFromRawPublicKey(raw: Uint8Array): string {
  return createHash('sha256').update(raw).digest('hex');
}

export function createDeviceIdentity(): DeviceIdentity {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ type: 'spki', format: 'der' }).subarray(-32);
  return {
    deviceId: deviceIdFromRawPublicKey(raw),
    publicKeyRaw: base64url(raw),
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** The pipe-joined v3 payload: `v3|deviceId|clientId|clientMode|role|scopes|signedAtMs|token|nonce|platform|deviceFamily`. */
export function connectSignaturePayload(deviceId: string, fields: ConnectSignatureFields): string {
  return [
    'v3',
    deviceId,
    fields.clientId,
    fields.clientMode,
    fields.role,
    fields.scopes.join(','),
    String(fields.signedAtMs),
    fields.token ?? '',
    fields.nonce,
    fields.platform.toLowerCase(),
    (fields.deviceFamily ?? '').toLowerCase(),
  ].join('|');
}

/** Signs the v3 connect payload with the device key; returns the base64url Ed25519 signature. */
export function signConnect(identity: DeviceIdentity, fields: ConnectSignatureFields): string {
  const payload = connectSignaturePayload(identity.deviceId, fields);
  return base64url(sign(null, Buffer.from(payload, 'utf8'), createPrivateKey(identity.privateKeyPem)));
}
