import { type Static, Type } from '@sinclair/typebox';

const Open = (description: string) => Type.Object({ kind: Type.String() }, { additionalProperties: true, description });
const NullableIso = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

export const CronJob = Type.Object({
  id: Type.String(),
  name: Type.String(),
  enabled: Type.Boolean(),
  schedule: Open('`{ kind: "every", everyMs }` or `{ kind: "cron", expr }`; other gateway kinds pass through'),
  payload: Open('`{ kind: "systemEvent", text }`, `{ kind: "agentTurn", message }`; other gateway kinds pass through'),
  lastRun: NullableIso,
  nextRun: NullableIso,
});
export type CronJob = Static<typeof CronJob>;

export const CronList = Type.Object({
  jobs: Type.Array(CronJob),
  total: Type.Optional(Type.Integer()),
  error: Type.Optional(Type.String()),
  source: Type.Union([Type.Literal('gateway'), Type.Literal('gateway-error')]),
});
export type CronList = Static<typeof CronList>;

const Source = Type.Union([Type.Literal('gateway'), Type.Literal('db')]);

export const Heartbeat = Type.Object({
  source: Source,
  enabled: Type.Boolean(),
  frequency: Type.Optional(Type.String()),
  nextRun: Type.Optional(NullableIso),
  lastRun: Type.Optional(NullableIso),
  message: Type.Optional(Type.String()),
});
export type Heartbeat = Static<typeof Heartbeat>;

export const HeartbeatWrite = Type.Object({
  success: Type.Literal(true),
  source: Source,
  enabled: Type.Boolean(),
  frequency: Type.String(),
});
export type HeartbeatWrite = Static<typeof HeartbeatWrite>;

export const ScheduledTask = Type.Object({
  id: Type.String(),
  agentId: Type.Union([Type.String(), Type.Null()]),
  name: Type.String(),
  schedule: Type.String({ description: 'a 5-field cron expression (UTC) or `every:<n>m|h`' }),
  prompt: Type.String(),
  enabled: Type.Boolean(),
  lastRun: Type.Union([Type.String(), Type.Null()]),
  nextRun: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type ScheduledTask = Static<typeof ScheduledTask>;
