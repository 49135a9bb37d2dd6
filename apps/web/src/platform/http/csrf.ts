import { hmacSha256Hex, randomHex, safeEqual } from '@aop/core';

/** CSRF tokens live one hour and are good for one sign-in attempt. */
export const CSRF_TTL_MS = 60 * 60 * 1000;
export const CSRF_COOKIE = 'service-csrf';

const sign = (secret: string, token: string) => hmacSha256Hex(secret, `csrf:${token}`);

/** `{token}:{signed}` where token is `<random>.<issued-at ms>` and signed its HMAC. */
export function issueCsrfToken(secret: string, now: number): string {
  const token = `${randomHex(16)}.${now}`;
  return `${token}:${sign(secret, token)}`;
}

const FORMAT = /^([0-9a-f]{32}\.(\d{13})):([0-9a-f]{64})$/;

/** The token part when the value is well-formed, correctly signed and not expired; otherwise null. */
export function verifyCsrfToken(secret: string, value: string | undefined, now: number): string | null {
  const match = value ? FORMAT.exec(value) : null;
  if (!match) return null;
  const [, token, issuedAt, signature] = match as unknown as [string, string, string, string];
  if (!safeEqual(signature, sign(secret, token))) return null;
  const age = now - Number(issuedAt);
  if (age < 0 || age > CSRF_TTL_MS) return null;
  return token;
}
