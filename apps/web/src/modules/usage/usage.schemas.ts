import { type Static, Type } from '@sinclair/typebox';

const Money = Type.Number({ description: 'USD, rounded to 4 decimals' });

export const CostReport = Type.Object({
  period: Type.String(),
  summary: Type.Object({ totalCost: Money, totalTokens: Type.Integer(), totalCalls: Type.Integer(), avgCostPerCall: Money }),
  agents: Type.Array(
    Type.Object({
      name: Type.String(),
      tokens: Type.Integer(),
      cost: Money,
      calls: Type.Integer(),
      avgCostPerCall: Money,
      model: Type.String({ description: 'the model the agent called most' }),
    }),
  ),
  daily: Type.Array(Type.Object({ date: Type.String({ description: 'UTC day, e.g. `Nov 22`' }), cost: Money, tokens: Type.Integer() })),
  modelBreakdown: Type.Array(Type.Object({ model: Type.String(), percent: Type.Number(), cost: Money })),
  isMockData: Type.Boolean(),
  plan: Type.String(),
  planMonthlyCost: Type.Number({ description: 'GBP per month: the plan’s card price (PLAN_PRICES_GBP), else its list price' }),
  agentCount: Type.Integer(),
  activeAgents: Type.Integer(),
});
export type CostReport = Static<typeof CostReport>;

export const DashboardStats = Type.Object({
  agents: Type.Object({ active: Type.Integer(), total: Type.Integer(), limit: Type.Integer(), newToday: Type.Integer() }),
  skills: Type.Object({ installed: Type.Integer() }),
  tasks: Type.Object({ total: Type.Integer() }),
});
export type DashboardStats = Static<typeof DashboardStats>;
