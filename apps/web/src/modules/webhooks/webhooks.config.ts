import { Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

/** A Standard Webhooks (Svix) signing secret: `whsec_` and base64 of the key (the prefix is optional). */
const WEBHOOK_SECRET_PATTERN = '^(whsec_)?[A-Za-z0-9+/]{16,}={0,2}$';

export const WebhooksEnvSchema = Type.Object({
  EMAIL_WEBHOOK_SECRET: Env.optional(Type.String({ pattern: WEBHOOK_SECRET_PATTERN })),
  HOSTING_WEBHOOK_SECRET: Env.optional(Type.String({ pattern: WEBHOOK_SECRET_PATTERN })),
});

export interface WebhooksConfig {
  /**
   * Signing secrets of the provider webhooks (Standard Webhooks / Svix scheme): `POST /api/webhooks/email` and
   * `POST /api/webhooks/hosting-status` refuse every delivery while theirs is unset.
   */
  webhooks: { emailSecret: string | undefined; hostingSecret: string | undefined };
}

export function toWebhooksConfig(env: Static<typeof WebhooksEnvSchema>): WebhooksConfig {
  return { webhooks: { emailSecret: env.EMAIL_WEBHOOK_SECRET, hostingSecret: env.HOSTING_WEBHOOK_SECRET } };
}
