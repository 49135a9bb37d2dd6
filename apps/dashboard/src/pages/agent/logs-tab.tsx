import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { ApiError, client, errorMessage, request } from '../../api.js';
import { ErrorState, Loading } from '../../components/states.js';
import { eventData, readEventStream } from '../../event-stream.js';

/** Lines kept on screen; older ones are dropped as new ones arrive. */
export const MAX_LINES = 1_000;
/** Lines of recent output the live view starts with. */
const STREAM_TAIL = 200;
/** The backend announces `retry: 5000`; reconnecting after a broken stream waits as long. */
const RETRY_MS = 5_000;
/** Broken connections in a row before the page stops trying on its own. */
const MAX_RETRIES = 5;

type Mode =
  | { kind: 'connecting' }
  | { kind: 'live' }
  | { kind: 'reconnecting'; attempt: number; reason: string }
  | { kind: 'ended'; reason: string }
  | { kind: 'failed'; message: string }
  | { kind: 'history'; why: string; loading: boolean; error?: string };

const lineOf = (data: unknown): string => {
  if (data && typeof data === 'object' && 'line' in data) {
    const line = (data as { line: unknown }).line;
    return typeof line === 'string' ? line : JSON.stringify(line);
  }
  return typeof data === 'string' ? data : JSON.stringify(data);
};

/**
 * The agent's gateway log: followed live over server-sent events (`/api/logs/:agentId/stream`, which only the local
 * provider offers), else its recent history (`/api/logs/:agentId/history`) when the provider answers 501.
 */
export function LogsTab({ agentId }: { agentId: string }) {
  const base = `/api/logs/${encodeURIComponent(agentId)}`;
  const [mode, setMode] = useState<Mode>({ kind: 'connecting' });
  const lines = useRef<string[]>([]);
  const [version, setVersion] = useState(0);
  const [paused, setPaused] = useState(false);
  const [frozen, setFrozen] = useState<string[]>([]);
  const [missed, setMissed] = useState(0);
  const [connection, setConnection] = useState(0);
  const viewRef = useRef<HTMLPreElement>(null);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;

  const append = useCallback((incoming: string[]) => {
    if (incoming.length === 0) return;
    const next = lines.current.concat(incoming);
    lines.current = next.length > MAX_LINES ? next.slice(next.length - MAX_LINES) : next;
    if (pausedRef.current) setMissed((n) => n + incoming.length);
    setVersion((v) => v + 1);
  }, []);

  const loadHistory = useCallback(
    async (why: string) => {
      setMode({ kind: 'history', why, loading: true });
      try {
        const answer = await request(
          client.GET('/api/logs/{agentId}/history', { params: { path: { agentId }, query: { limit: String(MAX_LINES) } } }),
        );
        lines.current = answer.lines.map(lineOf).slice(-MAX_LINES);
        setVersion((v) => v + 1);
        setMode({ kind: 'history', why, loading: false });
      } catch (err) {
        setMode({ kind: 'history', why, loading: false, error: errorMessage(err) });
      }
    },
    [agentId],
  );

  // One live connection per `connection` number; a broken one is tried again after the announced delay.
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let failures = 0;
    let first = true;

    const connect = async () => {
      if (controller.signal.aborted) return;
      // Set by the `end` event: the server closed the stream on purpose (and said why).
      const end: { reason: string | null } = { reason: null };
      // After a break, only new lines: the ones already shown would come again with a tail.
      const tail = first ? STREAM_TAIL : 0;
      setMode(first ? { kind: 'connecting' } : (m) => m);
      try {
        await readEventStream(
          `${base}/stream?tail=${tail}`,
          (event) => {
            const data = eventData(event);
            if (event.event === 'ready') {
              failures = 0;
              first = false;
              setMode({ kind: 'live' });
            } else if (event.event === 'log') append([lineOf(data)]);
            else if (event.event === 'end') {
              const reason = data && typeof data === 'object' ? String((data as { reason?: unknown }).reason ?? '') : String(data);
              end.reason = reason || 'ended';
            }
          },
          controller.signal,
        );
        if (controller.signal.aborted) return;
        if (end.reason !== null) {
          setMode({ kind: 'ended', reason: end.reason });
          return;
        }
        throw new Error('The log stream closed');
      } catch (err) {
        if (controller.signal.aborted) return;
        if (err instanceof ApiError && err.status === 501) {
          void loadHistory(err.message);
          return;
        }
        // Refused outright (not deployed, not found, too many streams): trying again on its own would not help.
        if (err instanceof ApiError && err.status >= 400 && err.status < 500) {
          setMode({ kind: 'failed', message: err.message });
          return;
        }
        failures++;
        if (failures > MAX_RETRIES) {
          setMode({ kind: 'failed', message: `The log stream keeps breaking off: ${errorMessage(err)}` });
          return;
        }
        setMode({ kind: 'reconnecting', attempt: failures, reason: errorMessage(err) });
        timer = setTimeout(() => void connect(), RETRY_MS);
      }
    };
    void connect();
    return () => {
      controller.abort();
      if (timer) clearTimeout(timer);
    };
  }, [base, append, loadHistory, connection]);

  const shown = paused ? frozen : lines.current;

  useLayoutEffect(() => {
    const el = viewRef.current;
    if (el && !paused) el.scrollTop = el.scrollHeight;
  }, [version, paused]);

  const togglePause = () => {
    if (paused) {
      setPaused(false);
      setMissed(0);
    } else {
      setFrozen(lines.current);
      setPaused(true);
    }
  };

  const clear = () => {
    lines.current = [];
    setFrozen([]);
    setMissed(0);
    setVersion((v) => v + 1);
  };

  const reconnect = () => {
    clear();
    setConnection((c) => c + 1);
  };

  return (
    <div className="stack">
      <LogStatus mode={mode} onReconnect={reconnect} onHistory={(why) => void loadHistory(why)} />
      <div className="row">
        <button type="button" className="button secondary" aria-pressed={paused} onClick={togglePause}>
          Pause
        </button>
        <button type="button" className="button secondary" onClick={clear}>
          Clear
        </button>
        {mode.kind === 'history' ? (
          <button type="button" className="button secondary" disabled={mode.loading} onClick={() => void loadHistory(mode.why)}>
            Refresh history
          </button>
        ) : null}
        <span className="muted" aria-live="polite">
          {paused
            ? `Paused${missed > 0 ? `: ${missed} new line${missed === 1 ? '' : 's'} not shown yet` : ''}. Press Pause again to follow.`
            : ''}
        </span>
      </div>
      {shown.length === 0 && mode.kind !== 'connecting' && !(mode.kind === 'history' && mode.loading) ? (
        <p className="state state-empty">No log lines {mode.kind === 'live' ? 'yet: new output appears here' : 'to show'}.</p>
      ) : (
        // Not announced line by line (aria-live off): a busy log would drown everything else a screen reader says.
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard to scroll it
        <pre className="log-view" ref={viewRef} tabIndex={0} role="log" aria-live="off" aria-label="Agent log">
          {shown.join('\n')}
        </pre>
      )}
      <p className="hint">The newest {MAX_LINES.toLocaleString()} lines are kept.</p>
    </div>
  );
}

function LogStatus({ mode, onReconnect, onHistory }: { mode: Mode; onReconnect: () => void; onHistory: (why: string) => void }) {
  switch (mode.kind) {
    case 'connecting':
      return <Loading label="Connecting to the live log…" />;
    case 'live':
      return (
        <p className="row" role="status">
          <span className="badge badge-ok">live</span> Following the agent’s log as it is written.
        </p>
      );
    case 'reconnecting':
      return (
        <p className="row" role="status">
          <span className="badge badge-busy">reconnecting</span> The connection broke off ({mode.reason}); trying again (attempt{' '}
          {mode.attempt} of {MAX_RETRIES})…
        </p>
      );
    case 'ended':
      return (
        <div className="row" role="status">
          <span className="badge badge-idle">ended</span> The live log ended ({mode.reason}).
          <button type="button" className="button secondary" onClick={onReconnect}>
            Reconnect
          </button>
        </div>
      );
    case 'failed':
      return (
        <div className="stack">
          <ErrorState message={mode.message} onRetry={onReconnect} />
          <button type="button" className="button secondary" onClick={() => onHistory('')}>
            Show recent history
          </button>
        </div>
      );
    case 'history':
      return (
        <div className="stack">
          {mode.why ? (
            <p className="notice" role="status">
              Live logs are not available for this agent ({mode.why}). Showing the most recent output instead; use “Refresh history” to read
              it again.
            </p>
          ) : (
            <p className="notice" role="status">
              Showing the most recent output.
            </p>
          )}
          {mode.loading ? <Loading label="Loading recent log lines…" /> : null}
          {mode.error ? <ErrorState message={mode.error} onRetry={() => onHistory(mode.why)} /> : null}
        </div>
      );
  }
}
