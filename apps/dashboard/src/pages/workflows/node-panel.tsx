import { useId, useState } from 'react';
import { edgeId, type Graph, type GraphNode, nodeTitle, RESERVED_KEYS, TYPE_FIELDS } from './graph.js';

/** The "Other settings" text as typed, and why it cannot be saved (when it cannot). */
export interface SettingsDraft {
  text: string;
  error?: string;
}

/**
 * The side panel for one step: its label, the setting its type is about, any other settings as JSON, and its
 * connections (the keyboard's way to see and remove them).
 *
 * The JSON text lives with the editor (`draft`, `onDraft`), not here: a step whose text does not parse must keep it
 * when another step is selected, and the editor refuses to save while any does.
 */
export function NodePanel({
  node,
  graph,
  draft: heldDraft,
  onDraft,
  onChange,
  onRemoveEdge,
  onDelete,
}: {
  node: GraphNode;
  graph: Graph;
  draft: SettingsDraft | undefined;
  onDraft: (draft: SettingsDraft) => void;
  onChange: (patch: Partial<Omit<GraphNode, 'key'>>) => void;
  onRemoveEdge: (id: string) => void;
  onDelete: () => void;
}) {
  const id = useId();
  const field = TYPE_FIELDS[node.type];
  const fieldValue = node.settings[field.key];
  // A value another client stored as something other than text stays in the JSON box, where it can be edited as is.
  const fieldIsText = fieldValue === undefined || typeof fieldValue === 'string';
  const others = Object.fromEntries(Object.entries(node.settings).filter(([k]) => !(fieldIsText && k === field.key)));
  const [initialText] = useState(() => (Object.keys(others).length ? JSON.stringify(others, null, 2) : ''));
  const draft = heldDraft?.text ?? initialText;
  const draftError = heldDraft?.error;

  const setField = (value: string) => {
    const settings = { ...node.settings };
    if (value === '') delete settings[field.key];
    else settings[field.key] = value;
    onChange({ settings });
  };

  const setOthers = (text: string) => {
    let parsed: unknown = {};
    if (text.trim() !== '') {
      try {
        parsed = JSON.parse(text);
      } catch (err) {
        const detail = err instanceof SyntaxError ? ` (${err.message})` : '';
        onDraft({ text, error: `Other settings must be valid JSON, like {"retries": 2}${detail}` });
        return;
      }
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      onDraft({ text, error: 'Other settings must be a JSON object, like {"retries": 2}' });
      return;
    }
    onDraft({ text });
    const settings: Record<string, unknown> = { ...(parsed as Record<string, unknown>) };
    for (const reserved of RESERVED_KEYS) delete settings[reserved];
    if (fieldIsText) {
      delete settings[field.key];
      if (fieldValue !== undefined) settings[field.key] = fieldValue;
    }
    onChange({ settings });
  };

  const byKey = new Map(graph.nodes.map((n) => [n.key, n]));
  const outgoing = graph.edges.filter((e) => e.from === node.key);
  const incoming = graph.edges.filter((e) => e.to === node.key);
  const connections = [...incoming, ...outgoing];

  return (
    <div className="stack">
      <div>
        <label htmlFor={`${id}-label`}>Label</label>
        <input id={`${id}-label`} value={node.label} maxLength={200} onChange={(e) => onChange({ label: e.target.value })} />
      </div>
      {fieldIsText ? (
        <div>
          <label htmlFor={`${id}-field`}>{field.label}</label>
          <input
            id={`${id}-field`}
            value={typeof fieldValue === 'string' ? fieldValue : ''}
            maxLength={2000}
            aria-describedby={`${id}-field-hint`}
            onChange={(e) => setField(e.target.value)}
          />
          <p id={`${id}-field-hint`} className="hint">
            {field.hint}
          </p>
        </div>
      ) : null}
      <div>
        <label htmlFor={`${id}-others`}>Other settings (JSON)</label>
        <textarea
          id={`${id}-others`}
          className="mono wf-json"
          value={draft}
          spellCheck={false}
          aria-invalid={draftError ? true : undefined}
          aria-describedby={`${id}-others-hint`}
          onChange={(e) => setOthers(e.target.value)}
        />
        <p id={`${id}-others-hint`} className="hint">
          {draftError ? (
            <span className="inline-error" role="alert">
              {draftError}
            </span>
          ) : (
            'Optional. The editor manages label, key and next itself.'
          )}
        </p>
      </div>
      <p className="muted">
        Position {Math.round(node.x)}, {Math.round(node.y)}
      </p>
      <div>
        <h3 className="wf-panel-subheading">Connections</h3>
        {connections.length === 0 ? (
          <p className="muted">None yet.</p>
        ) : (
          <ul className="wf-connections">
            {connections.map((edge) => {
              const from = byKey.get(edge.from);
              const to = byKey.get(edge.to);
              if (!from || !to) return null;
              const text = `${nodeTitle(from)} → ${nodeTitle(to)}`;
              return (
                <li key={edgeId(edge)}>
                  <span>{text}</span>
                  <button type="button" className="button secondary" onClick={() => onRemoveEdge(edgeId(edge))}>
                    Remove<span className="visually-hidden"> connection {text}</span>
                  </button>
                </li>
              );
            })}
          </ul>
        )}
      </div>
      <button type="button" className="button danger" onClick={onDelete}>
        Delete step
      </button>
    </div>
  );
}
