import { type FormEvent, useEffect, useState } from 'react';
import { Link, useLocation, useSearch } from 'wouter';
import { errorMessage } from '../api.js';
import { InlineError } from '../components/states.js';
import { useSession } from '../session.js';
import { useApi } from '../use-api.js';
import { signInWithWallet } from '../wallet.js';

/** `?error=` values the OAuth callbacks redirect with, in words. */
const ERRORS: Record<string, string> = {
  AccessDenied: 'You declined the sign-in at the provider. Nothing was changed.',
  IdpNotConfigured: 'Sign-in with the identity provider is not set up on this service.',
  IdpAuthFailed: 'The identity provider could not confirm who you are. Please try again.',
  IdpTokenFailed: 'The identity provider did not complete the sign-in. Please try again.',
  IdpNoEmail: 'The identity provider did not share a verified email address, which we need to sign you in.',
  IdpAuthError: 'Something went wrong while signing in with the identity provider. Please try again.',
  CodehostNotConfigured: 'Sign-in with the code host is not set up on this service.',
  CodehostAuthFailed: 'The code host could not confirm who you are. Please try again.',
  CodehostTokenFailed: 'The code host did not complete the sign-in. Please try again.',
  CodehostNoEmail: 'Your code-host account has no verified email address we can use.',
  CodehostAuthError: 'Something went wrong while signing in with the code host. Please try again.',
};

/** Where to go after signing in: only a path on this site, never another origin. */
function safeNext(next: string | null): string {
  return next?.startsWith('/') && !next.startsWith('//') ? next : '/dashboard';
}

export default function LoginPage() {
  const { signIn, refresh } = useSession();
  const [, navigate] = useLocation();
  const params = new URLSearchParams(useSearch());
  const providers = useApi('/api/auth/providers');
  const [email, setEmail] = useState(params.get('email') ?? '');
  const [password, setPassword] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string>();
  const [walletError, setWalletError] = useState<string>();
  const urlError = params.get('error');

  useEffect(() => {
    document.title = 'Sign in · Agent Ops';
  }, []);

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    setPending(true);
    setError(undefined);
    try {
      await signIn(email.trim(), password);
      navigate(safeNext(params.get('next')), { replace: true });
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setPending(false);
    }
  };

  const onWallet = async () => {
    setWalletError(undefined);
    try {
      if (!providers.data) throw new Error('Sign-in options are still loading. Try again in a moment.');
      await signInWithWallet(providers.data.wallet);
      await refresh();
      navigate(safeNext(params.get('next')), { replace: true });
    } catch (err) {
      setWalletError(errorMessage(err));
    }
  };

  return (
    <div className="card narrow stack">
      <h1>Sign in</h1>
      {urlError ? (
        <p className="state state-error" role="alert">
          {ERRORS[urlError] ?? 'Sign-in did not complete. Please try again.'}
        </p>
      ) : null}
      {params.get('registered') ? <p className="notice">Your account is ready. Sign in with your new password.</p> : null}
      {params.get('reset') ? <p className="notice">Your password was changed. Sign in with the new one.</p> : null}
      <form onSubmit={onSubmit} className="stack" noValidate>
        <div>
          <label htmlFor="email">Email</label>
          <input id="email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
        </div>
        <div>
          <label htmlFor="password">Password</label>
          <input
            id="password"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </div>
        <InlineError message={error} />
        <button type="submit" className="button primary block" disabled={pending || !email || !password}>
          {pending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p className="row" style={{ justifyContent: 'space-between' }}>
        <Link href="/forgot-password">Forgot your password?</Link>
        <Link href="/register">Create an account</Link>
      </p>
      {providers.data?.idp || providers.data?.codehost ? <div className="divider">or</div> : null}
      {providers.data?.idp ? (
        <a className="button secondary block" href="/api/auth/idp" style={{ display: 'block', textAlign: 'center' }}>
          Continue with your organisation account
        </a>
      ) : null}
      {providers.data?.codehost ? (
        <a className="button secondary block" href="/api/auth/codehost" style={{ display: 'block', textAlign: 'center' }}>
          Continue with your code-host account
        </a>
      ) : null}
      <div className="divider">or</div>
      <div className="stack">
        <button type="button" className="button secondary block" onClick={onWallet}>
          Sign in with a smart wallet
        </button>
        <p className="hint">
          Only smart-contract wallets (for example a passkey smart wallet) are accepted. A plain key-pair wallet such as a browser-extension
          account will be refused, even though it can sign the message.
        </p>
        <InlineError message={walletError} />
      </div>
    </div>
  );
}
