import { createHash, createPublicKey, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ED25519_SPKI_PREFIX, connectSignaturePayload, createDeviceIdentity, signConnect } from './device-identity.js';

const fields = {
  clientId: 'gateway-client',
  clientMode: 'backend',
  role: 'operator',
  scopes: ['operator.admin', 'operator.read', 'operator.write'],
  signedAtMs: 1795342719334,
  token: 'tok-123',
  nonce: '67af8a12-a912-4951-8cef-2716571c5111',
  platform: 'Linux',
  deviceFamily: 'Server',
};

function publicKeyOf(raw: string) {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(raw, 'base64url')]), format: 'der', type: 'spki' });
}

describe('device identity', () => {
  it('derives the device id from the raw 32-byte Ed25519 public key', () => {
    const id = createDeviceIdentity();
    const raw = Buffer.from(id.publicKeyRaw, 'base64url');
    expect(raw).toHaveLength(32);
    expect(id.publicKeyRaw).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(id.deviceId).toBe(createHash('sha256').update(raw).digest('hex'));
    expect(id.privateKeyPem).toContain('-----BEGIN PRIVATE KEY-----');
    // The raw key is the one of the private key.
    const fromPrivate = createPublicKey(id.privateKeyPem).export({ type: 'spki', format: 'der' }).subarray(-32);
    expect(fromPrivate.equals(raw)).toBe(true);
    expect(createDeviceIdentity().deviceId).not.toBe(id.deviceId);
  });

  it('builds the pipe-joined v3 payload with lower-cased platform and device family', () => {
    expect(connectSignaturePayload('dev1', fields)).toBe(
      'v3|dev1|gateway-client|backend|operator|operator.admin,operator.read,operator.write|1795342719334|tok-123|67af8a12-a912-4951-8cef-2716571c5111|linux|server',
    );
    expect(connectSignaturePayload('dev1', { ...fields, token: undefined, deviceFamily: undefined, scopes: [] })).toBe(
      'v3|dev1|gateway-client|backend|operator||1795342719334||67af8a12-a912-4951-8cef-2716571c5111|linux|',
    );
  });

  it('signs the v3 payload so that crypto.verify accepts it with the public key', () => {
    const id = createDeviceIdentity();
    const signature = signConnect(id, fields);
    expect(signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    const sig = Buffer.from(signature, 'base64url');
    const key = publicKeyOf(id.publicKeyRaw);
    const payload = Buffer.from(connectSignaturePayload(id.deviceId, fields), 'utf8');
    expect(verify(null, payload, key, sig)).toBe(true);
    // Any changed field breaks it, and another device's key does not verify it.
    expect(verify(null, Buffer.from(connectSignaturePayload(id.deviceId, { ...fields, nonce: 'other' }), 'utf8'), key, sig)).toBe(false);
    expect(verify(null, payload, publicKeyOf(createDeviceIdentity().publicKeyRaw), sig)).toBe(false);
  });
});
