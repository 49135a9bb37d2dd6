import type { GatewayConnection } from '@aop/gateway-client';
import { describe, expect, it } from 'vitest';
import { applyConfig } from './roster.js';

/** A connection whose `config.get` answers `got`, recording every call. */
function connection(got: Record<string, unknown>) {
  const calls: Array<{ method: string; params: unknown }> = [];
  const conn = {
    request: async (method: string, params: unknown) => {
      calls.push({ method, params });
      return method === 'config.get' ? got : { ok: true };
    },
  } as unknown as GatewayConnection;
  return { conn, calls };
}

describe('applyConfig', () => {
  it('applies the config based on the current one; with unlessRead, not when the process already runs its file', async () => {
    const stale = connection({ hash: 'raw-1', configRevisionHash: 'rev-2', appliedConfigHash: 'rev-1' });
    expect(await applyConfig(stale.conn, '{}', 'a join', { unlessRead: true })).toBe('applied');
    expect(stale.calls.map((c) => c.method)).toEqual(['config.get', 'config.apply']);
    expect(stale.calls[1]?.params).toEqual({ raw: '{}', baseHash: 'raw-1', note: 'platform: a join' });

    const read = connection({ hash: 'raw-2', configRevisionHash: 'rev-2', appliedConfigHash: 'rev-2' });
    expect(await applyConfig(read.conn, '{}', 'a join', { unlessRead: true })).toBe('read');
    expect(read.calls.map((c) => c.method)).toEqual(['config.get']);
    // Without unlessRead (every other roster change) it applies all the same; a gateway that reports no applied hash
    // is not taken to have read anything.
    expect(await applyConfig(read.conn, '{}', 'a change')).toBe('applied');
    const silent = connection({ hash: 'raw-3', configRevisionHash: 'rev-3' });
    expect(await applyConfig(silent.conn, '{}', 'a join', { unlessRead: true })).toBe('applied');
  });
});
