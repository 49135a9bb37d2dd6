import { describe, expect, it } from 'vitest';
import {
  Backoff,
  DEFAULT_MEMORY_PER_AGENT_BYTES,
  DEFAULT_RESERVE_BYTES,
  budgetFromPeak,
  capacityMessage,
  computeCapacity,
} from './capacity.js';
import { parseStat } from '../local/proc.js';

const GIB = 1024 ** 3;

describe('computeCapacity', () => {
  const base = {
    agentsRssBytes: 0,
    activeAgents: 0,
    memoryPerAgentBytes: DEFAULT_MEMORY_PER_AGENT_BYTES,
    reserveBytes: DEFAULT_RESERVE_BYTES,
  };

  it('fits (available − reserve) / 1.5 GiB gateways: 12 on a 20 GiB-free host', () => {
    expect(computeCapacity({ ...base, availableBytes: 20 * GIB })).toEqual({ maxAgents: 12, activeAgents: 0, hasRoom: true });
    expect(computeCapacity({ ...base, availableBytes: 3.4 * GIB }).maxAgents).toBe(0);
    expect(computeCapacity({ ...base, availableBytes: 3.5 * GIB }).maxAgents).toBe(1);
  });

  it('counts the memory our own gateways already hold as part of the budget', () => {
    // 4 gateways hold 5 GiB; 15 GiB are still available → (15 + 5 − 2) / 1.5 = 12.
    const capacity = computeCapacity({ ...base, availableBytes: 15 * GIB, agentsRssBytes: 5 * GIB, activeAgents: 4 });
    expect(capacity).toEqual({ maxAgents: 12, activeAgents: 4, hasRoom: true });
    expect(computeCapacity({ ...base, availableBytes: 3 * GIB, agentsRssBytes: 17 * GIB, activeAgents: 12 }).hasRoom).toBe(false);
  });

  it('honours the operator cap and the configurable budget', () => {
    expect(computeCapacity({ ...base, availableBytes: 20 * GIB, maxAgents: 3, activeAgents: 3 })).toEqual({
      maxAgents: 3,
      activeAgents: 3,
      hasRoom: false,
    });
    expect(computeCapacity({ ...base, availableBytes: 20 * GIB, memoryPerAgentBytes: 1 * GIB, reserveBytes: 0 }).maxAgents).toBe(20);
    expect(computeCapacity({ ...base, availableBytes: 1 * GIB, reserveBytes: 4 * GIB }).maxAgents).toBe(0);
  });

  it('budgets measured gateways at their peak PSS × margin, and a new one at the largest measured budget', () => {
    // 4 gateways measured at a 0.6 GiB peak, budgeted with a 1.5 margin (0.9 GiB each), hold 2.4 GiB; 20 GiB are available:
    // (20 + 2.4 − 2 − 4 × 0.9) / 0.9 = 18 more, 22 in all — where the flat 1.5 GiB allowed 13.
    const measured = {
      ...base,
      availableBytes: 20 * GIB,
      agentsRssBytes: 2.4 * GIB,
      activeAgents: 4,
      measuredBudgetsBytes: Array(4).fill(budgetFromPeak(0.6 * GIB, 1.5)),
      newAgentBytes: budgetFromPeak(0.6 * GIB, 1.5),
    };
    expect(budgetFromPeak(0.6 * GIB, 1.5)).toBe(Math.ceil(0.9 * GIB));
    expect(computeCapacity(measured)).toEqual({ maxAgents: 22, activeAgents: 4, hasRoom: true });
    expect(computeCapacity({ ...measured, measuredBudgetsBytes: undefined, newAgentBytes: undefined }).maxAgents).toBe(13);
    // A gateway not measured yet (still starting) counts at the default budget.
    expect(computeCapacity({ ...measured, activeAgents: 5 }).maxAgents).toBe(21);
    const full = { ...measured, availableBytes: 1 * GIB };
    expect(capacityMessage(computeCapacity(full), full)).toBe(
      'Host is at capacity: 4 of 1 agents running (0.9 GiB budgeted per agent from measured memory, 1.0 GiB available)',
    );
  });

  it('explains a full host', () => {
    const input = { ...base, availableBytes: 2.5 * GIB, agentsRssBytes: 3 * GIB, activeAgents: 2 };
    expect(capacityMessage(computeCapacity(input), input)).toBe(
      'Host is at capacity: 2 of 2 agents running (1.5 GiB budgeted per agent, 2.5 GiB available)',
    );
  });
});

describe('Backoff', () => {
  it('doubles from 1 s up to 30 s', () => {
    const backoff = new Backoff();
    expect(Array.from({ length: 8 }, () => backoff.next())).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('starts again at 1 s after 60 s of health, not before', () => {
    const backoff = new Backoff();
    backoff.next();
    backoff.next();
    expect(backoff.next(59_999)).toBe(4_000);
    expect(backoff.next(60_000)).toBe(1_000);
    expect(backoff.next()).toBe(2_000);
    backoff.reset();
    expect(backoff.next()).toBe(1_000);
  });

  it('takes its bounds from options', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 250, resetAfterMs: 1_000 });
    expect([backoff.next(), backoff.next(), backoff.next(), backoff.next(1_000)]).toEqual([100, 200, 250, 100]);
  });
});

describe('parseStat', () => {
  it('reads ppid, cpu ticks and start time even when the command name has spaces and parentheses', () => {
    const line =
      '4242 (openclaw (gw) x) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 11 0 98765 1000000 2000 18446744073709551615';
    expect(parseStat(line)).toEqual({ pid: 4242, state: 'S', ppid: 17, cpuTicks: 300, startTicks: 98765 });
  });
});
