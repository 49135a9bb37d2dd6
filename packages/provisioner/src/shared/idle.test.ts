import { describe, expect, it } from 'vitest';
import type { GatewayConnection } from '@aop/gateway-client';
import {
  askIdle,
  dueToWake,
  evictionLogLine,
  hibernateIdlest,
  hibernationFor,
  hibernationOf,
  idlestOf,
  jobActivity,
  keepsAwake,
  maySleep,
  readGatewayActivity,
  wakeAtFor,
} from './idle.js';

// Hibernation's rules, shared by the local, docker and kubernetes hosts (each host's own test drives them through its
// gateways; these are the edges).

const NOW = Date.parse('2026-11-27T12:00:00Z');
const MIN = 60_000;
const options = { idleMs: 15 * MIN, wakeLeadMs: 90_000 };
const quiet = { lastActiveMs: NOW - 20 * MIN, busy: false, nextDueMs: null, dueByAgent: {} };
const since = { readyAt: NOW - 60 * MIN, lastActiveAt: null };

describe('hibernation rules (shared/idle.ts)', () => {
  it('sleeps only after idleMs of nothing: the gateway’s own activity, the host’s last sight, and the start all count', () => {
    expect(maySleep(quiet, since, options, NOW)).toBe(true);
    expect(maySleep({ ...quiet, lastActiveMs: NOW - 14 * MIN }, since, options, NOW)).toBe(false);
    expect(maySleep(quiet, { readyAt: NOW - 60 * MIN, lastActiveAt: NOW - MIN }, options, NOW)).toBe(false);
    expect(maySleep(quiet, { readyAt: NOW - 5 * MIN, lastActiveAt: null }, options, NOW)).toBe(false);
  });

  it('never sleeps while a turn or job runs or a client is connected', () => {
    expect(maySleep({ ...quiet, busy: true }, since, options, NOW)).toBe(false);
  });

  it('stays awake for a job due before a sleep would be worth it, or overdue; sleeps before a later one', () => {
    const due = (ms: number) => maySleep({ ...quiet, nextDueMs: NOW + ms }, since, options, NOW);
    expect(due(-MIN)).toBe(false); // overdue: it is about to run
    expect(due(options.wakeLeadMs + options.idleMs - 1)).toBe(false);
    expect(due(options.wakeLeadMs + options.idleMs)).toBe(true);
  });

  it('wakes the lead time before the next due job, and not at all without one', () => {
    expect(wakeAtFor(NOW + 10 * MIN, 90_000)).toBe('2026-11-27T12:08:30.000Z');
    expect(wakeAtFor(null, 90_000)).toBeNull();
    expect(dueToWake({ wakeAt: '2026-11-27T12:08:30.000Z' }, NOW + 8.5 * MIN)).toBe(true);
    expect(dueToWake({ wakeAt: '2026-11-27T12:08:30.000Z' }, NOW + 8 * MIN)).toBe(false);
    expect(dueToWake({ wakeAt: null }, NOW)).toBe(false);
    // Checked every minute: woken at the last check before its wake time, not up to a minute after it.
    expect(dueToWake({ wakeAt: '2026-11-27T12:08:30.000Z' }, NOW + 7.5 * MIN, MIN)).toBe(true);
    expect(dueToWake({ wakeAt: '2026-11-27T12:08:30.000Z' }, NOW + 7.4 * MIN, MIN)).toBe(false);
    expect(dueToWake({ wakeAt: null }, NOW, MIN)).toBe(false);
    expect(dueToWake(null, NOW)).toBe(false);
  });

  // OpenClaw's heartbeat as `cron.list` lists it (openclaw@2026.9.6, a channel-less agent, read from a real gateway).
  const beat = (state: Record<string, unknown>, top: Record<string, unknown> = {}) => ({
    id: '739cfd4a-439e-4495-9120-b35422a54453',
    declarationKey: 'heartbeat:main',
    name: 'heartbeat-main',
    enabled: true,
    schedule: { kind: 'every', everyMs: 30 * MIN },
    sessionTarget: 'main',
    payload: { kind: 'heartbeat' },
    state,
    nextRunAtMs: state.nextRunAtMs,
    ...top,
  });
  const skippedFor = (reason: string) =>
    beat(
      {
        nextRunAtMs: NOW + 10 * MIN,
        lastRunAtMs: NOW - 20 * MIN,
        lastRunStatus: 'skipped',
        lastStatus: 'skipped',
        lastError: `heartbeat skipped: ${reason}`,
        consecutiveSkipped: 3,
      },
      { lastRunAtMs: NOW - 20 * MIN, lastRunStatus: 'skipped', lastRunError: `heartbeat skipped: ${reason}` },
    );

  it('a skipped run is no activity, and a heartbeat skipped for a standing reason is not worth waking for', () => {
    // No destination (every agent without a channel): skipped at every beat, so neither activity nor a reason to wake.
    expect(jobActivity(skippedFor('no-route'))).toEqual({ lastRanMs: 0, running: false, nextDueMs: 0 });
    expect(jobActivity(skippedFor('alerts-disabled')).nextDueMs).toBe(0);
    expect(jobActivity(skippedFor('empty-heartbeat-file')).nextDueMs).toBe(0);
    // Skipped for the moment (a turn was running): the next beat may run, so it still counts as due.
    expect(jobActivity(skippedFor('requests-in-flight'))).toEqual({ lastRanMs: 0, running: false, nextDueMs: NOW + 10 * MIN });
    // A beat that ran (e.g. `target: "none"`) called the model: activity, and the next one is due.
    const ran = beat({ nextRunAtMs: NOW + 10 * MIN, lastRunAtMs: NOW - 20 * MIN, lastRunStatus: 'ok', lastStatus: 'ok' });
    expect(jobActivity(ran)).toEqual({ lastRanMs: NOW - 20 * MIN, running: false, nextDueMs: NOW + 10 * MIN });
    // Never ran yet (a gateway just started): due, whatever it will do.
    expect(jobActivity(beat({ nextRunAtMs: NOW + 10 * MIN })).nextDueMs).toBe(NOW + 10 * MIN);
    // Any other job skipped with those words is still due: only OpenClaw's heartbeat is known to skip again.
    const job = { ...skippedFor('no-route'), declarationKey: undefined, name: 'daily-report', payload: { kind: 'agentTurn' } };
    expect(jobActivity(job).nextDueMs).toBe(NOW + 10 * MIN);
    expect(jobActivity({ ...job, state: { runningAtMs: NOW - 1_000 } }).running).toBe(true);
  });

  it('an idle agent whose heartbeat is skipped at every beat may sleep, with no wake for it; its other jobs still wake it', async () => {
    const gateway = (jobs: unknown[]) =>
      ({
        request: async (method: string) => {
          if (method === 'sessions.list') return { sessions: [{ key: 'agent:main:main', updatedAt: NOW - 40 * MIN }] };
          if (method === 'cron.list') return { jobs };
          if (method === 'system-presence') return [{ reason: 'self' }];
          throw new Error(`unexpected ${method}`);
        },
      }) as unknown as GatewayConnection;
    // Before: the skipped beat 20 minutes ago read as activity and the next one (10 minutes away) as due, so with the
    // default 30-minute heartbeat and 15 idle minutes an agent never slept.
    const standing = await readGatewayActivity(gateway([skippedFor('no-route')]));
    expect(standing).toEqual({ lastActiveMs: NOW - 40 * MIN, busy: false, nextDueMs: null, dueByAgent: {} });
    expect(maySleep(standing, since, options, NOW)).toBe(true);
    const dreaming = { id: 'd', name: 'Memory Dreaming Promotion', enabled: true, state: { nextRunAtMs: NOW + 15 * 60 * MIN } };
    expect((await readGatewayActivity(gateway([skippedFor('no-route'), dreaming]))).nextDueMs).toBe(NOW + 15 * 60 * MIN);
    const moment = await readGatewayActivity(gateway([skippedFor('requests-in-flight')]));
    expect(moment.nextDueMs).toBe(NOW + 10 * MIN);
    expect(maySleep(moment, since, options, NOW)).toBe(false);
  });

  it("reads each agent's next due job, and a gateway asleep wakes for those of the agents that still want to run", async () => {
    const gateway = {
      request: async (method: string) => {
        if (method === 'sessions.list') return { sessions: [] };
        if (method === 'system-presence') return [{ reason: 'self' }];
        return {
          jobs: [
            { id: 'a', agentId: 'agt_two', enabled: true, state: { nextRunAtMs: NOW + 20 * MIN } },
            { id: 'b', agentId: 'agt_two', enabled: true, nextRunAtMs: NOW + 10 * MIN },
            { id: 'c', agentId: 'agt_three', enabled: false, nextRunAtMs: NOW + 5 * MIN },
            { id: 'd', agentId: 'agt_three', enabled: true, nextRunAtMs: NOW + 30 * MIN },
            { id: 'e', enabled: true, nextRunAtMs: NOW + 40 * MIN }, // no agent named: the default one's
          ],
        };
      },
    } as unknown as GatewayConnection;
    const activity = await readGatewayActivity(gateway);
    expect(activity.nextDueMs).toBe(NOW + 10 * MIN);
    expect(activity.dueByAgent).toEqual({ agt_two: NOW + 10 * MIN, agt_three: NOW + 30 * MIN, main: NOW + 40 * MIN });

    const asleep = hibernationOf(activity, 90_000, NOW);
    expect(asleep).toEqual({
      since: new Date(NOW).toISOString(),
      wakeAt: wakeAtFor(NOW + 10 * MIN, 90_000),
      dueByAgent: activity.dueByAgent,
    });
    const withoutTwo = hibernationFor(asleep, new Set(['main', 'agt_three']), 90_000);
    expect(withoutTwo.wakeAt).toBe(wakeAtFor(NOW + 30 * MIN, 90_000));
    expect(withoutTwo.since).toBe(asleep.since);
    expect(hibernationFor(withoutTwo, new Set(['main']), 90_000).wakeAt).toBe(wakeAtFor(NOW + 40 * MIN, 90_000));
    expect(hibernationFor(withoutTwo, new Set(), 90_000).wakeAt).toBeNull();
    // Put to sleep with one time (an operator's `hibernate`, a record from before due times by agent): it stands.
    const oneTime = hibernationOf({ nextDueMs: NOW + 10 * MIN }, 90_000, NOW);
    expect(hibernationFor(oneTime, new Set(), 90_000)).toEqual(oneTime);
  });

  it('keeps agents with a messaging channel awake: a token given, or WhatsApp linked by QR code', () => {
    expect(keepsAwake({}, {})).toBe(false);
    expect(keepsAwake({}, undefined)).toBe(false);
    expect(keepsAwake({}, { telegram: 'sealed-token' })).toBe(true);
    expect(keepsAwake({}, { telegram: '' })).toBe(false);
    expect(keepsAwake({ channels: { whatsapp: { enabled: true } } }, {})).toBe(true);
    expect(keepsAwake({ channels: { whatsapp: { enabled: false } } }, {})).toBe(false);
  });

  it('asks the gateway only once it has been idle long enough and may sleep at all; a gateway that cannot answer stays awake', async () => {
    let reads = 0;
    const read = async () => {
      reads += 1;
      return quiet;
    };
    const clock = () => NOW;
    const awake = { keptAwake: () => false, read };
    expect(await askIdle({ readyAt: NOW - 5 * MIN, lastActiveAt: null }, options, awake, clock)).toBeNull();
    expect(await askIdle(since, options, { keptAwake: async () => true, read }, clock)).toBeNull();
    expect(reads).toBe(0);
    expect(await askIdle(since, options, awake, clock)).toEqual({
      lastActiveAt: NOW - 20 * MIN,
      sleep: true,
      nextDueMs: null,
      dueByAgent: {},
    });
    const failing = { keptAwake: () => false, read: () => Promise.reject(new Error('connection refused')) };
    expect(await askIdle(since, options, failing, clock)).toBeNull();
    const talking = { keptAwake: () => false, read: async () => ({ ...quiet, lastActiveMs: NOW - MIN }) };
    expect(await askIdle(since, options, talking, clock)).toEqual({
      lastActiveAt: NOW - MIN,
      sleep: false,
      nextDueMs: null,
      dueByAgent: {},
    });
    expect(reads).toBe(1);
  });

  it('eviction takes the agent idle the longest that may sleep; one that may not, or cannot be asked, is never taken', async () => {
    const agents = [
      { id: 'recent', readyAt: NOW - 60 * MIN, verdict: { lastActiveAt: NOW - 5 * MIN, sleep: true, nextDueMs: null } },
      { id: 'oldest', readyAt: NOW - 60 * MIN, verdict: { lastActiveAt: NOW - 30 * MIN, sleep: true, nextDueMs: NOW + 9 * MIN } },
      // Started after its last activity: idle since it became ready.
      { id: 'restarted', readyAt: NOW - 10 * MIN, verdict: { lastActiveAt: NOW - 50 * MIN, sleep: true, nextDueMs: null } },
      { id: 'busy', readyAt: NOW - 90 * MIN, verdict: { lastActiveAt: NOW - 90 * MIN, sleep: false, nextDueMs: null } },
      { id: 'unreachable', readyAt: NOW - 90 * MIN, verdict: null },
    ];
    const ask = async (a: (typeof agents)[number]) => {
      if (a.id === 'unreachable') throw new Error('connection refused');
      return a.verdict;
    };
    const idlest = await idlestOf(agents, ask, (a) => a.readyAt);
    expect(idlest).toEqual({ candidate: agents[1], since: NOW - 30 * MIN, nextDueMs: NOW + 9 * MIN });
    expect(await idlestOf(agents.slice(3), ask, (a) => a.readyAt)).toBeNull();
    expect(evictionLogLine(NOW - 150_000, 'agt_new', NOW)).toBe(
      '[host] idle for 2.5 min and agent agt_new needs the room: hibernating early',
    );
  });

  it('a full host makes room from the idlest agent, never from one with an operation under way, and only with hibernation on', async () => {
    const agent = (agentId: string, pending: number) => ({
      record: { agentId },
      readyAt: NOW - 60 * MIN,
      lock: Promise.resolve(),
      pending,
    });
    const [starting, quietOne, requester] = [agent('starting', 1), agent('quiet', 0), agent('new', 0)];
    const verdicts: Record<string, number> = { starting: NOW - 50 * MIN, quiet: NOW - 10 * MIN, new: NOW - 90 * MIN };
    const slept: string[] = [];
    const lines: string[] = [];
    const host = {
      ask: async (a: typeof quietOne, idleMs: number) => {
        expect(idleMs).toBe(5 * MIN);
        return { lastActiveAt: verdicts[a.record.agentId] ?? 0, sleep: true, nextDueMs: null };
      },
      log: (_: typeof quietOne, line: string) => lines.push(line),
      hibernate: async (a: typeof quietOne) => {
        slept.push(a.record.agentId);
        return { status: 'hibernated' };
      },
    };
    const agents = [starting, quietOne, requester];
    // `starting` was idle longer, but its operation may be the start waiting for this check; the requester never gives way.
    expect(await hibernateIdlest('new', agents, { idleMs: 15 * MIN, evictIdleMs: 5 * MIN }, host)).toBe(true);
    expect(slept).toEqual(['quiet']);
    expect(lines).toEqual([expect.stringMatching(/^\[host\] idle for \d+\.\d min and agent new needs the room: hibernating early$/)]);
    // Hibernation off (idleMs 0) or eviction off (evictIdleMs 0): nobody is asked to give way.
    expect(await hibernateIdlest('new', agents, { idleMs: 0, evictIdleMs: 5 * MIN }, host)).toBe(false);
    expect(await hibernateIdlest('new', agents, { idleMs: 15 * MIN, evictIdleMs: 0 }, host)).toBe(false);
    expect(slept).toEqual(['quiet']);
  });
});
