import { Counter, type Registry } from '@aop/core';

/** How a payment went, for /metrics: `charged`, `free` (an anonymous call of an unpriced plugin), `released` (given back). */
export type PaymentOutcome = 'charged' | 'free' | 'released';

/** `card`, `mpp`, `session` (a plugin call debiting a payment session), `voucher` (a signed voucher debiting one). */
export interface PaymentMeter {
  paid(method: string, outcome: PaymentOutcome, amountUsd: string | null): void;
  /** A payment refused with `status` (401, 402, 400…); `method` is `invalid` when the header named none we take. */
  refused(method: string, status: number): void;
}

const meters = new WeakMap<Registry, PaymentMeter>();

/**
 * The payment families in `registry` (issue #21), made once per registry: the plugin gateway and the payment-session
 * routes share them. `aop_payments_total{method,outcome}`, `aop_payments_usd_total{method,outcome}`,
 * `aop_payment_refusals_total{method,status}`.
 */
export function paymentMeter(registry: Registry): PaymentMeter {
  const existing = meters.get(registry);
  if (existing) return existing;
  const count = new Counter({
    name: 'aop_payments_total',
    help: 'Payments for plugin calls and session vouchers, by method (card, mpp, session, voucher) and outcome (charged, free, released).',
    labelNames: ['method', 'outcome'] as const,
    registers: [registry],
  });
  const usd = new Counter({
    name: 'aop_payments_usd_total',
    help: 'USD charged (outcome charged) and given back after a failed plugin call (outcome released), by method.',
    labelNames: ['method', 'outcome'] as const,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'aop_payment_refusals_total',
    help: 'Payments refused (402 payment required, 401 sign-in needed, 400 bad payment headers…), by method and status.',
    labelNames: ['method', 'status'] as const,
    registers: [registry],
  });
  const meter: PaymentMeter = {
    paid(method, outcome, amountUsd) {
      count.inc({ method, outcome });
      const amount = Number(amountUsd ?? 0);
      if (outcome !== 'free' && Number.isFinite(amount) && amount > 0) usd.inc({ method, outcome }, amount);
    },
    refused(method, status) {
      refusals.inc({ method, status: String(status) });
    },
  };
  meters.set(registry, meter);
  return meter;
}
