import { planTitle } from '@aop/core/plans';
import { useId, useState } from 'react';
import { PageHeader } from '../components/layout.js';
import { Empty, Loaded, Loading } from '../components/states.js';
import { formatInteger, formatMoney, formatPercent, formatPounds, USD_NOTE } from '../format.js';
import { useApi } from '../use-api.js';
import { DailyChart } from './costs/daily-chart.js';

type Period = '7d' | '30d' | 'mtd';

const PERIODS: readonly { id: Period; label: string; phrase: string }[] = [
  { id: '7d', label: 'Last 7 days', phrase: 'the last 7 days' },
  { id: '30d', label: 'Last 30 days', phrase: 'the last 30 days' },
  { id: 'mtd', label: 'Month to date', phrase: 'this month so far' },
];

export default function CostsPage() {
  const id = useId();
  const [period, setPeriod] = useState<Period>('7d');
  const report = useApi('/api/dashboard/cost', { params: { query: { period } } });
  const current = PERIODS.find((p) => p.id === period)!;
  // useApi keeps the previous period's figures on screen while the new ones load: say so rather than mislead.
  const switching = report.data !== undefined && report.data.period !== period && !report.error;

  return (
    <>
      <PageHeader title="Costs">
        <fieldset className="segmented">
          <legend className="visually-hidden">Period</legend>
          {PERIODS.map((p) => (
            <label key={p.id} className="segment">
              <input type="radio" name={`${id}-period`} value={p.id} checked={period === p.id} onChange={() => setPeriod(p.id)} />
              {p.label}
            </label>
          ))}
        </fieldset>
      </PageHeader>
      {switching ? <Loading label={`Loading ${current.phrase}…`} /> : null}

      <Loaded resource={report}>
        {(r) => {
          // Words for the figures on screen, which can still be the previous period's while a switch loads.
          const phrase = PERIODS.find((p) => p.id === r.period)?.phrase ?? r.period;
          return (
            <div className={switching ? 'stack cost-stale' : 'stack'} aria-busy={switching}>
              <section aria-labelledby={`${id}-totals`}>
                <h2 id={`${id}-totals`} className="visually-hidden">
                  Totals for {phrase}
                </h2>
                <div className="grid">
                  <div className="card stat">
                    <div className="value">{formatMoney(r.summary.totalCost)}</div>
                    <div className="label">total cost (USD)</div>
                  </div>
                  <div className="card stat">
                    <div className="value">{formatInteger(r.summary.totalCalls)}</div>
                    <div className="label">calls</div>
                  </div>
                  <div className="card stat">
                    <div className="value">{formatInteger(r.summary.totalTokens)}</div>
                    <div className="label">tokens</div>
                  </div>
                  <div className="card stat">
                    <div className="value">{formatMoney(r.summary.avgCostPerCall)}</div>
                    <div className="label">average per call (USD)</div>
                  </div>
                </div>
                <p className="muted">
                  {USD_NOTE} Your plan, <strong>{planTitle(r.plan)}</strong>, is billed in pounds sterling:{' '}
                  {formatPounds(r.planMonthlyCost)} (GBP) a month · {r.activeAgents} of {r.agentCount} agent{r.agentCount === 1 ? '' : 's'}{' '}
                  running.
                </p>
              </section>

              <section aria-labelledby={`${id}-daily`}>
                <h2 id={`${id}-daily`}>Cost per day (USD)</h2>
                {r.daily.length === 0 ? (
                  <Empty>No days in this period yet.</Empty>
                ) : (
                  <div className="card">
                    {r.summary.totalCost === 0 ? <p className="muted">No spend in {phrase}.</p> : null}
                    <DailyChart days={r.daily} label={`Cost per day, ${phrase}`} />
                    <details className="cost-table-toggle">
                      <summary>Show daily figures as a table</summary>
                      <div className="table-wrap">
                        <table>
                          <caption className="visually-hidden">Cost and tokens per day, {phrase}</caption>
                          <thead>
                            <tr>
                              <th scope="col">Day</th>
                              <th scope="col" className="num">
                                Cost (USD)
                              </th>
                              <th scope="col" className="num">
                                Tokens
                              </th>
                            </tr>
                          </thead>
                          <tbody>
                            {r.daily.map((d) => (
                              <tr key={d.date}>
                                <th scope="row">{d.date}</th>
                                <td className="num">{formatMoney(d.cost)}</td>
                                <td className="num">{formatInteger(d.tokens)}</td>
                              </tr>
                            ))}
                          </tbody>
                        </table>
                      </div>
                    </details>
                  </div>
                )}
              </section>

              <section aria-labelledby={`${id}-agents`}>
                <h2 id={`${id}-agents`}>By agent</h2>
                {r.agents.length === 0 ? (
                  <Empty>No agent made a call in {phrase}.</Empty>
                ) : (
                  <div className="table-wrap">
                    <table>
                      <caption className="visually-hidden">Cost per agent, {phrase}, costliest first</caption>
                      <thead>
                        <tr>
                          <th scope="col">Agent</th>
                          <th scope="col">Main model</th>
                          <th scope="col" className="num">
                            Calls
                          </th>
                          <th scope="col" className="num">
                            Tokens
                          </th>
                          <th scope="col" className="num">
                            Cost (USD)
                          </th>
                          <th scope="col" className="num">
                            Per call (USD)
                          </th>
                        </tr>
                      </thead>
                      <tbody>
                        {r.agents.map((agent, i) => (
                          <tr key={i}>
                            <th scope="row">{agent.name}</th>
                            <td className="mono">{agent.model}</td>
                            <td className="num">{formatInteger(agent.calls)}</td>
                            <td className="num">{formatInteger(agent.tokens)}</td>
                            <td className="num">{formatMoney(agent.cost)}</td>
                            <td className="num">{formatMoney(agent.avgCostPerCall)}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </div>
                )}
              </section>

              <section aria-labelledby={`${id}-models`}>
                <h2 id={`${id}-models`}>By model</h2>
                {r.modelBreakdown.length === 0 ? (
                  <Empty>No model was called in {phrase}.</Empty>
                ) : (
                  <ul className="card cost-models">
                    {r.modelBreakdown.map((m) => (
                      <li key={m.model}>
                        <div className="row cost-model-line">
                          <span className="mono">{m.model}</span>
                          <span>
                            {formatMoney(m.cost)} · {formatPercent(m.percent)}
                          </span>
                        </div>
                        <div className="meter" aria-hidden="true">
                          <span style={{ width: `${Math.min(100, Math.max(0, m.percent))}%` }} />
                        </div>
                      </li>
                    ))}
                  </ul>
                )}
              </section>
            </div>
          );
        }}
      </Loaded>
    </>
  );
}
