import { type FormEvent, useEffect, useState } from 'react';
import { Link, useLocation, useSearch } from 'wouter';
import { client, errorMessage, request } from '../api.js';
import { InlineError } from '../components/states.js';

export default function ResetPasswordPage() {
  const [, navigate] = useLocation();
  const token = new URLSearchParams(useSearch()).get('token') ?? '';
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string>();

  useEffect(() => {
    document.title = 'Choose a new password · Agent Ops';
  }, []);

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    if (password !== confirm) {
      setError('The two passwords are not the same.');
      return;
    }
    setPending(true);
    setError(undefined);
    try {
      await request(client.POST('/api/auth/reset-password', { body: { token, password } }));
      navigate('/login?reset=1', { replace: true });
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setPending(false);
    }
  };

  return (
    <div className="public-shell">
      <div className="card narrow stack">
        <h1>Choose a new password</h1>
        {!token ? (
          <p className="state state-error" role="alert">
            This link is incomplete. Open the link from the email again, or <Link href="/forgot-password">ask for a new one</Link>.
          </p>
        ) : (
          <form onSubmit={onSubmit} className="stack" noValidate>
            <div>
              <label htmlFor="password">New password</label>
              <input
                id="password"
                type="password"
                autoComplete="new-password"
                required
                value={password}
                onChange={(e) => setPassword(e.target.value)}
              />
            </div>
            <div>
              <label htmlFor="confirm">Repeat it</label>
              <input
                id="confirm"
                type="password"
                autoComplete="new-password"
                required
                value={confirm}
                onChange={(e) => setConfirm(e.target.value)}
              />
            </div>
            <InlineError message={error} />
            <button type="submit" className="button primary block" disabled={pending || !password || !confirm}>
              {pending ? 'Saving…' : 'Save the new password'}
            </button>
          </form>
        )}
      </div>
    </div>
  );
}
