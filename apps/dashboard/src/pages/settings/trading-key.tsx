import { type FormEvent, useState } from 'react';
import { client, request } from '../../api.js';
import { Announce } from '../../components/announce.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { InlineError, Loaded } from '../../components/states.js';
import { useAction, useApi } from '../../use-api.js';

/** The route's limit (apps/web/src/modules/trading/trading.service.ts: TRADING_KEY_MAX). */
const TRADING_KEY_MAX = 512;

/**
 * The personal key for the trading service. The server keeps it sealed and only ever says whether one is set, so this
 * page never shows it; the field is emptied as soon as the key is sent.
 */
export function TradingKeySection() {
  const status = useApi('/api/user/trading-key');
  const [value, setValue] = useState('');
  const [done, setDone] = useState<string>();

  const save = useAction(async (apiKey: string) => request(client.POST('/api/user/trading-key', { body: { apiKey } })));
  const remove = useAction(async () => request(client.DELETE('/api/user/trading-key')));

  const onSave = async (event: FormEvent) => {
    event.preventDefault();
    setDone(undefined);
    const apiKey = value.trim();
    if (!apiKey) return save.setError('Paste the API key from your trading account.');
    setValue('');
    if ((await save.run(apiKey)) !== undefined) setDone('Trading key saved.');
    await status.reload();
  };

  return (
    <section aria-labelledby="trading-key-heading" className="card stack">
      <h2 id="trading-key-heading">Trading key</h2>
      <p className="muted">
        The API key of your trading account lets this platform read your balances and send trading prompts for you. It is stored encrypted
        and is never shown again, here or anywhere else.
      </p>
      <Loaded resource={status}>
        {(s) => (
          <div className="row">
            <span className={`badge ${s.configured ? 'badge-ok' : 'badge-idle'}`}>{s.configured ? 'Key set' : 'No key'}</span>
            <span>{s.configured ? 'A trading key is set.' : 'No trading key is set.'}</span>
            {s.configured ? (
              <ConfirmButton
                danger
                disabled={remove.pending}
                question="Remove your trading key? Your trading account is no longer used until you set a key again."
                onConfirm={async () => {
                  setDone(undefined);
                  if ((await remove.run()) !== undefined) setDone('Trading key removed.');
                  await status.reload();
                }}
              >
                Remove trading key
              </ConfirmButton>
            ) : null}
          </div>
        )}
      </Loaded>
      <InlineError message={remove.error} />

      <form onSubmit={onSave} className="stack settings-form" noValidate>
        <div>
          <label htmlFor="trading-key-value">Trading API key</label>
          <input
            id="trading-key-value"
            type="password"
            autoComplete="off"
            spellCheck={false}
            maxLength={TRADING_KEY_MAX}
            aria-describedby="trading-key-hint"
            value={value}
            onChange={(e) => setValue(e.target.value)}
          />
          <p id="trading-key-hint" className="hint">
            {status.data?.configured ? 'Saving a new key replaces the one that is set.' : 'Paste the key from your trading account.'}
          </p>
        </div>
        <InlineError message={save.error} />
        <div className="row">
          <button type="submit" className="button primary" disabled={save.pending}>
            Save trading key
          </button>
        </div>
      </form>
      <Announce message={done} />
    </section>
  );
}
