/**
 * THE plan catalogue (issue #17): every tier the platform knows, one record per tier holding every fact about it.
 * The web (agent limits, features, provisioning, billing prices, cost dashboard), the backend (plan middleware,
 * mission control), the agent hosts (container sizes) and the dashboard (plan names) all read it; no other module
 * keeps a table keyed by plan, so they cannot disagree again.
 *
 * This file imports nothing on purpose: the dashboard bundles it for the browser (`@aop/core/plans`), and a Node
 * import here would drag Node-only code into that bundle.
 */

export type ToolsProfile = 'messaging' | 'coding';

/** The two ladders of spec §8: today's plans, and the names the older web proxy sold (still held by accounts). */
export type PlanLadder = 'current' | 'legacy';

export interface PlanResources {
  /** Container memory limit (no swap on top). */
  readonly memoryGib: number;
  readonly cpus: number;
}

export interface PlanTier {
  /** How people read the plan's name (billing page, checkout product name). */
  readonly title: string;
  /** Spec §7: a paid plan (minimum `solo`) is needed to provision and use agents, and for `/api/ai/chat`. */
  readonly paid: boolean;
  /** Agents an account on this plan may keep (errored ones do not count); `Infinity` means no limit. */
  readonly agentLimit: number;
  /**
   * What the dashboard shows as the plan's limit (`GET /api/dashboard/stats` `agents.limit`) where the spec gives it
   * another number than provisioning: spec §8 shows 100 for `network`, whose provisioning has no limit.
   */
  readonly shownAgentLimit?: number;
  /**
   * The monthly price in pounds. For card-sold tiers this is only the default: `PLAN_PRICES_GBP` may reprice them.
   * Null: the tier has no list price (a bespoke deal, or a size that was never sold on its own).
   */
  readonly priceGbp: number | null;
  /** Sold by card (spec §4.18 `GET /api/payments/card/checkout`). */
  readonly card: boolean;
  /**
   * The ladder the tier is on. A customer may give an agent their own plan's tier or a smaller one on the same
   * ladder, never a bigger one, because the tier sets the agent's resources. Tiers with no ladder allow only
   * themselves.
   */
  readonly ladder: PlanLadder | null;
  /** Container limits; the docker and kubernetes hosts apply the same ones. */
  readonly resources: PlanResources;
  /** `tools.profile` an agent is provisioned with (spec §2.2: `coding` for collective and higher, else `messaging`). */
  readonly toolsProfile: ToolsProfile;
}

/**
 * Spec §8 (agent limits, provisioning plans, container resources), §4.18 (card prices), §2.2 (tool profiles);
 * solo/collective/label/network sizes from the research notes ("Plan resources"). Within a ladder the tiers are
 * listed smallest first: that order is the ladder.
 */
export const PLANS = {
  free: {
    title: 'Free',
    paid: false,
    agentLimit: 1,
    priceGbp: 0,
    card: false,
    ladder: null,
    resources: { memoryGib: 2, cpus: 1 },
    toolsProfile: 'messaging',
  },
  solo: {
    title: 'Solo',
    paid: true,
    agentLimit: 1,
    priceGbp: 29,
    card: true,
    ladder: 'current',
    resources: { memoryGib: 2, cpus: 1 },
    toolsProfile: 'messaging',
  },
  collective: {
    title: 'Collective',
    paid: true,
    agentLimit: 3,
    priceGbp: 79,
    card: true,
    ladder: 'current',
    resources: { memoryGib: 4, cpus: 2 },
    toolsProfile: 'coding',
  },
  label: {
    title: 'Label',
    paid: true,
    agentLimit: 10,
    priceGbp: 199,
    card: true,
    ladder: 'current',
    resources: { memoryGib: 8, cpus: 4 },
    toolsProfile: 'coding',
  },
  network: {
    title: 'Network',
    paid: true,
    agentLimit: Number.POSITIVE_INFINITY,
    shownAgentLimit: 100,
    priceGbp: 799,
    card: true,
    ladder: 'current',
    resources: { memoryGib: 16, cpus: 4 },
    toolsProfile: 'coding',
  },
  starter: {
    title: 'Starter',
    paid: true,
    agentLimit: 1,
    priceGbp: 29,
    card: false,
    ladder: 'legacy',
    resources: { memoryGib: 2, cpus: 1 },
    toolsProfile: 'messaging',
  },
  pro: {
    title: 'Pro',
    paid: true,
    agentLimit: 3,
    priceGbp: 79,
    card: false,
    ladder: 'legacy',
    resources: { memoryGib: 4, cpus: 2 },
    toolsProfile: 'coding',
  },
  scale: {
    title: 'Scale',
    paid: true,
    agentLimit: 10,
    priceGbp: 199,
    card: false,
    ladder: 'legacy',
    resources: { memoryGib: 8, cpus: 4 },
    toolsProfile: 'coding',
  },
  enterprise: {
    title: 'Enterprise',
    paid: true,
    agentLimit: 100,
    priceGbp: 799,
    card: false,
    ladder: 'legacy',
    resources: { memoryGib: 16, cpus: 4 },
    toolsProfile: 'coding',
  },
  // A bespoke legacy plan: the biggest container, priced per deal; no source gives it more than the default agent.
  white_glove: {
    title: 'White glove',
    paid: true,
    agentLimit: 1,
    priceGbp: null,
    card: false,
    ladder: null,
    resources: { memoryGib: 32, cpus: 8 },
    toolsProfile: 'coding',
  },
  // An agent size of spec §8 that no account buys: agents may carry it, but it pays for nothing.
  underground: {
    title: 'Underground',
    paid: false,
    agentLimit: 1,
    priceGbp: null,
    card: false,
    ladder: null,
    resources: { memoryGib: 2, cpus: 1 },
    toolsProfile: 'messaging',
  },
} as const satisfies Record<string, PlanTier>;

export type PlanName = keyof typeof PLANS;
export type CardPlan = { [P in PlanName]: (typeof PLANS)[P]['card'] extends true ? P : never }[PlanName];

/** Every tier, in catalogue order. */
export const PLAN_NAMES: readonly PlanName[] = Object.keys(PLANS) as PlanName[];

/** Own keys only: `toString` and friends are not plans. */
export const isPlanName = (plan: string): plan is PlanName => Object.hasOwn(PLANS, plan);

/** The tiers sold by card, in the order spec §4.18 lists them (`solo`, `collective`, `label`, `network`). */
export const CARD_PLANS: readonly CardPlan[] = PLAN_NAMES.filter((plan): plan is CardPlan => PLANS[plan].card);
export const isCardPlan = (value: unknown): value is CardPlan => typeof value === 'string' && isPlanName(value) && PLANS[value].card;

/** The tier an agent gets when nobody names one (spec §4.15: "the plan sent defaults to `label`"). */
export const DEFAULT_AGENT_TIER: PlanName = 'label';

/**
 * What a plan missing from the catalogue (retired, misspelt, made up) gets: the smallest tier's size, limit and tool
 * profile, never more, and it does not pay.
 */
const UNLISTED: Omit<PlanTier, 'title'> = {
  paid: false,
  agentLimit: PLANS.solo.agentLimit,
  priceGbp: null,
  card: false,
  ladder: null,
  resources: PLANS.solo.resources,
  toolsProfile: PLANS.solo.toolsProfile,
};

/** The plan's record; an unlisted name gets the unlisted facts and its own name, capitalised, as the title. */
export function planTier(plan: string): PlanTier {
  return isPlanName(plan) ? PLANS[plan] : { ...UNLISTED, title: plan.charAt(0).toUpperCase() + plan.slice(1) };
}

export const planTitle = (plan: string) => planTier(plan).title;
export const isPaidPlan = (plan: string) => planTier(plan).paid;
export const agentLimitFor = (plan: string) => planTier(plan).agentLimit;
/** The limit the dashboard shows (spec §8 "Plan agent limit (dashboard)"): always a number. */
export const shownAgentLimitFor = (plan: string) => {
  const tier = planTier(plan);
  return tier.shownAgentLimit ?? tier.agentLimit;
};
export const planResources = (plan: string) => planTier(plan).resources;
export const toolsProfileFor = (plan: string) => planTier(plan).toolsProfile;

/** Whether an agent of `plan`'s account may be given `tier`: the plan's own, or a smaller one on the same ladder. */
export function tierWithin(tier: string, plan: string): boolean {
  if (tier === plan) return true;
  if (!isPlanName(tier) || !isPlanName(plan)) return false;
  const ladder = PLANS[plan].ladder;
  return ladder !== null && PLANS[tier].ladder === ladder && PLAN_NAMES.indexOf(tier) < PLAN_NAMES.indexOf(plan);
}

/** Fleets this size or bigger get the mission-control fleet view; smaller ones have nothing to orchestrate. */
const FLEET_VIEW_AGENTS = 10;

/** What an API key's owner may use (answered by `POST /api/keys/validate`). */
export function planFeatures(plan: string): string[] {
  const tier = planTier(plan);
  const features = ['api', 'chat', 'summarizer'];
  if (tier.paid) features.push('agents', 'cron', 'gateway', 'channels');
  // The same line as the tool profile: tiers whose agents get coding tools may use them and workflows.
  if (tier.toolsProfile === 'coding') features.push('coding-tools', 'workflows');
  if (tier.agentLimit >= FLEET_VIEW_AGENTS) features.push('mission-control');
  return features;
}

/** What stops an account creating another agent (spec §4.15, in its order): no paid plan, no active subscription, the limit. */
export type ProvisioningBlock = { reason: 'paid-plan' } | { reason: 'subscription' } | { reason: 'agent-limit'; limit: number };

/**
 * Whether an account may create another agent, and if not why: the one rule `POST /api/provision` enforces and the
 * dashboard states before its wizard opens, so the two cannot disagree. `agents` counts the account's agents that are
 * not in `error` (errored ones do not count against the limit). Administrators are never blocked.
 */
export function provisioningBlock(account: {
  plan: string;
  subscriptionStatus: string;
  agents: number;
  isAdmin: boolean;
}): ProvisioningBlock | null {
  if (account.isAdmin) return null;
  if (!isPaidPlan(account.plan)) return { reason: 'paid-plan' };
  if (account.subscriptionStatus !== 'active') return { reason: 'subscription' };
  const limit = agentLimitFor(account.plan);
  return account.agents >= limit ? { reason: 'agent-limit', limit } : null;
}
