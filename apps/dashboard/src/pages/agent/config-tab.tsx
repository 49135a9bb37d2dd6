import { wakesOnMessage } from '@aop/core/agent-state';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { client, errorMessage, request } from '../../api.js';
import type { AgentConfigView, AppliedAgentConfig, ConfigBackup as Backup } from '../../api-types.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { Empty, ErrorState, InlineError, Loading } from '../../components/states.js';
import { CONFIG_GROUPS, type ConfigField, type ConfigObject, configProblems, getPath, parseConfigText, setPath } from './config-fields.js';
import { diffJson, foldUnchanged, stableStringify } from './line-diff.js';
import { type AgentStateNow, formatTime } from './shared.js';

/**
 * This agent's own configuration (`/api/agents/:id/config`, issue #19): what its host writes into the agent's
 * openclaw.json (OpenClaw reloads it), with the agent's ten newest backups, a diff with each and restore. The account's
 * `/api/config` (spec §4.2) is a template no gateway reads, so this tab does not edit it. The model shown is the one
 * the agent runs, read from its applied configuration, not the form's value or a default.
 */

const pretty = (config: ConfigObject) => JSON.stringify(config, null, 2);
const MODEL_PATH = 'agents.defaults.model.primary';
/** What a save to a sleeping agent did (the backend wakes it only for what decides its next wake time). */
const ASLEEP_SAVE =
  ' The agent is asleep: its gateway takes it when it next wakes (at once if its heartbeat or memory maintenance changed).';
/** The Model field of an agent whose provider key sets its model: the hint says the setting does not decide it. */
const replacedModel = (field: ConfigField, applied: AppliedAgentConfig): ConfigField => ({
  ...field,
  hint: `Not used while the agent’s AI provider key sets its model (${applied.model ?? 'its provider’s default'})`,
});
const newestFirst = (backups: Backup[]) => [...backups].sort((a, b) => Date.parse(b.timestamp) - Date.parse(a.timestamp));

/**
 * `agentState`: the agent's state machine, from the page's event stream: a sleeping agent's gateway takes a saved
 * configuration when it wakes, which is said rather than "applies it".
 */
export function ConfigTab({
  agentId,
  agentName,
  agentState,
}: {
  agentId: string;
  agentName: string;
  agentState?: AgentStateNow | undefined;
}) {
  const asleep = agentState !== undefined && wakesOnMessage(agentState.state);
  const [saved, setSaved] = useState<AgentConfigView>();
  const [loadError, setLoadError] = useState<string>();
  const [draft, setDraft] = useState<ConfigObject>({});
  const [jsonText, setJsonText] = useState('');
  const [jsonError, setJsonError] = useState<string>();
  const [view, setView] = useState<'form' | 'json'>('form');
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<string>();
  const [notice, setNotice] = useState<string>();

  /** Shows `config` as saved and as the starting point of the next edit. */
  const adopt = useCallback((answer: Omit<AgentConfigView, 'applied'> & { applied?: AgentConfigView['applied'] }) => {
    // A save or restore answers no `applied`: the agent's is read again below.
    setSaved((before) => ({ ...answer, applied: answer.applied !== undefined ? answer.applied : (before?.applied ?? null) }));
    setDraft(answer.config);
    setJsonText(pretty(answer.config));
    setJsonError(undefined);
  }, []);

  const load = useCallback(async () => {
    setLoadError(undefined);
    try {
      adopt(await request(client.GET('/api/agents/{id}/config', { params: { path: { id: agentId } } })));
    } catch (err) {
      setLoadError(errorMessage(err));
    }
  }, [adopt, agentId]);

  /** What the agent runs with after a save or restore (its host applied the new configuration). */
  const refreshApplied = useCallback(async () => {
    try {
      const answer = await request(client.GET('/api/agents/{id}/config', { params: { path: { id: agentId } } }));
      setSaved((before) => (before ? { ...before, applied: answer.applied } : before));
    } catch {
      // The saved configuration is shown; the model line keeps what it said until the next load.
    }
  }, [agentId]);

  useEffect(() => {
    void load();
  }, [load]);

  const problems = useMemo(() => configProblems(draft), [draft]);
  // JSON that does not parse is an unsaved change too (the draft keeps its last valid state meanwhile).
  const dirty = saved !== undefined && (jsonError !== undefined || stableStringify(draft) !== stableStringify(saved.config));

  const editField = (path: string, value: unknown) => {
    const next = setPath(draft, path, value);
    setDraft(next);
    setJsonText(pretty(next));
    setJsonError(undefined);
    setNotice(undefined);
  };

  const editJson = (text: string) => {
    setJsonText(text);
    setNotice(undefined);
    const parsed = parseConfigText(text);
    if ('error' in parsed) setJsonError(parsed.error);
    else {
      setJsonError(undefined);
      setDraft(parsed.config);
    }
  };

  const save = async () => {
    setSaveError(undefined);
    setNotice(undefined);
    if (jsonError) {
      setSaveError('Fix the JSON first: the configuration was not saved.');
      return;
    }
    if (problems.size > 0) {
      setSaveError(`Fix the ${problems.size === 1 ? 'field' : `${problems.size} fields`} marked below first.`);
      return;
    }
    setSaving(true);
    try {
      const answer = await request(client.PUT('/api/agents/{id}/config', { params: { path: { id: agentId } }, body: { config: draft } }));
      adopt(answer);
      void refreshApplied();
      setNotice(`Configuration saved. The previous configuration was kept as a backup.${asleep ? ASLEEP_SAVE : ''}`);
    } catch (err) {
      setSaveError(errorMessage(err));
    } finally {
      setSaving(false);
    }
  };

  const restore = async (backup: Backup) => {
    setSaveError(undefined);
    setNotice(undefined);
    try {
      const answer = await request(
        client.POST('/api/agents/{id}/config/restore', { params: { path: { id: agentId } }, body: { backupId: backup.id } }),
      );
      adopt(answer);
      void refreshApplied();
      setNotice(
        `Restored the backup from ${formatTime(backup.timestamp)}. The configuration it replaced was kept as a backup.${asleep ? ASLEEP_SAVE : ''}`,
      );
    } catch (err) {
      setSaveError(`Restore failed: ${errorMessage(err)}`);
    }
  };

  if (!saved) {
    return loadError ? <ErrorState message={loadError} onRetry={() => void load()} /> : <Loading label="Loading the configuration…" />;
  }

  return (
    <div className="stack">
      <p className="notice">
        The configuration of “{agentName}” only: saving {asleep ? '' : 'applies it to this agent’s gateway (OpenClaw reloads it) and '}keeps
        the configuration it replaces as a backup. Your other agents keep theirs.
      </p>
      {asleep ? (
        <p className="notice" role="status">
          The agent is asleep after being idle: a configuration saved now is kept, and its gateway takes it when the agent next wakes. A
          change to its heartbeat or memory maintenance wakes it at once, since its next wake time depends on them.
        </p>
      ) : null}
      <AppliedModel applied={saved.applied} />

      <fieldset className="row view-switch">
        <legend className="visually-hidden">Configuration view</legend>
        <button type="button" className="button secondary" aria-pressed={view === 'form'} onClick={() => setView('form')}>
          Form
        </button>
        <button type="button" className="button secondary" aria-pressed={view === 'json'} onClick={() => setView('json')}>
          JSON
        </button>
        {dirty ? <span className="muted">Unsaved changes</span> : null}
      </fieldset>

      {view === 'form' ? (
        jsonError ? (
          <p className="notice">The JSON has an error, so the form cannot show it. Fix it in the JSON view first.</p>
        ) : (
          <div className="config-form">
            {CONFIG_GROUPS.map((group) => (
              <fieldset key={group.title} className="config-group">
                <legend>{group.title}</legend>
                {group.fields.map((field) => (
                  <FieldInput
                    key={field.path}
                    field={
                      field.path === MODEL_PATH && saved.applied?.modelSource === 'platform' ? replacedModel(field, saved.applied) : field
                    }
                    value={getPath(draft, field.path)}
                    problem={problems.get(field.path)}
                    onChange={(value) => editField(field.path, value)}
                  />
                ))}
              </fieldset>
            ))}
            <p className="hint">
              Empty fields are left out of the configuration. Other keys are kept as they are; edit them in the JSON view.
            </p>
          </div>
        )
      ) : (
        <div>
          <label htmlFor="config-json">Configuration JSON</label>
          <textarea
            id="config-json"
            className="mono config-json"
            spellCheck={false}
            value={jsonText}
            aria-invalid={jsonError ? true : undefined}
            aria-describedby={jsonError ? 'config-json-error' : undefined}
            onChange={(e) => editJson(e.target.value)}
          />
          {jsonError ? (
            <p id="config-json-error" className="inline-error" role="alert">
              {jsonError}
            </p>
          ) : null}
          {!jsonError && problems.size > 0 ? (
            <ul className="inline-error config-problems">
              {[...problems].map(([path, problem]) => (
                <li key={path}>
                  <span className="mono">{path}</span>: {problem}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      )}

      <div className="row">
        <button type="button" className="button primary" disabled={saving} onClick={() => void save()}>
          Save configuration
        </button>
        <button type="button" className="button secondary" disabled={!dirty || saving} onClick={() => adopt(saved)}>
          Discard changes
        </button>
        {saving ? <span className="muted">Saving…</span> : null}
      </div>
      <InlineError message={saveError} />
      {notice ? (
        <p className="notice" role="status">
          {notice}
        </p>
      ) : null}

      <Backups backups={newestFirst(saved.backups)} current={saved.config} agentId={agentId} onRestore={restore} />
    </div>
  );
}

function FieldInput({
  field,
  value,
  problem,
  onChange,
}: {
  field: ConfigField;
  value: unknown;
  problem: string | undefined;
  onChange: (value: unknown) => void;
}) {
  const id = `cfg-${field.path.replaceAll('.', '-')}`;
  const describedBy = [field.hint ? `${id}-hint` : null, problem ? `${id}-error` : null].filter(Boolean).join(' ') || undefined;
  const common = { id, 'aria-invalid': problem ? true : undefined, 'aria-describedby': describedBy } as const;
  const after = (
    <>
      {field.hint ? (
        <span id={`${id}-hint`} className="hint">
          {field.hint}
        </span>
      ) : null}
      {problem ? (
        <span id={`${id}-error`} className="inline-error field-error">
          {problem}
        </span>
      ) : null}
    </>
  );

  if (field.kind === 'boolean') {
    return (
      <div className="config-field check">
        <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} />
        <label htmlFor={id}>{field.label}</label>
        {value === undefined ? <span className="hint">(not set)</span> : null}
        {after}
      </div>
    );
  }

  if (field.kind === 'choice') {
    const options = field.options ?? [];
    const shown = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
    return (
      <div className="config-field">
        <label htmlFor={id}>{field.label}</label>
        <select {...common} value={shown} onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}>
          <option value="">(not set)</option>
          {options.map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
          {shown !== '' && !options.includes(shown) ? <option value={shown}>{shown} (not allowed)</option> : null}
        </select>
        {after}
      </div>
    );
  }

  if (field.kind === 'integer') {
    // Text that is not a whole number yet ("-", "1.5") goes into the configuration as typed and is marked; a number
    // goes in as a number.
    return (
      <div className="config-field">
        <label htmlFor={id}>{field.label}</label>
        <input
          {...common}
          type="text"
          inputMode="numeric"
          value={typeof value === 'number' || typeof value === 'string' ? String(value) : value === undefined ? '' : JSON.stringify(value)}
          placeholder="not set"
          onChange={(e) => {
            const typed = e.target.value.trim();
            onChange(typed === '' ? undefined : /^-?\d+$/.test(typed) ? Number(typed) : typed);
          }}
        />
        {after}
      </div>
    );
  }

  return (
    <div className="config-field">
      <label htmlFor={id}>{field.label}</label>
      <input
        {...common}
        type="text"
        className={field.kind === 'duration' ? 'mono' : undefined}
        value={typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value)}
        placeholder="not set"
        onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}
      />
      {after}
    </div>
  );
}

/** The model the agent runs, from the configuration its host applied (issue #19: not a default, not the form's value). */
function AppliedModel({ applied }: { applied: AppliedAgentConfig | null }) {
  if (!applied) {
    return (
      <p className="muted" data-testid="applied-model">
        Model the agent runs: unknown (no host of this platform runs the agent now).
      </p>
    );
  }
  const why =
    applied.modelSource === 'platform'
      ? 'set by the agent’s AI provider key; it replaces the Model setting below'
      : applied.modelSource === 'config'
        ? 'the Model setting below'
        : 'the configuration names no model';
  return (
    <p data-testid="applied-model">
      Model the agent runs: {applied.model ? <strong className="mono">{applied.model}</strong> : <strong>OpenClaw’s default</strong>}{' '}
      <span className="muted">({why})</span>
    </p>
  );
}

function Backups({
  backups,
  current,
  agentId,
  onRestore,
}: {
  backups: Backup[];
  current: ConfigObject;
  agentId: string;
  onRestore: (b: Backup) => Promise<void>;
}) {
  const [open, setOpen] = useState<string | null>(null);
  return (
    <section aria-labelledby="backups-heading">
      <h2 id="backups-heading">Backups</h2>
      {backups.length === 0 ? (
        <Empty>
          <p>No backups yet. Each save keeps the configuration it replaces here.</p>
        </Empty>
      ) : (
        <ul className="backup-list">
          {backups.map((b) => {
            const when = formatTime(b.timestamp);
            return (
              <li key={b.id} className="card backup">
                <div className="row backup-head">
                  <div className="backup-when">
                    <time dateTime={b.timestamp}>{when}</time> <span className="mono muted">{b.id}</span>
                  </div>
                  <div className="row">
                    <button
                      type="button"
                      className="button secondary"
                      aria-expanded={open === b.id}
                      aria-controls={`diff-${b.id}`}
                      onClick={() => setOpen(open === b.id ? null : b.id)}
                    >
                      Diff<span className="visually-hidden"> with the backup from {when}</span>
                    </button>
                    <ConfirmButton question={`Restore the backup from ${when}?`} onConfirm={() => onRestore(b)}>
                      Restore<span className="visually-hidden"> the backup from {when}</span>
                    </ConfirmButton>
                  </div>
                </div>
                {open === b.id ? (
                  <div id={`diff-${b.id}`}>
                    <BackupDiff backupId={b.id} current={current} agentId={agentId} />
                  </div>
                ) : null}
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}

/** What restoring the backup would change: lines of the current configuration removed (−) and of the backup added (+). */
function BackupDiff({ backupId, current, agentId }: { backupId: string; current: ConfigObject; agentId: string }) {
  const [backup, setBackup] = useState<ConfigObject>();
  const [error, setError] = useState<string>();

  const load = useCallback(async () => {
    setError(undefined);
    try {
      const answer = await request(
        client.GET('/api/agents/{id}/config/backups/{backupId}', { params: { path: { id: agentId, backupId } } }),
      );
      setBackup(answer.backup.config);
    } catch (err) {
      setError(errorMessage(err));
    }
  }, [backupId, agentId]);

  useEffect(() => {
    void load();
  }, [load]);

  const diff = useMemo(() => (backup ? diffJson(current, backup) : null), [backup, current]);
  if (error) return <ErrorState message={error} onRetry={() => void load()} />;
  if (!diff) return <Loading label="Loading the backup…" />;
  if (diff.added === 0 && diff.removed === 0) return <p className="muted">This backup is the same as the current configuration.</p>;
  return (
    <figure className="diff">
      <figcaption>
        Restoring would remove {diff.removed} line{diff.removed === 1 ? '' : 's'} (−) of the current configuration and add {diff.added} line
        {diff.added === 1 ? '' : 's'} (+) from the backup.
      </figcaption>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard to scroll it */}
      <pre className="diff-body" tabIndex={0}>
        {foldUnchanged(diff.lines).map((row, index) => {
          const key = `${index}`;
          if (row.kind === 'skip') {
            return (
              <span key={key} className="diff-skip">
                {`… ${row.count} unchanged line${row.count === 1 ? '' : 's'}\n`}
              </span>
            );
          }
          if (row.kind === 'add') return <ins key={key}>{`+ ${row.text}\n`}</ins>;
          if (row.kind === 'del') return <del key={key}>{`− ${row.text}\n`}</del>;
          return <span key={key}>{`  ${row.text}\n`}</span>;
        })}
      </pre>
    </figure>
  );
}
