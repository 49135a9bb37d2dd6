import { type FormEvent, useState } from 'react';
import { client, request } from '../../api.js';
import { Announce } from '../../components/announce.js';
import { InlineError } from '../../components/states.js';
import { useAction } from '../../use-api.js';

/** The server's rule (apps/web/src/modules/accounts/passwords.ts); checked here too so a typo is caught before sending. */
const MIN_PASSWORD = 8;

export function PasswordSection() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [problem, setProblem] = useState<string>();
  const [done, setDone] = useState<string>();

  const change = useAction(async (currentPassword: string, newPassword: string) => {
    await request(client.POST('/api/settings/password', { body: { currentPassword, newPassword } }));
    return true;
  });

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    setDone(undefined);
    change.setError(undefined);
    if (!current || !next) return setProblem('Enter your current password and a new one.');
    if (next.length < MIN_PASSWORD) return setProblem(`Use at least ${MIN_PASSWORD} characters for the new password.`);
    if (next !== repeat) return setProblem('The new passwords do not match.');
    setProblem(undefined);
    // Passwords leave the form as soon as they are sent, whatever the answer.
    setCurrent('');
    setNext('');
    setRepeat('');
    if (await change.run(current, next)) setDone('Password changed. Other devices signed in to your account were signed out.');
  };

  return (
    <section aria-labelledby="password-heading" className="card stack">
      <h2 id="password-heading">Password</h2>
      <form onSubmit={onSubmit} className="stack settings-form" noValidate>
        <div>
          <label htmlFor="password-current">Current password</label>
          <input
            id="password-current"
            type="password"
            autoComplete="current-password"
            value={current}
            onChange={(e) => setCurrent(e.target.value)}
          />
        </div>
        <div>
          <label htmlFor="password-new">New password</label>
          <input
            id="password-new"
            type="password"
            autoComplete="new-password"
            minLength={MIN_PASSWORD}
            aria-describedby="password-new-hint"
            value={next}
            onChange={(e) => setNext(e.target.value)}
          />
          <p id="password-new-hint" className="hint">
            At least {MIN_PASSWORD} characters.
          </p>
        </div>
        <div>
          {/* Not "Repeat new password": a label containing another's whole name makes look-ups by label ambiguous. */}
          <label htmlFor="password-repeat">Repeat password</label>
          <input
            id="password-repeat"
            type="password"
            autoComplete="new-password"
            aria-describedby="password-repeat-hint"
            value={repeat}
            onChange={(e) => setRepeat(e.target.value)}
          />
          <p id="password-repeat-hint" className="hint">
            Type the new password again.
          </p>
        </div>
        <InlineError message={problem ?? change.error} />
        <div className="row">
          <button type="submit" className="button primary" disabled={change.pending}>
            Change password
          </button>
        </div>
      </form>
      <Announce message={done} />
      <p className="hint">
        Signed up with Google or a wallet and never set a password? Sign out and use “Forgot password” to set one by email.
      </p>
    </section>
  );
}
