import { wakesOnMessage } from '@aop/core/agent-state';
import { STANDING_HEARTBEAT_SKIPS, heartbeatReason } from '@aop/core/cron-run';
import { cronExpressionProblem, timeZoneProblem } from '@aop/core/schedule-expression';
import { type FormEvent, useEffect, useRef, useState } from 'react';
import type { ApiRequestBody } from '@aop/sdk';
import { client, errorMessage, request } from '../../api.js';
import type { CronJob, CronList, Heartbeat } from '../../api-types.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { InlineError, Loaded } from '../../components/states.js';
import { type Resource, useApi } from '../../use-api.js';
import { type AgentStateNow, formatEvery, formatTime } from './shared.js';

/**
 * The frequencies `PUT /api/heartbeat` accepts (spec §4.10; the API names them in its 400 "frequency must be one of
 * …" and has no endpoint that lists them).
 */
const FREQUENCIES = ['30m', '1h', '2h', '3h', '6h', '12h'] as const;
const FREQUENCY_WORDS: Record<string, string> = {
  '30m': 'every 30 minutes',
  '1h': 'every hour',
  '2h': 'every 2 hours',
  '3h': 'every 3 hours',
  '6h': 'every 6 hours',
  '12h': 'every 12 hours',
};

const UNIT_MS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const;
type Unit = keyof typeof UNIT_MS;

/**
 * The schema types `schedule` and `payload` by `kind` alone (other gateway kinds pass through with fields of their
 * own), so the fields each known kind carries are read as unknown and checked.
 */
type Open = Record<string, unknown>;
const asText = (value: unknown) => (typeof value === 'string' ? value : '');

function scheduleText(schedule: CronJob['schedule']): string {
  const { everyMs, expr, tz } = schedule as Open;
  if (schedule.kind === 'every' && typeof everyMs === 'number') return formatEvery(everyMs);
  if (schedule.kind === 'cron') return `cron ${asText(expr)}${tz ? ` (${asText(tz)})` : ''}`;
  return schedule.kind;
}

function payloadText(payload: CronJob['payload']): string {
  if (payload.kind === 'systemEvent') return asText((payload as Open).text);
  if (payload.kind === 'agentTurn') return asText((payload as Open).message);
  return `(${payload.kind})`;
}

/** Job messages can be pages long (the runtime's own jobs): a long one shows its start and opens on demand. */
function JobMessage({ text }: { text: string }) {
  if (text.length <= 160) return <>{text}</>;
  return (
    <details>
      <summary>{`${text.slice(0, 120).trimEnd()}…`}</summary>
      {text}
    </details>
  );
}

const SYSTEM_BADGES: Record<NonNullable<CronJob['system']>['kind'], string> = {
  heartbeat: 'system',
  memory: 'system',
  'skill-review': 'system',
  openclaw: 'system',
  'platform-heartbeat': 'heartbeat',
};

/** How a job's last run ended when it did not go through (`skipped: …`, `failed: …`); null when it ran or never did. */
function outcomeText(job: CronJob): string | null {
  const outcome = job.lastOutcome;
  if (!job.lastRun || !outcome || outcome.status === 'ok') return null;
  const reason = outcome.detail ? heartbeatReason(outcome.detail) : undefined;
  const words = reason && Object.hasOwn(STANDING_HEARTBEAT_SKIPS, reason) ? STANDING_HEARTBEAT_SKIPS[reason] : reason;
  return `${outcome.status === 'error' ? 'failed' : 'skipped'}${words ? `: ${words}` : ''}`;
}

/** The last run's time and, unless it went through, how it ended (a skipped run has a time like one that ran). */
function LastRun({ job }: { job: CronJob }) {
  const outcome = outcomeText(job);
  return (
    <>
      {formatTime(job.lastRun)}
      {outcome ? (
        <span className={job.lastOutcome?.status === 'error' ? 'job-outcome inline-error' : 'job-outcome muted'}>{outcome}</span>
      ) : null}
    </>
  );
}

/** `agentState`: the agent's state machine, from the page's event stream (a sleeping agent's jobs are not listed). */
export function ScheduleTab({ agentId, agentState }: { agentId: string; agentState?: AgentStateNow | undefined }) {
  // One list for the job table and the heartbeat section, so both say the same and a save refreshes both.
  // This agent's gateway, whichever agent is primary (issue #19).
  const cron = useApi('/api/cron', { params: { query: { agentId } } });
  const heartbeat = useApi('/api/heartbeat', { params: { query: { agentId } } });
  const asleep = agentState !== undefined && wakesOnMessage(agentState.state);
  const stopped = agentState?.state === 'stopped';
  const live = agentState?.state === 'live';
  const { reload: reloadCron } = cron;
  const { reload: reloadHeartbeat } = heartbeat;
  // What could not be read while the agent slept or started is read again once it is live (woken by a change here,
  // a message or a due job); not when the tab opens on a live agent, which has just read it.
  const before = useRef(agentState?.state);
  useEffect(() => {
    if (live && before.current !== undefined && before.current !== 'live') void Promise.all([reloadCron(), reloadHeartbeat()]);
    before.current = agentState?.state;
  }, [agentState?.state, live, reloadCron, reloadHeartbeat]);
  return (
    <div className="stack">
      <p className="notice">Scheduled jobs and the heartbeat run on this agent’s gateway.</p>
      {asleep ? <AsleepNotice agentId={agentId} /> : null}
      {stopped ? (
        <p className="notice" role="status">
          The agent is stopped: its jobs are kept and do not run until it is started again (Lifecycle tab). New jobs are added once it runs;
          a heartbeat saved here is put on its gateway when it starts.
        </p>
      ) : null}
      <CronJobs agentId={agentId} cron={cron} asleep={asleep} stopped={stopped} />
      <HeartbeatSettings agentId={agentId} cron={cron} heartbeat={heartbeat} asleep={asleep} stopped={stopped} />
    </div>
  );
}

/**
 * A sleeping agent's jobs are kept on its gateway, which is stopped: listing them would wake it, so they are listed
 * when it is awake; a change wakes it first (the API does), and so does this button.
 */
function AsleepNotice({ agentId }: { agentId: string }) {
  const [waking, setWaking] = useState(false);
  const [error, setError] = useState<string>();
  const wake = async () => {
    setWaking(true);
    setError(undefined);
    try {
      // Answers once the agent is live (or the wait ran out); the page's state stream follows it meanwhile.
      await request(client.POST('/api/agents/{id}/start', { params: { path: { id: agentId } } }));
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setWaking(false);
    }
  };
  return (
    <div className="notice stack" role="status">
      <p>
        The agent is asleep after being idle: its jobs and heartbeat are kept, and its next due job wakes it. They are listed while it is
        awake. Adding or deleting a job, or saving the heartbeat, wakes it first (it starts again: this can take up to a minute).
      </p>
      <div className="row">
        <button type="button" className="button secondary" disabled={waking} onClick={() => void wake()}>
          Wake it to list its jobs
        </button>
        {waking ? <span className="muted">Waking the agent…</span> : null}
      </div>
      <InlineError message={error} />
    </div>
  );
}

function CronJobs({ agentId, cron, asleep, stopped }: { agentId: string; cron: Resource<CronList>; asleep: boolean; stopped: boolean }) {
  const [deleteError, setDeleteError] = useState<string>();

  const remove = async (job: CronJob) => {
    setDeleteError(undefined);
    try {
      await request(client.DELETE('/api/cron', { params: { query: { jobId: job.id, agentId } } }));
    } catch (err) {
      setDeleteError(`Could not delete “${job.name}”: ${errorMessage(err)}`);
    }
    await cron.reload();
  };

  return (
    <section aria-labelledby="cron-heading" className="stack">
      <div className="row section-head">
        <h2 id="cron-heading">Scheduled jobs</h2>
        <button type="button" className="button secondary" onClick={() => void cron.reload()}>
          Refresh jobs
        </button>
      </div>
      <Loaded resource={cron} isEmpty={(d) => d.jobs.length === 0 && !d.error} empty={<p>No scheduled jobs yet. Add one below.</p>}>
        {(d) =>
          d.error && asleep ? (
            <p className="muted">Not listed while the agent sleeps.</p>
          ) : d.error && stopped ? (
            <p className="muted">Not listed while the agent is stopped.</p>
          ) : d.error ? (
            <div className="state state-error" role="alert">
              <p>The gateway did not list the jobs: {d.error}</p>
            </div>
          ) : (
            <div className="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Schedule</th>
                    <th scope="col">Message</th>
                    <th scope="col">Next run</th>
                    <th scope="col">Last run</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.jobs.map((job) => (
                    <tr key={job.id} data-system={job.system ? job.system.kind : undefined}>
                      <td>
                        {job.name}
                        {job.system ? <span className="badge badge-idle job-off">{SYSTEM_BADGES[job.system.kind]}</span> : null}
                        {job.enabled ? null : <span className="badge badge-idle job-off">disabled</span>}
                      </td>
                      <td className="mono">{scheduleText(job.schedule)}</td>
                      <td className="job-message">
                        {/* A system job's message is an internal token or the platform's prompt: say what the job does. */}
                        {job.system ? job.system.description : <JobMessage text={payloadText(job.payload)} />}
                      </td>
                      <td>{formatTime(job.nextRun)}</td>
                      <td>
                        <LastRun job={job} />
                      </td>
                      <td>
                        {job.system ? (
                          <span className="muted">{job.system.kind === 'platform-heartbeat' ? 'Set under Heartbeat' : 'Read-only'}</span>
                        ) : (
                          <ConfirmButton danger question={`Delete the job “${job.name}”?`} onConfirm={() => remove(job)}>
                            Delete<span className="visually-hidden"> job {job.name}</span>
                          </ConfirmButton>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loaded>
      <InlineError message={deleteError} />
      <NewJobForm agentId={agentId} asleep={asleep} stopped={stopped} onAdded={() => void cron.reload()} />
    </section>
  );
}

function NewJobForm({
  agentId,
  asleep,
  stopped,
  onAdded,
}: {
  agentId: string;
  asleep: boolean;
  /** A stopped agent's gateway cannot take a job (a change wakes a sleeping agent, not a stopped one): Start it first. */
  stopped: boolean;
  onAdded: () => void;
}) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'cron' | 'every'>('cron');
  const [expr, setExpr] = useState('');
  const [tz, setTz] = useState('');
  const [every, setEvery] = useState('1');
  const [unit, setUnit] = useState<Unit>('hours');
  const [payloadKind, setPayloadKind] = useState<'systemEvent' | 'agentTurn'>('systemEvent');
  const [text, setText] = useState('');
  const [enabled, setEnabled] = useState(true);
  const [busy, setBusy] = useState(false);
  const [wakingFirst, setWakingFirst] = useState(false);
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const exprProblem = expr.trim() === '' ? null : cronExpressionProblem(expr);
  const tzProblem = tz.trim() === '' ? null : timeZoneProblem(tz);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setDone(undefined);
    if (name.trim() === '') return setError('Give the job a name.');
    let schedule: Record<string, unknown>;
    if (kind === 'cron') {
      if (expr.trim() === '') return setError('Enter a cron expression, for example 0 9 * * 1-5.');
      // The server's own parser: what it would refuse is refused here, in the same words, before anything is sent.
      if (exprProblem) return setError(`Cron expression: ${exprProblem}.`);
      if (tzProblem) return setError(`Time zone: ${tzProblem}.`);
      schedule = { kind: 'cron', expr: expr.trim(), ...(tz.trim() ? { tz: tz.trim() } : {}) };
    } else {
      const n = Number(every);
      if (!Number.isInteger(n) || n <= 0) return setError('“Every” must be a whole number above 0.');
      schedule = { kind: 'every', everyMs: n * UNIT_MS[unit] };
    }
    if (text.trim() === '') return setError('Enter the message the agent receives on each run.');
    const payload = payloadKind === 'systemEvent' ? { kind: 'systemEvent', text } : { kind: 'agentTurn', message: text };
    setBusy(true);
    // Said for the whole save: the agent's state moves on (starting, live) while the call waits for it.
    setWakingFirst(asleep);
    try {
      await request(client.POST('/api/cron', { body: { name: name.trim(), schedule, payload, enabled, agentId } }));
      setDone(`Added “${name.trim()}”.`);
      setName('');
      setExpr('');
      setText('');
      onAdded();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="card stack" onSubmit={(e) => void submit(e)} noValidate aria-labelledby="new-job-heading">
      <h3 id="new-job-heading">New job</h3>
      <div className="form-grid">
        <div>
          <label htmlFor="job-name">Job name</label>
          <input id="job-name" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
        </div>
        <div>
          <label htmlFor="job-kind">Schedule type</label>
          <select id="job-kind" value={kind} onChange={(e) => setKind(e.target.value as 'cron' | 'every')}>
            <option value="cron">Cron expression</option>
            <option value="every">Every N minutes, hours or days</option>
          </select>
        </div>
        {kind === 'cron' ? (
          <>
            <div>
              <label htmlFor="job-expr">Cron expression</label>
              <input
                id="job-expr"
                className="mono"
                value={expr}
                maxLength={200}
                placeholder="0 9 * * 1-5"
                aria-describedby="job-expr-hint"
                aria-invalid={exprProblem ? true : undefined}
                onChange={(e) => setExpr(e.target.value)}
              />
              <span id="job-expr-hint" className={exprProblem ? 'hint inline-error' : 'hint'}>
                {exprProblem ?? 'minute hour day-of-month month day-of-week (UTC unless a time zone is given)'}
              </span>
            </div>
            <div>
              <label htmlFor="job-tz">Time zone</label>
              <input
                id="job-tz"
                value={tz}
                maxLength={100}
                placeholder="optional, e.g. Europe/London"
                aria-invalid={tzProblem ? true : undefined}
                aria-describedby={tzProblem ? 'job-tz-problem' : undefined}
                onChange={(e) => setTz(e.target.value)}
              />
              {tzProblem ? (
                <span id="job-tz-problem" className="hint inline-error">
                  {tzProblem}
                </span>
              ) : null}
            </div>
          </>
        ) : (
          <div className="row every-row">
            <div>
              <label htmlFor="job-every">Every</label>
              <input id="job-every" type="number" min={1} step={1} value={every} onChange={(e) => setEvery(e.target.value)} />
            </div>
            <div>
              <label htmlFor="job-unit">Unit</label>
              <select id="job-unit" value={unit} onChange={(e) => setUnit(e.target.value as Unit)}>
                <option value="minutes">minutes</option>
                <option value="hours">hours</option>
                <option value="days">days</option>
              </select>
            </div>
          </div>
        )}
        <div>
          <label htmlFor="job-payload">Run as</label>
          <select id="job-payload" value={payloadKind} onChange={(e) => setPayloadKind(e.target.value as 'systemEvent' | 'agentTurn')}>
            <option value="systemEvent">A message in the agent’s main session</option>
            <option value="agentTurn">A separate agent turn</option>
          </select>
        </div>
      </div>
      <div>
        <label htmlFor="job-text">Message text</label>
        <textarea id="job-text" rows={3} maxLength={10_000} value={text} onChange={(e) => setText(e.target.value)} />
      </div>
      <div className="config-field check">
        <input id="job-enabled" type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
        <label htmlFor="job-enabled">Job enabled</label>
      </div>
      <div className="row">
        <button
          type="submit"
          className="button primary"
          disabled={busy || stopped}
          title={stopped ? 'The agent is stopped: start it to add a job.' : undefined}
        >
          Add job
        </button>
        {busy ? <span className="muted">{wakingFirst ? 'Waking the agent, then adding…' : 'Adding…'}</span> : null}
        {stopped ? <span className="muted">Start the agent to add a job.</span> : null}
      </div>
      <InlineError message={error} />
      {done ? (
        <p className="notice" role="status">
          {done}
        </p>
      ) : null}
    </form>
  );
}

/** What the heartbeat section says about OpenClaw's own heartbeat, read from the same job list the table shows. */
function systemHeartbeatText(cron: Resource<CronList>): string | null {
  const job = cron.data?.jobs.find((j) => j.system?.kind === 'heartbeat');
  if (!job) return null;
  const when = job.enabled ? `${scheduleText(job.schedule)}, next ${formatTime(job.nextRun)}` : 'switched off';
  const outcome = outcomeText(job);
  const last = outcome ? ` Its last beat (${formatTime(job.lastRun)}) was ${outcome}.` : '';
  return `OpenClaw's own heartbeat (“${job.name}”, listed above as a system job) is ${when}.${last} It follows the agent configuration (agents.defaults.heartbeat), not this form.`;
}

function HeartbeatSettings({
  agentId,
  cron,
  heartbeat,
  asleep,
  stopped,
}: {
  agentId: string;
  cron: Resource<CronList>;
  heartbeat: Resource<Heartbeat>;
  asleep: boolean;
  /** A stopped agent's gateway cannot take a heartbeat: it is saved, and its next start puts it there (the API does). */
  stopped: boolean;
}) {
  const [enabled, setEnabled] = useState(true);
  const [frequency, setFrequency] = useState<string>('30m');
  const [busy, setBusy] = useState(false);
  const [wakingFirst, setWakingFirst] = useState(false);
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();

  // The form starts from what the API answered, and again after each save.
  useEffect(() => {
    if (!heartbeat.data) return;
    setEnabled(heartbeat.data.enabled);
    if (heartbeat.data.frequency) setFrequency(heartbeat.data.frequency);
  }, [heartbeat.data]);

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setWakingFirst(asleep);
    setError(undefined);
    setDone(undefined);
    try {
      // A frequency set elsewhere (not one of the choices) goes back as it is: the API says whether it takes it.
      const body = { agentId, frequency: frequency as ApiRequestBody<'/api/heartbeat', 'put'>['frequency'], enabled };
      const answer = await request(client.PUT('/api/heartbeat', { body }));
      const state = answer.enabled ? `on, ${FREQUENCY_WORDS[answer.frequency] ?? answer.frequency}` : 'off';
      const where =
        answer.source === 'gateway'
          ? 'on the gateway'
          : stopped
            ? 'in the platform settings; starting the agent puts it on its gateway'
            : 'in the platform settings';
      setDone(`Heartbeat ${state}: saved ${where}.`);
      // The platform heartbeat is a job on the gateway: the table shows it too.
      await Promise.all([heartbeat.reload(), cron.reload()]);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  // A frequency the gateway reports that is not one of the choices (set elsewhere) is still shown as it is.
  const choices: string[] = [...FREQUENCIES];
  if (!choices.includes(frequency)) choices.push(frequency);
  const systemHeartbeat = systemHeartbeatText(cron);

  return (
    <section aria-labelledby="heartbeat-heading" className="stack">
      <h2 id="heartbeat-heading">Heartbeat</h2>
      <Loaded resource={heartbeat}>
        {(hb) => (
          <form className="card stack" onSubmit={(e) => void save(e)}>
            {systemHeartbeat ? <p className="muted">{systemHeartbeat}</p> : null}
            <p className="muted">
              {hb.source === 'gateway'
                ? `Platform heartbeat: the “platform-heartbeat” job on the gateway. Next run ${formatTime(hb.nextRun)}; last run ${formatTime(hb.lastRun)}.`
                : asleep
                  ? 'Platform heartbeat: its job on the gateway is not read while the agent sleeps; shown here are the settings the platform keeps. Saving wakes the agent and sets it on its gateway.'
                  : stopped
                    ? 'Platform heartbeat: its job on the gateway is not read while the agent is stopped; shown here are the settings the platform keeps. Saving keeps them for its next start, which puts them on its gateway.'
                    : 'Platform heartbeat: saved settings; there is no platform-heartbeat job on the gateway for this agent now. Saving puts one there when the gateway holds this agent.'}
              {hb.message ? ` ${hb.message}.` : ''}
            </p>
            <div className="config-field check">
              <input id="heartbeat-enabled" type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
              <label htmlFor="heartbeat-enabled">Heartbeat enabled</label>
            </div>
            <div>
              <label htmlFor="heartbeat-frequency">Heartbeat frequency</label>
              <select id="heartbeat-frequency" value={frequency} onChange={(e) => setFrequency(e.target.value)}>
                {choices.map((f) => (
                  <option key={f} value={f} disabled={!(FREQUENCIES as readonly string[]).includes(f)}>
                    {FREQUENCY_WORDS[f] ?? `${f} (set elsewhere)`}
                  </option>
                ))}
              </select>
            </div>
            <div className="row">
              <button type="submit" className="button primary" disabled={busy}>
                Save heartbeat
              </button>
              {busy ? <span className="muted">{wakingFirst ? 'Waking the agent, then saving…' : 'Saving…'}</span> : null}
            </div>
            <InlineError message={error} />
            {done ? (
              <p className="notice" role="status">
                {done}
              </p>
            ) : null}
          </form>
        )}
      </Loaded>
    </section>
  );
}
