import { planTitle } from '@aop/core/plans';
import type { ApiRequestBody, ApiResponse } from '@aop/sdk';
import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { Link } from 'wouter';
import { client, errorMessage, request } from '../../api.js';
import type { Billing, ByokAnswer, CheckoutAnswer, PlanPrice, BillingUsage as Usage, UsageAnswer } from '../../api-types.js';
import { Announce } from '../../components/announce.js';
import { ErrorState, InlineError, Loaded, Loading } from '../../components/states.js';
import { formatMoney, formatPounds, GBP_NOTE, USD_NOTE } from '../../format.js';
import { useSession } from '../../session.js';
import { useAction, useApi } from '../../use-api.js';

const pounds = (amount: string) => formatPounds(Number(amount));
const count = new Intl.NumberFormat();

/** Why nothing can be bought here, said beside each disabled button (`aria-describedby`). */
const NO_CARD_REASON = 'Unavailable: card payments are not configured on this server.';

const planLabel = (p: PlanPrice) =>
  p.amount
    ? `${planTitle(p.plan)} — ${pounds(p.amount)} a ${p.interval ?? 'month'}`
    : `${planTitle(p.plan)} — monthly, price set by the operator`;

export function BillingSection() {
  const billing = useApi('/api/billing');
  return (
    <section aria-labelledby="billing-heading" className="stack">
      <h2 id="billing-heading" className="visually-hidden">
        Billing and plan
      </h2>
      <CheckoutReturn onApplied={() => void billing.reload()} />
      <Loaded resource={billing}>{(b) => <BillingDetails billing={b} reload={billing.reload} />}</Loaded>
    </section>
  );
}

/**
 * The payment provider sends people back to `/billing?checkout=success&session_id=…` (or `checkout=canceled`), which
 * opens this tab. A paid session is applied at once through `GET /api/checkout/verify`, so the new plan or credits
 * show without waiting for the provider's webhook.
 */
function CheckoutReturn({ onApplied }: { onApplied: () => void }) {
  const [params] = useState(() => new URLSearchParams(window.location.search));
  const outcome = params.get('checkout');
  const sessionId = params.get('session_id');
  const [result, setResult] = useState<ApiResponse<'/api/checkout/verify'>>();
  const [error, setError] = useState<string>();
  const [dismissed, setDismissed] = useState(false);

  useEffect(() => {
    if (!outcome) return;
    // Drop the query, so a reload does not report the same checkout again; the fragment keeps this tab open.
    window.history.replaceState(window.history.state, '', `${window.location.pathname}${window.location.hash}`);
    if (outcome !== 'success' || !sessionId) return;
    let live = true;
    request(client.GET('/api/checkout/verify', { params: { query: { session_id: sessionId } } })).then(
      (answer) => {
        if (!live) return;
        setResult(answer);
        onApplied();
      },
      (err: unknown) => {
        if (live) setError(errorMessage(err));
      },
    );
    return () => {
      live = false;
    };
  }, []);

  if (!outcome || dismissed) return null;
  let body: ReactNode;
  if (outcome !== 'success') body = <p>Checkout canceled. Nothing was charged.</p>;
  else if (!sessionId)
    body = <p>The payment page did not say which checkout this was. Your recent card payments are listed on the Payments page.</p>;
  else if (error) return <ErrorState message={`Your payment could not be checked: ${error}`} />;
  else if (!result) return <Loading label="Checking your payment…" />;
  else if (!result.paid) {
    body = (
      <p>
        The payment has not completed yet ({result.paymentStatus}). The payment provider confirms it to us directly; check back in a few
        minutes.
      </p>
    );
  } else {
    const what =
      result.kind === 'plan'
        ? `Your plan is now ${planTitle(result.account.plan)}.`
        : result.kind === 'credits'
          ? `You now have ${count.format(result.account.credits)} credits.`
          : `Your extra storage is now ${result.account.extraStorageGb} GB.`;
    body = <p>Payment received. {what}</p>;
  }
  return (
    <div className="notice row checkout-return" role="status">
      {body}
      <button type="button" className="button secondary" onClick={() => setDismissed(true)}>
        Dismiss
      </button>
    </div>
  );
}

function BillingDetails({ billing: b, reload }: { billing: Billing; reload: () => Promise<void> }) {
  return (
    <>
      {b.cardPayments ? null : <NoCardPayments />}
      <div className="card">
        <h3>Your plan</h3>
        <dl className="settings-facts">
          <div>
            <dt>Plan</dt>
            <dd>{planTitle(b.plan)}</dd>
          </div>
          <div>
            <dt>Subscription</dt>
            <dd>{b.subscriptionStatus === 'none' ? 'None' : b.subscriptionStatus.replace('_', ' ')}</dd>
          </div>
          <div>
            <dt>Credits</dt>
            <dd>{count.format(b.credits)}</dd>
          </div>
          <div>
            <dt>Extra storage</dt>
            <dd>{b.extraStorageGb} GB</dd>
          </div>
        </dl>
        <p className="hint">
          Your card payments are listed on the <Link href="/payments">Payments</Link> page.
        </p>
      </div>
      <div className="grid settings-buy">
        <PlanChoice billing={b} />
        <CreditPacks billing={b} />
      </div>
      <ByokToggle enabled={b.byok} reload={reload} />
      <UsageCard initial={b.usage} />
    </>
  );
}

/** No payment provider: nothing can be bought here, and an operator can still put the account on a plan. */
function NoCardPayments() {
  const { user } = useSession();
  return (
    <div className="notice stack" id="card-payments-off">
      <p>
        <strong>Card payments are not configured.</strong> Plans and credits cannot be bought on this server until its operator sets up the
        payment provider.
      </p>
      <p>
        Until then the operator can put your account on a plan from the server:{' '}
        <code className="operator-command">npm run cli -- plan set {user?.email ?? '<your email>'} solo</code> (any plan name instead of{' '}
        <code>solo</code>).
      </p>
    </div>
  );
}

/** Starts a Checkout and leaves for the provider's page; the way back is CheckoutReturn. */
function useCheckout() {
  const [leaving, setLeaving] = useState(false);
  const action = useAction(async (body: ApiRequestBody<'/api/billing', 'post'>) => {
    // A checkout action answers with the provider's page.
    const answer = (await request(client.POST('/api/billing', { body }))) as CheckoutAnswer;
    setLeaving(true);
    window.location.assign(answer.url);
  });
  return { ...action, leaving };
}

function PlanChoice({ billing: b }: { billing: Billing }) {
  const [plan, setPlan] = useState<string>();
  const checkout = useCheckout();
  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    if (!plan) return checkout.setError('Choose a plan first.');
    await checkout.run({ action: 'create-checkout', plan });
  };
  return (
    <form className="card stack" onSubmit={onSubmit} noValidate>
      <fieldset>
        <legend>Choose a plan</legend>
        <div className="stack">
          {b.prices.plans.map((p) => (
            <div key={p.plan} className="choice">
              <input
                type="radio"
                id={`plan-${p.plan}`}
                name="plan"
                value={p.plan}
                checked={plan === p.plan}
                onChange={() => setPlan(p.plan)}
              />
              <label htmlFor={`plan-${p.plan}`}>
                {planLabel(p)}
                {p.plan === b.plan ? <span className="hint"> (your plan)</span> : null}
              </label>
            </div>
          ))}
        </div>
      </fieldset>
      <p className="hint">
        Paid monthly by card, in pounds sterling (GBP). Choosing another plan replaces your current subscription once the payment goes
        through.
      </p>
      <InlineError message={checkout.error} />
      <Announce message={checkout.leaving ? 'Opening the payment page…' : undefined} />
      <div className="row">
        <button
          type="submit"
          className="button primary"
          disabled={!b.cardPayments || checkout.pending || checkout.leaving}
          aria-describedby={b.cardPayments ? undefined : 'subscribe-unavailable'}
        >
          Subscribe
        </button>
        {b.cardPayments ? null : (
          <span id="subscribe-unavailable" className="hint">
            {NO_CARD_REASON}
          </span>
        )}
      </div>
    </form>
  );
}

function CreditPacks({ billing: b }: { billing: Billing }) {
  const [price, setPrice] = useState(b.prices.creditPacks[0]?.price ?? '');
  const checkout = useCheckout();
  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    await checkout.run({ action: 'buy-credits', price });
  };
  if (b.prices.creditPacks.length === 0) return null;
  return (
    <form className="card stack" onSubmit={onSubmit} noValidate>
      <h3>Credits</h3>
      <p className="muted">A credit pack is paid once, by card.</p>
      <div>
        <label htmlFor="credit-pack">Credit pack</label>
        <select id="credit-pack" value={price} onChange={(e) => setPrice(e.target.value)}>
          {b.prices.creditPacks.map((pack) => (
            <option key={pack.price} value={pack.price}>
              {count.format(pack.credits)} credits — {pounds(pack.price)}
            </option>
          ))}
        </select>
      </div>
      <InlineError message={checkout.error} />
      <Announce message={checkout.leaving ? 'Opening the payment page…' : undefined} />
      <div className="row">
        <button
          type="submit"
          className="button primary"
          disabled={!b.cardPayments || checkout.pending || checkout.leaving}
          aria-describedby={b.cardPayments ? undefined : 'credits-unavailable'}
        >
          Buy credits
        </button>
        {b.cardPayments ? null : (
          <span id="credits-unavailable" className="hint">
            {NO_CARD_REASON}
          </span>
        )}
      </div>
    </form>
  );
}

function ByokToggle({ enabled, reload }: { enabled: boolean; reload: () => Promise<void> }) {
  const toggle = useAction(
    async (on: boolean) =>
      request(client.POST('/api/billing', { body: { action: on ? 'enable-byok' : 'disable-byok' } })) as Promise<ByokAnswer>,
  );
  return (
    <div className="card stack">
      <h3>Bring your own key</h3>
      <p>
        {enabled
          ? 'On: you use your own AI provider keys rather than the platform’s.'
          : 'Off: the platform’s AI provider keys are used for your agents.'}
      </p>
      <InlineError message={toggle.error} />
      <div className="row">
        <button
          type="button"
          className="button secondary"
          disabled={toggle.pending}
          onClick={async () => {
            await toggle.run(!enabled);
            await reload();
          }}
        >
          {enabled ? 'Disable bring-your-own-key' : 'Enable bring-your-own-key'}
        </button>
      </div>
    </div>
  );
}

function UsageCard({ initial }: { initial: Usage }) {
  const [fresh, setFresh] = useState<Usage>();
  const refresh = useAction(async () => {
    const { usage } = (await request(client.POST('/api/billing', { body: { action: 'get-usage' } }))) as UsageAnswer;
    setFresh(usage);
  });
  const usage = fresh ?? initial;
  const since = new Date(usage.since).toLocaleDateString();
  return (
    <div className="card stack">
      <div className="row settings-card-head">
        <h3>Usage this month</h3>
        <button type="button" className="button secondary" disabled={refresh.pending} onClick={() => void refresh.run()}>
          Refresh usage
        </button>
      </div>
      <p className="muted">
        Since {since}: {count.format(usage.totalCalls)} calls, {count.format(usage.totalTokens)} tokens, {formatMoney(usage.totalCost)}{' '}
        (USD).
      </p>
      <p className="hint">
        {USD_NOTE} {GBP_NOTE}
      </p>
      <InlineError message={refresh.error} />
      {usage.byKind.length === 0 ? (
        <p className="state state-empty">No usage recorded this month.</p>
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Usage this month by kind</caption>
            <thead>
              <tr>
                <th scope="col">Kind</th>
                <th scope="col" className="num">
                  Calls
                </th>
                <th scope="col" className="num">
                  Tokens
                </th>
                <th scope="col" className="num">
                  Cost (USD)
                </th>
              </tr>
            </thead>
            <tbody>
              {usage.byKind.map((row) => (
                <tr key={row.kind}>
                  <td>{row.kind}</td>
                  <td className="num">{count.format(row.calls)}</td>
                  <td className="num">{count.format(row.tokens)}</td>
                  <td className="num">{formatMoney(row.cost)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
