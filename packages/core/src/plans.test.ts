import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CARD_PLANS,
  DEFAULT_AGENT_TIER,
  PLAN_NAMES,
  PLANS,
  agentLimitFor,
  isCardPlan,
  isPaidPlan,
  isPlanName,
  planFeatures,
  planResources,
  planTier,
  planTitle,
  tierWithin,
  toolsProfileFor,
} from './plans.js';

// The catalogue against its sources: spec §8 (agent limits, provisioning plans, legacy container sizes), §7 (paid
// plans), §4.18 (card plans, GBP), §2.2 (tool profiles), the research notes (solo..network sizes). The consumers'
// own tests check that each of them answers these values for every tier.

const tier = (
  title: string,
  paid: boolean,
  agentLimit: number,
  priceGbp: number | null,
  card: boolean,
  ladder: 'current' | 'legacy' | null,
  [memoryGib, cpus]: [number, number],
  toolsProfile: 'messaging' | 'coding',
) => ({ title, paid, agentLimit, priceGbp, card, ladder, resources: { memoryGib, cpus }, toolsProfile });

describe('plan catalogue', () => {
  it('holds every tier with the spec’s facts', () => {
    expect(PLANS).toEqual({
      free: tier('Free', false, 1, 0, false, null, [2, 1], 'messaging'),
      solo: tier('Solo', true, 1, 29, true, 'current', [2, 1], 'messaging'),
      collective: tier('Collective', true, 3, 79, true, 'current', [4, 2], 'coding'),
      label: tier('Label', true, 10, 199, true, 'current', [8, 4], 'coding'),
      // Spec §8: provisioning has no limit for network, the dashboard shows 100.
      network: { ...tier('Network', true, Number.POSITIVE_INFINITY, 799, true, 'current', [16, 4], 'coding'), shownAgentLimit: 100 },
      starter: tier('Starter', true, 1, 29, false, 'legacy', [2, 1], 'messaging'),
      pro: tier('Pro', true, 3, 79, false, 'legacy', [4, 2], 'coding'),
      scale: tier('Scale', true, 10, 199, false, 'legacy', [8, 4], 'coding'),
      enterprise: tier('Enterprise', true, 100, 799, false, 'legacy', [16, 4], 'coding'),
      white_glove: tier('White glove', true, 1, null, false, null, [32, 8], 'coding'),
      underground: tier('Underground', false, 1, null, false, null, [2, 1], 'messaging'),
    });
    expect(PLAN_NAMES).toEqual(Object.keys(PLANS));
    expect(DEFAULT_AGENT_TIER).toBe('label');
  });

  it('sells the four current plans by card, in the order of spec §4.18', () => {
    expect(CARD_PLANS).toEqual(['solo', 'collective', 'label', 'network']);
    for (const plan of PLAN_NAMES) expect(isCardPlan(plan), plan).toBe((CARD_PLANS as readonly string[]).includes(plan));
    for (const value of ['starter', 'free', 'Solo', 'toString', undefined, 1]) expect(isCardPlan(value)).toBe(false);
  });

  it('the accessors answer each tier’s record', () => {
    for (const plan of PLAN_NAMES) {
      const record = PLANS[plan];
      expect(planTier(plan)).toBe(record);
      expect([isPaidPlan(plan), agentLimitFor(plan), planResources(plan), toolsProfileFor(plan), planTitle(plan)]).toEqual([
        record.paid,
        record.agentLimit,
        record.resources,
        record.toolsProfile,
        record.title,
      ]);
    }
  });

  it('a plan missing from the catalogue gets the smallest tier’s size, limit and profile, and does not pay', () => {
    for (const plan of ['mystery', 'toString', '__proto__', 'constructor', 'Solo', '']) {
      expect(isPlanName(plan), plan).toBe(false);
      expect(planTier(plan), plan).toMatchObject({
        paid: false,
        agentLimit: 1,
        priceGbp: null,
        card: false,
        ladder: null,
        resources: PLANS.solo.resources,
        toolsProfile: 'messaging',
      });
      expect(planFeatures(plan)).toEqual(['api', 'chat', 'summarizer']);
    }
    expect(planTitle('platinum')).toBe('Platinum');
  });

  it('a tier is within a plan when it is the plan or smaller on the same ladder', () => {
    const ladders = [
      ['solo', 'collective', 'label', 'network'],
      ['starter', 'pro', 'scale', 'enterprise'],
    ];
    for (const ladder of ladders) {
      for (const [i, plan] of ladder.entries()) {
        for (const [j, tier] of ladder.entries()) expect(tierWithin(tier, plan), `${tier} in ${plan}`).toBe(j <= i);
      }
    }
    // Across ladders, off them, and names not in the catalogue: only the plan itself.
    expect(tierWithin('solo', 'enterprise')).toBe(false);
    expect(tierWithin('starter', 'network')).toBe(false);
    expect(tierWithin('solo', 'white_glove')).toBe(false);
    expect(tierWithin('white_glove', 'white_glove')).toBe(true);
    expect(tierWithin('underground', 'label')).toBe(false);
    expect(tierWithin('free', 'label')).toBe(false);
    expect(tierWithin('made-up', 'network')).toBe(false);
    expect(tierWithin('toString', 'network')).toBe(false);
  });

  it('features follow payment, the tool profile and the fleet size', () => {
    const base = ['api', 'chat', 'summarizer'];
    const agents = ['agents', 'cron', 'gateway', 'channels'];
    const coding = ['coding-tools', 'workflows'];
    expect(planFeatures('free')).toEqual(base);
    expect(planFeatures('underground')).toEqual(base);
    expect(planFeatures('solo')).toEqual([...base, ...agents]);
    expect(planFeatures('starter')).toEqual([...base, ...agents]);
    expect(planFeatures('collective')).toEqual([...base, ...agents, ...coding]);
    expect(planFeatures('pro')).toEqual([...base, ...agents, ...coding]);
    expect(planFeatures('white_glove')).toEqual([...base, ...agents, ...coding]);
    for (const plan of ['label', 'scale', 'enterprise', 'network'])
      expect(planFeatures(plan), plan).toEqual([...base, ...agents, ...coding, 'mission-control']);
  });

  it('imports nothing, so the dashboard can bundle it for the browser', () => {
    const source = readFileSync(new URL('./plans.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/^\s*import\s|\bimport\(|\brequire\(/m);
  });
});
