import { type FormEvent, useEffect, useState } from 'react';
import { Link } from 'wouter';
import { client, errorMessage, request } from '../api.js';
import { InlineError } from '../components/states.js';

export default function ForgotPasswordPage() {
  const [email, setEmail] = useState('');
  const [website, setWebsite] = useState('');
  const [sent, setSent] = useState<string>();
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string>();

  useEffect(() => {
    document.title = 'Reset your password · Agent Ops';
  }, []);

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    setPending(true);
    setError(undefined);
    try {
      const { message } = await request(client.POST('/api/auth/forgot-password', { body: { email: email.trim(), website } }));
      setSent(message);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setPending(false);
    }
  };

  return (
    <div className="card narrow stack">
      <h1>Reset your password</h1>
      {sent ? (
        <p className="notice" role="status">
          {sent}
        </p>
      ) : (
        <form onSubmit={onSubmit} className="stack" noValidate>
          <p className="muted">Enter the email address of your account and we will send you a link to choose a new password.</p>
          <div>
            <label htmlFor="email">Email</label>
            <input id="email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
          </div>
          <div aria-hidden="true" style={{ position: 'absolute', left: '-10000px' }}>
            <label htmlFor="website">Website</label>
            <input id="website" tabIndex={-1} autoComplete="off" value={website} onChange={(e) => setWebsite(e.target.value)} />
          </div>
          <InlineError message={error} />
          <button type="submit" className="button primary block" disabled={pending || !email}>
            {pending ? 'Sending…' : 'Send the link'}
          </button>
        </form>
      )}
      <p>
        <Link href="/login">Back to sign in</Link>
      </p>
    </div>
  );
}
