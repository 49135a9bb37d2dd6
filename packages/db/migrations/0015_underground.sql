-- Underground (spec §2.9, §3.4, §4.11; backend): events, agent wallets, royalty splits, and the agent-to-agent bus.
-- Money in USDC/USD is numeric (exact, read as strings). Addresses are stored lower-case.
--
-- User-owned rows (events, wallets, webhooks, splits and their payouts) follow the pattern of 0001: `user_id`,
-- row-level security, one `<table>_owner` policy, grants to app_user. The bus rows are not any one user's: a message
-- goes from one user's agent to another's, and the bus endpoint authenticates a wallet signature, not a user. Like the
-- payment tables of 0013 they have no RLS and no grant; only the owner connection reaches them.

-- Events an agent hosts. `id` is the spec's number. An agent's events go with the agent.
create table underground_events (
  id bigint generated always as identity primary key,
  user_id text not null,
  agent_id text not null references agent_deployments (id) on delete cascade,
  name text not null check (char_length(name) between 1 and 200),
  description text,
  venue text,
  event_date timestamptz,
  ticket_price_usdc numeric(20, 6) not null default 0 check (ticket_price_usdc >= 0),
  total_tickets integer not null default 100 check (total_tickets > 0),
  created_at timestamptz not null default now()
);
-- GET lists the user's events newest `event_date` first, undated ones last.
create index underground_events_user_date_idx on underground_events (user_id, event_date desc nulls last, id desc);
alter table underground_events enable row level security;
create policy underground_events_owner on underground_events using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on underground_events to app_user;

-- One wallet per agent: a real secp256k1 key pair. The private key is AES-256-GCM sealed with the backend's
-- ENCRYPTION_KEY, its associated data binding agent and address, and never returned. No foreign key to the agent and
-- no update/delete grant: a key that may hold funds is never replaced or dropped with its agent.
create table underground_wallets (
  address text primary key check (address ~ '^0x[0-9a-f]{40}$'),
  agent_id text not null unique,
  user_id text not null,
  private_key_enc text not null,
  created_at timestamptz not null default now()
);
create index underground_wallets_user_idx on underground_wallets (user_id, created_at);
alter table underground_wallets enable row level security;
create policy underground_wallets_owner on underground_wallets using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert on underground_wallets to app_user;

-- Where the bus delivers an agent's messages. The secret (sealed, shown once when set) signs every delivery so the
-- receiver can tell the platform's POSTs from anyone else's.
create table underground_webhooks (
  agent_id text primary key references agent_deployments (id) on delete cascade,
  user_id text not null,
  url text not null,
  secret_enc text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index underground_webhooks_user_idx on underground_webhooks (user_id);
alter table underground_webhooks enable row level security;
create policy underground_webhooks_owner on underground_webhooks using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on underground_webhooks to app_user;

-- Royalty splits (spec §3.4: processed synchronously, `completed`). Amounts in cents-exact numeric(20, 2); the payouts
-- of one split add up to its total exactly (largest-remainder rounding). Kept when the agent goes: they are accounts.
create table underground_splits (
  id text primary key,
  user_id text not null,
  agent_id text not null,
  name text not null check (char_length(name) between 1 and 200),
  total_amount numeric(20, 2) not null check (total_amount > 0),
  -- The agent's wallet, when it has one: the address the royalties are paid from.
  from_address text,
  status text not null default 'completed' check (status in ('completed')),
  created_at timestamptz not null default now()
);
create index underground_splits_user_idx on underground_splits (user_id, created_at desc);
alter table underground_splits enable row level security;
create policy underground_splits_owner on underground_splits using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert on underground_splits to app_user;

create table underground_split_payouts (
  split_id text not null references underground_splits (id) on delete cascade,
  ordinal integer not null check (ordinal >= 0),
  user_id text not null,
  address text not null check (address ~ '^0x[0-9a-f]{40}$'),
  share numeric(5, 2) not null check (share >= 0 and share <= 100),
  amount numeric(20, 2) not null check (amount >= 0),
  primary key (split_id, ordinal),
  unique (split_id, address)
);
alter table underground_split_payouts enable row level security;
create policy underground_split_payouts_owner on underground_split_payouts using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert on underground_split_payouts to app_user;

-- Bus messages as received (signature included), one row per messageId: the primary key is the replay guard, so a
-- message is accepted once even when two copies arrive together.
create table underground_bus_messages (
  message_id text primary key,
  action text not null,
  kind text not null check (kind in ('direct', 'booking', 'amplify')),
  from_agent_id text not null,
  from_address text not null,
  to_agent_id text,
  message jsonb not null,
  status text not null default 'delivering' check (status in ('delivering', 'delivered', 'failed')),
  created_at timestamptz not null default now(),
  completed_at timestamptz
);
create index underground_bus_messages_from_idx on underground_bus_messages (from_agent_id, created_at desc);

-- One row per recipient of a message: a direct or booking message has one, an amplification one per target.
create table underground_bus_deliveries (
  message_id text not null references underground_bus_messages (message_id) on delete cascade,
  agent_id text not null,
  status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0,
  last_error text,
  delivered_at timestamptz,
  primary key (message_id, agent_id)
);
create index underground_bus_deliveries_agent_idx on underground_bus_deliveries (agent_id);

-- Booking negotiations between two agents (`BOOKING_*` actions). The id is the messageId of the BOOKING_REQUEST that
-- opened it; offers alternate between the parties until one accepts, declines or cancels.
create table underground_negotiations (
  id text primary key,
  requester_agent_id text not null,
  responder_agent_id text not null,
  status text not null check (status in ('open', 'accepted', 'declined', 'cancelled')),
  terms jsonb not null,
  round integer not null default 1 check (round >= 1),
  last_offer_by text not null,
  last_message_id text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index underground_negotiations_parties_idx on underground_negotiations (requester_agent_id, responder_agent_id);
