import { NOT_BLANK, invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { NAME_MAX as CRON_NAME_MAX } from './cron-jobs.service.js';
import { FREQUENCIES, HEARTBEAT_AGENT_ID_MAX } from './heartbeat.service.js';
import { TASK_AGENT_ID_MAX, TASK_NAME_MAX, TASK_PROMPT_MAX, TASK_SCHEDULE_MAX } from './scheduled-tasks.service.js';

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
  lastOutcome: Type.Optional(
    Type.Object(
      {
        status: Type.Union([Type.Literal('ok'), Type.Literal('error'), Type.Literal('skipped')]),
        detail: Type.Optional(Type.String({ description: 'OpenClaw’s words for an error or a skip, e.g. `heartbeat skipped: no-route`' })),
      },
      { description: 'how the last run ended, when the job has run: a skipped run has a `lastRun` time too' },
    ),
  ),
  system: Type.Optional(
    Type.Object(
      {
        kind: Type.Union([
          Type.Literal('heartbeat'),
          Type.Literal('memory'),
          Type.Literal('skill-review'),
          Type.Literal('openclaw'),
          Type.Literal('platform-heartbeat'),
        ]),
        description: Type.String({ description: 'what the job does, in words' }),
        deletable: Type.Boolean({ description: 'false: DELETE answers 403 (OpenClaw keeps the job from the agent configuration)' }),
      },
      { description: 'present for jobs the caller did not write: OpenClaw’s own, and the platform heartbeat' },
    ),
  ),
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

// ---------------------------------------------------------------------------------------------------------------------
// Request bodies. Each field answers with the message its handler check gave before (see `invalidAs` in
// @aop/core/request-schema), in the order the handlers checked them.

const enabled = Type.Boolean(invalidAs(refuse('FIELD_NOT_BOOLEAN', { field: 'enabled' })));

/** Required text, blank refused, at most `max` characters as sent. */
const requiredText = (field: string, max: number) =>
  Type.String({
    ...NOT_BLANK,
    maxLength: max,
    description: 'trimmed',
    ...invalidAs(refuse('FIELD_REQUIRED', { field }), { maxLength: refuse('FIELD_TOO_LONG', { field, max }) }),
  });

const taskName = requiredText('name', TASK_NAME_MAX);
const taskPrompt = requiredText('prompt', TASK_PROMPT_MAX);
const taskSchedule = Type.String({
  maxLength: TASK_SCHEDULE_MAX,
  description: 'a 5-field cron expression (UTC) or `every:<n>m|h`; one that never fires is refused',
  ...invalidAs(refuse('INVALID_SCHEDULE')),
});
const taskAgentId = orNull(
  Type.String({
    minLength: 1,
    maxLength: TASK_AGENT_ID_MAX,
    description: 'null or `all`: the task is for no particular agent',
    ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'agentId' })),
  }),
);

/**
 * `POST /api/scheduled-tasks`. Ajv checks an object's `required` list before its properties, so one object would answer
 * a missing `schedule` before a blank `name`; as an `allOf` of one object per required field, each field is checked
 * (present, then valid) in turn.
 */
export const CreateScheduledTaskBody = Type.Intersect([
  Type.Object({ name: taskName }),
  Type.Object({ schedule: taskSchedule }),
  Type.Object({ prompt: taskPrompt, agentId: Type.Optional(taskAgentId), enabled: Type.Optional(enabled) }),
]);
export type CreateScheduledTaskBody = Static<typeof CreateScheduledTaskBody>;

/** `PUT /api/scheduled-tasks`: the task's `id` and the fields to change. */
export const UpdateScheduledTaskBody = Type.Object({
  id: Type.String({ ...NOT_BLANK, ...invalidAs(refuse('FIELD_REQUIRED', { field: 'id' })) }),
  name: Type.Optional(taskName),
  schedule: Type.Optional(taskSchedule),
  prompt: Type.Optional(taskPrompt),
  agentId: Type.Optional(taskAgentId),
  enabled: Type.Optional(enabled),
});
export type UpdateScheduledTaskBody = Static<typeof UpdateScheduledTaskBody>;

/** `schedule` or `payload` of a cron job: an object whose `kind` says which fields it has (checked per kind by the service). */
const cronObject = (description: string) =>
  Type.Record(Type.String(), Type.Unknown(), { description, ...invalidAs(refuse('CRON_REQUIRED')) });

/** Longest agent id `/api/cron` takes (the platform's are 26 characters). */
export const CRON_AGENT_ID_MAX = 100;

/**
 * `POST /api/cron`. A missing or mistyped name, schedule or payload is the one `CRON_REQUIRED` answer; only a name of
 * the right type that is too long gets its own, and that only once schedule and payload are objects: so those two come
 * first.
 */
export const CreateCronJobBody = Type.Object({
  schedule: cronObject('`{ kind: "every", everyMs }` or `{ kind: "cron", expr, tz? }`'),
  payload: cronObject('`{ kind: "systemEvent", text }` or `{ kind: "agentTurn", message, model?, thinking?, timeoutSeconds? }`'),
  name: Type.String({
    ...NOT_BLANK,
    maxLength: CRON_NAME_MAX,
    description: 'trimmed',
    ...invalidAs(refuse('CRON_REQUIRED'), { maxLength: refuse('FIELD_TOO_LONG', { field: 'name', max: CRON_NAME_MAX }) }),
  }),
  enabled: Type.Optional(enabled),
  agentId: Type.Optional(
    Type.String({
      maxLength: CRON_AGENT_ID_MAX,
      description: 'which of your agents (issue #19); absent or blank: the spec’s gateway (your primary agent’s)',
      ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'agentId' })),
    }),
  ),
});
export type CreateCronJobBody = Static<typeof CreateCronJobBody>;

const frequency = Type.Unsafe<string>({
  type: 'string',
  enum: Object.keys(FREQUENCIES),
  ...invalidAs(refuse('INVALID_FREQUENCY', { allowed: Object.keys(FREQUENCIES).join(', ') })),
});

/** `PUT` (and the deprecated `POST`) `/api/heartbeat`. */
export const WriteHeartbeatBody = Type.Object({
  frequency: Type.Optional(frequency),
  enabled: Type.Optional(enabled),
  agentId: Type.Optional(
    orNull(
      Type.String({
        // Empty is "none", as absent or null; other text must not be blank.
        pattern: '^$|\\S',
        maxLength: HEARTBEAT_AGENT_ID_MAX,
        description: 'trimmed; absent, null or empty: the gateway’s heartbeat',
        ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'agentId' })),
      }),
    ),
  ),
});
export type WriteHeartbeatBody = Static<typeof WriteHeartbeatBody>;

/** The deprecated `DELETE /api/heartbeat`: only the agent is read. */
export const DeleteHeartbeatBody = Type.Object({
  agentId: Type.String({
    ...NOT_BLANK,
    maxLength: HEARTBEAT_AGENT_ID_MAX,
    description: 'trimmed',
    ...invalidAs(refuse('AGENT_ID_REQUIRED'), { maxLength: refuse('FIELD_NOT_STRING', { field: 'agentId' }) }),
  }),
});
export type DeleteHeartbeatBody = Static<typeof DeleteHeartbeatBody>;
