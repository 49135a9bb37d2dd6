-- Billing (card payments through the payment provider) and wallets.
--
-- users: the provider's customer and the subscription that pays for `plan`, the
-- bring-your-own-key flag, and storage bought on top of the plan.
alter table users add column stripe_customer_id text;
alter table users add column stripe_subscription_id text;
alter table users add column byok boolean not null default false;
alter table users add column extra_storage_gb integer not null default 0;
create unique index users_stripe_customer_id_key on users (stripe_customer_id);
create index users_stripe_subscription_id_idx on users (stripe_subscription_id);

-- Every Checkout Session we create, so that completing one (by webhook or by
-- `GET /api/checkout/verify`, whichever comes first) is applied exactly once:
-- the `open` → `complete` update is the guard. `kind` says what it sells.
create table billing_checkouts (
  session_id text primary key,
  user_id text not null references users (id) on delete cascade,
  kind text not null check (kind in ('plan', 'credits', 'storage')),
  plan text,
  credits integer not null default 0,
  storage_gb integer not null default 0,
  -- In the currency's minor unit (pence), as the provider reports it.
  amount_total integer,
  currency text,
  status text not null default 'open' check (status in ('open', 'complete', 'expired')),
  created_at timestamptz not null default now(),
  completed_at timestamptz
);
create index billing_checkouts_user_created_idx on billing_checkouts (user_id, created_at desc);
alter table billing_checkouts enable row level security;
create policy billing_checkouts_owner on billing_checkouts using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update on billing_checkouts to app_user;

-- Payment-provider webhook events already handled (the event id is unique), so a
-- redelivered or replayed event changes nothing. Operator-only: no grant to app_user.
create table billing_events (
  id text primary key,
  type text not null,
  received_at timestamptz not null default now()
);

-- Wallets linked to an account: `external` (proven by a signature of a nonce we
-- issued) or `custodial` (made by the configured wallet provider). One account per
-- address; addresses are stored lower-case.
create table wallets (
  id bigint generated always as identity primary key,
  user_id text not null references users (id) on delete cascade,
  address text not null,
  kind text not null check (kind in ('external', 'custodial')),
  -- `eoa`, `contract` or `counterfactual` for external wallets when the chain was asked; null otherwise.
  signer text,
  created_at timestamptz not null default now()
);
create unique index wallets_address_key on wallets (address);
create index wallets_user_idx on wallets (user_id, created_at);
alter table wallets enable row level security;
create policy wallets_owner on wallets using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on wallets to app_user;
