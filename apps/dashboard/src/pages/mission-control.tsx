import { useState } from 'react';
import { Link } from 'wouter';
import type { FleetBooking, FleetGraph as FleetGraphData } from '../api-types.js';
import { PageHeader } from '../components/layout.js';
import { Empty, Loaded } from '../components/states.js';
import { StatusBadge } from '../components/status-badge.js';
import { formatDateTime, formatDuration, formatInteger, formatMoney, formatPercent, formatTime, USD_NOTE } from '../format.js';
import { useApi } from '../use-api.js';
import { edgesMeaning, FleetGraph, FleetLegend } from './mission-control/fleet-graph.js';
import { traceSession } from './mission-control/session-label.js';

const REFRESH_MS = 10_000;

const BOOKING_TONES: Record<FleetBooking['status'], string> = { open: 'busy', accepted: 'ok', declined: 'bad', cancelled: 'idle' };

export default function MissionControlPage() {
  const [live, setLive] = useState(true);
  // useApi skips a refresh while the tab is hidden; pausing stops them altogether.
  const refreshMs = live ? REFRESH_MS : undefined;
  const graph = useApi('/api/mission-control/fleet/graph', { refreshMs });
  const traces = useApi('/api/mission-control/fleet/traces', { refreshMs });
  const costs = useApi('/api/mission-control/fleet/costs', { refreshMs });
  const bookings = useApi('/api/mission-control/fleet/bookings', { refreshMs });

  const refreshAll = () => Promise.all([graph.reload(), traces.reload(), costs.reload(), bookings.reload()]);
  const liveNodes = graph.data?.source === 'soul' ? graph.data.nodes : [];
  const names = new Map(liveNodes.map((n) => [n.id, n.name]));
  const agentName = (id: string) => names.get(id) ?? id;
  // Sleeping agents' sessions are kept but not read (a look wakes nothing): the list says whose are missing.
  const asleep = liveNodes.filter((n) => n.asleep).map((n) => n.name);
  const allAsleep = asleep.length > 0 && asleep.length === liveNodes.length;
  const notListed = asleep.length > 0 ? `Not listed while they sleep: the sessions of ${asleep.join(', ')}.` : null;

  return (
    <>
      <PageHeader title="Mission control">
        <button type="button" className="button secondary mc-toggle" aria-pressed={!live} onClick={() => setLive((on) => !on)}>
          Pause live updates
        </button>
        <button type="button" className="button secondary" onClick={() => void refreshAll()}>
          Refresh now
        </button>
      </PageHeader>
      <p className="muted">
        {live ? `Live: refreshes every ${REFRESH_MS / 1000} s while this tab is open.` : 'Live updates paused.'}
        {graph.data ? ` Graph as of ${formatTime(graph.data.timestamp)}.` : ''}
      </p>

      <section aria-labelledby="mc-graph-heading">
        <h2 id="mc-graph-heading">Fleet</h2>
        <Loaded resource={graph}>{(g) => <FleetSection graph={g} />}</Loaded>
      </section>

      <section aria-labelledby="mc-spend-heading">
        <h2 id="mc-spend-heading">Spend (USD)</h2>
        <Loaded resource={costs}>
          {(c) =>
            c.totalSpend === undefined ? (
              <Empty>
                <p>Spend figures are not available right now: the service that totals them did not answer. They come back on their own.</p>
              </Empty>
            ) : (
              <div className="stack">
                <div className="grid">
                  <div className="card stat">
                    <div className="value">{formatMoney(c.totalSpend)}</div>
                    <div className="label">total spend, all time</div>
                  </div>
                  <div className="card stat">
                    <div className="value">{formatMoney(c.managedAiCost ?? 0)}</div>
                    <div className="label">on the platform's AI keys</div>
                  </div>
                  <div className="card stat">
                    <div className="value">{formatMoney(c.coordinationRevenue ?? 0)}</div>
                    <div className="label">coordination revenue</div>
                  </div>
                </div>
                <p className="hint">{USD_NOTE} The same ledger as the Costs page.</p>
                <p>
                  <Link href="/costs">Costs by agent, day and model</Link>
                </p>
              </div>
            )
          }
        </Loaded>
      </section>

      <section aria-labelledby="mc-traces-heading">
        <h2 id="mc-traces-heading">Recent sessions</h2>
        <Loaded
          resource={traces}
          isEmpty={(t) => t.length === 0}
          empty={
            allAsleep ? (
              <p>Your agents are asleep: their sessions are kept, and listed here once they are awake (looking does not wake them).</p>
            ) : (
              <p>
                No sessions to show. They appear here once one of your agents is running and has worked on something.
                {notListed ? ` ${notListed}` : ''}
              </p>
            )
          }
        >
          {(t) => (
            <div className="table-wrap">
              {notListed ? (
                <p className="muted" role="note">
                  {notListed}
                </p>
              ) : null}
              <table>
                <caption className="visually-hidden">Up to 20 recent sessions of your agents, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Session</th>
                    <th scope="col">Status</th>
                    <th scope="col">Model</th>
                    <th scope="col" className="num">
                      Tokens
                    </th>
                    <th scope="col">Started</th>
                    <th scope="col">Took</th>
                  </tr>
                </thead>
                <tbody>
                  {t.map((trace) => (
                    <tr key={trace.id}>
                      <td>
                        <SessionName description={trace.description} />
                      </td>
                      <td>
                        <StatusBadge status={trace.status} />
                      </td>
                      <td className="mono">{trace.model || '—'}</td>
                      <td className="num">{formatInteger(trace.tokensUsed)}</td>
                      <td>
                        <time dateTime={trace.startedAt}>{formatDateTime(trace.startedAt)}</time>
                      </td>
                      <td>
                        {trace.completedAt ? formatDuration(Date.parse(trace.completedAt) - Date.parse(trace.startedAt)) : 'still going'}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </Loaded>
      </section>

      <section aria-labelledby="mc-bookings-heading">
        <h2 id="mc-bookings-heading">Bookings</h2>
        <Loaded
          resource={bookings}
          isEmpty={(b) => b.bookings.length === 0}
          empty={<p>No booking negotiations. They appear when your agents send each other booking requests.</p>}
        >
          {(b) => (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Booking negotiations your agents take part in</caption>
                <thead>
                  <tr>
                    <th scope="col">Requester</th>
                    <th scope="col">Responder</th>
                    <th scope="col">Status</th>
                    <th scope="col" className="num">
                      Round
                    </th>
                    <th scope="col" className="num">
                      Fee (USDC)
                    </th>
                    <th scope="col">Date</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {b.bookings.map((booking) => (
                    <tr key={booking.id}>
                      <td>{agentName(booking.requesterAgentId)}</td>
                      <td>{agentName(booking.responderAgentId)}</td>
                      <td>
                        <span className={`badge badge-${BOOKING_TONES[booking.status] ?? 'idle'}`}>{booking.status}</span>
                      </td>
                      <td className="num">{booking.round}</td>
                      <td className="num">
                        {typeof booking.terms.fee === 'number' || typeof booking.terms.fee === 'string' ? String(booking.terms.fee) : '—'}
                      </td>
                      <td>{typeof booking.terms.date === 'string' ? formatDateTime(booking.terms.date) : '—'}</td>
                      <td>
                        <time dateTime={booking.updatedAt}>{formatDateTime(booking.updatedAt)}</time>
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

/**
 * A session as words (channel, user, session name), read from its key when it has no label of its own. The raw key
 * stays on the page: on hover (title) and as a one-line code beneath, selected whole with one click for copying.
 */
function SessionName({ description }: { description: string }) {
  if (!description) return <span className="muted">(untitled)</span>;
  const session = traceSession(description);
  if (!session.key) return <>{description}</>;
  return (
    <>
      <span title={session.key}>
        {session.agent ? `${session.agent}: ` : ''}
        {session.label}
      </span>
      <code className="mc-session-key" title={session.key}>
        {session.key}
      </code>
    </>
  );
}

function FleetSection({ graph }: { graph: FleetGraphData }) {
  const live = graph.source === 'soul';
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  // One graph's edges share their basis (bus messages, or the orchestrator's links by share of work).
  const edgeBasis = graph.edges[0]?.basis;
  const meaning = edgesMeaning(edgeBasis);
  return (
    <div className="stack">
      {!live ? (
        <div className="notice" role="note">
          <strong>No live fleet data</strong> (source: <span className="mono">{graph.source}</span>).{' '}
          {graph.source === 'fallback' ? (
            <>
              None of your agents answered, or you have none yet, so this is the fallback graph the service shows when nothing is reachable.{' '}
              <Link href="/dashboard">Check your agents</Link>.
            </>
          ) : (
            'Sign in again to see your fleet.'
          )}
        </div>
      ) : null}
      <div className="mc-graph-layout">
        <div className="card mc-graph-card">
          <FleetGraph graph={graph} />
        </div>
        <FleetLegend hasEdges={graph.edges.length > 0} basis={edgeBasis} />
      </div>

      <div className="table-wrap">
        <table className="mc-table">
          <caption>Agents in the graph</caption>
          <thead>
            <tr>
              <th scope="col">Agent</th>
              <th scope="col">Role</th>
              <th scope="col">Status</th>
              <th scope="col" className="num">
                Load
              </th>
              <th scope="col" className="num">
                Memory
              </th>
            </tr>
          </thead>
          <tbody>
            {graph.nodes.map((node) => (
              <tr key={node.id}>
                <td>
                  {/* Only live nodes are agents; the fallback node stands for no agent and has nothing to open. */}
                  {live ? <Link href={`/agents/${node.id}`}>{node.name}</Link> : node.name}
                  {/* An orchestrator alone coordinates nobody: nothing to say then. */}
                  {node.children ? (
                    <div className="muted">
                      coordinates {node.children} other agent{node.children === 1 ? '' : 's'}
                    </div>
                  ) : null}
                  {node.asleep ? <div className="muted">asleep: a message or its next due job wakes it</div> : null}
                  {/* Several agents in one gateway: one process, so load and memory are the gateway's. */}
                  {node.sharesGatewayWith?.length && !node.asleep ? (
                    <div className="muted">
                      shares its gateway with {node.sharesGatewayWith.length} other agent
                      {node.sharesGatewayWith.length === 1 ? '' : 's'}: load and memory are the gateway’s
                    </div>
                  ) : null}
                </td>
                <td>{node.role}</td>
                <td>
                  <StatusBadge status={node.status} />
                </td>
                <td className="num">{formatPercent(node.load)}</td>
                <td className="num">{formatPercent(node.memory)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>

      {graph.edges.length > 0 ? (
        <div className="table-wrap">
          <table className="mc-table">
            <caption>
              Connections
              {meaning.explained ? <span className="mc-caption-note muted">{meaning.explained}</span> : null}
            </caption>
            <thead>
              <tr>
                <th scope="col">From</th>
                <th scope="col">To</th>
                <th scope="col" className="num">
                  {meaning.column}
                </th>
              </tr>
            </thead>
            <tbody>
              {graph.edges.map((edge) => (
                <tr key={edge.id}>
                  <td>{byId.get(edge.from)?.name ?? edge.from}</td>
                  <td>{byId.get(edge.to)?.name ?? edge.to}</td>
                  <td className="num">{formatPercent(edge.strength * 100)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p className="muted">No connections between agents yet.</p>
      )}
    </div>
  );
}
