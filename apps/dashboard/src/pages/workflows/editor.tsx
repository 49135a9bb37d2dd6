import { useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import { Link, useLocation } from 'wouter';
import { client, request } from '../../api.js';
import type { Workflow } from '../../api-types.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { PageHeader } from '../../components/layout.js';
import { ErrorState, InlineError, Loading } from '../../components/states.js';
import { formatDateTime } from '../../format.js';
import { useAction, useApi } from '../../use-api.js';
import { type Selection, WorkflowCanvas } from './canvas.js';
import {
  addNode,
  connect,
  connectionProblem,
  edgeId,
  type Graph,
  type GraphNode,
  graphFromApi,
  graphToApi,
  moveNodes,
  NODE_TYPES,
  type NodeType,
  nodeTitle,
  placeNodes,
  removeEdge,
  removeNodes,
  TYPE_PURPOSES,
  TYPE_TITLES,
  updateNode,
  type View,
} from './graph.js';
import { NodePanel, type SettingsDraft } from './node-panel.js';
import { WorkflowRuns } from './runs.js';

/** `/workflows/new`: a workflow that exists only in the editor until its first save. */
export const NEW_WORKFLOW = 'new';

interface Meta {
  name: string;
  description: string;
  enabled: boolean;
}

const NO_SELECTION: Selection = { nodes: [], edge: null };

/** The PUT body; its JSON is also what "unsaved changes" compares against the last save. */
function requestBody(meta: Meta, graph: Graph) {
  return {
    name: meta.name.trim(),
    description: meta.description.trim() === '' ? null : meta.description,
    enabled: meta.enabled,
    nodes: graphToApi(graph),
  };
}

/**
 * `/workflows/:id`: loads the workflow, then hands it to the editor. `/workflows/new` opens an empty editor that
 * creates the workflow on its first save (so a draft left unsaved leaves nothing behind), then carries on as the
 * editor of the workflow it created.
 */
export function WorkflowEditor({ workflowId }: { workflowId: string }) {
  const [, navigate] = useLocation();
  // The id the draft was saved as: the address changes to it, the same editor stays (with its state and message).
  const [created, setCreated] = useState<string>();
  const isDraft = workflowId === NEW_WORKFLOW || workflowId === created;
  const resource = useApi(isDraft ? null : '/api/workflows/{workflowId}', { params: { path: { workflowId } } });
  if (isDraft) {
    return (
      <Editor
        key="draft"
        workflow={null}
        onCreated={(workflow) => {
          setCreated(workflow.id);
          navigate(`/workflows/${workflow.id}`, { replace: true });
        }}
      />
    );
  }
  if (!resource.data) {
    return (
      <>
        <PageHeader title="Workflow">
          <Link href="/workflows" className="button secondary">
            All workflows
          </Link>
        </PageHeader>
        {resource.error ? (
          <ErrorState message={resource.error} onRetry={() => void resource.reload()} />
        ) : (
          <Loading label="Loading the workflow…" />
        )}
      </>
    );
  }
  return <Editor key={resource.data.workflow.id} workflow={resource.data.workflow} />;
}

/** The name a new workflow starts with: the list page passes one no other workflow has (history state). */
function draftName(): string {
  const state: unknown = window.history.state;
  const name = state && typeof state === 'object' ? (state as { name?: unknown }).name : undefined;
  return typeof name === 'string' && name.trim() ? name : 'Untitled workflow';
}

function Editor({ workflow, onCreated }: { workflow: Workflow | null; onCreated?: (workflow: Workflow) => void }) {
  const [, navigate] = useLocation();
  const ids = useId();
  const [meta, setMeta] = useState<Meta>(() => ({
    name: workflow?.name ?? draftName(),
    description: workflow?.description ?? '',
    enabled: workflow?.enabled ?? true,
  }));
  const [graph, setGraph] = useState<Graph>(() => graphFromApi(workflow?.nodes ?? []));
  // What the server holds: the state "Discard changes" goes back to, and its PUT body for the unsaved-changes check.
  // A draft has nothing on the server: its baseline is the empty editor it opened with.
  const [baseline, setBaseline] = useState(() => ({ meta, graph, body: JSON.stringify(requestBody(meta, graph)) }));
  // Null until the draft's first save has created the workflow.
  const [workflowId, setWorkflowId] = useState<string | null>(workflow?.id ?? null);
  const [savedName, setSavedName] = useState(workflow?.name ?? 'New workflow');
  const [updatedAt, setUpdatedAt] = useState(workflow?.updatedAt ?? '');
  // "Other settings" as typed, per step: a text that does not parse is kept (and blocks saving) until it is fixed.
  const [jsonDrafts, setJsonDrafts] = useState<Record<string, SettingsDraft>>({});
  // The canvas fills this in: the part of it on screen, where new steps go.
  const viewRef = useRef<(() => View | null) | null>(null);
  const [justSaved, setJustSaved] = useState(false);
  const [selection, setSelection] = useState<Selection>(NO_SELECTION);
  const [multiSelect, setMultiSelect] = useState(false);
  const [problem, setProblem] = useState<string>();
  const [announcement, setAnnouncement] = useState('');
  const [focusRequest, setFocusRequest] = useState<{ key: string; seq: number } | null>(null);
  // Bumped when the whole graph is replaced, so the side panel drops drafts of the discarded state.
  const [revision, setRevision] = useState(0);

  const save = useAction(
    useCallback(
      (id: string | null, body: ReturnType<typeof requestBody>) =>
        id === null
          ? request(client.POST('/api/workflows', { body }))
          : request(client.PUT('/api/workflows/{workflowId}', { params: { path: { workflowId: id } }, body })),
      [],
    ),
  );
  const remove = useAction(
    useCallback((id: string) => request(client.DELETE('/api/workflows/{workflowId}', { params: { path: { workflowId: id } } })), []),
  );

  const body = useMemo(() => JSON.stringify(requestBody(meta, graph)), [meta, graph]);
  // Steps (still on the canvas) whose "Other settings" do not parse: their text is not in `graph`, so not saved.
  const invalidSteps = graph.nodes.filter((n) => jsonDrafts[n.key]?.error);
  const dirty = body !== baseline.body || invalidSteps.length > 0;

  // Closing or reloading the tab with unsaved changes asks first (in-app links are the user's explicit choice).
  useEffect(() => {
    if (!dirty) return;
    const warn = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);

  const byKey = new Map(graph.nodes.map((n) => [n.key, n]));
  const selectedNodes = selection.nodes.map((k) => byKey.get(k)).filter((n): n is GraphNode => n !== undefined);
  const selectedEdge = selection.edge ? graph.edges.find((e) => edgeId(e) === selection.edge) : undefined;
  const title = (key: string) => {
    const node = byKey.get(key);
    return node ? nodeTitle(node) : key;
  };

  const announce = (text: string) => {
    setProblem(undefined);
    setAnnouncement(text);
  };

  const change = (next: Graph) => {
    setGraph(next);
    setJustSaved(false);
  };

  const onAdd = (type: NodeType) => {
    const added = addNode(graph, type, viewRef.current?.() ?? undefined);
    change(added.graph);
    setSelection({ nodes: [added.key], edge: null });
    setFocusRequest({ key: added.key, seq: Date.now() });
    announce(`Added ${TYPE_TITLES[type].toLowerCase()} step`);
  };

  const onConnect = (from: string, to: string) => {
    const why = connectionProblem(graph, from, to);
    if (why) {
      setProblem(why);
      return;
    }
    change(connect(graph, from, to));
    setSelection({ nodes: [], edge: edgeId({ from, to }) });
    announce(`Connected ${title(from)} to ${title(to)}`);
  };

  const onDelete = (nodes: string[], edge: string | null) => {
    if (nodes.length === 0 && !edge) return;
    if (nodes.length) setJsonDrafts((drafts) => Object.fromEntries(Object.entries(drafts).filter(([key]) => !nodes.includes(key))));
    let next = graph;
    if (nodes.length) next = removeNodes(next, nodes);
    if (edge) next = removeEdge(next, edge);
    change(next);
    setSelection(NO_SELECTION);
    const parts = [nodes.length ? `${nodes.length} step${nodes.length === 1 ? '' : 's'}` : '', edge ? 'a connection' : ''].filter(Boolean);
    announce(`Deleted ${parts.join(' and ')}`);
  };

  const onSelectNode = (key: string, additive: boolean) => {
    setProblem(undefined);
    setSelection((current) => {
      if (!additive) return { nodes: [key], edge: null };
      const nodes = current.nodes.includes(key) ? current.nodes.filter((k) => k !== key) : [...current.nodes, key];
      return { nodes, edge: null };
    });
  };

  const onSave = async () => {
    if (!meta.name.trim()) {
      save.setError('Name required');
      return;
    }
    // Settings that do not parse are not dropped in silence: nothing is saved until they are fixed (or cleared).
    const broken = invalidSteps[0];
    if (broken) {
      save.setError(`the other settings of “${nodeTitle(broken)}” are not valid JSON. Fix them or clear the box, then save.`);
      setSelection({ nodes: [broken.key], edge: null });
      return;
    }
    const sent = { meta, graph, body: JSON.stringify(requestBody(meta, graph)) };
    const result = await save.run(workflowId, requestBody(meta, graph));
    if (!result) return;
    setBaseline(sent);
    setSavedName(result.workflow.name);
    setUpdatedAt(result.workflow.updatedAt);
    setJustSaved(true);
    if (workflowId === null) {
      setWorkflowId(result.workflow.id);
      onCreated?.(result.workflow);
    }
  };
  // Ctrl/Cmd+S saves, wherever the focus is on this page.
  const saveRef = useRef(onSave);
  useEffect(() => {
    saveRef.current = onSave;
  });
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 's') {
        event.preventDefault();
        void saveRef.current();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const onDiscard = () => {
    setMeta(baseline.meta);
    setGraph(baseline.graph);
    setJsonDrafts({});
    setSelection(NO_SELECTION);
    setRevision((r) => r + 1);
    save.setError(undefined);
    announce('Changes discarded');
  };

  const onDeleteWorkflow = async () => {
    if (workflowId === null) return navigate('/workflows');
    const result = await remove.run(workflowId);
    if (result !== undefined) navigate('/workflows');
  };

  const saveState = save.pending
    ? 'Saving…'
    : invalidSteps.length > 0
      ? `Not saved: the settings of ${invalidSteps.map((n) => `“${nodeTitle(n)}”`).join(', ')} are not valid JSON`
      : workflowId === null
        ? 'Not saved yet: the workflow is created when you save it'
        : dirty
          ? 'Unsaved changes'
          : justSaved
            ? `Saved at ${formatDateTime(updatedAt)}`
            : `All changes saved (last saved ${formatDateTime(updatedAt)})`;

  const canConnect = selectedNodes.length === 2;
  const canDelete = selectedNodes.length > 0 || selectedEdge !== undefined;

  return (
    <>
      <PageHeader title={savedName}>
        <Link href="/workflows" className="button secondary">
          All workflows
        </Link>
        {workflowId === null ? null : (
          <ConfirmButton danger question={`Delete workflow “${savedName}”?`} onConfirm={onDeleteWorkflow} disabled={remove.pending}>
            Delete workflow
          </ConfirmButton>
        )}
      </PageHeader>
      <InlineError message={remove.error} />

      <section className="card wf-meta" aria-label="Workflow details">
        <div>
          <label htmlFor={`${ids}-name`}>Workflow name</label>
          <input
            id={`${ids}-name`}
            value={meta.name}
            maxLength={200}
            required
            onChange={(e) => {
              setMeta({ ...meta, name: e.target.value });
              setJustSaved(false);
            }}
          />
        </div>
        <div>
          <label htmlFor={`${ids}-description`}>Description</label>
          <input
            id={`${ids}-description`}
            value={meta.description}
            onChange={(e) => {
              setMeta({ ...meta, description: e.target.value });
              setJustSaved(false);
            }}
          />
        </div>
        <div className="wf-enabled">
          <input
            id={`${ids}-enabled`}
            type="checkbox"
            checked={meta.enabled}
            onChange={(e) => {
              setMeta({ ...meta, enabled: e.target.checked });
              setJustSaved(false);
            }}
          />
          <label htmlFor={`${ids}-enabled`}>Enabled</label>
        </div>
      </section>

      <div className="wf-toolbar">
        <fieldset className="wf-palette">
          <legend>Add a step</legend>
          {NODE_TYPES.map((type) => (
            <button
              key={type}
              type="button"
              className="button secondary"
              title={`A ${type} ${TYPE_PURPOSES[type]}`}
              onClick={() => onAdd(type)}
            >
              Add {type}
            </button>
          ))}
        </fieldset>
        <fieldset className="wf-actions">
          <legend className="visually-hidden">Selection</legend>
          {/* aria-disabled rather than disabled: the button keeps focus after it acts, so keyboard users are not lost. */}
          <button
            type="button"
            className="button secondary"
            aria-disabled={!canConnect}
            aria-describedby={`${ids}-connect-hint`}
            onClick={() => {
              if (canConnect) onConnect(selectedNodes[0]!.key, selectedNodes[1]!.key);
              else setProblem('Select two steps to connect: the first selected connects to the second');
            }}
          >
            Connect
          </button>
          <button
            type="button"
            className="button secondary"
            aria-disabled={!canDelete}
            onClick={() => {
              if (canDelete) onDelete(selection.nodes, selection.edge);
              else setProblem('Select a step or a connection to delete');
            }}
          >
            Delete selected
          </button>
          <button type="button" className="button secondary" aria-pressed={multiSelect} onClick={() => setMultiSelect((on) => !on)}>
            Multi-select
          </button>
        </fieldset>
        <div className="wf-save">
          <span className={dirty || workflowId === null ? 'wf-save-state dirty' : 'wf-save-state'} role="status">
            {saveState}
          </span>
          {dirty && workflowId !== null ? (
            <ConfirmButton question="Discard unsaved changes?" onConfirm={onDiscard}>
              Discard changes
            </ConfirmButton>
          ) : null}
          <button type="button" className="button primary" disabled={save.pending} onClick={() => void onSave()}>
            Save
          </button>
        </div>
      </div>
      <InlineError message={save.error ? `Not saved: ${save.error}` : undefined} />
      <InlineError message={problem} />
      <p id={`${ids}-connect-hint`} className="hint">
        {canConnect
          ? `Connect will join ${nodeTitle(selectedNodes[0]!)} → ${nodeTitle(selectedNodes[1]!)}.`
          : 'Drag a step to move it. Drag from its right-hand dot to another step to connect them, or select two steps (Shift+click, Shift+Enter or Multi-select) and press Connect. Drag the background to scroll.'}
      </p>
      <p id={`${ids}-keys`} className="visually-hidden">
        Enter selects, Shift+Enter adds to the selection, arrow keys move the selected steps, Delete removes.
      </p>
      <p className="visually-hidden" role="status" aria-live="polite">
        {announcement}
      </p>

      <div className="wf-editor">
        <div className="wf-canvas-area">
          <WorkflowCanvas
            graph={graph}
            selection={selection}
            multiSelect={multiSelect}
            onSelectNode={onSelectNode}
            onSelectEdge={(id) => {
              setProblem(undefined);
              setSelection({ nodes: [], edge: id });
            }}
            onClearSelection={() => setSelection(NO_SELECTION)}
            onPlace={(positions) => {
              setGraph((g) => placeNodes(g, positions));
              setJustSaved(false);
            }}
            onMove={(keys, dx, dy) => change(moveNodes(graph, keys, dx, dy))}
            onConnect={onConnect}
            onDelete={onDelete}
            focusRequest={focusRequest}
            describedBy={`${ids}-keys`}
            viewRef={viewRef}
          />
          {graph.nodes.length === 0 ? (
            <p className="wf-canvas-empty">This workflow has no steps yet. Start with “Add trigger”, then add the steps that follow it.</p>
          ) : null}
        </div>

        <aside className="card wf-panel" aria-labelledby={`${ids}-panel-heading`}>
          {selectedNodes.length === 1 ? (
            <>
              <h2 id={`${ids}-panel-heading`}>
                {TYPE_TITLES[selectedNodes[0]!.type]}: {nodeTitle(selectedNodes[0]!)}
              </h2>
              <NodePanel
                key={`${selectedNodes[0]!.key}:${revision}`}
                node={selectedNodes[0]!}
                graph={graph}
                draft={jsonDrafts[selectedNodes[0]!.key]}
                onDraft={(draft) => {
                  const key = selectedNodes[0]!.key;
                  setJsonDrafts((drafts) => ({ ...drafts, [key]: draft }));
                  setJustSaved(false);
                  // The refusal was about this text: once it is edited, the box itself says whether it is valid.
                  save.setError(undefined);
                }}
                onChange={(patch) => change(updateNode(graph, selectedNodes[0]!.key, patch))}
                onRemoveEdge={(id) => onDelete([], id)}
                onDelete={() => onDelete([selectedNodes[0]!.key], null)}
              />
            </>
          ) : selectedNodes.length > 1 ? (
            <>
              <h2 id={`${ids}-panel-heading`}>{selectedNodes.length} steps selected</h2>
              <ol className="wf-selected-list">
                {selectedNodes.map((n) => (
                  <li key={n.key}>
                    {TYPE_TITLES[n.type]}: {nodeTitle(n)}
                  </li>
                ))}
              </ol>
              <p className="hint">Arrow keys on a selected step move them all.</p>
              <button type="button" className="button danger" onClick={() => onDelete(selection.nodes, null)}>
                Delete {selectedNodes.length} steps
              </button>
            </>
          ) : selectedEdge ? (
            <>
              <h2 id={`${ids}-panel-heading`}>Connection</h2>
              <p>
                From <strong>{title(selectedEdge.from)}</strong> to <strong>{title(selectedEdge.to)}</strong>
              </p>
              <button type="button" className="button danger" onClick={() => onDelete([], edgeId(selectedEdge))}>
                Delete connection
              </button>
            </>
          ) : (
            <>
              <h2 id={`${ids}-panel-heading`}>Details</h2>
              <p className="muted">Select a step to edit its label and settings, or a connection to remove it.</p>
              <p className="muted">
                {graph.nodes.length} step{graph.nodes.length === 1 ? '' : 's'}, {graph.edges.length} connection
                {graph.edges.length === 1 ? '' : 's'}.
              </p>
            </>
          )}
        </aside>
      </div>

      <WorkflowRuns workflowId={workflowId} unsaved={dirty} />
    </>
  );
}
