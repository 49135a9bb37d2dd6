import { useState } from 'react';
import { Link, useSearchParams } from 'wouter';
import { client, errorMessage, request } from '../api.js';
import { PageHeader } from '../components/layout.js';
import { ErrorState, Loading } from '../components/states.js';
import { modelLabel, modelWhy } from '../format.js';
import { StatusBadge } from '../components/status-badge.js';
import { Tabs } from '../components/tabs.js';
import { useApi } from '../use-api.js';
import { ChatTab } from './agent/chat-tab.js';
import { ConfigTab } from './agent/config-tab.js';
import { DevicesTab } from './agent/devices-tab.js';
import { LifecycleTab } from './agent/lifecycle-tab.js';
import { LogsTab } from './agent/logs-tab.js';
import { ScheduleTab } from './agent/schedule-tab.js';
import { formatTime, useAgentState } from './agent/shared.js';

const TABS = [
  { id: 'chat', label: 'Chat' },
  { id: 'config', label: 'Configuration' },
  { id: 'schedule', label: 'Schedule' },
  { id: 'devices', label: 'Devices' },
  { id: 'logs', label: 'Logs' },
  { id: 'lifecycle', label: 'Lifecycle' },
] as const;
type TabId = (typeof TABS)[number]['id'];

const isTab = (value: string | null): value is TabId => TABS.some((t) => t.id === value);

/** `/agents/:id`: one agent, its status kept fresh, and its tabs; the selected tab lives in `?tab=` so a reload keeps it. */
export default function AgentPage({ agentId }: { agentId: string }) {
  const agent = useApi('/api/agents/{id}', { params: { path: { id: agentId } }, refreshMs: 5_000 });
  // The state machine's state, pushed by the agent's event stream: the badge, the health card and the buttons follow it.
  const live = useAgentState(agentId);
  const [primaryBusy, setPrimaryBusy] = useState(false);
  const [primaryError, setPrimaryError] = useState<string>();
  const [params, setParams] = useSearchParams();
  const asked = params.get('tab');
  const tab: TabId = isTab(asked) ? asked : 'chat';
  // The chat stays mounted once opened, so a reply that arrives while another tab is shown is not lost.
  const [chatOpened, setChatOpened] = useState(tab === 'chat');

  const select = (id: TabId) => {
    if (id === 'chat') setChatOpened(true);
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        next.set('tab', id);
        return next;
      },
      { replace: true },
    );
  };

  if (agent.data === undefined) {
    return (
      <div className="agent-page">
        <PageHeader title="Agent">
          <Link href="/dashboard" className="button secondary">
            All agents
          </Link>
        </PageHeader>
        {agent.error ? <ErrorState message={agent.error} onRetry={() => void agent.reload()} /> : <Loading label="Loading the agent…" />}
      </div>
    );
  }

  const a = agent.data.agent;
  const makePrimary = async () => {
    setPrimaryBusy(true);
    setPrimaryError(undefined);
    try {
      await request(client.PUT('/api/agents/{id}/primary', { params: { path: { id: agentId } } }));
      await agent.reload();
    } catch (err) {
      setPrimaryError(errorMessage(err));
    } finally {
      setPrimaryBusy(false);
    }
  };
  const panel = (id: TabId) => ({
    role: 'tabpanel' as const,
    'aria-label': TABS.find((t) => t.id === id)?.label,
    className: 'agent-panel',
    hidden: tab !== id,
  });

  return (
    <div className="agent-page">
      <PageHeader title={a.name}>
        <Link href="/dashboard" className="button secondary">
          All agents
        </Link>
      </PageHeader>
      <section className="card agent-summary" aria-label="Agent details">
        <dl>
          <div>
            <dt>Status</dt>
            <dd>
              {/* Until the stream's first event, the record's word, marked as such. */}
              {live.state ? (
                <span className="agent-state">
                  <StatusBadge status={live.state.state} /> <span className="hint">{live.state.reason}</span>
                  {/* Continues the reason ("the next message or its next scheduled job wakes it"): which job, when. */}
                  {live.state.state === 'hibernated' ? (
                    <span className="hint line" data-testid="wakes-at">
                      {live.state.wakesAt
                        ? `That job wakes it by ${formatTime(live.state.wakesAt)}.`
                        : 'No job is due: nothing is scheduled to wake it.'}
                    </span>
                  ) : null}
                </span>
              ) : (
                <span className="agent-state">
                  <StatusBadge status={a.status} /> <span className="hint">as last recorded; checking the agent…</span>
                </span>
              )}
            </dd>
          </div>
          <div>
            <dt>Primary agent</dt>
            <dd>
              {a.primary ? (
                <span>Yes: your account’s primary agent</span>
              ) : (
                <>
                  <button type="button" className="button secondary" disabled={primaryBusy} onClick={() => void makePrimary()}>
                    Make primary
                  </button>{' '}
                  <span className="hint">The primary agent is the one your account’s runtime and instance API act on.</span>
                </>
              )}
              {primaryError ? (
                <p className="inline-error" role="alert">
                  {primaryError}
                </p>
              ) : null}
            </dd>
          </div>
          <div>
            <dt>Model</dt>
            {/* Read from the configuration the agent's host applies; never a default when it cannot be read. */}
            <dd className={a.model ? 'mono' : undefined} data-testid="agent-model" title={modelWhy(a.modelSource)}>
              {a.model ?? modelLabel(a.modelSource)}
            </dd>
            {/* Said on the page too, not only in the tooltip a phone never shows: `platform/` is the owner's own key. */}
            {a.modelSource === 'platform' ? <dd className="hint">from your own AI provider key</dd> : null}
          </div>
          <div>
            <dt>Address</dt>
            <dd className="mono agent-url">
              {a.url ? (
                <a href={a.url} target="_blank" rel="noreferrer">
                  {a.url}
                </a>
              ) : (
                'not deployed yet'
              )}
            </dd>
          </div>
          <div>
            <dt>Updated</dt>
            <dd>{formatTime(a.updatedAt)}</dd>
          </div>
        </dl>
        {agent.error ? (
          <p className="inline-error" role="alert">
            Could not refresh the agent: {agent.error}
          </p>
        ) : null}
      </section>

      <Tabs tabs={TABS} selected={tab} onSelect={select} label="Agent sections" />

      {chatOpened || tab === 'chat' ? (
        <div {...panel('chat')}>
          <ChatTab agentId={agentId} agentState={live.state} />
        </div>
      ) : null}
      {tab === 'config' ? (
        <div {...panel('config')}>
          <ConfigTab agentId={agentId} agentName={a.name} agentState={live.state} />
        </div>
      ) : null}
      {tab === 'schedule' ? (
        <div {...panel('schedule')}>
          <ScheduleTab agentId={agentId} agentState={live.state} />
        </div>
      ) : null}
      {tab === 'devices' ? (
        <div {...panel('devices')}>
          <DevicesTab agentId={agentId} agentState={live.state} />
        </div>
      ) : null}
      {tab === 'logs' ? (
        <div {...panel('logs')}>
          <LogsTab agentId={agentId} />
        </div>
      ) : null}
      {tab === 'lifecycle' ? (
        <div {...panel('lifecycle')}>
          <LifecycleTab agentId={agentId} live={live} onChanged={() => void agent.reload()} />
        </div>
      ) : null}
    </div>
  );
}
