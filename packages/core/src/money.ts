import { DomainError } from './errors.js';

/**
 * Exact money: amounts are decimal text outside and integers of the currency's smallest unit inside, so a float never
 * decides a cent. Every royalty or instant split divides its total with `allocateByShares`, so the parts always add up
 * to the total and two splits of the same figures agree to the last unit.
 */

/**
 * A non-negative JSON number as an exact count of 10^-decimals units (33.33 with 2 decimals → 3333n), or undefined
 * when it is negative, not finite, or has more decimals. `String(n)` is the shortest text that reads back as the same
 * double, which is the decimal the client wrote; exponent forms (1e-7, 1e21) are refused by the pattern.
 */
export function scaledInteger(value: number, decimals: number): bigint | undefined {
  if (!Number.isFinite(value) || value < 0) return undefined;
  return scaledDecimal(String(value), decimals);
}

/**
 * A decimal string (`250`, `0.05`; no sign, no exponent) as an exact count of 10^-decimals units, or undefined when it
 * is not one or has more decimals. The caller bounds the size.
 */
export function scaledDecimal(value: string, decimals: number): bigint | undefined {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(value);
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  if (fraction.length > decimals) return undefined;
  return BigInt(match[1] as string) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
}

/** 1234n with 2 decimals → '12.34'. */
export function formatScaled(value: bigint, decimals: number): string {
  const unit = 10n ** BigInt(decimals);
  const whole = value / unit;
  if (decimals === 0) return whole.toString();
  return `${whole}.${(value % unit).toString().padStart(decimals, '0')}`;
}

/** Shares are counted in hundredths of a percent: 100 % = 10 000. */
export const FULL_SHARE = 10_000n;
/** A share's decimals (hundredths of a percent). */
export const SHARE_DECIMALS = 2;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** A split's recipient: the address lower-case, the share in hundredths of a percent. */
export interface ShareRecipient {
  address: string;
  share: bigint;
}

/**
 * The recipients of a split (royalty or instant), each checked, shares summed as integers (spec §8: each 0–100, sum
 * exactly 100; an address once). Errors name the entry's index, which a schema's error cannot. The caller bounds the
 * list's length.
 */
export function parseShareRecipients(entries: readonly unknown[]): ShareRecipient[] {
  const seen = new Set<string>();
  const recipients = entries.map((entry, i) => {
    const item = (typeof entry === 'object' && entry !== null && !Array.isArray(entry) ? entry : {}) as Record<string, unknown>;
    if (typeof item.address !== 'string' || !ADDRESS.test(item.address)) throw new DomainError('RECIPIENT_ADDRESS_INVALID', { i });
    const address = item.address.toLowerCase();
    if (seen.has(address)) throw new DomainError('RECIPIENT_ADDRESS_LISTED_TWICE', { i });
    seen.add(address);
    const share = typeof item.share === 'number' && item.share <= 100 ? scaledInteger(item.share, SHARE_DECIMALS) : undefined;
    if (share === undefined) throw new DomainError('RECIPIENT_SHARE_INVALID', { i });
    return { address, share };
  });
  if (recipients.reduce((sum, r) => sum + r.share, 0n) !== FULL_SHARE) throw new DomainError('SHARES_SUM_EXACTLY_100');
  return recipients;
}

/**
 * Splits `total` (in the currency's smallest unit) by shares in hundredths of a percent (adding up to 10 000) so that
 * the parts add up to the total exactly: each part is the floor of its exact share, and the units left over (fewer
 * than the number of recipients) go one each to the largest remainders, the earlier recipient first on a tie. A zero
 * share never receives a unit.
 */
export function allocateByShares(total: bigint, shares: readonly bigint[]): bigint[] {
  const exact = shares.map((share) => total * share);
  const parts = exact.map((value) => value / FULL_SHARE);
  let left = total - parts.reduce((sum, part) => sum + part, 0n);
  const remainder = (i: number) => (exact[i] as bigint) % FULL_SHARE;
  const order = shares.map((_, i) => i).sort((a, b) => (remainder(a) === remainder(b) ? a - b : remainder(b) > remainder(a) ? 1 : -1));
  for (const i of order) {
    if (left === 0n) break;
    parts[i] = (parts[i] as bigint) + 1n;
    left -= 1n;
  }
  return parts;
}
