import type { IncomingHttpHeaders } from 'node:http';
import type { Database } from '@aop/db';
import type { WebConfig } from '../../config.js';
import { recordUsage } from '../usage/usage.service.js';
import { parseUsd } from './money.js';
import { chargeMpp } from './mpp.js';
import { chargeSession } from './payment-sessions.service.js';
import type { PaymentMeter } from './payments.metrics.js';
import { type ChargeRequest, type ChargeResult, PaymentError, type PaymentMethod } from './types.js';

export interface ChargeDeps {
  db: Database;
  config: WebConfig;
  /** Milliseconds since the epoch; `Date.now` by default. */
  clock?: () => number;
  /** Failures that do not change the answer (a settlement the sweep will retry). */
  logger?: { warn(obj: object, msg: string): void };
  /** Counts each payment, refusal and release for /metrics (`payments.metrics.ts`). */
  meter?: PaymentMeter;
}

const PAYMENT_METHODS: readonly PaymentMethod[] = ['card', 'mpp', 'session'];

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first?.trim() || undefined;
};

/**
 * Spec §4.4 payment method selection, in order: the `X-Payment-Method` header (`card`, `mpp`, `session`, any case);
 * else an `Authorization: Payment …` header means `mpp`; else `card`. Another header value is a 400
 * `invalid_payment_method` rather than a silent fallback to card.
 */
export function selectPaymentMethod(headers: IncomingHttpHeaders): PaymentMethod {
  const asked = header(headers, 'x-payment-method')?.toLowerCase();
  if (asked !== undefined) {
    if ((PAYMENT_METHODS as readonly string[]).includes(asked)) return asked as PaymentMethod;
    throw new PaymentError(400, {
      error: 'invalid_payment_method',
      message: 'X-Payment-Method must be card, mpp or session',
    });
  }
  return /^Payment(?:\s|$)/i.test(header(headers, 'authorization') ?? '') ? 'mpp' : 'card';
}

const unknownPlugin = (plugin: string) => new PaymentError(400, { error: 'unknown_plugin', message: `No pricing for plugin ${plugin}` });

/**
 * Takes payment for one plugin call (spec §4.4), or throws PaymentError with the spec's status and body.
 *
 * - `card`: a protected plugin needs a signed-in user (401 `Unauthorized`). A signed-in caller's call is written to the
 *   usage ledger (kind `plugin`, cost = the price): that is the metered card billing. An anonymous call of an
 *   unprotected plugin is free and leaves no row. The receipt is null.
 * - `mpp`: a credential verified on chain and consumed once (mpp.ts); else 402 with a challenge.
 * - `session`: one atomic debit of a payment session (payment-sessions.ts).
 *
 * A verified MPP credential or an active payment session stands in for the user on a protected plugin. `release()`
 * undoes the charge when the plugin could not answer.
 */
export async function chargeForPlugin(deps: ChargeDeps, request: ChargeRequest): Promise<ChargeResult> {
  const { meter } = deps;
  let method: PaymentMethod | 'invalid' = 'invalid';
  let result: ChargeResult;
  try {
    method = selectPaymentMethod(request.headers);
    result = await takePayment(deps, method, request);
  } catch (err) {
    if (err instanceof PaymentError) meter?.refused(method, err.statusCode);
    throw err;
  }
  if (!meter) return result;
  // An anonymous card call of an unprotected plugin leaves no ledger row: nobody paid.
  const free = result.method === 'card' && request.user === null;
  meter.paid(result.method, free ? 'free' : 'charged', request.priceUsd);
  if (free) return result;
  return {
    ...result,
    release: async () => {
      await result.release();
      meter.paid(result.method, 'released', request.priceUsd);
    },
  };
}

async function takePayment(deps: ChargeDeps, method: PaymentMethod, request: ChargeRequest): Promise<ChargeResult> {
  switch (method) {
    case 'mpp': {
      const price = request.priceUsd === null ? null : parseUsd(request.priceUsd);
      if (price === null || price <= 0n || request.priceUsd === null) throw unknownPlugin(request.plugin);
      return chargeMpp(deps, {
        plugin: request.plugin,
        priceUsd: request.priceUsd,
        authorization: header(request.headers, 'authorization'),
      });
    }
    case 'session':
      return chargeSession(deps, request);
    case 'card':
      return chargeCard(deps, request);
  }
}

async function chargeCard(deps: ChargeDeps, { user, plugin, pluginAuth, priceUsd }: ChargeRequest): Promise<ChargeResult> {
  if (!user) {
    if (pluginAuth) throw new PaymentError(401, { error: 'Unauthorized' });
    return { method: 'card', receipt: null, headers: {}, release: async () => {} };
  }
  const usageId = await deps.db.withUser(user.id, (trx) =>
    recordUsage(trx, {
      userId: user.id,
      kind: 'plugin',
      model: `plugin:${plugin}`,
      costUsd: priceUsd ?? '0',
      ...(deps.clock ? { at: new Date(deps.clock()) } : {}),
    }),
  );
  return {
    method: 'card',
    receipt: null,
    headers: {},
    // The plugin could not answer: the call is not billed. Users may not delete ledger rows, so the owner connection does.
    release: async () => {
      await deps.db.kysely.deleteFrom('usage_events').where('id', '=', usageId).where('user_id', '=', user.id).execute();
    },
  };
}
