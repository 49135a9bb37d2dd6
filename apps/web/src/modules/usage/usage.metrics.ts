import type { Registry } from '@aop/core';
import { createUsageDebitMeter } from '@aop/db';
import { onUsageRecorded } from './usage.service.js';

/** The web's usage-ledger debits in `registry` (`aop_usage_debits_total`, `…_usd_total`); returns the unsubscribe function. */
export function registerUsageMetrics(registry: Registry): () => void {
  const meter = createUsageDebitMeter(registry);
  return onUsageRecorded((event) => meter.debited(event.kind, event.costUsd));
}
