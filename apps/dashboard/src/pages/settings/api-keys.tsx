import { type FormEvent, useEffect, useRef, useState } from 'react';
import type { ApiKey, CreatedApiKey } from '@aop/sdk';
import { client, request } from '../../api.js';
import { Announce } from '../../components/announce.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { InlineError, Loaded } from '../../components/states.js';
import { useAction, useApi } from '../../use-api.js';

/** The route's limit (apps/web/src/modules/api-keys/api-keys.service.ts: KEY_NAME_MAX). */
const KEY_NAME_MAX = 64;

const when = (iso: string) => new Date(iso).toLocaleString();

export function ApiKeysSection() {
  const keys = useApi('/api/keys');
  const [name, setName] = useState('');
  // The new key lives only here, only while its dialog is open: never in storage, the URL or a log.
  const [created, setCreated] = useState<CreatedApiKey>();
  const [revoked, setRevoked] = useState<string>();

  const create = useAction(async (keyName: string) => request(client.POST('/api/keys', { body: { name: keyName } })));
  const revoke = useAction(async (key: ApiKey) => {
    await request(client.DELETE('/api/keys/{id}', { params: { path: { id: key.id } } }));
    return key;
  });

  const onCreate = async (event: FormEvent) => {
    event.preventDefault();
    setRevoked(undefined);
    const trimmed = name.trim();
    if (!trimmed) return create.setError('Give the key a name, such as where it will be used.');
    const answer = await create.run(trimmed);
    if (!answer) return;
    setName('');
    setCreated(answer);
    await keys.reload();
  };

  return (
    <section aria-labelledby="api-keys-heading" className="card stack">
      <h2 id="api-keys-heading">API keys</h2>
      <p className="muted">
        Programs send an API key as <span className="mono">Authorization: Bearer sk_…</span> and act as you. Creating keys, changing your
        email or password and payments need you signed in here: a key cannot do them.
      </p>

      <form onSubmit={onCreate} className="stack settings-form" noValidate>
        <div>
          <label htmlFor="api-key-name">Key name</label>
          <input
            id="api-key-name"
            maxLength={KEY_NAME_MAX}
            aria-describedby="api-key-name-hint"
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <p id="api-key-name-hint" className="hint">
            Where the key will be used, for example “CI deploys”. Up to {KEY_NAME_MAX} characters.
          </p>
        </div>
        <InlineError message={create.error} />
        <div className="row">
          <button type="submit" className="button primary" disabled={create.pending}>
            Create key
          </button>
        </div>
      </form>

      {created ? <NewKeyDialog created={created} onClose={() => setCreated(undefined)} /> : null}

      <h3>Your keys</h3>
      <InlineError message={revoke.error} />
      <Announce message={revoked} />
      <Loaded resource={keys} isEmpty={(d) => d.keys.length === 0} empty={<p>You have no API keys.</p>}>
        {(d) => (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">API keys</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {d.keys.map((key) => (
                  <tr key={key.id}>
                    <td>{key.name}</td>
                    <td className="mono">{key.keyPreview}</td>
                    <td>{when(key.createdAt)}</td>
                    <td>{key.lastUsed ? when(key.lastUsed) : <span className="muted">Never</span>}</td>
                    <td>
                      <ConfirmButton
                        danger
                        disabled={revoke.pending}
                        question={`Revoke “${key.name}”? Anything using it stops working at once.`}
                        onConfirm={async () => {
                          const gone = await revoke.run(key);
                          if (gone) setRevoked(`Key “${gone.name}” revoked.`);
                          await keys.reload();
                        }}
                      >
                        Revoke<span className="visually-hidden"> key {key.name}</span>
                      </ConfirmButton>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Loaded>
    </section>
  );
}

/**
 * The one time a key is shown. A modal dialog so it cannot be missed; "Copy" uses the clipboard and, where the
 * browser refuses (no permission, not a secure context), selects the key so the person can copy it themselves.
 */
function NewKeyDialog({ created, onClose }: { created: CreatedApiKey; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const field = useRef<HTMLInputElement>(null);
  const copyButton = useRef<HTMLButtonElement>(null);
  const [copy, setCopy] = useState<'copied' | 'manual'>();

  useEffect(() => {
    const el = dialog.current;
    if (el && !el.open) el.showModal();
    copyButton.current?.focus();
  }, []);

  const onCopy = async () => {
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(created.key);
      setCopy('copied');
    } catch {
      field.current?.focus();
      field.current?.select();
      setCopy('manual');
    }
  };

  return (
    <dialog ref={dialog} className="dialog stack" aria-labelledby="new-key-title" aria-describedby="new-key-warning" onClose={onClose}>
      <h2 id="new-key-title">Your new API key “{created.name}”</h2>
      <p id="new-key-warning" className="notice">
        <strong>Copy this key now: you will not see it again.</strong> Only a fingerprint of it is kept, so it cannot be shown later. If you
        lose it, revoke it and create another.
      </p>
      <div>
        <label htmlFor="new-key-value">New API key</label>
        <input
          ref={field}
          id="new-key-value"
          className="mono"
          readOnly
          value={created.key}
          spellCheck={false}
          autoComplete="off"
          onFocus={(e) => e.currentTarget.select()}
        />
      </div>
      <p role="status" className={copy ? 'hint' : 'visually-hidden'}>
        {copy === 'copied'
          ? 'Copied to the clipboard.'
          : copy === 'manual'
            ? 'This browser did not allow copying. The key is selected: press Ctrl+C (⌘C on a Mac) to copy it.'
            : ''}
      </p>
      <div className="row">
        <button ref={copyButton} type="button" className="button primary" onClick={onCopy}>
          Copy
        </button>
        <button
          type="button"
          className="button secondary"
          onClick={() => {
            dialog.current?.close();
            // The dialog's close event comes a task later; the key leaves the page now.
            onClose();
          }}
        >
          Done
        </button>
      </div>
    </dialog>
  );
}
