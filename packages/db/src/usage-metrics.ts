import { Counter, type Registry } from '@aop/core';

/** What the usage ledger's families record: one debit (a row of `usage_events`) of `kind`, costing `costUsd`. */
export interface UsageDebitMeter {
  debited(kind: string, costUsd: number | string): void;
}

/**
 * `aop_usage_debits_total{kind}` and `aop_usage_debits_usd_total{kind}` (issue #21): the usage ledger's debits as each
 * service writes them (the web: chat turns, plugin calls, demo chat; the backend: `/api/ai` calls). One definition for
 * both services, so the names and labels cannot drift apart.
 */
export function createUsageDebitMeter(registry: Registry): UsageDebitMeter {
  const debits = new Counter({
    name: 'aop_usage_debits_total',
    help: 'Rows written to the usage ledger (billable calls), by kind.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const usd = new Counter({
    name: 'aop_usage_debits_usd_total',
    help: 'USD debited on the usage ledger, by kind.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  return {
    debited(kind, costUsd) {
      debits.inc({ kind });
      const amount = Number(costUsd);
      // A counter only grows: a cost that is not a positive number (a free call) adds to the count only.
      if (Number.isFinite(amount) && amount > 0) usd.inc({ kind }, amount);
    },
  };
}
