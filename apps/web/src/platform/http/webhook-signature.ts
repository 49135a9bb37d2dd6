import { createHmac } from 'node:crypto';
import { DomainError, safeEqual } from '@aop/core';

/**
 * Standard Webhooks signatures, the scheme of the email provider (Svix: `svix-id`, `svix-timestamp`,
 * `svix-signature`) and of the hosting provider (`webhook-id`, `webhook-timestamp`, `webhook-signature`):
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>">`, keyed with the base64 secret after `whsec_`.
 * The signature header may carry several space-separated signatures (secret rotation); one match is enough.
 */

/** Spec §8 "webhook timestamp tolerance": 5 minutes, either way. */
export const WEBHOOK_TOLERANCE_MS = 5 * 60_000;

/** The header families accepted, in order: the first one present is used. */
const HEADER_FAMILIES = ['svix', 'webhook'] as const;

/** The signing key: the base64 part of `whsec_<base64>` (the prefix is optional). */
export function webhookKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** `v1,<base64>` for one delivery (what the provider sends; tests sign with it too). */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string | Buffer): string {
  const mac = createHmac('sha256', webhookKey(secret)).update(`${id}.${timestampSeconds}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

export interface VerifiedDelivery {
  /** The provider's message id: the same on every retry of one event. */
  id: string;
  /** When the provider signed it, in milliseconds. */
  timestampMs: number;
}

type Headers = Record<string, string | string[] | undefined>;

const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

const ID_FORMAT = /^[A-Za-z0-9_.:-]{1,200}$/;

/**
 * Checks one delivery (the spec's streaming-webhook answers, applied to every signed webhook): no secret → 503
 * (the provider retries once one is set); missing headers → 401; a timestamp more than 5 minutes away → 403; no
 * matching signature → 403. Signatures are compared in constant time.
 */
export function verifyWebhook(secret: string | undefined, headers: Headers, body: Buffer, nowMs: number): VerifiedDelivery {
  if (!secret) throw new DomainError('WEBHOOK_SECRET_UNCONFIGURED');
  const family = HEADER_FAMILIES.find((f) => header(headers, `${f}-signature`) !== undefined) ?? HEADER_FAMILIES[0];
  const id = header(headers, `${family}-id`);
  const timestamp = header(headers, `${family}-timestamp`);
  const signatures = header(headers, `${family}-signature`);
  if (!id || !timestamp || !signatures) throw new DomainError('MISSING_WEBHOOK_SIGNATURE');
  if (!ID_FORMAT.test(id) || !/^\d{1,12}$/.test(timestamp)) throw new DomainError('INVALID_SIGNATURE');
  const seconds = Number(timestamp);
  if (Math.abs(nowMs - seconds * 1000) > WEBHOOK_TOLERANCE_MS) throw new DomainError('WEBHOOK_TIMESTAMP_REJECTED');
  const expected = signWebhook(secret, id, seconds, body);
  // Every candidate is compared (no early exit), so timing says nothing about which one matched.
  let matched = false;
  for (const candidate of signatures.split(' ')) {
    if (candidate.startsWith('v1,') && safeEqual(candidate, expected)) matched = true;
  }
  if (!matched) throw new DomainError('INVALID_SIGNATURE');
  return { id, timestampMs: seconds * 1000 };
}
