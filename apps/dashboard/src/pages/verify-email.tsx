import { useEffect, useRef, useState } from 'react';
import { Link, useSearch } from 'wouter';
import { client, errorMessage, request } from '../api.js';
import { useSession } from '../session.js';

/**
 * Where the verification link mailed at registration or at an email change lands: it posts the link's token once and
 * says what happened. Following the link needs no session (the mailbox is the proof); a signed-in tab learns the new
 * address (and any administrator rights it brings) from a fresh session read.
 */
export default function VerifyEmailPage() {
  const token = new URLSearchParams(useSearch()).get('token') ?? '';
  const { user, refresh } = useSession();
  const [result, setResult] = useState<{ message: string; email: string } | { error: string }>();
  const sent = useRef(false);

  useEffect(() => {
    document.title = 'Confirm your email · Agent Ops';
    // A link works once: React's development double effects must not spend it twice.
    if (!token || sent.current) return;
    sent.current = true;
    request(client.POST('/api/auth/verify-email', { body: { token } }))
      .then(async (answer) => {
        setResult(answer);
        await refresh();
      })
      .catch((err) => setResult({ error: errorMessage(err) }));
  }, [token, refresh]);

  const next = user ? (
    <Link href="/settings" className="button primary block">
      Go to your settings
    </Link>
  ) : (
    <Link href="/login" className="button primary block">
      Sign in
    </Link>
  );

  return (
    <div className="public-shell">
      <div className="card narrow stack">
        <h1>Confirm your email</h1>
        {!token ? (
          <p className="state state-error" role="alert">
            This link is incomplete. Open the link from the email again, or send a new one from Settings.
          </p>
        ) : result === undefined ? (
          <p className="state state-loading" role="status">
            Checking the link…
          </p>
        ) : 'error' in result ? (
          <>
            <p className="state state-error" role="alert">
              {result.error}. Links work once and expire; send a new one from Settings.
            </p>
            {next}
          </>
        ) : (
          <>
            <p className="state state-ok" role="status">
              {result.message}: <strong>{result.email}</strong>.
            </p>
            {next}
          </>
        )}
      </div>
    </div>
  );
}
