import type { IncomingHttpHeaders } from 'node:http';
import type { AuthUser } from '../../platform/sessions.js';

/**
 * The contract between the plugin gateway (`POST /api/v1/gateway`, spec §4.4) and the payment methods. The gateway
 * resolves the plugin, asks `chargeForPlugin` to take payment, runs the plugin, and calls `release()` on the result
 * when the plugin failed so the caller is not charged for nothing.
 */
export type PaymentMethod = 'card' | 'mpp' | 'session';

export interface ChargeRequest {
  /** The session (cookie) or API-key user, when the caller has one. */
  user: AuthUser | null;
  headers: IncomingHttpHeaders;
  /** The plugin id after routing (`X-Plugin-Id` over body `plugin`, default `agent`); it is registered. */
  plugin: string;
  /** The plugin's `auth` flag (spec §2.5): a protected plugin needs a session, a verified MPP credential or a payment session. */
  pluginAuth: boolean;
  /** The plugin's price in USD as a decimal string (e.g. `0.05`), null when the plugin has no pricing. */
  priceUsd: string | null;
  /** Client address for audit records. */
  ip: string;
}

export interface ChargeResult {
  method: PaymentMethod;
  /** Spec §4.4: null for card, the transaction hash for MPP, `session:<sessionId>:<nonce>` for sessions. */
  receipt: string | null;
  /** Extra response headers: `Payment-Receipt` (MPP or session), `X-Session-Remaining` (session). */
  headers: Record<string, string>;
  /** Undoes the charge (credits a session debit back, frees an MPP credential) when the plugin could not answer. */
  release(): Promise<void>;
}

/** A refusal with the spec's status, body (`{ error: <code>, … }`) and headers (e.g. `WWW-Authenticate`). */
export class PaymentError extends Error {
  override readonly name = 'PaymentError';
  constructor(
    readonly statusCode: number,
    readonly body: Record<string, unknown> & { error: string },
    readonly headers: Record<string, string> = {},
  ) {
    super(body.error);
  }
}
