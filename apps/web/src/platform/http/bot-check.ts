import { DomainError } from '@aop/core';

export interface BotCheckInput {
  /** The hidden form field people never fill in. */
  honeypot: unknown;
  /** The challenge widget's response token. */
  challengeToken: unknown;
  ip: string;
}

/**
 * Bot detection for public forms (spec §4.1: 403). A filled honeypot is a bot.
 * When a challenge verifier is configured, its siteverify endpoint must accept
 * the token (the Turnstile/reCAPTCHA protocol: form POST of secret, response,
 * remoteip; JSON answer with `success`).
 */
export async function checkNotBot(input: BotCheckInput, verifier: { secret: string; url: string } | undefined): Promise<void> {
  if (typeof input.honeypot === 'string' && input.honeypot.trim() !== '') throw new DomainError('BOT_DETECTED');
  if (!verifier) return;
  if (typeof input.challengeToken !== 'string' || input.challengeToken === '') throw new DomainError('BOT_CHECK_REQUIRED');
  let success = false;
  try {
    const res = await fetch(verifier.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ secret: verifier.secret, response: input.challengeToken, remoteip: input.ip }),
      signal: AbortSignal.timeout(5_000),
    });
    success = res.ok && ((await res.json()) as { success?: unknown }).success === true;
  } catch {
    success = false;
  }
  if (!success) throw new DomainError('BOT_CHECK_FAILED');
}
