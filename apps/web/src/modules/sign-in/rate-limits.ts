import type { RateLimitRule } from '@aop/core';
import type { WebConfig } from '../../config.js';

const MINUTE = 60_000;

/**
 * Spec §8: login 5 per 15 minutes per IP (the window is configurable); register and password resets per IP, values from
 * config; email verification per IP (our own numbers).
 */
export function accountLimits(config: WebConfig) {
  return {
    login: { name: 'login', max: 5, windowMs: config.limits.loginWindowMs, message: 'Too many login attempts. Please try again later.' },
    register: { name: 'register', max: config.limits.registerPerHour, windowMs: 60 * MINUTE, message: 'Too many requests' },
    forgotPassword: {
      name: 'forgot-password',
      max: config.limits.forgotPasswordPer15Min,
      windowMs: 15 * MINUTE,
      message: 'Too many requests',
    },
    resetPassword: {
      name: 'reset-password',
      max: config.limits.resetPasswordPer15Min,
      windowMs: 15 * MINUTE,
      message: 'Too many requests',
    },
    // A verification token is 256 random bits: the limit is against load, not guessing.
    verifyEmail: { name: 'verify-email', max: 20, windowMs: 15 * MINUTE, message: 'Too many requests' },
    // Each resend mails someone: few, so the endpoint cannot be used to flood an inbox.
    resendVerification: { name: 'resend-verification', max: 5, windowMs: 60 * MINUTE, message: 'Too many requests' },
  } satisfies Record<string, RateLimitRule>;
}
