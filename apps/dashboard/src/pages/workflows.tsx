import { useCallback, useRef, useState } from 'react';
import { Link, useLocation } from 'wouter';
import { client, request } from '../api.js';
import type { Workflow } from '../api-types.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { PageHeader } from '../components/layout.js';
import { InlineError, Loaded } from '../components/states.js';
import { formatDateTime } from '../format.js';
import { useAction, useApi } from '../use-api.js';
import { NEW_WORKFLOW, WorkflowEditor } from './workflows/editor.js';

/** `/workflows` lists the user's workflows; `/workflows/:id` opens one in the editor. */
export default function WorkflowsPage({ workflowId }: { workflowId?: string }) {
  return workflowId ? <WorkflowEditor workflowId={workflowId} /> : <WorkflowList />;
}

/** "Untitled workflow", or "Untitled workflow 2", 3… so new ones can be told apart in the list. */
function untitledName(existing: readonly Workflow[]): string {
  const names = new Set(existing.map((w) => w.name));
  if (!names.has('Untitled workflow')) return 'Untitled workflow';
  let i = 2;
  while (names.has(`Untitled workflow ${i}`)) i++;
  return `Untitled workflow ${i}`;
}

function WorkflowList() {
  const [, navigate] = useLocation();
  const list = useApi('/api/workflows');
  const heading = useRef<HTMLHeadingElement>(null);
  const [announcement, setAnnouncement] = useState('');
  const remove = useAction(
    useCallback((id: string) => request(client.DELETE('/api/workflows/{workflowId}', { params: { path: { workflowId: id } } })), []),
  );

  // Nothing is stored until the editor's first save: an abandoned "New workflow" leaves no empty workflow behind.
  const onCreate = () => navigate(`/workflows/${NEW_WORKFLOW}`, { state: { name: untitledName(list.data?.workflows ?? []) } });

  const onDelete = async (workflow: Workflow) => {
    const done = await remove.run(workflow.id);
    if (done === undefined) return;
    setAnnouncement(`Deleted workflow ${workflow.name}`);
    await list.reload();
    // The row that held the focus is gone: continue from the list's heading.
    heading.current?.focus();
  };

  const newButton = (text: string) => (
    <button type="button" className="button primary" onClick={onCreate}>
      {text}
    </button>
  );

  return (
    <>
      <PageHeader title="Workflows">{newButton('New workflow')}</PageHeader>
      <InlineError message={remove.error} />
      <p className="visually-hidden" role="status">
        {announcement}
      </p>
      <section aria-labelledby="workflow-list-heading">
        <h2 id="workflow-list-heading" ref={heading} tabIndex={-1} className="visually-hidden">
          Your workflows
        </h2>
        <Loaded
          resource={list}
          isEmpty={(d) => d.workflows.length === 0}
          empty={
            <>
              <p>You have no workflows yet. A workflow chains a trigger, actions and conditions to an output.</p>
              {newButton('Create your first workflow')}
            </>
          }
        >
          {(d) => (
            <div className="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col" className="num">
                      Steps
                    </th>
                    <th scope="col">State</th>
                    <th scope="col">Updated</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.workflows.map((workflow) => (
                    <tr key={workflow.id}>
                      <td>
                        <Link href={`/workflows/${workflow.id}`}>{workflow.name}</Link>
                        {workflow.description ? <div className="muted">{workflow.description}</div> : null}
                      </td>
                      <td className="num">{workflow.nodes.length}</td>
                      <td>
                        <span className={`badge ${workflow.enabled ? 'badge-ok' : 'badge-idle'}`}>
                          {workflow.enabled ? 'enabled' : 'disabled'}
                        </span>
                      </td>
                      <td>
                        <time dateTime={workflow.updatedAt}>{formatDateTime(workflow.updatedAt)}</time>
                      </td>
                      <td>
                        <ConfirmButton
                          danger
                          question={`Delete workflow “${workflow.name}”?`}
                          disabled={remove.pending}
                          onConfirm={() => onDelete(workflow)}
                        >
                          Delete<span className="visually-hidden"> {workflow.name}</span>
                        </ConfirmButton>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </Loaded>
      </section>
    </>
  );
}
