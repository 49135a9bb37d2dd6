import { isOnItsWayToLive, wakesOnMessage } from '@aop/core/agent-state';
import { type FormEvent, type KeyboardEvent, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { useSearchParams } from 'wouter';
import { client, errorMessage, request } from '../../api.js';
import type { ChatMessage } from '../../api-types.js';
import { Empty, ErrorState, InlineError, Loading } from '../../components/states.js';
import { useApi } from '../../use-api.js';
import { type AgentStateNow, formatTime } from './shared.js';

/**
 * Chat with one agent over `POST /api/chat` (request/response). The plugin gateway's streaming `agent` plugin is not
 * used: it always talks to the user's default agent (it takes no `agentId`) and does not store the turn, so the
 * history below would lose it; `POST /api/chat` names this agent and stores both messages.
 */

const PAGE = 30;
/** The API's rule for session keys (`SESSION_KEY_PATTERN`). */
const SESSION_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const MESSAGE_MAX = 32_000;
const DEFAULT_SESSION = 'main';

/**
 * What the agent's state means for a message sent now; null when it is live (or not known yet). `waking`: typing
 * asked a sleeping agent to wake (`useWakeAhead`), with its outcome.
 */
function stateNotice(s: AgentStateNow | undefined, waking: WakeAhead): { tone: 'wait' | 'down'; text: string } | null {
  if (!s || s.state === 'live') return null;
  // A message sent meanwhile waits for it, server side.
  if (isOnItsWayToLive(s.state)) {
    return { tone: 'wait', text: `The agent is ${s.state} (${s.reason}). A message sent now waits until it is live, then goes.` };
  }
  if (wakesOnMessage(s.state)) {
    if (waking.kind === 'asked') {
      return {
        tone: 'wait',
        text: 'The agent is asleep after being idle, and waking now that you are typing (it starts again: this can take up to a minute). A message sent meanwhile waits until it is live, then goes.',
      };
    }
    if (waking.kind === 'failed') {
      return {
        tone: 'wait',
        text: `The agent is asleep after being idle, and could not be woken ahead (${waking.error}). A message sent now tries again to wake it, then goes.`,
      };
    }
    return {
      tone: 'wait',
      text: 'The agent is asleep after being idle. It starts waking as you type a message (this can take up to a minute: the agent starts again); a message sent meanwhile waits until it is live, then goes.',
    };
  }
  if (s.state === 'degraded') return { tone: 'down', text: `The agent is degraded (${s.reason}): a message may not be answered.` };
  // "stopped" says it all; a failure says why.
  const what = s.state === 'stopped' ? 'stopped' : `${s.state} (${s.reason})`;
  return { tone: 'down', text: `The agent is ${what}: start it on the Lifecycle tab to chat.` };
}

/**
 * The states in which the web refuses a message (409 or "not live": the agent is not coming up by itself), so Send is
 * off and says why; in every other state a message goes, or waits for the agent.
 */
const refusesMessages = (s: AgentStateNow | undefined): boolean =>
  s !== undefined && (s.state === 'stopped' || s.state === 'stopping' || s.state === 'failed');

type WakeAhead = { kind: 'idle' } | { kind: 'asked' } | { kind: 'failed'; error: string };

/**
 * Wakes a sleeping agent when its owner starts typing to it (issue #20): a wake is a cold start (15–25 s), and a
 * message usually takes a few seconds to write, so starting it then (`POST /api/agents/:id/start`, what a message would
 * do) takes that much off the wait for the answer. Once per nap: the state leaving `hibernated` re-arms it for the next
 * one. Typing to a stopped agent starts nothing (stopped is its owner's choice); reading the page wakes nothing.
 */
function useWakeAhead(agentId: string, state: AgentStateNow['state'] | undefined): { waking: WakeAhead; typed: () => void } {
  const [waking, setWaking] = useState<WakeAhead>({ kind: 'idle' });
  const asleep = state !== undefined && wakesOnMessage(state);
  // Each nap (and each agent) starts un-asked.
  useEffect(() => setWaking({ kind: 'idle' }), [agentId, asleep]);
  const typed = useCallback(() => {
    if (!asleep || waking.kind !== 'idle') return;
    setWaking({ kind: 'asked' });
    // The answer comes when the agent is live or the wait ran out; the state stream shows the way there meanwhile.
    request(client.POST('/api/agents/{id}/start', { params: { path: { id: agentId } } })).catch((err: unknown) =>
      setWaking({ kind: 'failed', error: errorMessage(err) }),
    );
  }, [agentId, asleep, waking.kind]);
  return { waking, typed };
}

/** `agentState`: the agent's state machine, from the page's event stream (the chat says what it means for a message). */
export function ChatTab({ agentId, agentState }: { agentId: string; agentState?: AgentStateNow | undefined }) {
  const { waking, typed } = useWakeAhead(agentId, agentState?.state);
  const notice = stateNotice(agentState, waking);
  const refused = refusesMessages(agentState);
  const [params, setParams] = useSearchParams();
  const asked = params.get('session');
  const sessionKey = asked && SESSION_KEY.test(asked) ? asked : DEFAULT_SESSION;
  const setSession = (key: string) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (key === DEFAULT_SESSION) next.delete('session');
        else next.set('session', key);
        return next;
      },
      { replace: true },
    );

  // Which sessions exist: the keys of this agent's recent stored messages.
  const recent = useApi('/api/chat', { params: { query: { agentId, limit: '200' } } });
  const [opened, setOpened] = useState<string[]>([]);
  const sessions = useMemo(() => {
    const keys = new Set<string>([DEFAULT_SESSION, sessionKey, ...opened]);
    for (const m of recent.data?.messages ?? []) keys.add(m.sessionKey);
    return [...keys].sort((a, b) => (a === DEFAULT_SESSION ? -1 : b === DEFAULT_SESSION ? 1 : a.localeCompare(b)));
  }, [recent.data, sessionKey, opened]);

  const [messages, setMessages] = useState<ChatMessage[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [loadError, setLoadError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const [older, setOlder] = useState<{ loading: boolean; error?: string }>({ loading: false });
  const [draft, setDraft] = useState('');
  const [pending, setPending] = useState<{ text: string; at: string } | null>(null);
  const [sendError, setSendError] = useState<string>();
  const logRef = useRef<HTMLOListElement>(null);
  /** What the next render should do to the scroll position: follow the newest message, or keep the view after prepending. */
  const scrollIntent = useRef<{ kind: 'bottom' } | { kind: 'keep'; fromBottom: number } | null>(null);
  const current = useRef({ agentId, sessionKey });
  current.current = { agentId, sessionKey };
  const generation = useRef(0);

  const loadLatest = useCallback(async () => {
    const mine = ++generation.current;
    setLoading(true);
    setLoadError(undefined);
    try {
      const page = await request(client.GET('/api/chat', { params: { query: { agentId, sessionKey, limit: String(PAGE) } } }));
      if (mine !== generation.current) return;
      scrollIntent.current = { kind: 'bottom' };
      setMessages(page.messages);
      setHasMore(page.hasMore);
      setCursor(page.nextBefore);
    } catch (err) {
      if (mine === generation.current) setLoadError(errorMessage(err));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, [agentId, sessionKey]);

  useEffect(() => {
    setMessages([]);
    setSendError(undefined);
    setOlder({ loading: false });
    void loadLatest();
    return () => void generation.current++;
  }, [loadLatest]);

  const loadOlder = async () => {
    if (!cursor) return;
    const mine = generation.current;
    setOlder({ loading: true });
    try {
      const page = await request(
        client.GET('/api/chat', { params: { query: { agentId, sessionKey, limit: String(PAGE), before: cursor } } }),
      );
      if (mine !== generation.current) return;
      const el = logRef.current;
      scrollIntent.current = { kind: 'keep', fromBottom: el ? el.scrollHeight - el.scrollTop : 0 };
      setMessages((m) => [...page.messages, ...m]);
      setHasMore(page.hasMore);
      setCursor(page.nextBefore);
      setOlder({ loading: false });
    } catch (err) {
      if (mine === generation.current) setOlder({ loading: false, error: errorMessage(err) });
    }
  };

  useLayoutEffect(() => {
    const el = logRef.current;
    const intent = scrollIntent.current;
    if (!el || !intent) return;
    el.scrollTop = intent.kind === 'bottom' ? el.scrollHeight : el.scrollHeight - intent.fromBottom;
    scrollIntent.current = null;
  }, [messages, pending, sendError]);

  const send = async (event?: FormEvent) => {
    event?.preventDefault();
    if (pending || refused) return;
    const text = draft;
    if (text.trim() === '') {
      setSendError('Type a message first.');
      return;
    }
    const to = { agentId, sessionKey };
    const askedAt = new Date().toISOString();
    setDraft('');
    setSendError(undefined);
    setPending({ text, at: askedAt });
    scrollIntent.current = { kind: 'bottom' };
    try {
      const reply = await request(client.POST('/api/chat', { body: { message: text, agentId, sessionKey } }));
      // The person moved to another session (or agent) meanwhile: the turn is stored there and shows when they return.
      if (current.current.agentId !== to.agentId || current.current.sessionKey !== to.sessionKey) return;
      scrollIntent.current = { kind: 'bottom' };
      setMessages((m) => [
        ...m,
        { id: `sent-${reply.messageId}`, role: 'user', content: text, ...to, model: null, usage: null, createdAt: askedAt },
        {
          id: reply.messageId,
          role: 'assistant',
          ...to,
          content: reply.reply,
          model: reply.model,
          usage: reply.usage,
          createdAt: new Date().toISOString(),
        },
      ]);
    } catch (err) {
      if (current.current.agentId !== to.agentId || current.current.sessionKey !== to.sessionKey) return;
      scrollIntent.current = { kind: 'bottom' };
      setSendError(`Your message was not answered: ${errorMessage(err)}`);
      // Nothing was stored for a failed turn: give the text back so it can be sent again.
      setDraft((d) => (d === '' ? text : d));
    } finally {
      setPending(null);
    }
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    }
  };

  const [newKey, setNewKey] = useState('');
  const [newKeyError, setNewKeyError] = useState<string>();
  const openSession = (event: FormEvent) => {
    event.preventDefault();
    const key = newKey.trim();
    if (!SESSION_KEY.test(key)) {
      setNewKeyError('Use letters, digits, dot, dash and underscore (at most 100 characters), starting with a letter or digit.');
      return;
    }
    setNewKeyError(undefined);
    setOpened((o) => (o.includes(key) ? o : [...o, key]));
    setNewKey('');
    setSession(key);
  };

  return (
    <div className="stack">
      <div className="chat-sessions">
        <div>
          <label htmlFor="chat-session">Session</label>
          <select id="chat-session" value={sessionKey} disabled={pending !== null} onChange={(e) => setSession(e.target.value)}>
            {sessions.map((key) => (
              <option key={key} value={key}>
                {key}
              </option>
            ))}
          </select>
        </div>
        <form className="chat-new-session" onSubmit={openSession} noValidate>
          <div>
            <label htmlFor="chat-new-session">New session key</label>
            <input
              id="chat-new-session"
              value={newKey}
              maxLength={100}
              autoComplete="off"
              aria-invalid={newKeyError ? true : undefined}
              aria-describedby={newKeyError ? 'chat-new-session-error' : undefined}
              onChange={(e) => setNewKey(e.target.value)}
            />
          </div>
          <button type="submit" className="button secondary" disabled={pending !== null}>
            Open session
          </button>
        </form>
      </div>
      {newKeyError ? (
        <p id="chat-new-session-error" className="inline-error" role="alert">
          {newKeyError}
        </p>
      ) : null}

      {notice ? (
        <p className={notice.tone === 'wait' ? 'notice' : 'notice warning'} role="status">
          {notice.text}
        </p>
      ) : null}

      <section className="card chat" aria-label={`Conversation in session ${sessionKey}`}>
        {hasMore ? (
          <div className="chat-older">
            <button type="button" className="button secondary" disabled={older.loading} onClick={() => void loadOlder()}>
              {older.loading ? 'Loading older messages…' : 'Load older messages'}
            </button>
            <InlineError message={older.error} />
          </div>
        ) : null}
        {loading && messages.length === 0 ? <Loading label="Loading the conversation…" /> : null}
        {loadError ? <ErrorState message={loadError} onRetry={() => void loadLatest()} /> : null}
        {!loading && !loadError && messages.length === 0 && !pending && !sendError ? (
          <Empty>
            <p>
              No messages in session “{sessionKey}” yet.{refused ? '' : ' Write the first one below.'}
            </p>
          </Empty>
        ) : null}
        <ol className="chat-log" ref={logRef} aria-label="Messages" aria-live="polite" tabIndex={-1}>
          {messages.map((m) => (
            <li key={m.id} className={`chat-msg ${m.role}`}>
              <span className="visually-hidden">{m.role === 'user' ? 'You:' : 'Agent:'}</span>
              <div className="chat-text">{m.content}</div>
              <div className="chat-meta">
                <time dateTime={m.createdAt}>{formatTime(m.createdAt)}</time>
                {m.model ? (
                  <span className="mono chat-model"> · {m.model}</span>
                ) : m.role === 'assistant' ? (
                  <span className="chat-model"> · model unknown</span>
                ) : null}
                {m.usage ? (
                  <span>
                    {' '}
                    · {m.usage.prompt_tokens} in / {m.usage.completion_tokens} out tokens
                  </span>
                ) : null}
              </div>
            </li>
          ))}
          {pending ? (
            <>
              <li className="chat-msg user">
                <span className="visually-hidden">You:</span>
                <div className="chat-text">{pending.text}</div>
                <div className="chat-meta">
                  <time dateTime={pending.at}>{formatTime(pending.at)}</time>
                </div>
              </li>
              <li className="chat-msg assistant pending">
                <span className="chat-text" role="status">
                  <span className="spinner" aria-hidden="true" />{' '}
                  {notice?.tone === 'wait'
                    ? `Waiting for the agent to be live (${agentState?.state}: ${agentState?.reason}); your message goes as soon as it is…`
                    : 'Waiting for the agent’s reply…'}
                </span>
              </li>
            </>
          ) : null}
          {sendError ? (
            <li className="chat-msg error">
              <p className="inline-error" role="alert">
                {sendError}
              </p>
            </li>
          ) : null}
        </ol>
      </section>

      <form className="chat-form" onSubmit={(e) => void send(e)}>
        <label htmlFor="chat-message">Message</label>
        <textarea
          id="chat-message"
          rows={3}
          value={draft}
          maxLength={MESSAGE_MAX}
          aria-describedby="chat-message-hint"
          onChange={(e) => {
            setDraft(e.target.value);
            if (e.target.value.trim() !== '') typed();
          }}
          onKeyDown={onKeyDown}
        />
        <div className="row chat-actions">
          <span id="chat-message-hint" className="hint">
            {refused ? 'Start the agent on the Lifecycle tab to send a message.' : 'Enter sends; Shift+Enter starts a new line.'}
          </span>
          <button type="submit" className="button primary" disabled={pending !== null || refused}>
            Send
          </button>
        </div>
      </form>
    </div>
  );
}
