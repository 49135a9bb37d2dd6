import { Link } from 'wouter';
import { PageHeader } from '../components/layout.js';
import { Loaded } from '../components/states.js';
import { useApi } from '../use-api.js';
import { CardCheckouts } from './payments/card-checkouts.js';
import { WalletSessions } from './payments/sessions.js';

/**
 * Payment sessions (deposits a wallet paid on chain, spent by paid plugin calls) and card checkouts. A session belongs
 * to a wallet, so the page starts from the account's wallets (`GET /api/wallet`).
 */
export default function PaymentsPage() {
  const wallets = useApi('/api/wallet');
  const provider = useApi('/api/wallet/provider');
  return (
    <div className="payments-page">
      <PageHeader title="Payments" />
      <section aria-labelledby="sessions-heading" className="stack">
        <h2 id="sessions-heading">Payment sessions</h2>
        <p className="muted">
          A payment session holds a deposit your wallet paid on chain. Paid plugin calls are taken from it without a payment each time; what
          they cost settles every hour or at $5.00, and closing the session ends it.
        </p>
        <Loaded
          resource={wallets}
          isEmpty={(d) => d.wallets.length === 0}
          empty={
            <p>
              No wallet belongs to your account yet. Payment sessions are opened by a wallet: sign in with your wallet, or link one to this
              account, to see and open its sessions.
            </p>
          }
        >
          {(d) => <WalletSessions wallets={d.wallets} provider={provider} />}
        </Loaded>
      </section>
      <CardCheckouts />
      <p className="hint">
        Plans and credit packs are bought under <Link href="/settings#billing">Settings → Billing and plan</Link>.
      </p>
    </div>
  );
}
