import { decryptSecret, DomainError, ERROR_CATALOGUE, encryptSecret, parseEncryptionKey } from '@aop/core';
import type { Database, Tx } from '@aop/db';
import type { WebConfig } from '../../config.js';

/** Spec §8: a personal trading key is at most 512 characters. */
export const TRADING_KEY_MAX = 512;

/** Spec §4.13: the chains asked for when the caller names none. */
export const DEFAULT_CHAINS = 'base,polygon,mainnet,solana,unichain';

export const NO_KEY_MESSAGE = ERROR_CATALOGUE.NO_TRADING_KEY.message;
export const UNREADABLE_KEY_MESSAGE = ERROR_CATALOGUE.UNREADABLE_TRADING_KEY.message;

type TradingConfig = Pick<WebConfig, 'trading' | 'encryptionKey'>;

/** AES-256-GCM with the user id as associated data: a sealed key moved to another user's row does not open. */
export const sealTradingKey = (config: Pick<WebConfig, 'encryptionKey'>, userId: string, apiKey: string): string =>
  encryptSecret(parseEncryptionKey(config.encryptionKey), apiKey, userId);

export async function hasTradingKey(trx: Tx, userId: string): Promise<boolean> {
  const row = await trx.selectFrom('trading_keys').select('user_id').where('user_id', '=', userId).executeTakeFirst();
  return row !== undefined;
}

/** Stores (or replaces) the user's personal key, sealed. */
export async function saveTradingKey(trx: Tx, config: Pick<WebConfig, 'encryptionKey'>, userId: string, apiKey: string): Promise<void> {
  const keyEnc = sealTradingKey(config, userId, apiKey);
  const now = new Date();
  await trx
    .insertInto('trading_keys')
    .values({ user_id: userId, key_enc: keyEnc, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ key_enc: keyEnc, updated_at: now }))
    .execute();
}

export async function deleteTradingKey(trx: Tx, userId: string): Promise<boolean> {
  const result = await trx.deleteFrom('trading_keys').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * The key a user's trading requests carry: their personal key, else the
 * platform key, else 503 with `needsKey: true` (spec §4.13).
 */
export async function resolveTradingKey(db: Database, config: TradingConfig, userId: string): Promise<string> {
  const row = await db.withUser(userId, (trx) =>
    trx.selectFrom('trading_keys').select('key_enc').where('user_id', '=', userId).executeTakeFirst(),
  );
  if (row) {
    try {
      return decryptSecret(parseEncryptionKey(config.encryptionKey), row.key_enc, userId);
    } catch {
      // The encryption key changed or the row was altered: the user has to save the key again.
      throw new DomainError('UNREADABLE_TRADING_KEY', undefined, { needsKey: true });
    }
  }
  if (config.trading.platformKey) return config.trading.platformKey;
  throw new DomainError('NO_TRADING_KEY', undefined, { needsKey: true });
}

export interface TradingCall {
  method: 'GET' | 'POST';
  /** Path below the API URL, already encoded, e.g. `/agent/balances?chains=base`. */
  path: string;
  json?: unknown;
}

export interface TradingAnswer {
  status: number;
  body: unknown;
}

/** Why a call failed, in words that never carry the key or the upstream's body. */
export class TradingRequestError extends DomainError<'TRADING_REQUEST_FAILED'> {
  constructor(readonly reason: string) {
    super('TRADING_REQUEST_FAILED', { reason });
  }
}

/**
 * One call to the trading service with `X-API-Key`. A JSON answer comes back
 * with the upstream status whatever it is; an unreachable service, a timeout
 * (`config.trading.timeoutMs`, covering the body too) or a non-JSON answer
 * throws a 500 `TradingRequestError`.
 */
export async function callTradingApi(config: Pick<WebConfig, 'trading'>, apiKey: string, call: TradingCall): Promise<TradingAnswer> {
  const { apiUrl, timeoutMs } = config.trading;
  const signal = AbortSignal.timeout(timeoutMs);
  const headers: Record<string, string> = { 'x-api-key': apiKey, accept: 'application/json' };
  if (call.json !== undefined) headers['content-type'] = 'application/json';
  let status: number;
  let text: string;
  try {
    const res = await fetch(`${apiUrl}${call.path}`, {
      method: call.method,
      headers,
      ...(call.json !== undefined ? { body: JSON.stringify(call.json) } : {}),
      signal,
      // A redirect is not followed: the key must not travel to another host.
      redirect: 'manual',
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    if (signal.aborted) throw new TradingRequestError(`timed out after ${timeoutMs} ms`);
    throw new TradingRequestError(describeFetchError(err));
  }
  try {
    if (text.trim() === '') throw new Error('empty');
    return { status, body: JSON.parse(text) as unknown };
  } catch {
    throw new TradingRequestError(`response was not JSON (HTTP ${status})`);
  }
}

/** A short, key-free reason for a network failure. */
function describeFetchError(err: unknown): string {
  const code = (err as { cause?: { code?: unknown } })?.cause?.code;
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH') {
    return `service unreachable (${code})`;
  }
  return 'service unreachable';
}
