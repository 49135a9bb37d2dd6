-- The built-in skills `booking-settlement` and `instant-split` (spec §4.18; shapes in docs/decisions.md, "Booking
-- settlement and instant splits"). Money is USDC, exact to its 6 decimals: numeric(20, 6), read as strings.

-- One settlement per accepted underground booking (`underground_negotiations.id`): the primary key is the replay
-- guard, so a booking is settled once even when two requests arrive together. A settlement concerns two users, the
-- payer (owner of the requesting agent) and the payee (owner of the responding agent): both may read it, only the
-- payer writes it. No foreign keys: settlements are accounts and stay when an agent or a negotiation goes.
create table booking_settlements (
  booking_id text primary key,
  payer_user_id text not null,
  payer_agent_id text not null,
  payee_user_id text not null,
  payee_agent_id text not null,
  amount numeric(20, 6) not null check (amount >= 0),
  settled_at timestamptz not null default now()
);
create index booking_settlements_payer_idx on booking_settlements (payer_user_id);
create index booking_settlements_payee_idx on booking_settlements (payee_user_id);
alter table booking_settlements enable row level security;
create policy booking_settlements_parties on booking_settlements for select
  using (payer_user_id = app_current_user_id() or payee_user_id = app_current_user_id());
create policy booking_settlements_payer on booking_settlements for insert with check (payer_user_id = app_current_user_id());
grant select, insert on booking_settlements to app_user;

-- Instant splits: an amount divided among wallets by shares, recorded at once. `booking_id` (a settled booking whose
-- fee the payee divides) is unique, so a booking's fee is split once; `idempotency_key` is unique per user, so a
-- retried request records nothing twice. `request_hash` (SHA-256 of the normalised request) tells a retry from a
-- different request reusing the key.
create table instant_splits (
  id text primary key,
  user_id text not null,
  agent_id text,
  booking_id text unique,
  idempotency_key text,
  request_hash text not null,
  name text check (char_length(name) between 1 and 200),
  amount numeric(20, 6) not null check (amount > 0),
  created_at timestamptz not null default now(),
  unique (user_id, idempotency_key)
);
create index instant_splits_user_idx on instant_splits (user_id, created_at desc, id desc);
alter table instant_splits enable row level security;
create policy instant_splits_owner on instant_splits using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert on instant_splits to app_user;

-- Each recipient's part, cut by the largest-remainder method so the parts add up to the amount exactly.
create table instant_split_payouts (
  split_id text not null references instant_splits (id) on delete cascade,
  ordinal integer not null check (ordinal >= 0),
  user_id text not null,
  address text not null check (address ~ '^0x[0-9a-f]{40}$'),
  share numeric(5, 2) not null check (share >= 0 and share <= 100),
  amount numeric(20, 6) not null check (amount >= 0),
  primary key (split_id, ordinal),
  unique (split_id, address)
);
alter table instant_split_payouts enable row level security;
create policy instant_split_payouts_owner on instant_split_payouts using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert on instant_split_payouts to app_user;
