import { afterEach, describe, expect, it, vi } from 'vitest';
import { closeInOrder } from './service.js';

describe('closeInOrder', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('closes in order, skips what was never made, names a stuck step and still closes the ones after it', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const order: string[] = [];
    const started = performance.now();
    await closeInOrder(
      [
        ['the browser', () => order.push('browser')],
        ['the web', undefined],
        ['the backend', () => new Promise<void>(() => order.push('backend (never ends)'))],
        ['the agent host', async () => order.push('host')],
      ],
      { limitMs: 200 },
    );
    expect(order).toEqual(['browser', 'backend (never ends)', 'host']);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/^clean-up: closing the backend had not finished after \d+ ms; going on without it$/);
  });

  it('a close that fails fails the clean-up (a real error is not a stuck step)', async () => {
    await expect(
      closeInOrder([
        [
          'the web',
          () => {
            throw new Error('boom');
          },
        ],
      ]),
    ).rejects.toThrow('boom');
  });
});
