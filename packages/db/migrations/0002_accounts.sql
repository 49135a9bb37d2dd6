-- Accounts: referral codes and credits, plan, runtime links, API keys, password
-- reset tokens, and the outbox where mail waits when no SMTP server is configured.

alter table users add column referral_code text;
alter table users add column referred_by text references users (id) on delete set null;
alter table users add column credits integer not null default 0;
alter table users add column plan text not null default 'free';
alter table users add column runtime_url text;
alter table users add column runtime_instance_id text;
alter table users add column notifications jsonb not null default '{}'::jsonb;
-- Codes are stored upper-case and matched case-insensitively.
create unique index users_referral_code_key on users (referral_code);

-- Only the SHA-256 of a key is stored; `key_prefix` (first 10 characters) is shown in lists.
create table api_keys (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  name text not null,
  key_prefix text not null,
  key_hash text not null unique,
  created_at timestamptz not null default now(),
  last_used_at timestamptz
);
create index api_keys_user_id_idx on api_keys (user_id);

alter table api_keys enable row level security;
create policy api_keys_owner on api_keys
  using (user_id = app_current_user_id())
  with check (user_id = app_current_user_id());
grant select, insert, update, delete on api_keys to app_user;

create table password_reset_tokens (
  token_hash text primary key,
  user_id text not null references users (id) on delete cascade,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index password_reset_tokens_user_id_idx on password_reset_tokens (user_id);

alter table password_reset_tokens enable row level security;
create policy password_reset_tokens_owner on password_reset_tokens
  using (user_id = app_current_user_id())
  with check (user_id = app_current_user_id());
grant select, insert, update, delete on password_reset_tokens to app_user;

-- Operator-only: no grant to app_user, so no user request can read another's mail.
create table email_outbox (
  id text primary key,
  user_id text references users (id) on delete set null,
  kind text not null,
  to_address text not null,
  subject text not null,
  body_text text not null,
  created_at timestamptz not null default now()
);
create index email_outbox_created_at_idx on email_outbox (created_at desc);
