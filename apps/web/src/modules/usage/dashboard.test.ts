import { PLAN_NAMES, newId, planTier, shownAgentLimitFor } from '@aop/core';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../api-keys/api-keys.service.js';
import { EMPTY_STATS, periodRange, recordUsage } from './usage.service.js';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// Spec §4.14 dashboards, §8 plan agent limits. "Now" is Tuesday 10 March 2026, 15:30 UTC.
const NOW = Date.UTC(2026, 2, 10, 15, 30);
const at = (iso: string) => new Date(iso);

describe('dashboards', () => {
  let web: TestWeb;
  let a: { userId: string; cookie: string };
  let b: { userId: string; cookie: string };
  let empty: { userId: string; cookie: string };

  const agent = (userId: string, id: string, name: string, status: string, createdAt: string) =>
    web.database.db.kysely
      .insertInto('agents')
      .values({ id, user_id: userId, name, status, created_at: at(createdAt), updated_at: at(createdAt) })
      .execute();

  beforeAll(async () => {
    web = await startWeb({}, { clock: () => NOW });
    a = await web.signIn();
    b = await web.signIn();
    empty = await web.signIn();
    const db = web.database.db.kysely;
    await db.updateTable('users').set({ plan: 'pro' }).where('id', '=', a.userId).execute();

    await agent(a.userId, 'agt_a1', 'Trader', 'active', '2026-03-10T09:00:00Z');
    await agent(a.userId, 'agt_a2', 'Writer', 'running', '2026-03-01T00:00:00Z');
    await agent(a.userId, 'agt_a3', 'Idle', 'error', '2026-03-09T23:59:59.999Z');
    await agent(b.userId, 'agt_b1', 'Spy', 'active', '2026-03-10T00:00:00Z');

    const use = (
      userId: string,
      when: string,
      cost: number,
      tokens: number,
      extra: { agentId?: string; agentName?: string; model?: string } = {},
    ) =>
      recordUsage(db, {
        userId,
        kind: 'llm',
        promptTokens: Math.floor(tokens * 0.6),
        completionTokens: tokens - Math.floor(tokens * 0.6),
        costUsd: cost,
        at: at(when),
        ...extra,
      });
    const A1 = { agentId: 'agt_a1', agentName: 'Old trader name' };
    const A2 = { agentId: 'agt_a2', agentName: 'Writer' };
    await use(a.userId, '2026-03-10T10:00:00Z', 0.5, 1000, { ...A1, model: 'gpt-4o' });
    // Later today than "now": today's bucket is the whole UTC day.
    await use(a.userId, '2026-03-10T23:30:00Z', 0.25, 500, { ...A1, model: 'gpt-4o' });
    await use(a.userId, '2026-03-09T12:00:00Z', 0.1, 200, { ...A1, model: 'claude-sonnet-4' });
    await use(a.userId, '2026-03-04T00:00:00.000Z', 1.2, 3000, { ...A2, model: 'claude-sonnet-4' }); // first instant of 7d
    await use(a.userId, '2026-03-05T08:00:00Z', 0.01234, 50, { agentName: 'Chat', model: 'gpt-4o-mini' }); // no agent id
    await use(a.userId, '2026-03-03T23:59:59.999Z', 2, 4000, { ...A2, model: 'claude-sonnet-4' }); // last instant before 7d
    await use(a.userId, '2026-03-01T00:00:00.000Z', 0.3, 600, { ...A2, model: 'gpt-4o' }); // first instant of mtd
    await use(a.userId, '2026-02-28T23:59:59.999Z', 5, 10000, { ...A1, model: 'gpt-4o' }); // last instant before mtd
    await use(a.userId, '2026-02-09T00:00:00.000Z', 0.04, 80); // first instant of 30d: no agent, no model
    await use(a.userId, '2026-02-08T23:59:59.999Z', 9, 9000, { ...A1, model: 'gpt-4o' }); // before every period
    await use(a.userId, '2026-03-11T00:00:00.000Z', 100, 100, { ...A1, model: 'gpt-4o' }); // tomorrow
    // Another user's usage, agents, skills and tasks never count for A.
    await use(b.userId, '2026-03-10T12:00:00Z', 7, 700, { agentId: 'agt_b1', agentName: 'Spy', model: 'gpt-4o' });
    await use(b.userId, '2026-03-01T12:00:00Z', 3, 300, { agentId: 'agt_b1', agentName: 'Spy', model: 'o3' });

    await db
      .insertInto('skills')
      .values([
        { id: newId('skill'), user_id: a.userId, name: 'web-search' },
        { id: newId('skill'), user_id: a.userId, agent_id: 'agt_a1', name: 'swap', enabled: false },
        { id: newId('skill'), user_id: b.userId, name: 'web-search' },
      ])
      .execute();
    await db
      .insertInto('scheduled_tasks')
      .values([
        { id: newId('task'), user_id: a.userId, name: 'daily', schedule: '0 9 * * *', prompt: 'report' },
        { id: newId('task'), user_id: b.userId, name: 'b1', schedule: '0 9 * * *', prompt: 'x' },
        { id: newId('task'), user_id: b.userId, name: 'b2', schedule: 'every:5m', prompt: 'y' },
      ])
      .execute();
  });
  afterAll(async () => {
    await web?.close();
  });

  const cost = (cookie: string, query = '') => request(`${web.url}/api/dashboard/cost${query}`, { headers: { cookie } });
  const stats = (cookie: string) => request(`${web.url}/api/dashboard/stats`, { headers: { cookie } });

  /** Zero-filled days from `first` (a UTC date) for `count` days, with the given non-zero ones. */
  function days(first: string, count: number, filled: Record<string, [number, number]>) {
    const start = Date.parse(`${first}T00:00:00Z`);
    return Array.from({ length: count }, (_, i) => {
      const day = new Date(start + i * 86_400_000);
      const label = `${day.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' })} ${day.getUTCDate()}`;
      const [c, t] = filled[day.toISOString().slice(0, 10)] ?? [0, 0];
      return { date: label, cost: c, tokens: t };
    });
  }

  describe('GET /api/dashboard/cost', () => {
    it('401 without a session', async () => {
      const res = await request(`${web.url}/api/dashboard/cost`);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    });

    it('400 Invalid period for anything but 7d, 30d, mtd', async () => {
      for (const period of ['1y', '7D', '7', 'all', 'mtd ']) {
        const res = await cost(a.cookie, `?period=${encodeURIComponent(period)}`);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'Invalid period' });
      }
    });

    it('7d (the default): the last 7 UTC days including today, computed by hand', async () => {
      const expected = {
        period: '7d',
        summary: { totalCost: 2.0623, totalTokens: 4750, totalCalls: 5, avgCostPerCall: 0.4125 },
        agents: [
          { name: 'Writer', tokens: 3000, cost: 1.2, calls: 1, avgCostPerCall: 1.2, model: 'claude-sonnet-4' },
          // The agent's current name wins over the name recorded with the call; its model is the one called most.
          { name: 'Trader', tokens: 1700, cost: 0.85, calls: 3, avgCostPerCall: 0.2833, model: 'gpt-4o' },
          { name: 'Chat', tokens: 50, cost: 0.0123, calls: 1, avgCostPerCall: 0.0123, model: 'gpt-4o-mini' },
        ],
        daily: days('2026-03-04', 7, {
          '2026-03-04': [1.2, 3000],
          '2026-03-05': [0.0123, 50],
          '2026-03-09': [0.1, 200],
          '2026-03-10': [0.75, 1500],
        }),
        modelBreakdown: [
          { model: 'claude-sonnet-4', percent: 63, cost: 1.3 },
          { model: 'gpt-4o', percent: 36.4, cost: 0.75 },
          { model: 'gpt-4o-mini', percent: 0.6, cost: 0.0123 },
        ],
        isMockData: false,
        plan: 'pro',
        planMonthlyCost: 79,
        agentCount: 3,
        activeAgents: 2,
      };
      const res = await cost(a.cookie, '?period=7d');
      expect(res.status).toBe(200);
      expect(res.body).toEqual(expected);
      expect(res.body.daily.map((d: { date: string }) => d.date)).toEqual(['Mar 4', 'Mar 5', 'Mar 6', 'Mar 7', 'Mar 8', 'Mar 9', 'Mar 10']);
      const byDefault = await cost(a.cookie);
      expect(byDefault.body).toEqual(expected);
    });

    it('mtd: from the 1st of the current UTC month', async () => {
      const res = await cost(a.cookie, '?period=mtd');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        period: 'mtd',
        summary: { totalCost: 4.3623, totalTokens: 9350, totalCalls: 7, avgCostPerCall: 0.6232 },
        agents: [
          { name: 'Writer', tokens: 7600, cost: 3.5, calls: 3, avgCostPerCall: 1.1667, model: 'claude-sonnet-4' },
          { name: 'Trader', tokens: 1700, cost: 0.85, calls: 3, avgCostPerCall: 0.2833, model: 'gpt-4o' },
          { name: 'Chat', tokens: 50, cost: 0.0123, calls: 1, avgCostPerCall: 0.0123, model: 'gpt-4o-mini' },
        ],
        daily: days('2026-03-01', 10, {
          '2026-03-01': [0.3, 600],
          '2026-03-03': [2, 4000],
          '2026-03-04': [1.2, 3000],
          '2026-03-05': [0.0123, 50],
          '2026-03-09': [0.1, 200],
          '2026-03-10': [0.75, 1500],
        }),
        modelBreakdown: [
          { model: 'claude-sonnet-4', percent: 75.6, cost: 3.3 },
          { model: 'gpt-4o', percent: 24.1, cost: 1.05 },
          { model: 'gpt-4o-mini', percent: 0.3, cost: 0.0123 },
        ],
        isMockData: false,
        plan: 'pro',
        planMonthlyCost: 79,
        agentCount: 3,
        activeAgents: 2,
      });
    });

    it('30d: the last 30 UTC days; usage without an agent or a model is still counted', async () => {
      const res = await cost(a.cookie, '?period=30d');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        period: '30d',
        summary: { totalCost: 9.4023, totalTokens: 19430, totalCalls: 9, avgCostPerCall: 1.0447 },
        agents: [
          { name: 'Trader', tokens: 11700, cost: 5.85, calls: 4, avgCostPerCall: 1.4625, model: 'gpt-4o' },
          { name: 'Writer', tokens: 7600, cost: 3.5, calls: 3, avgCostPerCall: 1.1667, model: 'claude-sonnet-4' },
          { name: 'No agent', tokens: 80, cost: 0.04, calls: 1, avgCostPerCall: 0.04, model: 'unknown' },
          { name: 'Chat', tokens: 50, cost: 0.0123, calls: 1, avgCostPerCall: 0.0123, model: 'gpt-4o-mini' },
        ],
        daily: days('2026-02-09', 30, {
          '2026-02-09': [0.04, 80],
          '2026-02-28': [5, 10000],
          '2026-03-01': [0.3, 600],
          '2026-03-03': [2, 4000],
          '2026-03-04': [1.2, 3000],
          '2026-03-05': [0.0123, 50],
          '2026-03-09': [0.1, 200],
          '2026-03-10': [0.75, 1500],
        }),
        modelBreakdown: [
          { model: 'gpt-4o', percent: 64.3, cost: 6.05 },
          { model: 'claude-sonnet-4', percent: 35.1, cost: 3.3 },
          { model: 'unknown', percent: 0.4, cost: 0.04 },
          { model: 'gpt-4o-mini', percent: 0.1, cost: 0.0123 },
        ],
        isMockData: false,
        plan: 'pro',
        planMonthlyCost: 79,
        agentCount: 3,
        activeAgents: 2,
      });
      expect(res.body.daily[0].date).toBe('Feb 9');
      expect(res.body.daily.at(-1).date).toBe('Mar 10');
    });

    it('isolation: each user sees only their own usage and agents (also through an API key)', async () => {
      const res = await cost(b.cookie, '?period=mtd');
      expect(res.body).toEqual({
        period: 'mtd',
        summary: { totalCost: 10, totalTokens: 1000, totalCalls: 2, avgCostPerCall: 5 },
        agents: [{ name: 'Spy', tokens: 1000, cost: 10, calls: 2, avgCostPerCall: 5, model: 'gpt-4o' }],
        daily: days('2026-03-01', 10, { '2026-03-01': [3, 300], '2026-03-10': [7, 700] }),
        modelBreakdown: [
          { model: 'gpt-4o', percent: 70, cost: 7 },
          { model: 'o3', percent: 30, cost: 3 },
        ],
        isMockData: false,
        plan: 'free',
        planMonthlyCost: 0,
        agentCount: 1,
        activeAgents: 1,
      });
      const { key } = await web.database.db.withUser(b.userId, (trx) => createApiKey(trx, b.userId, 'dash'));
      const viaKey = await request(`${web.url}/api/dashboard/cost?period=mtd`, { headers: { authorization: `Bearer ${key}` } });
      expect(viaKey.body).toEqual(res.body);
    });

    it('a user without usage gets zeros, zero-filled days and empty lists', async () => {
      const res = await cost(empty.cookie);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        period: '7d',
        summary: { totalCost: 0, totalTokens: 0, totalCalls: 0, avgCostPerCall: 0 },
        agents: [],
        daily: days('2026-03-04', 7, {}),
        modelBreakdown: [],
        isMockData: false,
        plan: 'free',
        planMonthlyCost: 0,
        agentCount: 0,
        activeAgents: 0,
      });
    });
  });

  describe('GET /api/dashboard/stats', () => {
    it('401 without a session', async () => {
      const res = await request(`${web.url}/api/dashboard/stats`);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    });

    it('counts the caller’s agents (limit by plan, new since UTC midnight), skills and tasks', async () => {
      const res = await stats(a.cookie);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ agents: { active: 2, total: 3, limit: 3, newToday: 1 }, skills: { installed: 2 }, tasks: { total: 1 } });
      expect((await stats(b.cookie)).body).toEqual({
        agents: { active: 1, total: 1, limit: 1, newToday: 1 },
        skills: { installed: 1 },
        tasks: { total: 2 },
      });
      expect((await stats(empty.cookie)).body).toEqual({
        agents: { active: 0, total: 0, limit: 1, newToday: 0 },
        skills: { installed: 0 },
        tasks: { total: 0 },
      });
    });

    it('the limit is spec §8’s dashboard table (network 100, though provisioning has none)', async () => {
      const user = await web.signIn();
      for (const [plan, limit] of [
        ['free', 1],
        ['solo', 1],
        ['starter', 1],
        ['pro', 3],
        ['collective', 3],
        ['scale', 10],
        ['label', 10],
        ['enterprise', 100],
        ['network', 100],
        ['mystery', 1],
      ] as const) {
        await web.database.db.kysely.updateTable('users').set({ plan }).where('id', '=', user.userId).execute();
        expect((await stats(user.cookie)).body.agents.limit, plan).toBe(limit);
      }
    });

    it('the agent limit and the monthly price are the plan catalogue’s, for every tier', async () => {
      const user = await web.signIn();
      for (const plan of [...PLAN_NAMES, 'mystery']) {
        await web.database.db.kysely.updateTable('users').set({ plan }).where('id', '=', user.userId).execute();
        const { priceGbp } = planTier(plan);
        expect((await stats(user.cookie)).body.agents.limit, plan).toBe(shownAgentLimitFor(plan));
        expect((await cost(user.cookie)).body.planMonthlyCost, plan).toBe(priceGbp ?? 0);
      }
    });

    it('the monthly price of a card plan is the configured one (PLAN_PRICES_GBP); a Stripe price id leaves the list price', async () => {
      const priced = await startWeb({ PLAN_PRICES_GBP: 'solo:35,collective:79.50,label:199,network:price_1Abc' }, { clock: () => NOW });
      try {
        const user = await priced.signIn();
        for (const [plan, monthly] of [
          ['solo', 35],
          ['collective', 79.5],
          ['network', 799],
          ['pro', 79],
          ['free', 0],
        ] as const) {
          await priced.database.db.kysely.updateTable('users').set({ plan }).where('id', '=', user.userId).execute();
          const res = await request(`${priced.url}/api/dashboard/cost`, { headers: { cookie: user.cookie } });
          expect(res.body.planMonthlyCost, plan).toBe(monthly);
        }
      } finally {
        await priced.close();
      }
    });
  });

  describe('one spend, two views', () => {
    it('mission control’s spend is the cost dashboard’s total for the same rows (the same ledger, the same sum)', async () => {
      const spend = (cookie: string) => request(`${web.url}/api/mission-control/fleet/costs`, { headers: { cookie } });
      // B's usage all falls in the last 30 days: both views must say 10 (7 + 3), to the same 4 decimals.
      const [board, mission] = await Promise.all([cost(b.cookie, '?period=30d'), spend(b.cookie)]);
      expect(board.body.summary.totalCost).toBe(10);
      expect(mission.body).toEqual({ costs: [], totalSpend: board.body.summary.totalCost, managedAiCost: 0, coordinationRevenue: 0 });
      // A sub-cent call shows as the same figure in both (the reported $0.0003 against $0.00).
      const tiny = await web.signIn();
      await recordUsage(web.database.db.kysely, { userId: tiny.userId, kind: 'chat', costUsd: '0.0003', at: at('2026-03-10T12:00:00Z') });
      await recordUsage(web.database.db.kysely, {
        userId: tiny.userId,
        kind: 'ai-chat',
        costUsd: '0.0001',
        at: at('2026-03-10T12:05:00Z'),
      });
      const [small, smallMission] = await Promise.all([cost(tiny.cookie), spend(tiny.cookie)]);
      expect(small.body.summary.totalCost).toBe(0.0004);
      expect(smallMission.body).toEqual({ costs: [], totalSpend: 0.0004, managedAiCost: 0.0001, coordinationRevenue: 0 });
      // Mission control counts all time: A's usage before every period is in it, and only A's.
      const all = await spend(a.cookie);
      expect(all.body.totalSpend).toBe(118.4023);
    });
  });

  describe('GET /api/dashboard/new-agent', () => {
    const gate = (cookie: string) => request(`${web.url}/api/dashboard/new-agent`, { headers: { cookie } });
    const provision = (cookie: string) => request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie } });
    const setPlan = (userId: string, plan: string, status: string) =>
      web.database.db.kysely.updateTable('users').set({ plan, subscription_status: status }).where('id', '=', userId).execute();

    it('401 without a session', async () => {
      const res = await request(`${web.url}/api/dashboard/new-agent`);
      expect([res.status, res.body]).toEqual([401, { error: 'Unauthorized' }]);
    });

    it('states the gate POST /api/provision applies, in its words, before any wizard step', async () => {
      const free = await web.signIn();
      const unpaid = await web.signIn();
      await setPlan(unpaid.userId, 'solo', 'canceled');
      const full = await web.signIn();
      await setPlan(full.userId, 'solo', 'active');
      await agent(full.userId, newId('agent'), 'Only one', 'running', '2026-03-10T09:00:00Z');
      // An errored agent does not count against the limit, here as in provisioning.
      await agent(full.userId, newId('agent'), 'Broken', 'error', '2026-03-10T09:00:00Z');
      const cases = [
        [free, { reason: 'paid-plan', plan: 'free', planTitle: 'Free', subscriptionStatus: 'none', count: 0, limit: 1, suggest: 'solo' }],
        [
          unpaid,
          { reason: 'subscription', plan: 'solo', planTitle: 'Solo', subscriptionStatus: 'canceled', count: 0, limit: 1, suggest: 'solo' },
        ],
        [
          full,
          {
            reason: 'agent-limit',
            plan: 'solo',
            planTitle: 'Solo',
            subscriptionStatus: 'active',
            count: 1,
            limit: 1,
            suggest: 'collective',
          },
        ],
      ] as const;
      for (const [user, c] of cases) {
        const refused = await provision(user.cookie);
        expect(refused.status).toBeGreaterThanOrEqual(400);
        const res = await gate(user.cookie);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          allowed: false,
          reason: c.reason,
          message: refused.body.error,
          plan: c.plan,
          planTitle: c.planTitle,
          subscriptionStatus: c.subscriptionStatus,
          admin: false,
          agents: { count: c.count, limit: c.limit },
          cardPayments: false,
          // Nothing can be bought on this server: the operator's command that enables the account.
          operatorCommand: `npm run cli -- plan set ${user.userId}@example.com ${c.suggest}`,
          platformKeyProviders: [],
        });
      }
      expect((await gate(free.cookie)).body.message).toBe('A paid plan (solo or higher) is required to provision agents');
    });

    it('an account that may create an agent, and an administrator (no plan, no limit), are let through', async () => {
      const paying = await web.signIn();
      await setPlan(paying.userId, 'collective', 'active');
      await agent(paying.userId, newId('agent'), 'One', 'running', '2026-03-10T09:00:00Z');
      expect((await gate(paying.cookie)).body).toMatchObject({
        allowed: true,
        reason: null,
        message: null,
        agents: { count: 1, limit: 3 },
        operatorCommand: null,
      });
      const admin = await web.signIn({ isAdmin: true });
      expect((await gate(admin.cookie)).body).toMatchObject({
        allowed: true,
        reason: null,
        admin: true,
        plan: 'free',
        agents: { count: 0, limit: null },
        operatorCommand: null,
      });
    });

    it('where plans can be bought by card, a blocked account is sent to billing, not to an operator', async () => {
      const paid = await startWeb({ STRIPE_SECRET_KEY: 'sk_test_gate' }, { clock: () => NOW });
      try {
        const user = await paid.signIn();
        const res = await request(`${paid.url}/api/dashboard/new-agent`, { headers: { cookie: user.cookie } });
        expect(res.body).toMatchObject({ allowed: false, reason: 'paid-plan', cardPayments: true, operatorCommand: null });
      } finally {
        await paid.close();
      }
    });
  });

  describe('failures', () => {
    it('cost: 500 Failed to fetch cost data; stats: the zeroed fallback with 200', async () => {
      const broken = await startWeb({}, { clock: () => NOW });
      try {
        const user = await broken.signIn();
        await broken.database.db.kysely
          .insertInto('agents')
          .values({ id: 'agt_x', user_id: user.userId, name: 'X', status: 'active' })
          .execute();
        expect((await request(`${broken.url}/api/dashboard/stats`, { headers: { cookie: user.cookie } })).body.agents.total).toBe(1);
        await broken.database.db.kysely.schema.alterTable('usage_events').renameTo('usage_events_gone').execute();
        await broken.database.db.kysely.schema.alterTable('skills').renameTo('skills_gone').execute();

        const costRes = await request(`${broken.url}/api/dashboard/cost`, { headers: { cookie: user.cookie } });
        expect(costRes.status).toBe(500);
        expect(costRes.body).toEqual({ error: 'Failed to fetch cost data' });
        const statsRes = await request(`${broken.url}/api/dashboard/stats`, { headers: { cookie: user.cookie } });
        expect(statsRes.status).toBe(200);
        expect(statsRes.body).toEqual({
          agents: { active: 0, total: 0, limit: 1, newToday: 0 },
          skills: { installed: 0 },
          tasks: { total: 0 },
        });
        expect(statsRes.body).toEqual(EMPTY_STATS);
      } finally {
        await broken.close();
      }
    });
  });

  describe('periods', () => {
    it('mtd on the first day of a month is that one day; 30d crosses a year', () => {
      const first = periodRange('mtd', Date.UTC(2026, 3, 1, 0, 0, 30));
      expect(first).toEqual({ since: at('2026-04-01T00:00:00Z'), until: at('2026-04-02T00:00:00Z'), days: 1 });
      expect(periodRange('mtd', Date.UTC(2026, 3, 30, 23, 59, 59, 999))).toEqual({
        since: at('2026-04-01T00:00:00Z'),
        until: at('2026-05-01T00:00:00Z'),
        days: 30,
      });
      expect(periodRange('30d', Date.UTC(2026, 0, 10, 12))).toEqual({
        since: at('2025-12-12T00:00:00Z'),
        until: at('2026-01-11T00:00:00Z'),
        days: 30,
      });
      expect(periodRange('7d', Date.UTC(2024, 2, 2, 1))).toEqual({
        since: at('2024-02-25T00:00:00Z'),
        until: at('2024-03-03T00:00:00Z'),
        days: 7,
      });
    });

    it('recordUsage stores prompt + completion as the total unless told otherwise', async () => {
      const user = await web.signIn();
      const db = web.database.db;
      await db.withUser(user.userId, (trx) =>
        recordUsage(trx, {
          userId: user.userId,
          kind: 'plugin',
          promptTokens: 12,
          completionTokens: 30,
          costUsd: '0.123456',
          at: at('2026-03-10T01:00:00Z'),
        }),
      );
      await recordUsage(db.kysely, { userId: user.userId, kind: 'agent', totalTokens: 5, costUsd: 0, at: at('2026-03-10T02:00:00Z') });
      const rows = await db.kysely
        .selectFrom('usage_events')
        .select(['kind', 'prompt_tokens', 'completion_tokens', 'total_tokens', 'cost_usd'])
        .where('user_id', '=', user.userId)
        .orderBy('created_at')
        .execute();
      expect(rows).toEqual([
        { kind: 'plugin', prompt_tokens: 12, completion_tokens: 30, total_tokens: 42, cost_usd: '0.123456' },
        { kind: 'agent', prompt_tokens: 0, completion_tokens: 0, total_tokens: 5, cost_usd: '0.000000' },
      ]);
      // Through row-level security a user cannot write another user's ledger.
      await expect(db.withUser(user.userId, (trx) => recordUsage(trx, { userId: a.userId, kind: 'llm', costUsd: 1 }))).rejects.toThrow();
      const res = await cost(user.cookie);
      expect(res.body.summary).toEqual({ totalCost: 0.1235, totalTokens: 47, totalCalls: 2, avgCostPerCall: 0.0617 });
    });
  });
});
