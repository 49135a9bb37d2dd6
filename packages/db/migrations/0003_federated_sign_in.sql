-- Federated sign-in: provider accounts (OIDC identity provider, code host), wallets,
-- account-protection state, and the durable queue of security events.

-- One row per (provider, subject). Tokens are AES-256-GCM sealed by the web service.
create table oauth_accounts (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  provider text not null,
  provider_account_id text not null,
  email text,
  access_token_enc text,
  refresh_token_enc text,
  id_token_enc text,
  expires_at timestamptz,
  scope text,
  metadata jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (provider, provider_account_id)
);
create index oauth_accounts_user_id_idx on oauth_accounts (user_id);

alter table oauth_accounts enable row level security;
create policy oauth_accounts_owner on oauth_accounts
  using (user_id = app_current_user_id())
  with check (user_id = app_current_user_id());
grant select, insert, update, delete on oauth_accounts to app_user;

-- Lower-case 0x address of a smart-contract wallet that signed in (SIWE).
alter table users add column wallet_address text;
create unique index users_wallet_address_key on users (wallet_address);

-- Account protection: a disabled account cannot sign in and its sessions stop working;
-- a flagged credential change is shown to the user and operators.
alter table users add column disabled_at timestamptz;
alter table users add column credential_change_flagged_at timestamptz;

-- Accepted security-event tokens, keyed by jti: the primary key is the durable
-- de-duplication, and unprocessed rows survive a crash until a worker handles them.
create table security_events (
  jti text primary key,
  source text not null,
  issuer text,
  subject text,
  email text,
  event_types jsonb not null default '[]'::jsonb,
  payload jsonb not null,
  received_at timestamptz not null default now(),
  processed_at timestamptz,
  attempts integer not null default 0,
  last_error text
);
create index security_events_pending_idx on security_events (received_at) where processed_at is null;
