import { randomBytes, verify } from 'node:crypto';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ED25519_SPKI_PREFIX, signConnect } from '@aop/gateway-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_DEVICE_FILE, deviceIdentityFromPrivateKey, loadPlatformDevice } from './platform-device.js';

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-platform-device-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

const fields = {
  clientId: 'gateway-client',
  clientMode: 'backend',
  role: 'operator',
  scopes: ['operator.admin'],
  signedAtMs: 1,
  nonce: 'n',
  platform: 'linux',
};

describe('loadPlatformDevice', () => {
  it('generates one identity into the data directory, private key sealed, and reads the same one back', async () => {
    const dataDir = join(work, 'gen');
    const key = randomBytes(32);
    const first = loadPlatformDevice({ dataDir, encryptionKey: key });
    const again = loadPlatformDevice({ dataDir, encryptionKey: key.toString('hex') });
    expect(again).toEqual(first);
    expect(first.deviceId).toMatch(/^[0-9a-f]{64}$/);

    const file = join(dataDir, PLATFORM_DEVICE_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const stored = await readFile(file, 'utf8');
    expect(JSON.parse(stored)).toMatchObject({ version: 1, deviceId: first.deviceId, publicKey: first.publicKeyRaw });
    // The private key is never on disk in the clear.
    expect(stored).not.toContain('PRIVATE KEY');
    expect(stored).not.toContain(first.privateKeyPem.split('\n')[1]);

    // It signs what a gateway verifies against the published public key.
    const signature = Buffer.from(signConnect(first, fields), 'base64url');
    const publicKey = createPublicKey({
      key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(first.publicKeyRaw, 'base64url')]),
      format: 'der',
      type: 'spki',
    });
    const payload = ['v3', first.deviceId, 'gateway-client', 'backend', 'operator', 'operator.admin', '1', '', 'n', 'linux', ''].join('|');
    expect(verify(null, Buffer.from(payload), publicKey, signature)).toBe(true);
  });

  it('refuses a file sealed with another key, and a file whose id does not match its key', async () => {
    const dataDir = join(work, 'rekey');
    const key = randomBytes(32);
    loadPlatformDevice({ dataDir, encryptionKey: key });
    expect(() => loadPlatformDevice({ dataDir, encryptionKey: randomBytes(32) })).toThrow(/cannot be opened with this ENCRYPTION_KEY/);

    const file = join(dataDir, PLATFORM_DEVICE_FILE);
    const stored = JSON.parse(await readFile(file, 'utf8'));
    await writeFile(file, JSON.stringify({ ...stored, deviceId: 'f'.repeat(64) }));
    expect(() => loadPlatformDevice({ dataDir, encryptionKey: key })).toThrow(/does not match its key/);
  });

  it('uses PLATFORM_DEVICE_KEY (PEM, escaped PEM or base64 DER) and writes nothing', async () => {
    const dataDir = join(work, 'env');
    const { privateKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const der = privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64');
    const fromPem = loadPlatformDevice({ dataDir, encryptionKey: randomBytes(32), key: pem });
    expect(loadPlatformDevice({ dataDir, encryptionKey: randomBytes(32), key: pem.replace(/\n/g, '\\n') })).toEqual(fromPem);
    expect(loadPlatformDevice({ dataDir, encryptionKey: randomBytes(32), key: der })).toEqual(fromPem);
    await expect(stat(join(dataDir, PLATFORM_DEVICE_FILE))).rejects.toThrow();
  });

  it('refuses keys that are not Ed25519 or not keys at all', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(() => deviceIdentityFromPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString())).toThrow(
      /must be an Ed25519 key, not ec/,
    );
    expect(() => deviceIdentityFromPrivateKey('not a key')).toThrow(/not a PKCS#8 private key/);
  });
});
