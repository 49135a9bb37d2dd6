import { type FormEvent, useState } from 'react';
import { client, request } from '../../api.js';
import type { AccountSettings } from '../../api-types.js';
import { InlineError, Loaded } from '../../components/states.js';
import { Announce } from '../../components/announce.js';
import { useSession } from '../../session.js';
import { useAction, useApi } from '../../use-api.js';

/** The route's limit (apps/web/src/modules/accounts: NAME_MAX). */
const NAME_MAX = 100;

export function ProfileSection() {
  const settings = useApi('/api/settings');
  const [saved, setSaved] = useState<string>();
  return (
    <section aria-labelledby="profile-heading" className="card stack">
      <h2 id="profile-heading">Profile</h2>
      <Loaded resource={settings}>
        {(s) => (
          <>
            {/* Keyed by the saved values: after a save the form starts again from what the server now holds. */}
            <ProfileForm
              key={`${s.name}\n${s.email}\n${s.pendingEmail}`}
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
            <EmailStatus settings={s} onSent={setSaved} />
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
  const [currentPassword, setCurrentPassword] = useState('');
  const emailChanged = email.trim().toLowerCase() !== settings.email.toLowerCase();
  const nameChanged = name.trim() !== settings.name;

  const save = useAction(async () => {
    if (emailChanged) {
      // POST is the route that may change the sign-in email: a signed-in session and the current password.
      const answer = await request(
        client.POST('/api/settings', { body: { ...(nameChanged ? { name } : {}), email: email.trim(), currentPassword } }),
      );
      return `We sent a link to ${answer.pendingEmail ?? email.trim()}. Your sign-in address changes to it when you open the link; until then it stays ${answer.email}.`;
    }
    await request(client.PATCH('/api/settings', { body: { name } }));
    // The header shows the name from the session: bring it up to date.
    await refresh();
    return 'Saved.';
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
          You sign in with this address. A new one must not belong to another account, and counts once you open the link we send to it.
        </p>
      </div>
      {emailChanged ? (
        <div>
          <label htmlFor="profile-current-password">Current password</label>
          <input
            id="profile-current-password"
            type="password"
            autoComplete="current-password"
            aria-describedby="profile-current-password-hint"
            value={currentPassword}
            onChange={(e) => {
              setCurrentPassword(e.target.value);
              onEdit();
            }}
          />
          <p id="profile-current-password-hint" className="hint">
            Needed to change the address you sign in with.
          </p>
        </div>
      ) : null}
      <InlineError message={save.error} />
      <div className="row">
        <button type="submit" className="button primary" disabled={save.pending || (!nameChanged && !emailChanged)}>
          Save profile
        </button>
      </div>
    </form>
  );
}

/** Whether the sign-in address is confirmed, and an email change that waits for its link; either link can be re-sent. */
function EmailStatus({ settings, onSent }: { settings: AccountSettings; onSent: (message: string) => void }) {
  const resend = useAction(async () => {
    const answer = await request(client.POST('/api/auth/verify-email/resend'));
    return `We sent a new link to ${answer.email}.`;
  });
  const send = async () => {
    const message = await resend.run();
    if (message) onSent(message);
  };
  const button = (
    <button type="button" className="button secondary" onClick={() => void send()} disabled={resend.pending}>
      Send the link again
    </button>
  );
  if (!settings.pendingEmail && settings.emailVerified) {
    return (
      <p className="hint">
        <span className="badge badge-ok">verified</span> {settings.email}
      </p>
    );
  }
  return (
    <div className="stack">
      {settings.pendingEmail ? (
        <p>
          Waiting for you to open the link we sent to <strong>{settings.pendingEmail}</strong>. Until then you sign in with {settings.email}
          .
        </p>
      ) : (
        <p>
          <span className="badge badge-busy">not verified</span> Open the link we sent to {settings.email} to confirm it. Administrator
          rights and invites need a confirmed address.
        </p>
      )}
      <div className="row">{button}</div>
      <InlineError message={resend.error} />
    </div>
  );
}
