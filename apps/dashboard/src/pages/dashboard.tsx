import { useCallback, useEffect, useRef, useState } from 'react';
import { Link } from 'wouter';
import { client, errorMessage, request } from '../api.js';
import type { AgentList, CronList, NewAgentGate } from '../api-types.js';
import { PageHeader } from '../components/layout.js';
import { modelLabel, modelWhy } from '../format.js';
import { Loaded } from '../components/states.js';
import { AgentStateBadge } from '../components/status-badge.js';
import { pollWhileVisible, useApi } from '../use-api.js';
import { ProvisionWizard, type SeenState } from './provision-wizard.js';

export default function DashboardPage() {
  const agents = useApi('/api/agents', { refreshMs: 5_000 });
  const stats = useApi('/api/dashboard/stats', { refreshMs: 30_000 });
  // What stands between this user and a new agent, read before the wizard opens rather than learnt at its last step.
  const gate = useApi('/api/dashboard/new-agent', { refreshMs: 30_000 });
  // The state the new-agent wizard last saw of the agent it sets up: the list's badge and the jobs count are read again
  // when it changes (a new agent's gateway could not be asked for its jobs until it is live), not at their next poll.
  const [seen, setSeen] = useState<SeenState | null>(null);
  // Each agent's Schedule tab list, from that agent's gateway: the dashboard counts the jobs they show.
  const cron = useCronOfEach(agents.data?.agents, seen);
  // The host's word from the list: "running now" counts what runs, and the rest of the recorded-running are asleep.
  const asleep = (agents.data?.agents ?? []).filter((a) => a.hostStatus === 'hibernated').length;
  const [wizardOpen, setWizardOpen] = useState(false);
  const blocked = gate.data !== undefined && !gate.data.allowed;
  // Until the gate is known the button waits too: opening the wizard and refusing at its end is what this prevents.
  // If the gate cannot be read at all, the wizard stays open to try (provisioning still applies the same rule).
  const canStart = gate.data ? gate.data.allowed : gate.error !== undefined;

  return (
    <>
      <PageHeader title="Your agents">
        {!wizardOpen ? (
          <button
            type="button"
            className="button primary"
            disabled={!canStart}
            aria-describedby={blocked ? 'new-agent-gate' : undefined}
            onClick={() => setWizardOpen(true)}
          >
            New agent
          </button>
        ) : null}
      </PageHeader>

      {gate.data && !gate.data.allowed ? <NewAgentGateNotice gate={gate.data} /> : null}
      {gate.error ? <p className="state state-error">Whether you can create an agent could not be checked: {gate.error}</p> : null}

      <section aria-labelledby="usage-heading">
        <h2 id="usage-heading" className="visually-hidden">
          Plan usage
        </h2>
        <Loaded resource={stats}>
          {(s) => (
            <div className="grid">
              <div className="card stat">
                {gate.data?.admin ? (
                  <>
                    <div className="value">{s.agents.total}</div>
                    <div className="label">agents (administrator: no plan limit)</div>
                  </>
                ) : gate.data?.reason === 'paid-plan' ? (
                  // An unpaid plan runs no agent at all, whatever its nominal limit: say that, not "0 / 1".
                  <>
                    <div className="value">{s.agents.total}</div>
                    <div className="label">agents: the {gate.data.planTitle} plan includes none</div>
                  </>
                ) : (
                  <>
                    <div className="value">
                      {s.agents.total} / {s.agents.limit}
                    </div>
                    <div className="label">agents on your plan{gate.data ? ` (${gate.data.planTitle})` : ''}</div>
                    <div className="meter" aria-hidden="true">
                      <span style={{ width: `${Math.min(100, (s.agents.total / Math.max(1, s.agents.limit)) * 100)}%` }} />
                    </div>
                  </>
                )}
              </div>
              <div className="card stat">
                <div className="value">{s.agents.active}</div>
                <div className="label">running now</div>
                {asleep > 0 ? (
                  <div className="hint">
                    {asleep} asleep after being idle: a message or {asleep === 1 ? 'its' : 'their'} next due job wakes{' '}
                    {asleep === 1 ? 'it' : 'each'}
                  </div>
                ) : null}
              </div>
              <div className="card stat">
                <div className="value">{s.skills.installed}</div>
                <div className="label">skills installed</div>
              </div>
              <ScheduledJobsStat cron={cron} noAgents={s.agents.total === 0} />
            </div>
          )}
        </Loaded>
      </section>

      {wizardOpen ? (
        <ProvisionWizard
          onClose={() => setWizardOpen(false)}
          platformKeyProviders={gate.data?.platformKeyProviders ?? []}
          onCreated={(state) => {
            if (state) setSeen(state);
            void agents.reload();
            void stats.reload();
            void gate.reload();
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
              {wizardOpen ? null : (
                <button
                  type="button"
                  className="button primary"
                  disabled={!canStart}
                  aria-describedby={blocked ? 'new-agent-gate' : undefined}
                  onClick={() => setWizardOpen(true)}
                >
                  Create your first agent
                </button>
              )}
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
                        {agent.primary ? (
                          <span className="hint" title="Your account’s runtime and instance API act on this agent">
                            {' '}
                            (primary)
                          </span>
                        ) : null}
                      </td>
                      <td>
                        <AgentStateBadge
                          agentId={agent.id}
                          recorded={agent.hostStatus ?? agent.status}
                          seen={seen?.agentId === agent.id ? seen.state : undefined}
                        />
                      </td>
                      <td className={agent.model ? 'mono' : undefined} title={modelWhy(agent.modelSource)}>
                        {agent.model ?? modelLabel(agent.modelSource)}
                      </td>
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

/**
 * Why no agent can be created yet, in the words provisioning would answer, and the way forward: the billing page where
 * plans can be bought, else the operator command that puts the account on a plan.
 */
function NewAgentGateNotice({ gate }: { gate: NewAgentGate }) {
  const title = gate.reason === 'agent-limit' ? 'Your plan’s agents are all in use' : 'You cannot create an agent yet';
  return (
    <section id="new-agent-gate" className="notice stack new-agent-gate" aria-labelledby="new-agent-gate-heading">
      <h2 id="new-agent-gate-heading" className="new-agent-gate-title">
        {title}
      </h2>
      <p>
        {gate.message}. You are on the <strong>{gate.planTitle}</strong> plan
        {gate.subscriptionStatus === 'none' ? '' : ` (subscription ${gate.subscriptionStatus.replace('_', ' ')})`}
        {gate.agents.limit !== null && gate.reason !== 'paid-plan'
          ? `, with ${gate.agents.count} of ${gate.agents.limit} agents in use`
          : ''}
        .
      </p>
      {gate.cardPayments ? (
        <p>
          <Link href="/settings#billing">
            {gate.reason === 'agent-limit' ? 'Choose a bigger plan in Settings → Billing' : 'Choose a plan in Settings → Billing'}
          </Link>
        </p>
      ) : (
        <>
          <p>
            Plans cannot be bought on this server: card payments are not configured. The platform’s operator can put your account on a plan
            from the server with:
          </p>
          {gate.operatorCommand ? <code className="operator-command">{gate.operatorCommand}</code> : null}
        </>
      )}
    </section>
  );
}

/** One agent's cron list as its Schedule tab reads it (`GET /api/cron?agentId=`), or why it could not be read. */
interface AgentCron {
  name: string;
  list?: CronList;
  error?: string;
}

interface CronOfEach {
  /** Null until the agents and their first lists are known. */
  byAgent: AgentCron[] | null;
}

/**
 * Every agent's cron list, asked of each agent's gateway side by side, again every minute while the tab is visible. A
 * newer round supersedes an older one, so a slow answer never overwrites a fresher one.
 */
function useCronOfEach(agents: AgentList['agents'] | undefined, seen: SeenState | null): CronOfEach {
  const [byAgent, setByAgent] = useState<AgentCron[] | null>(null);
  const generation = useRef(0);
  // The agents as a value, so a refresh of the list that changes nothing starts no new round; a new state seen of one
  // of them (the agent the wizard follows turning live) does.
  const key = agents
    ? JSON.stringify(agents.map((a) => [a.id, a.name, a.status, a.hostStatus, seen?.agentId === a.id ? seen.state : null]))
    : null;
  const load = useCallback(async () => {
    if (key === null) return;
    const mine = ++generation.current;
    const list = JSON.parse(key) as [string, string, string, string | null, unknown][];
    const answers = await Promise.all(
      list.map(async ([agentId, name, status, hostStatus, seenState]): Promise<AgentCron> => {
        // A stopped agent's gateway is not there to ask (its jobs run again when it is started), nor a sleeping one's
        // (its jobs are kept; the next due one wakes it), nor yet that of the agent the wizard sees on its way to live
        // (asked again when it is).
        if (status === 'stopped') return { name, error: 'stopped' };
        if (hostStatus === 'hibernated') return { name, error: 'asleep' };
        if (seenState === 'provisioning' || seenState === 'starting') return { name, error: 'starting' };
        try {
          return { name, list: await request(client.GET('/api/cron', { params: { query: { agentId } } })) };
        } catch (err) {
          return { name, error: errorMessage(err) };
        }
      }),
    );
    if (mine === generation.current) setByAgent(answers);
  }, [key]);
  useEffect(() => pollWhileVisible(load, 60_000, () => void generation.current++), [load]);
  return { byAgent };
}

/** The agents not counted, grouped by why (three sleeping agents say "asleep" once), in the order they came. */
function byReason(agents: AgentCron[]): [string, string[]][] {
  const groups = new Map<string, string[]>();
  for (const a of agents) {
    const reason = a.list?.error ?? a.error ?? 'the agent gateway did not answer';
    groups.set(reason, [...(groups.get(reason) ?? []), a.name]);
  }
  return [...groups];
}

/**
 * The scheduled jobs of all the user's agents: the sum of what each agent's Schedule tab lists, from that agent's
 * gateway. An agent whose gateway cannot be asked (asleep, stopped, unreachable) is named as not counted, with the
 * reason, rather than counted as zero; when none can be asked, the number is unknown.
 */
function ScheduledJobsStat({ cron, noAgents }: { cron: CronOfEach; noAgents: boolean }) {
  const all = cron.byAgent;
  const known = (all ?? []).filter((a) => a.list?.source === 'gateway');
  const unknown = (all ?? []).filter((a) => a.list?.source !== 'gateway');
  const jobs = known.flatMap((a) => a.list?.jobs ?? []);
  const system = jobs.filter((job) => job.system).length;
  // Without an agent there is no gateway to ask, and nothing on it: that zero is a fact, not a guess.
  if (noAgents && (all === null || all.length === 0)) {
    return (
      <div className="card stat">
        <div className="value">0</div>
        <div className="label">scheduled jobs</div>
        <div className="hint">None until you have an agent.</div>
      </div>
    );
  }
  const counted = known.length > 0;
  return (
    <div className="card stat">
      <div className="value">{counted ? jobs.length : '—'}</div>
      <div className="label">
        scheduled job{counted && jobs.length === 1 ? '' : 's'}
        {counted && all && all.length > 1 ? ` on ${unknown.length > 0 ? `${known.length} of ` : ''}${all.length} agents` : ''}
        {counted && system > 0 ? `, ${system} of them system jobs` : ''}
      </div>
      {unknown.length > 0 ? (
        <div className="hint">
          {counted ? 'Not counted' : 'Unknown'}:{' '}
          {byReason(unknown)
            .map(([reason, names]) => `${names.join(', ')} (${reason})`)
            .join('; ')}
          .
        </div>
      ) : null}
      {all === null ? <div className="hint">Asking the agent gateways…</div> : null}
    </div>
  );
}
