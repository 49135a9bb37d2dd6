import { planTitle } from '@aop/core/plans';
import type { CardCheckout as Checkout, CardCheckouts as CheckoutList } from '../../api-types.js';
import { Loaded } from '../../components/states.js';
import { type Resource, useApi } from '../../use-api.js';

const TONE: Record<Checkout['status'], string> = { complete: 'badge-ok', open: 'badge-busy', expired: 'badge-idle' };
const LABEL: Record<Checkout['status'], string> = { complete: 'paid', open: 'not paid yet', expired: 'expired' };

function what(c: Checkout): string {
  if (c.kind === 'plan') return `${c.plan ? planTitle(c.plan) : 'A'} plan`;
  if (c.kind === 'credits') return `${c.credits.toLocaleString()} credits`;
  return `${c.storageGb} GB extra storage`;
}

function money(c: Checkout): string {
  if (c.amount === null) return '—';
  return c.currency === null || c.currency === 'gbp' ? `£${c.amount}` : `${c.amount} ${c.currency.toUpperCase()}`;
}

/** The caller's card checkouts, newest 20, as recorded when they were started and completed. */
export function CardCheckouts() {
  // Without `session_id` the answer is the list.
  const checkouts = useApi('/api/wallet/top-up') as Resource<CheckoutList>;
  return (
    <section aria-labelledby="checkouts-heading" className="stack">
      <h2 id="checkouts-heading">Card payments</h2>
      <Loaded
        resource={checkouts}
        isEmpty={(d) => d.checkouts.length === 0}
        empty={
          <p>{checkouts.data?.cardPayments === false ? 'Card payments are not configured on this server.' : 'No card payments yet.'}</p>
        }
      >
        {(d) => (
          <>
            {d.cardPayments ? null : <p className="notice">Card payments are not configured on this server, so no new ones can be made.</p>}
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Card payments, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Started</th>
                    <th scope="col">For</th>
                    <th scope="col" className="num">
                      Amount
                    </th>
                    <th scope="col">Status</th>
                    <th scope="col">Completed</th>
                  </tr>
                </thead>
                <tbody>
                  {d.checkouts.map((c) => (
                    <tr key={c.sessionId}>
                      <td>{new Date(c.createdAt).toLocaleString()}</td>
                      <td>{what(c)}</td>
                      <td className="num">{money(c)}</td>
                      <td>
                        <span className={`badge ${TONE[c.status] ?? 'badge-idle'}`}>{LABEL[c.status] ?? c.status}</span>
                      </td>
                      <td>{c.completedAt ? new Date(c.completedAt).toLocaleString() : '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </Loaded>
    </section>
  );
}
