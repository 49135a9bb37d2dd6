import { type AgentAction, actionBlockedReason } from '@aop/core/agent-state';
import { useState } from 'react';
import { Link } from 'wouter';
import { ApiError, client, errorMessage, request } from '../../api.js';
import type { LifecycleAnswer } from '../../api-types.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { Loading } from '../../components/states.js';
import { StatusBadge } from '../../components/status-badge.js';
import { useApi } from '../../use-api.js';
import { formatTime, type useAgentState } from './shared.js';

type Action = AgentAction;

const ACTIONS: readonly { action: Action; label: string; question: string; danger?: boolean; hint: string }[] = [
  { action: 'start', label: 'Start', question: 'Start the agent?', hint: 'Starts a stopped agent.' },
  { action: 'stop', label: 'Stop', question: 'Stop the agent? It will not answer until started again.', danger: true, hint: 'Stops it.' },
  { action: 'restart', label: 'Restart', question: 'Restart the agent?', hint: 'Stops and starts it again.' },
  {
    action: 'update',
    label: 'Update',
    question: 'Update the agent to this version? It restarts; if the new version does not start, the previous one comes back.',
    hint: 'Installs another runtime version.',
  },
  {
    action: 'repair',
    label: 'Repair',
    question: 'Repair the agent?',
    hint: 'Rewrites its runtime configuration, clears stale locks and starts it again.',
  },
  {
    action: 'reset-memory',
    label: 'Reset memory',
    question: 'Erase the agent’s memory? This cannot be undone.',
    danger: true,
    hint: 'Clears what it remembers.',
  },
];

/** The backend's version rule for updates (`VERSION_FORMAT`). */
const VERSION = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

interface Outcome {
  action: Action;
  ok: boolean;
  text: string;
}

/**
 * Words for an action's answer: done when the state it asked for was reached, on the way (202) otherwise, with the
 * runtime version it names.
 */
function describe(label: string, answer: LifecycleAnswer): string {
  const parts: string[] = [];
  if (answer.pending) parts.push(`${label} accepted; the agent is ${answer.state} (${answer.reason}). This page follows it`);
  else parts.push(`${label} done; the agent is ${answer.state}`);
  if (typeof answer.message === 'string') parts.push(answer.message.replace(/\.$/, ''));
  if (typeof answer.openclawVersion === 'string') parts.push(`runtime ${answer.openclawVersion}`);
  if (typeof answer.previousImage === 'string') parts.push(`previously ${answer.previousImage}`);
  return `${parts.join('; ')}.`;
}

/**
 * Start, stop, restart, update, repair and memory reset of this page's agent (`POST /api/agents/:id/<action>`, issue
 * #19). The health card and the buttons follow the agent's state as its event stream pushes it (the one state machine,
 * `@aop/core/agent-state`): only the actions valid in that state are enabled, each other one says why in words. A call
 * answers once the state it asked for is reached (200), or says the agent is on its way (202) and the stream shows the
 * rest.
 */
export function LifecycleTab({
  agentId,
  live,
  onChanged,
}: {
  agentId: string;
  live: ReturnType<typeof useAgentState>;
  onChanged: () => void;
}) {
  const [running, setRunning] = useState<Action | null>(null);
  const [outcome, setOutcome] = useState<Outcome>();
  const [version, setVersion] = useState('');
  const [versionError, setVersionError] = useState<string>();
  const current = live.state;
  // Agents that share this one's gateway (issue #20), by name when the list has them.
  const companions = current?.sharesGatewayWith ?? [];
  const agents = useApi(companions.length > 0 ? '/api/agents' : null);
  const nameOf = (id: string) => agents.data?.agents.find((a) => a.id === id)?.name ?? id;

  const run = async (action: Action, label: string) => {
    const wanted = version.trim();
    if (action === 'update' && wanted && !VERSION.test(wanted)) {
      setVersionError('A version is letters, digits, dots, dashes and underscores (at most 64), for example 2026.9.6.');
      return;
    }
    setVersionError(undefined);
    setRunning(action);
    setOutcome(undefined);
    try {
      const body = action === 'update' && wanted ? { image: wanted } : {};
      const answer = await request(client.POST(`/api/agents/{id}/${action}`, { params: { path: { id: agentId } }, body }));
      live.adopt(answer);
      setOutcome({ action, ok: true, text: describe(label, answer) });
    } catch (err) {
      let text = errorMessage(err);
      // A failed update says where the previous state was kept and which version runs again.
      if (err instanceof ApiError && err.body && typeof err.body === 'object') {
        const b = err.body as { previousImage?: unknown; backupPath?: unknown };
        if (typeof b.previousImage === 'string') text += ` The previous version (${b.previousImage}) runs again.`;
        if (typeof b.backupPath === 'string') text += ` Backup: ${b.backupPath}.`;
      }
      setOutcome({ action, ok: false, text: `${label} failed: ${text}` });
    } finally {
      setRunning(null);
      onChanged();
    }
  };

  /** Why an action's button is off, in words; null when it may be pressed. */
  const blocked = (action: Action): string | null => {
    if (running) return `${ACTIONS.find((a) => a.action === running)?.label ?? 'An action'} is in progress.`;
    if (!current) return 'The agent’s state is not known yet.';
    return actionBlockedReason(current.state, action);
  };

  return (
    <div className="stack">
      <section aria-labelledby="health-heading" className="card">
        <h2 id="health-heading">Health</h2>
        {current ? (
          <dl className="facts">
            <div>
              <dt>State</dt>
              <dd>
                <StatusBadge status={current.state} /> {current.reason}
              </dd>
            </div>
            <div>
              <dt>Gateway</dt>
              <dd>{current.ready ? 'ready (/readyz)' : current.live ? 'answers /healthz, not ready' : 'not answering'}</dd>
            </div>
            <div>
              <dt>Checked</dt>
              <dd>{formatTime(current.at)}</dd>
            </div>
            <div>
              <dt>Agent</dt>
              <dd className="mono">{agentId}</dd>
            </div>
            {companions.length > 0 ? (
              <div>
                <dt>Shares its gateway with</dt>
                <dd>
                  {companions.map((id, i) => (
                    <span key={id}>
                      {i > 0 ? ', ' : null}
                      <Link href={`/agents/${id}`}>{nameOf(id)}</Link>
                    </span>
                  ))}
                </dd>
              </div>
            ) : null}
          </dl>
        ) : (
          <Loading label="Checking the agent…" />
        )}
        {live.error ? (
          <p className="inline-error" role="alert">
            The agent’s status stream broke: {live.error}. Trying again…
          </p>
        ) : null}
      </section>

      <section aria-labelledby="actions-heading" className="stack">
        <h2 id="actions-heading">Actions</h2>
        {companions.length > 0 ? (
          <p className="hint" id="shared-gateway-note">
            This agent runs in one gateway with{' '}
            {companions.length === 1 ? 'another of your agents' : `${companions.length} other agents of yours`}: Restart, Update, Repair and
            Reset memory restart that gateway, so they pause too (about 20 seconds). Start and Stop are this agent’s alone.
          </p>
        ) : null}
        <div>
          <label htmlFor="update-version">Version for update</label>
          <input
            id="update-version"
            className="mono"
            value={version}
            maxLength={64}
            placeholder="empty: the platform’s current version"
            aria-invalid={versionError ? true : undefined}
            aria-describedby={versionError ? 'update-version-error' : 'update-version-hint'}
            onChange={(e) => setVersion(e.target.value)}
          />
          <span id="update-version-hint" className="hint">
            The runtime version “Update” installs. Leave empty for the version the platform runs.
          </span>
          {versionError ? (
            <p id="update-version-error" className="inline-error" role="alert">
              {versionError}
            </p>
          ) : null}
        </div>
        <ul className="lifecycle-actions">
          {ACTIONS.map((a) => {
            const why = blocked(a.action);
            const whyId = `lifecycle-${a.action}-why`;
            return (
              <li key={a.action}>
                {why ? (
                  // Off, with the reason in words: as a tooltip, and read out with the button.
                  <button
                    type="button"
                    className={`button ${a.danger ? 'danger' : 'secondary'}`}
                    disabled
                    title={why}
                    aria-describedby={whyId}
                  >
                    {a.label}
                  </button>
                ) : (
                  <ConfirmButton
                    danger={a.danger ?? false}
                    question={a.action === 'update' && version.trim() ? `Update the agent to ${version.trim()}?` : a.question}
                    onConfirm={() => run(a.action, a.label)}
                  >
                    {a.label}
                  </ConfirmButton>
                )}
                <span className="hint">{a.hint}</span>
                {why ? (
                  <span id={whyId} className="hint lifecycle-why">
                    {why}
                  </span>
                ) : null}
              </li>
            );
          })}
        </ul>
        {running ? <Loading label={`${ACTIONS.find((a) => a.action === running)?.label ?? 'Action'} in progress…`} /> : null}
        {outcome ? (
          outcome.ok ? (
            <p className="notice" role="status">
              {outcome.text}
            </p>
          ) : (
            <p className="inline-error" role="alert">
              {outcome.text}
            </p>
          )
        ) : null}
      </section>
    </div>
  );
}
