import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decryptSecret, encryptSecret, parseEncryptionKey } from '@aop/core';
import { type DeviceIdentity, base64url, createDeviceIdentity, deviceIdFromRawPublicKey } from '@aop/gateway-client';

/** Where the generated identity is kept, under the data directory. */
export const PLATFORM_DEVICE_FILE = 'platform-device.json';
/** Associated data of the sealed private key: the sealed value is only valid in this file. */
const AAD = 'platform-device:v1';

/** The Ed25519 identity of a PKCS#8 private key (PEM, or base64 of the DER). */
export function deviceIdentityFromPrivateKey(value: string): DeviceIdentity {
  const text = value.trim().replace(/\\n/g, '\n');
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = text.startsWith('-----BEGIN')
      ? createPrivateKey(text)
      : createPrivateKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'pkcs8' });
  } catch (cause) {
    throw new Error('The platform device key is not a PKCS#8 private key (PEM, or base64 of the DER)', { cause });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new Error(`The platform device key must be an Ed25519 key, not ${key.asymmetricKeyType ?? 'unknown'}`);
  }
  const raw = createPublicKey(key).export({ type: 'spki', format: 'der' }).subarray(-32);
  return {
    deviceId: deviceIdFromRawPublicKey(raw),
    publicKeyRaw: base64url(raw),
    privateKeyPem: key.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

interface StoredPlatformDevice {
  version: 1;
  deviceId: string;
  publicKey: string;
  /** PKCS#8 PEM sealed with `ENCRYPTION_KEY` (AES-256-GCM). */
  privateKey: string;
  createdAt: string;
}

export interface LoadPlatformDeviceOptions {
  /** The platform's data directory; the generated identity is `<dataDir>/platform-device.json` (0600). */
  dataDir: string;
  /** Seals the private key in that file (`ENCRYPTION_KEY`: a Buffer, 64 hex characters or base64). */
  encryptionKey: Buffer | string;
  /** `PLATFORM_DEVICE_KEY`: when set, this key is the identity and nothing is read or written. */
  key?: string | undefined;
}

/**
 * The platform's one persistent device identity, presented by the backend to every agent gateway it controls from a
 * non-loopback address (issue #8 "Pairing"). `PLATFORM_DEVICE_KEY` wins (deployments with several backends, or
 * whose data directory is not kept); otherwise the identity is generated on first use into the data directory with
 * its private key sealed by `ENCRYPTION_KEY`, and read back on every start. Creation is atomic (`link` fails when
 * another process got there first), so services started together agree on one identity.
 *
 * Changing the identity makes every gateway see a new device: the hosts pair it again on their next control call (a
 * hosted agent needs an operator's approval again).
 */
export function loadPlatformDevice(options: LoadPlatformDeviceOptions): DeviceIdentity {
  if (options.key) return deviceIdentityFromPrivateKey(options.key);
  const secret = Buffer.isBuffer(options.encryptionKey) ? options.encryptionKey : parseEncryptionKey(options.encryptionKey);
  const file = join(options.dataDir, PLATFORM_DEVICE_FILE);
  if (!existsSync(file)) {
    const identity = createDeviceIdentity();
    const stored: StoredPlatformDevice = {
      version: 1,
      deviceId: identity.deviceId,
      publicKey: identity.publicKeyRaw,
      privateKey: encryptSecret(secret, identity.privateKeyPem, AAD),
      createdAt: new Date().toISOString(),
    };
    mkdirSync(options.dataDir, { recursive: true });
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(tmp, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
    try {
      linkSync(tmp, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  const stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<StoredPlatformDevice>;
  let pem: string;
  try {
    pem = decryptSecret(secret, String(stored.privateKey), AAD);
  } catch (cause) {
    throw new Error(
      `${file} cannot be opened with this ENCRYPTION_KEY: restore the key it was sealed with, or delete the file (a new platform device is then paired with every agent again)`,
      { cause },
    );
  }
  const identity = deviceIdentityFromPrivateKey(pem);
  if (identity.deviceId !== stored.deviceId) throw new Error(`${file}: the stored device id does not match its key`);
  return identity;
}
