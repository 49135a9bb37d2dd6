import { type FormEvent, useState } from 'react';
import { client, request } from '../../api.js';
import type { PaymentSession, PaymentSessionList, ProviderInfo, WalletView as Wallet } from '../../api-types.js';
import { Announce } from '../../components/announce.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { InlineError, Loaded } from '../../components/states.js';
import { type Resource, useAction, useApi } from '../../use-api.js';

/** The route's deposit range (apps/web/src/modules/payments/payment-sessions.service.ts). */
const MIN_DEPOSIT = 1;
const MAX_DEPOSIT = 100;
const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
const TONE: Record<PaymentSession['status'], string> = { active: 'badge-ok', settling: 'badge-busy', closed: 'badge-idle' };

const short = (address: string) => `${address.slice(0, 6)}…${address.slice(-4)}`;
const when = (ms: number) => new Date(ms).toLocaleString();

export function WalletSessions({ wallets, provider }: { wallets: Wallet[]; provider: Resource<ProviderInfo> }) {
  const [address, setAddress] = useState(wallets[0]?.address ?? '');
  // Without `sessionId` the answer is the wallet's sessions.
  const sessions = useApi('/api/wallet/sessions', { params: { query: { address } }, refreshMs: 30_000 }) as Resource<PaymentSessionList>;
  // What the last open or close did; kept here, not in the form, which goes away once a session is open.
  const [notice, setNotice] = useState<string>();
  const close = useAction(async (id: string) => request(client.DELETE('/api/wallet/sessions', { params: { query: { sessionId: id } } })));
  const open = sessions.data?.sessions.find((s) => s.status !== 'closed');

  return (
    <div className="stack">
      {wallets.length > 1 ? (
        <div className="payments-wallet">
          <label htmlFor="payments-wallet">Wallet</label>
          <select
            id="payments-wallet"
            className="mono"
            value={address}
            onChange={(e) => {
              setAddress(e.target.value);
              setNotice(undefined);
            }}
          >
            {wallets.map((w) => (
              <option key={w.address} value={w.address}>
                {w.address} ({w.kind})
              </option>
            ))}
          </select>
        </div>
      ) : (
        <p className="payments-address">
          Wallet <span className="mono">{address}</span>
        </p>
      )}

      <InlineError message={close.error} />
      <Announce message={notice} />
      <Loaded resource={sessions} isEmpty={(d) => d.sessions.length === 0} empty={<p>This wallet has no payment sessions yet.</p>}>
        {(d) => (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Payment sessions of {address}, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Session</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="num">
                    Deposit
                  </th>
                  <th scope="col" className="num">
                    Spent
                  </th>
                  <th scope="col" className="num">
                    Balance
                  </th>
                  <th scope="col" className="num">
                    Unsettled calls
                  </th>
                  <th scope="col">Opened</th>
                  <th scope="col">Last settled</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {d.sessions.map((s) => (
                  <tr key={s.id}>
                    <td className="mono">{s.id}</td>
                    <td>
                      <span className={`badge ${TONE[s.status] ?? 'badge-idle'}`}>{s.status}</span>
                    </td>
                    <td className="num">${s.deposit}</td>
                    <td className="num">${s.spent}</td>
                    <td className="num">${s.remaining}</td>
                    <td className="num">{s.vouchers.length}</td>
                    <td>{when(s.createdAt)}</td>
                    <td>{when(s.lastSettledAt)}</td>
                    <td>
                      {s.status === 'closed' ? null : (
                        <ConfirmButton
                          danger
                          disabled={close.pending}
                          question={`Close this session? Nothing more can be paid from it, and the $${s.remaining} left is owed back to the wallet.`}
                          onConfirm={async () => {
                            setNotice(undefined);
                            const answer = await close.run(s.id);
                            if (answer)
                              setNotice(
                                `Session closed. $${answer.returned} is owed back to ${short(address)}; the operator returns it on chain.`,
                              );
                            await sessions.reload();
                          }}
                        >
                          Close session<span className="visually-hidden"> {s.id}</span>
                        </ConfirmButton>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Loaded>
      <p className="hint">Sessions have no expiry date: a session stays open until it is closed.</p>

      {sessions.data === undefined ? null : (
        // A wallet has one open session at a time: while it is open, a new deposit tops it up.
        <OpenSession
          address={address}
          provider={provider}
          topUp={Boolean(open)}
          onOpened={(message) => {
            setNotice(message);
            void sessions.reload();
          }}
        />
      )}
    </div>
  );
}

function OpenSession({
  address,
  provider,
  topUp,
  onOpened,
}: {
  address: string;
  provider: Resource<ProviderInfo>;
  /** The wallet has an open session: the deposit is added to it. */
  topUp: boolean;
  onOpened: (message: string) => void;
}) {
  const [deposit, setDeposit] = useState('');
  const [transaction, setTransaction] = useState('');
  const openSession = useAction(async () =>
    request(client.POST('/api/wallet/sessions', { body: { address, deposit: deposit.trim(), transaction: transaction.trim() } })),
  );

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    const amount = Number(deposit.trim());
    if (!deposit.trim() || !Number.isFinite(amount) || amount < MIN_DEPOSIT || amount > MAX_DEPOSIT)
      return openSession.setError(`Enter a deposit from $${MIN_DEPOSIT}.00 to $${MAX_DEPOSIT}.00.`);
    if (!TX_HASH.test(transaction.trim())) return openSession.setError('The transaction hash is 0x followed by 64 hexadecimal characters.');
    const answer = await openSession.run();
    if (!answer) return;
    setDeposit('');
    setTransaction('');
    onOpened(
      answer.note
        ? `${answer.note}: it now holds $${answer.session.deposit} in all.`
        : `Session opened with a $${answer.session.deposit} deposit.`,
    );
  };

  const chain = provider.data?.paymentChain;
  return (
    <form onSubmit={onSubmit} className="card stack payments-open" noValidate>
      <h3>{topUp ? 'Add a deposit to the open session' : 'Open a session'}</h3>
      {provider.data === undefined ? (
        provider.error ? (
          <InlineError message={provider.error} />
        ) : null
      ) : chain ? (
        <p className="muted">
          First send the deposit in the payment token (<span className="mono">{chain.token}</span> on chain {chain.chainId}) from{' '}
          <span className="mono">{short(address)}</span> to the platform’s payment address, the one named in the gateway’s payment
          challenges. Then enter the amount and the transfer’s transaction hash: the deposit is checked on chain.
        </p>
      ) : (
        <p className="notice">Payment sessions are not configured on this server.</p>
      )}
      <div className="grid">
        <div>
          <label htmlFor="session-deposit">Deposit (USD)</label>
          <input
            id="session-deposit"
            inputMode="decimal"
            aria-describedby="session-deposit-hint"
            value={deposit}
            onChange={(e) => setDeposit(e.target.value)}
          />
          <p id="session-deposit-hint" className="hint">
            From ${MIN_DEPOSIT}.00 to ${MAX_DEPOSIT}.00.
          </p>
        </div>
        <div>
          <label htmlFor="session-transaction">Deposit transaction hash</label>
          <input
            id="session-transaction"
            className="mono"
            spellCheck={false}
            autoComplete="off"
            placeholder="0x…"
            value={transaction}
            onChange={(e) => setTransaction(e.target.value)}
          />
        </div>
      </div>
      <InlineError message={openSession.error} />
      <div className="row">
        <button type="submit" className="button primary" disabled={openSession.pending || chain === null}>
          {topUp ? 'Add deposit' : 'Open session'}
        </button>
      </div>
    </form>
  );
}
