import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret, hmacSha256Hex, parseEncryptionKey, randomHex, safeEqual, sha256Hex } from './crypto.js';
import { newId } from './ids.js';

describe('crypto helpers', () => {
  const key = parseEncryptionKey(randomHex(32));

  it('AES-256-GCM round-trips and refuses tampering, a wrong key or other associated data', () => {
    const sealed = encryptSecret(key, 'trading-key-123', 'usr_1');
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain('trading-key-123');
    expect(decryptSecret(key, sealed, 'usr_1')).toBe('trading-key-123');
    expect(encryptSecret(key, 'same', 'a')).not.toBe(encryptSecret(key, 'same', 'a'));
    const parts = sealed.split('.');
    const flipped = Buffer.from(parts[3]!, 'base64url');
    flipped[0]! ^= 1;
    expect(() => decryptSecret(key, [parts[0], parts[1], parts[2], flipped.toString('base64url')].join('.'), 'usr_1')).toThrow();
    expect(() => decryptSecret(parseEncryptionKey(randomHex(32)), sealed, 'usr_1')).toThrow();
    expect(() => decryptSecret(key, sealed, 'usr_2')).toThrow();
    expect(() => decryptSecret(key, 'garbage', 'usr_1')).toThrow('Malformed');
  });

  it('reads keys as 64 hex or base64 of 32 bytes, nothing else', () => {
    expect(parseEncryptionKey(Buffer.alloc(32, 7).toString('base64'))).toHaveLength(32);
    expect(() => parseEncryptionKey('short')).toThrow();
  });

  it('HMAC-SHA256 in lowercase hex matches node:crypto', () => {
    expect(hmacSha256Hex('k', 'a:b:c')).toBe(createHmac('sha256', 'k').update('a:b:c').digest('hex'));
    expect(sha256Hex('x')).toHaveLength(64);
  });

  it('safeEqual compares content and length', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
  });

  it('ids carry their prefix and do not repeat', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newId('backup')));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^bkp_[A-Za-z0-9_-]{22}$/);
  });
});
