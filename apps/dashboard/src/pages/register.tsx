import { type FormEvent, useEffect, useState } from 'react';
import { Link, useLocation } from 'wouter';
import { client, errorMessage, request } from '../api.js';
import { InlineError } from '../components/states.js';

const MIN_PASSWORD = 8;

export default function RegisterPage() {
  const [, navigate] = useLocation();
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [referralCode, setReferralCode] = useState('');
  // A field people never see: bots that fill every input give themselves away.
  const [website, setWebsite] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string>();

  useEffect(() => {
    document.title = 'Create an account · Agent Ops';
  }, []);

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    if (password.length < MIN_PASSWORD) {
      setError(`Use at least ${MIN_PASSWORD} characters for your password.`);
      return;
    }
    setPending(true);
    setError(undefined);
    try {
      await request(
        client.POST('/api/register', {
          body: { name: name.trim() || undefined, email: email.trim(), password, referralCode: referralCode.trim() || undefined, website },
        }),
      );
      // Registering creates no session: the person signs in with what they just chose.
      navigate(`/login?registered=1&email=${encodeURIComponent(email.trim())}`);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setPending(false);
    }
  };

  return (
    <div className="card narrow stack">
      <h1>Create an account</h1>
      <form onSubmit={onSubmit} className="stack" noValidate>
        <div>
          <label htmlFor="name">
            Name <span className="hint">(optional)</span>
          </label>
          <input id="name" autoComplete="name" value={name} onChange={(e) => setName(e.target.value)} />
        </div>
        <div>
          <label htmlFor="email">Email</label>
          <input id="email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
        </div>
        <div>
          <label htmlFor="password">
            Password <span className="hint">(at least {MIN_PASSWORD} characters)</span>
          </label>
          <input
            id="password"
            type="password"
            autoComplete="new-password"
            required
            minLength={MIN_PASSWORD}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </div>
        <div>
          <label htmlFor="referral">
            Referral code <span className="hint">(optional)</span>
          </label>
          <input id="referral" value={referralCode} onChange={(e) => setReferralCode(e.target.value)} maxLength={20} />
        </div>
        <div aria-hidden="true" style={{ position: 'absolute', left: '-10000px' }}>
          <label htmlFor="website">Website</label>
          <input id="website" tabIndex={-1} autoComplete="off" value={website} onChange={(e) => setWebsite(e.target.value)} />
        </div>
        <InlineError message={error} />
        <button type="submit" className="button primary block" disabled={pending || !email || !password}>
          {pending ? 'Creating your account…' : 'Create account'}
        </button>
      </form>
      <p>
        Already have an account? <Link href="/login">Sign in</Link>
      </p>
    </div>
  );
}
