import { type FormEvent, useEffect, useRef, useState } from 'react';
import { Link } from 'wouter';
import { ApiError, client, errorMessage, request } from '../api.js';
import type { AgentDoneEvent, AgentStatusEvent, Provisioned } from '../api-types.js';
import { eventData, readEventStream } from '../event-stream.js';
import { InlineError } from '../components/states.js';
import { StatusBadge } from '../components/status-badge.js';

const AI_PROVIDERS = [
  { id: 'openrouter', label: 'OpenRouter' },
  { id: 'anthropic', label: 'Anthropic' },
  { id: 'openai', label: 'OpenAI' },
  { id: 'gemini', label: 'Google Gemini' },
  { id: 'groq', label: 'Groq' },
] as const;

/** The `aiProvider` that asks for the platform's own key (`POST /api/provision` refuses it when there is none). */
const PLATFORM_DEFAULT = 'platform';

const STEPS = ['Agent', 'AI provider', 'Channels'] as const;

/** The state of the agent being set up, as its event stream last gave it. */
export interface SeenState {
  agentId: string;
  state: AgentStatusEvent['state'];
}

/** What the progress view shows: the latest `status` event's fields, whether `done` came, and a connection problem. */
type Progress = Pick<AgentStatusEvent, 'status' | 'live' | 'ready'> & {
  /** The state machine's state (`live` once the start's warm-up turn is done: a message is answered at once). */
  state?: AgentStatusEvent['state'];
  finished: boolean;
  error?: string;
};

/**
 * Three short steps (name, AI provider, channels), then `POST /api/provision`, then the agent's event stream
 * (`/api/agents/:id/events`) followed until the gateway is ready or the agent is in `error`.
 */
export function ProvisionWizard({
  onClose,
  onCreated,
  platformKeyProviders,
}: {
  onClose: () => void;
  /** Called when the agent is created, then with each state its event stream gives (for the page's own views of it). */
  onCreated: (seen?: SeenState) => void;
  /** AI providers whose platform key a new agent gets (`GET /api/dashboard/new-agent`): "Platform default" needs one. */
  platformKeyProviders: readonly string[];
}) {
  const [step, setStep] = useState(0);
  const [name, setName] = useState('');
  const platformDefault = platformKeyProviders.length > 0;
  // No platform key: the user picks a provider and gives their key, since an agent without one fails every chat.
  const [aiProvider, setAiProvider] = useState<string>(platformDefault ? PLATFORM_DEFAULT : '');
  const [apiKey, setApiKey] = useState('');
  const [autoProvision, setAutoProvision] = useState(true);
  const [telegramToken, setTelegramToken] = useState('');
  const [discordToken, setDiscordToken] = useState('');
  const [whatsappToken, setWhatsappToken] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string>();
  const [created, setCreated] = useState<Provisioned>();
  // 402/403: no paid plan or no active subscription; the way forward is the billing page.
  const [needsPlan, setNeedsPlan] = useState(false);

  const hasToken = Boolean(telegramToken.trim() || discordToken.trim() || whatsappToken.trim());
  const keyRequired = aiProvider !== PLATFORM_DEFAULT && !platformKeyProviders.includes(aiProvider);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (step === 1) {
      if (!aiProvider) return setError('Choose the AI provider your agent uses.');
      if (keyRequired && !apiKey.trim()) return setError('Enter your API key for this provider: the platform has none for agents.');
    }
    setError(undefined);
    if (step < STEPS.length - 1) {
      setStep(step + 1);
      return;
    }
    if (!autoProvision && !hasToken) {
      setError('Add at least one channel token, or let the platform set the agent up without channels.');
      return;
    }
    setPending(true);
    setError(undefined);
    try {
      const result = await request(
        client.POST('/api/provision', {
          body: {
            name: name.trim() || undefined,
            aiProvider: aiProvider || undefined,
            apiKey: aiProvider === PLATFORM_DEFAULT ? undefined : apiKey.trim() || undefined,
            autoProvision,
            telegramToken: telegramToken.trim() || undefined,
            discordToken: discordToken.trim() || undefined,
            whatsappToken: whatsappToken.trim() || undefined,
          },
        }),
      );
      // The API key and tokens are gone from this page as soon as the platform has them.
      setApiKey('');
      setTelegramToken('');
      setDiscordToken('');
      setWhatsappToken('');
      setCreated(result);
      onCreated();
    } catch (err) {
      setError(errorMessage(err));
      setNeedsPlan(err instanceof ApiError && (err.status === 402 || err.status === 403));
    } finally {
      setPending(false);
    }
  };

  if (created) return <ProvisionProgress agentId={created.agentId} initialStatus={created.status} onClose={onClose} onChange={onCreated} />;

  return (
    <section className="card stack" aria-labelledby="wizard-heading">
      <div className="row" style={{ justifyContent: 'space-between' }}>
        <h2 id="wizard-heading" style={{ margin: 0 }}>
          New agent
        </h2>
        <button type="button" className="button secondary" onClick={onClose}>
          Cancel
        </button>
      </div>
      <ol className="row steps" aria-label="Steps">
        {STEPS.map((label, index) => (
          <li key={label} className={index < step ? 'done' : ''} aria-current={index === step ? 'step' : undefined}>
            {label}
          </li>
        ))}
      </ol>
      <form className="stack" onSubmit={submit} noValidate>
        {step === 0 ? (
          <div>
            <label htmlFor="agent-name">Name</label>
            <input id="agent-name" maxLength={100} placeholder="My agent" value={name} onChange={(e) => setName(e.target.value)} />
            <p className="hint">The plan you are on sets how many agents you can run; see Settings → Billing.</p>
          </div>
        ) : null}
        {step === 1 ? (
          <>
            <div>
              <label htmlFor="ai-provider">AI provider</label>
              <select
                id="ai-provider"
                value={aiProvider}
                aria-describedby={platformDefault ? undefined : 'ai-provider-hint'}
                onChange={(e) => setAiProvider(e.target.value)}
              >
                {platformDefault ? (
                  <option value={PLATFORM_DEFAULT}>Platform default</option>
                ) : (
                  <option value="" disabled>
                    Choose a provider
                  </option>
                )}
                {AI_PROVIDERS.map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.label}
                  </option>
                ))}
              </select>
              {platformDefault ? null : (
                <p className="hint" id="ai-provider-hint">
                  This platform has no AI provider key of its own for agents, so your agent uses your key with the provider you choose.
                </p>
              )}
            </div>
            {aiProvider && aiProvider !== PLATFORM_DEFAULT ? (
              <div>
                <label htmlFor="api-key">
                  API key{' '}
                  <span className="hint">({keyRequired ? 'required' : 'optional'}; kept sealed, only your agent's host receives it)</span>
                </label>
                <input
                  id="api-key"
                  type="password"
                  autoComplete="off"
                  required={keyRequired}
                  value={apiKey}
                  onChange={(e) => setApiKey(e.target.value)}
                />
              </div>
            ) : null}
          </>
        ) : null}
        {step === 2 ? (
          <fieldset className="stack">
            <legend>Channels</legend>
            <label className="row" style={{ fontWeight: 400 }}>
              <input type="checkbox" checked={autoProvision} onChange={(e) => setAutoProvision(e.target.checked)} /> Set the agent up
              without a messaging channel (chat with it here); add channels later
            </label>
            {!autoProvision ? (
              <>
                <div>
                  <label htmlFor="telegram-token">Telegram bot token</label>
                  <input
                    id="telegram-token"
                    type="password"
                    autoComplete="off"
                    value={telegramToken}
                    onChange={(e) => setTelegramToken(e.target.value)}
                  />
                </div>
                <div>
                  <label htmlFor="discord-token">Discord bot token</label>
                  <input
                    id="discord-token"
                    type="password"
                    autoComplete="off"
                    value={discordToken}
                    onChange={(e) => setDiscordToken(e.target.value)}
                  />
                </div>
                <div>
                  <label htmlFor="whatsapp-token">WhatsApp token</label>
                  <input
                    id="whatsapp-token"
                    type="password"
                    autoComplete="off"
                    value={whatsappToken}
                    onChange={(e) => setWhatsappToken(e.target.value)}
                  />
                </div>
              </>
            ) : null}
          </fieldset>
        ) : null}
        <InlineError message={error} />
        {needsPlan ? (
          <p>
            <Link href="/settings#billing">Choose a plan in Settings → Billing</Link>
          </p>
        ) : null}
        <div className="row">
          {step > 0 ? (
            <button type="button" className="button secondary" onClick={() => setStep(step - 1)} disabled={pending}>
              Back
            </button>
          ) : null}
          <button type="submit" className="button primary" disabled={pending}>
            {step < STEPS.length - 1 ? 'Next' : pending ? 'Creating…' : 'Create agent'}
          </button>
        </div>
      </form>
    </section>
  );
}

function ProvisionProgress({
  agentId,
  initialStatus,
  onClose,
  onChange,
}: {
  agentId: string;
  initialStatus: string;
  onClose: () => void;
  onChange: (seen?: SeenState) => void;
}) {
  const [progress, setProgress] = useState<Progress>({ status: initialStatus, live: false, ready: false, finished: false });
  // The parent's callback changes on every render; the stream must not be reopened for that.
  const changed = useRef(onChange);
  changed.current = onChange;

  // Follows the agent's events until `done`; a dropped connection is opened again after a pause (the stream starts
  // with the current state, so nothing is missed).
  useEffect(() => {
    const abort = new AbortController();
    const follow = async () => {
      for (let attempt = 0; !abort.signal.aborted; attempt++) {
        let finished = false;
        try {
          await readEventStream(
            `/api/agents/${encodeURIComponent(agentId)}/events`,
            (event) => {
              if (event.event === 'status') {
                const data = eventData(event) as AgentStatusEvent;
                setProgress((p) => ({
                  ...p,
                  status: data.status,
                  state: data.state,
                  live: data.live,
                  ready: data.ready,
                  error: undefined,
                }));
                changed.current({ agentId, state: data.state });
              } else if (event.event === 'done') {
                const data = eventData(event) as AgentDoneEvent;
                finished = true;
                setProgress((p) => ({ ...p, status: data.status, ready: Boolean(data.ready), finished: true, error: undefined }));
                changed.current();
              }
            },
            abort.signal,
          );
          // The server ends the stream after `done`, or after ten minutes without one: then look again.
          if (finished) return;
        } catch (err) {
          if (abort.signal.aborted) return;
          if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
            setProgress((p) => ({ ...p, error: err.message }));
            return;
          }
          setProgress((p) => ({ ...p, error: 'Lost the connection to the agent’s events; trying again…' }));
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 1_000 * 2 ** attempt)));
      }
    };
    void follow();
    return () => abort.abort();
  }, [agentId]);

  const failed = progress.status === 'error';
  const answers = progress.state === 'live';
  const steps = [
    { label: 'Agent record created', done: true },
    { label: 'Deployed on the agent host', done: progress.status === 'running' || progress.status === 'active' || progress.live },
    { label: 'Gateway live', done: progress.live },
    { label: 'Gateway ready', done: progress.ready },
    // /readyz answers before the start's warm-up turn; only after it is a first message answered without a wait.
    { label: 'Ready to chat', done: answers },
  ];

  return (
    <section className="card stack" aria-labelledby="progress-heading">
      <h2 id="progress-heading" style={{ margin: 0 }}>
        Setting up your agent <StatusBadge status={progress.state ?? progress.status} />
      </h2>
      <ol className="steps" aria-live="polite">
        {steps.map((s) => (
          <li key={s.label} className={s.done ? 'done' : failed ? 'failed' : ''}>
            {s.label}
            <span className="visually-hidden">{s.done ? ' (done)' : failed ? ' (failed)' : ' (waiting)'}</span>
          </li>
        ))}
      </ol>
      {failed ? (
        <p className="state state-error" role="alert">
          The agent could not be started. Open it to repair it or read its logs.
        </p>
      ) : null}
      {!progress.finished && !failed ? <p className="muted">This takes about half a minute.</p> : null}
      {progress.error && !progress.finished ? <p className="muted">{progress.error}</p> : null}
      <div className="row">
        <Link href={`/agents/${agentId}`} className="button primary">
          {answers ? 'Open the agent' : 'Open the agent page'}
        </Link>
        <button type="button" className="button secondary" onClick={onClose}>
          Close
        </button>
      </div>
    </section>
  );
}
