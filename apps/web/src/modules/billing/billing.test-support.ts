import Stripe from 'stripe';

/**
 * Signs a webhook payload exactly as the payment provider does, with the SDK's own test helper
 * (`webhooks.generateTestHeaderString`): the value of a `Stripe-Signature` header. Handed to
 * `startFakeStripe({ sign })`, which cannot load the SDK itself (it is a dependency of the web app only).
 */
export const signStripeWebhook = ({ payload, secret, timestamp }: { payload: string; secret: string; timestamp: number }): string =>
  Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
