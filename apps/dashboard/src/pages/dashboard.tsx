import type { AgentList } from '@aop/web/agents/agents.schemas';
import type { DashboardStats } from '@aop/web/usage/usage.schemas';
import { useState } from 'react';
import { Link } from 'wouter';
import { PageHeader } from '../components/layout.js';
import { Loaded } from '../components/states.js';
import { StatusBadge } from '../components/status-badge.js';
import { useApi } from '../use-api.js';
import { ProvisionWizard } from './provision-wizard.js';

export default function DashboardPage() {
  const agents = useApi<AgentList>('/api/agents', { refreshMs: 5_000 });
  const stats = useApi<DashboardStats>('/api/dashboard/stats', { refreshMs: 30_000 });
  const [wizardOpen, setWizardOpen] = useState(false);

  return (
    <>
      <PageHeader title="Your agents">
        {!wizardOpen ? (
          <button type="button" className="button primary" onClick={() => setWizardOpen(true)}>
            New agent
          </button>
        ) : null}
      </PageHeader>

      <section aria-labelledby="usage-heading">
        <h2 id="usage-heading" className="visually-hidden">
          Plan usage
        </h2>
        <Loaded resource={stats}>
          {(s) => (
            <div className="grid">
              <div className="card stat">
                <div className="value">
                  {s.agents.total} / {s.agents.limit}
                </div>
                <div className="label">agents on your plan</div>
                <div className="meter" aria-hidden="true">
                  <span style={{ width: `${Math.min(100, (s.agents.total / Math.max(1, s.agents.limit)) * 100)}%` }} />
                </div>
              </div>
              <div className="card stat">
                <div className="value">{s.agents.active}</div>
                <div className="label">running now</div>
              </div>
              <div className="card stat">
                <div className="value">{s.skills.installed}</div>
                <div className="label">skills installed</div>
              </div>
              <div className="card stat">
                <div className="value">{s.tasks.total}</div>
                <div className="label">scheduled tasks</div>
              </div>
            </div>
          )}
        </Loaded>
      </section>

      {wizardOpen ? (
        <ProvisionWizard
          onClose={() => setWizardOpen(false)}
          onCreated={() => {
            void agents.reload();
            void stats.reload();
          }}
        />
      ) : null}

      <section aria-labelledby="agents-heading">
        <h2 id="agents-heading">Agents</h2>
        <Loaded
          resource={agents}
          isEmpty={(d) => d.agents.length === 0}
          empty={
            <>
              <p>You have no agents yet.</p>
              <button type="button" className="button primary" onClick={() => setWizardOpen(true)}>
                Create your first agent
              </button>
            </>
          }
        >
          {(d) => (
            <div className="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Status</th>
                    <th scope="col">Model</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {d.agents.map((agent) => (
                    <tr key={agent.id}>
                      <td>
                        <Link href={`/agents/${agent.id}`}>{agent.name}</Link>
                      </td>
                      <td>
                        <StatusBadge status={agent.status} />
                      </td>
                      <td className="mono">{agent.model ?? '—'}</td>
                      <td>{new Date(agent.createdAt).toLocaleString()}</td>
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
