import { FleetCostsSchema } from '@aop/core/mission-control';
import { type Static, Type } from '@sinclair/typebox';

// The other answers are the backend's own objects, defined once in @aop/core; the dashboard reads them from here too.
export type { FleetBooking, FleetBookings, FleetGraph, FleetNode, FleetTrace } from '@aop/core/mission-control';

/**
 * Spend in USD from the usage ledger (all time). A caller without a session gets the spec's default shape, `{ costs: [] }`:
 * no figures rather than invented zeros.
 */
export const WebCosts = Type.Object({
  costs: FleetCostsSchema.properties.costs,
  totalSpend: Type.Optional(FleetCostsSchema.properties.totalSpend),
  managedAiCost: Type.Optional(FleetCostsSchema.properties.managedAiCost),
  coordinationRevenue: Type.Optional(FleetCostsSchema.properties.coordinationRevenue),
});
export type WebCosts = Static<typeof WebCosts>;
