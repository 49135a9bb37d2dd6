import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const sha256Hex = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

export const hmacSha256Hex = (secret: string | Buffer, data: string): string => createHmac('sha256', secret).update(data).digest('hex');

/** Random secret material as hex (for tokens, keys and nonces). */
export const randomHex = (bytes: number): string => randomBytes(bytes).toString('hex');

/**
 * Compares two secrets in constant time. Both sides are hashed first so that
 * neither the content nor the length of the expected value leaks through timing.
 */
export function safeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && Buffer.byteLength(a) === Buffer.byteLength(b);
}

const GCM_VERSION = 'v1';

/** Reads a 256-bit key given as 64 hex characters or base64 of 32 bytes. */
export function parseEncryptionKey(value: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32) throw new Error('Encryption key must be 32 bytes (64 hex characters or base64)');
  return key;
}

/** AES-256-GCM; output `v1.<iv>.<tag>.<ciphertext>`, each part base64url. */
export function encryptSecret(key: Buffer, plaintext: string, associatedData?: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (associatedData) cipher.setAAD(Buffer.from(associatedData));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [GCM_VERSION, iv, tag, ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

/** Inverse of `encryptSecret`; throws when the value was altered or the key is wrong. */
export function decryptSecret(key: Buffer, sealed: string, associatedData?: string): string {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== GCM_VERSION || !iv || !tag || ciphertext === undefined) throw new Error('Malformed sealed secret');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  if (associatedData) decipher.setAAD(Buffer.from(associatedData));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}
