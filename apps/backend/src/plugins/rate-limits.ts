import type { RateLimitRule } from '@aop/core';

const MINUTE = 60_000;

/** Backend limits, per client IP (spec §8). */
export const BACKEND_LIMITS = {
  general: { name: 'backend-general', max: 120, windowMs: MINUTE, message: 'Too many requests, please slow down.' },
  ai: { name: 'backend-ai', max: 30, windowMs: MINUTE, message: 'AI rate limit exceeded.' },
  deployments: { name: 'backend-deployments', max: 5, windowMs: MINUTE, message: 'Deployment rate limit exceeded.' },
} as const satisfies Record<string, RateLimitRule>;
