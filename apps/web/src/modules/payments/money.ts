import { formatUnits, parseUnits } from 'viem';

/**
 * USD amounts are decimal strings everywhere (`0.05`, `1.00`) and exact integers of micro-dollars in arithmetic: a
 * float never touches money. The database keeps them as numeric(20, 6).
 */
export const USD_DECIMALS = 6;

/** The reference's amount tolerance: a transfer may fall short of the price by at most this much (rounding). */
export const AMOUNT_TOLERANCE_USD = '0.0001';

const USD_FORMAT = /^\d{1,12}(?:\.\d{1,6})?$/;

/** Micro-dollars of a USD decimal string (`0.05` → 50000n), or null when it is not one (sign, exponent, 7+ decimals). */
export function parseUsd(value: unknown): bigint | null {
  if (typeof value !== 'string' || !USD_FORMAT.test(value)) return null;
  return parseUnits(value, USD_DECIMALS);
}

/** `50000n` → `0.05`, `1000000n` → `1.00`, `100n` → `0.0001`: at least two decimals, no trailing zeros past them. */
export function formatUsd(micros: bigint): string {
  const [whole, fraction = ''] = formatUnits(micros, USD_DECIMALS).split('.');
  return `${whole}.${fraction.padEnd(2, '0')}`;
}

/** A numeric column as read from the database (`0.950000`) in the API's form (`0.95`). */
export function normalizeUsd(value: string): string {
  const micros = parseUsd(value.startsWith('-') ? value.slice(1) : value);
  if (micros === null) throw new Error(`Not a USD amount: ${value}`);
  return formatUsd(value.startsWith('-') ? -micros : micros);
}

/**
 * The least a payment of `usd` must transfer, in the token's smallest unit: the amount less the tolerance. The token
 * is a USD stablecoin (1 token = 1 USD), so the USD string is also the token amount.
 */
export function minimumTokenUnits(usd: string, decimals: number): bigint {
  const required = parseUnits(usd, decimals) - parseUnits(AMOUNT_TOLERANCE_USD, decimals);
  return required > 0n ? required : 1n;
}
