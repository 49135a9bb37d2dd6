-- Plugin-gateway payments (spec §2.12, §3.4, §4.4): machine payments (MPP) verified on chain, and pre-funded payment
-- sessions debited with off-chain vouchers. Money in USD is numeric(20, 6) (exact; read as strings); token amounts in
-- the token's smallest unit are numeric(78, 0) (a uint256). Addresses and transaction hashes are stored lower-case.
-- None of these rows belongs to a user account (a payer is a wallet, often with no account), so there is no row-level
-- security and no grant to app_user: only the owner connection reads and writes them.

-- One MPP challenge per 402 answer. A credential names its nonce; the challenge is consumed (used_at, tx_hash) in the
-- same transaction that records the paying transaction, and restored when the plugin run fails (release).
create table payment_challenges (
  nonce text primary key,
  plugin text not null,
  amount_usd numeric(20, 6) not null check (amount_usd > 0),
  amount_atomic numeric(78, 0) not null check (amount_atomic > 0),
  currency text not null,
  recipient text not null,
  chain_id integer not null,
  issued_at timestamptz not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  tx_hash text
);
create index payment_challenges_unused_expires_idx on payment_challenges (expires_at) where used_at is null;

-- Every on-chain transaction the platform accepted as a payment, whatever it paid for: a transaction pays once.
-- The primary key is the replay guard for MPP credentials and session deposits alike (also between the two).
create table payment_transactions (
  tx_hash text primary key,
  purpose text not null check (purpose in ('mpp', 'session_deposit')),
  challenge_nonce text references payment_challenges (nonce) on delete set null,
  session_id text,
  payer text not null,
  amount_atomic numeric(78, 0) not null,
  block_number bigint not null,
  created_at timestamptz not null default now()
);

-- Pre-funded payment sessions: `deposit` was paid on chain to the recipient when the session opened; each call adds
-- its price to `spent` through one conditional update, so the balance never goes below zero whatever the concurrency.
-- `settling` marks a settlement being recorded (calls still debit); `closed` is final, `returned` is what was left and
-- is owed back to the wallet: an operator pays it and records the payout's hash in `refund_tx_hash`.
create table payment_sessions (
  id text primary key,
  user_address text not null,
  deposit numeric(20, 6) not null check (deposit > 0),
  spent numeric(20, 6) not null default 0 check (spent >= 0 and spent <= deposit),
  status text not null default 'active' check (status in ('active', 'settling', 'closed')),
  deposit_tx_hash text not null unique,
  returned numeric(20, 6),
  refund_tx_hash text,
  created_at timestamptz not null,
  last_settled_at timestamptz not null,
  closed_at timestamptz,
  updated_at timestamptz not null default now()
);
-- At most one open session per wallet (two opens at once meet here).
create unique index payment_sessions_open_address_key on payment_sessions (user_address) where status <> 'closed';
create index payment_sessions_address_created_idx on payment_sessions (user_address, created_at desc);

-- A settlement books the vouchers accumulated since the last one ($5.00 reached, hourly, or at close).
create table payment_settlements (
  id bigint generated always as identity primary key,
  session_id text not null references payment_sessions (id) on delete cascade,
  amount numeric(20, 6) not null,
  voucher_count integer not null,
  reason text not null check (reason in ('threshold', 'hourly', 'close')),
  settled_at timestamptz not null
);
create index payment_settlements_session_idx on payment_settlements (session_id, settled_at);

-- One voucher per debit: the gateway's own (`v_<24 hex>`, no signature) or one the wallet signed
-- (`POST /api/wallet/sessions/voucher`). A nonce debits a session once.
create table payment_vouchers (
  id bigint generated always as identity primary key,
  session_id text not null references payment_sessions (id) on delete cascade,
  nonce text not null,
  plugin text not null,
  amount numeric(20, 6) not null check (amount > 0),
  signature text,
  settlement_id bigint references payment_settlements (id) on delete set null,
  created_at timestamptz not null,
  unique (session_id, nonce)
);
create index payment_vouchers_pending_idx on payment_vouchers (session_id, id) where settlement_id is null;
