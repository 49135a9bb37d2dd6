import { useCallback, useId, useState } from 'react';
import { client, request } from '../../api.js';
import type { WorkflowRun, WorkflowRunStep } from '../../api-types.js';
import { InlineError, Loaded } from '../../components/states.js';
import { formatDateTime, formatDuration } from '../../format.js';
import { useAction, useApi } from '../../use-api.js';

/** How many of the last runs the editor shows. */
const SHOWN = 5;

const STATUS_BADGE: Record<WorkflowRun['status'], string> = { succeeded: 'badge-ok', failed: 'badge-bad', running: 'badge-busy' };
const STEP_WORDS: Record<WorkflowRunStep['status'], string> = { succeeded: 'done', failed: 'failed', stopped: 'condition not met' };

function duration(run: WorkflowRun): string {
  if (!run.finishedAt) return 'still running';
  return formatDuration(Date.parse(run.finishedAt) - Date.parse(run.startedAt));
}

/**
 * Running the workflow and its last runs: each with its result (or why it failed) and, on demand, its steps. A run
 * uses the saved workflow, so the button waits for unsaved changes to be saved.
 */
export function WorkflowRuns({ workflowId, unsaved }: { workflowId: string | null; unsaved: boolean }) {
  const ids = useId();
  const runs = useApi(workflowId === null ? null : '/api/workflows/{workflowId}/runs', {
    params: { path: { workflowId: workflowId ?? '' }, query: { limit: SHOWN } },
  });
  const [input, setInput] = useState('');
  const [notice, setNotice] = useState<string>();
  const start = useAction(
    useCallback(
      (id: string, text: string) =>
        request(
          client.POST('/api/workflows/{workflowId}/run', {
            params: { path: { workflowId: id } },
            body: text.trim() ? { input: text } : {},
          }),
        ),
      [],
    ),
  );

  const blocked =
    workflowId === null ? 'Save the workflow to run it.' : unsaved ? 'Save your changes first: a run uses the saved workflow.' : null;

  const onRun = async () => {
    setNotice(undefined);
    if (blocked || workflowId === null) {
      setNotice(blocked ?? undefined);
      return;
    }
    const answer = await start.run(workflowId, input);
    await runs.reload();
    if (answer)
      setNotice(answer.run.status === 'succeeded' ? 'The run finished.' : `The run failed: ${answer.run.error ?? 'see its steps'}`);
  };

  return (
    // Spaced from the editor above it as the editor is from its toolbar (the page's styles give cards no outer margin).
    <section className="card stack" style={{ marginTop: '1rem' }} aria-labelledby={`${ids}-heading`}>
      <h2 id={`${ids}-heading`}>Runs</h2>
      <p className="muted">
        A run starts at the triggers and follows the connections: each action is a turn of your agent, a condition checks the previous
        result (contains, not contains, equals, starts with, ends with, is empty), and the outputs collect the result.
      </p>
      <div className="row">
        <div>
          <label htmlFor={`${ids}-input`}>Input for the trigger</label>
          <input
            id={`${ids}-input`}
            value={input}
            maxLength={10_000}
            placeholder="optional: what the workflow starts on"
            onChange={(e) => setInput(e.target.value)}
          />
        </div>
        <button
          type="button"
          className="button primary"
          aria-disabled={blocked !== null || start.pending}
          aria-describedby={blocked ? `${ids}-blocked` : undefined}
          onClick={() => void onRun()}
        >
          {start.pending ? 'Running…' : 'Run workflow'}
        </button>
      </div>
      {blocked ? (
        <p id={`${ids}-blocked`} className="hint">
          {blocked}
        </p>
      ) : null}
      <InlineError message={start.error ? `Not run: ${start.error}` : undefined} />
      {notice ? (
        <p className="notice" role="status">
          {notice}
        </p>
      ) : null}
      {workflowId === null ? null : (
        <Loaded resource={runs} isEmpty={(d) => d.runs.length === 0} empty={<p className="muted">No runs yet.</p>}>
          {(d) => (
            <ol className="stack wf-runs" aria-label="Last runs">
              {d.runs.map((run) => (
                <li key={run.id} className="stack">
                  <div className="row">
                    <span className={`badge ${STATUS_BADGE[run.status]}`}>{run.status}</span>
                    <time dateTime={run.startedAt}>{formatDateTime(run.startedAt)}</time>
                    <span className="muted">
                      {run.steps.length} step{run.steps.length === 1 ? '' : 's'}, {duration(run)}
                    </span>
                  </div>
                  {run.error ? <p className="inline-error">{run.error}</p> : null}
                  {run.result !== null ? (
                    <p>
                      <strong>Result:</strong> {run.result}
                    </p>
                  ) : run.status === 'succeeded' ? (
                    <p className="muted">No output step was reached.</p>
                  ) : null}
                  <details>
                    <summary>Steps</summary>
                    <ol>
                      {run.steps.map((step, i) => (
                        // A step can run more than once: its place in the run is what tells it apart.
                        <li key={i}>
                          <strong>{step.label}</strong> ({step.type}): {STEP_WORDS[step.status]}
                          {step.error ? <span className="inline-error"> {step.error}</span> : null}
                          {step.output && step.type === 'action' ? <div className="muted">{step.output}</div> : null}
                        </li>
                      ))}
                    </ol>
                  </details>
                </li>
              ))}
            </ol>
          )}
        </Loaded>
      )}
    </section>
  );
}
