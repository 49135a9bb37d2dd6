import type { InstanceStats } from '@aop/web/agents/agents.schemas';
import { useState } from 'react';
import { Link } from 'wouter';
import { ApiError, api, errorMessage } from '../../api.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { Empty, ErrorState, Loading } from '../../components/states.js';
import { StatusBadge } from '../../components/status-badge.js';
import { useSession } from '../../session.js';
import { useApi } from '../../use-api.js';

type Action = 'start' | 'stop' | 'restart' | 'update' | 'repair' | 'reset-memory';

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

/** Words for an action's answer: its `message`, else its status and the versions it names. */
function describe(label: string, body: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof body.message === 'string') parts.push(body.message);
  else parts.push(`${label} done`);
  if (typeof body.status === 'string') parts.push(`status ${body.status}`);
  if (typeof body.openclawVersion === 'string') parts.push(`runtime ${body.openclawVersion}`);
  if (typeof body.previousImage === 'string') parts.push(`previously ${body.previousImage}`);
  return `${parts.join('; ')}.`;
}

/**
 * What `GET /api/instance/:userId/stats` says of the gateway (`cpu`/`memory` are the spec's named `N/A` fallback until
 * the host reports readings, issue #19). Its `health` is the gateway's own `/healthz` answer, passed on as it came:
 * only an object's `ok: true` means live, and only its string `status`/`error` are shown.
 */
function gatewayHealth(health: InstanceStats['health']): { ok: boolean; status?: string; error?: string } {
  const h = typeof health === 'object' && health !== null ? (health as Record<string, unknown>) : {};
  return {
    ok: h.ok === true,
    ...(typeof h.status === 'string' ? { status: h.status } : {}),
    ...(typeof h.error === 'string' ? { error: h.error } : {}),
  };
}

/**
 * Start, stop, restart, update, repair and memory reset of the person's agent (`POST /api/instance/:userId/<action>`,
 * spec §4.15). Those routes act on the account's deployed agent; when that is another agent than this page's, the
 * buttons are off and the page links to it, so nobody restarts the wrong agent.
 */
export function LifecycleTab({ agentId, onChanged }: { agentId: string; onChanged: () => void }) {
  const { user } = useSession();
  const userPath = user ? `/api/instance/${encodeURIComponent(user.id)}` : null;
  const stats = useApi<InstanceStats>(userPath ? `${userPath}/stats` : null, { refreshMs: 15_000 });
  const [running, setRunning] = useState<Action | null>(null);
  const [outcome, setOutcome] = useState<Outcome>();
  const [version, setVersion] = useState('');
  const [versionError, setVersionError] = useState<string>();

  const run = async (action: Action, label: string) => {
    if (!userPath) return;
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
      const answer = await api<Record<string, unknown>>(`${userPath}/${action}`, { method: 'POST', body });
      setOutcome({ action, ok: true, text: describe(label, answer ?? {}) });
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
      void stats.reload();
    }
  };

  if (stats.data === undefined) {
    if (stats.error === 'No agent found') {
      return (
        <Empty>
          <p>Your account has no deployed agent yet, so there is nothing to start or stop. Lifecycle actions appear once it is deployed.</p>
        </Empty>
      );
    }
    if (stats.error) return <ErrorState message={stats.error} onRetry={() => void stats.reload()} />;
    return <Loading label="Checking the agent…" />;
  }

  const s = stats.data;
  const other = s.agentId !== agentId;
  const health = gatewayHealth(s.health);

  return (
    <div className="stack">
      {other ? (
        <p className="notice">
          Lifecycle actions act on your account’s deployed agent, which is another agent (
          <Link href={`/agents/${encodeURIComponent(s.agentId)}?tab=lifecycle`}>open it</Link>). They are off on this page.
        </p>
      ) : null}

      <section aria-labelledby="health-heading" className="card">
        <h2 id="health-heading">Health</h2>
        <dl className="facts">
          <div>
            <dt>Gateway</dt>
            <dd>
              <StatusBadge status={s.status === 'ok' ? 'healthy' : 'degraded'} />{' '}
              {health.ok ? (health.status ?? 'live') : (health.error ?? 'not answering')}
            </dd>
          </div>
          <div>
            <dt>CPU</dt>
            <dd>{s.cpu}</dd>
          </div>
          <div>
            <dt>Memory</dt>
            <dd>{s.memory}</dd>
          </div>
          <div>
            <dt>Agent</dt>
            <dd className="mono">{s.agentId}</dd>
          </div>
        </dl>
        {stats.error ? (
          <p className="inline-error" role="alert">
            Could not refresh: {stats.error}
          </p>
        ) : null}
      </section>

      <section aria-labelledby="actions-heading" className="stack">
        <h2 id="actions-heading">Actions</h2>
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
            disabled={other}
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
          {ACTIONS.map((a) => (
            <li key={a.action}>
              <ConfirmButton
                danger={a.danger ?? false}
                disabled={other || running !== null}
                question={a.action === 'update' && version.trim() ? `Update the agent to ${version.trim()}?` : a.question}
                onConfirm={() => run(a.action, a.label)}
              >
                {a.label}
              </ConfirmButton>
              <span className="hint">{a.hint}</span>
            </li>
          ))}
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
