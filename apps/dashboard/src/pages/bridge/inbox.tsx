import { useEffect, useRef, useState } from 'react';
import { Loaded } from '../../components/states.js';
import { useBridge } from './use-bridge.js';

/** The route answers at most this many messages (apps/web/src/modules/bridge: MAX_LIMIT). */
const LIMIT = 100;
const HOUR = 60 * 60 * 1000;
const PERIODS = [
  { id: '1h', label: 'Last hour', ms: HOUR },
  { id: '24h', label: 'Last 24 hours', ms: 24 * HOUR },
  { id: '7d', label: 'Last 7 days', ms: 7 * 24 * HOUR },
  { id: '30d', label: 'Last 30 days', ms: 30 * 24 * HOUR },
] as const;
type PeriodId = (typeof PERIODS)[number]['id'];
/** Longer messages start folded, so one long report does not push the rest off screen. */
const FOLD_AT = 600;

/**
 * The messages of one channel. No `reader` is sent: a named reader marks what it reads as read (that is how agents
 * claim messages), and an operator looking must never take a message away from the agent it is meant for.
 */
export function Inbox({ channels, secret, refreshKey }: { channels: string[]; secret: string | undefined; refreshKey: number }) {
  const [channel, setChannel] = useState(channels[0] ?? 'general');
  const [period, setPeriod] = useState<PeriodId>('24h');
  const windowMs = PERIODS.find((p) => p.id === period)?.ms ?? 24 * HOUR;
  const inbox = useBridge('/api/bridge/inbox', secret, {
    query: () => ({ channel, since: new Date(Date.now() - windowMs).toISOString(), limit: String(LIMIT) }),
    key: `${channel}|${period}`,
    refreshMs: 10_000,
  });
  const reload = useRef(inbox.reload);
  reload.current = inbox.reload;
  // A message was just sent: fetch again, keeping the table on screen meanwhile (a new channel or period reloads anyway).
  useEffect(() => {
    if (refreshKey > 0) void reload.current();
  }, [refreshKey]);

  return (
    <section aria-labelledby="inbox-heading" className="card stack">
      <div className="row bridge-head">
        <h2 id="inbox-heading">Inbox</h2>
        <button type="button" className="button secondary" onClick={() => void inbox.reload()}>
          Refresh inbox
        </button>
      </div>
      <div className="row bridge-filters">
        <div>
          <label htmlFor="inbox-channel">Filter by channel</label>
          <select id="inbox-channel" value={channel} onChange={(e) => setChannel(e.target.value)}>
            {channels.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="inbox-period">Period</label>
          <select id="inbox-period" value={period} onChange={(e) => setPeriod(e.target.value as PeriodId)}>
            {PERIODS.map((p) => (
              <option key={p.id} value={p.id}>
                {p.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      <Loaded
        resource={inbox}
        isEmpty={(d) => d.messages.length === 0}
        empty={
          <p>
            No messages in <span className="mono">{channel}</span> in this period.
          </p>
        }
      >
        {(d) => (
          <>
            {d.count >= LIMIT ? (
              <p className="hint">Showing the first {LIMIT} messages of this period. Choose a shorter period to see later ones.</p>
            ) : null}
            <div className="table-wrap">
              <table className="bridge-messages">
                <caption className="visually-hidden">Messages in {d.channel}, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Sender</th>
                    <th scope="col">Priority</th>
                    <th scope="col">Message</th>
                  </tr>
                </thead>
                <tbody>
                  {/* The route answers oldest first; people read a log newest first. */}
                  {[...d.messages].reverse().map((m) => (
                    <tr key={m.id}>
                      <td>
                        <time dateTime={m.created_at}>{new Date(m.created_at).toLocaleString()}</time>
                      </td>
                      <td className="mono">{m.sender}</td>
                      <td>
                        <span className={`badge ${m.priority === 'urgent' || m.priority === 'high' ? 'badge-bad' : 'badge-idle'}`}>
                          {m.priority}
                        </span>
                      </td>
                      <td className="bridge-content">
                        <Folded text={m.content} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </Loaded>
    </section>
  );
}

function Folded({ text }: { text: string }) {
  const [open, setOpen] = useState(false);
  if (text.length <= FOLD_AT) return <>{text}</>;
  return (
    <>
      {open ? text : `${text.slice(0, FOLD_AT)}…`}{' '}
      <button type="button" className="button secondary bridge-fold" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'Show less' : 'Show all'}
      </button>
    </>
  );
}
