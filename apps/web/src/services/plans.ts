/** Spec §8 plan agent limits (dashboard). */
export const PLAN_AGENT_LIMITS: Record<string, number> = {
  free: 1,
  solo: 1,
  starter: 1,
  pro: 3,
  collective: 3,
  scale: 10,
  label: 10,
  enterprise: 100,
  network: 100,
};

export const agentLimitFor = (plan: string) => PLAN_AGENT_LIMITS[plan] ?? 1;

/** Spec §7: a paid plan (minimum `solo`) is needed to provision and use agents. */
export const isPaidPlan = (plan: string) => plan !== 'free' && plan in PLAN_AGENT_LIMITS;

/** What an API key's owner may use, by plan (answered by `POST /api/keys/validate`). */
export function planFeatures(plan: string): string[] {
  const features = ['api', 'chat', 'summarizer'];
  if (isPaidPlan(plan)) features.push('agents', 'cron', 'gateway', 'channels');
  if (agentLimitFor(plan) >= 3) features.push('coding-tools', 'workflows');
  if (agentLimitFor(plan) >= 10) features.push('mission-control');
  return features;
}
