import { type FormEvent, useState } from 'react';
import type { BridgeHealth } from '../api-types.js';
import { PageHeader } from '../components/layout.js';
import { ErrorState, InlineError, Loading } from '../components/states.js';
import { Inbox } from './bridge/inbox.js';
import { SendMessage } from './bridge/send.js';
import { useBridge } from './bridge/use-bridge.js';

/**
 * The operators' view of the bridge bus (spec §4.8). Its routes are guarded by `X-Bridge-Secret`, not by the session,
 * when the server sets BRIDGE_SECRET: the page then asks for the secret and keeps it in React state only, so it is
 * gone when the page is left or reloaded. Without a secret only administrators' sessions get in (403 for others).
 */
export default function BridgePage() {
  const [secret, setSecret] = useState<string>();
  const health = useBridge('/api/bridge/health', secret, { refreshMs: 30_000 });
  const [sentCount, setSentCount] = useState(0);

  const locked = health.status === 401;
  return (
    <>
      <PageHeader title="Bridge">
        {secret && !locked ? (
          <button type="button" className="button secondary" onClick={() => setSecret(undefined)}>
            Forget secret
          </button>
        ) : null}
      </PageHeader>
      <p className="muted">The message bus between the operator and the agents, by channel.</p>
      {locked ? (
        <SecretForm rejected={secret !== undefined} onSubmit={setSecret} />
      ) : health.status === 403 ? (
        <p className="state state-error" role="alert">
          The bridge is for administrators. Ask one to grant you the role (<span className="mono">npm run cli -- admin grant</span>).
        </p>
      ) : health.data === undefined ? (
        health.error ? (
          <ErrorState message={health.error} onRetry={() => void health.reload()} />
        ) : (
          <Loading label="Checking the bridge…" />
        )
      ) : (
        <div className="stack bridge-page">
          {health.error ? <ErrorState message={health.error} onRetry={() => void health.reload()} /> : null}
          <Health health={health.data} openWithoutSecret={!secret} />
          <Inbox channels={health.data.channels} secret={secret} refreshKey={sentCount} />
          <SendMessage
            senders={health.data.senders}
            channels={health.data.channels}
            secret={secret}
            onSent={() => {
              setSentCount((n) => n + 1);
              void health.reload();
            }}
          />
        </div>
      )}
    </>
  );
}

function SecretForm({ rejected, onSubmit }: { rejected: boolean; onSubmit: (secret: string) => void }) {
  const [value, setValue] = useState('');
  const [problem, setProblem] = useState<string>();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!value) return setProblem('Enter the bridge secret.');
    setProblem(undefined);
    onSubmit(value);
    // The field lets go of the secret at once; only the page's memory keeps it, for the calls it makes.
    setValue('');
  };
  return (
    <form onSubmit={submit} className="card narrow stack" noValidate>
      <h2>Bridge secret</h2>
      <p>This server protects the bridge with a shared secret (BRIDGE_SECRET). Enter it to read and send messages.</p>
      <div>
        <label htmlFor="bridge-secret">Bridge secret</label>
        <input
          id="bridge-secret"
          type="password"
          autoComplete="off"
          spellCheck={false}
          aria-describedby="bridge-secret-hint"
          value={value}
          onChange={(e) => setValue(e.target.value)}
        />
        <p id="bridge-secret-hint" className="hint">
          Kept only while this page is open; it is never saved in the browser.
        </p>
      </div>
      <InlineError message={problem ?? (rejected ? 'That secret was not accepted.' : undefined)} />
      <button type="submit" className="button primary">
        Unlock
      </button>
    </form>
  );
}

function Health({ health, openWithoutSecret }: { health: BridgeHealth; openWithoutSecret: boolean }) {
  const last = health.last_message;
  return (
    <section aria-labelledby="health-heading" className="card stack">
      <div className="row bridge-head">
        <h2 id="health-heading">Health</h2>
        <span className={`badge ${health.status === 'ok' ? 'badge-ok' : 'badge-bad'}`}>{health.status}</span>
      </div>
      <dl className="settings-facts">
        <div>
          <dt>Messages stored</dt>
          <dd>{health.total_messages.toLocaleString()}</dd>
        </div>
        <div>
          <dt>Last message</dt>
          <dd>
            {last ? (
              <>
                <time dateTime={last.created_at}>{new Date(last.created_at).toLocaleString()}</time> from{' '}
                <span className="mono">{last.sender}</span> in <span className="mono">{last.channel}</span>
              </>
            ) : (
              <span className="muted">None yet</span>
            )}
          </dd>
        </div>
        <div>
          <dt>Channels</dt>
          <dd className="mono">{health.channels.join(', ')}</dd>
        </div>
        <div>
          <dt>Senders</dt>
          <dd className="mono">{health.senders.join(', ')}</dd>
        </div>
      </dl>
      <p className="hint">
        Checked <time dateTime={health.timestamp}>{new Date(health.timestamp).toLocaleTimeString()}</time>.
        {openWithoutSecret ? ' This server has no bridge secret: only administrators can use the bridge.' : null}
      </p>
    </section>
  );
}
