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

const NewAgentBlock = Type.Union([Type.Literal('paid-plan'), Type.Literal('subscription'), Type.Literal('agent-limit')]);

/** `GET /api/dashboard/new-agent`: whether the caller may create another agent, read before the wizard opens. */
export const NewAgentGate = Type.Object({
  allowed: Type.Boolean(),
  reason: Type.Union([NewAgentBlock, Type.Null()], { description: 'what stops it, in `POST /api/provision`’s order; null when allowed' }),
  message: Type.Union([Type.String(), Type.Null()], { description: 'the error `POST /api/provision` would answer' }),
  plan: Type.String(),
  planTitle: Type.String(),
  subscriptionStatus: Type.String(),
  admin: Type.Boolean({ description: 'administrators skip the plan, subscription and limit checks' }),
  agents: Type.Object({
    count: Type.Integer({ description: 'agents that count against the limit (not in `error`)' }),
    limit: Type.Union([Type.Integer(), Type.Null()], { description: 'null: no limit applies' }),
  }),
  cardPayments: Type.Boolean({ description: 'whether plans can be bought by card on this server' }),
  operatorCommand: Type.Union([Type.String(), Type.Null()], {
    description: 'when blocked and nothing can be bought here: the operator CLI command that puts the account on a plan',
  }),
  platformKeyProviders: Type.Array(Type.String(), {
    description: 'AI providers whose platform key a new agent gets when its owner brings none (no key is ever shown)',
  }),
});
export type NewAgentGate = Static<typeof NewAgentGate>;
