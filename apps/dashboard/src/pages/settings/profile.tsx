import { type FormEvent, useState } from 'react';
import { api } from '../../api.js';
import { InlineError, Loaded } from '../../components/states.js';
import { Announce } from '../../components/announce.js';
import { useSession } from '../../session.js';
import { useAction, useApi } from '../../use-api.js';

/** `GET /api/settings` (apps/web/src/routes/settings). */
export interface AccountSettings {
  id: string;
  email: string;
  name: string;
  plan: string;
  credits: number;
  twoFactorEnabled: boolean;
  notifications: Record<string, unknown>;
  runtime: { managed: boolean; instanceId: string | null; url: string | null };
}

/** The route's limit (apps/web/src/routes/settings: NAME_MAX). */
const NAME_MAX = 100;

export function ProfileSection() {
  const settings = useApi<AccountSettings>('/api/settings');
  const [saved, setSaved] = useState<string>();
  return (
    <section aria-labelledby="profile-heading" className="card stack">
      <h2 id="profile-heading">Profile</h2>
      <Loaded resource={settings}>
        {(s) => (
          <>
            {/* Keyed by the saved values: after a save the form starts again from what the server now holds. */}
            <ProfileForm
              key={`${s.name}\n${s.email}`}
              settings={s}
              onSaved={async (message) => {
                // Reload first: the form is keyed by the saved values and starts again when they arrive, so the
                // confirmation must not come (and invite the next edit) before that, or the edit would be wiped.
                await settings.reload();
                setSaved(message);
              }}
              onEdit={() => setSaved(undefined)}
            />
            <Announce message={saved} />
            <dl className="settings-facts">
              <div>
                <dt>Plan</dt>
                <dd>{s.plan}</dd>
              </div>
              <div>
                <dt>Referral credits</dt>
                <dd>{s.credits}</dd>
              </div>
              <div>
                <dt>Agent runtime</dt>
                <dd>
                  {s.runtime.url ? (
                    <a href={s.runtime.url} target="_blank" rel="noreferrer" className="mono">
                      {s.runtime.url}
                    </a>
                  ) : (
                    <span className="muted">Not deployed yet</span>
                  )}
                </dd>
              </div>
            </dl>
          </>
        )}
      </Loaded>
    </section>
  );
}

function ProfileForm({
  settings,
  onSaved,
  onEdit,
}: {
  settings: AccountSettings;
  onSaved: (message: string) => Promise<void>;
  onEdit: () => void;
}) {
  const { refresh } = useSession();
  const [name, setName] = useState(settings.name);
  const [email, setEmail] = useState(settings.email);
  const emailChanged = email.trim().toLowerCase() !== settings.email.toLowerCase();
  const nameChanged = name.trim() !== settings.name;

  const save = useAction(async () => {
    if (emailChanged) {
      // POST is the route that may change the sign-in email (it needs a signed-in session, which this page has).
      await api<AccountSettings>('/api/settings', {
        method: 'POST',
        body: { ...(nameChanged ? { name } : {}), email: email.trim() },
      });
    } else {
      await api<AccountSettings>('/api/settings', { method: 'PATCH', body: { name } });
    }
    // The header shows the name and email from the session: bring it up to date.
    await refresh();
    return emailChanged ? 'Saved. Use your new email address the next time you sign in.' : 'Saved.';
  });

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    const message = await save.run();
    if (message) await onSaved(message);
  };

  return (
    <form onSubmit={onSubmit} className="stack" noValidate>
      <div>
        <label htmlFor="profile-name">Name</label>
        <input
          id="profile-name"
          autoComplete="name"
          maxLength={NAME_MAX}
          value={name}
          onChange={(e) => {
            setName(e.target.value);
            onEdit();
          }}
        />
      </div>
      <div>
        <label htmlFor="profile-email">Email</label>
        <input
          id="profile-email"
          type="email"
          autoComplete="email"
          aria-describedby="profile-email-hint"
          value={email}
          onChange={(e) => {
            setEmail(e.target.value);
            onEdit();
          }}
        />
        <p id="profile-email-hint" className="hint">
          You sign in with this address. A new address must not belong to another account.
        </p>
      </div>
      <InlineError message={save.error} />
      <div className="row">
        <button type="submit" className="button primary" disabled={save.pending || (!nameChanged && !emailChanged)}>
          Save profile
        </button>
      </div>
    </form>
  );
}
